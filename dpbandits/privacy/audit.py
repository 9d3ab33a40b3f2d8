"""Empirical privacy auditing: high-confidence *lower bounds* on epsilon (and on Gaussian-DP mu).

A generic auditor. It knows no algorithm: it receives a randomized procedure as a callable
``sampler(world, n, rng) -> statistics of shape (n,)`` that runs the component ``n`` times
(batched over replications) on the neighbouring input ``D`` (``world = 0``) or ``D'``
(``world = 1``) and reduces each run to one real statistic. The canaries (worst-case
neighbouring inputs) and statistics of each library component live in :mod:`dpbandits.audits`.

Method (StatDP, DP-Sniper, Delta-Siege, Nasr et al.)
----------------------------------------------------
A rule "reject ``D`` when the statistic exceeds ``tau``" has false-positive rate
``p0 = P_D(S > tau)`` and power ``p1 = P_D'(S > tau)``. With one-sided Clopper-Pearson bounds
``p0+`` (upper) and ``p1-`` (lower), ``(epsilon, delta)``-DP for the set and its complement
implies

    eps_lb = max{ ln((p1- - delta) / p0+),  ln((1 - delta - p0+) / (1 - p1-)) }

(that is ``ln((TPR_lb - delta)/FPR_ub)`` and the symmetric direction with ``FNR``). For the
reversed orientation (``D`` pushes the statistic up) the roles of ``p0`` and ``p1`` swap.
For Gaussian-shaped claims the Gaussian-DP route (Dong, Roth & Su 2022) is much tighter:
``mu_lb = Phi^-1(p1-) - Phi^-1(p0+)`` (``= Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub)``); a value above
the claimed ``mu`` refutes a ``mu``-GDP claim.

Validity of the bound
---------------------
* ``selection="split"`` (default): candidate thresholds are scored on a *separate* set of
  runs (its own random streams), one threshold per route (the best ``eps_lb`` rule, and the
  best ``mu_lb`` rule when a ``mu`` claim is audited) and its orientation are fixed, then
  certified on fresh runs. Only the certified bounds enter the result, with a Bonferroni
  correction over the one-sided bounds they use (2 per certified rule).
* ``selection="bonferroni"``: thresholds fixed in advance (from the claim), all evaluated on
  the certification runs, with a Bonferroni correction over every one-sided bound used
  (2 per threshold and orientation).

Either way, with probability at least ``confidence`` every reported lower bound is valid, so
a correct component is reported as a violation with probability at most ``1 - confidence``
(at a fixed seed the outcome is deterministic).

Randomness: ``numpy.random.SeedSequence(seed).spawn(4)`` gives independent streams for
(selection, D), (selection, D'), (certification, D), (certification, D'); large run counts
are cut into batches of ``batch_size`` runs, each with a child stream of its phase's
``SeedSequence``. Same seed, same ``batch_size`` => identical result.

What an audit can and cannot show: a lower bound above the claim refutes it (up to the
stated confidence); a lower bound below the claim is evidence, not proof -- it says nothing
about neighbouring pairs, statistics or low-probability events the canary does not exercise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_choice, check_delta, check_int, check_real

__all__ = [
    "AuditResult",
    "AuditSpec",
    "Sampler",
    "audit",
    "clopper_pearson_upper",
    "clopper_pearson_lower",
    "eps_lower_bound",
    "mu_lower_bound",
    "lower_bounds_from_counts",
    "format_table",
]

VERDICTS = ("consistent", "violation")
_ORIENTATIONS = ("greater", "less", "both")
_TINY = 1e-300


# --------------------------------------------------------------------------------------------
# Clopper-Pearson and the two routes
# --------------------------------------------------------------------------------------------


def clopper_pearson_upper(k: ArrayLike, n: float, alpha: float) -> np.ndarray:
    """One-sided ``1 - alpha`` upper confidence bound on a binomial proportion.

    ``k`` successes out of ``n`` trials: ``BetaInv(1 - alpha; k + 1, n - k)``, 1 when
    ``k = n``. Vectorised over ``k``.
    """
    from scipy import stats  # here, not at import: scipy.stats is 0.5 s and 15 MB

    k = np.asarray(k, dtype=float)
    n = float(n)
    out = np.ones_like(k)
    m = k < n
    out[m] = stats.beta.ppf(1.0 - alpha, k[m] + 1.0, n - k[m])
    return out


def clopper_pearson_lower(k: ArrayLike, n: float, alpha: float) -> np.ndarray:
    """One-sided ``1 - alpha`` lower confidence bound: ``BetaInv(alpha; k, n - k + 1)``
    (0 when ``k = 0``)."""
    from scipy import stats

    k = np.asarray(k, dtype=float)
    n = float(n)
    out = np.zeros_like(k)
    m = k > 0
    out[m] = stats.beta.ppf(alpha, k[m], n - k[m] + 1.0)
    return out


def eps_lower_bound(p0_upper: ArrayLike, p1_lower: ArrayLike, delta: float) -> np.ndarray:
    """``max{ln((p1- - delta)/p0+), ln((1 - delta - p0+)/(1 - p1-))}``, floored at 0.

    ``p0_upper`` bounds from above the probability of the rejection set under ``D``,
    ``p1_lower`` bounds from below its probability under ``D'``.
    """
    p0 = np.maximum(np.asarray(p0_upper, dtype=float), _TINY)
    p1 = np.asarray(p1_lower, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(p1 - delta, 0.0)) - np.log(p0)
        b = np.log(np.maximum(1.0 - delta - p0, 0.0)) - np.log(np.maximum(1.0 - p1, _TINY))
    out = np.maximum(np.maximum(a, b), 0.0)
    return np.where(np.isnan(out), 0.0, out)


def mu_lower_bound(p0_upper: ArrayLike, p1_lower: ArrayLike) -> np.ndarray:
    """Gaussian-DP bound ``Phi^-1(p1-) - Phi^-1(p0+)`` (may be negative: no evidence)."""
    from scipy import special

    p0 = np.clip(np.asarray(p0_upper, dtype=float), _TINY, 1.0)
    p1 = np.clip(np.asarray(p1_lower, dtype=float), 0.0, 1.0 - 1e-16)
    with np.errstate(divide="ignore"):
        return special.ndtri(p1) - special.ndtri(p0)


def _rates(s0: np.ndarray, s1: np.ndarray, thresholds: np.ndarray):
    """Counts of ``S > tau`` in each world for every threshold (sorted search)."""
    a0 = np.sort(s0)
    a1 = np.sort(s1)
    k0 = a0.size - np.searchsorted(a0, thresholds, side="right")
    k1 = a1.size - np.searchsorted(a1, thresholds, side="right")
    return k0, k1


def lower_bounds_from_counts(k0: ArrayLike, n0: int, k1: ArrayLike, n1: int, delta: float,
                             alpha: float, orientation: str = "greater"
                             ) -> tuple[np.ndarray, np.ndarray]:
    """``(eps_lb, mu_lb)`` arrays for rules ``S > tau`` with counts ``k0`` (of ``n0`` runs on
    ``D``) and ``k1`` (of ``n1`` runs on ``D'``), each one-sided bound at level ``alpha``.

    ``orientation="greater"``: ``D'`` makes the statistic larger; ``"less"``: the reverse.
    """
    k0 = np.asarray(k0)
    k1 = np.asarray(k1)
    if orientation == "greater":
        p0u = clopper_pearson_upper(k0, n0, alpha)
        p1l = clopper_pearson_lower(k1, n1, alpha)
    else:  # the set {S <= tau} is the rejection region; swap the worlds' roles
        p0u = clopper_pearson_upper(n0 - k0, n0, alpha)
        p1l = clopper_pearson_lower(n1 - k1, n1, alpha)
    return eps_lower_bound(p0u, p1l, delta), mu_lower_bound(p0u, p1l)


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


@dataclass
class AuditResult:
    """Outcome of one audit.

    ``epsilon``/``delta`` (and ``mu_claim``) are the *claimed* guarantee; ``eps_lb`` the
    assumption-free lower bound, valid with probability ``confidence``; ``mu_lb`` the
    Gaussian-DP lower bound (``None`` unless the mu route was used) and ``eps_lb_gdp`` its
    conversion to epsilon at ``delta`` (meaningful only for Gaussian-shaped privacy curves).
    ``verdict`` is ``"violation"`` when ``eps_lb > epsilon`` or ``mu_lb > mu_claim``, else
    ``"consistent"``; ``expected`` is what a correct implementation should give (a broken
    variant, a known-false published claim or a deliberate sanity check expect
    ``"violation"``), and ``ok`` says whether they agree.
    """

    component: str
    epsilon: float
    delta: float
    eps_lb: float
    confidence: float
    runs: int
    verdict: str
    notion: str = "DP"
    expected: str = "consistent"
    variant: str = "as implemented"
    broken: bool = False
    statistic: str = ""
    canary: str = ""
    basis: str = ""
    selection: str = "split"
    selection_runs: int = 0
    mu_claim: float | None = None
    mu_lb: float | None = None
    eps_lb_gdp: float | None = None
    threshold: float | None = None
    orientation: str = "greater"
    tpr: float | None = None
    fpr: float | None = None
    seed: int = 0
    seconds: float = 0.0
    notes: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the verdict is the expected one."""
        return self.verdict == self.expected

    @property
    def margin(self) -> float:
        """Largest ratio of a lower bound to its claim (``eps_lb/epsilon``, ``mu_lb/mu``)."""
        vals = [self.eps_lb / self.epsilon if self.epsilon > 0 else math.inf]
        if self.mu_lb is not None and self.mu_claim:
            vals.append(self.mu_lb / self.mu_claim)
        return max(vals)

    def to_dict(self) -> dict:
        """Plain JSON-serialisable dict (``component, epsilon, delta, eps_lb, confidence,
        runs, verdict`` first; ``mu_claim, mu_lb, eps_lb_gdp`` when the mu route ran)."""
        d = _plain(asdict(self))
        d["ok"] = self.ok
        return d


def _plain(value):
    """Recursively turn numpy scalars/arrays into Python floats, ints and lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _fmt(x, spec=".3g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return format(x, spec)


def format_table(results: Sequence[AuditResult]) -> str:
    """Plain-text (Markdown-compatible) table of audit results."""
    header = ["component", "variant", "claim (eps, delta)", "eps_lb", "mu_lb / mu_claim",
              "conf.", "runs/side", "verdict", "expected"]
    rows = []
    for r in results:
        claim = f"({_fmt(r.epsilon, '.4g')}, {_fmt(r.delta, '.2g')})-{r.notion}"
        if r.notion == "GDP":  # the (epsilon, delta) of mu-GDP is its (epsilon, delta)-DP
            claim = (f"({_fmt(r.epsilon, '.4g')}, {_fmt(r.delta, '.2g')})-DP"
                     + (f" of {_fmt(r.mu_claim, '.4g')}-GDP" if r.mu_claim is not None else ""))
        mu = "-" if r.mu_lb is None else f"{r.mu_lb:.3f} / {_fmt(r.mu_claim, '.3f')}"
        runs = f"{r.runs}" + (f" (+{r.selection_runs})" if r.selection_runs else "")
        flag = r.expected if r.ok else f"{r.expected} (MISMATCH)"
        rows.append([r.component, r.variant, claim, f"{r.eps_lb:.3f}", mu,
                     f"{r.confidence:g}", runs, r.verdict, flag])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(row) for row in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# The auditor
# --------------------------------------------------------------------------------------------

Sampler = Callable[[int, int, np.random.Generator], np.ndarray]


def _draw(sampler: Sampler, world: int, n: int, seq: np.random.SeedSequence,
          batch_size: int | None) -> np.ndarray:
    """Run ``sampler`` ``n`` times in batches, each batch with its own child stream."""
    if n == 0:
        return np.empty(0)
    size = n if batch_size is None else batch_size
    chunks = []
    sizes = [size] * (n // size) + ([n % size] if n % size else [])
    for m, child in zip(sizes, seq.spawn(len(sizes)), strict=True):
        out = np.asarray(sampler(world, m, np.random.default_rng(child)), dtype=float)
        if out.shape != (m,):
            raise ValueError(f"sampler must return an array of shape ({m},), got {out.shape}")
        if not np.all(np.isfinite(out)):
            raise ValueError("sampler returned non-finite statistics")
        chunks.append(out)
    return np.concatenate(chunks)


def _candidates(s0: np.ndarray, s1: np.ndarray, thresholds, n_candidates: int) -> np.ndarray:
    if thresholds is not None:
        return np.unique(np.asarray(thresholds, dtype=float))
    pooled = np.concatenate([s0, s1])
    q = np.linspace(0.0, 1.0, n_candidates + 2)[1:-1]
    # Extreme tails matter for epsilon: add quantiles near both ends on a log scale.
    tail = np.geomspace(1.0 / pooled.size, 0.05, n_candidates // 4)
    q = np.unique(np.concatenate([q, tail, 1.0 - tail]))
    values = np.quantile(pooled, q, method="lower")
    return np.unique(np.concatenate([values, [pooled.min() - 1.0]]))


@dataclass(frozen=True)
class AuditSpec:
    """What one audit tests and how, validated on construction (errors name the field).

    The claim: ``epsilon`` (``inf`` for "no claim"), ``delta``, ``mu_claim`` (a Gaussian-DP
    parameter; enables the mu route), ``notion`` and ``basis`` (where the claim comes from).

    The experiment: ``runs`` certification runs per world (the number reported), ``seed``,
    ``confidence``; ``selection="split"`` chooses the rule on ``selection_runs`` separate runs
    per world (default ``max(runs // 4, 500)``) among ``thresholds`` (default: ``n_candidates``
    quantiles of those runs), ``"bonferroni"`` evaluates the pre-set ``thresholds`` with a
    correction over all of them; ``orientation`` is ``"greater"`` (``D'`` shifts the statistic
    up), ``"less"`` or ``"both"``; ``batch_size`` caps the runs per sampler call (memory).

    The labels, copied into the :class:`AuditResult`: ``component``, ``variant``, ``broken``,
    ``expected`` (the verdict a correct implementation gives), ``statistic``, ``canary``,
    ``notes``, ``extra``.
    """

    # the claim (and runs, the one setting of the experiment without a default)
    epsilon: float
    delta: float
    runs: int
    mu_claim: float | None = None
    notion: str = "DP"
    basis: str = ""
    # the experiment
    seed: int = 0
    confidence: float = 0.95
    selection: str = "split"
    thresholds: tuple[float, ...] | None = None
    selection_runs: int | None = None
    orientation: str = "greater"
    n_candidates: int = 200
    batch_size: int | None = None
    # the labels
    component: str = ""
    variant: str = "as implemented"
    broken: bool = False
    expected: str = "consistent"
    statistic: str = ""
    canary: str = ""
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        def put(name: str, value) -> None:
            object.__setattr__(self, name, value)

        put("epsilon", check_real("epsilon", self.epsilon, low=0.0, allow_inf=True))
        put("delta", check_delta(self.delta))
        put("runs", check_int("runs", self.runs, low=10))
        put("seed", check_int("seed", self.seed, low=0))
        put("confidence", check_real("confidence", self.confidence, low=0.0, high=1.0,
                                     low_open=True, high_open=True))
        if self.mu_claim is not None:
            put("mu_claim", check_real("mu_claim", self.mu_claim, low=0.0, low_open=True))
        check_choice("selection", self.selection, {"split", "bonferroni"})
        check_choice("orientation", self.orientation, set(_ORIENTATIONS))
        check_choice("expected", self.expected, set(VERDICTS))
        if self.thresholds is not None:
            taus = tuple(check_real(f"thresholds[{i}]", t) for i, t in enumerate(self.thresholds))
            if not taus:
                raise ValueError("thresholds must hold at least one value when given, got ()")
            put("thresholds", taus)
        elif self.selection == "bonferroni":
            raise ValueError("thresholds must be given when selection='bonferroni' (the rules "
                             "are fixed in advance), got None")
        if self.selection_runs is not None:
            put("selection_runs", check_int("selection_runs", self.selection_runs, low=10))
        put("n_candidates", check_int("n_candidates", self.n_candidates, low=1))
        if self.batch_size is not None:
            put("batch_size", check_int("batch_size", self.batch_size, low=1))
        if not isinstance(self.broken, bool):
            raise TypeError(f"broken must be a bool, got {self.broken!r}")
        put("extra", dict(self.extra))

    @property
    def n_selection(self) -> int:
        """Runs per world of the selection split (0 with ``selection="bonferroni"``)."""
        if self.selection != "split":
            return 0
        return max(self.runs // 4, 500) if self.selection_runs is None else self.selection_runs


#: the fields of an :class:`AuditSpec` an :class:`AuditResult` records as given (with ``extra``)
_RECORDED = ("component", "epsilon", "delta", "confidence", "runs", "notion", "expected",
             "variant", "broken", "statistic", "canary", "basis", "selection", "mu_claim",
             "seed", "notes")


def _pick_rules(sampler: Sampler, spec: AuditSpec, seqs, orients: list[str]
                ) -> list[tuple[float, str]]:
    """The ``(threshold, orientation)`` rules to certify: the pre-set ones (Bonferroni) or
    the best ``eps_lb`` rule (and best ``mu_lb`` rule) on the selection runs (split)."""
    if spec.selection != "split":
        assert spec.thresholds is not None  # checked by AuditSpec
        return [(float(t), o) for t in np.unique(np.asarray(spec.thresholds, float))
                for o in orients]
    n_sel = spec.n_selection
    z0 = _draw(sampler, 0, n_sel, seqs[0], spec.batch_size)
    z1 = _draw(sampler, 1, n_sel, seqs[1], spec.batch_size)
    cand = _candidates(z0, z1, spec.thresholds, spec.n_candidates)
    k0, k1 = _rates(z0, z1, cand)
    # Score every (threshold, orientation) with the certification-level bound, so that
    # rules whose counts are too small to certify are not preferred.
    a_score = (1.0 - spec.confidence) / (2 * cand.size * len(orients))
    best: dict[str, tuple[float, float | None, str | None]] = {
        "eps": (-np.inf, None, None), "mu": (-np.inf, None, None)}
    for o in orients:
        e_lb, m_lb = lower_bounds_from_counts(k0, n_sel, k1, n_sel, spec.delta, a_score, o)
        i = int(np.argmax(e_lb))
        if e_lb[i] > best["eps"][0]:
            best["eps"] = (float(e_lb[i]), float(cand[i]), o)
        j = int(np.argmax(m_lb))
        if m_lb[j] > best["mu"][0]:
            best["mu"] = (float(m_lb[j]), float(cand[j]), o)
    routes = ["eps"] if spec.mu_claim is None else ["eps", "mu"]
    rules = []
    for route in routes:
        _, tau, orient = best[route]
        assert tau is not None and orient is not None  # a candidate scored above -inf
        rules.append((tau, orient))
    return rules


def audit(sampler: Sampler, spec: AuditSpec) -> AuditResult:
    """Audit a randomized procedure against the claim of ``spec``.

    ``sampler(world, n, rng) -> ndarray (n,)`` runs the procedure ``n`` times (one batch of
    replications) on ``D`` (``world=0``) or ``D'`` (``world=1``) with all randomness from
    ``rng`` and returns one finite statistic per run.
    """
    if not callable(sampler):
        raise TypeError(f"sampler must be callable, got {type(sampler).__name__}")
    if not isinstance(spec, AuditSpec):
        raise TypeError(f"spec must be an AuditSpec, got {type(spec).__name__}")
    runs, dlt = spec.runs, spec.delta
    orients = ["greater", "less"] if spec.orientation == "both" else [spec.orientation]

    start = time.perf_counter()
    seq_sel0, seq_sel1, seq_cert0, seq_cert1 = np.random.SeedSequence(spec.seed).spawn(4)
    rules = _pick_rules(sampler, spec, (seq_sel0, seq_sel1), orients)

    s0 = _draw(sampler, 0, runs, seq_cert0, spec.batch_size)
    s1 = _draw(sampler, 1, runs, seq_cert1, spec.batch_size)
    alpha = (1.0 - spec.confidence) / (2 * len(rules))  # two one-sided bounds per rule
    eps_lb, mu_lb = -np.inf, -np.inf
    best_rule = None
    for tau, o in rules:
        k0, k1 = _rates(s0, s1, np.array([tau]))
        e, m = lower_bounds_from_counts(k0, runs, k1, runs, dlt, alpha, o)
        if float(e[0]) > eps_lb or best_rule is None:
            if float(e[0]) > eps_lb:
                eps_lb = float(e[0])
            tpr = (k1[0] if o == "greater" else runs - k1[0]) / runs
            fpr = (k0[0] if o == "greater" else runs - k0[0]) / runs
            best_rule = (tau, o, float(tpr), float(fpr))
        mu_lb = max(mu_lb, float(m[0]))
    eps_lb = max(eps_lb, 0.0)

    eps_lb_gdp = None
    if spec.mu_claim is None:
        mu_out = None
    else:
        mu_out = float(mu_lb)
        if mu_lb > 0 and 0 < dlt < 1:
            from dpbandits.privacy.accounting import gdp_epsilon

            eps_lb_gdp = float(gdp_epsilon(mu_lb, dlt))
        else:
            eps_lb_gdp = 0.0
    violation = eps_lb > spec.epsilon or (spec.mu_claim is not None and mu_lb > spec.mu_claim)
    assert best_rule is not None  # the loop over rules ran at least once
    return AuditResult(
        eps_lb=eps_lb, verdict="violation" if violation else "consistent",
        selection_runs=spec.n_selection, mu_lb=mu_out, eps_lb_gdp=eps_lb_gdp,
        threshold=best_rule[0], orientation=best_rule[1], tpr=best_rule[2], fpr=best_rule[3],
        seconds=time.perf_counter() - start,
        extra=dict(spec.extra), **{name: getattr(spec, name) for name in _RECORDED})

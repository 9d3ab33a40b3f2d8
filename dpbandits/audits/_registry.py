"""The audit registry: one :class:`RegisteredAudit` per audited component (name -> callable),
and the :class:`AuditContext` every registered audit receives.

A registered audit states only what is specific to its component -- the sampler on the
canary pair, the claim and the labels of its statistic -- and hands them to
:meth:`AuditContext.audit`, which fills in what every audit shares (runs, seed, confidence,
the component name, the broken flag, the expected verdict and the variant label) and runs
the generic auditor :func:`dpbandits.privacy.audit.audit`.
"""

from __future__ import annotations

import difflib
import fnmatch
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from threadpoolctl import threadpool_limits

from dpbandits._validation import check_choice, check_int
from dpbandits.privacy.audit import AuditResult, AuditSpec, Sampler, audit

#: Per-audit confidence: a correct component is reported as a violation with probability
#: at most 1e-3 (the per-test failure probability recommended for CI).
CONFIDENCE = 0.999


@dataclass(frozen=True)
class AuditContext:
    """One call of a registered audit: ``runs`` per world, ``seed``, ``broken`` (run the
    broken variant) and the registration ``entry``."""

    entry: RegisteredAudit
    runs: int
    seed: int
    broken: bool

    @property
    def name(self) -> str:
        """The registered name (drivers shared by several audits read their settings by it)."""
        return self.entry.name

    def factor(self, value: float) -> float:
        """``value`` for the broken variant, 1 for the correct component (a noise divisor)."""
        return value if self.broken else 1.0

    def spec(self, **fields) -> AuditSpec:
        """The :class:`AuditSpec` of this call: ``fields`` (the claim, the statistic, the
        canary, ...) plus what every audit shares; ``variant`` defaults to the entry's
        label."""
        entry = self.entry
        fields.setdefault("variant", f"broken: {entry.label}" if self.broken
                          else "as implemented")
        return AuditSpec(runs=self.runs, seed=self.seed, confidence=CONFIDENCE,
                         component=entry.name, broken=self.broken,
                         expected="violation" if self.broken else entry.expected, **fields)

    def audit(self, sampler: Sampler, **fields) -> AuditResult:
        """Audit ``sampler`` against ``self.spec(**fields)``."""
        return audit(sampler, self.spec(**fields))


@dataclass(frozen=True)
class RegisteredAudit:
    """A registered audit: ``entry(runs, seed, broken=False) -> AuditResult``.

    ``fast_runs``/``thorough_runs`` are the certification runs per neighbouring input of the
    two tiers (the fast tier still detects the broken variant). ``expected`` is the verdict a
    correct implementation gives (``"violation"`` for deliberate sanity checks and for
    published claims known to be false). ``has_broken`` is False for audits without a
    power check of their own (sanity checks that already expect a violation). ``label`` is
    the short name of the broken variant in results (default ``broken_variant``).
    """

    name: str
    func: Callable[[AuditContext], AuditResult]
    fast_runs: int
    thorough_runs: int
    component: str
    canary: str
    broken_variant: str
    shows: str
    cannot_show: str
    expected: str = "consistent"
    has_broken: bool = True
    label: str = ""

    def __post_init__(self) -> None:
        check_choice("expected", self.expected, {"consistent", "violation"})
        if not self.label:
            object.__setattr__(self, "label", self.broken_variant)

    def markdown(self) -> str:
        """The audit's section of ``docs/privacy-audit.md`` ("What each audit can and cannot
        show"), rendered from the registration."""

        def sentence(text: str) -> str:
            return text if text.endswith((".", "?", "!")) else text + "."

        runs = f"- Runs per side: fast {self.fast_runs:,}, thorough {self.thorough_runs:,}"
        return "\n".join([
            f"### `{self.name}` — {self.component}", "",
            f"- **Canary:** {sentence(self.canary)}",
            f"- **Broken variant (power check):** {sentence(self.broken_variant)}",
            f"- **Can show:** {sentence(self.shows)}",
            f"- **Cannot show:** {sentence(self.cannot_show)}",
            runs + ("; expected verdict: **violation**." if self.expected == "violation"
                    else "."),
        ])

    def __call__(self, runs: int | None = None, seed: int = 0, broken: bool = False
                 ) -> AuditResult:
        runs = self.fast_runs if runs is None else check_int("runs", runs, low=10)
        if broken and not self.has_broken:
            raise ValueError(f"audit {self.name!r} has no broken variant")
        # Single-threaded BLAS: the components do many tiny linear-algebra calls, which
        # threaded BLAS slows down by 10-100x on shared cores.
        with threadpool_limits(1):
            return self.func(AuditContext(self, runs, seed, broken))


#: name -> RegisteredAudit (callable ``(runs, seed, broken=False) -> AuditResult``)
AUDITS: dict[str, RegisteredAudit] = {}
#: components whose audit could not be registered (module missing), name -> reason
MISSING: dict[str, str] = {}


#: docstring section -> catalogue field (the first paragraph is the component)
_SECTIONS = {"Canary": "canary", "Broken variant": "broken_variant", "Shows": "shows",
             "Cannot show": "cannot_show"}
_SECTION = re.compile(r"^(" + "|".join(_SECTIONS) + r"):\s*")


def _doc_fields(name: str, func) -> dict[str, str]:
    """The catalogue text stated in ``func``'s docstring: the first paragraph names the
    component; each later paragraph opens with ``Canary:``, ``Broken variant:``, ``Shows:``
    or ``Cannot show:``. Lines of a paragraph are joined with single spaces."""
    parts: dict[str, list[str]] = {}
    key: str | None = "component"
    for line in (inspect.getdoc(func) or "").splitlines():
        line = line.strip()
        head = _SECTION.match(line)
        if head:
            key, line = _SECTIONS[head.group(1)], line[head.end():]
        elif not line:
            key = None if key == "component" and parts else key
            continue
        if key is None:
            raise ValueError(f"docstring of audit {name!r}: {line!r} is outside a section "
                             f"(sections: {', '.join(_SECTIONS)})")
        parts.setdefault(key, []).append(line)
    return {k: " ".join(v) for k, v in parts.items()}


def register(name: str, *, fast_runs: int, thorough_runs: int, component: str = "",
             canary: str = "", broken_variant: str = "", shows: str = "", cannot_show: str = "",
             expected: str = "consistent", has_broken: bool = True, label: str = ""):
    """Decorator registering ``func(ctx: AuditContext) -> AuditResult`` under ``name``.

    The catalogue text (``component``, ``canary``, ``broken_variant``, ``shows``,
    ``cannot_show``) is read from the function's docstring (see :func:`_doc_fields`); a
    keyword argument given here replaces the docstring's (for drivers registered under
    several names, see :func:`register_variants`).
    """
    given = dict(component=component, canary=canary, broken_variant=broken_variant,
                 shows=shows, cannot_show=cannot_show)

    def deco(func):
        if name in AUDITS:
            raise ValueError(f"audit {name!r} is already registered")
        text = _doc_fields(name, func) | {k: v for k, v in given.items() if v}
        missing = [k for k in given if not text.get(k)]
        if missing:
            raise ValueError(f"audit {name!r} does not state {', '.join(missing)}: write them "
                             "in its docstring or pass them to register")
        AUDITS[name] = RegisteredAudit(name=name, func=func, fast_runs=fast_runs,
                                       thorough_runs=thorough_runs, expected=expected,
                                       has_broken=has_broken, label=label, **text)
        return func

    return deco


def register_variants(func: Callable[[AuditContext], AuditResult], **common):
    """Register one driver under several names (one component in several configurations):
    returns ``add(name, **fields)``, which registers ``func`` under ``name`` with the
    registration fields ``common`` updated by ``fields``. The driver reads its configuration
    by ``ctx.name``."""

    def add(name: str, **fields) -> None:
        register(name, **{**common, **fields})(func)

    return add


def select(names: Iterable[str] | None) -> list[str]:
    """Registered audit names matching ``names`` (exact names or shell patterns like
    ``"dp-ucb*"``), in registry order; ``None`` selects all."""
    if names is None:
        return list(AUDITS)
    if isinstance(names, str):
        names = [names]
    chosen: list[str] = []
    for pattern in names:
        hits = [n for n in AUDITS if fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            extra = ""
            missing = [m for m in MISSING if fnmatch.fnmatchcase(m, pattern)]
            if missing:
                extra = "; not available: " + ", ".join(f"{m} ({MISSING[m]})" for m in missing)
            close = difflib.get_close_matches(pattern, list(AUDITS), n=3, cutoff=0.5)
            hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close
                    else "; see --list")
            raise ValueError(f"unknown audit {pattern!r}{hint}{extra}")
        chosen += [h for h in hits if h not in chosen]
    return [n for n in AUDITS if n in chosen]


def run_audits(names=None, tier: str = "fast", seed: int = 0, *, power: bool = False
               ) -> list[AuditResult]:
    """Run the selected audits.

    Parameters
    ----------
    names : iterable of audit names or patterns (``None``: every registered audit).
    tier : ``"fast"`` (the default test run's counts) or ``"thorough"``.
    seed : base seed; every audit uses it as given (fixed seeds, reproducible tables).
    power : also run each audit's broken variant (the power check), right after it.
    """
    check_choice("tier", tier, {"fast", "thorough"})
    check_int("seed", seed, low=0)
    results = []
    for name in select(names):
        spec = AUDITS[name]
        runs = spec.fast_runs if tier == "fast" else spec.thorough_runs
        results.append(spec(runs, seed, False))
        if power and spec.has_broken:
            results.append(spec(runs, seed, True))
    return results

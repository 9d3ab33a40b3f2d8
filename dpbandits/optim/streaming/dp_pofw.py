"""DP-POFW: private polyhedral online Frank-Wolfe (Han et al. 2022, Algorithm 2, ``p = 1``).

Constraint set: the l_1 ball of radius ``r`` (diameter ``D = 2r``), whose LMO is a vertex
``±r e_j``. For ``t = 1..n``: the recursive gradient ``d_t`` in its sum form (eq. 3.1; no tree;
Algorithm 2's literal start ``d_1 = grad f(theta_1, x_1)`` is replaced by the sum form's
``d_1 = grad f(theta_1, x_1)/2``, which its privacy proof assumes — see
:mod:`dpbandits.optim.streaming.frank_wolfe`),
then a private selection among the ``2d`` vertices with scores ``<d_t, v>``, i.e. ``+r d_t``
and ``-r d_t`` (one ``(R, 2d)`` argmin per step), then
``theta_{t+1} = theta_t + eta_t (v_t - theta_t)``, ``eta_t = min(1, lr_scale/(t+1))``,
``theta_0 = theta_1 = 0``. Every iterate is released.

Selection (``selection=``)
--------------------------
``"laplace"`` (Algorithm 2): report-noisy-min, ``v_t = argmin_v <d_t, v> + n_v``,
``n_v ~ Lap(b_t)`` i.i.d. per vertex. ``"gumbel"``: the exponential mechanism
``P(v) ∝ exp(-<d_t, v> / b_t)`` (= report-noisy-min with Gumbel noise), sampled exactly by
inverse CDF. Both use a schedule ``b_t = c / sqrt(t)``.

Per-step privacy (pinned in ``tests/test_dp_pofw.py``)
------------------------------------------------------
Conditioned on the released past, neighbouring streams (sample ``i`` replaced) differ at step
``t >= i`` only through ``d_t - d_t' = (g_i - g_i') / (t+1)``, and ``||g_i - g_i'||_inf <= 2
(beta D s + L) =: 2C`` (:mod:`dpbandits.optim.streaming.frank_wolfe`). Each score ``<d_t, ±r
e_j> = ±r d_{t,j}`` therefore moves by at most ``Delta_t = r * 2C / (t+1) = D C / (t+1)``. The
scores are *not* monotone (``+e_j`` and ``-e_j`` move in opposite directions), so
report-noisy-min is ``2 Delta_t / b_t``-DP (Dwork & Roth, Claim 3.9, general case; the exact
selection probabilities in the tests show the monotone bound ``Delta_t / b_t`` is exceeded),
and the exponential mechanism is ``2 Delta_t / b_t``-DP and ``2 Delta_t / b_t``-bounded-range.
The paper's proof (A.6) charges ``s_t / b_t`` with ``s_t = 2 D C / (t+1)`` — it bounds the
score change with ``D`` where the vertices have norm ``r = D/2`` and applies the monotone
claim: the two factors of 2 cancel, so its per-step ``eps_t`` is right. With ``b_t = kappa D C
/ sqrt(t)``::

    eps_t = 2 Delta_t / b_t = 2 sqrt(t) / ((t + 1) kappa)     (independent of D, C).

Calibration
-----------
``"theorem"``: Algorithm 2's ``b_t = 4 D (beta D + L) sqrt(log n log(1/delta)) / (eps sqrt(t))``,
i.e. ``kappa = 4 sqrt(log n log(1/delta)) / eps`` (``beta D`` -> ``lr_scale beta D`` when
``lr_scale > 1``), certified by the proof's Azuma composition (A.6)
``sum_t eps_t (e^{eps_t} - 1) + sqrt(2 log(1/delta) sum_t eps_t^2) <= eps`` evaluated at the
exact ``eps_t`` above. Where that bound exceeds ``eps`` (large ``eps`` with large ``delta``,
e.g. ``eps = 10, delta = 0.01``; the paper's proof drops the ``e^{eps_t} - 1`` factor)
``kappa`` is raised — never lowered — until it holds; the basis says so. ``horizon = 1`` is
rejected (``log n = 0`` gives no noise).

``"accountant"``: the smallest ``kappa`` (same ``1/sqrt(t)`` shape) a numerical accountant
certifies for the same ``(eps, delta)``, found with
:func:`dpbandits.privacy.accounting.calibrate`:

* ``"laplace"``: each step is a generic ``eps_t``-DP mechanism (``pure_dp_event``, the
  randomized-response worst case); the ``n`` steps are composed by the PLD accountant. The
  search is bracketed around the Gaussian-DP (CLT) estimate
  ``kappa ≈ sqrt(sum_t (2 sqrt t/(t+1))^2) / mu(eps, delta)`` and cached per
  ``(n, eps, delta)`` (about 5 s of CPU at ``n = 1e4``).
* ``"gumbel"``: each step is ``eps_t``-bounded-range, hence ``eps_t^2/8``-zCDP (Cesar &
  Rogers 2021); zCDP composes additively and is converted by the RDP accountant.

It is never noisier than the theorem calibration (it falls back to it, saying so).

Gain at the Figure 5.1 setting (``n = T = 1e4``, ``d = 50``, ``delta = 1/T``, ``eps = 1``),
computed by ``python -m dpbandits.optim.streaming.dp_pofw`` (``d`` plays no role in the scales; the
schedule constant is ``c = kappa D C``, so ratios of ``kappa`` are ratios of noise scales)::

    theorem (Algorithm 2)        kappa = 36.84  (the proof's Azuma bound at this kappa: 0.689;
                                                 PLD on the same steps: 0.450)
    laplace, PLD accountant      kappa = 18.16  -> 2.03x less noise than the theorem
    gumbel,  zCDP accountant     kappa = 10.01  -> 3.68x less noise than the theorem
    (reference: laplace through zCDP, rho_t = eps_t^2/2, would need kappa = 20.03)

Sampling the selection. Report-noisy-min releases only the index, so its Laplace noise is
not drawn value by value: :mod:`dpbandits.privacy.vertex_rnm` samples the index's
exact law from about four random 64-bit words per row and step when the noise dominates the
score spread (instead of ``2d`` Laplace variates; more words, up to about ``3 * 2d``, when it
does not). Exact up to the 2^-53 grid of its uniforms: the guarantee's caveat states the
additive delta this costs (:func:`grid_caveat`, derived in
:mod:`dpbandits.privacy.vertex_rnm`). The words of every step are drawn a chunk of rounds at
a time in the calling thread (:mod:`dpbandits.privacy.streams`; cheap enough that handing
them to the background thread only made them wait behind the environment's draws), the rare
extra words from a generator of their own, so the numbers depend only on the seed (not on
chunking or threads).

Batching: any number of rows (``n_reps``), e.g. ``R * K`` for K arms of a bandit agent (see
:mod:`dpbandits.optim.streaming.frank_wolfe`). Per step, numpy path: the increment, the
selection vectorized over rows, a sparse vertex update; the compiled path
(:mod:`dpbandits.optim.streaming._pofw_kernels`) does the whole step in one call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from functools import partial

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dpbandits._backends import compiled, kernels, use_parallel
from dpbandits._validation import check_choice, check_p
from dpbandits.geometry import lmo_lp_ball
from dpbandits.losses import GLMLoss, LossLike
from dpbandits.optim.streaming.frank_wolfe import (
    StreamingFrankWolfe,
    _ChunkedDraws,
    frank_wolfe_step_size,
)
from dpbandits.privacy import accounting
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import exponential_mechanism_from_uniforms
from dpbandits.privacy.plan import NoisePlan
from dpbandits.privacy.streams import ChunkedDraws
from dpbandits.privacy.vertex_rnm import (
    Spill,
    check_beta,
    fixed_words,
    select_rows,
    sign_words,
    tv_slack,
)

__all__ = [
    "DPPOFW",
    "ArmSteps",
    "SELECTIONS",
    "azuma_epsilon",
    "grid_caveat",
    "per_step_epsilons",
    "theorem_kappa",
    "accountant_kappa",
]

SELECTIONS = frozenset({"laplace", "gumbel"})
#: the kernels' code of each GLM link (theirs and DP-HDB's greedy step: 1 = logistic)
LINK_CODES = {"identity": 0, "logistic": 1}


# --------------------------------------------------------------------------- accounting maths
def per_step_epsilons(horizon: int, kappa: float) -> np.ndarray:
    """``eps_t = 2 sqrt(t) / ((t+1) kappa)``, t = 1..n: the per-step privacy of the selection
    with ``b_t = kappa D C / sqrt(t)`` (module docstring)."""
    t = np.arange(1, horizon + 1, dtype=np.float64)
    return 2.0 * np.sqrt(t) / ((t + 1.0) * kappa)


def grid_caveat(d: int, horizon: int, epsilon: float, kappa: float) -> str:
    """The additive slack of report-noisy-min sampled on the 2^-53 grid
    (:mod:`dpbandits.privacy.vertex_rnm`): per step the index is within total variation
    ``eta_t = tv_slack(d, Delta_t)`` of the exact law, ``Delta_t = 2 max|d_t| r / b_t <=
    sqrt(t) / kappa`` (``|d_t|_inf <= C``; doubled here for rounding), so the run holds its
    claim up to an additive ``(1 + e^eps) n eta_n``; a step (``eps_t <= 1/kappa``) up to
    ``(1 + e^{1/kappa}) eta_n``."""
    eta = tv_slack(d, 2.0 * math.sqrt(horizon) / kappa)
    slack = (1.0 + math.exp(epsilon)) * horizon * eta
    return (f"report-noisy-min sampled on a 2^-53 grid (exponentials capped at 36.7): "
            f"each step is eps_t-DP up to an additive delta of at most "
            f"{(1.0 + math.exp(1.0 / kappa)) * eta:.2g} "
            f"(total variation {eta:.2g} from the exact law); the run's delta holds up to "
            f"an additive {slack:.2g}")


def azuma_epsilon(per_step: ArrayLike, delta: float) -> float:
    """Composition bound of the proof of Theorem 3.4 (A.6, Dwork & Roth Lemma 3.18 + Azuma):
    ``sum eps_t (e^{eps_t} - 1) + sqrt(2 log(1/delta) sum eps_t^2)``."""
    e = np.asarray(per_step, dtype=np.float64)
    return float(np.sum(e * np.expm1(e)) + math.sqrt(2.0 * math.log(1.0 / delta) * np.sum(e * e)))


@functools.lru_cache(maxsize=256)
def theorem_kappa(horizon: int, epsilon: float, delta: float) -> tuple[float, float]:
    """``(kappa_paper, kappa_used)``: Algorithm 2's ``4 sqrt(log n log(1/delta)) / eps`` and
    the smallest ``kappa >= kappa_paper`` whose Azuma bound (A.6) is ``<= eps`` (equal to
    ``kappa_paper`` unless the paper's constant is too small at this ``(n, eps, delta)``)."""
    if horizon < 2:
        raise ValueError(
            f"horizon must be >= 2 for calibration='theorem' (Algorithm 2's Laplace scale has "
            f"a factor sqrt(log n), which is 0 for horizon={horizon}); use "
            "calibration='accountant'"
        )
    k0 = 4.0 * math.sqrt(math.log(horizon) * math.log(1.0 / delta)) / epsilon
    k = accounting.calibrate(lambda kappa: per_step_epsilons(horizon, kappa), epsilon, delta,
                             method=azuma_epsilon, lower=k0, growth=2.0, rtol=1e-9)
    return k0, k


# The ledgers are cached: ten thousand steps take ~0.1 s to build, every agent of the same
# (horizon, kappa) has the same one, and a shared ledger object lets certification find its
# certificate by identity (events are immutable: nothing in dpbandits changes one).
@functools.lru_cache(maxsize=16)
def _laplace_ledger(horizon: int, kappa: float) -> dp_accounting.DpEvent:
    return accounting.compose(
        [accounting.pure_dp_event(float(e)) for e in per_step_epsilons(horizon, kappa)]
    )


@functools.lru_cache(maxsize=16)
def _gumbel_ledger(horizon: int, kappa: float) -> dp_accounting.DpEvent:
    return accounting.compose(
        [accounting.zcdp_event(accounting.bounded_range_to_zcdp(float(e)))
         for e in per_step_epsilons(horizon, kappa)]
    )


_RTOL = 2e-3


@functools.lru_cache(maxsize=64)
def accountant_kappa(horizon: int, epsilon: float, delta: float, selection: str) -> float:
    """Smallest ``kappa`` (to a relative ``2e-3``) for which the accountant certifies the
    ``n`` selection steps at ``(epsilon, delta)`` (PLD for ``"laplace"``, zCDP/RDP for
    ``"gumbel"``). Cached."""
    check_choice("selection", selection, SELECTIONS)
    unit = per_step_epsilons(horizon, 1.0)
    if selection == "gumbel":
        rho1 = float(np.sum(unit * unit)) / 8.0  # rho at kappa = 1

        def event(k):
            return accounting.zcdp_event(rho1 / (k * k))

        return accounting.calibrate(event, epsilon, delta, method="rdp", rtol=1e-4)

    def event(k):
        return _laplace_ledger(horizon, k)

    # Bracket just below the Gaussian-DP (CLT) estimate: the randomized-response composition
    # has lighter tails than the Gaussian, and the PLD answer is 0.3% (n = 1e4) to 3% (n = 50)
    # below it. Wider brackets are the fallback.
    k_gdp = math.sqrt(float(np.sum(unit * unit))) / accounting.gdp_mu(epsilon, delta)
    lo, hi = 0.993 * k_gdp, 1.0005 * k_gdp
    try:
        k = accounting.calibrate(event, epsilon, delta, method="pld", lower=lo, upper=hi,
                                 rtol=_RTOL)
    except ValueError:  # the upper end is not enough: bracket up to the zCDP solution
        rho1 = float(np.sum(unit * unit)) / 2.0

        def z_event(kk):
            return accounting.zcdp_event(rho1 / (kk * kk))

        k_z = accounting.calibrate(z_event, epsilon, delta, method="rdp", rtol=1e-4)
        k = accounting.calibrate(event, epsilon, delta, method="pld", lower=hi,
                                 upper=max(k_z, 2.0 * hi), rtol=_RTOL)
    if k == lo:  # the lower end already certifies: search below it
        k = accounting.calibrate(event, epsilon, delta, method="pld", upper=lo, rtol=_RTOL)
    return k


# --------------------------------------------------------------------------- optimizer
class DPPOFW(StreamingFrankWolfe):
    """Private polyhedral online Frank-Wolfe (Han et al. 2022, Algorithm 2), batched over rows.

    Parameters are those of :class:`dpbandits.optim.streaming.frank_wolfe.StreamingFrankWolfe`
    (``loss, dim, radius, horizon, epsilon, delta, calibration, x_bound, y_bound,
    lr_scale``) and:

    Parameters
    ----------
    p : float, default 1
        Must be 1: the constraint set is the l_1 ball (a polytope).
    selection : {"laplace", "gumbel"}, default "laplace"
        ``"laplace"``: report-noisy-max with Laplace noise (Algorithm 2); ``"gumbel"``: the
        exponential mechanism.
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``/``"numba"``: a private Laplace step of a GLM loss (identity or logistic
        link) runs as the compiled kernel of :mod:`dpbandits.optim.streaming._pofw_kernels`,
        anything else in numpy; ``"numpy"``: always numpy. Both draw the same words and give
        the same numbers up to the rounding of dot products.

    Inputs are clipped to ``||x||_inf <= x_bound`` and ``|y| <= y_bound``. See the module
    docstring for the per-step privacy, the two calibrations and their noise scales. The
    plan (:meth:`_make_plan`) has the scales ``kappa`` (dimensionless schedule constant) and
    ``constant`` (``C = beta D s + L``, in gradient units): ``b_t = kappa D C / sqrt(t)``.

    Example (K arms x R replications stacked on the batch axis, as DP-HDB does)
    ---------------------------------------------------------------------------
    >>> K, R, d = 2, 3, 4
    >>> opt = DPPOFW("squared", dim=d, radius=1.0, horizon=50, epsilon=1.0,
    ...              delta=0.02).reset(n_reps=R * K, rng=0)
    >>> theta = opt.step(np.zeros((R * K, d)), np.zeros(R * K)).reshape(R, K, d)
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(loss="squared", dim=5, radius=1.0, horizon=60, epsilon=1.0, delta=1e-3)
    _test_problem = "stream"

    _algorithm = "DP-POFW"

    def __init__(self, loss: str | LossLike, *, dim: int, radius: float, horizon: int,
                 epsilon: float, delta: float | None, p: float = 1,
                 calibration: str = "theorem", selection: str = "laplace",
                 x_bound: float = 1.0, y_bound: float = 1.0, lr_scale: float = 1.0,
                 backend: str = "auto") -> None:
        self.selection = selection
        self.backend = backend
        self._selection = check_choice("selection", selection, SELECTIONS)
        self._compiled = compiled(backend)
        super().__init__(loss, dim=dim, p=p, radius=radius, horizon=horizon, epsilon=epsilon,
                         delta=delta, calibration=calibration, x_bound=x_bound,
                         y_bound=y_bound, lr_scale=lr_scale)
        if self._private and self._calibration == "theorem" and self._n < 2:
            theorem_kappa(self._n, self._eps, self._delta)  # raises the explanatory error

    @staticmethod
    def _check_p(p) -> float:
        p = check_p("p", p)
        if p != 1.0:
            raise ValueError(
                f"p must be 1 for DP-POFW (the l_1 ball; Algorithm 2), got {p}; "
                "use DPTOFW for 1 < p <= inf"
            )
        return p

    # ------------------------------------------------------------------ calibration
    def _make_plan(self) -> NoisePlan:
        """The noise plan for the validated parameters (class docstring)."""
        if not self._private:
            return NoisePlan.non_private("DP-POFW with epsilon=inf: exact LMO, no noise",
                                         {"kappa": 0.0, "constant": 0.0},
                                         events=dp_accounting.NonPrivateDpEvent())
        n, eps, delta = self._n, self._eps, self._delta
        ledger_of = _gumbel_ledger if self._selection == "gumbel" else _laplace_ledger
        theorem = None
        if n >= 2:  # Algorithm 2's scale needs log n > 0 (horizon 1: accountant only)
            c_th = self._beta * self._D * self._s_theorem + self._L
            k_paper, k_th = theorem_kappa(n, eps, delta)
            basis = ("Theorem 3.4 of Han et al. 2022 (proof A.6): each selection step "
                     "eps_t-DP, eps_t = 2 sqrt(t)/((t+1) kappa), Azuma composition")
            if self._selection == "gumbel":
                basis += " (exponential-mechanism steps, each eps_t-DP)"
            if k_th > k_paper:
                basis += (f"; Algorithm 2's scale raised x{k_th / k_paper:.4f} so that the "
                          "proof's bound meets epsilon at this (n, epsilon, delta)")
            theorem = ("theorem", k_th, c_th, basis)
        chosen = theorem
        if self._calibration == "accountant":
            c_acc = self._beta * self._D * self._s_exact + self._L
            k_acc = accountant_kappa(n, eps, delta, self._selection)
            if theorem is None or k_acc * c_acc <= theorem[1] * theorem[2]:
                if self._selection == "laplace":
                    acc_basis = ("PLD accountant (dp_accounting): n report-noisy-min steps, "
                                 "each eps_t-DP (randomized-response worst case), "
                                 "eps_t = 2 sqrt(t)/((t+1) kappa)")
                else:
                    acc_basis = ("zCDP via the RDP accountant (dp_accounting): n exponential-"
                                 "mechanism steps, each eps_t-bounded-range => eps_t^2/8-zCDP "
                                 "(Cesar & Rogers 2021), eps_t = 2 sqrt(t)/((t+1) kappa)")
                chosen = ("accountant", k_acc, c_acc, acc_basis)
            else:
                chosen = ("theorem", theorem[1], theorem[2],
                          theorem[3] + " (accountant calibration fell back to the theorem: no "
                          "less noise could be certified)")
        assert chosen is not None  # horizon 1 with the theorem raised in __init__
        used, kappa, constant, basis = chosen
        caveat = grid_caveat(self._d, n, eps, kappa) if self._selection == "laplace" else ""
        return NoisePlan(used, {"kappa": kappa, "constant": constant},
                         PrivacyGuarantee(eps, delta, basis=basis, caveat=caveat),
                         ledger_of(n, kappa))

    # ------------------------------------------------------------------ reporting
    @property
    def kappa(self) -> float:
        """Dimensionless schedule constant: ``b_t = kappa D C / sqrt(t)`` (0 if not private)."""
        return self.plan.scales["kappa"]

    @property
    def scale_constant(self) -> float:
        """``c`` in ``b_t = c / sqrt(t)``: ``kappa D C`` with ``C = beta D s + L``."""
        kappa, constant = self.plan.scales["kappa"], self.plan.scales["constant"]
        return 0.0 if kappa == 0.0 else kappa * self._D * constant

    def noise_scale(self, t: ArrayLike) -> float | np.ndarray:
        """``b_t`` (Laplace scale, or exponential-mechanism temperature) at step(s) ``t``."""
        t = np.asarray(t, dtype=np.float64)
        if np.any(t < 1) or np.any(t > self._n):
            raise ValueError(f"t must be in [1, horizon={self._n}], got {t}")
        b = self.scale_constant / np.sqrt(t)
        return float(b) if b.ndim == 0 else b

    def per_step_epsilon(self) -> np.ndarray:
        """``eps_t`` for t = 1..n of the schedule in force (module docstring)."""
        kappa = self.plan.scales["kappa"]
        if kappa == 0.0:
            return np.full(self._n, math.inf)
        return per_step_epsilons(self._n, kappa)




    # ------------------------------------------------------------------ streaming
    def _kernel_usable(self) -> bool:
        loss = self._loss
        return (self._compiled and self._private
                and self._selection == "laplace" and isinstance(loss, GLMLoss)
                and type(loss)._psi is GLMLoss._psi and loss.link_name in LINK_CODES)

    def _reset_private_state(self, n_reps, rng) -> None:
        st = self._require_state()
        d = self._d
        st["sum"] = np.zeros((n_reps, d))
        st["rows"] = np.arange(n_reps)
        st["noise"] = None
        st["kernel"] = False
        if self.plan.scales["kappa"] == 0.0:
            return
        st["c"] = self.scale_constant
        if self._selection == "laplace":
            # the fixed words of every round, a chunk of rounds at a time, and the spill
            # (rarely used), from generators of their own (privacy.streams)
            g_words, g_spill = rng.spawn(2)
            F = fixed_words(d)
            st["noise"] = ChunkedDraws(partial(_raw_words, g_words, (n_reps, F)), self._n,
                                       n_reps * F, prefetch=False)
            st["spill"] = Spill(g_spill)
            if self._kernel_usable():
                st["kernel"] = True
                st["smax"] = np.zeros(n_reps)
                st["cand"] = np.zeros((n_reps, sign_words(d)), dtype=np.uint64)
                st["xbuf"] = np.zeros((n_reps, d))
                st["idx"] = np.zeros(n_reps, dtype=np.int64)
                st["all"] = np.ones(n_reps, dtype=bool)
                built = kernels("optim.streaming._pofw_kernels")
                st["k_step"] = built.KERNELS.get("step", use_parallel(n_reps, 12.0 * d))
                st["k_finish"] = built.finish
                st["k_step_arms"] = built.KERNELS.get("step_arms",
                                                      use_parallel(n_reps, 12.0 * d))
                st["link"] = LINK_CODES[self._loss.link_name]
        else:
            st["noise"] = _ChunkedDraws(_Uniforms(n_reps), n_reps, self._n)

    def _shared_step_key(self) -> tuple:
        """What instances stepped by one :class:`ArmSteps` call must share."""
        return (self._d, self._lr, self._radius, self._x_bound, self._y_bound,
                self._state["c"], self._state["link"])

    @property
    def last_direction(self) -> np.ndarray:
        """The search direction ``d_t`` of the last step (``(R, d)`` copy): exact, the noise
        being in the selection."""
        st = self._require_state()
        if st["kernel"] and st["t"] > 0:  # the kernels keep the sum only
            return st["sum"] * (1.0 / (st["t"] + 1.0))
        return super().last_direction

    def _step_core(self, x, y, mask, y_synth) -> None:
        st = self._state
        if not st["kernel"]:
            super()._step_core(x, y, mask, y_synth)
            return
        t, eta, beta = self._schedule(st)
        words = st["noise"].next()[0]
        missing = st["k_step"](
            x, y, st["all"] if mask is None else mask, float(y_synth), t, eta, beta,
            self._radius, self._x_bound, self._y_bound, st["link"], st["thetas"], st["cur"],
            st["sum"], st["smax"], st["n_clipped"], words, st["cand"], st["xbuf"], st["idx"])
        self._finish_step(st, t, eta, beta, words, missing, _NO_OUT)

    def _schedule(self, st) -> tuple[int, float, float]:
        """The next step's ``t``, ``eta_t`` and selection scale ``b_t / r``."""
        t = st["t"] + 1
        return t, frank_wolfe_step_size(t, self._lr), check_beta(
            st["c"] / math.sqrt(t) / self._radius)

    def _finish_step(self, st, t, eta, beta, words, missing, out) -> None:
        """Serve the rows the kernel left for the spill (in order; their new iterates also
        into ``out`` (R, d) unless it is empty), then advance ``t``."""
        if missing:
            spill, row, R = st["spill"], 0, st["R"]
            while True:
                row, spill.pos = st["k_finish"](t, eta, beta, self._radius, st["thetas"],
                                                st["cur"], st["sum"], st["smax"], words,
                                                spill.buf, spill.pos, st["cand"], st["idx"],
                                                row, out)
                if row >= R:
                    break
                spill.refill()
        st["cur"] = 1 - st["cur"]
        st["t"] = t
        st["direction"] = None

    def _advance(self, g, t, theta, eta, out):
        st = self._state
        s = st["sum"]
        s += g
        direction = s * (1.0 / (t + 1.0))
        st["direction"] = direction
        noise = st["noise"]
        if noise is None:  # not private: exact LMO
            v = lmo_lp_ball(direction, 1.0, self._radius)
            np.subtract(v, theta, out=out)
            out *= eta
            out += theta
            return
        r = self._radius
        b = st["c"] / math.sqrt(t)
        if self._selection == "laplace":
            idx = select_rows(direction, b / r, noise.next()[0], st["spill"])
        else:
            idx = _exponential_vertex(direction, noise.next(st["rng"]), b / r)
        d = self._d
        neg = idx >= d
        j = idx - d * neg
        np.multiply(theta, 1.0 - eta, out=out)
        out[st["rows"], j] += np.where(neg, -eta * r, eta * r)


class ArmSteps:
    """The DP-POFW instances ``opts`` (one per arm, as DP-HDB runs them, each already reset)
    stepped together: :meth:`step` gives row ``r``'s sample ``(x[r], y[r])`` to
    ``opts[arms[r]]`` and the synthetic sample ``(0, y_synth)`` to the others. The same
    numbers as ``opts[k]._step_rows(x, y, arms == k, y_synth)`` for each ``k`` in turn, in
    one compiled call when the instances can share it (compiled path, same configuration and
    step; else those calls are made). Build it after the instances' last separate step and
    again after any reset: it holds their state arrays."""

    def __init__(self, opts: Sequence[DPPOFW]) -> None:
        self.opts = tuple(opts)
        states = [o._require_state() for o in self.opts]
        st = states[0]
        self.fused = bool(st["kernel"]) and all(
            s["kernel"] and s["t"] == st["t"] and s["cur"] == st["cur"] and s["R"] == st["R"]
            and o._shared_step_key() == self.opts[0]._shared_step_key()
            for o, s in zip(self.opts, states, strict=True))
        if self.fused:
            self._states = states
            self._arrays = tuple(tuple(s[key] for s in states) for key in (
                "thetas", "sum", "smax", "n_clipped", "cand", "idx"))
            self._missing = np.zeros(len(states), dtype=np.int64)

    def step(self, x: np.ndarray, y: np.ndarray, arms: np.ndarray, y_synth: float,
             out: np.ndarray) -> None:
        """One round (``x`` (R, d), ``y`` and ``arms`` (R,), unchecked); ``out`` (R, K, d)
        receives every instance's new iterate."""
        if not self.fused:
            for k, o in enumerate(self.opts):
                o._step_rows(x, y, arms == k, y_synth)
                out[:, k] = o._current()
            return
        first, states = self.opts[0], self._states
        st = states[0]
        for o, s in zip(self.opts, states, strict=True):
            o._check_horizon(s)
        t, eta, beta = first._schedule(st)
        words = tuple(s["noise"].next()[0] for s in states)
        thetas, sums, smax, n_clipped, cand, idx = self._arrays
        missing = self._missing
        st["k_step_arms"](x, y, arms, float(y_synth), t, eta, beta, first._radius,
                          first._x_bound, first._y_bound, st["link"], thetas, st["cur"], sums,
                          smax, n_clipped, words, cand, st["xbuf"], idx, missing, out)
        for k, (o, s) in enumerate(zip(self.opts, states, strict=True)):
            o._finish_step(s, t, eta, beta, words[k], int(missing[k]), out[:, k])


_NO_OUT = np.empty((0, 0))  # no iterate copies wanted from the spill kernel


def _raw_words(rng: np.random.Generator, shape: tuple, start: int, n: int) -> tuple:
    """``n`` rounds of raw 64-bit words, shape ``(n, *shape)`` (a picklable stream draw)."""
    return (rng.bit_generator.random_raw(n * math.prod(shape)).reshape((n, *shape)),)


def _exponential_vertex(direction: np.ndarray, u: np.ndarray, temperature: float) -> np.ndarray:
    """Exponential mechanism over the 2d vertices ``±r e_j``: ``P(v) ∝ exp(-<d, v> / b)``
    with ``temperature = b / r``, i.e. scores ``(-d, +d)`` (index ``j``: ``+r e_j``, ``d + j``:
    ``-r e_j``), sampled with one uniform ``u`` (R,) per row by
    :func:`~dpbandits.privacy.mechanisms.exponential_mechanism_from_uniforms` (same law as
    report-noisy-min with Gumbel noise)."""
    return exponential_mechanism_from_uniforms(np.concatenate([-direction, direction], axis=1),
                                               temperature, u)


class _Uniforms:
    """``k`` steps of one uniform per row, shape ``(k, n_reps)`` (exponential mechanism)."""

    def __init__(self, n_reps: int):
        self.n_reps = n_reps

    def __call__(self, rng, k):
        return rng.random((k, self.n_reps))


def _main() -> None:  # pragma: no cover - computes the numbers in the module docstring
    import json

    n, eps = 10_000, 1.0
    delta = 1.0 / n
    k_paper, k_th = theorem_kappa(n, eps, delta)
    k_lap = accountant_kappa(n, eps, delta, "laplace")
    k_gum = accountant_kappa(n, eps, delta, "gumbel")
    unit = per_step_epsilons(n, 1.0)
    k_lz = accounting.calibrate(
        lambda k: accounting.zcdp_event(float(np.sum(unit * unit)) / 2.0 / (k * k)),
        eps, delta, method="rdp", rtol=1e-4)
    out = {
        "n": n, "epsilon": eps, "delta": delta,
        "kappa_theorem": k_th, "kappa_paper": k_paper,
        "theorem_azuma_epsilon": azuma_epsilon(per_step_epsilons(n, k_th), delta),
        "theorem_pld_epsilon": accounting.epsilon_of(_laplace_ledger(n, k_th), delta),
        "kappa_accountant_laplace_pld": k_lap,
        "kappa_accountant_gumbel_zcdp": k_gum,
        "kappa_laplace_zcdp_for_reference": k_lz,
        "gain_laplace": k_th / k_lap,
        "gain_gumbel": k_th / k_gum,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":  # pragma: no cover
    _main()

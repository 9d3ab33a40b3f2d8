"""DP-SVRG and DP-SVRG++ (Algorithms 1 and 2 of Wang, Ye & Xu 2017, "Differentially
private empirical risk minimization revisited: faster and more general").

Both minimise ``F^r(x) = (1/n) sum_i f(x; z_i) + r(x)`` by proximal SVRG with Gaussian noise
on every variance-reduced gradient::

    v_t = g(x_{t-1}; z_i) - g(x~; z_i) + (1/n) sum_j g(x~; z_j) + u_t,   u_t ~ N(0, sigma^2 I)
    x_t = prox_{eta r}(x_{t-1} - eta v_t),          i uniform in [n] (one index per step)

where ``g`` is the per-sample gradient **clipped** to l_2 norm ``clip_norm = G`` (the paper
assumes G-Lipschitz losses; clipping enforces it for any data and is counted). DP-SVRG
(strongly convex ``F^r``) restarts every epoch from the snapshot ``x~_s = mean_t x_t``;
DP-SVRG++ doubles the epoch length (``m_s = 2^s m``) and starts epoch ``s+1`` from the
**last** inner iterate. Both return the last snapshot ``x~_T``.

Privacy (App. B.2 of the paper, made exact with an accountant). The paper's noise
``sigma^2 = c G^2 T m ln(1/delta) / (n^2 eps^2)`` (eqs. 3 and 6) leaves ``c`` unspecified and
holds only for ``eps <= c1 T m / n^2`` (Theorems 4.1/4.3, from the moments accountant's
small-noise condition). Here the noise is **calibrated by an accountant** for the target
``(epsilon, delta)``, with no range restriction, following the paper's own decomposition
(eqs. 15-16): the step's query is ``d_i + v~`` with ``d_i = g(x_{t-1}; z_i) - g(x~; z_i)``
(replace-one sensitivity ``4G``: each clipped gradient moves by ``2G``) and ``v~`` the snapshot
mean (sensitivity ``2G/n``). Splitting ``N(0, sigma^2) = N(0, sigma_1^2) + N(0, sigma_2^2)``,
each step is a post-processing of a without-replacement-subsampled Gaussian (``q = 1/n``,
multiplier ``sigma_1/(4G)``) and a Gaussian (multiplier ``sigma_2 n/(2G)``); all ``T m``
steps (every inner iterate, a superset of the output) are composed by dp_accounting's RDP
accountant under replace-one neighbours, and the split minimising ``sigma`` is chosen.
See :func:`dpbandits.privacy.accounting.svrg_multipliers`.

Where the paper's range would bite: with ``n`` in the hundreds of thousands, ``T m / n^2``
is ~1e-6, so the paper's small ``sigma`` is not certified for any practical epsilon. The
accountant shows why: a step that samples the differing record releases its gradient
difference with noise ``sigma_1``, which must then be of order ``G`` whatever ``n``. The
experiments in ``experiments/wang2017_dp_erm`` quantify the consequence.
"""

from __future__ import annotations

import math
from fractions import Fraction

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dpbandits._docs import privacy_target_parameters
from dpbandits._validation import check_int, check_positive
from dpbandits.losses import LossLike
from dpbandits.optim.base import (
    BatchResult,
    IterateHistory,
    PrivateBatchOptimizer,
    check_clip,
)
from dpbandits.optim.batch.data import check_theta0, start_fit
from dpbandits.optim.batch.oracle import GradientOracle, Regularizer
from dpbandits.privacy import accounting as acc
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, PlanMethod

__all__ = ["DPSVRG", "DPSVRGPlusPlus", "svrg_contraction", "svrg_theory_parameters"]

_BLOCK = 256  # inner steps whose indices / noise are drawn in one call


def svrg_contraction(step_size: float, inner_steps: int, smoothness: float,
                     strong_convexity: float) -> float:
    """``A`` of eq. (4) (Wang, Ye & Xu 2017):
    ``E F^r(x~_s) - F* <= A (E F^r(x~_{s-1}) - F*) + noise``,
    ``A = 1/(eta (1 - 8 eta L) mu m) + 8 L eta (m + 1) / (m (1 - 8 L eta))``. ``inf`` when
    ``8 eta L >= 1``."""
    eta, m, L, mu = step_size, inner_steps, smoothness, strong_convexity
    if 8.0 * eta * L >= 1.0 or mu <= 0:
        return math.inf
    shrink = 1.0 - 8.0 * eta * L
    return 1.0 / (eta * shrink * mu * m) + 8.0 * L * eta * (m + 1) / (m * shrink)


def svrg_theory_parameters(smoothness: float, strong_convexity: float,
                           step_size: float | None = None, target: float = 0.5
                           ) -> tuple[float, int, float]:
    """Step size and epoch length meeting eq. (4) of Wang, Ye & Xu 2017: ``A <= target``
    (``1/2``).

    Theorem 4.2 says ``eta = Theta(1/L) <= 1/(12 L)``, but at ``eta = 1/(12 L)`` the second
    term of ``A`` is ``2 (m+1)/m > 1/2`` for every ``m``: eq. (4) needs ``24 L eta < 1``
    (for ``target = 1/2``). The default here is ``eta = 1/(48 L)``, for which the smallest
    ``m`` is about ``192 L / mu``. Returns ``(eta, m, A)``.
    """
    L = check_positive("smoothness", smoothness)
    mu = check_positive("strong_convexity", strong_convexity)
    eta = 1.0 / (48.0 * L) if step_size is None else check_positive("step_size", step_size)
    # A <= target  <=>  m (target (1 - 8 L eta) - 8 L eta) >= 1/(eta mu) + 8 L eta
    slope = target * (1.0 - 8.0 * L * eta) - 8.0 * L * eta
    if slope <= 0:
        raise ValueError(
            f"step_size={eta} is too large for eq. (4) with target {target}: need "
            f"8 L eta (1 + target) < target, i.e. step_size < "
            f"{target / (8.0 * L * (1.0 + target)):.4g} for smoothness L={L}"
        )
    m = max(1, math.ceil((1.0 / (eta * mu) + 8.0 * L * eta) / slope))
    return eta, m, svrg_contraction(eta, m, L, mu)


@privacy_target_parameters
class _VarianceReduced(PrivateBatchOptimizer):
    """Shared implementation of DP-SVRG / DP-SVRG++.

    Parameters
    ----------
    n_epochs : int, default 10
        Number of epochs ``T`` >= 1.
    clip_norm : float, default 1.0
        Bound ``G`` > 0 enforced on every per-sample gradient (l_2).
    reg : {None, "l2", "l1"}, default None
        Regularizer ``r``: ``"l2"`` is ``strength/2 ||x||^2``.
    reg_strength : float, default 0.0
        Its strength, >= 0.
    smoothness : float or None, default None
        ``L`` > 0 of ``f`` in l_2; None means ``loss.smoothness(2, x_bound=clip_norm)`` (i.e.
        features of norm ``<= clip_norm``). Only step sizes depend on it, not privacy.
    noise_std : float or None, default None
        Per-step noise std instead of calibrating (the guarantee is then what the accountant
        certifies for it, e.g. the paper's eq. (3) with a chosen ``c``).
    theta0 : array-like or None, default None
        Initial point, ``(d,)`` or ``(R, d)``; None means zeros.
    """

    def _gradient_clip(self, d: int) -> tuple[float, float]:
        """Per-sample gradients clipped to ``||g||_2 <= clip_norm``."""
        return 2.0, float(self.clip_norm)

    _restart_from_last = False
    _doubling = False
    _name = ""
    _basis_alg = ""

    def __init__(self, epsilon: float, delta: float | None, *, n_epochs: int = 10,
                 inner_steps: int | None = None, step_size: float | None = None,
                 clip_norm: float = 1.0, reg: str | None = None, reg_strength: float = 0.0,
                 smoothness: float | None = None, noise_std: float | None = None,
                 theta0: ArrayLike | None = None) -> None:
        self._store_params(locals())
        check_int("n_epochs", n_epochs, low=1)
        if self._doubling and n_epochs > 40:
            raise ValueError(f"n_epochs must be <= 40 for DP-SVRG++ (epoch length 2^s m), "
                             f"got {n_epochs}")
        if inner_steps is not None:
            check_int("inner_steps", inner_steps, low=1)
        if step_size is not None:
            check_positive("step_size", step_size)
        if smoothness is not None:
            check_positive("smoothness", smoothness)
        check_clip(clip_norm)
        self._reg = Regularizer(reg, reg_strength)
        self._check_target()
        self._resolved: tuple[float, int] | None = None
        self._from_loss = False
        try:  # resolvable without the loss? (else: at fit, from loss.smoothness)
            self._resolve(None)
        except RuntimeError:
            pass

    # ---------------------------------------------------------------- hyper-parameters
    def _default_eta(self, L: float) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def _resolve(self, loss) -> tuple[float, int]:
        """Step size and (initial) epoch length; may need the loss's smoothness."""
        if self._resolved is not None:
            return self._resolved
        L = self.smoothness
        if L is None and (self.step_size is None or self.inner_steps is None):
            if loss is None:
                raise RuntimeError(
                    f"{self._name}: the step size / epoch length depend on the loss's smoothness;"
                    " pass step_size and inner_steps (or smoothness), or call fit() first"
                )
            try:
                L = float(loss.smoothness(2.0, self.clip_norm))
                self._from_loss = True
            except (AttributeError, NotImplementedError, ValueError) as exc:
                raise ValueError(
                    f"{self._name} needs step_size and inner_steps (or smoothness) for the loss "
                    f"{loss!r}: its smoothness is not available ({exc})"
                ) from None
        eta = self.step_size if self.step_size is not None else self._default_eta(L)
        m = self.inner_steps if self.inner_steps is not None else self._default_m(L, eta)
        self._resolved = (float(eta), int(m))
        return self._resolved

    def _default_m(self, L: float, eta: float) -> int:
        raise ValueError(f"inner_steps is required for {self._name}")

    # ---------------------------------------------------------------- schedule & privacy
    def _epoch_lengths(self, m: int) -> list[int]:
        if self._doubling:
            return [m * 2 ** s for s in range(1, self.n_epochs + 1)]
        return [m] * self.n_epochs

    def total_steps(self) -> int:
        """Number of noisy inner steps (= noise draws per replication)."""
        _, m = self._resolve(None)
        return int(sum(self._epoch_lengths(m)))

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """One scale, ``sigma`` (the per-coordinate std of every step's noise): calibrated by
        the accountant on the decomposition of App. B.2 (module docstring), or ``noise_std``
        with what the accountant certifies for it."""
        G = float(self.clip_norm)
        sens_sub, sens_full = 4.0 * G, 2.0 * G / n
        steps = self.total_steps()
        if self.noise_std is not None and float(self.noise_std) > 0.0:
            sigma = float(self.noise_std)
            k_sub, k_full = _split_within(
                sigma, *acc.svrg_split(n, steps, sigma, self._delta, sens_sub, sens_full), G, n)
        elif self.noise_std is not None or not math.isfinite(self.epsilon):
            return NoisePlan.non_private(f"{self._name} without noise", {"sigma": 0.0},
                                         events=dp_accounting.NonPrivateDpEvent())
        else:
            k_sub, k_full = acc.svrg_multipliers(n, steps, self._eps, self._delta, sens_sub,
                                                 sens_full)
            sigma = _covering_std(k_sub, k_full, G, n)
        ledger = acc.svrg_event(n, steps, k_sub, k_full)
        basis = (f"RDP accountant (dp_accounting, replace-one) on {steps} steps of "
                 f"[sampled-w/o-replacement Gaussian (q=1/n, multiplier {k_sub:.4g}) + Gaussian "
                 f"(multiplier {k_full:.4g})]; decomposition of App. B.2, {self._basis_alg} "
                 "of Wang, Ye & Xu 2017")
        eps = (self._eps if self.noise_std is None
               else acc.replace_one_rdp_epsilon(ledger, self._delta))
        return NoisePlan("accountant", {"sigma": sigma},
                         PrivacyGuarantee(epsilon=eps, delta=self._delta, basis=basis), ledger)

    @PlanMethod
    def noise_std_for(self, n: int) -> float:
        """Per-coordinate std of the noise added to every variance-reduced gradient (the
        plan's ``sigma``)."""
        return self.plan_for(n).scales["sigma"]

    def fit(self, loss: LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        """Run the algorithm on ``X (n, d)`` (shared by ``n_reps`` replications) or
        ``X (R, n, d)``; history = the snapshots ``x~_0, ..., x~_T``."""
        loss, rng, data = start_fit(loss, X, y, rng, n_reps, loss_names=False, min_n=2)
        if self._from_loss:  # derived from a previous loss's smoothness: recompute
            before, self._resolved = self._resolved, None
            if self._resolve(loss) != before:  # another epoch length: other plans
                self._plans = {}
        eta, m = self._resolve(loss)
        sigma = self.noise_std_for(data.n)
        R, n, d = data.n_reps, data.n, data.d
        oracle = GradientOracle(loss, data, float(self.clip_norm))
        reg = self._reg
        snap_point = check_theta0(self.theta0, R, d)
        x = snap_point.copy()
        n_clipped = np.zeros(R, dtype=np.int64)
        n_evals = 0
        history = IterateHistory(snap_point)  # steps: gradient evaluations so far
        for m_s in self._epoch_lengths(m):
            snap = oracle.snapshot(snap_point)
            n_clipped += snap.n_clipped
            n_evals += n
            if not self._restart_from_last:
                x = snap_point.copy()
            acc = np.zeros((R, d))
            for start in range(0, m_s, _BLOCK):
                b = min(_BLOCK, m_s - start)
                idx = rng.integers(0, n, size=(b, R))
                noise = gaussian_noise(rng, sigma, (b, R, d)) if sigma > 0 else None
                for t in range(b):
                    v, clipped = _direction(oracle, snap, x, idx[t])
                    n_clipped += clipped
                    if noise is not None:
                        v += noise[t]
                    x = reg.prox(x - eta * v, eta)
                    acc += x
            n_evals += 2 * m_s
            snap_point = acc / m_s
            history.record(snap_point, n_evals)
        return self._result(
            n, d,
            theta=snap_point,
            history=history.iterates(),
            history_steps=np.arange(len(history.steps())),
            n_clipped=n_clipped,
            n_gradient_evals=int(n_evals),
            extra={"grad_evals": history.steps(), "wall_time": history.wall_times(),
                   "noise_std": sigma, "step_size": eta, "inner_steps": m,
                   "epoch_lengths": self._epoch_lengths(m), "last_iterate": x},
        )


def _split_variance(k_sub: float, k_full: float, G: float, n: int) -> Fraction:
    """``(k_sub 4G)^2 + (k_full 2G/n)^2`` exactly: the variance the ledger's split states
    (the sensitivities of App. B.2 over the reals, not their float roundings)."""
    g = Fraction(G)
    return Fraction(k_sub) ** 2 * (4 * g) ** 2 + Fraction(k_full) ** 2 * (2 * g / n) ** 2


def _covering_std(k_sub: float, k_full: float, G: float, n: int) -> float:
    """``hypot(k_sub 4G, k_full 2G/n)`` rounded up until its square covers the split's exact
    variance: the noise drawn is never below what the ledger states."""
    sigma = math.hypot(k_sub * 4.0 * G, k_full * (2.0 * G / n))
    while Fraction(sigma) ** 2 < _split_variance(k_sub, k_full, G, n):
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def _split_within(sigma: float, k_sub: float, k_full: float, G: float, n: int
                  ) -> tuple[float, float]:
    """The split rounded down (by ulps) until its exact variance is within ``sigma^2``: the
    golden-section split can state one ulp more variance than ``sigma`` holds."""
    while _split_variance(k_sub, k_full, G, n) > Fraction(sigma) ** 2:
        k_sub, k_full = math.nextafter(k_sub, 0.0), math.nextafter(k_full, 0.0)
    return k_sub, k_full


def _direction(oracle: GradientOracle, snap, x: np.ndarray, idx: np.ndarray):
    """Noise-free variance-reduced gradient ``g(x; z_i) - g(x~; z_i) + mean_j g(x~; z_j)``
    and the number of clipped per-sample gradients (0, 1 or 2) per replication."""
    g_now, c_now = oracle.at_index(x, idx)
    g_snap, c_snap = snap.at_index(idx)
    return g_now - g_snap + snap.mean, c_now.astype(np.int64) + c_snap


class DPSVRG(_VarianceReduced):
    """DP-SVRG (Wang, Ye & Xu 2017, Algorithm 1): private proximal SVRG for strongly convex
    ``F^r``.

    The noise plan (:meth:`plan_for`; calibration ``"accountant"``) has one scale, ``sigma``,
    the per-coordinate std of every step's noise.

    Parameters
    ----------
    inner_steps : int or None, default None
        Inner steps ``m`` >= 1 per epoch; None means the smallest ``m`` with ``A <= 1/2`` in
        eq. (4), which needs ``reg="l2"`` (``mu = reg_strength``), see
        :func:`svrg_theory_parameters`.
    step_size : float or None, default None
        Step ``eta`` > 0; None means ``1/(48 L)`` (eq. 4 cannot hold at the printed
        ``1/(12 L)``).
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3, n_epochs=3, inner_steps=5)
    _test_problem = "logistic"

    _name = "DP-SVRG"
    _basis_alg = "Algorithm 1 / Theorem 4.1"

    def _default_eta(self, L: float) -> float:
        return 1.0 / (48.0 * L)

    def _default_m(self, L: float, eta: float) -> int:
        mu = self._reg.strong_convexity
        if mu <= 0:
            raise ValueError("inner_steps is required for DP-SVRG unless reg='l2' with "
                             "reg_strength > 0 (m is derived from eq. (4) with mu = reg_strength)")
        return svrg_theory_parameters(L, mu, eta)[1]


class DPSVRGPlusPlus(_VarianceReduced):
    """DP-SVRG++ (Wang, Ye & Xu 2017, Algorithm 2): doubling epochs ``m_s = 2^s m``, each
    epoch starts from the previous epoch's last iterate; for non-strongly convex ``F^r``.

    Parameters as :class:`DPSVRG`, except the two below. The noise is calibrated for the
    ``m (2^{T+1} - 2)`` inner steps.

    Parameters
    ----------
    inner_steps : int or None, default 10
        Inner steps ``m`` >= 1 of the first epoch (10 as in the paper's Figure 2).
    step_size : float or None, default None
        Step ``eta`` > 0; None means ``1/(13 L)`` (Theorem 4.4).
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3, n_epochs=3, inner_steps=5)
    _test_problem = "logistic"

    _name = "DP-SVRG++"
    _basis_alg = "Algorithm 2 / Theorem 4.3"
    _restart_from_last = True
    _doubling = True

    def __init__(self, epsilon: float, delta: float | None, *, n_epochs: int = 10,
                 inner_steps: int | None = 10, step_size: float | None = None,
                 clip_norm: float = 1.0, reg: str | None = None, reg_strength: float = 0.0,
                 smoothness: float | None = None, noise_std: float | None = None,
                 theta0: ArrayLike | None = None) -> None:
        super().__init__(epsilon, delta, n_epochs=n_epochs, inner_steps=inner_steps,
                         step_size=step_size, clip_norm=clip_norm, reg=reg,
                         reg_strength=reg_strength, smoothness=smoothness, noise_std=noise_std,
                         theta0=theta0)

    def _default_eta(self, L: float) -> float:
        return 1.0 / (13.0 * L)

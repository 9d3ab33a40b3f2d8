"""NoisySFW: noisy stochastic Frank-Wolfe with variance reduction (Bassily, Guzmán & Nandi,
"Non-Euclidean differentially private stochastic convex optimization", COLT 2021 — the
"Bassily et al. 2021b" of Han et al. 2022 — Algorithm 3), one of the DP-SCO baselines of
Table 5.1 of Han et al. 2022 (shared conventions: :mod:`dpbandits.optim.batch.lp_ball`).

Clipping: besides every per-sample gradient (``||g||_q <= L0``), each per-sample *difference*
``clip grad f(theta_t) - clip grad f(theta_{t-1})`` is clipped to ``L1 ||theta_t -
theta_{t-1}||_p`` (``smoothness`` parameter): the smoothness bound that the privacy proof uses
would otherwise not survive the first clipping (radial clipping in a non-Euclidean norm is
only 2-Lipschitz). ``extra["n_diff_clipped"]`` counts the difference clips.

Privacy: each sample enters exactly one noisy aggregate (first half ``B0`` once, then
disjoint batches of the second half), so by parallel composition the output is
``(epsilon, delta)``-DP as soon as each aggregate is, and each aggregate uses the generalized
Gaussian mechanism (Lemma 2.1 of Han et al. 2022 = Bassily et al. 2021b) with
``sigma = s sqrt(2 kappa log(1/delta)) / epsilon`` for its l_q sensitivity ``s``:
``s0 = 2 L0 / |B0|`` and ``s = 2 L1 eta M / b`` (``M = 2 radius``). With ``|B0| = n/2`` and
``b = sqrt(n)/2`` these are the bounds ``sigma_0 = 4 sqrt(2 kappa) L0 sqrt(log(1/delta))/(n
eps)`` and ``sigma = sqrt(32 kappa L1^2 M^2 eta^2 log(1/delta) / (n eps^2))``; for other
``n`` the actual (floored) batch sizes are used, which only adds noise. When the smooth norm
is Euclidean (``q_plus = 2``: ``p = 2``, or small ``d``) the noise is an ordinary Gaussian;
it is then checked with the exact Gaussian formula (Balle & Wang 2018) and raised if Lemma
2.1's value were too small. Otherwise, as for DP-TOFW, Lemma 2.1 is trusted only for
``epsilon <= 1`` (above, the guarantee is reported as not certified). The ledger is the one
mechanism a sample enters (:meth:`NoisySFW.ledger_for`).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace

import dp_accounting
import numpy as np
from dp_accounting import dp_event as _ev
from numpy.typing import ArrayLike

from dpbandits._validation import check_epsilon, check_int, check_positive
from dpbandits.geometry import clip_rows, dual_exponent, lmo_lp_ball, lp_norm, noise_geometry
from dpbandits.losses import LossLike
from dpbandits.optim.base import (
    BatchResult,
    clipped_gradient_sum,
    clipped_gradients,
    elapsed,
)
from dpbandits.optim.batch.data import start_fit
from dpbandits.optim.batch.lp_ball import LpBallOptimizer
from dpbandits.privacy import accounting
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import (
    gaussian_mechanism_delta,
    gaussian_sigma_analytic,
    generalized_gaussian_noise,
)
from dpbandits.privacy.plan import NoisePlan, PlanMethod

__all__ = ["NoisySFW", "NoisySFWSchedule", "noisy_sfw_schedule"]


def clip_differences(diff: np.ndarray, q: float, bound: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Each replication's ``(b, d)`` gradient differences ``diff[r]`` clipped to
    ``||.||_q <= bound[r]`` by :func:`dpbandits.geometry.clip_rows` (exact norm within the
    bound after rounding); returns ``(clipped, n_clipped per replication)``."""
    out = np.empty_like(diff)
    n = np.zeros(diff.shape[0], dtype=np.int64)
    for r in range(diff.shape[0]):
        c, norms = clip_rows(diff[r], q, float(bound[r]))
        out[r] = c
        n[r] = int(np.count_nonzero(norms > bound[r]))
    return out, n


@dataclass(frozen=True)
class NoisySFWSchedule:
    """Everything NoisySFW derives from ``(n, d)`` and its parameters (module docstring)."""

    n: int
    d: int
    n_first: int  # |B0| = floor(n / 2)
    batch_size: int  # b = floor(sqrt(n) / 2)
    n_rounds: int  # K = floor(sqrt(n)) - 1 variance-reduced rounds after theta_1
    eta: float  # lr_scale * log(n) / (2 sqrt(n))
    diameter: float  # M = 2 radius
    kappa: float
    q_plus: float
    plus_scale: float  # ||z||_+ = plus_scale * ||z||_{q_plus}
    sensitivity0: float  # 2 L0 / |B0|
    sensitivity: float  # 2 L1 eta M / b
    sigma0: float  # generalized-Gaussian sigma of the first aggregate (0 if not private)
    sigma: float  # ... of every later round
    sigma_over_sensitivity: float  # sqrt(2 kappa log(1/delta)) / eps (Lemma 2.1), or raised
    gaussian_branch: bool  # q_plus == 2: the noise is N(0, (sigma / plus_scale)^2 I)
    noise_multiplier: float  # Gaussian branch: std / l2 sensitivity (else nan)
    sigma_raised: bool  # Gaussian branch: Lemma 2.1's sigma was below the exact Gaussian one

    def to_dict(self) -> dict:
        return asdict(self)


def noisy_sfw_schedule(n: int, d: int, *, p: float, radius: float, epsilon: float,
                       delta: float, lipschitz: float, smoothness: float, lr_scale: float = 1.0
                       ) -> NoisySFWSchedule:
    """NoisySFW's batch sizes, step and noise for ``n`` samples in dimension ``d``."""
    n = check_int("n", n, low=4)
    d = check_int("d", d, low=1)
    eps = check_epsilon(epsilon)
    n_first = n // 2
    batch = int(math.floor(math.sqrt(n) / 2.0))
    rounds = int(math.floor(math.sqrt(n))) - 1
    eta = lr_scale * math.log(n) / (2.0 * math.sqrt(n))
    if eta > 1.0:
        raise ValueError(
            f"lr_scale={lr_scale} gives the Frank-Wolfe step eta={eta:.4g} > 1 for n={n} "
            "(iterates would leave the constraint set); use a smaller lr_scale"
        )
    M = 2.0 * radius
    geo = noise_geometry(p, d)
    s0 = 2.0 * lipschitz / n_first
    s = 2.0 * smoothness * eta * M / batch
    gaussian = geo.q_plus == 2.0
    q = dual_exponent(p)
    # ||z||_2 <= c2 ||z||_q: the l_2 sensitivity of an l_q-bounded difference
    c2 = 1.0 if q <= 2.0 else float(d) ** (0.5 - (0.0 if math.isinf(q) else 1.0 / q))
    raised = False
    if math.isfinite(eps):
        ratio = math.sqrt(2.0 * geo.kappa * math.log(1.0 / delta)) / eps  # Lemma 2.1
        z = math.nan
        if gaussian:
            # Gaussian branch: the noise is N(0, (sigma/scale)^2 I), an ordinary Gaussian
            # mechanism; check it exactly (Balle & Wang 2018) and raise sigma if Lemma 2.1's
            # value were too small for (eps, delta) (never lower it).
            z = ratio / geo.scale / c2
            if gaussian_mechanism_delta(z, eps, 1.0) > delta:
                z = gaussian_sigma_analytic(eps, delta, 1.0)
                ratio = z * c2 * geo.scale
                raised = True
        sigma0, sigma = ratio * s0, ratio * s
    else:
        ratio, z, sigma0, sigma = 0.0, math.inf, 0.0, 0.0
    return NoisySFWSchedule(n, d, n_first, batch, rounds, eta, M, geo.kappa, geo.q_plus,
                            geo.scale, s0, s, sigma0, sigma, ratio, gaussian, z, raised)


# Lemma 2.1 is a tail bound whose Gaussian instance fails for large epsilon; above this
# epsilon the generalized-Gaussian guarantee is reported as not certified, as DP-TOFW does
# and as the closed-form check of the ledger does.
_LEMMA_2_1_MAX_EPS = accounting.LEMMA_2_1_MAX_EPSILON


class NoisySFW(LpBallOptimizer):
    """Noisy stochastic Frank-Wolfe with variance reduction (Bassily et al. 2021b, Alg. 3).

    For ``1 < p <= 2``. The first half ``B0`` of the data gives ``grad_0`` = mean clipped
    gradient at ``theta_0 = 0`` + generalized-Gaussian noise (``sigma0``), and
    ``theta_1 = (1 - eta) theta_0 + eta LMO(grad_0)``. Then rounds ``t = 1..K``,
    ``K = floor(sqrt(n)) - 1``, over disjoint batches of ``b = floor(sqrt(n)/2)`` samples of
    the second half:
    ``grad += mean(clip grad f(theta_t) - clip grad f(theta_{t-1}))`` (each difference clipped
    to ``L1 ||theta_t - theta_{t-1}||_p``) ``+`` noise (``sigma``);
    ``theta_{t+1} = (1 - eta) theta_t + eta LMO(grad)``. Output: the last iterate.

    Parameters
    ----------
    p : float, default 1.5
        Exponent in (1, 2] of the l_p-ball constraint.
    smoothness : float, default 1.0
        ``L1`` > 0: per-sample differences are clipped to ``L1 ||theta_t - theta_{t-1}||_p``.
    lr_scale : float, default 1.0
        Multiplies (> 0) the paper's ``eta = log(n) / (2 sqrt(n))`` (must keep ``eta <= 1``).

    The noise plan (:meth:`plan_for`, per ``(n, d)``) has one scale, ``multiplier``: each
    aggregate's generalized-Gaussian ``sigma`` over its l_q sensitivity (``sigma0 =
    multiplier s0``, ``sigma = multiplier s``); :meth:`schedule` reports the noise of the plan.

    ``fit`` returns the iterates ``theta_0 .. theta_{K+1}`` as history (``history_steps`` = round
    index; ``extra["history_samples"]`` samples used so far, ``extra["history_time"]`` seconds
    since the start of ``fit``).
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(p=1.5, epsilon=1.0, delta=1e-3)
    _test_problem = "squared"

    def __init__(self, *, p: float = 1.5, radius: float = 1.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, smoothness: float = 1.0,
                 lr_scale: float = 1.0) -> None:
        self._store_params(locals())
        self._check_ball()
        self._L1 = check_positive("smoothness", smoothness)

    _plan_uses_d = True

    def _calibrated_schedule(self, n: int, d: int) -> NoisySFWSchedule:
        return noisy_sfw_schedule(n, d, p=self._p, radius=self._radius, epsilon=self._eps,
                                  delta=self.delta_for(n), lipschitz=self._L0,
                                  smoothness=self._L1, lr_scale=self._lr)

    @PlanMethod
    def schedule(self, n: int, d: int) -> NoisySFWSchedule:
        """Batch sizes, step size and noise levels for ``n`` samples in dimension ``d``; the
        noise fields (``sigma0``, ``sigma``, ``sigma_over_sensitivity``,
        ``noise_multiplier``) follow the plan's ``multiplier``."""
        sch = self._calibrated_schedule(n, d)
        ratio = self.plan_for(n, d).scales["multiplier"]
        if not self._private:
            return sch
        # the calibration's own plan gives its own numbers (x * (r / r) == x exactly)
        z = sch.noise_multiplier * (ratio / sch.sigma_over_sensitivity)
        return replace(sch, sigma0=ratio * sch.sensitivity0, sigma=ratio * sch.sensitivity,
                       sigma_over_sensitivity=ratio, noise_multiplier=z)

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """One scale, ``multiplier``: each aggregate's generalized-Gaussian ``sigma`` over its
        l_q sensitivity (``sqrt(2 kappa log(1/delta)) / eps``, Lemma 2.1, or raised on the
        Gaussian branch); the guarantee is that of the one mechanism a sample enters
        (aggregates are over disjoint samples, parallel composition)."""
        sch = self._calibrated_schedule(n, d)  # type: ignore[arg-type]  # d checked there
        if not self._private:
            return NoisePlan.non_private("NoisySFW without noise (epsilon = inf)",
                                         {"multiplier": 0.0}, events=_ev.NonPrivateDpEvent())
        basis = (
            "Bassily, Guzman & Nandi 2021 Alg. 3 (NoisySFW): "
            + ("Gaussian mechanism (smooth norm l_2; exact check, Balle & Wang 2018)"
               if sch.gaussian_branch else
               f"generalized Gaussian mechanism (Lemma 2.1 of Han et al. 2022, "
               f"kappa={sch.kappa:.4g}, "
               f"||.||_+ = l_{sch.q_plus:.4g})")
            + f" on each of {sch.n_rounds + 1} aggregates over disjoint samples (parallel "
            "composition); sensitivities enforced by clipping"
        )
        if sch.gaussian_branch or self._eps <= _LEMMA_2_1_MAX_EPS:
            guarantee = PrivacyGuarantee(epsilon=self._eps, delta=self.delta_for(n),
                                         basis=basis)
        else:
            guarantee = PrivacyGuarantee(
                epsilon=self._eps, delta=self.delta_for(n), basis=basis, certified=False,
                caveat=(f"epsilon {self._eps:.3g} > {_LEMMA_2_1_MAX_EPS}: Lemma 2.1 "
                        "(generalized Gaussian mechanism) is not trusted there; its Gaussian "
                        "instance fails for large epsilon"),
            )
        # The ledger: the one mechanism a sample enters. Gaussian branch (q_plus = 2): a
        # GaussianDpEvent with the noise multiplier relative to the l_2 sensitivity;
        # otherwise a GeneralizedGaussianDpEvent (no accountant supports it; the guarantee
        # rests on Lemma 2.1).
        if sch.gaussian_branch:
            ledger: dp_accounting.DpEvent = _ev.GaussianDpEvent(
                noise_multiplier=sch.noise_multiplier)
        else:
            ledger = accounting.GeneralizedGaussianDpEvent(
                sch.sigma_over_sensitivity, sch.q_plus, sch.plus_scale, sch.kappa, self._eps,
                self.delta_for(n))
        return NoisePlan("theorem", {"multiplier": sch.sigma_over_sensitivity}, guarantee,
                         ledger, {"first": sch.sensitivity0, "rounds": sch.sensitivity})

    def fit(self, loss: str | LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        """Run NoisySFW on ``X`` ``(n, d)`` / ``(R, n, d)`` and ``y``; noise from ``rng``."""
        t0 = time.perf_counter()
        loss, rng, data = start_fit(loss, X, y, rng, n_reps)
        R, n, d = data.n_reps, data.n, data.d
        if n < 4:
            raise ValueError(f"NoisySFW needs n >= 4 samples, got n={n}")
        sch = self.schedule(n, d)  # noise levels from the plan
        p, q, r, eta, L0, L1 = self._p, self._q, self._radius, sch.eta, self._L0, self._L1

        def noise(sigma, size):
            if sigma == 0.0:
                return np.zeros((*size, d))
            # Z ~ G_{||.||_+}(0, sigma^2) with ||z||_+ = scale ||z||_{q+}: Z = W / scale,
            # W ~ G_{||.||_{q+}}(0, sigma^2), i.e. the l_{q+} sampler at sigma / scale.
            return generalized_gaussian_noise(rng, sigma / sch.plus_scale, sch.q_plus, d, size)

        K = sch.n_rounds
        n_clipped = np.zeros(R, dtype=np.int64)
        n_diff = np.zeros(R, dtype=np.int64)
        hist = np.zeros((R, K + 2, d))  # theta_0 = 0, theta_1, ..., theta_{K+1}
        samples = np.zeros(K + 2, dtype=np.int64)
        times = np.zeros(K + 2)

        theta_prev = np.zeros((R, d))
        Xb, yb = data.block(0, sch.n_first)
        gsum, cnt = clipped_gradient_sum(loss, theta_prev, Xb, yb, q, L0)
        n_clipped += cnt
        grad = gsum / sch.n_first + noise(sch.sigma0, (R,))
        theta = (1.0 - eta) * theta_prev + eta * lmo_lp_ball(grad, p, r)
        round_noise = noise(sch.sigma, (K, R))
        hist[:, 1] = theta
        samples[1] = sch.n_first
        times[1] = elapsed(t0)
        start = sch.n_first
        b = sch.batch_size
        # Rounds t = 1 .. K (the authors' `for t in range(1, int(sqrt(n)))`), batch t being
        # samples [n_first + (t-1) b, n_first + t b) of the second half.
        for t in range(1, K + 1):
            Xb, yb = data.block(start, start + b)
            start += b
            g1, w1 = clipped_gradients(loss, theta[:, None, :], Xb, yb, q, L0)
            g0, w0 = clipped_gradients(loss, theta_prev[:, None, :], Xb, yb, q, L0)
            n_clipped += w1.sum(axis=1) + w0.sum(axis=1)
            diff = g1 - g0
            bound = L1 * lp_norm(theta - theta_prev, p)  # (R,)
            diff, over = clip_differences(diff, q, bound)
            n_diff += over
            grad = grad + diff.mean(axis=1) + round_noise[t - 1]
            theta_prev, theta = theta, (1.0 - eta) * theta + eta * lmo_lp_ball(grad, p, r)
            hist[:, t + 1] = theta
            samples[t + 1] = start
            times[t + 1] = elapsed(t0)
        return self._result(
            n, d,
            theta=theta.copy(),
            history=hist,
            history_steps=np.arange(K + 2),
            n_clipped=n_clipped,
            n_gradient_evals=sch.n_first + 2 * sch.batch_size * K,
            extra={
                "schedule": sch.to_dict(),
                "n_diff_clipped": n_diff,
                "history_samples": samples,
                "history_time": times,
                "seconds": elapsed(t0),
            },
        )

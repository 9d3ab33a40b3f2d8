"""DP-GD (Wang, Ye & Xu 2017, Algorithm 4): noisy full-batch gradient descent, with the last iterate
(Section 6.1, Polyak-Lojasiewicz objectives) or a uniformly random iterate (Section 6.2,
gradient-norm utility for non-convex objectives) as output.

    x_t = prox_{eta r}( x_{t-1} - eta (grad F(x_{t-1}) + z_{t-1}) ),  z ~ N(0, sigma^2 I)

``grad F`` is the mean of per-sample gradients clipped to l_2 norm ``clip_norm = G`` (the
paper's G-Lipschitz assumption, enforced and counted), so its replace-one sensitivity is
``2G/n``. The paper has no regularizer; an optional ``r`` (``"l2"``/``"l1"``) is applied by its
proximal operator, which is data-independent post-processing.

Privacy (Theorem 6.1: ``sigma^2 = c G^2 T ln(1/delta)/(n^2 eps^2)``, ``c`` unspecified, no
range restriction). Here ``T`` Gaussian steps of multiplier ``k = sigma n / (2G)`` are
``sqrt(T)/k``-GDP exactly (Gaussian mechanisms compose to a Gaussian mechanism), so
``k = sqrt(T) / gdp_mu(epsilon, delta)`` is the smallest noise certified for the target; the
ledger ``gaussian_event(k, count=T)`` is re-accounted by the PLD accountant.

Random output: the paper prints "m uniformly sampled from {0, ..., m-1}"; its proof (B.9)
averages over ``{0, ..., T-1}``, which is what is implemented (our reading).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dpbandits._docs import privacy_target_parameters
from dpbandits._validation import check_choice, check_int, check_positive
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

__all__ = ["DPGD", "FullGradientGaussian", "gaussian_privacy"]


def gaussian_privacy(epsilon: float, delta: float, noise_std: float | None, n: int,
                     clip_norm: float, n_steps: int, name: str, basis_alg: str
                     ) -> tuple[float, float, PrivacyGuarantee, dp_accounting.DpEvent]:
    """``(sigma, k, PrivacyGuarantee, ledger)`` of ``n_steps`` full-gradient Gaussian steps
    (sensitivity ``2 clip_norm / n``), calibrated to ``(epsilon, delta)`` unless ``noise_std``
    is given. Shared by DP-GD and DP-AccMD."""
    sens = 2.0 * clip_norm / n
    if noise_std is not None:
        sigma = float(noise_std)
        if sigma == 0.0:
            return 0.0, 0.0, PrivacyGuarantee.non_private(f"{name} without noise"), \
                dp_accounting.NonPrivateDpEvent()
        k = sigma / sens
        ledger = acc.gaussian_event(k, count=n_steps)
        eps = acc.epsilon_of(ledger, delta, method="pld")
    elif not math.isfinite(epsilon):
        return 0.0, 0.0, PrivacyGuarantee.non_private(f"{name} without noise"), \
            dp_accounting.NonPrivateDpEvent()
    else:
        k = acc.certified_gaussian_multiplier(float(epsilon), float(delta), int(n_steps))
        sigma = k * sens
        ledger = acc.gaussian_event(k, count=n_steps)
        eps = float(epsilon)
    mu = math.sqrt(n_steps) / k
    basis = (f"{n_steps} Gaussian steps, multiplier {k:.4g} (sensitivity 2G/n): {mu:.4g}-GDP "
             f"(exact composition; PLD accountant on the ledger); {basis_alg} of Wang, Ye & Xu "
             "2017")
    return sigma, k, PrivacyGuarantee(epsilon=eps, delta=float(delta), basis=basis), ledger


class FullGradientGaussian(PrivateBatchOptimizer):
    """``n_iters`` Gaussian queries of the clipped mean gradient (:func:`gaussian_privacy`):
    the noise and guarantee of DP-GD and DP-AccMD."""

    def _gradient_clip(self, d: int) -> tuple[float, float]:
        """Per-sample gradients clipped to ``||g||_2 <= clip_norm``."""
        return 2.0, float(self.clip_norm)

    _label = ""
    _basis_alg = ""

    def _check_schedule(self) -> None:
        """The parameters both methods share: ``n_iters``, ``clip_norm``, ``smoothness``,
        ``record_every`` and the privacy target."""
        check_int("n_iters", self.n_iters, low=1)
        check_clip(self.clip_norm)
        if self.smoothness is not None:
            check_positive("smoothness", self.smoothness)
        check_int("record_every", self.record_every, low=1)
        self._check_target()

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """One scale, ``sigma`` (the per-coordinate std of the noise on every full gradient,
        sensitivity ``2 clip_norm / n``), with the guarantee and ledger of
        :func:`gaussian_privacy`."""
        sigma, _, guarantee, ledger = gaussian_privacy(
            self._eps, self._delta, self.noise_std, n, float(self.clip_norm),
            int(self.n_iters), self._label, self._basis_alg)
        if sigma == 0.0:
            return NoisePlan("none", {"sigma": 0.0}, guarantee, ledger)
        return NoisePlan("accountant", {"sigma": sigma}, guarantee, ledger,
                         {"sigma": 2.0 * float(self.clip_norm) / n})

    @PlanMethod
    def noise_std_for(self, n: int) -> float:
        """Per-coordinate std of the noise added to every full gradient (the plan's
        ``sigma``)."""
        return self.plan_for(n).scales["sigma"]


@privacy_target_parameters
class DPGD(FullGradientGaussian):
    """DP-GD (Algorithm 4, Wang, Ye & Xu 2017).

    The noise plan (:meth:`plan_for`; calibration ``"accountant"``: exact GDP composition,
    re-accounted by PLD) has one scale, ``sigma``, the per-coordinate std of the noise on
    every full gradient (sensitivity ``2 clip_norm / n``).

    Parameters
    ----------
    n_iters : int, default 100
        Number of gradient steps ``T`` >= 1.
    step_size : float or None, default None
        Step ``eta`` > 0; None means ``1/L`` (Theorems 6.2/6.3) with ``L = smoothness``.
    output : {"last", "random"}, default "last"
        ``"last"``: the last iterate (Section 6.1); ``"random"``: ``x_m`` with ``m`` uniform in
        ``{0, ..., T-1}``, drawn per replication (Section 6.2).
    clip_norm : float, default 1.0
        Bound ``G`` > 0 enforced on every per-sample gradient (l_2).
    reg : {None, "l2", "l1"}, default None
        Optional regularizer ``r``, applied by its prox.
    reg_strength : float, default 0.0
        Its strength, >= 0.
    smoothness : float or None, default None
        ``L`` > 0 of ``f``; None means ``loss.smoothness(2, x_bound=clip_norm)`` plus
        ``reg_strength`` for ``"l2"`` (only the default step size uses it).
    noise_std : float or None, default None
        Per-step noise std instead of calibrating; the guarantee is then re-accounted.
    theta0 : array-like or None, default None
        Initial point ``(d,)`` or ``(R, d)``; None means zeros.
    record_every : int, default 1
        Keep every k-th iterate (k >= 1) in the history (plus the first and the last).
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3, n_iters=20)
    _test_problem = "logistic"

    _label = "DP-GD"
    _basis_alg = "Algorithm 4 / Theorem 6.1"

    def __init__(self, epsilon: float, delta: float | None, *, n_iters: int = 100,
                 step_size: float | None = None, output: str = "last", clip_norm: float = 1.0,
                 reg: str | None = None, reg_strength: float = 0.0,
                 smoothness: float | None = None, noise_std: float | None = None,
                 theta0: ArrayLike | None = None, record_every: int = 1) -> None:
        self._store_params(locals())
        if step_size is not None:
            check_positive("step_size", step_size)
        check_choice("output", output, {"last", "random"})
        self._reg = Regularizer(reg, reg_strength)
        self._check_schedule()

    def _eta(self, loss) -> float:
        if self.step_size is not None:
            return float(self.step_size)
        L = self.smoothness
        if L is None:
            try:
                L = float(loss.smoothness(2.0, self.clip_norm)) + self._reg.strong_convexity
            except (AttributeError, NotImplementedError, ValueError) as exc:
                raise ValueError(f"DP-GD needs step_size (or smoothness) for the loss {loss!r}: "
                                 f"its smoothness is not available ({exc})") from None
        return 1.0 / L

    def fit(self, loss: LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        loss, rng, data = start_fit(loss, X, y, rng, n_reps, loss_names=False, min_n=2)
        eta = self._eta(loss)
        sigma = self.noise_std_for(data.n)
        R, n, d, T = data.n_reps, data.n, data.d, int(self.n_iters)
        oracle = GradientOracle(loss, data, float(self.clip_norm))
        reg = self._reg
        x = check_theta0(self.theta0, R, d)
        pick = rng.integers(0, T, size=R) if self.output == "random" else None
        chosen = x.copy() if pick is not None else None
        n_clipped = np.zeros(R, dtype=np.int64)
        history = IterateHistory(x)
        for t in range(1, T + 1):
            if pick is not None:  # x_{t-1} is the candidate for m = t - 1
                hit = pick == t - 1
                chosen[hit] = x[hit]
            g, nc = oracle.mean(x)
            n_clipped += nc
            if sigma > 0:
                g = g + gaussian_noise(rng, sigma, (R, d))
            x = reg.prox(x - eta * g, eta)
            if t % self.record_every == 0 or t == T:
                history.record(x, t)
        steps = history.steps()
        return self._result(
            n, d,
            theta=x if pick is None else chosen,
            history=history.iterates(),
            history_steps=steps,
            n_clipped=n_clipped,
            n_gradient_evals=n * T,
            extra={"grad_evals": n * steps, "wall_time": history.wall_times(),
                   "noise_std": sigma, "step_size": eta, "output_index": pick,
                   "last_iterate": x},
        )

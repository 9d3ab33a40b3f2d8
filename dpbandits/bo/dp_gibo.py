"""DP-GIBO: differentially private gradient-informative Bayesian optimization
(Algorithm 1 of Sopa et al. 2025, "Scalable Differentially Private Bayesian Optimization").

Per iteration ``t = 0..T-1``, at the current iterate ``theta_t``:

1. (lines 4-5) choose new evaluation points by the data-independent acquisition of
   :mod:`dpbandits.bo.acquisition` — adaptive batch size (smallest greedy batch whose full
   posterior gradient trace is ``<= tolerance``; the reading of line 4 the proofs need) or a
   fixed ``batch_size`` (what the paper's experiments use);
2. evaluate the ``n`` per-individual losses at those points (line 5) and add them to ``D``;
3. (line 7) every individual's posterior-mean gradient
   ``g_i = grad k(theta_t, D) (K + sigma^2 I)^{-1} y_i`` — one matrix product for all ``i``;
4. (line 8) clip each ``g_i`` to l2 norm ``B`` (counted) and average;
5. (line 9) add ``N(0, (2 B sqrt(T) / (n mu))^2 I)`` and step (plain or AdaGrad), then
   project onto ``bounds`` if given (the paper does not say; projection is post-processing).

Privacy (Theorem 3.1): the released trajectory ``theta_1..theta_T`` is ``mu``-GDP for the
replace-one relation on the ``n`` validation individuals, whatever the objective: the design
depends only on released iterates, the kernel and public randomness, and each step is a
Gaussian mechanism with sensitivity ``2B/n``. ``privacy`` reports GDP ``mu`` with its
``(epsilon, delta)`` conversion at the stated ``delta``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_int, check_nonnegative, check_real
from dpbandits.bo._common import (
    GDPGradientMethod,
    Stepper,
    fit_inputs,
    loss_scales,
    private_gradient,
    rep_starts,
    unscale_rows,
)
from dpbandits.bo.acquisition import GradientDesigner
from dpbandits.bo.gp import GPDesign
from dpbandits.bo.kernels import RBF, Kernel
from dpbandits.bo.objectives import ObjectiveLike
from dpbandits.optim.base import BatchResult

__all__ = ["DPGIBO", "GIBO"]

class DPGIBO(GDPGradientMethod):
    """Algorithm 1 of Sopa et al. 2025.

    Parameters
    ----------
    mu : float
        GDP parameter (> 0); ``inf`` runs without noise (non-private GIBO with clipping).
    n_iters : int
        Number of iterations ``T`` (fixed in advance: the noise scale uses ``sqrt(T)``).
    clip_bound : float
        Per-individual clipping constant ``B`` (> 0; ``inf`` only with ``mu = inf``).
    kernel : Kernel, optional
        Surrogate kernel; default ``RBF(lengthscale=1)`` as in Examples 4.1/4.2.
    noise_var : float
        Modelled evaluation noise variance ``sigma^2`` (line 1 input).
    tolerance : float, optional
        Bias tolerance ``epsilon`` of line 4 (adaptive batch size). Exactly one of
        ``tolerance``/``batch_size`` must be given.
    batch_size : int, optional
        Fixed number of new points per iteration (as in Appendices E.1-E.4).
    max_batch : int, optional
        Cap on the adaptive batch (default ``4 (d + 1)``); iterations that hit it are
        recorded in ``extra["tolerance_met"]`` and reported with a ``RuntimeWarning``.
    min_batch : int
        Least number of new points per iteration in adaptive mode (Sopa et al. 2025: ``b >= 1``).
    step_size : float
        ``eta``.
    step_rule : {"sgd", "adagrad"}
        Plain step (the theory) or AdaGrad on the privatized gradient (the experiments;
        ``eta = 0.3`` in E.1, ``0.8`` in E.2). AdaGrad uses ``eps = adagrad_eps`` and a zero
        initial accumulator (PyTorch's defaults; the paper gives no constants).
    theta0 : None, "uniform" or array
        Data-independent start: zeros, uniform in ``bounds``, one point, or ``(R, d)``.
    bounds : array (d, 2), optional
        Box domain ``Theta``: iterates are projected onto it and design points stay in it.
    designer : GradientDesigner, optional
        Acquisition optimizer settings (candidates, restarts, search radius).
    jitter : float
        Relative diagonal jitter of the GP (data-independent).
    prior_mean : float or "estimated"
        Constant GP prior mean subtracted from every individual's losses: a number fixed in
        advance (Sopa et al. 2025 use 0), or ``"estimated"`` — each individual's own constant
        mean, estimated by generalized least squares from that individual's losses at ``D``
        (``c_i = 1' Kt^{-1} y_i / 1' Kt^{-1} 1``, the posterior mean under a flat prior on a
        constant trend). With a zero prior mean, losses far from 0 bias the surrogate
        gradient towards the evaluated points (the posterior mean decays to 0 away from
        them), which AdaGrad turns into a steady drift; ``"estimated"`` removes that bias
        (a constant loss gives exactly zero surrogate gradient). ``g_i`` still depends only
        on individual ``i``'s losses and is clipped after, so the sensitivity ``2B/n`` and
        Theorem 3.1 are unchanged. Not part of Sopa et al. 2025; the acquisition still uses the
        zero-mean gradient trace.
    delta : float
        ``delta`` at which the GDP guarantee is converted to ``(epsilon, delta)``.
    calibration : ``"theorem"``
        Theorem 3.1's noise (aliases ``"paper"``, ``"zcdp"``); the only calibration (the GDP
        composition of Gaussian mechanisms is exact). The noise plan (``plan``) has one
        scale, ``multiplier = sqrt(T) / mu``.
    record_diagnostics : bool
        Also store, per iteration, the clipped mean gradient before noise, the noise and
        (if the objective has gradients) the true gradient, in ``extra`` under keys starting
        with ``nonprivate_``. These are NOT private; for analysis only.
    """

    _basis = "Theorem 3.1 of Sopa et al. 2025"

    def __init__(self, *, mu: float, n_iters: int, clip_bound: float,
                 kernel: Kernel | None = None, noise_var: float = 0.0,
                 tolerance: float | None = None, batch_size: int | None = None,
                 max_batch: int | None = None, min_batch: int = 1, step_size: float = 0.1,
                 step_rule: str = "sgd", adagrad_eps: float = 1e-10,
                 theta0: ArrayLike | None = None, bounds: ArrayLike | None = None,
                 designer: GradientDesigner | None = None, jitter: float = 1e-10,
                 prior_mean: float | str = 0.0, delta: float = 1e-5,
                 calibration: str = "theorem", record_diagnostics: bool = False) -> None:
        self.kernel = kernel
        self.noise_var = noise_var
        self.tolerance = tolerance
        self.batch_size = batch_size
        self.max_batch = max_batch
        self.min_batch = min_batch
        self.designer = designer
        self.jitter = jitter
        self.prior_mean = prior_mean
        super().__init__(mu=mu, n_iters=n_iters, clip_bound=clip_bound, step_size=step_size,
                         step_rule=step_rule, adagrad_eps=adagrad_eps, theta0=theta0,
                         bounds=bounds, delta=delta, calibration=calibration,
                         record_diagnostics=record_diagnostics)

    # ---------------------------------------------------------------- checks
    def _validate(self):
        super()._validate()
        if self.kernel is not None and not isinstance(self.kernel, Kernel):
            raise TypeError(f"kernel must be a dpbandits.bo.kernels.Kernel, got "
                            f"{type(self.kernel).__name__}")
        self._kernel = self.kernel if self.kernel is not None else RBF(1.0)
        check_nonnegative("noise_var", self.noise_var)
        if (self.tolerance is None) == (self.batch_size is None):
            raise ValueError("give exactly one of tolerance (adaptive batch size, line 4 of "
                             "Algorithm 1) or batch_size (fixed batch size), got "
                             f"tolerance={self.tolerance!r}, batch_size={self.batch_size!r}")
        if self.tolerance is not None:
            check_nonnegative("tolerance", self.tolerance)
        if self.batch_size is not None:
            check_int("batch_size", self.batch_size, low=1)
        check_int("min_batch", self.min_batch, low=0)
        if self.max_batch is not None:
            check_int("max_batch", self.max_batch, low=max(1, self.min_batch))
        if self.designer is not None and not isinstance(self.designer, GradientDesigner):
            raise TypeError(f"designer must be a GradientDesigner, got "
                            f"{type(self.designer).__name__}")
        self._designer = self.designer if self.designer is not None else GradientDesigner()
        check_nonnegative("jitter", self.jitter)
        if isinstance(self.prior_mean, str):
            if self.prior_mean != "estimated":
                raise ValueError(f"prior_mean must be a real number or 'estimated', got "
                                 f"{self.prior_mean!r}")
        else:
            check_real("prior_mean", self.prior_mean)

    # ------------------------------------------------------------------- fit
    def fit(self, objective: ObjectiveLike, rng: np.random.Generator, n_reps: int = 1
            ) -> BatchResult:
        """Run ``n_reps`` independent replications on ``objective``.

        ``objective``: an :class:`~dpbandits.bo.objectives.Objective` or anything exposing
        ``per_individual_losses(theta) -> (n,)`` with ``dim``/``n_individuals`` attributes.
        Replication ``r`` uses the ``r``-th child of ``rng.spawn`` (so it does not depend on
        ``n_reps``), split into independent streams for the start, the design and the noise.
        """
        self._validate()  # attributes may have been changed since __init__
        obj, rng, R = fit_inputs(objective, rng, n_reps, self._bounds)
        d, n = obj.dim, obj.n_individuals
        T = self._T
        max_batch = self.max_batch if self.max_batch is not None else 4 * (d + 1)
        sigma = self.noise_std(n)  # from the plan
        children = [c.spawn(3) for c in rng.spawn(R)]
        starts = rep_starts(self.theta0, self._bounds, d, R, [ch[0] for ch in children])
        hist = np.empty((R, T + 1, d))
        batch_sizes = np.zeros((R, T), dtype=np.int64)
        traces = np.zeros((R, T))
        traces_before = np.zeros((R, T))
        met = np.ones((R, T), dtype=bool)
        n_clip = np.zeros((R, T), dtype=np.int64)
        eval_points = []
        diag = {k: np.zeros((R, T, d)) for k in ("clean", "noise", "true")}
        for r in range(R):
            _, design_rng, noise_rng = children[r]
            theta = starts[r].copy()
            hist[r, 0] = theta
            gp = GPDesign(self._kernel, noise_var=self.noise_var, jitter=self.jitter)
            Y_blocks = []
            step = Stepper(self.step_rule, self.step_size, self.adagrad_eps, self._bounds)
            for t in range(T):
                sel = self._designer.select(
                    gp, theta, design_rng, tolerance=self.tolerance, batch_size=self.batch_size,
                    min_batch=self.min_batch, max_batch=max_batch, bounds=self._bounds)
                if sel.points.shape[0]:
                    Y_blocks.append(obj.losses(sel.points))
                if Y_blocks:
                    Y = np.concatenate(Y_blocks, axis=0)  # (m, n)
                    Q = gp.solve(gp.grad_cross(theta))  # (m, d) = Kt^{-1} grad k(D, theta)
                    # g_i is linear in user i's losses: from losses scaled into [-1, 1]
                    # where they are huge, so no user's finite losses overflow it
                    s = loss_scales(Y)
                    Ys = Y / s
                    per_ind = Ys.T @ Q  # (n, d): g_i of line 7 (before the prior mean)
                    if isinstance(self.prior_mean, str):  # per-individual GLS constant
                        w = gp.solve(np.ones(gp.m))
                        c = (w @ Ys) / w.sum()  # (n,)
                    else:
                        c = np.full(n, float(self.prior_mean)) / s
                    per_ind -= c[:, None] * Q.sum(axis=0)[None, :]
                    per_ind = unscale_rows(per_ind, s)
                else:  # no evaluations yet (only possible with min_batch=0): prior mean
                    per_ind = np.zeros((n, d))
                noisy, clean, was, noise = private_gradient(per_ind, self._B, sigma, noise_rng)
                theta = step(theta, noisy)
                hist[r, t + 1] = theta
                batch_sizes[r, t] = sel.points.shape[0]
                traces[r, t] = sel.trace_after
                traces_before[r, t] = sel.trace_before
                met[r, t] = sel.tolerance_met
                n_clip[r, t] = int(np.count_nonzero(was))
                if self.record_diagnostics:
                    diag["clean"][r, t] = clean
                    diag["noise"][r, t] = noise
                    if obj.has_gradients:
                        diag["true"][r, t] = obj.gradient(hist[r, t])
            eval_points.append(gp.X.copy())
        if not met.all():
            warnings.warn(
                f"DP-GIBO: the gradient-trace tolerance {self.tolerance} was not reached within "
                f"max_batch={max_batch} points in {int((~met).sum())} of {met.size} iterations "
                "(see extra['tolerance_met']); privacy is unaffected, the bias bound is not "
                "guaranteed there", RuntimeWarning, stacklevel=2)
        extra = {
            "batch_sizes": batch_sizes,
            "n_evals": batch_sizes.sum(axis=1),
            "gradient_trace": traces,
            "gradient_trace_before": traces_before,
            "tolerance_met": met,
            "n_clipped_per_iter": n_clip,
            "noise_std": sigma,
            "eval_points": eval_points,
        }
        if self.record_diagnostics:
            extra["nonprivate_clipped_mean_gradient"] = diag["clean"]
            extra["nonprivate_noise"] = diag["noise"]
            if obj.has_gradients:
                extra["nonprivate_true_gradient"] = diag["true"]
        return BatchResult(theta=hist[:, -1].copy(), history=hist,
                           history_steps=np.arange(T + 1), privacy=self.privacy,
                           n_clipped=n_clip.sum(axis=1), n_gradient_evals=T * n, extra=extra)


class GIBO(DPGIBO):
    """Non-private GIBO (``mu = inf``, no clipping unless ``clip_bound`` is given): the
    ``mu = inf`` reference of Sopa et al. 2025's experiments. Same acquisition and updates."""

    def __init__(self, *, n_iters: int, clip_bound: float = math.inf, **kwargs: Any) -> None:
        if "mu" in kwargs:
            raise TypeError("GIBO is non-private; use DPGIBO to set mu")
        super().__init__(mu=math.inf, n_iters=n_iters, clip_bound=clip_bound, **kwargs)

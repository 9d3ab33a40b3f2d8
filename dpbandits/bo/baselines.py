"""Baselines for DP-GIBO (Sopa et al. 2025): DP-GD with exact gradients, private random search,
non-private GIBO (:class:`dpbandits.bo.dp_gibo.GIBO`) and GP-UCB global BO.

All share DP-GIBO's interface: hyper-parameters in ``__init__``,
``fit(objective, rng, n_reps=1) -> BatchResult``, ``privacy`` and ``ledger``.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri

from dpbandits._validation import (
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_rng,
)
from dpbandits.bo._common import (
    CALIBRATIONS,
    GDPGradientMethod,
    RevalidatedPlanned,
    Stepper,
    check_bounds,
    check_gdp_delta,
    check_mu,
    fit_inputs,
    gdp_guarantee,
    gdp_ledger,
    planned_scale,
    private_gradient,
    rep_starts,
)
from dpbandits.bo.dp_gibo import GIBO
from dpbandits.bo.gp import ExactGP
from dpbandits.bo.kernels import RBF, Kernel
from dpbandits.bo.objectives import ObjectiveLike
from dpbandits.optim.base import BatchResult
from dpbandits.privacy.accounting import pure_dp_event
from dpbandits.privacy.mechanisms import exponential_mechanism, gaussian_report_noisy_argmin
from dpbandits.privacy.plan import NoisePlan, Planned, check_calibration

__all__ = ["ExactGradientDPGD", "GIBO", "PrivateRandomSearch", "GPUCB", "pure_dp_to_gdp_mu",
           "gdp_mu_to_pure_dp"]


# ------------------------------------------------------------------------------ DP-GD
class ExactGradientDPGD(GDPGradientMethod):
    """Noisy gradient descent with exact per-individual gradients (Appendix E.4's DP-GD).

    Each of ``T`` steps clips every ``grad L(theta, x_i)`` to l2 norm ``B`` (counted),
    averages, adds ``N(0, (2 B sqrt(T) / (n mu))^2 I)`` and steps — DP-GIBO's release with
    the true gradient in place of the GP surrogate, hence the same ``mu``-GDP guarantee
    (Gaussian mechanism + composition, Dong, Roth & Su). Needs an objective with
    ``per_individual_gradients``.

    Parameters mirror :class:`~dpbandits.bo.dp_gibo.DPGIBO`: ``mu``, ``n_iters``,
    ``clip_bound``, ``step_size``, ``step_rule``, ``adagrad_eps``, ``theta0``, ``bounds``,
    ``delta``, ``calibration``, ``record_diagnostics``; the same noise plan.
    """

    _basis = ("Gaussian mechanism (sensitivity 2B/n) + GDP composition; as Theorem 3.1 of "
              "Sopa et al. 2025")

    def fit(self, objective: ObjectiveLike, rng: np.random.Generator, n_reps: int = 1
            ) -> BatchResult:
        self._validate()
        obj, rng, R = fit_inputs(objective, rng, n_reps, self._bounds)
        if not obj.has_gradients:
            raise TypeError(f"ExactGradientDPGD needs per-individual gradients; "
                            f"{type(obj).__name__} has none")
        d, n, T = obj.dim, obj.n_individuals, self._T
        sigma = self.noise_std(n)  # from the plan
        children = [c.spawn(2) for c in rng.spawn(R)]
        starts = rep_starts(self.theta0, self._bounds, d, R, [c[0] for c in children])
        hist = np.empty((R, T + 1, d))
        n_clip = np.zeros((R, T), dtype=np.int64)
        clean_hist = np.zeros((R, T, d))
        noise_hist = np.zeros((R, T, d))
        for r in range(R):
            theta = starts[r].copy()
            hist[r, 0] = theta
            step = Stepper(self.step_rule, self.step_size, self.adagrad_eps, self._bounds)
            for t in range(T):
                G = obj.per_individual_gradients(theta)
                noisy, clean, was, noise = private_gradient(G, self._B, sigma, children[r][1])
                theta = step(theta, noisy)
                hist[r, t + 1] = theta
                n_clip[r, t] = int(np.count_nonzero(was))
                clean_hist[r, t], noise_hist[r, t] = clean, noise
        extra = {"n_clipped_per_iter": n_clip, "noise_std": sigma}
        if self.record_diagnostics:
            extra["nonprivate_clipped_mean_gradient"] = clean_hist
            extra["nonprivate_noise"] = noise_hist
        return BatchResult(theta=hist[:, -1].copy(), history=hist,
                           history_steps=np.arange(T + 1), privacy=self.privacy,
                           n_clipped=n_clip.sum(axis=1), n_gradient_evals=T * n, extra=extra)


# ---------------------------------------------------------------- private random search
def pure_dp_to_gdp_mu(epsilon: float) -> float:
    """``epsilon``-DP implies ``mu``-GDP with ``mu = -2 Phi^{-1}(1 / (1 + e^epsilon))``.

    The trade-off curve of ``(epsilon, 0)``-DP is piecewise linear with its kink on the
    diagonal at ``alpha* = 1 / (1 + e^eps)``; the convex ``G_mu`` lies below it iff
    ``G_mu(alpha*) <= alpha*``, i.e. ``mu >= 2 Phi^{-1}(1 - alpha*)`` (Dong, Roth & Su 2022,
    trade-off functions; checked numerically in the tests).
    """
    eps = check_positive("epsilon", epsilon)
    return float(-2.0 * ndtri(1.0 / (1.0 + math.exp(eps))))


def gdp_mu_to_pure_dp(mu: float) -> float:
    """Inverse of :func:`pure_dp_to_gdp_mu`: ``epsilon = log(Phi(mu/2) / Phi(-mu/2))``."""
    mu = check_positive("mu", mu)
    return float(math.log(ndtr(mu / 2.0)) - math.log(ndtr(-mu / 2.0)))


class PrivateRandomSearch(RevalidatedPlanned):
    """Random search with a private final selection.

    ``n_candidates`` points are drawn uniformly from ``bounds`` (data-independent); at each,
    every individual's loss is clipped to ``loss_bounds = (lo, hi)`` (counted), so the mean
    loss of a candidate has replace-one sensitivity ``Delta = (hi - lo) / n``. The released
    output is one candidate, chosen by

    * ``selection="exponential"`` (default): the exponential mechanism (Gumbel-max)
      ``P(j) ~ exp(-eps * mean_loss_j / (2 Delta))``, ``eps``-DP (McSherry & Talwar) with
      ``eps = gdp_mu_to_pure_dp(mu)``, hence ``mu``-GDP (:func:`pure_dp_to_gdp_mu`);
    * ``selection="gaussian"``: report-noisy-min with ``N(0, (Delta sqrt(N) / mu)^2)`` on each
      of the ``N`` mean losses — a Gaussian mechanism on the whole score vector (l2
      sensitivity ``Delta sqrt(N)``), ``mu``-GDP; argmin is post-processing.

    Only the selected point is released; ``history`` holds it once (no trajectory).
    ``calibration``: ``"theorem"`` only (aliases ``"paper"``, ``"zcdp"``). The noise plan
    (``plan``) has one scale, ``multiplier``: the temperature (exponential) or the noise std
    (Gaussian) over the score sensitivity ``Delta`` -- ``2 / epsilon`` or ``sqrt(N) / mu``.
    """

    def __init__(self, *, mu: float, n_candidates: int, bounds: ArrayLike,
                 loss_bounds: ArrayLike, selection: str = "exponential",
                 delta: float = 1e-5, calibration: str = "theorem") -> None:
        self.mu = mu
        self.n_candidates = n_candidates
        self.bounds = bounds
        self.loss_bounds = loss_bounds
        self.selection = selection
        self.delta = delta
        self.calibration = calibration
        self._validate()

    def _validate(self):
        self._mu = check_mu(self.mu)
        self._N = check_int("n_candidates", self.n_candidates, low=1)
        self._bounds = check_bounds(self.bounds)
        if self._bounds is None:
            raise ValueError("bounds must be given: random search samples uniformly from them")
        lb = check_array("loss_bounds", self.loss_bounds, shape=(2,))
        if not lb[0] < lb[1]:
            raise ValueError(f"loss_bounds must be (lo, hi) with lo < hi, got "
                             f"{self.loss_bounds!r}")
        self._lb = lb
        check_choice("selection", self.selection, {"exponential", "gaussian"})
        self._delta = check_gdp_delta(self.delta)
        check_calibration(self.calibration, CALIBRATIONS, "PrivateRandomSearch")

    def _plan_inputs(self) -> tuple:
        self._validate()
        return self._mu, self._N, self.selection, self._delta

    def _multiplier(self) -> float:
        """The calibrated temperature or noise std over the sensitivity ``Delta``."""
        if self.selection == "exponential":
            return 2.0 / gdp_mu_to_pure_dp(self._mu)
        return math.sqrt(self._N) / self._mu

    def _make_plan(self) -> NoisePlan:
        """``mu``-GDP for the selected point: the exponential mechanism (``eps``-DP, ``eps =
        gdp_mu_to_pure_dp(mu)``) or one Gaussian mechanism on the score vector."""
        if math.isinf(self._mu):
            return NoisePlan.non_private("mu = inf: exact argmin", {"multiplier": 0.0},
                                         events=dp_accounting.NonPrivateDpEvent())
        if self.selection == "exponential":
            basis = "exponential mechanism eps-DP => mu-GDP (Dong, Roth & Su)"
            ledger = pure_dp_event(gdp_mu_to_pure_dp(self._mu))
        else:
            basis = "Gaussian report-noisy-min, l2 sensitivity Delta sqrt(N)"
            ledger = gdp_ledger(self._mu, 1)
        return NoisePlan("theorem", {"multiplier": self._multiplier()},
                         gdp_guarantee(self._mu, self._delta, basis), ledger)

    def select(self, per_individual_losses: ArrayLike, rng: np.random.Generator
               ) -> tuple[int, int]:
        """Private choice among candidates given their ``(N, n)`` per-individual losses.

        Returns ``(index, n_clipped)``. Exposed so that experiments can score the prefixes
        of one candidate stream (each call is a separate ``mu``-GDP release).
        """
        self._validate()
        rng = check_rng(rng)
        Lm = check_array("per_individual_losses", per_individual_losses, ndim=2)
        N, n = Lm.shape
        lo, hi = self._lb
        n_clipped = int(np.count_nonzero((Lm < lo) | (Lm > hi)))
        scores = np.clip(Lm, lo, hi).mean(axis=1)
        plan = self.plan
        if math.isinf(self._mu):
            return int(np.argmin(scores)), n_clipped
        sens = (hi - lo) / n
        own = self._multiplier()
        if self.selection == "exponential":
            eps = gdp_mu_to_pure_dp(self._mu)
            temperature = planned_scale(2.0 * sens / eps, plan, own)
            idx = exponential_mechanism(rng, -scores[None, :], temperature)[0]
        else:
            std = planned_scale(sens * math.sqrt(N) / self._mu, plan, own)
            idx = gaussian_report_noisy_argmin(rng, scores[None, :], std)[0]
        return int(idx), n_clipped

    def fit(self, objective: ObjectiveLike, rng: np.random.Generator, n_reps: int = 1
            ) -> BatchResult:
        obj, rng, R = fit_inputs(objective, rng, n_reps, self._bounds)
        d = obj.dim
        lo, hi = self._bounds[:, 0], self._bounds[:, 1]
        theta = np.empty((R, d))
        n_clip = np.zeros(R, dtype=np.int64)
        cands = []
        for r, child in enumerate(rng.spawn(R)):
            cand_rng, sel_rng = child.spawn(2)
            C = lo + (hi - lo) * cand_rng.random((self._N, d))
            idx, n_clip[r] = self.select(obj.losses(C), sel_rng)
            theta[r] = C[idx]
            cands.append(C)
        return BatchResult(theta=theta, history=theta[:, None, :].copy(),
                           history_steps=np.array([self._N]), privacy=self.privacy,
                           n_clipped=n_clip, n_gradient_evals=0,
                           extra={"n_evals": np.full(R, self._N), "candidates": cands})


# ------------------------------------------------------------------------------ GP-UCB
class GPUCB(Planned):
    """Global Bayesian optimization with GP-UCB (Srinivas et al. 2010), **non-private**.

    Minimizes the mean loss over the box ``bounds``: ``n_init`` uniform points (default
    ``min(5, n_evals)``), then each
    evaluation at ``argmin_x m(x) - sqrt(beta_t) s(x)`` of a GP fit to the standardized
    observed mean losses (fixed kernel, default ``RBF(1)`` like DP-GIBO's surrogate). The
    acquisition is minimized over ``n_candidates`` uniform points plus Gaussian perturbations
    of the incumbent, the best refined by L-BFGS-B. ``beta_t = 2 log(d t^2 pi^2 / (6 beta_delta))``
    (Srinivas et al.'s finite-set schedule with ``|D|`` replaced by ``d``, a common heuristic)
    unless ``beta`` is a fixed number.

    Sopa et al. 2025 compare with the private UCB-BO of Kusner et al. (2015) only through Figure 1
    and a rate; its private release is not reproduced here, so this baseline states
    ``privacy = non-private``. ``history`` is the incumbent (best observed point) after every
    evaluation.
    """

    def __init__(self, *, n_evals: int, bounds: ArrayLike, kernel: Kernel | None = None,
                 n_init: int | None = None, noise_var: float = 1e-4,
                 beta: float | None = None, beta_delta: float = 0.1,
                 n_candidates: int = 1000, maxiter: int = 50) -> None:
        self.n_evals = n_evals
        self.bounds = bounds
        self.kernel = kernel
        self.n_init = n_init
        self.noise_var = noise_var
        self.beta = beta
        self.beta_delta = beta_delta
        self.n_candidates = n_candidates
        self.maxiter = maxiter
        self._N = check_int("n_evals", n_evals, low=1)
        self._bounds = check_bounds(bounds)
        if self._bounds is None:
            raise ValueError("bounds must be given for global BO")
        if kernel is not None and not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel, got {type(kernel).__name__}")
        self._kernel = kernel if kernel is not None else RBF(1.0)
        self._n_init = (min(5, self._N) if n_init is None
                        else check_int("n_init", n_init, low=1, high=self._N))
        check_nonnegative("noise_var", noise_var)
        if beta is not None:
            check_positive("beta", beta)
        check_positive("beta_delta", beta_delta)
        check_int("n_candidates", n_candidates, low=1)
        check_int("maxiter", maxiter, low=1)

    def _make_plan(self) -> NoisePlan:
        """Non-private: no noise, calibration ``"none"``."""
        return NoisePlan.non_private("GP-UCB on the raw validation loss",
                                     events=dp_accounting.NonPrivateDpEvent())

    def _beta(self, t: int, d: int) -> float:
        if self.beta is not None:
            return float(self.beta)
        return 2.0 * math.log(d * t * t * math.pi**2 / (6.0 * self.beta_delta))

    def _lcb_and_grad(self, x, gp, sb):
        x2 = x[None, :]
        k = gp.kernel
        kx = k._k(gp.X, x2)[:, 0]
        dk = k._g2(gp.X, x2)[:, 0, :]  # (m, d): d k(D_j, x) / dx
        mean = float(kx @ gp.alpha[:, 0])
        dmean = dk.T @ gp.alpha[:, 0]
        u = gp.solve(kx)
        var = float(k._diag(x2)[0]) - float(kx @ u)
        dvar = k._gdiag(x2)[0] - 2.0 * (dk.T @ u)
        sd = math.sqrt(max(var, 1e-12))
        return mean - sb * sd, dmean - sb * dvar / (2.0 * sd)

    def fit(self, objective: ObjectiveLike, rng: np.random.Generator, n_reps: int = 1
            ) -> BatchResult:
        obj, rng, R = fit_inputs(objective, rng, n_reps, self._bounds)
        d = obj.dim
        lo, hi = self._bounds[:, 0], self._bounds[:, 1]
        box = list(zip(lo, hi, strict=True))
        hist = np.empty((R, self._N, d))
        queries = np.empty((R, self._N, d))
        observed = np.empty((R, self._N))
        for r, child in enumerate(rng.spawn(R)):
            X = lo + (hi - lo) * child.random((self._n_init, d))
            y = obj.losses(X).mean(axis=1)
            gp = ExactGP(self._kernel, noise_var=self.noise_var)
            gp.fit(X, np.zeros(self._n_init))
            while X.shape[0] < self._N:
                t = X.shape[0] + 1
                sd_y = float(np.std(y)) or 1.0
                gp.set_targets((y - y.mean()) / sd_y)
                sb = math.sqrt(self._beta(t, d))
                best = X[np.argmin(y)]
                C = np.vstack([
                    lo + (hi - lo) * child.random((self.n_candidates, d)),
                    np.clip(best + 0.1 * (hi - lo) * child.standard_normal((self.n_candidates,
                                                                              d)), lo, hi)])
                acq = gp.mean(C) - sb * np.sqrt(np.maximum(gp.var(C), 1e-12))
                x0 = C[np.argmin(acq)]
                res = minimize(self._lcb_and_grad, x0, args=(gp, sb), jac=True,
                               method="L-BFGS-B", bounds=box, options={"maxiter": self.maxiter})
                xn = np.clip(res.x, lo, hi) if res.fun < acq.min() else x0
                yn = obj.losses(xn[None, :]).mean(axis=1)
                X = np.vstack([X, xn[None, :]])
                y = np.concatenate([y, yn])
                gp.add(xn[None, :], np.zeros(1))
            queries[r], observed[r] = X, y
            cummin = np.minimum.accumulate(y)
            run_best = np.maximum.accumulate(np.where(y == cummin, np.arange(self._N), 0))
            hist[r] = X[run_best]
        return BatchResult(theta=hist[:, -1].copy(), history=hist,
                           history_steps=np.arange(1, self._N + 1), privacy=self.privacy,
                           n_clipped=np.zeros(R, dtype=np.int64), n_gradient_evals=0,
                           extra={"queries": queries, "observed_mean_loss": observed,
                                  "n_evals": np.full(R, self._N)})

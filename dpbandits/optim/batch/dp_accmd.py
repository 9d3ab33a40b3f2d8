"""DP-AccMD (Wang, Ye & Xu 2017, Algorithm 3): private accelerated mirror descent (linear coupling)
over a centrally symmetric constraint set ``C`` — here an l_1 ball (the paper's example) or
an l_2 ball of radius ``r``.

    alpha_{k+1} = (k+2)/(4 L_C),   r_k = 1/(2 alpha_{k+1} L_C) = 2/(k+2)
    x_{k+1} = r_k z_k + (1 - r_k) y_k
    g~      = grad F(x_{k+1}) + b_{k+1},                    b ~ N(0, sigma^2 I)
    y_{k+1} = argmin_{y in C} (L_C/2) ||y - x_{k+1}||_C^2 + <g~, y - x_{k+1}>
    z_{k+1} = argmin_{z in C} B_w(z, z_k) + alpha_{k+1} <g~, z - z_k>
    return y_T

``||.||_C`` is the Minkowski norm of ``C`` (``||v||_1 / r`` or ``||v||_2 / r``) and
``L_C = L ||C||_2^2`` (``||C||_2 = 2r``, the l_2 diameter; Lemma 5.1), with ``L`` the l_2
smoothness of ``f``.

**The private reading (deviation from the printed algorithm).** As printed, the y-step uses
the *noise-free* gradient ``grad F(x_{k+1})`` and only the z-step adds ``b_{k+1}``; since
``y_T`` is the output, that version is not covered by the privacy proof (App. B.3 accounts one
Gaussian query per iteration). Here the *same* noisy gradient ``g~`` is used in both steps, so
everything released is a post-processing of the ``T`` Gaussian queries the proof accounts
for; the paper's utility proof does not cover this variant.

Subproblems (the paper names neither ``w`` nor solvers):

* ``geometry="l2"``: ``w(z) = ||z||_2^2 / (2 r^2)`` (1-strongly convex w.r.t. ``||.||_C``);
  y-step ``Pi_C(x - g~/(4L))``, z-step ``Pi_C(z_k - alpha r^2 g~)``.
* ``geometry="l1"``: ``w`` is the negative entropy of the lifted point ``u`` in the
  ``2d``-simplex with ``z = r (u^+ - u^-)`` (1-strongly convex w.r.t. ``||u||_1 >= ||z||_C``),
  so the z-step is the exponentiated-gradient update ``u <- u exp(-alpha r [g~, -g~])``
  normalised, and ``B_w(x*, 0) <= ln(2d)``. The y-step
  ``argmin_{||y||_1 <= r} 2L ||y - x||_1^2 + <g~, y - x>`` is solved by
  :func:`l1_squared_prox` (Lagrangian on the ball constraint, exact greedy solution for a
  fixed multiplier, bisection on the multiplier).

Privacy (Theorem 5.3): ``T`` Gaussian queries of the clipped mean gradient (sensitivity
``2G/n``), calibrated exactly by Gaussian DP as in DP-GD (no range restriction on epsilon).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._docs import privacy_target_parameters
from dpbandits._validation import check_array, check_choice
from dpbandits.geometry import project_l1_ball, project_l2_ball
from dpbandits.losses import LossLike
from dpbandits.optim.base import BatchResult, IterateHistory, check_scale
from dpbandits.optim.batch.data import start_fit
from dpbandits.optim.batch.dp_gd import FullGradientGaussian
from dpbandits.optim.batch.oracle import GradientOracle
from dpbandits.privacy.mechanisms import gaussian_noise

__all__ = ["DPAccMD", "l1_squared_prox"]

_BISECT = 50


def _greedy_l1(x, g, beta, mu):
    """Minimiser over ``u`` of ``(beta/2) ||u||_1^2 + <g, u> + mu ||x + u||_1`` (rows).

    Each coordinate moving in direction ``s`` has at most two linear pieces (toward 0 of
    length ``|x_i|`` when ``s x_i < 0``, then away), with gains ``mu - s g_i`` and
    ``-s g_i - mu``; the per-coordinate costs are convex, so a fractional-knapsack greedy over
    pieces sorted by gain is exact for a given l_1 budget, and the optimal budget takes from
    piece ``k`` the amount ``clip(gain_k / beta - L_{k-1}, 0, len_k)`` (``L`` cumulative).
    """
    mu = mu[..., None]
    inf = np.inf
    ax = np.abs(x)
    # pieces: [A+, B+, A-, B-] each of shape (R, d)
    gains = np.concatenate([mu - g, -g - mu, mu + g, g - mu], axis=-1)
    lens = np.concatenate([np.where(x < 0, ax, 0.0), np.full_like(x, inf),
                           np.where(x > 0, ax, 0.0), np.full_like(x, inf)], axis=-1)
    lens = np.where(gains > 0, lens, 0.0)
    order = np.argsort(-gains, axis=-1, kind="stable")
    gs = np.take_along_axis(gains, order, axis=-1)
    ls = np.take_along_axis(lens, order, axis=-1)
    cum = np.cumsum(ls, axis=-1)
    prev = np.concatenate([np.zeros_like(cum[..., :1]), cum[..., :-1]], axis=-1)
    with np.errstate(invalid="ignore"):
        take = np.clip(gs / beta - prev, 0.0, ls)
    take = np.where(np.isfinite(take), take, 0.0)
    amounts = np.empty_like(take)
    np.put_along_axis(amounts, order, take, axis=-1)
    d = x.shape[-1]
    return (amounts[..., :d] + amounts[..., d:2 * d]) - (amounts[..., 2 * d:3 * d]
                                                         + amounts[..., 3 * d:])


def l1_squared_prox(x: ArrayLike, g: ArrayLike, beta: float, radius: float) -> np.ndarray:
    """``argmin_{||y||_1 <= radius} (beta/2) ||y - x||_1^2 + <g, y - x>`` for rows of
    ``x, g (R, d)`` with ``||x||_1 <= radius`` (the DP-AccMD y-step in l_1 geometry).

    The ball constraint is dualised with a multiplier ``mu >= 0`` (polyhedral, so strong
    duality holds): for fixed ``mu`` the minimiser is exact (:func:`_greedy_l1`), ``||x +
    u(mu)||_1`` is non-increasing in ``mu`` and ``mu = ||g||_inf`` is always feasible. ``mu``
    is found by bisection; where the constraint is active the two bracketing solutions are
    mixed so that ``||y||_1 = radius`` exactly (both minimise the Lagrangian at the optimal
    ``mu``, so the mixture satisfies the KKT conditions up to the bisection tolerance).
    """
    x = np.asarray(x, dtype=float)
    g = np.asarray(g, dtype=float)
    R = x.shape[0]
    u0 = _greedy_l1(x, g, beta, np.zeros(R))
    y0 = x + u0
    active = np.abs(y0).sum(axis=-1) > radius
    if not np.any(active):
        return y0
    xa, ga = x[active], g[active]
    lo = np.zeros(len(xa))
    hi = np.abs(ga).max(axis=-1) + 1e-300
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        feas = np.abs(xa + _greedy_l1(xa, ga, beta, mid)).sum(axis=-1) <= radius
        hi = np.where(feas, mid, hi)
        lo = np.where(feas, lo, mid)
    y_hi = xa + _greedy_l1(xa, ga, beta, hi)
    y_lo = xa + _greedy_l1(xa, ga, beta, lo)
    # mix: find theta in [0, 1] with ||theta y_lo + (1 - theta) y_hi||_1 = radius
    a, b = np.zeros(len(xa)), np.ones(len(xa))
    over_lo = np.abs(y_lo).sum(axis=-1) > radius
    for _ in range(_BISECT):
        mid = 0.5 * (a + b)
        feas = np.abs(mid[:, None] * y_lo + (1 - mid[:, None]) * y_hi).sum(axis=-1) <= radius
        a = np.where(feas, mid, a)
        b = np.where(feas, b, mid)
    theta = np.where(over_lo, a, 1.0)
    y = theta[:, None] * y_lo + (1 - theta[:, None]) * y_hi
    out = y0.copy()
    out[active] = project_l1_ball(y, radius)  # rounding guard: moves nothing inside the ball
    return out


@privacy_target_parameters
class DPAccMD(FullGradientGaussian):
    """DP-AccMD (Algorithm 3, Wang, Ye & Xu 2017), private reading (noisy gradient in both steps).

    The noise plan is DP-GD's (:class:`~dpbandits.optim.batch.dp_gd.DPGD`): one scale,
    ``sigma``.

    Parameters
    ----------
    n_iters : int, default 50
        Number of steps ``T`` >= 1.
    geometry : {"l1", "l2"}, default "l1"
        The constraint set ``C``: the l_1 or the l_2 ball.
    radius : float, default 1.0
        Radius ``r`` > 0 of the ball ``C``.
    clip_norm : float, default 1.0
        Bound ``G`` > 0 enforced on every per-sample gradient (l_2).
    smoothness : float or None, default None
        ``L`` > 0 of ``f`` in l_2; None means ``loss.smoothness(2, x_bound=clip_norm)``.
    noise_std : float or None, default None
        Per-step noise std instead of calibrating (the guarantee is then re-accounted).
    theta0 : array-like or None, default None
        ``x_0`` in ``C`` (``(d,)`` or ``(R, d)``); None means 0 (the centre).
    record_every : int, default 1
        Keep every k-th ``y_k`` (k >= 1) in the history.
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3, n_iters=20)
    _test_problem = "logistic"

    _label = "DP-AccMD"
    _basis_alg = "Algorithm 3 / Theorem 5.3 (private reading)"

    def __init__(self, epsilon: float, delta: float | None, *, n_iters: int = 50,
                 geometry: str = "l1", radius: float = 1.0, clip_norm: float = 1.0,
                 smoothness: float | None = None, noise_std: float | None = None,
                 theta0: ArrayLike | None = None, record_every: int = 1) -> None:
        self._store_params(locals())
        check_choice("geometry", geometry, {"l1", "l2"})
        check_scale("radius", radius)
        self._check_schedule()

    def _L(self, loss) -> float:
        if self.smoothness is not None:
            return float(self.smoothness)
        try:
            return float(loss.smoothness(2.0, self.clip_norm))
        except (AttributeError, NotImplementedError, ValueError) as exc:
            raise ValueError(f"DP-AccMD needs smoothness for the loss {loss!r} ({exc})") from None

    def bregman_initial(self, theta_star: ArrayLike) -> np.ndarray:
        """``B_w(x*, x_0)`` for the default ``x_0 = 0`` (the constant of Theorem 5.4):
        ``||x*||^2/(2 r^2)`` (l2) or ``KL(u*, uniform)`` with the sparsest lift (l1)."""
        t = check_array("theta_star", theta_star)
        r = float(self.radius)
        if self.geometry == "l2":
            return 0.5 * np.sum(t * t, axis=-1) / r**2
        d = t.shape[-1]
        u = np.concatenate([np.maximum(t, 0), np.maximum(-t, 0)], axis=-1) / r
        u = u + (1.0 - u.sum(axis=-1, keepdims=True)) / (2 * d)
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = np.where(u > 0, u * np.log(u * 2 * d), 0.0)
        return kl.sum(axis=-1)

    def _initial(self, R, d):
        r = float(self.radius)
        if self.theta0 is None:
            x0 = np.zeros((R, d))
        else:
            t = check_array("theta0", self.theta0)
            if t.shape not in ((d,), (R, d)):
                raise ValueError(f"theta0 must have shape ({d},) or ({R}, {d}), got {t.shape}")
            x0 = np.broadcast_to(t, (R, d)).copy()
        norm = np.abs(x0).sum(-1) if self.geometry == "l1" else np.sqrt((x0 * x0).sum(-1))
        if np.any(norm > r * (1 + 1e-12)):
            raise ValueError(f"theta0 must lie in the {self.geometry} ball of radius {r}, got "
                             f"norm {float(norm.max()):.6g}")
        return x0

    def fit(self, loss: LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        loss, rng, data = start_fit(loss, X, y, rng, n_reps, loss_names=False, min_n=2)
        sigma = self.noise_std_for(data.n)
        R, n, d, T = data.n_reps, data.n, data.d, int(self.n_iters)
        r = float(self.radius)
        L = self._L(loss)
        LC = L * (2.0 * r) ** 2
        oracle = GradientOracle(loss, data, float(self.clip_norm))
        x0 = self._initial(R, d)
        y_k, z_k = x0.copy(), x0.copy()
        if self.geometry == "l1":  # lift z to the 2d-simplex: z = r (u+ - u-)
            u = np.concatenate([np.maximum(x0, 0), np.maximum(-x0, 0)], axis=-1) / r
            u = u + np.maximum(0.0, 1.0 - u.sum(-1, keepdims=True)) / (2 * d)
            log_u = np.log(np.maximum(u, 1e-300))
        n_clipped = np.zeros(R, dtype=np.int64)
        history = IterateHistory(y_k)
        for k in range(T):
            alpha = (k + 2) / (4.0 * LC)
            rk = 2.0 / (k + 2)
            x = rk * z_k + (1.0 - rk) * y_k
            g, nc = oracle.mean(x)
            n_clipped += nc
            if sigma > 0:
                g = g + gaussian_noise(rng, sigma, (R, d))
            if self.geometry == "l2":
                y_k = project_l2_ball(x - g / (4.0 * L), r)
                z_k = project_l2_ball(z_k - alpha * r * r * g, r)
            else:
                y_k = l1_squared_prox(x, g, 4.0 * L, r)
                log_u = log_u - alpha * r * np.concatenate([g, -g], axis=-1)
                log_u = log_u - log_u.max(axis=-1, keepdims=True)
                w = np.exp(log_u)
                w /= w.sum(axis=-1, keepdims=True)
                log_u = np.log(np.maximum(w, 1e-300))
                z_k = r * (w[:, :d] - w[:, d:])
            if (k + 1) % self.record_every == 0 or k + 1 == T:
                history.record(y_k, k + 1)
        steps = history.steps()
        return self._result(
            n, d,
            theta=y_k,
            history=history.iterates(),
            history_steps=steps,
            n_clipped=n_clipped,
            n_gradient_evals=n * T,
            extra={"grad_evals": n * steps, "wall_time": history.wall_times(), "noise_std": sigma,
                   "L_C": LC, "z_last": z_k},
        )

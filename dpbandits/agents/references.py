"""Non-private reference agents: uniform random, LinUCB/OFUL and greedy plug-in GLM.

All use the disjoint model of the Figure 5.1 instance: a shared context ``x`` and one
parameter ``theta_i`` per arm; all state is batched as ``(R, K, ...)`` arrays.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._backends import compiled, kernels
from dpbandits._validation import check_choice, check_positive, check_real
from dpbandits.agents.base import Agent, register_agent

__all__ = ["GreedyGLM", "LinUCB", "UniformRandom"]  # the agents; the rest supports them

LINKS = {"identity", "logistic"}


def _link(z: np.ndarray, link: str) -> np.ndarray:
    if link == "identity":
        return z
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # numerically stable logistic


def _link_derivative(z: np.ndarray, link: str) -> np.ndarray:
    if link == "identity":
        return np.ones_like(z)
    s = _link(z, link)
    return s * (1.0 - s)


@register_agent("random")
class UniformRandom(Agent):
    """Pulls an arm uniformly at random each round: the floor every learner must beat."""

    def __init__(self, *, n_arms: int, dim: int, horizon: int):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)

    def _reset(self, n_reps, rng):
        self._rng = rng

    def act(self, contexts):
        r = self._check_contexts(contexts).shape[0]
        return self._rng.integers(0, self.n_arms, size=r)

    def _update(self, contexts, arms, rewards):
        pass

    def _action_probabilities(self, contexts: np.ndarray) -> np.ndarray:
        return np.full((contexts.shape[0], self.n_arms), 1.0 / self.n_arms)

    @property
    def privacy(self):
        return None


class _RidgeState:
    """Per-arm ridge statistics with O(d^2) rank-one updates (Sherman–Morrison).

    ``v_inv`` (R, K, d, d) is the inverse of V = lam I + sum x x^T over the arm's rounds,
    ``b`` (R, K, d) the sum of r x, ``logdet`` (R, K) log det V (matrix determinant lemma).
    """

    def __init__(self, n_reps, n_arms, dim, lam):
        self.v_inv = np.broadcast_to(np.eye(dim) / lam, (n_reps, n_arms, dim, dim)).copy()
        self.b = np.zeros((n_reps, n_arms, dim))
        self.logdet = np.full((n_reps, n_arms), dim * math.log(lam))

    def theta(self) -> np.ndarray:
        return np.einsum("rkij,rkj->rki", self.v_inv, self.b)

    def broadcast(self, n: int) -> _RidgeState:
        """Replication 0's statistics seen by ``n`` replications (read-only views)."""
        view = object.__new__(_RidgeState)
        for name in ("v_inv", "b", "logdet"):
            arr = getattr(self, name)
            setattr(view, name, np.broadcast_to(arr[:1], (n, *arr.shape[1:])))
        return view

    def quad(self, x: np.ndarray) -> np.ndarray:
        """x^T V_i^{-1} x for every arm, shape (R, K)."""
        return np.einsum("ri,rkij,rj->rk", x, self.v_inv, x)

    def add(self, x, arms, weights, targets):
        """Add weight * x x^T and target * x to the pulled arm of each replication."""
        rows = np.arange(x.shape[0])
        vi = self.v_inv[rows, arms]  # (R, d, d)
        vx = np.einsum("rij,rj->ri", vi, x)
        denom = 1.0 + weights * np.einsum("ri,ri->r", x, vx)
        self.v_inv[rows, arms] = vi - (weights / denom)[:, None, None] * (
            vx[:, :, None] * vx[:, None, :]
        )
        self.logdet[rows, arms] += np.log(denom)
        self.b[rows, arms] += targets[:, None] * x


@register_agent("linucb")
class LinUCB(Agent):
    """OFUL / LinUCB (Abbasi-Yadkori et al. 2011) on the disjoint per-arm model.

    Arm ``i``'s index is ``x^T theta_i + beta_i sqrt(x^T V_i^{-1} x)`` with
    ``beta_i = sigma sqrt(2 ln(1/alpha) + ln det V_i - d ln lam) + S sqrt(lam)``
    (Theorem 2 of Abbasi-Yadkori et al.; the constant-regularizer case of Proposition 4 in
    Shariff & Sheffet). Ties go to the lowest arm index.

    Parameters
    ----------
    reg : float, default 1.0
        Ridge regularizer lam > 0 of every arm's Gram matrix ``V_i``.
    noise_std : float, default 0.05
        Sub-Gaussian parameter sigma > 0 of the reward noise.
    theta_bound : float, default 1.0
        Bound S > 0 on each ``||theta_i||_2``.
    alpha : float or None, default None
        Failure probability in (0, 1) of the confidence sets; None means ``1 / horizon``.
    exploration_scale : float, default 1.0
        Multiplier >= 0 of ``beta_i`` (1: the theorem's radius; 0: greedy).
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``/``"numba"``: packed inverses and recursive least squares in numba
        kernels; ``"numpy"``: full inverses, ``theta = V^-1 b`` recomputed. The two agree up
        to rounding.
    """

    supported_links = ("identity",)
    deterministic_policy = True  # argmax, ties to the lowest index

    def __init__(self, *, n_arms: int, dim: int, horizon: int, reg: float = 1.0,
                 noise_std: float = 0.05, theta_bound: float = 1.0,
                 alpha: float | None = None, exploration_scale: float = 1.0,
                 backend: str = "auto"):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.reg = reg
        self.noise_std = noise_std
        self.theta_bound = theta_bound
        self.alpha = alpha
        self.exploration_scale = exploration_scale
        self.backend = backend
        self._compiled = compiled(backend)
        check_positive("reg", reg)
        check_positive("noise_std", noise_std)
        check_positive("theta_bound", theta_bound)
        if alpha is not None:
            check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
        check_real("exploration_scale", exploration_scale, low=0.0)

    def _reset(self, n_reps, rng):
        self._alpha = self.alpha if self.alpha is not None else 1.0 / self.horizon
        if self._compiled:
            state = kernels("agents._linucb_kernels").LinUCBState
            self._state = state(n_reps, self.n_arms, self.dim, self.reg)
            self._consts = np.array([
                2 * math.log(1 / self._alpha) - self.dim * math.log(self.reg),
                self.noise_std, self.theta_bound * math.sqrt(self.reg),
                self.exploration_scale])
        else:
            self._state = _RidgeState(n_reps, self.n_arms, self.dim, self.reg)

    def beta(self) -> np.ndarray:
        """Confidence radius per replication and arm, shape (R, K)."""
        s = self._state
        inner = 2 * math.log(1 / self._alpha) + s.logdet - self.dim * math.log(self.reg)
        return self.noise_std * np.sqrt(np.maximum(inner, 0.0)) + self.theta_bound * math.sqrt(
            self.reg)

    def indices(self, contexts) -> np.ndarray:
        """UCB index of every arm, shape (R, K)."""
        return self._indices(self._check_contexts(contexts))

    def _indices(self, x):
        s = self._state
        if self._compiled:
            return s.indices(x, self._consts)
        mean = np.einsum("ri,rki->rk", x, s.theta())
        bonus = self.beta() * np.sqrt(np.maximum(s.quad(x), 0.0))
        return mean + self.exploration_scale * bonus

    def act(self, contexts):
        return np.argmax(self._indices(contexts), axis=1)

    def _batch_scores(self, x):
        """UCB indices (n, K) of n rows from the one-replication state, every row exactly
        ``act``'s numbers: the compiled backend's row kernel (``_indices``' sums in the same
        order, the rows vectorized), the numpy backend's index on read-only views of the
        state."""
        if self._compiled:
            return self._state.row_indices(x, self._consts)
        saved = self._state
        self._state = saved.broadcast(x.shape[0])
        try:
            return self._indices(x)
        finally:
            self._state = saved

    def _batch_act(self, x):
        return np.argmax(self._batch_scores(x), axis=1)

    def _update(self, contexts, arms, rewards):
        if self._compiled:
            self._state.add(contexts, arms, rewards)
        else:
            self._state.add(contexts, arms, np.ones(len(arms)), rewards)

    def _batch_update(self, x, a, r):
        """The compiled backend replays the rows in one kernel call through the very routine
        of ``_update`` (same state bit for bit); the numpy backend (and a subclass that
        overrides ``_update``) loops."""
        if not self._compiled or self.n_reps_ != 1 or type(self)._update is not LinUCB._update:
            return False
        self._state.replay(x, a, r)
        return True

    @property
    def privacy(self):
        return None


@register_agent("greedy")
class GreedyGLM(Agent):
    """Greedy plug-in GLM agent: play ``argmax_i link(x^T theta_i)`` of the current estimates.

    Identity link: ``theta_i`` is the ridge estimate (exact, via Sherman–Morrison).
    Logistic link: ``theta_i`` follows online Newton steps on the logistic loss with the
    curvature-weighted Gram matrix ``lam I + sum link'(x^T theta) x x^T`` (a one-pass
    approximation of the MLE; documented because there is no finite sufficient statistic).
    The first ``K`` rounds pull each arm once (round-robin) so every estimate has data.

    Parameters
    ----------
    reg : float, default 1.0
        Ridge regularizer lam > 0 of every arm's estimate.
    link : {"identity", "logistic"}, default "identity"
        Inverse link of the reward model the estimates are fitted for.
    """

    deterministic_policy = True  # round-robin, then argmax with ties to the lowest index

    @property
    def supported_links(self) -> tuple[str, ...]:
        """The link the agent was built with (``link``)."""
        return (self.link,)

    def __init__(self, *, n_arms: int, dim: int, horizon: int, reg: float = 1.0,
                 link: str = "identity"):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.reg = reg
        self.link = link
        check_positive("reg", reg)
        check_choice("link", link, LINKS)

    def _reset(self, n_reps, rng):
        self._state = _RidgeState(n_reps, self.n_arms, self.dim, self.reg)
        self._theta = np.zeros((n_reps, self.n_arms, self.dim))

    def act(self, contexts):
        x = self._check_contexts(contexts)
        if self.t_ < self.n_arms:
            return np.full(x.shape[0], self.t_, dtype=np.int64)
        theta = self._state.theta() if self.link == "identity" else self._theta
        return np.argmax(_link(np.einsum("ri,rki->rk", x, theta), self.link), axis=1)

    def _batch_scores(self, x):
        """Estimated mean rewards (n, K) from replication 0's estimates (none during the
        round-robin start, where act does not maximize them)."""
        if self.t_ < self.n_arms:
            return None
        n = x.shape[0]
        theta = (self._state.broadcast(n).theta() if self.link == "identity"
                 else np.broadcast_to(self._theta[:1], (n, *self._theta.shape[1:])))
        return _link(np.einsum("ri,rki->rk", x, theta), self.link)

    def _batch_act(self, x):
        if self.t_ < self.n_arms:
            return np.full(x.shape[0], self.t_, dtype=np.int64)
        return np.argmax(self._batch_scores(x), axis=1)

    def _update(self, contexts, arms, rewards):
        if self.link == "identity":
            self._state.add(contexts, arms, np.ones(len(arms)), rewards)
            return
        rows = np.arange(len(arms))
        th = self._theta[rows, arms]
        z = np.einsum("ri,ri->r", contexts, th)
        w = np.maximum(_link_derivative(z, self.link), 1e-6)
        self._state.add(contexts, arms, w, np.zeros(len(arms)))
        grad = (_link(z, self.link) - rewards)[:, None] * contexts
        self._theta[rows, arms] = th - np.einsum("rij,rj->ri", self._state.v_inv[rows, arms],
                                                 grad)

    @property
    def privacy(self):
        return None

"""Pieces shared by the private ridge-regression UCB agents ``adac-oful`` and ``ldp-linucb``.

Both release (centrally per episode, or locally per user) noisy sums of ``u u^T`` and
``y u`` per arm, where ``u = clip(x)/L`` (``||u||_2 <= 1``) and ``y = clip(r, B)``, and play
the optimistic index of the noisy ridge estimate with the confidence radius of Shariff &
Sheffet (2018), Proposition 4 (data-dependent form), instantiated with the bounds of the
noise actually added (:func:`noise_norm_bound`, :func:`target_noise_radius`).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._validation import check_bound, check_positive, check_real
from dpbandits.agents.base import PrivateAgent
from dpbandits.privacy.plan import PlanView
from dpbandits.private_ridge import (  # the pure math, shared with offpolicy's private DR
    normalized_rows,
    ridge_parts,
    unit_rows,
    whitened_terms,
)

__all__ = ["PrivateRidgeUCB", "confidence_radius", "noise_norm_bound", "normalized_rows",
           "optimistic_arms", "ridge_params", "ridge_parts", "target_noise_radius",
           "unit_rows", "whitened_terms"]


def noise_norm_bound(diag_sd: float, n_terms, feature_dim: int, horizon: int,
                     alpha: float):
    """``diag_sd sqrt(n) (4 sqrt(D) + 2 ln(2T/alpha))``: the bound on the spectral norm of a
    sum of ``n`` independent symmetric Gaussian ``D x D`` noise matrices whose diagonal
    entries have standard deviation ``diag_sd`` (and off-diagonal ones at most that), with
    probability ``1 - alpha/(2T)`` (Shariff & Sheffet 2018, Proposition 11, where
    ``diag_sd = s sqrt 2``: ``Upsilon = s sqrt(2m)(4 sqrt(D) + 2 ln(2T/alpha))``; Zheng et al.
    2020's ``gamma_t = sigma sqrt(t)(4 sqrt(d) + 2 ln(2T/alpha))``). ``n_terms`` may be an
    array."""
    return diag_sd * np.sqrt(n_terms) * (4.0 * math.sqrt(feature_dim)
                                         + 2.0 * math.log(2.0 * horizon / alpha))


def target_noise_radius(sd: float, n_terms, feature_dim: int, horizon: int, alpha: float,
                        rho_min):
    """``gamma = sd sqrt(n) (sqrt(D) + sqrt(2 ln(2T/alpha))) / sqrt(rho_min)``: the bound on
    ``||xi||_{V^-1}`` for ``xi`` a sum of ``n`` vectors ``N(0, sd^2 I_D)`` and
    ``V >= rho_min I`` (Shariff & Sheffet 2018, Proposition 11's gamma). Arrays allowed."""
    spread = math.sqrt(feature_dim) + math.sqrt(2.0 * math.log(2.0 * horizon / alpha))
    return sd * np.sqrt(n_terms) * spread / np.sqrt(rho_min)


def confidence_radius(logdet, *, noise_std: float, alpha: float, feature_dim: int,
                      rho_min, rho_max, theta_bound: float, gamma):
    """Proposition 4 of Shariff & Sheffet (2018), data-dependent form:
    ``sigma sqrt(2 ln(2/alpha) + ln det V - D ln rho_min) + S sqrt(rho_max) + gamma``."""
    inner = 2.0 * math.log(2.0 / alpha) + logdet - feature_dim * np.log(rho_min)
    return noise_std * np.sqrt(np.maximum(inner, 0.0)) + theta_bound * np.sqrt(rho_max) + gamma


def optimistic_arms(theta: np.ndarray, v_inv_u: np.ndarray, beta, u: np.ndarray,
                    tie_rng: np.random.Generator) -> np.ndarray:
    """``argmax_k <u, theta_k> + beta sqrt(u^T V_k^-1 u)`` per replication (``theta`` and
    ``v_inv_u = V_k^-1 u`` (R, K, d), ``beta`` (R,) or scalar, ``u`` (R, d)), ties broken
    uniformly at random with ``tie_rng``."""
    quad = np.einsum("rkj,rj->rk", v_inv_u, u)
    scores = (np.einsum("rkj,rj->rk", theta, u)
              + np.reshape(beta, (-1, 1)) * np.sqrt(np.maximum(quad, 0.0)))
    top = scores.max(axis=1, keepdims=True)
    draw = tie_rng.random(scores.shape)
    return np.argmax(np.where(scores >= top, draw, -1.0), axis=1).astype(np.int64)


def ridge_params(names: dict) -> dict:
    """The arguments of :class:`PrivateRidgeUCB` among ``names`` (a subclass passes its
    ``locals()`` in ``__init__``)."""
    return {k: names[k] for k in ("n_arms", "dim", "horizon", "epsilon", "delta",
                                  "context_bound", "reward_bound", "noise_std", "theta_bound",
                                  "alpha", "reg")}


class PrivateRidgeUCB(PrivateAgent):
    """Base of ``adac-oful`` and ``ldp-linucb``: stores and validates the bounds the
    statistics are clipped to and the constants of the confidence radius, counts the clips.

    Parameters
    ----------
    context_bound : float or None, default None
        Bound L contexts are clipped to, in [1e-75, 1e75] for a private agent (> 0 for the
        non-private twin); None means ``sqrt(dim)`` (contexts in ``[-1, 1]^d``, the
        observation space of the package's normalized environments).
    reward_bound : float, default 1.0
        Bound B rewards are clipped to, in [1e-75, 1e75] for a private agent (> 0 for the
        non-private twin).
    noise_std : float, default 0.05
        Sub-Gaussian parameter > 0 of the reward noise (sets the confidence radius).
    theta_bound : float or None, default None
        Bound > 0 on ``||vec theta||_2``; None means ``sqrt(n_arms)``.
    alpha : float or None, default None
        Failure probability in (0, 1) of the confidence sets; None means ``1 / horizon``.
    reg : float, default 1.0
        Ridge regularizer > 0 of an exact design (the non-private twin's).
    """

    supported_links = ("identity",)
    clip_counters = ("n_clipped_contexts_", "n_clipped_rewards_")

    @PlanView
    def multiplier(self) -> float:
        """``k``: each release (each user's message, for a local model) is ``1/k``-GDP (0
        without noise)."""
        return self._plan.scales["multiplier"]

    @PlanView
    def sigmas(self) -> dict:
        """Standard deviations of the noise on the Gram entries and on the targets."""
        return {"gram": self._plan.scales["gram"], "target": self._plan.scales["target"]}

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, context_bound: float | None = None,
                 reward_bound: float = 1.0, noise_std: float = 0.05,
                 theta_bound: float | None = None, alpha: float | None = None,
                 reg: float = 1.0):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        given = {"context_bound": context_bound, "reward_bound": reward_bound,
                 "noise_std": noise_std, "theta_bound": theta_bound, "reg": reg}
        vars(self).update(given, alpha=alpha)  # each stored unchanged under its own name
        defaults = {"context_bound": math.sqrt(dim), "theta_bound": math.sqrt(n_arms)}
        # the bounds the statistics are clipped to: in BOUND_RANGE when private, so that
        # ``y u`` and its noise scale ``sigma B`` are normal floats (a subnormal product
        # rounds up by as much as 2x and leaves the target above its sensitivity)
        data_check = check_bound if self._private else check_positive
        value = {k: defaults[k] if v is None else
                 (data_check if k in ("context_bound", "reward_bound") else check_positive)(k, v)
                 for k, v in given.items()}
        self._L, self._B, self._reg = value["context_bound"], value["reward_bound"], value["reg"]
        self._sigma_eta = value["noise_std"]
        self._S = self._L * value["theta_bound"]  # in units of u = x / L
        self._alpha = 1.0 / horizon if alpha is None else check_real(
            "alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)

    def _reset_counters(self, n_reps: int) -> None:
        self.n_clipped_contexts_ = np.zeros(n_reps, dtype=np.int64)
        self.n_clipped_rewards_ = np.zeros(n_reps, dtype=np.int64)
        self.n_raised_ = np.zeros(n_reps, dtype=np.int64)

    def _clipped(self, contexts: np.ndarray, rewards: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`normalized_rows` of the round, its clips counted."""
        u, y, cx, cy = normalized_rows(contexts, rewards, self._L, self._B)
        self.n_clipped_contexts_ += cx
        self.n_clipped_rewards_ += cy
        return u, y

    def _radius(self, logdet, rho_min, rho_max, gamma):
        """:func:`confidence_radius` with this agent's constants (``D = K d``)."""
        return confidence_radius(logdet, noise_std=self._sigma_eta, alpha=self._alpha,
                                 feature_dim=self.n_arms * self.dim, rho_min=rho_min,
                                 rho_max=rho_max, theta_bound=self._S, gamma=gamma)

    def _units(self, contexts: np.ndarray) -> np.ndarray:
        """``u = clip(x)/L`` (nothing counted: the index, not a statistic)."""
        return unit_rows(contexts, self._L)[0]

    def _choose(self, theta: np.ndarray, v_inv_u: np.ndarray, u: np.ndarray) -> np.ndarray:
        """:func:`optimistic_arms` with the current radius and the tie generator."""
        return optimistic_arms(theta, v_inv_u, self._beta, u, self._tie_rng)

    def _gram_noise_bound(self, diag_sd: float, n_terms):
        """:func:`noise_norm_bound` of one arm's ``d x d`` block (``alpha/K``: union over
        the ``K`` blocks)."""
        return noise_norm_bound(diag_sd, n_terms, self.dim, self.horizon,
                                self._alpha / self.n_arms)

    def _target_noise(self, sd: float, n_terms, rho_min):
        """:func:`target_noise_radius` of the joint target vector (``D = K d``)."""
        return target_noise_radius(sd, n_terms, self.n_arms * self.dim, self.horizon,
                                   self._alpha, rho_min)

    @property
    def beta_(self) -> np.ndarray:
        """The confidence radius in use, per replication."""
        return np.array(self._beta, dtype=float, copy=True)

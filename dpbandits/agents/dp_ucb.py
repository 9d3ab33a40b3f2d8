"""DP-UCB: Linear UCB with changing perturbations (Shariff & Sheffet, NeurIPS 2018).

Disjoint model: arm ``i``'s feature is the context placed in block ``i`` of ``R^{dK}``
(``D = dK``), so one ridge model over ``vec(theta_1..theta_K)`` serves all arms. The
``(D+1) x (D+1)`` Gram matrix ``M_t = sum_{s<t} [phi_s; y_s][phi_s; y_s]^T`` is released
through the binary tree (``dpbandits.privacy.tree``: at most ``ceil(log2 T) + 1`` noisy
nodes per release, O(log T) memory); the agent only post-processes the release and the
current context, which makes it (epsilon, delta)-JDP (Claim 7).

Notation and constants follow the paper (draft of 2018-06, see the implementation note):
``L`` bounds ``||x||_2`` and ``B~`` bounds ``|y|`` (both enforced by clipping, counted);
``L~^2 = L^2 + B~^2`` (A6); ``m = 1 + ceil(log2 T)``.

Gaussian nodes (Section 4.2): symmetrized ``Z = (Z' + Z'^T)/sqrt(2)``, ``Z'_ij ~ N(0, s^2)``,
- ``"theorem"``: ``s^2 = 16 m L~^4 ln(4/delta)^2 / epsilon^2``;
- ``"accountant"``: the smallest ``s`` for which dp_accounting certifies (epsilon, delta)
  for the Gaussian tree: the effective l_2 sensitivity of one datum is
  ``||vv^T - v'v'^T||_F / sqrt(2) <= L~^2`` (diagonal noise is sqrt(2) larger), and it sits
  in ``nodes_per_datum`` nodes, so the whole release is a Gaussian mechanism with noise
  multiplier ``s / (sqrt(nodes_per_datum) L~^2)``.
``Upsilon = s sqrt(2m) (4 sqrt(D) + 2 ln(2T/alpha))``; the shift ``2 Upsilon I`` is added
once to each release (not per node); ``rho_min = Upsilon``, ``rho_max = 3 Upsilon``,
``gamma = sqrt(m / Upsilon) s (sqrt(D) + sqrt(2 ln(2T/alpha)))`` (Proposition 11, the exact
left-hand form — the paper's simplified form drops a ln(4/delta) factor).

Wishart nodes (Section 4.1): each node is ``Wishart_{D+1}(L~^2 I, k)`` with
``k = D + 1 + ceil(224 m ln(8m/delta) ln(2/delta) / epsilon^2)`` (Sheffet 2015, Thm 4.1 at
``(epsilon/sqrt(8 m ln(2/delta)), delta/(2m))`` per node, advanced composition over ``m``
nodes). Proposition 9 assumes every release sums exactly ``m`` nodes; the binary tree sums
``popcount(t) <= m``, so each release is topped up with an independent, data-independent
``Wishart(L~^2 I, (m - popcount(t)) k)`` draw (post-processing: privacy unchanged, and the
eigenvalue bounds of Proposition 9 hold as stated). Optional downward shift ``c I``.

``beta_t`` is Proposition 4's data-dependent form
``sigma sqrt(2 ln(2/alpha) + ln det V_t - D ln rho_min) + S sqrt(rho_max) + gamma`` and the
index is ``<theta~, phi_i> + beta_t sqrt(phi_i^T V_t^{-1} phi_i)`` (square root, not the
squared norm). ``epsilon = inf`` switches noise off and uses the constant regularizer
``reg I`` (then the agent is exactly OFUL on the disjoint model).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotrs as _potrs

from dpbandits._validation import (
    check_choice,
    check_positive,
    check_real,
)
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.tree import TreeAggregator, tree_levels


def tree_depth(horizon: int) -> int:
    """``m = 1 + ceil(log2 T)``, the paper's bound on nodes per datum and per release."""
    return 1 + math.ceil(math.log2(horizon)) if horizon > 1 else 1


def gaussian_sigma_theorem(horizon, epsilon, delta, l_tilde) -> float:
    """Per-node std of the symmetrized Gaussian noise, Section 4.2:
    ``s^2 = 16 m L~^4 ln(4/delta)^2 / epsilon^2``."""
    m = tree_depth(horizon)
    return math.sqrt(16 * m) * l_tilde**2 * math.log(4 / delta) / epsilon


def gaussian_sigma_accountant(horizon, epsilon, delta, l_tilde) -> float:
    """Smallest per-node std certified by dp_accounting for the Gaussian tree."""
    from dpbandits.privacy.accounting import calibrate, gaussian_event

    levels = tree_levels(horizon)
    mult = calibrate(lambda z: gaussian_event(z), epsilon, delta)
    return mult * math.sqrt(levels) * l_tilde**2


def gaussian_bounds(horizon, feature_dim, sigma, alpha) -> dict:
    """Upsilon, shift, rho_min, rho_max and gamma of Proposition 11 for node std ``sigma``."""
    m = tree_depth(horizon)
    log_term = math.log(2 * horizon / alpha)
    upsilon = sigma * math.sqrt(2 * m) * (4 * math.sqrt(feature_dim) + 2 * log_term)
    gamma = math.sqrt(m / upsilon) * sigma * (math.sqrt(feature_dim) + math.sqrt(2 * log_term))
    return {"m": m, "upsilon": upsilon, "shift": 2 * upsilon, "rho_min": upsilon,
            "rho_max": 3 * upsilon, "gamma": gamma}


def wishart_degrees(horizon, feature_dim, epsilon, delta) -> int:
    """Per-node degrees of freedom ``k = D + 1 + ceil(224 m eps^-2 ln(8m/delta) ln(2/delta))``."""
    m = tree_depth(horizon)
    return feature_dim + 1 + math.ceil(
        224 * m * math.log(8 * m / delta) * math.log(2 / delta) / epsilon**2)


def wishart_bounds(horizon, feature_dim, k, l_tilde, alpha, shifted: bool) -> dict:
    """rho_min, rho_max, gamma (and the downward shift) of Proposition 9."""
    m = tree_depth(horizon)
    smk = math.sqrt(m * k)
    spread = math.sqrt(feature_dim) + math.sqrt(2 * math.log(8 * horizon / alpha))
    gamma0 = l_tilde * (math.sqrt(feature_dim) + math.sqrt(2 * math.log(2 * horizon / alpha)))
    if not shifted:
        return {"m": m, "k": k, "shift": 0.0, "rho_min": l_tilde**2 * (smk - spread) ** 2,
                "rho_max": l_tilde**2 * (smk + spread) ** 2, "gamma": gamma0}
    c = l_tilde**2 * (smk - spread) ** 2 - 4 * l_tilde**2 * smk * spread
    return {"m": m, "k": k, "shift": -c, "rho_min": 4 * l_tilde**2 * smk * spread,
            "rho_max": 8 * l_tilde**2 * smk * spread,
            "gamma": l_tilde * math.sqrt(smk * (math.sqrt(feature_dim) + math.sqrt(
                2 * math.log(2 * horizon / alpha))))}


def symmetric_gaussian_noise(sigma: float):
    """Node sampler: ``(Z' + Z'^T)/sqrt(2)`` with ``Z'_ij ~ N(0, sigma^2)``."""

    def draw(rng, shape):
        z = rng.standard_normal(shape)
        return (z + np.swapaxes(z, -1, -2)) * (sigma / math.sqrt(2.0))

    return draw


def wishart_noise(rng, size: tuple, dim: int, df: int, scale: float) -> np.ndarray:
    """``Wishart_dim(scale * I, df)`` draws of shape ``(*size, dim, dim)`` (Bartlett).

    ``A`` lower triangular with ``A_ii = sqrt(chi2(df - i))`` (0-based ``i``) and
    ``A_ij ~ N(0, 1)`` below the diagonal; ``W = scale * A A^T``. O(dim^3) per draw however
    large ``df`` is.
    """
    a = np.tril(rng.standard_normal((*size, dim, dim)), k=-1)
    diag = np.sqrt(rng.chisquare(df - np.arange(dim), size=(*size, dim)))
    idx = np.arange(dim)
    a[..., idx, idx] = diag
    return scale * (a @ np.swapaxes(a, -1, -2))


@register_agent("dp-ucb")
class DPUCB(PrivateAgent):
    """Jointly differentially private LinUCB of Shariff & Sheffet (2018), disjoint model.

    Parameters (beyond ``n_arms, dim, horizon``): ``epsilon`` (inf = no noise), ``delta``
    (default ``1/horizon``), ``noise`` (``"gaussian"`` or ``"wishart"``), ``calibration``
    (``"theorem"``/``"accountant"``, Gaussian only), ``context_bound`` L on ``||x||_2``
    (default ``sqrt(dim)``, exact for l_inf-normalized contexts), ``reward_bound`` B~ on
    ``|y|``, ``noise_std`` sigma (reward sub-Gaussian parameter), ``theta_bound`` S on
    ``||vec theta||_2`` (default ``sqrt(n_arms)``: each ``||theta_i||_1 <= 1``), ``alpha``
    (failure probability, default ``1/horizon``), ``reg`` (the constant regularizer when
    ``epsilon = inf``), ``wishart_shift`` (shift the Wishart noise down, Prop. 9).
    """

    supported_links = ("identity",)

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, noise: str = "gaussian",
                 calibration: str = "theorem", context_bound: float | None = None,
                 reward_bound: float = 1.0, noise_std: float = 0.05,
                 theta_bound: float | None = None, alpha: float | None = None,
                 reg: float = 1.0, wishart_shift: bool = True):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.noise = noise
        self.calibration = calibration
        self.context_bound = context_bound
        self.reward_bound = reward_bound
        self.noise_std = noise_std
        self.theta_bound = theta_bound
        self.alpha = alpha
        self.reg = reg
        self.wishart_shift = wishart_shift

        check_choice("noise", noise, {"gaussian", "wishart"})
        check_choice("calibration", calibration, {"theorem", "accountant"})
        if noise == "wishart" and calibration != "theorem":
            raise ValueError("calibration='accountant' is only available for noise='gaussian' "
                             "(the Wishart guarantee is Sheffet's theorem)")
        self._L = math.sqrt(dim) if context_bound is None else check_positive(
            "context_bound", context_bound)
        self._B = check_positive("reward_bound", reward_bound)
        self._sigma = check_positive("noise_std", noise_std)
        self._S = math.sqrt(n_arms) if theta_bound is None else check_positive(
            "theta_bound", theta_bound)
        self._alpha = 1.0 / horizon if alpha is None else check_real(
            "alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
        check_positive("reg", reg)
        if not isinstance(wishart_shift, bool):
            raise TypeError(f"wishart_shift must be a bool, got {wishart_shift!r}")
        self.feature_dim = dim * n_arms
        self.l_tilde = math.sqrt(self._L**2 + self._B**2)
        self.constants = self._constants()

    # -- calibration -----------------------------------------------------------------------
    def _constants(self) -> dict:
        T, D = self.horizon, self.feature_dim
        if not self._private:
            return {"m": tree_depth(T), "shift": self.reg, "rho_min": self.reg,
                    "rho_max": self.reg, "gamma": 0.0, "node_sigma": 0.0}
        if self.noise == "gaussian":
            if self.calibration == "theorem":
                s = gaussian_sigma_theorem(T, self._eps, self._delta, self.l_tilde)
            else:
                s = gaussian_sigma_accountant(T, self._eps, self._delta, self.l_tilde)
            return {**gaussian_bounds(T, D, s, self._alpha), "node_sigma": s}
        if not (self._eps / math.sqrt(8 * tree_depth(T) * math.log(2 / self._delta)) < 1):
            raise ValueError("the Wishart guarantee (Sheffet 2015, Thm 4.1) needs the per-node "
                             "epsilon < 1")
        k = wishart_degrees(T, D, self._eps, self._delta)
        return wishart_bounds(T, D, k, self.l_tilde, self._alpha, self.wishart_shift)

    @property
    def privacy(self) -> PrivacyGuarantee:
        if not self._private:
            return PrivacyGuarantee.non_private("DP-UCB with noise off (OFUL, constant reg)")
        if self.noise == "gaussian" and self.calibration == "accountant":
            basis = ("Claim 7 (JDP by post-processing), Shariff & Sheffet 2018; Gaussian tree "
                     "calibrated with the dp_accounting PLD accountant")
        elif self.noise == "gaussian":
            basis = ("Claim 7 and Section 4.2 (per-node Gaussian, advanced composition over "
                     "m nodes), Shariff & Sheffet 2018")
        else:
            basis = ("Claim 7 and Section 4.1 (Wishart, Sheffet 2015 Thm 4.1 per node, "
                     "advanced composition over m nodes), Shariff & Sheffet 2018")
        return PrivacyGuarantee(self._eps, self._delta, notion="JDP", basis=basis)

    @property
    def ledger(self):
        """Gaussian tree as one Gaussian mechanism (noise multiplier s/(sqrt(levels) L~^2))."""
        if not self._private or self.noise != "gaussian":
            return None
        from dpbandits.privacy.accounting import gaussian_event

        levels = tree_levels(self.horizon)
        return gaussian_event(self.constants["node_sigma"] / (math.sqrt(levels)
                                                              * self.l_tilde**2))

    # -- state -----------------------------------------------------------------------------
    def _reset(self, n_reps, rng):
        D = self.feature_dim
        self._rng = rng
        if not self._private:
            node = None
        elif self.noise == "gaussian":
            node = symmetric_gaussian_noise(self.constants["node_sigma"])
        else:
            k, scale = self.constants["k"], self.l_tilde**2
            node = lambda g, shape: wishart_noise(g, shape[:1], D + 1, k, scale)  # noqa: E731
        self._tree = TreeAggregator(self.horizon, (D + 1, D + 1), n_reps, node,
                                    rng if node is not None else None)
        self._release = np.zeros((n_reps, D + 1, D + 1))  # M_1 + N_1 = 0 (nothing added)
        self._topup = np.zeros((n_reps, D + 1, D + 1))
        if node is not None and self.noise == "wishart":  # the empty release sums 0 nodes
            self._topup = wishart_noise(rng, (n_reps,), D + 1,
                                        self.constants["m"] * self.constants["k"],
                                        self.l_tilde**2)
        self.n_clipped_contexts_ = np.zeros(n_reps, dtype=np.int64)
        self.n_clipped_rewards_ = np.zeros(n_reps, dtype=np.int64)
        self.n_indefinite_ = np.zeros(n_reps, dtype=np.int64)
        self._last_beta = None
        self._prepare()

    def _prepare(self):
        """Regularized Gram matrix V_t and noisy target u~_t from the current release."""
        D = self.feature_dim
        rel = self._release + self._topup
        V = rel[:, :D, :D].copy()
        V[:, np.arange(D), np.arange(D)] += self.constants["shift"]
        self._V = V
        self._u = rel[:, :D, D]

    def _solve(self, phi):
        """theta~, phi_i^T V^-1 phi_i for every arm, and ln det V.

        One Cholesky factorization per replication (LAPACK potrf/potrs). The loop over
        replications is deliberate: each iteration is an O(D^3) factorization, numpy has no
        batched triangular solve, and the batched numpy path (cholesky + LU solve) measured
        about 4x slower per replication at D = 100.
        """
        V, u = self._V, self._u
        K, d = self.n_arms, self.dim
        rhs = np.concatenate([u[:, :, None], phi], axis=2)  # (R, D, 1 + K)
        w = np.empty_like(rhs)
        logdet = np.empty(V.shape[0])
        for r in range(V.shape[0]):
            chol, info = _potrf(V[r], lower=1, clean=0)
            if info == 0:
                w[r], _ = _potrs(chol, rhs[r], lower=1)
                logdet[r] = 2.0 * np.log(np.diagonal(chol)).sum()
            else:
                # A4 (H_t PSD) fails with probability <= alpha/(2T) per round (Prop. 11):
                # count it and proceed as the authors' code does (LU solve, clamp below).
                self.n_indefinite_[r] += 1
                w[r] = np.linalg.solve(V[r], rhs[r])
                logdet[r] = np.linalg.slogdet(V[r])[1]
        theta = w[:, :, 0]
        blocks = np.arange(K)
        # phi_i^T V^-1 phi_i: phi_i is x in block i, so only block i of column i matters
        wq = w[:, :, 1:].reshape(-1, K, d, K)[:, blocks, :, blocks]  # (K, R, d)
        x = phi[:, :d, 0]
        quad = np.einsum("krd,rd->rk", wq, x)
        return theta, np.maximum(quad, 0.0), logdet

    def _features(self, x):
        R, d, K = x.shape[0], self.dim, self.n_arms
        phi = np.zeros((R, K, d, K))
        phi[:, np.arange(K), :, np.arange(K)] = x[None]
        return phi.reshape(R, K * d, K)

    def _clip_contexts(self, x):
        norms = np.linalg.norm(x, axis=1)
        over = norms > self._L
        if over.any():
            x = x * np.where(over, self._L / np.where(over, norms, 1.0), 1.0)[:, None]
        return x, over

    def beta(self, logdet) -> np.ndarray:
        """Proposition 4, data-dependent form, per replication."""
        c = self.constants
        inner = (2 * math.log(2 / self._alpha) + logdet
                 - self.feature_dim * math.log(c["rho_min"]))
        return (self._sigma * np.sqrt(np.maximum(inner, 0.0))
                + self._S * math.sqrt(c["rho_max"]) + c["gamma"])

    def indices(self, contexts) -> np.ndarray:
        """UCB index of every arm, shape (R, K)."""
        x, _ = self._clip_contexts(self._check_contexts(contexts))
        phi = self._features(x)
        theta, quad, logdet = self._solve(phi)
        beta = self.beta(logdet)
        self._last_beta = beta
        mean = np.einsum("rdk,rd->rk", phi, theta)
        return mean + beta[:, None] * np.sqrt(quad)

    def act(self, contexts):
        return np.argmax(self.indices(contexts), axis=1)

    def _update(self, contexts, arms, rewards):
        x, over = self._clip_contexts(contexts)
        self.n_clipped_contexts_ += over
        y_over = np.abs(rewards) > self._B
        self.n_clipped_rewards_ += y_over
        y = np.clip(rewards, -self._B, self._B)
        R, d, D = x.shape[0], self.dim, self.feature_dim
        v = np.zeros((R, D + 1))
        cols = arms[:, None] * d + np.arange(d)[None]
        v[np.arange(R)[:, None], cols] = x
        v[:, D] = y
        self._release = self._tree.add(v[:, :, None] * v[:, None, :])
        if self._private and self.noise == "wishart":
            missing = self.constants["m"] - self._tree.last_node_count
            self._topup = (wishart_noise(self._rng, (R,), D + 1, missing * self.constants["k"],
                                         self.l_tilde**2) if missing > 0
                           else np.zeros_like(self._topup))
        self._prepare()

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
nodes). The claim is certified by the ledger's check instead
(:mod:`dpbandits.privacy.accounting.wishart`: Theorem 4.1 per node with the best per-node
delta, Kairouz-Oh-Viswanath optimal composition over the ``tree_levels(T)`` nodes of a datum,
tighter than advanced composition); a claim it does not certify is refused (e.g. epsilon = 40
at T = 1000, delta = 1e-3). Proposition 9 assumes every release sums exactly ``m`` nodes;
the binary tree sums ``popcount(t) <= m``, so each release is topped up with an independent,
data-independent ``Wishart(L~^2 I, (m - popcount(t)) k)`` draw (post-processing: privacy
unchanged, and the eigenvalue bounds of Proposition 9 hold as stated). Optional downward
shift ``c I``.

``beta_t`` is Proposition 4's data-dependent form
``sigma sqrt(2 ln(2/alpha) + ln det V_t - D ln rho_min) + S sqrt(rho_max) + gamma`` and the
index is ``<theta~, phi_i> + beta_t sqrt(phi_i^T V_t^{-1} phi_i)`` (square root, not the
squared norm). ``epsilon = inf`` switches noise off and uses the constant regularizer
``reg I`` (then the agent is exactly OFUL on the disjoint model).

Computation. The release at ``t`` is computed as ``M_t + N_t``: ``M_t`` the exact prefix Gram
matrix (one rank-one update of ``(d+1)^2`` entries per round) and ``N_t`` the noise of the
nodes at the set bits of ``t``, kept as ``O(log T)`` partial sums
(:func:`dpbandits.privacy.tree.tree_node_levels`: one matrix addition per round). This is the
tree's release (the sum of its noisy nodes) up to floating-point order, so the guarantee is
the tree's. The only ``O(D^3)`` work per round is the Cholesky factorization of ``V_t``
(Wishart noise adds two Bartlett products, node and top-up, ``n^3/3`` flops each); it runs in
the compiled kernels of :mod:`dpbandits.agents._ucb_kernels` (``backend="numpy"``: the numpy
twin). If ``V_t`` is not positive definite (A4 fails; counted in ``n_indefinite_``) that
round's indices come from an LU solve.

Block-diagonal option (``block_diagonal=True``; the faithful default keeps the whole
matrix). With one parameter per arm the cross-arm ``d x d`` blocks of ``M_t`` are
structurally zero, so in the release they hold only noise. The option keeps the per-arm
diagonal blocks ``V_kk`` (and all of ``u~_t``) and drops the cross-arm blocks: a function of
the same release, hence the same guarantee and the same ledger (post-processing), with the same
noise draws. Arm ``k``'s estimate is ``V_kk^-1 u~_k``, its bonus ``||x||_{V_kk^-1}``, and
``ln det V_t`` is the sum over the blocks; the ``K`` factorizations of ``d x d`` blocks cost
``K^2`` times less than one of ``dK x dK``. ``beta_t`` keeps the full model's constants: the
blocks' eigenvalues lie between ``V_t``'s (Cauchy interlacing), so Proposition 11's eigenvalue
bounds hold for them (for Wishart nodes ``gamma`` is not re-derived per block).

Plan (:func:`dp_ucb_plan`): Gaussian nodes have the scale ``node_sigma`` (``s``, the std of
``Z'_ij``, in units of the Gram entries), Wishart nodes the scale ``degrees`` (``k``); the
sensitivity ``node`` is ``L~^2``. The constants of the confidence radius (``constants``) are
derived from the plan once, in ``__init__``.

Random streams. Gaussian nodes: a generator spawned from the agent's draws, for node
``t = 1..T``, ``n(n+1)/2`` standard normals per replication (``n = D + 1``; the packed upper
triangle of :func:`dpbandits.privacy.mechanisms.symmetric_gaussian`, exact). Wishart:
four spawned generators (node normals, node chi-squares, top-up normals, top-up
chi-squares; :func:`~dpbandits.privacy.mechanisms.wishart_matrix`'s Bartlett variates, exact),
top-ups for releases ``j = 0..T``. Draws come a chunk of rounds at a time, the next chunk
drawn by a background thread (:class:`dpbandits.privacy.streams.ChunkedDraws`); results do not
depend on the chunk size, the prefetching, the backend's thread count or serial/parallel
build (the numpy twin agrees up to rounding).
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from functools import partial

import numpy as np

from dpbandits._validation import (
    check_bound,
    check_choice,
    check_positive,
    check_real,
)
from dpbandits.agents._ucb_ops import BACKENDS, symmetric_nodes, ucb_ops
from dpbandits.agents._ucb_ops import np_terms as _terms
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.plan import NoisePlan, PlanView, check_calibration
from dpbandits.privacy.streams import ChunkedDraws
from dpbandits.privacy.tree import tree_levels, tree_node_levels

__all__ = ["DPUCB"]  # the agent; the rest supports it


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


def wishart_row_bound(context_bound: float, reward_bound: float) -> float:
    """``L~ = sqrt(L^2 + B~^2)`` rounded up until both ``L~^2`` and its float square bound the
    exact ``L^2 + B~^2``, for both noise kinds: Sheffet's theorem needs every row ``[x; y]``
    (exact norm up to ``sqrt(L^2 + B~^2)``) within ``sqrt`` of the noise scale ``fl(L~^2)``,
    and the Gaussian node's sensitivity ``||vv^T||_F <= L^2 + B~^2`` must not exceed the
    ``fl(L~^2)`` its noise is scaled to. The rounded ``sqrt(fl(L^2) + fl(B~^2))`` misses
    both by up to 4.4e-16 relative (bounds in
    :data:`~dpbandits._validation.BOUND_RANGE`: no underflow, a few steps at most)."""
    need = Fraction(context_bound) ** 2 + Fraction(reward_bound) ** 2
    lt = math.sqrt(context_bound**2 + reward_bound**2)
    while Fraction(lt) ** 2 < need or Fraction(lt * lt) < need:
        lt = math.nextafter(lt, math.inf)
    return lt


def wishart_ledger(horizon, feature_dim, k, l_tilde):
    """The Wishart tree's ledger: ``Wishart_{D+1}(L~^2 I, k)`` nodes on rows of norm ``<= L~``,
    ``tree_levels(T)`` nodes per datum (the top-ups are data-independent)."""
    from dpbandits.privacy.accounting import WishartTreeDpEvent

    return WishartTreeDpEvent(dim=feature_dim + 1, degrees=int(k), scale=l_tilde**2,
                              row_bound_sq=l_tilde**2, nodes_per_datum=tree_levels(horizon))


def wishart_certified_epsilon(horizon, feature_dim, k, l_tilde, delta) -> float:
    """Epsilon at ``delta`` of :func:`wishart_ledger` (Sheffet 2015 Thm 4.1 per node,
    Kairouz-Oh-Viswanath optimal composition over the nodes; ``inf``: not certified)."""
    from dpbandits.privacy.accounting import epsilon_of

    return epsilon_of(wishart_ledger(horizon, feature_dim, k, l_tilde), delta)


def wishart_max_epsilon(horizon, feature_dim, delta, above) -> float:
    """About the largest claim ``epsilon < above`` whose :func:`wishart_degrees` certify it
    (bisection from a certified claim; 0 if none of ``above / 2^j``, j < 40, is)."""
    def ok(eps):
        k = wishart_degrees(horizon, feature_dim, eps, delta)
        return wishart_certified_epsilon(horizon, feature_dim, k, 1.0, delta) <= eps

    lo, hi = above / 2, above
    for _ in range(40):
        if ok(lo):
            break
        lo, hi = lo / 2, lo
    else:
        return 0.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


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


def dp_ucb_plan(epsilon: float, delta: float, *, noise: str, calibration: str, horizon: int,
                feature_dim: int, l_tilde: float) -> NoisePlan:
    """The noise plan of DP-UCB (module docstring) for validated ``epsilon`` (inf: no
    noise), ``delta``, ``noise`` (``"gaussian"``/``"wishart"``), ``calibration``
    (``"theorem"``; ``"accountant"`` for Gaussian nodes), ``feature_dim`` ``D`` and
    ``L~``. Raises when Wishart nodes cannot certify ``epsilon``."""
    T, D = horizon, feature_dim
    if not math.isfinite(epsilon):
        name = "node_sigma" if noise == "gaussian" else "degrees"
        return NoisePlan.non_private("DP-UCB with noise off (OFUL, constant reg)", {name: 0.0})
    sens = {"node": l_tilde**2}
    if noise == "gaussian":
        if calibration == "theorem":
            s = gaussian_sigma_theorem(T, epsilon, delta, l_tilde)
            basis = ("Claim 7 and Section 4.2 (per-node Gaussian, advanced composition over "
                     "m nodes), Shariff & Sheffet 2018")
        else:
            s = gaussian_sigma_accountant(T, epsilon, delta, l_tilde)
            basis = ("Claim 7 (JDP by post-processing), Shariff & Sheffet 2018; Gaussian tree "
                     "calibrated with the dp_accounting PLD accountant")
        from dpbandits.privacy.accounting import gaussian_event

        ledger = gaussian_event(s / (math.sqrt(tree_levels(T)) * l_tilde**2))
        return NoisePlan(calibration, {"node_sigma": s},
                         PrivacyGuarantee(epsilon, delta, notion="JDP", basis=basis), ledger,
                         sens)
    k = wishart_degrees(T, D, epsilon, delta)
    certified = wishart_certified_epsilon(T, D, k, l_tilde, delta)
    if not certified <= epsilon:
        best = wishart_max_epsilon(T, D, delta, epsilon)
        raise ValueError(
            f"noise='wishart' cannot certify epsilon={epsilon:g} at horizon={T}, "
            f"delta={delta:g}: its k={k} degrees of freedom per node certify only "
            f"epsilon={certified:.4g} (Sheffet 2015 Thm 4.1 per node, optimal composition "
            f"over {tree_levels(T)} nodes); the largest epsilon certified at this horizon "
            f"and delta is about {best:.4g}")
    basis = ("Claim 7 and Section 4.1 (Wishart, Sheffet 2015 Thm 4.1 per node), "
             "Shariff & Sheffet 2018; composed over the nodes of a datum by the optimal "
             "composition theorem (Kairouz, Oh & Viswanath 2015, Thm 3.3)")
    return NoisePlan(calibration, {"degrees": k},
                     PrivacyGuarantee(epsilon, delta, notion="JDP", basis=basis),
                     wishart_ledger(T, D, k, l_tilde), sens)


@register_agent("dp-ucb")
class DPUCB(PrivateAgent):
    """Jointly differentially private LinUCB of Shariff & Sheffet (2018), disjoint model.

    Parameters
    ----------
    noise : {"gaussian", "wishart"}, default "gaussian"
        Noise added to the tree's Gram-matrix nodes.
    calibration : {"theorem", "accountant"}, default "theorem"
        Noise from the paper's theorem, or the smallest noise the accountant certifies
        (Gaussian noise only).
    context_bound : float or None, default None
        Bound L > 0 on ``||x||_2``; None means ``sqrt(dim)``, exact for
        l_inf-normalized contexts.
    reward_bound : float, default 1.0
        Bound B~ > 0 on ``|y|``.
    noise_std : float, default 0.05
        Sub-Gaussian parameter sigma >= 0 of the reward noise (sets the confidence radius).
    theta_bound : float or None, default None
        Bound S > 0 on ``||vec theta||_2``; None means ``sqrt(n_arms)`` (each
        ``||theta_i||_1 <= 1``).
    alpha : float or None, default None
        Failure probability in (0, 1) of the confidence sets; None means ``1 / horizon``.
    reg : float, default 1.0
        Ridge regularizer > 0, used when ``epsilon = inf``.
    wishart_shift : bool, default True
        Shift the Wishart noise down (Proposition 9 of Shariff & Sheffet 2018).
    block_diagonal : bool, default False
        Keep only the per-arm diagonal blocks of the released matrix: post-processing,
        same guarantee and ledger (module docstring).
    bonus : float, default 1.0
        Scale >= 0 of the exploration bonus ``beta_t``: 1 is Proposition 4's radius; 0
        plays greedily on the private estimate (a diagnostic). Post-processing: the
        guarantee does not change.
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``: the numba kernels when numba is installed; ``"numpy"``: the vectorized
        numpy twin, same streams, results equal up to rounding.
    """
    supported_links = ("identity",)
    deterministic_policy = True  # argmax of the UCB indices, ties to the lowest index
    clip_counters = ("n_clipped_contexts_", "n_clipped_rewards_")

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, noise: str = "gaussian",
                 calibration: str = "theorem", context_bound: float | None = None,
                 reward_bound: float = 1.0, noise_std: float = 0.05,
                 theta_bound: float | None = None, alpha: float | None = None,
                 reg: float = 1.0, wishart_shift: bool = True, block_diagonal: bool = False,
                 bonus: float = 1.0, backend: str = "auto"):
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
        self.block_diagonal = block_diagonal
        self.bonus = check_real("bonus", bonus, low=0.0)
        self.backend = backend

        check_choice("noise", noise, {"gaussian", "wishart"})
        check_choice("backend", backend, BACKENDS)
        cal = check_calibration(calibration, ("theorem", "accountant"), "DPUCB")
        if noise == "wishart" and cal != "theorem":
            raise ValueError("calibration='accountant' is only available for noise='gaussian' "
                             "(the Wishart guarantee is Sheffet's theorem)")
        # in BOUND_RANGE, L~^2 and the node noise are normal floats (not subnormal)
        self._L = math.sqrt(dim) if context_bound is None else check_bound(
            "context_bound", context_bound)
        self._B = check_bound("reward_bound", reward_bound)
        self._sigma = check_positive("noise_std", noise_std)
        self._S = math.sqrt(n_arms) if theta_bound is None else check_positive(
            "theta_bound", theta_bound)
        self._alpha = 1.0 / horizon if alpha is None else check_real(
            "alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
        check_positive("reg", reg)
        if not isinstance(wishart_shift, bool):
            raise TypeError(f"wishart_shift must be a bool, got {wishart_shift!r}")
        if not isinstance(block_diagonal, bool):
            raise TypeError(f"block_diagonal must be a bool, got {block_diagonal!r}")
        self.feature_dim = dim * n_arms
        self._wishart = self._private and noise == "wishart"
        # both noise kinds scale by L~^2: the Gaussian node's sensitivity ||vv^T||_F can
        # reach the exact L^2 + B~^2, which the rounded sqrt(L^2 + B~^2) squared misses
        self.l_tilde = wishart_row_bound(self._L, self._B)
        self._plan = dp_ucb_plan(self._eps, self._delta, noise=noise, calibration=cal,
                                 horizon=horizon, feature_dim=self.feature_dim,
                                 l_tilde=self.l_tilde)
        self._radius_c = self._radius_constants()

    # -- the confidence radius's constants, from the plan -----------------------------------
    def _radius_constants(self) -> dict:
        """``m``, ``shift``, ``rho_min``, ``rho_max`` and ``gamma`` (Propositions 9 and 11)
        for the plan's noise (``reg`` without noise)."""
        T, D = self.horizon, self.feature_dim
        if not self._private:
            return {"m": tree_depth(T), "shift": self.reg, "rho_min": self.reg,
                    "rho_max": self.reg, "gamma": 0.0}
        if self.noise == "gaussian":
            return gaussian_bounds(T, D, self._plan.scales["node_sigma"], self._alpha)
        return wishart_bounds(T, D, int(self._plan.scales["degrees"]), self.l_tilde,
                              self._alpha, self.wishart_shift)

    @PlanView
    def constants(self) -> dict:
        """The radius constants and the plan's noise: ``node_sigma`` (Gaussian nodes, 0
        without noise) or ``k`` (Wishart degrees of freedom per node)."""
        if self._wishart:
            return {**self._radius_c, "k": int(self._plan.scales["degrees"])}
        return {**self._radius_c, "node_sigma": self._plan.scales.get("node_sigma", 0.0)}

    # -- state -----------------------------------------------------------------------------
    def _reset(self, n_reps, rng):
        D = self.feature_dim
        n = D + 1
        self._rng = rng
        self._ops = ucb_ops(self.backend, n_reps, n)
        self._M = np.zeros((n_reps, n, n))  # exact prefix Gram of [phi; y] (upper triangle)
        levels = tree_levels(self.horizon) if self._private else 0
        self._stack = np.zeros((levels, n_reps, n, n))  # partial noise sums (tree_node_levels)
        self._lev = -1  # stack level holding the current release's noise; -1: none
        wishart = (n_reps, n, n) if self._wishart else (1, 1, 1)
        self._topup = np.zeros(wishart)
        self._node = np.zeros(wishart)  # a Wishart node, before it enters the stack
        self._use_topup = False
        nb, bs = (self.n_arms, self.dim) if self.block_diagonal else (1, D)
        self._F = np.zeros((n_reps, nb, bs, bs))  # Cholesky factors of V_t's blocks (upper)
        self._u = np.zeros((n_reps, D))
        self._logdet = np.zeros(n_reps)
        self._ok = np.ones(n_reps, dtype=np.bool_)
        self._rhs = np.zeros((n_reps, nb, 1 + self.n_arms // nb, bs))
        self._counts = np.zeros((n_reps, 3), dtype=np.int64)  # clipped x, clipped y, not PD
        self._no_z = np.zeros((n_reps, 0))
        self._nodes = self._topups = None
        c = self.constants
        self._bounds = np.array([self._L, self._B])
        self._scales = np.array([c["node_sigma"], c["node_sigma"] * math.sqrt(2.0)]
                                if self._private and not self._wishart else [0.0, 0.0])
        if self._private:
            self._draw_streams(n_reps, rng)
        self._last_beta = None
        b = self.bonus  # beta_t is linear in (c_sig, c_s, c_g): the bonus scales all three
        self._beta_c = np.array([2 * math.log(2 / self._alpha), D * math.log(c["rho_min"]),
                                 b * self._sigma, b * self._S * math.sqrt(c["rho_max"]),
                                 b * c["gamma"]])
        if self._wishart:  # the empty release sums 0 nodes: all m*k degrees in the top-up
            self._next_topup()
        self._advance(np.zeros((n_reps, self.dim)), np.zeros(n_reps, dtype=np.int64),
                      np.zeros(n_reps), 0)

    @property
    def n_clipped_contexts_(self) -> np.ndarray:
        """Updates whose context was clipped to ``||x||_2 <= L``, per replication."""
        return self._counts[:, 0].copy()

    @property
    def n_clipped_rewards_(self) -> np.ndarray:
        """Updates whose reward was clipped to ``|y| <= B~``, per replication."""
        return self._counts[:, 1].copy()

    @property
    def n_indefinite_(self) -> np.ndarray:
        """Releases whose ``V_t`` was not positive definite (A4 failed; solved by LU)."""
        return self._counts[:, 2].copy()

    def _draw_streams(self, R, rng):
        """Chunked node (and top-up) variates from generators spawned for them (module
        docstring, "Random streams")."""
        n, T = self.feature_dim + 1, self.horizon
        P = n * (n + 1) // 2
        if not self._wishart:
            draw = partial(_normals, rng.spawn(1)[0], (R, P))
            if self._ops.backend == "numpy":  # the drawing thread also lays out the nodes
                self._nodes = ChunkedDraws(partial(_as_nodes, draw, n, self._scales), T,
                                           R * n * n, prefetch=True)
            else:
                self._nodes = ChunkedDraws(draw, T, R * P, prefetch=True)
            return
        k, m = self.constants["k"], self.constants["m"]
        g = rng.spawn(4)
        self._nodes = ChunkedDraws(partial(_wishart_draws, g[0], g[1], R, n, k, None), T,
                                   R * P, prefetch=True)
        self._topups = ChunkedDraws(partial(_wishart_draws, g[2], g[3], R, n, k, m), T + 1,
                                    R * P, prefetch=True)

    def _next_topup(self):
        """Top-up of the next release ``j``: ``Wishart(L~^2 I, (m - popcount(j)) k)``."""
        z, chi, degrees = self._topups.next()
        self._use_topup = bool(degrees > 0)
        if self._use_topup:
            self._ops["wishart_into"](self._topup, z, chi, self.l_tilde**2)

    def _advance(self, x, arms, y, t):
        """Add the record of round ``t`` (none at ``t = 0``), complete node ``t`` and factor
        the release ``V_t = release[:D, :D] + shift I``, ``u~_t = release[:D, D]``."""
        push = hi = -1
        z, node = self._no_z, self._node
        if self._private and t > 0:
            push, hi = tree_node_levels(t)
            if self._wishart:
                zn, chi = self._nodes.next()
                self._ops["wishart_into"](node, zn, chi, self.l_tilde**2)
                self._next_topup()
            elif self._ops.backend == "numpy":
                node = self._nodes.next()[0]
            else:
                z = self._nodes.next()[0]
            self._lev = push
        self._ops["ucb_update"](self._M, x, arms, y, self._bounds, self._counts, self._stack,
                                push, hi, z, self._scales, node, self._topup, self._use_topup,
                                float(self._radius_c["shift"]), self._F, self._u,
                                self._logdet, self._ok)

    @property
    def _release(self) -> np.ndarray:
        """The tree's current release ``M_t + N_t``, full symmetric ``(R, D+1, D+1)``."""
        rel = self._M + self._stack[self._lev] if self._lev >= 0 else self._M.copy()
        return _symmetric(rel)

    @property
    def _V(self) -> np.ndarray:
        """``V_t``: the release's ``D x D`` block plus the top-up and ``shift I`` (with
        ``block_diagonal``, its cross-arm blocks set to 0)."""
        D = self.feature_dim
        rel = self._release + (_symmetric(self._topup) if self._use_topup else 0.0)
        V = rel[:, :D, :D] + self._radius_c["shift"] * np.eye(D)
        if self.block_diagonal:
            V = V * np.kron(np.eye(self.n_arms), np.ones((self.dim, self.dim)))
        return V

    def beta(self, logdet) -> np.ndarray:
        """Proposition 4, data-dependent form, per replication."""
        c_a, c_b, c_sig, c_s, c_g = self._beta_c
        return c_sig * np.sqrt(np.maximum(c_a + logdet - c_b, 0.0)) + c_s + c_g

    def indices(self, contexts) -> np.ndarray:
        """UCB index of every arm, shape (R, K): ``<theta~, phi_i> + beta_t
        sqrt(phi_i^T V_t^-1 phi_i)``."""
        return self._indices(self._check_contexts(contexts))

    def _indices(self, x):
        R, K = x.shape[0], self.n_arms
        beta, idx = np.empty(R), np.empty((R, K))
        self._ops["ucb_act"](self._F, self._ok, self._u, self._logdet, x, self._L,
                             self._beta_c, self._rhs, beta, idx)
        if not self._ok.all():  # indefinite V_t: LU solve and log|det| (rare, see _advance)
            self._indefinite(x, beta, idx)
        self._last_beta = beta
        return idx

    def _contributions(self, contexts, arms, rewards):
        """Each datum's ``v v^T`` (``v = [phi; y]``, ``phi`` the clipped context in its arm's
        block, ``y`` the clipped reward), noiseless (:mod:`dpbandits.privacy.contributions`):
        Gaussian nodes: its upper triangle over the node noise (``s`` off the diagonal,
        ``s sqrt 2`` on it), sensitivity ``L~^2 / s`` per node (the ledger's); Wishart nodes:
        ``v`` itself, whose norm Sheffet's theorem needs ``<= L~``."""
        from dpbandits.agents._ucb_ops import _np_clip_rows
        from dpbandits.privacy.contributions import Contribution

        n, d, D = contexts.shape[0], self.dim, self.feature_dim
        x, _ = _np_clip_rows(contexts, self._L)  # the numpy twin of the kernels' clip
        v = np.zeros((n, D + 1))
        for k in range(self.n_arms):
            v[arms == k, k * d:(k + 1) * d] = x[arms == k]
        v[:, D] = np.clip(rewards, -self._B, self._B)
        if self._wishart:
            return [Contribution("node", v, self.l_tilde, bound="norm")]
        iu, ju = np.triu_indices(D + 1)
        s = self.constants["node_sigma"]
        terms = v[:, iu] * v[:, ju] / np.where(iu == ju, s * math.sqrt(2.0), s)
        return [Contribution("node", terms, self.l_tilde**2 / s)]

    def _indefinite(self, x, beta, idx):
        bad = np.flatnonzero(~self._ok)
        d, K = self.dim, self.n_arms
        from dpbandits.agents._ucb_ops import _np_clip_rows

        # the context clipped as the kernels clip it (a plain norm overflowed to inf for
        # entries near 1e308 and zeroed the row, and underflowed for entries below 1e-154)
        xb = _np_clip_rows(x[bad], self._L)[0]
        V = self._V[bad]
        rhs = np.zeros((bad.size, 1 + K, self.feature_dim))
        rhs[:, 0] = self._u[bad]
        for k in range(K):
            rhs[:, 1 + k, k * d:(k + 1) * d] = xb
        rhs = np.swapaxes(np.linalg.solve(V, np.swapaxes(rhs, 1, 2)), 1, 2)
        mean, quad = np.empty((bad.size, K)), np.empty((bad.size, K))
        _terms(rhs, xb, np.ones(bad.size, dtype=bool), mean, quad)
        beta[bad] = self.beta(np.linalg.slogdet(V)[1])
        idx[bad] = mean + beta[bad, None] * np.sqrt(np.maximum(quad, 0.0))

    def act(self, contexts):
        return np.argmax(self._indices(contexts), axis=1)

    def _batch_scores(self, x):
        """UCB indices (n, K) of n rows from the one-replication state (row by row on a copy:
        the index step keeps per-replication scratch)."""
        twin = copy.deepcopy(self)
        return np.vstack([twin._indices(x[i:i + 1]) for i in range(x.shape[0])])

    def _batch_act(self, x):
        return np.argmax(self._batch_scores(x), axis=1)

    def _update(self, contexts, arms, rewards):
        self._advance(contexts, arms, rewards, self.t_ + 1)


def _normals(g, shape, start, count):
    """Rounds ``start .. start + count - 1`` of ``shape`` standard normals each."""
    return (g.standard_normal((count, *shape)),)


def _as_nodes(draw, n, scales, start, count):
    """The symmetric Gaussian nodes of ``draw``'s packed normals as ``(count, R, n, n)``
    upper triangles (what the numba kernel computes from the packed variates, done ahead
    for the numpy twin)."""
    (z,) = draw(start, count)
    return (symmetric_nodes(z, n, scales),)


def _wishart_draws(g_z, g_chi, R, n, k, m, start, count):
    """Bartlett variates of ``Wishart_n(I, df)`` for ``count`` rounds and ``R`` replications:
    the strict upper triangle (``g_z``) and the ``n`` chi-squares ``chi2(df - n + 1 + i)``
    (``g_chi``). Nodes (``m = None``): ``df = k``; top-ups of releases ``j = start ..``:
    ``df = (m - popcount(j)) k``, returned as the third array (0: no top-up, and the
    variates drawn for it, with ``df = k``, are unused)."""
    base = np.arange(n) - n + 1
    z = g_z.standard_normal((count, R, n * (n - 1) // 2))
    if m is None:
        return z, g_chi.chisquare(np.broadcast_to(k + base, (count, R, n)))
    degrees = (m - np.array([j.bit_count() for j in range(start, start + count)])) * k
    df = np.where(degrees > 0, degrees, k)[:, None, None] + base
    return z, g_chi.chisquare(np.broadcast_to(df, (count, R, n))), degrees


def _symmetric(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrices whose upper triangles are those of ``upper`` (..., n, n)."""
    return np.triu(upper) + np.swapaxes(np.triu(upper, 1), -1, -2)

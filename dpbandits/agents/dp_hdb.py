"""DP-HDB: private high-dimensional GLM bandit (Han et al. 2022, "On Private Online Convex
Optimization", Algorithm 3).

Disjoint model: a shared context ``x_t``, one parameter ``theta_i`` per arm in the l_1 ball
of radius ``r``; reward ``zeta(x_t' theta_{a_t}) + noise``. One streaming private optimizer
per arm (DP-POFW by default, from :mod:`dpbandits.optim`), each batched over the ``R``
replications.

1. Forced sampling (lines 3-10): arm ``i = 0..K-1`` is pulled ``t0`` times in a fixed order
   (which reveals nothing); only arm ``i``'s optimizer advances, on the real samples. Its
   iterate after these ``t0`` steps is kept as the forced-sampling estimator ``theta_{t0,i}``.
2. For ``t > K t0`` (lines 11-15): pre-select
   ``K_t = {i : zeta(x' theta_{t0,i}) > max_j zeta(x' theta_{t0,j}) - h_sub/2}`` and play the
   greedy arm ``argmax_{i in K_t} zeta(x' theta_{t,i})`` of the current estimators (ties go
   to the lowest index).
3. Synthetic update (lines 16-17): the pulled arm's optimizer takes ``(x_t, r_t)``, every
   other arm's takes ``(0, zeta(0))`` — whose GLM gradient is exactly zero — so every arm
   advances once per round whatever was pulled. Each arm's optimizer therefore takes
   ``n_arm = t0 + T - K t0`` steps.

Privacy (Theorem 4.1, proof B.1). The released sequence is the estimators; actions are
post-processing of them and of each user's own context, hence JDP (billboard argument).
Changing user ``t`` can change the arm it is shown, so **two** arms' input streams differ at
round ``t`` (one real sample becomes synthetic and vice versa) — visible in B.1, whose ratio
involves ``theta_{j_i}`` and ``theta_{j_i'}``. A per-arm optimizer at (epsilon, delta), as the
paper writes, gives only (2 epsilon, 2 delta) by composition. To keep the stated guarantee
true, ``privacy_split="two-arms"`` (default) runs each arm's optimizer at
(epsilon/2, delta/2); the ledger composes two arms' events, and the accountant recomputes a
total epsilon <= the target (usually well below it, since the PLD composition is tighter than
the basic one). ``privacy_split="paper"`` reproduces the paper's per-arm (epsilon, delta) and
is reported as not certified. During forced sampling a user's data reaches only one arm.

Bounds (used to clip and to calibrate): ``context_bound`` on ``||x||_inf`` (the dual norm of
the l_1 geometry), ``reward_bound`` on ``|r|``; clipping is done and counted by the
optimizers (``n_clipped_``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from dpbandits._backends import compiled, kernels, use_parallel
from dpbandits._memo import IdentityMemo
from dpbandits._validation import (
    check_bound,
    check_choice,
    check_int,
    check_positive,
    check_real,
)
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.optim.streaming.dp_pofw import LINK_CODES, ArmSteps
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.plan import NoisePlan, check_calibration

__all__ = ["DPHDB"]  # the agent; the rest supports it

LINK_LOSS = {"identity": "squared", "logistic": "logistic"}
OPTIMIZERS = {"dp-pofw", "dp-tofw"}


def default_t0(dim: int, horizon: int, epsilon: float, n_arms: int = 2) -> int:
    """The authors' warm-up ``int(log(d T) log(T) / epsilon^2)`` (theory: O(log(dT/alpha) log T
    / epsilon^2), Theorem 4.2), at least 1 — capped at ``T // (2K)`` so forced sampling never
    takes more than half the horizon (at small epsilon the formula exceeds ``T`` itself, e.g.
    12086 rounds per arm at T = 1e4, d = 50, epsilon = 0.1)."""
    cap = max(1, horizon // (2 * n_arms))
    if math.isinf(epsilon):
        return 1
    return min(cap, max(1, int(math.log(dim * horizon) * math.log(horizon) / epsilon**2)))


def resolve_t0(t0: int | None, dim: int, horizon: int, epsilon: float, n_arms: int) -> int:
    """``t0`` as given (an int >= 1), or :func:`default_t0` when None."""
    return default_t0(dim, horizon, epsilon, n_arms) if t0 is None else check_int("t0", t0,
                                                                                    low=1)


def _zeta(z, link):
    if link == "identity":
        return z
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def preselected_greedy(x: np.ndarray, theta_fs: np.ndarray, theta: np.ndarray, h_sub: float,
                       zeta: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Lines 11-15 of Algorithm 3: among the arms whose forced-sampling value
    ``zeta(x' theta_fs_i)`` is within ``h_sub / 2`` of the best, the greedy arm of the current
    estimates ``theta`` (ties to the lowest index). ``x`` (R, d), estimates (R, K, d) ->
    arms (R,); ``zeta`` is the link (None: identity)."""
    fs = np.einsum("rd,rkd->rk", x, theta_fs)
    cur = np.einsum("rd,rkd->rk", x, theta)
    if zeta is not None:
        fs, cur = zeta(fs), zeta(cur)
    preselected = fs > fs.max(axis=1, keepdims=True) - h_sub / 2.0
    return np.argmax(np.where(preselected, cur, -np.inf), axis=1)


#: arm ledger -> the two arms' composition: the arms' ledgers are shared between agents of
#: the same sizes (cached by DP-POFW), so is the composition
_TWO_ARMS = IdentityMemo(16)


def _two_arms(arm: NoisePlan):
    from dpbandits.privacy.accounting import compose

    return _TWO_ARMS.get(arm.ledger, lambda ledger: compose([ledger, ledger]))


def dp_hdb_plan(epsilon: float, delta: float, privacy_split: str,
                arm: NoisePlan) -> NoisePlan:
    """DP-HDB's plan for validated ``epsilon`` (inf: no noise), ``delta``, ``privacy_split``
    and the plan ``arm`` of every arm's optimizer (module docstring): the arm's scales and
    calibration, the ledger of the two arms a changed user can reach (computed on first
    use)."""
    if not math.isfinite(epsilon):
        return NoisePlan.non_private("DP-HDB with epsilon=inf: exact LMO, no noise",
                                     dict(arm.scales))
    g = arm.guarantee
    # the arms' report-noisy-min is exact up to its grid (privacy.vertex_rnm); a changed user
    # reaches two arms, so each arm's additive slack counts twice
    grid = (f"; per arm's optimizer: {g.caveat} (two arms per changed user: twice that)"
            if g.caveat else "")
    if privacy_split == "paper":
        guarantee = PrivacyGuarantee(
            epsilon, delta, notion="JDP", certified=False,
            basis=f"Theorem 4.1 of Han et al. 2022, per-arm optimizer: {g.basis}",
            caveat="each arm's optimizer is calibrated to (epsilon, delta) as in the paper, "
                   "but a changed user can alter two arms' streams (proof B.1): only "
                   "(2 epsilon, 2 delta) follows" + grid)
    else:
        guarantee = PrivacyGuarantee(
            epsilon, delta, notion="JDP",
            basis=("Theorem 4.1 of Han et al. 2022 (JDP by post-processing of the per-arm "
                   "iterates), two arms per changed user, each arm's optimizer at (epsilon/2, "
                   f"delta/2): {g.basis}"), caveat=grid[2:])
    return NoisePlan(arm.calibration, arm.scales, guarantee, partial(_two_arms, arm),
                     arm.sensitivities)


@register_agent("dp-hdb")
class DPHDB(PrivateAgent):
    """Private high-dimensional bandit (Han et al. 2022, Algorithm 3), batched over replications.

    Parameters
    ----------
    t0 : int or None, default None
        Forced pulls per arm, >= 1; None uses :func:`default_t0` (the authors' warm-up,
        capped so that forced sampling takes at most half the horizon).
    h_sub : float, default 1.0
        Pre-selection gap h_sub > 0: an arm stays a candidate when its forced-sampling
        value is within ``h_sub / 2`` of the best.
    radius : float, default 1.0
        Radius r > 0 of the l_1 ball each arm's parameter is estimated in.
    link : {"identity", "logistic"}, default "identity"
        Inverse link zeta of the reward model.
    context_bound : float, default 1.0
        Bound > 0 on ``||x||_inf``; contexts are clipped to it (counted in ``n_clipped_``).
    reward_bound : float, default 1.0
        Bound > 0 on ``|r|``; rewards are clipped to it.
    calibration : {"theorem", "accountant"}, default "theorem"
        Noise from the paper's theorem, or the smallest noise the accountant certifies.
    optimizer : {"dp-pofw", "dp-tofw"}, default "dp-pofw"
        Streaming private optimizer run per arm.
    optimizer_params : dict or None, default None
        Extra keyword arguments of that optimizer, e.g. ``{"p": 1.5}`` for DP-TOFW,
        ``{"selection": "gumbel"}`` or ``{"lr_scale": 2.0}``.
    privacy_split : {"two-arms", "paper"}, default "two-arms"
        ``"two-arms"`` runs each arm's optimizer at (epsilon/2, delta/2) so that the
        stated guarantee holds; ``"paper"`` uses (epsilon, delta) per arm as the paper
        does and is reported as not certified (module docstring).
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``/``"numba"``: the greedy choice and DP-POFW's steps run as compiled
        kernels; ``"numpy"``: numpy only. The same numbers up to the rounding of dot
        products.
    """
    deterministic_policy = True  # forced arm, else pre-selected argmax (ties to the lowest)
    clip_counters = ("n_clipped_",)  # (R, K): each row reaches one arm's optimizer

    @property
    def supported_links(self) -> tuple[str, ...]:
        """The link the agent was built with (``link``)."""
        return (self.link,)

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, t0: int | None = None, h_sub: float = 1.0,
                 radius: float = 1.0, link: str = "identity", context_bound: float = 1.0,
                 reward_bound: float = 1.0, calibration: str = "theorem",
                 optimizer: str = "dp-pofw", optimizer_params: dict | None = None,
                 privacy_split: str = "two-arms", backend: str = "auto"):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.t0 = t0
        self.h_sub = h_sub
        self.radius = radius
        self.link = link
        self.context_bound = context_bound
        self.reward_bound = reward_bound
        self.calibration = calibration
        self.optimizer = optimizer
        self.optimizer_params = optimizer_params
        self.privacy_split = privacy_split
        self.backend = backend

        self._t0 = resolve_t0(t0, dim, horizon, self._eps, n_arms)
        if n_arms * self._t0 >= horizon:
            raise ValueError(f"t0 * n_arms must be < horizon: t0={self._t0}, n_arms={n_arms}, "
                             f"horizon={horizon} (forced sampling would fill the horizon)")
        check_real("h_sub", h_sub, low=0.0)
        # the arms' DP-POFW would refuse them too, but under its own names (x_bound, y_bound)
        bound = check_bound if self._private else check_positive
        bound("radius", radius)
        check_choice("link", link, set(LINK_LOSS))
        bound("context_bound", context_bound)
        bound("reward_bound", reward_bound)
        check_calibration(calibration, ("theorem", "accountant"), "DPHDB")
        check_choice("optimizer", optimizer, OPTIMIZERS)
        if optimizer_params is not None and not isinstance(optimizer_params, dict):
            raise TypeError(f"optimizer_params must be a dict, got {optimizer_params!r}")
        check_choice("privacy_split", privacy_split, {"two-arms", "paper"})
        self._compiled = compiled(backend)
        self.arm_horizon = self._t0 + horizon - n_arms * self._t0
        self._opts = [self._make_optimizer() for _ in range(n_arms)]

    def _make_plan(self) -> NoisePlan:
        """The plan of DP-HDB, from its arm optimizers' (all equal): their scales, the
        guarantee of the bandit (two arms per changed user, or the paper's split) and the
        composed ledger of the two arms a changed user can reach."""
        return dp_hdb_plan(self._eps, self._delta, self.privacy_split, self._opts[0].plan)

    def with_plan(self, plan: NoisePlan) -> DPHDB:
        """A copy whose arm optimizers draw with ``plan``'s scales (e.g. an audit's
        ``plan.scaled(factor, "kappa")``); see :meth:`Planned.with_plan`."""
        twin = super().with_plan(plan)
        arm = self._opts[0].plan
        if arm.is_private and twin.plan.altered:  # the plan adopted (a forged one flagged)
            arm = arm.replaced(**dict(twin.plan.scales))
        twin._opts = [opt.with_plan(arm) for opt in twin._opts]
        return twin

    # -- the per-arm optimizer ---------------------------------------------------------------
    def _arm_target(self) -> tuple[float, float]:
        if not self._private or self.privacy_split == "paper":
            return self._eps, self._delta
        return self._eps / 2.0, self._delta / 2.0

    def _make_optimizer(self):
        from dpbandits.optim import DPPOFW, DPTOFW

        eps, delta = self._arm_target()
        params = dict(self.optimizer_params or {})
        cls = DPPOFW if self.optimizer == "dp-pofw" else DPTOFW
        if self.optimizer == "dp-tofw":
            params.setdefault("p", 1.5)
        else:
            params.setdefault("backend", self.backend)
        return cls(LINK_LOSS[self.link], dim=self.dim, radius=self.radius,
                   horizon=self.arm_horizon, epsilon=eps, delta=delta if self._private else 0.0,
                   calibration=self.calibration, x_bound=self.context_bound,
                   y_bound=self.reward_bound, **params)

    @property
    def forced_steps(self) -> int:
        """Rounds of forced sampling, ``K t0``."""
        return self.n_arms * self._t0

    @property
    def arm_optimizers(self) -> list:
        """The per-arm streaming optimizers (read-only use: e.g. their noise scales)."""
        return list(self._opts)

    # -- the bandit loop -------------------------------------------------------------------
    def _reset(self, n_reps, rng):
        seeds = rng.spawn(self.n_arms)
        for opt, g in zip(self._opts, seeds, strict=True):
            opt.reset(n_reps, g)
        self._theta = np.zeros((n_reps, self.n_arms, self.dim))
        self._theta_fs = np.zeros((n_reps, self.n_arms, self.dim))
        self._zeta0 = float(_zeta(np.float64(0.0), self.link))
        self._arms = np.zeros(n_reps, dtype=np.int64)
        self._arm_steps: ArmSteps | None = None
        self._fs = np.zeros((n_reps, self.n_arms))
        self._cur = np.zeros((n_reps, self.n_arms))
        self._greedy = None

    @property
    def estimates(self) -> np.ndarray:
        """Current all-sample estimators ``theta_{t,i}``, shape (R, K, d) (a copy)."""
        return self._theta.copy()

    @property
    def forced_sampling_estimates(self) -> np.ndarray:
        """Forced-sampling estimators ``theta_{t0,i}``, shape (R, K, d) (a copy)."""
        return self._theta_fs.copy()

    @property
    def n_clipped_(self) -> np.ndarray:
        """Clipped samples per replication and arm, shape (R, K)."""
        return np.stack([opt.n_clipped for opt in self._opts], axis=1)

    def _contributions(self, contexts, arms, rewards):
        """Each user's increment to every arm's optimizer, noiseless
        (:mod:`dpbandits.privacy.contributions`): its sample ``(x, r)`` for its arm, the
        synthetic ``(0, zeta(0))`` for the others (replication 0's iterates; each arm's
        optimizer declares its own sensitivity)."""
        out = []
        for k, opt in enumerate(self._opts):
            mine = (arms == k)[:, None]
            x = np.where(mine, contexts, 0.0)
            r = np.where(mine[:, 0], rewards, self._zeta0)
            out += [c.__class__(f"arm {k} {c.release}", c.values, c.sensitivity, c.ord)
                    for c in opt._contributions(x, r)]
        return out

    def act(self, contexts: np.ndarray) -> np.ndarray:
        if self.t_ < self.forced_steps:
            return np.full(contexts.shape[0], self.t_ // self._t0, dtype=np.int64)
        if self._compiled:
            if self._greedy is None:  # looked up once per reset
                self._greedy = kernels("agents._hdb_kernels").KERNELS.get(
                    "greedy", use_parallel(self._arms.size, 4.0 * self.n_arms * self.dim))
            self._greedy(contexts, self._theta_fs, self._theta, self.h_sub / 2.0,
                         LINK_CODES[self.link], self._fs, self._cur, self._arms)
            return self._arms.copy()
        return preselected_greedy(contexts, self._theta_fs, self._theta, self.h_sub,
                                  lambda z: _zeta(z, self.link))

    def _batch_act(self, x):
        """``act`` for n rows at once: the same greedy step on read-only views of replication
        0's estimates (a forced round gives its arm to every row)."""
        n = x.shape[0]
        if self.t_ < self.forced_steps:
            return np.full(n, self.t_ // self._t0, dtype=np.int64)
        theta_fs, theta = (np.broadcast_to(a[:1], (n, *a.shape[1:]))
                           for a in (self._theta_fs, self._theta))
        if not self._compiled:
            return preselected_greedy(x, theta_fs, theta, self.h_sub,
                                      lambda z: _zeta(z, self.link))
        greedy = kernels("agents._hdb_kernels").KERNELS.get(
            "greedy", use_parallel(n, 4.0 * self.n_arms * self.dim))
        arms = np.empty(n, dtype=self._arms.dtype)
        greedy(x, theta_fs, theta, self.h_sub / 2.0, LINK_CODES[self.link],
               np.empty((n, self.n_arms)), np.empty((n, self.n_arms)), arms)
        return arms.astype(np.int64, copy=False)

    def _forced_error(self, t: int, got) -> ValueError:
        """The refusal of arms ``got`` at 0-based round ``t`` of forced sampling."""
        return ValueError(
            f"{type(self).__name__} ({self.name or 'dp-hdb'}): round {t + 1} is in "
            f"forced sampling (rounds 1..{self.forced_steps}: t0={self._t0} rounds of "
            f"arm 0, then of arm 1, ...), so it must pull arm {t // self._t0}, got arms "
            f"{np.unique(got).tolist()}. To fit a log from another policy, put "
            f"{self._t0} rows of each arm first, in arm order, or choose t0, or use "
            "an agent without forced sampling (e.g. dp-ucb)")

    def _check_logged_arms(self, where, arms, seen):
        """A logged row in forced sampling must carry that round's arm (checked for the whole
        log before ``fit`` learns anything)."""
        rounds = seen + np.arange(arms.shape[0])
        bad = np.flatnonzero((rounds < self.forced_steps) & (arms != rounds // self._t0))
        if bad.size:
            raise self._forced_error(int(rounds[bad[0]]), arms[bad[0]:bad[0] + 1])

    def _update(self, contexts, arms, rewards):
        t = self.t_
        if t < self.forced_steps:
            arm = t // self._t0
            if np.any(arms != arm):
                raise self._forced_error(t, arms)
            self._theta[:, arm] = self._opts[arm].step(contexts, rewards)
            if (t + 1) % self._t0 == 0:
                self._theta_fs[:, arm] = self._theta[:, arm]
            return
        if self._arm_steps is None:  # every arm's forced sampling is over: step them together
            self._arm_steps = (ArmSteps(self._opts) if self.optimizer == "dp-pofw" else None)
        if self._arm_steps is not None:
            self._arm_steps.step(contexts, rewards, arms, self._zeta0, self._theta)
            return
        for k, opt in enumerate(self._opts):
            opt._step_rows(contexts, rewards, arms == k, self._zeta0)
            self._theta[:, k] = opt._current()

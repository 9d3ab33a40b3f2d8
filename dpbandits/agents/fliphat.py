"""FLIPHAT: ForgetfuL Iterative Private HArd Thresholding (Chakraborty, Roy & Basu,
AISTATS 2025, arXiv 2405.14038), batched over replications.

Algorithm
---------
Rounds ``tau = 0, 1, ...`` (0-based) are cut into doubling episodes: episode ``l`` covers
``tau = 2^l - 1 .. 2^{l+1} - 2`` (lengths 1, 2, 4, ...; :func:`episode_schedule`). During
episode ``l`` the agent plays greedily on the fixed estimate ``theta_l`` (``theta_0 = 0``):
``a = argmax_k <phi_k, theta_l>``, ties broken uniformly at random (so the all-zero start
is the uniform policy, not "always arm 0"). At the end of the episode it runs N-IHT
(:mod:`dpbandits.agents._niht`) on that episode's rounds only, publishes ``theta_{l+1}`` and
**forgets** them: every round enters exactly one N-IHT call. N-IHT starts at ``0`` and runs
``M_l >= 1`` iterations of gradient step, private top-``s`` peeling
(:func:`dpbandits.privacy.peeling.peel`) and l_1 projection; ``M_l = n_iter`` if given,
else ``max(1, ceil(iter_scale * ln(1 + n C^2)))`` (the authors' schedule with ceiling instead
of floor: their floor gives ``M = 0`` and a silently published zero estimate for every
episode of up to 32 rounds, FLIPHAT note 5d).

Feature models and the matrix interface
---------------------------------------
``feature_model="disjoint"`` (default; the Figure 5.1 instance): contexts ``x`` (R, d) are
shared by all arms and arm ``k`` has its own ``theta_k``; FLIPHAT runs on the block
embedding ``phi_k = e_k (x) x`` in ``R^{Kd}`` (``D = K d``). The l_1 projection is per block
(``||theta_k||_1 <= C``, the natural constraint of the disjoint model) and the Gram
statistics are kept block diagonal.
``feature_model="per-arm"`` (one shared ``beta`` in ``R^p``, one feature vector per arm, the
authors' simulation model): the agent's ``dim`` is ``K p`` and a context row is the ``K x p``
feature matrix flattened row-major, i.e. ``contexts = features.reshape(R, K * p)`` for
``features`` of shape (R, K, p) (``D = p``). :meth:`FLIPHAT.features` returns the (R, K, D)
feature tensor of either model and :meth:`FLIPHAT.scores_from_features` the scores
``<phi_k, theta>`` for any such tensor.

Sensitivity (derived in :mod:`dpbandits.agents._niht`)
------------------------------------------------------
Feature rows are clipped to ``||phi||_inf <= x_max`` (``context_bound``) and responses
truncated to ``[-R, R]`` (``reward_bound``), both counted (``n_clipped_contexts_``,
``n_truncated_rewards_``). For the step ``v = theta - (eta/n) sum_i phi_i (phi_i'theta - y~_i)``
a replace-one change moves every coordinate by at most

    lambda(theta) = 2 eta x_max (x_max nu(theta) + R) / n,

``nu(theta) = max_k ||theta_k||_1`` (disjoint) or ``||theta||_1`` (per-arm); the bound is
attained. The Laplace scale of the ``m``-th peeling call is ``c_M * lambda(theta^m)`` where
``c_M`` is the noise multiplier of an episode with ``M`` iterations.

Privacy
-------
Per episode, the ``M`` peeling calls are calibrated to ``(epsilon, delta)`` together:
``calibration="theorem"`` — the peeling lemma of Cai, Wang & Zhang (2021, Lemma 3.3) at
``(epsilon/M, delta/M)`` per call (checked by the PLD accountant), basic composition over
the ``M`` calls; ``"accountant"`` — the smallest multiplier the PLD accountant certifies
for the ``M``-fold composition. Across episodes the data sets are disjoint (forgetting) and
each episode's mechanism only post-processes earlier *published* estimates, so the sequence
of estimates is ``(epsilon, delta)``-DP in any single round's (context, reward) by parallel
composition (no ``log T`` factor). Each action is a function of its own round's context and
the published estimate only, hence the agent is ``(epsilon, delta)``-JDP (billboard lemma).
``ledger`` is the event of the episode with the largest epsilon (parallel composition is a
maximum, which dp_accounting has no event for); :meth:`FLIPHAT.episode_ledger` gives any one.
The plan (:func:`fliphat_plan`) has one scale per number of IHT iterations ``M`` of a used
episode, ``"M=<M>"``: the noise multiplier ``c_M`` (Laplace scale / sensitivity,
dimensionless).

``calibration="authors"`` reproduces the published code's noise, ``(eta/2n)(x_max C + R)``
in place of ``lambda`` (4 ``x_max`` times too small), with the theorem's closed form: it is
reported as **not certified**; its ledger states what that noise really gives (multiplier
``c (x_max C + R) / (4 x_max R)`` at ``theta^0 = 0`` and ``c / (4 x_max)`` after).
The other defects of the published code are fixed in every mode: contexts are clipped (5b),
every peeling call draws fresh noise from the agent's generator (5c), ``M >= 1`` (5d), and
the truncation level scales with ``noise_std`` (5e).

Diagnostics: ``episode_log_`` records, per N-IHT call, the episode, ``M``, the noise
multiplier, the mean Laplace scale of the first peeling call and ``noise_to_signal`` =
``b_0 / max_j |v_j|`` of the first gradient step (FLIPHAT note, test 11). The latter is
computed from the raw data: it is a researcher's diagnostic, **not** covered by the privacy
guarantee, and never used by the agent.

Step size: the authors' ``eta_l = eta_0 / n`` on the loss ``sum_i (.)^2`` corresponds to
``step = 2 eta_0`` here.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from dpbandits._backends import compiled, kernels
from dpbandits._validation import (
    check_array,
    check_bound,
    check_choice,
    check_int,
    check_positive,
    check_real,
)
from dpbandits.agents import _niht
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.peeling import (
    peeling_event,
    peeling_noise_multiplier,
    peeling_scale_theorem,
)
from dpbandits.privacy.plan import NoisePlan, check_calibration
from dpbandits.privacy.streams import ChunkedDraws

__all__ = ["FLIPHAT"]  # the agent; the rest supports it

FEATURE_MODELS = ("disjoint", "per-arm")
CALIBRATIONS = ("theorem", "accountant", "authors")


def _tie_break_numpy(scores: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`dpbandits.agents._fliphat_kernels.tie_break`."""
    top = scores.max(axis=1, keepdims=True)
    return np.argmax(np.where(scores >= top, u, -1.0), axis=1).astype(np.int64)


def _uniforms(g, shape, start, count):
    """Rounds ``start .. start + count - 1`` of ``shape`` uniforms each (the tie-breaks)."""
    return (g.random((count, *shape)),)


def episode_schedule(horizon: int) -> list[tuple[int, int]]:
    """``(start, length)`` of every episode that starts before ``horizon`` (0-based rounds).

    Episode ``l`` starts at ``2^l - 1`` and has length ``2^l``; the last may be cut short by
    the horizon (its estimate would never be used, so it is never computed).
    """
    horizon = check_int("horizon", horizon, low=1)
    out, level = [], 0
    while (start := 2**level - 1) < horizon:
        out.append((start, 2**level))
        level += 1
    return out


def _episode_event(c: float, sparsity: int, m: int, calibration: str, x_max: float,
                   theta_bound: float, truncation: float):
    """dp_accounting event of one N-IHT call: ``m`` peeling calls of multiplier ``c``
    relative to the worst-case sensitivity (``"authors"``: the multipliers its smaller noise
    really has, module docstring)."""
    if calibration != "authors":
        return peeling_event(c, sparsity, count=m)
    from dpbandits.privacy.accounting import compose

    r = truncation
    first = c * (x_max * theta_bound + r) / (4.0 * x_max * r)
    events = [peeling_event(first, sparsity)]
    if m > 1:
        events.append(peeling_event(c / (4.0 * x_max), sparsity, count=m - 1))
    return events[0] if m == 1 else compose(events)


def _worst_event(events: tuple, delta: float):
    """The event of ``events`` with the largest epsilon at ``delta`` (parallel
    composition)."""
    if len(events) == 1:
        return events[0]
    from dpbandits.privacy.accounting import epsilon_of

    return events[int(np.argmax([epsilon_of(e, delta) for e in events]))]


def fliphat_multiplier(epsilon: float, delta: float, calibration: str, sparsity: int,
                       m: int) -> float:
    """``c_M`` of an episode with ``m`` IHT iterations (0 without noise). ``calibration``:
    ``"theorem"``, ``"accountant"`` or ``"authors"``, or an alias of the vocabulary
    (:func:`dpbandits.privacy.plan.check_calibration`)."""
    calibration = check_calibration(calibration, CALIBRATIONS, "FLIPHAT")
    if not math.isfinite(epsilon):
        return 0.0
    if calibration == "authors":
        return peeling_scale_theorem(epsilon / m, delta / m, sparsity, 1.0)
    return peeling_noise_multiplier(epsilon, delta, sparsity, count=m, calibration=calibration)


def fliphat_plan(epsilon: float, delta: float, *, calibration: str, sparsity: int,
                 episodes: list[tuple[int, float]], x_max: float,
                 theta_bound: float) -> NoisePlan:
    """The noise plan of FLIPHAT (module docstring) for validated parameters and the
    ``(M, R)`` (IHT iterations, truncation level) of every used episode. Raises early where
    the theorem's closed form does not certify the target."""
    calibration = check_calibration(calibration, CALIBRATIONS, "FLIPHAT")
    ms = sorted({m for m, _ in episodes})
    if not math.isfinite(epsilon):
        return NoisePlan.non_private("FLIPHAT with noise off (exact IHT)",
                                     {f"M={m}": 0.0 for m in ms})
    scales = {f"M={m}": fliphat_multiplier(epsilon, delta, calibration, sparsity, m)
              for m in ms}
    keys: dict = {}
    for m, r in episodes:
        keys.setdefault((m, r if calibration == "authors" else None), r)
    events = tuple(_episode_event(scales[f"M={m}"], sparsity, m, calibration, x_max,
                                  theta_bound, r) for (m, _), r in keys.items())
    ledger = partial(_worst_event, events, delta)
    common = ("; parallel composition across episodes (forgetting: each round enters one "
              "N-IHT call); billboard lemma for the actions (FLIPHAT, Chakraborty, Roy & "
              "Basu 2025); noise scaled to the worst-case replace-one l_inf sensitivity "
              "2 eta x_max (x_max nu(theta) + R)/n with contexts clipped and rewards "
              "truncated")
    if calibration == "theorem":
        basis = ("peeling lemma (Cai, Wang & Zhang 2021, Lemma 3.3) at (eps/M, delta/M) "
                 "per call, checked by the PLD accountant; basic composition over the M "
                 "IHT iterations" + common)
    elif calibration == "accountant":
        basis = ("dp_accounting PLD accountant over the M IHT iterations of an episode "
                 "(s report-noisy-max + s Laplace releases per call)" + common)
    else:
        return NoisePlan(calibration, scales, PrivacyGuarantee(
            epsilon, delta, notion="JDP", certified=False,
            basis="authors' calibration (eta B, theorem closed form)",
            caveat=("peeling noise scaled to (eta/2n)(x_max C + R), 4 x_max below the "
                    "worst-case replace-one sensitivity of the gradient step "
                    "(FLIPHAT note 5a); the ledger states the true epsilon")), ledger)
    return NoisePlan(calibration, scales,
                     PrivacyGuarantee(epsilon, delta, notion="JDP", basis=basis), ledger)


@register_agent("fliphat")
class FLIPHAT(PrivateAgent):
    """Jointly differentially private sparse linear bandit (module docstring).

    Parameters
    ----------
    sparsity : int or None, default None
        Number s >= 1 of coordinates IHT keeps; None means ``min(10, D)``.
    feature_model : {"disjoint", "per-arm"}, default "disjoint"
        ``"disjoint"``: block embedding of the shared context, D = K dim; ``"per-arm"``:
        contexts are flattened (K, D) feature matrices, D = dim / K.
    calibration : {"theorem", "accountant", "authors"}, default "theorem"
        Noise from the paper's theorem, the smallest the accountant certifies, or the
        authors' code's (not certified).
    step : float, default 1.0
        Gradient step eta > 0 (the authors' ``2 eta_0``).
    n_iter : int or None, default None
        Fixed number of IHT iterations per episode, >= 1; None uses the schedule
        ``max(1, ceil(iter_scale ln(1 + n C^2)))``.
    iter_scale : float, default 0.16
        M_0 > 0 of that schedule (the authors' experiments).
    context_bound : float, default 1.0
        x_max > 0, bound on ``||phi||_inf`` enforced by clipping (exact for the
        l_inf-normalized contexts of the Figure 5.1 instance).
    theta_bound : float, default 1.0
        C > 0, radius of the l_1 projection (per arm in the disjoint model); inf: no
        projection.
    reward_bound : float or None, default None
        R > 0, truncation level of the responses; None uses
        ``x_max C + noise_std sqrt(2 ln(1 + n))`` for an episode of ``n`` rounds.
    noise_std : float, default 0.05
        Reward noise level >= 0 used by that default.
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``/``"numba"``: per-round bookkeeping in numba kernels; ``"numpy"``:
        numpy only. Bit-identical results.
    """
    supported_links = ("identity",)
    clip_counters = ("n_clipped_contexts_", "n_truncated_rewards_")

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, sparsity: int | None = None,
                 feature_model: str = "disjoint", calibration: str = "theorem",
                 step: float = 1.0, n_iter: int | None = None, iter_scale: float = 0.16,
                 context_bound: float = 1.0, theta_bound: float = 1.0,
                 reward_bound: float | None = None, noise_std: float = 0.05,
                 backend: str = "auto"):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.sparsity = sparsity
        self.feature_model = feature_model
        self.calibration = calibration
        self.step = step
        self.n_iter = n_iter
        self.iter_scale = iter_scale
        self.context_bound = context_bound
        self.theta_bound = theta_bound
        self.reward_bound = reward_bound
        self.noise_std = noise_std
        self.backend = backend

        check_choice("feature_model", feature_model, set(FEATURE_MODELS))
        self._compiled = compiled(backend)
        cal = check_calibration(calibration, CALIBRATIONS, "FLIPHAT")
        if feature_model == "disjoint":
            self.feature_dim, self._blocks = n_arms * dim, n_arms
        else:
            if dim % n_arms:
                raise ValueError(f"feature_model='per-arm' needs dim = n_arms * p (contexts are "
                                 f"flattened (n_arms, p) feature matrices); got dim={dim} and "
                                 f"n_arms={n_arms}")
            self.feature_dim, self._blocks = dim // n_arms, None
        D = self.feature_dim
        self._s = min(10, D) if sparsity is None else check_int("sparsity", sparsity, low=1,
                                                                  high=D)
        self._step = check_positive("step", step)
        if n_iter is not None:
            check_int("n_iter", n_iter, low=1)
        self._iter_scale = check_positive("iter_scale", iter_scale)
        self._x_max = check_bound("context_bound", context_bound)
        self._C = check_positive("theta_bound", theta_bound, allow_inf=True)
        if math.isfinite(self._C):
            check_bound("theta_bound", self._C)
        if n_iter is None and math.isinf(self._C):
            raise ValueError("theta_bound=inf needs a fixed n_iter (the iteration schedule "
                             "uses ln(1 + n C^2))")
        if reward_bound is not None:
            check_bound("reward_bound", reward_bound)
        elif math.isinf(self._C):
            raise ValueError("theta_bound=inf needs an explicit reward_bound")
        self._noise_std = check_real("noise_std", noise_std, low=0.0)
        if cal == "authors" and not math.isfinite(self._C):
            raise ValueError("calibration='authors' needs a finite theta_bound")
        self._calibration = cal
        # calibrate every episode that will be used (raises early if the theorem's closed
        # form does not certify the target)
        self._plan = fliphat_plan(
            self._eps, self._delta, calibration=cal, sparsity=self._s,
            episodes=[(self.iterations(n), self.truncation(n))
                      for _, n in self.used_episodes() or [(0, 1)]],
            x_max=self._x_max, theta_bound=self._C)

    # -- schedule and calibration ----------------------------------------------------------
    def used_episodes(self) -> list[tuple[int, int]]:
        """``(start, length)`` of the episodes whose estimate is computed (some round after
        them is played)."""
        return [(a, n) for a, n in episode_schedule(self.horizon) if a + n < self.horizon]

    def iterations(self, n: int) -> int:
        """``M`` for an episode of ``n`` rounds (always >= 1)."""
        if self.n_iter is not None:
            return int(self.n_iter)
        return max(1, math.ceil(self._iter_scale * math.log1p(n * self._C**2)))

    def truncation(self, n: int) -> float:
        """Response truncation level ``R`` for an episode of ``n`` rounds."""
        if self.reward_bound is not None:
            return float(self.reward_bound)
        return self._x_max * self._C + self._noise_std * math.sqrt(2.0 * math.log1p(n))

    def noise_multiplier(self, n: int) -> float:
        """``c_M``: Laplace scale / sensitivity of every peeling call of an ``n``-round
        episode (the plan's, for the episodes it holds)."""
        m = self.iterations(n)
        scales = self._plan.scales
        if f"M={m}" in scales:
            return scales[f"M={m}"]
        return fliphat_multiplier(self._eps, self._delta, self._calibration, self._s, m)

    def sensitivity(self, theta: np.ndarray, n: int) -> np.ndarray:
        """Worst-case replace-one l_inf sensitivity ``lambda(theta)`` of the gradient step of
        an ``n``-round episode at iterate ``theta`` (R, D) -> (R,)."""
        return _niht.sensitivity(theta, n, step=self._step, x_max=self._x_max,
                                 r_max=self.truncation(n), blocks=self._blocks)

    @property
    def budget_split(self) -> list[dict]:
        """Per used episode: rounds, IHT iterations ``M``, the per-iteration budget and the
        noise multiplier. ``"theorem"``/``"authors"``: ``(epsilon/M, delta/M)`` per call (basic
        composition); ``"accountant"``: the per-call epsilon at ``delta/M`` of the calibrated
        multiplier (the episode is certified jointly by the PLD accountant)."""
        rows = []
        for idx, (start, n) in enumerate(episode_schedule(self.horizon)):
            if start + n >= self.horizon:
                break
            m = self.iterations(n)
            c = self.noise_multiplier(n)
            row = {"episode": idx, "start": start, "length": n, "n_iter": m,
                   "delta_per_iteration": self._delta / m, "noise_multiplier": c,
                   "truncation": self.truncation(n)}
            if not self._private:
                row["epsilon_per_iteration"] = math.inf
            elif self._calibration == "accountant":
                from dpbandits.privacy.peeling import peeling_epsilon

                row["epsilon_per_iteration"] = peeling_epsilon(c, self._s, self._delta / m)
            else:
                row["epsilon_per_iteration"] = self._eps / m
            rows.append(row)
        return rows

    def episode_ledger(self, n: int):
        """dp_accounting event of the N-IHT call of one ``n``-round episode (its ``M``
        peeling calls, each relative to the worst-case sensitivity)."""
        if not self._private:
            return None
        return _episode_event(self.noise_multiplier(n), self._s, self.iterations(n),
                              self._calibration, self._x_max, self._C, self.truncation(n))

    # -- features ----------------------------------------------------------------------------
    def features(self, contexts) -> np.ndarray:
        """The (R, K, D) feature tensor of contexts (R, dim): the block embedding in the
        disjoint model, the unflattened feature matrices in the per-arm model."""
        x = self._check_contexts(contexts)
        R, K = x.shape[0], self.n_arms
        if self._blocks is None:
            return x.reshape(R, K, self.feature_dim).copy()
        phi = np.zeros((R, K, K, self.dim))
        phi[:, np.arange(K), np.arange(K)] = x[:, None, :]
        return phi.reshape(R, K, self.feature_dim)

    def scores_from_features(self, features) -> np.ndarray:
        """``<phi_k, theta>`` for a feature tensor (R, K, D) -> (R, K)."""
        r = self._require_reset()
        f = check_array("features", features, shape=(r, self.n_arms, self.feature_dim))
        return np.einsum("rkd,rd->rk", f, self._theta)

    def scores(self, contexts) -> np.ndarray:
        """Greedy scores of every arm, (R, dim) -> (R, K)."""
        return self._scores(self._check_contexts(contexts))

    def _scores(self, x):
        R, K = x.shape[0], self.n_arms
        if self._blocks is None:
            return np.einsum("rkd,rd->rk", x.reshape(R, K, self.feature_dim), self._theta)
        return np.einsum("rkd,rd->rk", self._theta.reshape(R, K, self.dim), x)

    # -- state -------------------------------------------------------------------------------
    def _reset(self, n_reps, rng):
        self._noise_rng, self._tie_rng = rng.spawn(2)
        # one uniform per arm per round for the ties, drawn a chunk of rounds at a time
        self._ties = ChunkedDraws(partial(_uniforms, self._tie_rng, (n_reps, self.n_arms)),
                                  self.horizon, n_reps * self.n_arms)
        self._theta = np.zeros((n_reps, self.feature_dim))
        self._episode = 0
        self._clipped_done = np.zeros(n_reps, dtype=np.int64)
        self._truncated_done = np.zeros(n_reps, dtype=np.int64)
        self.episode_log_: list[dict] = []
        self._new_episode()

    def _new_episode(self):
        start, n = 2**self._episode - 1, 2**self._episode
        self._ep_start, self._ep_len = start, n
        self._stats = _niht.EpisodeStats(self.n_reps_, self.feature_dim, self._blocks,
                                         self._x_max, self.truncation(n), self._compiled)

    @property
    def theta_(self) -> np.ndarray:
        """The published estimate in use, (R, D) (block ``k`` = arm ``k`` when disjoint)."""
        return self._theta.copy()

    @property
    def n_clipped_contexts_(self) -> np.ndarray:
        """Rounds whose feature row was clipped to ``x_max``, per replication."""
        return self._clipped_done + self._stats.n_clipped

    @property
    def n_truncated_rewards_(self) -> np.ndarray:
        """Rounds whose reward was truncated to ``[-R, R]``, per replication."""
        return self._truncated_done + self._stats.n_truncated

    def act(self, contexts):
        scores = self._scores(contexts)
        u = self._ties.next()[0]
        if not self._compiled:
            return _tie_break_numpy(scores, u)
        arms = np.empty(scores.shape[0], dtype=np.int64)
        kernels("agents._fliphat_kernels").tie_break(scores, u, arms)
        return arms

    def _add(self, stats: _niht.EpisodeStats, contexts, arms, rewards) -> None:
        """One round's rows into ``stats`` (clipped and truncated there)."""
        if self._blocks is None:
            R = contexts.shape[0]
            chosen = contexts.reshape(R, self.n_arms, self.feature_dim)[np.arange(R), arms]
            stats.add(chosen, rewards)
        else:
            stats.add(contexts, rewards, arms)

    def _update(self, contexts, arms, rewards):
        self._add(self._stats, contexts, arms, rewards)
        tau = self.t_
        if tau == self._ep_start + self._ep_len - 1:
            if tau + 1 < self.horizon:
                self._fit()
            self._clipped_done += self._stats.n_clipped
            self._truncated_done += self._stats.n_truncated
            self._episode += 1
            self._new_episode()

    def _contributions(self, contexts, arms, rewards):
        """Each user's term of the current episode's N-IHT gradient step, noiseless
        (:mod:`dpbandits.privacy.contributions`): ``-(eta/n)(phi phi^T theta - phi y~)``,
        ``phi`` and ``y~`` clipped and truncated by the episode's own statistics code (one
        user per replication of a fresh :class:`~dpbandits.agents._niht.EpisodeStats`,
        compiled when the agent is). Peeling is calibrated to the l_inf sensitivity
        ``lambda(theta)`` of that step, which depends on the iterate: two releases, at
        ``theta = 0`` (every N-IHT call's first step) and at replication 0's published
        estimate (in the constraint set, as every later iterate)."""
        from dpbandits.privacy.contributions import Contribution

        n, users = self._ep_len, contexts.shape[0]
        stats = _niht.EpisodeStats(users, self.feature_dim, self._blocks, self._x_max,
                                   self.truncation(n), self._compiled)
        self._add(stats, contexts, arms, rewards)
        out = []
        for name, theta in (("gradient step at 0", np.zeros_like(self._theta[:1])),
                            ("gradient step at the estimate", self._theta[:1])):
            th = np.broadcast_to(theta, (users, self.feature_dim))
            terms = -(self._step / n) * (stats.matvec(th) - stats.rhs())
            out.append(Contribution(name, terms, float(self.sensitivity(theta, n)[0]),
                                    ord=math.inf))
        return out

    def _fit(self):
        n = self._ep_len
        c = self.noise_multiplier(n)
        mode = "authors" if self._calibration == "authors" else "worst-case"
        res = _niht.niht(self._noise_rng, self._stats, n, sparsity=self._s,
                         n_iter=self.iterations(n), step=self._step, radius=self._C,
                         noise_multiplier=c, sensitivity_mode=mode)
        self._theta = res.theta
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            nsr = res.scales[0] / res.first_step_max
        self.episode_log_.append({
            "episode": self._episode, "start": self._ep_start, "length": n,
            "n_iter": self.iterations(n), "noise_multiplier": c,
            "first_scale": float(res.scales[0].mean()),
            "noise_to_signal": float(np.nanmean(nsr)) if np.isfinite(nsr).any() else math.nan,
        })

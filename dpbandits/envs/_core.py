"""Batched core shared by the single and the natively vectorized bandit environments.

One :class:`BanditCore` advances ``R`` synchronized replications of a finite-horizon
contextual bandit with a handful of numpy calls per round. The single environment is the
core with ``R = 1``; the vector environment is the core with ``R = num_envs``. Both therefore
compute bit-identical numbers for the same replication seed.

Seeding scheme (documented in :mod:`dpbandits.envs`)
----------------------------------------------------
Every replication has an *episode seed sequence* ``E``:

* ``reset(seed=s)`` (single env), or replication ``r`` of a vector env reset with
  ``seed=s`` (Gymnasium's convention: replication ``r`` gets ``s + r``, or ``seed[r]`` for a
  list): ``E = SeedSequence(s)``; the replication's Gymnasium ``np_random`` is
  ``gymnasium.utils.seeding.np_random(s)``.
* ``reset()`` without a seed: ``E = SeedSequence(int(np_random.integers(2**63)))``, drawn from
  that replication's ``np_random``, so a seeded reset followed by unseeded ones is reproducible.

``E.spawn(3)`` gives three independent child streams:

0. the **instance** stream (e.g. theta*), drawn once per episode;
1. the **context** stream, consumed sequentially, one context per round, whatever is pulled;
2. the **noise** stream, one standard variate per round (Gaussian ``z_t`` or uniform ``u_t``),
   consumed whatever arm is pulled.

Hence two agents facing the same seed see the same instance, the same contexts and the same
noise variates (common random numbers). The streams are drawn ahead in chunks; every chunk
continues the same sequential streams, so results do not depend on the chunk size. The next
chunk is drawn by a background thread while the current one is played
(:mod:`dpbandits._background`; ``DPBANDITS_PREFETCH=0`` turns it off): the same numbers,
computed earlier.
"""

from __future__ import annotations

import numbers

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dpbandits._background import PicklesPending, executor, prefetch_enabled
from dpbandits._docs import raises_parameter_errors
from dpbandits._validation import check_int, check_nonnegative, check_real

__all__ = ["BanditCore", "BanditEnvBase", "BanditVectorEnvBase", "normalize_rows"]

_SEED_BOUND = 2**63
#: floats a chunk may hold across all replications before it is split (about 16 MiB)
_CHUNK_BUDGET = 2**21
_MAX_CHUNK = 4096
NORMALIZATIONS = ("linf", "l1", "l2")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def check_normalization(value):
    """``"linf"``, ``"l1"``, ``"l2"`` or ``None``."""
    if value is None or (isinstance(value, str) and value in NORMALIZATIONS):
        return value
    raise ValueError(
        f"normalization must be one of 'linf', 'l1', 'l2' or None, got {value!r}"
    )


def normalize_rows(x: np.ndarray, normalization, what: str = "context") -> np.ndarray:
    """Rescale every row of ``x`` to unit ``normalization`` norm (``None``: unchanged).

    A row of norm zero cannot be rescaled; it raises instead of being silently replaced.
    """
    if normalization is None:
        return x
    ax = np.abs(x)
    if normalization == "linf":
        norms = ax.max(axis=1, keepdims=True)
    elif normalization == "l1":
        norms = ax.sum(axis=1, keepdims=True)
    else:
        norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    if not np.all(norms > 0):
        raise ValueError(f"a {what} has norm 0 and cannot be normalized to unit "
                         f"{normalization} norm")
    return x / norms


def episode_seed(seed, np_random: np.random.Generator) -> np.random.SeedSequence:
    """The episode seed sequence ``E`` of the module docstring."""
    if seed is not None:
        return np.random.SeedSequence(seed)
    return np.random.SeedSequence(int(np_random.integers(0, _SEED_BOUND)))


def check_seed(seed, name: str = "seed"):
    """``None`` or a non-negative integer."""
    if seed is None:
        return None
    return check_int(name, seed, low=0)


def resolve_chunk_size(chunk_size, n_reps: int, per_step: int, horizon: int) -> int:
    """Rounds drawn ahead per chunk: given, or sized to a fixed memory budget."""
    if chunk_size is not None:
        return check_int("chunk_size", chunk_size, low=1)
    auto = _CHUNK_BUDGET // max(1, n_reps * per_step)
    return int(max(1, min(_MAX_CHUNK, auto, horizon + 1)))


# --------------------------------------------------------------------------------------------
# the batched core
# --------------------------------------------------------------------------------------------
class BanditCore(PicklesPending):
    """``R`` synchronized replications of a contextual bandit with horizon ``T``.

    Subclasses implement:

    * ``_reset_rep(r, instance_rng, context_rng)``: draw replication ``r``'s instance and
      start its context stream;
    * ``_draw(r, n) -> (contexts (n, d), expected_rewards (n, K))``: the next ``n`` contexts
      of replication ``r``'s stream and the expected reward of every arm for each of them.

    Rewards are ``expected + noise_std * z`` (``noise="gaussian"``) or ``1{u < expected}``
    (``noise="bernoulli"``), with ``z``/``u`` from the noise stream, one per round.
    """

    #: the range ``(low, high)`` every arm's expected reward lies in, when the environment
    #: knows it before any data (None: unbounded); subclasses declare theirs
    expected_reward_range: tuple[float, float] | None = None

    def __init__(self, *, n_reps: int, n_arms: int, dim: int, horizon: int, noise: str,
                 noise_std: float, chunk_size=None):
        self.n_reps = n_reps
        self.n_arms = n_arms
        self.dim = dim
        self.horizon = horizon
        self.noise = noise
        self.noise_std = noise_std
        self.chunk_size = resolve_chunk_size(chunk_size, n_reps, dim + n_arms + 3, horizon)
        self._rows = np.arange(n_reps)
        self._pending = None  # the next chunk, being drawn by the background thread
        self.t: int | None = None  # rounds played; None before the first reset

    # -- subclass hooks ----------------------------------------------------------------------
    def _reset_rep(self, r: int, instance_rng, context_rng) -> None:  # pragma: no cover
        raise NotImplementedError

    def _draw(self, r: int, n: int):  # pragma: no cover
        raise NotImplementedError

    # -- episodes ----------------------------------------------------------------------------
    def reset(self, seqs) -> np.ndarray:
        """Start a new episode; ``seqs`` holds one episode SeedSequence per replication."""
        self._wait()  # a chunk drawn ahead must not run into the new episode's streams
        self._noise_rngs = []
        for r, seq in enumerate(seqs):
            instance_ss, context_ss, noise_ss = seq.spawn(3)
            self._reset_rep(r, np.random.default_rng(instance_ss),
                            np.random.default_rng(context_ss))
            self._noise_rngs.append(np.random.default_rng(noise_ss))
        self.t = 0
        self._install(self._draw_chunk(0))
        return self._ctx[0].copy()

    def _draw_chunk(self, start: int) -> tuple:
        """Stream positions ``start .. start + n - 1`` (contexts, means, noise, optimal arms,
        best means)."""
        n = min(self.chunk_size, self.horizon + 1 - start)
        R, K, d = self.n_reps, self.n_arms, self.dim
        ctx = np.empty((n, R, d))
        means = np.empty((n, R, K))
        noise = np.empty((n, R))
        for r in range(R):
            x, m = self._draw(r, n)
            ctx[:, r] = x
            means[:, r] = m
            rng = self._noise_rngs[r]
            if self.noise == "gaussian":
                noise[:, r] = self.noise_std * rng.standard_normal(n)
            else:
                noise[:, r] = rng.random(n)
        return start, ctx, means, noise, means.argmax(axis=2), means.max(axis=2)

    def _install(self, chunk: tuple) -> None:
        """Make ``chunk`` current and start drawing the one after it, if any."""
        self._c0, self._ctx, self._means, self._noise, self._opt, self._best = chunk
        self._cn = self._ctx.shape[0]
        after = self._c0 + self._cn
        self._pending = (executor().submit(self._draw_chunk, after)
                         if after <= self.horizon and prefetch_enabled() else None)

    def _wait(self) -> None:
        """Finish the chunk being drawn ahead (if any) and forget it."""
        pending, self._pending = getattr(self, "_pending", None), None
        if pending is not None:
            pending.result()

    def play(self, arms: np.ndarray):
        """``step`` for the harness: ``(next_contexts, rewards, pseudo_regret)`` only (the
        same numbers)."""
        j = self.t - self._c0
        chosen = self._means[j][self._rows, arms]
        regret = self._best[j] - chosen
        if self.noise == "gaussian":
            rewards = chosen + self._noise[j]
        else:
            rewards = (self._noise[j] < chosen).astype(np.float64)
        self.t += 1
        if self.t >= self._c0 + self._cn:
            pending = self._pending
            self._install(pending.result() if pending is not None else
                          self._draw_chunk(self.t))
        return self._ctx[self.t - self._c0].copy(), rewards, regret

    def step(self, arms: np.ndarray):
        """Play round ``t + 1`` with validated ``arms`` (R,) and return
        ``(next_contexts, rewards, expected_rewards, optimal_arms, pseudo_regret)``."""
        j = self.t - self._c0
        means = self._means[j]
        chosen = means[self._rows, arms]
        regret = self._best[j] - chosen
        if self.noise == "gaussian":
            rewards = chosen + self._noise[j]
        else:
            rewards = (self._noise[j] < chosen).astype(np.float64)
        opt = self._opt[j].copy()
        means = means.copy()
        self.t += 1
        if self.t >= self._c0 + self._cn:
            pending = self._pending
            self._install(pending.result() if pending is not None else
                          self._draw_chunk(self.t))
        obs = self._ctx[self.t - self._c0].copy()
        return obs, rewards, means, opt, regret


# --------------------------------------------------------------------------------------------
# Gymnasium wrappers around the core
# --------------------------------------------------------------------------------------------
def _obs_space(dim: int, low, high) -> spaces.Box:
    return spaces.Box(low=low, high=high, shape=(dim,), dtype=np.float64)


def check_action(action, n_arms: int) -> int:
    """One arm index in ``[0, n_arms - 1]`` (Python/numpy integers or 0-d integer arrays)."""
    if isinstance(action, np.ndarray):
        if action.shape != ():
            raise ValueError(f"action must be a single arm index, got an array of shape "
                             f"{action.shape}")
        action = action[()]
    if isinstance(action, bool | np.bool_) or not isinstance(action, numbers.Integral):
        raise TypeError(f"action must be an integer arm index, got {action!r} "
                        f"({type(action).__name__})")
    a = int(action)
    if not 0 <= a < n_arms:
        raise ValueError(f"action must be an arm index in [0, {n_arms - 1}] "
                         f"(n_arms={n_arms}), got {a}")
    return a


def check_actions(actions, n_reps: int, n_arms: int) -> np.ndarray:
    """Arm indices of shape ``(n_reps,)`` in ``[0, n_arms - 1]``."""
    a = np.asarray(actions)
    if a.dtype.kind not in "iu":
        raise TypeError(f"actions must be integer arm indices, got dtype {a.dtype}")
    if a.shape != (n_reps,):
        raise ValueError(f"actions must have shape (num_envs,) = ({n_reps},), got {a.shape}")
    if a.min() < 0 or a.max() >= n_arms:
        bad = a[(a < 0) | (a >= n_arms)][0]
        raise ValueError(f"actions must be arm indices in [0, {n_arms - 1}] "
                         f"(n_arms={n_arms}), got {int(bad)}")
    return a


def _past_horizon(horizon: int) -> gymnasium.error.ResetNeeded:
    return gymnasium.error.ResetNeeded(
        f"step() called after the episode was truncated at horizon={horizon}; call reset()"
    )


def check_render_mode(render_mode) -> None:
    if render_mode is not None:
        raise ValueError(f"render_mode must be None (these environments do not render), "
                         f"got {render_mode!r}")


@raises_parameter_errors
class _CoreFacts:
    """What a single or vector environment reads off its :class:`BanditCore` (``_core``)."""

    _core: BanditCore

    @property
    def expected_reward_range(self) -> tuple[float, float] | None:
        """The range ``(low, high)`` every arm's expected reward lies in, when the environment
        knows it in advance (a public fact, e.g. ``(0, 1)`` for Bernoulli or 0/1 rewards; the
        harness passes it to agents that take a ``reward_range``); None when unbounded."""
        return getattr(self._core, "expected_reward_range", None)

    @property
    def t(self) -> int | None:
        """Rounds played in the current episode (``None`` before the first reset)."""
        return self._core.t


class BanditEnvBase(_CoreFacts, gymnasium.Env):
    """A single replication: ``gymnasium.Env`` over a :class:`BanditCore` with ``R = 1``.

    ``step(arm)`` returns ``(next_context, reward, False, t == horizon, info)``; ``info`` holds
    the oracle of the round just played: ``expected_rewards`` (K,), ``optimal_arm``,
    ``pseudo_regret`` = max_k mu_k(x_t) - mu_{a_t}(x_t) and ``t`` (rounds played).

    Parameters
    ----------
    render_mode : None, default None
        Gymnasium's render mode; these environments have nothing to render, so only None
        is accepted.

    """

    metadata = {"render_modes": []}

    def _setup(self, core: BanditCore, obs_low, obs_high, render_mode=None) -> None:
        check_render_mode(render_mode)
        self._core = core
        self.n_arms = core.n_arms
        self.dim = core.dim
        self.horizon = core.horizon
        self.observation_space = _obs_space(core.dim, obs_low, obs_high)
        self.action_space = spaces.Discrete(core.n_arms)
        self.render_mode = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode (one replication); see the module docstring for seeding."""
        seed = check_seed(seed)
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        super().reset(seed=seed)
        obs = self._core.reset([episode_seed(seed, self.np_random)])
        return obs[0], {}

    def step(self, action):
        core = self._core
        if core.t is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        if core.t >= core.horizon:
            raise _past_horizon(core.horizon)
        a = check_action(action, core.n_arms)
        obs, rewards, means, opt, regret = core.step(np.array([a]))
        info = {"expected_rewards": means[0], "optimal_arm": int(opt[0]),
                "pseudo_regret": float(regret[0]), "t": core.t}
        return obs[0], float(rewards[0]), False, core.t == core.horizon, info


def _check_autoreset(mode) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    try:
        return AutoresetMode(mode)
    except ValueError:
        allowed = [m.value for m in AutoresetMode]
        raise ValueError(f"autoreset_mode must be an AutoresetMode or one of {allowed}, "
                         f"got {mode!r}") from None


@raises_parameter_errors
class BanditVectorEnvBase(_CoreFacts, VectorEnv):
    """``R = num_envs`` replications advanced together with array operations.

    Replication ``r`` after ``reset(seed=s)`` is bit-identical to the single environment
    after ``reset(seed=s + r)`` (Gymnasium's ``SyncVectorEnv`` convention), including the
    unseeded resets that follow. All replications share the round index, so they truncate
    together at ``t == horizon``. ``autoreset_mode``: ``NEXT_STEP`` (Gymnasium's default:
    the step after truncation resets every replication unseeded, ignores the actions and
    returns zero rewards), ``SAME_STEP`` (the truncating step returns the new episode's first
    contexts, with ``info["final_obs"]`` (R, d) and ``info["final_info"]``) or ``DISABLED``
    (stepping past the horizon raises). ``info`` carries the single env's keys batched along
    the first axis, each with Gymnasium's ``"_key"`` mask.

    Parameters
    ----------
    num_envs : int, default 1
        Number R >= 1 of replications advanced together.
    autoreset_mode : str or gymnasium.vector.AutoresetMode, default "NextStep"
        ``NEXT_STEP``, ``SAME_STEP`` or ``DISABLED`` (above).
    render_mode : None, default None
        Gymnasium's render mode; only None is accepted (nothing to render).

    """

    def _setup(self, core: BanditCore, obs_low, obs_high, autoreset_mode,
               render_mode=None) -> None:
        check_render_mode(render_mode)
        self._core = core
        self.num_envs = core.n_reps
        self.n_arms = core.n_arms
        self.dim = core.dim
        self.horizon = core.horizon
        self.autoreset_mode = _check_autoreset(autoreset_mode)
        self.metadata = {"render_modes": [], "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.single_observation_space = _obs_space(core.dim, obs_low, obs_high)
        self.single_action_space = spaces.Discrete(core.n_arms)
        self.observation_space = batch_space(self.single_observation_space, core.n_reps)
        self.action_space = batch_space(self.single_action_space, core.n_reps)
        self._rep_np_random: list[np.random.Generator | None] = [None] * core.n_reps
        self._mask = np.ones(core.n_reps, dtype=np.bool_)
        self._mask.setflags(write=False)
        self._needs_reset = False

    def _seeds(self, seed) -> list:
        R = self.num_envs
        if seed is None:
            return [None] * R
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            s = check_seed(seed)
            return [s + r for r in range(R)]
        if isinstance(seed, list | tuple | np.ndarray):
            if len(seed) != R:
                raise ValueError(f"seed given as a list must have num_envs={R} entries, "
                                 f"got {len(seed)}")
            return [check_seed(s, f"seed[{r}]") for r, s in enumerate(seed)]
        raise TypeError(f"seed must be None, a non-negative int or a list of num_envs seeds, "
                        f"got {type(seed).__name__}")

    def _reset_core(self, seeds) -> np.ndarray:
        seqs = []
        for r, s in enumerate(seeds):
            if s is not None:
                self._rep_np_random[r] = seeding.np_random(s)[0]
            elif self._rep_np_random[r] is None:
                self._rep_np_random[r] = seeding.np_random(None)[0]
            seqs.append(episode_seed(s, self._rep_np_random[r]))
        self._needs_reset = False
        return self._core.reset(seqs)

    def _step_past_the_end(self, error: Exception):
        """``step`` after the last round: with ``NextStep`` autoreset, reset every replication
        and return the first observations with zero rewards and no termination; otherwise
        raise ``error``."""
        if self.autoreset_mode != AutoresetMode.NEXT_STEP:
            raise error
        obs = self._reset_core([None] * self.num_envs)
        false = np.zeros(self.num_envs, dtype=np.bool_)
        return obs, np.zeros(self.num_envs), false, false.copy(), {}

    def reset(self, *, seed=None, options: dict | None = None):
        """Reset every replication (seed: None, an int ``s`` -> ``s + r``, or a list)."""
        seeds = self._seeds(seed)
        if options is not None:
            if not isinstance(options, dict):
                raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
            mask = options.get("reset_mask")
            if mask is not None and not np.all(np.asarray(mask)):
                raise ValueError("options['reset_mask'] must select every replication: the "
                                 "replications share the round index (partial resets are "
                                 "not supported)")
        super().reset(seed=seeds[0] if isinstance(seed, numbers.Integral) else None)
        return self._reset_core(seeds), {}

    def _past_the_end(self) -> Exception:
        """The error of a ``step`` after the last round (no autoreset)."""
        return _past_horizon(self._core.horizon)

    def step(self, actions):
        """One round of every replication (``ResetNeeded`` before the first reset; past the
        last round, :meth:`_step_past_the_end`): the actions checked, then :meth:`_step`."""
        core = self._core
        if core.t is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        if self._needs_reset:
            return self._step_past_the_end(self._past_the_end())
        return self._step(check_actions(actions, self.num_envs, core.n_arms))

    def _step(self, a: np.ndarray):
        """The step on checked actions ``a`` (R,)."""
        core = self._core
        R = self.num_envs
        obs, rewards, means, opt, regret = core.step(a)
        t = core.t
        mask = self._mask
        t_arr = np.empty(R, dtype=np.int64)
        t_arr.fill(t)
        info = {"expected_rewards": means, "_expected_rewards": mask,
                "optimal_arm": opt, "_optimal_arm": mask,
                "pseudo_regret": regret, "_pseudo_regret": mask,
                "t": t_arr, "_t": mask}
        truncated = np.zeros(R, dtype=np.bool_)
        truncated.fill(t == core.horizon)
        if t == core.horizon:
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                final_obs = obs
                obs = self._reset_core([None] * R)
                info = {"final_obs": final_obs, "_final_obs": mask,
                        "final_info": info, "_final_info": mask}
            else:
                self._needs_reset = True
        return obs, rewards, np.zeros(R, dtype=np.bool_), truncated, info


def check_noise_std(noise_std) -> float:
    return check_nonnegative("noise_std", noise_std)


def check_scale(name: str, value) -> float:
    return check_real(name, value, low=0.0, low_open=True)

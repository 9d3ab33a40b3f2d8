"""Drive a (vector) environment and an agent for R replications.

Seeding (common random numbers): the environment is reset with ``seed`` itself, so every
agent run with the same ``seed`` faces the same problem instances and context streams
whatever it does; the agent's own randomness comes from an independent stream derived from
``seed`` (``agent_rng``). Same seed and config give bit-identical results.
"""

from __future__ import annotations

import inspect
import os
import time
import tracemalloc
from collections.abc import Mapping
from contextlib import nullcontext

import gymnasium
import numpy as np
from threadpoolctl import threadpool_limits

import dpbandits.envs  # noqa: F401  (registers the environment ids)
from dpbandits._validation import check_int
from dpbandits.agents.base import Agent, agent_class, make_agent
from dpbandits.envs._core import BanditVectorEnvBase
from dpbandits.envs.replay import ReplayBanditVectorEnv
from dpbandits.harness.faults import blame_agent, blamed
from dpbandits.harness.memory import PeakRSS
from dpbandits.harness.replay_loop import replay_rounds
from dpbandits.harness.results import SimulationResult
from dpbandits.privacy.accounting.certification import certified_guarantee

#: entropy tag separating the agent's stream from anything the environment derives from seed
_AGENT_STREAM = 0x5EED_A6E7


def agent_rng(seed: int) -> np.random.Generator:
    """The agent's generator for run ``seed`` (independent of the environment's streams)."""
    return np.random.default_rng(np.random.SeedSequence([_AGENT_STREAM, seed]))


def make_env(env, n_reps: int, env_params: Mapping | None = None):
    """A vector environment with ``n_reps`` replications from an id or an instance. A
    ``log`` parameter given as a path or ``"obd:CAMPAIGN"`` (a replay environment's log, e.g.
    from ``--env-param``) is read with ``dpbandits.datasets.load_log``, with the
    ``n_arms`` and ``action_labels`` parameters given beside it."""
    env_params = dict(env_params or {})
    if isinstance(env_params.get("log"), str | os.PathLike):
        from dpbandits.datasets import load_log  # pandas and pyarrow: only to read a log

        env_params["log"] = load_log(env_params["log"], n_arms=env_params.pop("n_arms", None),
                                     action_labels=env_params.pop("action_labels", None))
    if isinstance(env, str):
        try:
            return gymnasium.make_vec(env, num_envs=n_reps, vectorization_mode="vector_entry_point",
                                      **env_params)
        except gymnasium.error.Error as exc:
            raise ValueError(f"unknown or invalid env {env!r}: {exc}") from None
    if env_params:
        raise ValueError("env_params can only be given with a registered env id, "
                         "not with an env instance")
    if isinstance(env, gymnasium.vector.VectorEnv):
        if env.num_envs != n_reps:
            raise ValueError(f"n_reps={n_reps} does not match the env's num_envs={env.num_envs}")
        return env
    raise TypeError(f"env must be a registered id or a gymnasium VectorEnv, "
                    f"got {type(env).__name__}")


def env_link(venv) -> str | None:
    """The reward model (``"identity"``/``"logistic"``) of a dpbandits env, or None."""
    return getattr(getattr(venv.unwrapped, "config", None), "link", None)


def env_sizes(venv) -> tuple[int, int, int]:
    """(n_arms, dim, horizon) of a dpbandits vector environment."""
    base = venv.unwrapped
    n_arms = int(base.single_action_space.n)
    dim = int(base.single_observation_space.shape[0])
    horizon = int(base.horizon)
    return n_arms, dim, horizon


def env_reward_range(venv) -> tuple[float, float] | None:
    """The range every arm's expected reward lies in, as the environment declares it
    (``expected_reward_range``), or None when it declares none."""
    return getattr(venv.unwrapped, "expected_reward_range", None)


def build_agent(agent, n_arms: int, dim: int, horizon: int, params: Mapping | None,
                reward_range: tuple[float, float] | None = None) -> Agent:
    """An agent from a registry name (+ params) or an instance (params must be empty). A
    registered agent whose constructor takes ``reward_range`` and whose params do not set it
    is given ``reward_range`` (the environment's declared range of expected rewards: public
    facts about the problem, like its sizes)."""
    params = dict(params or {})
    if isinstance(agent, str):
        if (reward_range is not None and "reward_range" not in params
                and "reward_range" in inspect.signature(agent_class(agent).__init__).parameters):
            params["reward_range"] = reward_range
        return make_agent(agent, **{"n_arms": n_arms, "dim": dim, "horizon": horizon, **params})
    if params:
        raise ValueError("agent_params can only be given with an agent name")
    for method in ("reset", "act", "update"):
        if not callable(getattr(agent, method, None)):
            raise TypeError(f"agent must be a registered name or implement the Agent protocol "
                            f"(reset/act/update); {type(agent).__name__} lacks {method}()")
    return agent


def simulate(env, agent, *, horizon: int | None = None, n_reps: int = 1, seed: int = 0,
             agent_params: Mapping | None = None, env_params: Mapping | None = None,
             label: str | None = None, track_memory: bool = False,
             blas_threads: int | None = 1, env_seeds=None,
             progress: bool | Mapping = False) -> SimulationResult:
    """Run ``agent`` on ``env`` for ``horizon`` rounds and ``n_reps`` replications.

    An agent that declares the reward models it supports (``check_link``) is checked against
    the environment's link before the run: a mismatch warns once or raises, as the agent
    decides. On a replay environment (``dpbandits/Replay-v0``) a round is an *accepted*
    logged round (``harness.replay_loop``): ``horizon`` counts accepted rounds, the result
    has no regret (``regret`` is None) and carries ``log_events`` (logged rounds read) and
    the logged policy's mean reward ``reference_reward``.

    Parameters
    ----------
    env : str or gymnasium.vector.VectorEnv
        A registered environment id, or a vector environment instance.
    agent : str or object
        A registered agent name, or an object with ``reset(n_reps, rng)``,
        ``act(contexts) -> arms`` and ``update(contexts, arms, rewards)``.
    horizon : int or None, default None
        Rounds to run, >= 1 and at most the environment's; None: the environment's.
    n_reps : int, default 1
        Replications R >= 1, run together.
    seed : int, default 0
        Seed of the run: replication r's environment is reset with ``seed + r``, the agent
        draws from ``agent_rng(seed)``.
    agent_params : mapping or None, default None
        Keyword arguments of a registered agent (``n_arms``, ``dim`` and ``horizon`` come
        from the environment).
    env_params : mapping or None, default None
        Keyword arguments of a registered environment.
    label : str or None, default None
        The result's name; None: the agent's name.
    track_memory : bool, default False
        ``peak_memory_mb`` of the result is the peak resident memory of the process during
        the run; True replaces it by the peak of Python-traced allocations (tracemalloc,
        slower).
    blas_threads : int or None, default 1
        BLAS threads during the run (1: the per-step algebra is small, and threaded BLAS on
        small matrices is far slower when cores are shared); None leaves it.
    env_seeds : sequence of int or None, default None
        ``n_reps`` environment seeds, one per replication, replacing ``seed + r`` (e.g. one
        seed per held-out user); the agent's stream is still ``agent_rng(seed)``.
    progress : bool or mapping, default False
        A tqdm bar over rounds (True, or a dict of tqdm keyword arguments such as ``desc``);
        updated in chunks of rounds, so it costs nothing measurable.

    Returns
    -------
    SimulationResult
        Per-replication arrays of shape ``(n_reps, horizon)``: instantaneous pseudo-regret,
        arms, rewards; the agent's guarantee and its certification.

    Raises
    ------
    ValueError
        An unknown name, a parameter out of its range, or ``horizon`` beyond the
        environment's.
    dpbandits.errors.AgentFault
        An agent defined outside dpbandits raised in ``reset``, ``act`` or ``update``; the
        error names it and the round.
    """
    check_int("n_reps", n_reps, low=1)
    check_int("seed", seed, low=0)
    if env_seeds is not None:
        if not isinstance(env_seeds, list | tuple | np.ndarray) or len(env_seeds) != n_reps:
            raise ValueError(f"env_seeds must be a list of n_reps={n_reps} seeds, got "
                             f"{env_seeds!r}")
        env_seeds = [check_int(f"env_seeds[{r}]", s, low=0) for r, s in enumerate(env_seeds)]
    venv = make_env(env, n_reps, env_params)
    n_arms, dim, env_horizon = env_sizes(venv)
    horizon = env_horizon if horizon is None else check_int("horizon", horizon, low=1)
    if horizon > env_horizon:
        raise ValueError(f"horizon={horizon} exceeds the environment's horizon {env_horizon}")
    reward_range = env_reward_range(venv)
    ag = build_agent(agent, n_arms, dim, horizon, agent_params, reward_range)
    name = label or getattr(ag, "name", "") or type(ag).__name__
    check_link = getattr(ag, "check_link", None)
    if callable(check_link):
        check_link(env_link(venv), env if isinstance(env, str) else type(venv.unwrapped).__name__)

    # filled one row per round (contiguous), transposed to (n_reps, horizon) at the end
    regret = np.empty((horizon, n_reps))
    arms_hist = np.empty((horizon, n_reps), dtype=np.int32)
    rewards_hist = np.empty((horizon, n_reps))
    bar = _progress_bar(progress, horizon, name)
    every = max(1, horizon // 200)
    if track_memory:
        tracemalloc.start()
    rss = PeakRSS()
    start = time.perf_counter()
    # A dpbandits agent on a dpbandits environment built here: the round goes straight to the
    # environment's core and the agent's trusted update (the same numbers without the
    # Gymnasium wrapper's and update's re-validation of arrays produced by the two of them)
    core = getattr(venv, "_core", None) if isinstance(env, str) and isinstance(
        venv, BanditVectorEnvBase) else None
    fast = core is not None and isinstance(ag, Agent)
    replay = venv.unwrapped if isinstance(venv.unwrapped, ReplayBanditVectorEnv) else None
    log_events = None
    with threadpool_limits(blas_threads), rss, (bar or nullcontext()):
        contexts, _ = venv.reset(seed=seed if env_seeds is None else env_seeds)
        try:
            ag.reset(n_reps, agent_rng(seed))
        except Exception as exc:
            blame_agent(ag, name, "reset", None, horizon, exc)
            raise
        if replay is not None:
            arms_hist, rewards_hist, log_events = replay_rounds(
                replay._core, ag, horizon, contexts, trusted=isinstance(ag, Agent), bar=bar,
                every=every, label=name)
        for t in range(0 if replay is not None else horizon):
            try:
                arms = np.asarray(ag._act_trusted(contexts) if fast else ag.act(contexts))
            except Exception as exc:
                blame_agent(ag, name, "act", t, horizon, exc)
                raise
            if fast:
                next_contexts, rewards, pseudo_regret = core.play(arms)
                update = ag._update_trusted
            else:
                next_contexts, rewards, _, _, info = venv.step(arms)
                update = ag.update
                pseudo_regret = info["pseudo_regret"]
            with blamed(ag, name, "update", t, horizon):
                update(contexts, arms, rewards)
            regret[t] = pseudo_regret
            arms_hist[t] = arms
            rewards_hist[t] = rewards
            contexts = next_contexts
            if bar is not None and (t + 1) % every == 0:
                bar.update(every)
        if bar is not None:
            bar.update(horizon - bar.n)
    seconds = time.perf_counter() - start
    regret, arms_hist, rewards_hist = (np.ascontiguousarray(a.T) for a in (
        regret, arms_hist, rewards_hist))
    if replay is not None:
        regret, log_events = None, np.ascontiguousarray(log_events.T)
    peak = rss.peak_mb
    if track_memory:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    privacy = getattr(ag, "privacy", None)
    return SimulationResult(
        agent=name, regret=regret, arms=arms_hist, rewards=rewards_hist, seconds=seconds,
        peak_memory_mb=peak,
        privacy=None if privacy is None else privacy.to_dict(),
        certified=certified_guarantee(ag),
        config={"env": env if isinstance(env, str) else type(venv.unwrapped).__name__,
                "env_params": dict(env_params or {}), "agent": name,
                "agent_name": agent if isinstance(agent, str) else type(ag).__name__,
                "agent_params": dict(agent_params or {}), "horizon": horizon,
                "n_reps": n_reps, "seed": seed,
                **({} if env_seeds is None else {"env_seeds": env_seeds}),
                **({} if reward_range is None else {"env_reward_range": list(reward_range)})},
        log_events=log_events,
        reference_reward=None if replay is None else replay.config.reference_reward,
    )


def _progress_bar(progress, horizon: int, name: str):
    """A tqdm bar over ``horizon`` rounds, or None when ``progress`` is falsy."""
    if not progress:
        return None
    from tqdm.auto import tqdm

    kwargs = {"desc": name, "unit": "round", "leave": False, "dynamic_ncols": True,
              **(dict(progress) if isinstance(progress, Mapping) else {})}
    return tqdm(total=horizon, **kwargs)

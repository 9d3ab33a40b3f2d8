"""Run several agents on the same problem instances and context streams."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gymnasium.vector import VectorEnv

from dpbandits.harness.results import SimulationResult, summarize, tidy_frame
from dpbandits.harness.simulate import simulate

if TYPE_CHECKING:
    import pandas as pd


def agent_spec(spec: object) -> tuple[object, dict | None]:
    """``(name or instance, params)`` from a registry name, ``(name, params)``, a mapping
    ``{"name": ..., "params": ...}`` or an agent instance."""
    if isinstance(spec, tuple):
        name, params = spec
        return name, params
    if isinstance(spec, Mapping):
        return spec["name"], spec.get("params", {})
    return spec, None


def compare(agents: Mapping[str, object], env: str | VectorEnv, *, horizon: int | None = None,
            n_reps: int = 1, seed: int = 0, env_params: Mapping | None = None,
            record_every: int = 1, track_memory: bool = False, progress: bool = False,
            ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Simulate every agent with common random numbers: every agent faces the environment
    reset with the same ``seed``, so the same problem instances and context streams.

    Parameters
    ----------
    agents : mapping
        Label -> a registry name, ``(name, params)``, or an agent instance.
    env : str or gymnasium.vector.VectorEnv
        A registered environment id, or a vector environment instance.
    horizon : int or None, default None
        Rounds to run, >= 1; None: the environment's.
    n_reps : int, default 1
        Replications R >= 1 of every agent.
    seed : int, default 0
        Seed of the run, shared by every agent (see :func:`simulate`).
    env_params : mapping or None, default None
        Keyword arguments of a registered environment.
    record_every : int, default 1
        The frame keeps every k-th round (k >= 1), and the last.
    track_memory : bool, default False
        Peak memory from Python-traced allocations instead of the process's resident memory.
    progress : bool, default False
        One progress bar per agent over its rounds.

    Returns
    -------
    frame : pandas.DataFrame
        The tidy frame of every agent's recorded rounds.
    summary : pandas.DataFrame
        The per-agent summary (:func:`summary_table`).
    results : dict
        The raw ``SimulationResult`` per label.

    Raises
    ------
    ValueError
        An unknown name or a parameter out of its range (see :func:`simulate`).
    """
    results = run_agents(agents, env, horizon=horizon, n_reps=n_reps, seed=seed,
                         env_params=env_params, track_memory=track_memory, progress=progress)
    frame = tidy_frame(results.values(), record_every)
    return frame, summary_table(results), results


def run_agents(agents: Mapping[str, object], env: str | VectorEnv, *,
               horizon: int | None = None, n_reps: int = 1, seed: int = 0,
               env_params: Mapping | None = None, track_memory: bool = False,
               progress: bool = False) -> dict[str, SimulationResult]:
    """The simulations of :func:`compare`, one agent after the other in the order of
    ``agents``: the ``SimulationResult`` per label (``dpbandits compare`` writes their frame
    in a background thread while it draws the plots, ``harness.pipeline``)."""
    if not agents:
        raise ValueError("agents must contain at least one agent")
    results: dict[str, SimulationResult] = {}
    for i, (label, spec) in enumerate(agents.items()):
        name, params = agent_spec(spec)
        bar = {"desc": f"[{i + 1}/{len(agents)}] {label}"} if progress else False
        results[label] = simulate(env, name, horizon=horizon, n_reps=n_reps, seed=seed,
                                  agent_params=params, env_params=env_params, label=label,
                                  track_memory=track_memory, progress=bar)
    return results


def summary_table(results: Mapping[str, SimulationResult]) -> pd.DataFrame:
    """One row per agent label: final cumulative regret ``n, mean, std, ci95_low,
    ci95_high``, the privacy level ``epsilon, delta, certified_epsilon`` (see
    ``results.privacy_entry`` for the full record), wall ``seconds`` and ``peak_memory_mb``."""
    import pandas as pd

    frames = [r.to_frame(r.horizon) for r in results.values()]
    table = summarize(pd.concat(frames, ignore_index=True), by="agent").set_index("agent")
    table["seconds"] = pd.Series({k: r.seconds for k, r in results.items()})
    table["peak_memory_mb"] = pd.Series({k: r.peak_memory_mb for k, r in results.items()},
                                        dtype=float)
    return table.loc[list(results)].reset_index()


def privacy_records(results: Mapping[str, SimulationResult]) -> list[dict]:
    """The privacy record (schema in ``harness.results``) of every agent label."""
    return [r.privacy_entry() for r in results.values()]

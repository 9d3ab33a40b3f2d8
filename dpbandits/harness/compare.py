"""Run several agents on the same problem instances and context streams."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from dpbandits.harness.results import SimulationResult, summarize
from dpbandits.harness.simulate import simulate


def compare(agents: Mapping[str, object], env, *, horizon: int | None = None, n_reps: int = 1,
            seed: int = 0, env_params: Mapping | None = None, record_every: int = 1,
            track_memory: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Simulate every agent with common random numbers.

    ``agents`` maps a label to a registry name, to ``(name, params)``, or to an agent
    instance. Every agent faces the environment reset with the same ``seed`` — the same
    problem instances and context streams. Returns ``(frame, summary, results)``: the tidy
    frame of all agents, the per-agent summary (final cumulative regret mean, std, 95% CI,
    claimed and accountant-certified guarantee, seconds, peak memory) and the raw
    ``SimulationResult`` per label.
    """
    if not agents:
        raise ValueError("agents must contain at least one agent")
    results: dict[str, SimulationResult] = {}
    for label, spec in agents.items():
        if isinstance(spec, tuple):
            name, params = spec
        elif isinstance(spec, Mapping):
            name, params = spec["name"], spec.get("params", {})
        else:
            name, params = spec, None
        results[label] = simulate(env, name, horizon=horizon, n_reps=n_reps, seed=seed,
                                  agent_params=params, env_params=env_params, label=label,
                                  track_memory=track_memory)
    frame = pd.concat([r.to_frame(record_every) for r in results.values()], ignore_index=True)
    return frame, summary_table(results), results


def summary_table(results: Mapping[str, SimulationResult]) -> pd.DataFrame:
    """Final-regret statistics with each agent's privacy guarantee, time and memory."""
    frames = [r.to_frame(r.horizon) for r in results.values()]
    table = summarize(pd.concat(frames, ignore_index=True))
    table = table.set_index("agent")
    table["privacy"] = pd.Series({k: _fmt(r.privacy) for k, r in results.items()})
    table["certified_epsilon"] = pd.Series(
        {k: (r.certified or {}).get("epsilon") for k, r in results.items()}, dtype=float)
    table["seconds"] = pd.Series({k: r.seconds for k, r in results.items()})
    table["peak_memory_mb"] = pd.Series({k: r.peak_memory_mb for k, r in results.items()},
                                        dtype=float)
    return table.loc[list(results)].reset_index()


def _fmt(privacy: dict | None) -> str:
    if privacy is None:
        return "not private"
    from dpbandits.privacy.guarantee import PrivacyGuarantee

    return str(PrivacyGuarantee(**privacy))

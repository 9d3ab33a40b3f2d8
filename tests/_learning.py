"""Regret of agents relative to uniform-random on one instance, with common random numbers
(the learning tests of the agents build on it)."""

from __future__ import annotations

from dpbandits.harness.compare import compare


def ratios_to_random(agents: dict, env_params: dict, *, n_reps: int = 20, seed: int = 100,
                     env: str = "dpbandits/GLMBandit-v0") -> tuple[dict, dict]:
    """``(ratios, results)``: each agent's mean final regret divided by uniform-random's
    (run alongside under the label ``"random"``) and the raw ``SimulationResult`` per label."""
    _, _, res = compare({**agents, "random": ("random", {})}, env, n_reps=n_reps, seed=seed,
                        env_params=env_params)
    final = {k: v.cum_regret[:, -1].mean() for k, v in res.items()}
    return {k: final[k] / final["random"] for k in agents}, res

"""FLIPHAT speed: seconds per replication at the Figure 5.1 setting (K = 2, d = 50, T = 1e4).

Runs the agent through the harness (``simulate``, environment stepping included) on the
registered ``dpbandits/Figure5.1-v0`` instance; the noise calibration (PLD accountant) is
done once before timing. Cases: the default (theorem) and accountant calibrations, and the
agent alone (act + update on pre-drawn contexts, no environment).

Usage::

    python -m benchmarks.bench_fliphat                # R = 20, T = 10000
    python -m benchmarks.bench_fliphat --reps 100 --horizon 100000

Prints one JSON object.
"""

from __future__ import annotations

import platform
import time

import numpy as np

from benchmarks._cli import run
from dpbandits.agents import make_agent
from dpbandits.harness import simulate

ENV_ID = "dpbandits/Figure5.1-v0"


def _agent_only(reps: int, horizon: int, params: dict) -> float:
    agent = make_agent("fliphat", n_arms=2, dim=50, horizon=horizon, **params)
    rng = np.random.default_rng(0)
    chunk = 1000
    agent.reset(reps, np.random.default_rng(1))
    start = time.perf_counter()
    for t0 in range(0, horizon, chunk):
        x = rng.uniform(-1.0, 1.0, (min(chunk, horizon - t0), reps, 50))
        r = rng.normal(size=x.shape[:2])
        for t in range(x.shape[0]):
            a = agent.act(x[t])
            agent.update(x[t], a, r[t])
    return time.perf_counter() - start


def bench(reps: int, horizon: int, repeat: int) -> dict:
    cases = []
    for name, params in (("theorem", {"calibration": "theorem"}),
                         ("accountant", {"calibration": "accountant"})):
        make_agent("fliphat", n_arms=2, dim=50, horizon=horizon, **params)  # warm the cache
        best = min(simulate(ENV_ID, "fliphat", n_reps=reps, seed=0, agent_params=params,
                            env_params={"horizon": horizon}).seconds for _ in range(repeat))
        cases.append({"name": f"simulate_{name}", "R": reps, "T": horizon,
                      "seconds_total": best, "seconds_per_replication": best / reps})
    best = min(_agent_only(reps, horizon, {"calibration": "accountant"})
               for _ in range(repeat))
    cases.append({"name": "agent_only_accountant", "R": reps, "T": horizon,
                  "seconds_total": best, "seconds_per_replication": best / reps})
    return {"benchmark": "fliphat", "env": ENV_ID, "python": platform.python_version(),
            "cases": cases}


def main(argv=None) -> None:
    run(bench, __doc__, argv, reps=20, horizon=10_000, repeat=1)


if __name__ == "__main__":
    main()

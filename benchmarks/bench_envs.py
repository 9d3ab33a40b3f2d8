"""Environment stepping speed: seconds per replication of a full episode.

Cases (uniformly random arms, drawn before timing):

* ``native_vector`` — ``GLMBanditVectorEnv`` (``make_vec(..., "vector_entry_point")``),
  all R replications advanced together with array operations;
* ``single_env`` — one ``GLMBanditEnv`` episode (``R = 1``), the per-replication cost of a
  Python loop over replications;
* ``sync_vector`` — Gymnasium's ``SyncVectorEnv`` over single envs (only with ``--sync``;
  slow by construction).

Usage::

    python -m benchmarks.bench_envs                 # R=100, T=10000, d=50, K=2
    python -m benchmarks.bench_envs --sync --reps 10

Prints one JSON object.
"""

from __future__ import annotations

import platform
import time

import gymnasium
import numpy as np

import dpbandits.envs  # noqa: F401  (registers the ids)
from benchmarks._cli import run

ENV_ID = "dpbandits/Figure5.1-v0"


def _run_vector(venv, acts) -> float:
    venv.reset(seed=0)
    start = time.perf_counter()
    for a in acts:
        venv.step(a)
    return time.perf_counter() - start


def _run_single(env, acts) -> float:
    env.reset(seed=0)
    start = time.perf_counter()
    for a in acts:
        env.step(int(a))
    return time.perf_counter() - start


def bench(reps: int, horizon: int, dim: int, arms: int, repeat: int, sync: bool) -> dict:
    kw = {"horizon": horizon, "dim": dim, "n_arms": arms}
    rng = np.random.default_rng(0)
    cases = []

    venv = gymnasium.make_vec(ENV_ID, num_envs=reps, vectorization_mode="vector_entry_point",
                              **kw)
    acts = rng.integers(0, arms, size=(horizon, reps))
    best = min(_run_vector(venv, acts) for _ in range(repeat))
    cases.append({"name": "native_vector", "R": reps, "seconds_total": best,
                  "seconds_per_replication": best / reps,
                  "steps_per_second": horizon / best,
                  "chunk_size": venv.unwrapped._core.chunk_size})

    env = gymnasium.make(ENV_ID, **kw).unwrapped
    acts1 = rng.integers(0, arms, size=horizon)
    best = min(_run_single(env, acts1) for _ in range(repeat))
    cases.append({"name": "single_env", "R": 1, "seconds_total": best,
                  "seconds_per_replication": best, "steps_per_second": horizon / best})

    if sync:
        senv = gymnasium.make_vec(ENV_ID, num_envs=reps, vectorization_mode="sync", **kw)
        best = min(_run_vector(senv, acts) for _ in range(repeat))
        cases.append({"name": "sync_vector", "R": reps, "seconds_total": best,
                      "seconds_per_replication": best / reps,
                      "steps_per_second": horizon / best})

    return {"benchmark": "envs", "env_id": ENV_ID, "T": horizon, "d": dim, "K": arms,
            "repeat": repeat, "numpy": np.__version__, "gymnasium": gymnasium.__version__,
            "python": platform.python_version(), "cases": cases}


def main(argv=None) -> None:
    run(bench, __doc__, argv, reps=100, horizon=10_000, dim=50, arms=2,
        repeat=(1, "best of this many runs"), sync=(False, "also time SyncVectorEnv"))


if __name__ == "__main__":
    main()

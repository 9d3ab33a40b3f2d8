"""Harness overhead: ``simulate`` against the bare public-API loop on the same problem.

The bare loop is what a user would write without the harness: ``venv.reset``,
``agent.reset``, then per round ``agent.act``, ``venv.step`` and ``agent.update`` on the
vector environment built by ``gymnasium.make_vec``, recording nothing. ``simulate`` plays the
same rounds (the same numbers: tests/test_harness.py) and records regret, arms and rewards.
Both are timed by the main thread's CPU time (the environment's and the noise streams'
background thread is not the harness's cost), best of ``--repeat`` runs, after one warm-up
run that compiles and calibrates. Overhead = simulate / bare - 1 (target: at most 10%).

Usage::

    python -m benchmarks.bench_overhead [--horizon 10000] [--repeat 3]

Prints one JSON object.
"""

from __future__ import annotations

import platform
import time

import gymnasium

import dpbandits.envs  # noqa: F401  (registers the ids)
from benchmarks._cli import run
from dpbandits.agents import make_agent
from dpbandits.harness import simulate
from dpbandits.harness.simulate import agent_rng

ENV_ID = "dpbandits/Figure5.1-v0"
#: name -> (agent, replications)
CASES = {"dp-hdb": ("dp-hdb", 100), "dp-ucb": ("dp-ucb", 1), "fliphat": ("fliphat", 10),
         "linucb": ("linucb", 100), "random": ("random", 1)}


def _bare(agent: str, R: int, T: int, seed: int = 0) -> float:
    venv = gymnasium.make_vec(ENV_ID, num_envs=R, vectorization_mode="vector_entry_point",
                              horizon=T)
    K, d = int(venv.single_action_space.n), venv.single_observation_space.shape[0]
    ag = make_agent(agent, n_arms=K, dim=d, horizon=T)
    start = time.thread_time()
    contexts, _ = venv.reset(seed=seed)
    ag.reset(R, agent_rng(seed))
    for _ in range(T):
        arms = ag.act(contexts)
        next_contexts, rewards, _, _, _ = venv.step(arms)
        ag.update(contexts, arms, rewards)
        contexts = next_contexts
    seconds = time.thread_time() - start
    venv.close()
    return seconds


def _harness(agent: str, R: int, T: int, seed: int = 0) -> float:
    start = time.thread_time()
    res = simulate(ENV_ID, agent, n_reps=R, seed=seed, env_params={"horizon": T})
    cpu = time.thread_time() - start
    assert res.regret.shape == (R, T)
    return cpu


def bench(horizon: int, repeat: int) -> dict:
    out = {"benchmark": "overhead", "env": ENV_ID, "horizon": horizon, "repeat": repeat,
           "python": platform.python_version(), "cases": []}
    for name, (agent, R) in CASES.items():
        _bare(agent, R, 50)
        _harness(agent, R, 50)  # compile; calibrations and certifications are cached per
        # process, so the best of the timed runs is the loop's own cost
        bare = min(_bare(agent, R, horizon) for _ in range(repeat))
        harness = min(_harness(agent, R, horizon) for _ in range(repeat))
        out["cases"].append({"case": name, "R": R, "bare_main_thread_cpu": bare,
                             "simulate_main_thread_cpu": harness,
                             "overhead": harness / bare - 1.0})
    out["max_overhead"] = max(c["overhead"] for c in out["cases"])
    return out


def main(argv=None) -> None:
    run(bench, __doc__, argv, horizon=10_000, repeat=3)


if __name__ == "__main__":
    main()

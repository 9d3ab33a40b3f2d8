"""Agent speed and memory at the Figure 5.1 setting (T = 1e4, d = 50, K = 2, epsilon = 1,
delta = 1/T). Prints one JSON object per case.

Targets (issue 5): DP-HDB with R = 100 at once <= 0.015 s per replication; DP-UCB (Gaussian)
<= 1.5 s per replication and <= 200 MB peak resident memory for R = 1.

Each case runs in a fresh subprocess so its peak resident set size (ru_maxrss) is its own.
Noise calibration (done once per configuration and cached) is timed separately from the
simulation loop. Usage: ``python -m benchmarks.bench_agents [--horizon T] [--case NAME]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASES = {
    "dp-hdb": {"agent": "dp-hdb", "params": {}, "n_reps": 100},
    "dp-hdb-accountant": {"agent": "dp-hdb", "params": {"calibration": "accountant"},
                          "n_reps": 100},
    "dp-ucb-gaussian": {"agent": "dp-ucb", "params": {}, "n_reps": 1},
    "dp-ucb-wishart": {"agent": "dp-ucb", "params": {"noise": "wishart"}, "n_reps": 1},
    "linucb": {"agent": "linucb", "params": {}, "n_reps": 100},
}

CHILD = r"""
import json, resource, sys, time
from threadpoolctl import threadpool_limits
import numpy as np
import gymnasium
import dpbandits.envs
from dpbandits.agents import make_agent
from dpbandits.harness.simulate import agent_rng
case = json.loads(sys.argv[1]); T = case["horizon"]; R = case["n_reps"]
env = gymnasium.make_vec("dpbandits/Figure5.1-v0", num_envs=R,
                         vectorization_mode="vector_entry_point", horizon=T)
t0 = time.perf_counter()
agent = make_agent(case["agent"], n_arms=2, dim=50, horizon=T, **case["params"])
calib = time.perf_counter() - t0
with threadpool_limits(1):
    x, _ = env.reset(seed=0)
    agent.reset(R, agent_rng(0))
    t0 = time.perf_counter()
    for _ in range(T):
        a = agent.act(x)
        x2, r, _, _, info = env.step(a)
        agent.update(x, a, r)
        x = x2
    loop = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"case": case["name"], "horizon": T, "n_reps": R,
                  "seconds_per_replication": loop / R, "calibration_seconds": calib,
                  "peak_rss_mb": rss}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    args = ap.parse_args()
    for name in args.case or list(CASES):
        case = {**CASES[name], "name": name, "horizon": args.horizon}
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)],
                             capture_output=True, text=True, check=True)
        print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()

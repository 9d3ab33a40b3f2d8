"""Where the time of ``dpbandits compare`` goes: the command end to end against the same
simulations alone.

Target (harness issue): the default ``compare`` of 3 agents (dp-hdb, linucb, random) with
R = 50, T = 2000 on ``dpbandits/Figure5.1-v0`` takes at most 1.3x the time of the
simulations alone. Both sides run in fresh processes, so both pay Python start-up and the
imports the simulations need; the command adds validation, the accountant's recomputation,
Parquet/JSON/CSV output and the plots. Prints one JSON object.

Usage: ``python -m benchmarks.bench_cli [--reps R] [--horizon T] [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

AGENTS = ["dp-hdb", "linucb", "random"]

SIMULATIONS_ALONE = r"""
import sys
from dpbandits.harness.simulate import simulate
T, R = int(sys.argv[1]), int(sys.argv[2])
for name in sys.argv[3:]:
    simulate("dpbandits/Figure5.1-v0", name, horizon=T, n_reps=R, seed=0)
"""


def _wall(cmd: list[str]) -> float:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each side")
    args = parser.parse_args()
    sims, cli = [], []
    for _ in range(args.repeat):
        sims.append(_wall([sys.executable, "-c", SIMULATIONS_ALONE, str(args.horizon),
                           str(args.reps), *AGENTS]))
        with tempfile.TemporaryDirectory() as tmp:
            agents = [a for name in AGENTS for a in ("--agent", name)]
            cli.append(_wall([sys.executable, "-m", "dpbandits.cli", "compare", "--env",
                              "dpbandits/Figure5.1-v0", *agents, "--horizon",
                              str(args.horizon), "--reps", str(args.reps), "--out",
                              os.path.join(tmp, "cmp"), "--quiet"]))
    best_sim, best_cli = min(sims), min(cli)
    print(json.dumps({"case": "compare-3-agents", "reps": args.reps, "horizon": args.horizon,
                      "simulations_alone_s": round(best_sim, 2),
                      "compare_command_s": round(best_cli, 2),
                      "ratio": round(best_cli / best_sim, 3), "target_ratio": 1.3}))


if __name__ == "__main__":
    main()

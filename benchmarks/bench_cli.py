"""Where the time of ``dpbandits compare`` goes: the command end to end against the same
simulations alone.

Target (harness issue): the default ``compare`` of 3 agents (dp-hdb, linucb, random) with
R = 50, T = 2000 on ``dpbandits/Figure5.1-v0`` takes at most 1.3x the time of the
simulations alone. Both sides run in fresh processes, so both pay Python start-up and the
imports the simulations need; the command adds validation, the accountant's recomputation,
Parquet/JSON/CSV output and the plots. Prints one JSON object: for each side the best
wall time and the best CPU time (user + system of the process and its children), the ratio
of the bests, and the ratio of each pair run back to back (its median is the least
sensitive to other jobs on a shared machine), with the load average before and after.

Issue 37's row (3 agents, T = 1e4, R = 100): ``python -m benchmarks.bench_cli --reps 100
--horizon 10000 --repeat 5``.

Usage: ``python -m benchmarks.bench_cli [--reps R] [--horizon T] [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
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


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of ``cmd``."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each side")
    args = parser.parse_args()
    load_before = os.getloadavg()
    sims, cli = [], []
    for _ in range(args.repeat):
        sims.append(_timed([sys.executable, "-c", SIMULATIONS_ALONE, str(args.horizon),
                            str(args.reps), *AGENTS]))
        with tempfile.TemporaryDirectory() as tmp:
            agents = [a for name in AGENTS for a in ("--agent", name)]
            cli.append(_timed([sys.executable, "-m", "dpbandits.cli", "compare", "--env",
                               "dpbandits/Figure5.1-v0", *agents, "--horizon",
                               str(args.horizon), "--reps", str(args.reps), "--out",
                               os.path.join(tmp, "cmp"), "--quiet"]))
    best_sim, best_cli = min(w for w, _ in sims), min(w for w, _ in cli)
    cpu_sim, cpu_cli = min(c for _, c in sims), min(c for _, c in cli)
    paired = [c[0] / s[0] for s, c in zip(sims, cli, strict=True)]
    paired_cpu = [c[1] / s[1] for s, c in zip(sims, cli, strict=True)]
    print(json.dumps({"case": "compare-3-agents", "reps": args.reps, "horizon": args.horizon,
                      "simulations_alone_s": round(best_sim, 2),
                      "compare_command_s": round(best_cli, 2),
                      "ratio": round(best_cli / best_sim, 3),
                      "paired_ratios": [round(r, 3) for r in paired],
                      "paired_median_ratio": round(statistics.median(paired), 3),
                      "simulations_alone_cpu_s": round(cpu_sim, 2),
                      "compare_command_cpu_s": round(cpu_cli, 2),
                      "cpu_ratio": round(cpu_cli / cpu_sim, 3),
                      "paired_cpu_median_ratio": round(statistics.median(paired_cpu), 3),
                      "target_ratio": 1.3, "load_before": load_before,
                      "load_after": os.getloadavg()}))


if __name__ == "__main__":
    main()

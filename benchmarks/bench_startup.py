"""Start-up of the command line: ``dpbandits --help``, ``list`` and ``describe dp-ucb``, each
in fresh processes (issue 28: <= 0.3 s for ``--help`` and ``list``).

For each command: wall seconds and CPU seconds (user + system, of the child) as the minimum
over ``--repeat`` runs, the child's peak resident memory, and which heavy modules it left
imported (numba, pandas, matplotlib, scikit-learn, scipy.stats, dp_accounting's PLD). The
certificate store is warmed by one run of each command first (``describe`` prints a certified
epsilon, ``list`` builds every agent, and some calibrate their noise with the accountant).
Prints one JSON object.

Usage: ``python -m benchmarks.bench_startup [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

COMMANDS = {"help": ["--help"], "list": ["list"], "describe": ["describe", "dp-ucb"]}
HEAVY = ("numba", "pandas", "matplotlib", "sklearn", "scipy.stats", "dp_accounting.pld",
         "scipy.linalg", "gymnasium")

# runs the CLI in this child and prints, on stderr's last line, the heavy modules it loaded
_CHILD = r"""
import json, resource, sys
from dpbandits.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
heavy = json.loads(sys.argv[1])
print(json.dumps([sorted(m for m in heavy if m in sys.modules),
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]), file=sys.stderr)
"""


def run_command(argv: list[str]) -> dict:
    """One fresh process running ``dpbandits ARGV``: wall, CPU, peak memory, heavy modules."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(HEAVY), *argv],
                         capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    loaded, peak = json.loads(out.stderr.strip().splitlines()[-1])
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak, "loaded": loaded}


def bench(repeat: int = 5) -> dict:
    load_before = os.getloadavg()
    rows = []
    for name, argv in COMMANDS.items():
        run_command(argv)  # warms the certificate store and the file cache
        runs = [run_command(argv) for _ in range(repeat)]
        rows.append({"command": "dpbandits " + " ".join(argv),
                     "wall_s_min": round(min(r["wall_s"] for r in runs), 3),
                     "cpu_s_min": round(min(r["cpu_s"] for r in runs), 3),
                     "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
                     "loaded": runs[-1]["loaded"], "target_s": 0.3 if name != "describe"
                     else None})
    return {"benchmark": "startup", "repeat": repeat, "load_before": load_before,
            "load_after": os.getloadavg(), "commands": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (minimum kept)")
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.repeat), indent=2))


if __name__ == "__main__":
    main()

"""The demo (``bash scripts/demo.sh``: ``dpbandits reproduce fig5.1 --size small --panels AB
--jobs 2``) as the installed command runs it, in a fresh process (issue 28: under 30 s on 2
cores once installed).

Two runs: the first with an empty certificate store (``cold``: every certificate and noise
calibration composed by the accountant, as in a fresh clone on a new machine), the second
with the store the first filled (``warm``: any later run). For each, the wall time and the
CPU time of the command and its workers, and the seconds each agent's simulation took (from
``panel_*_summary.csv``, column ``seconds``, when written). Prints one JSON object.

Usage: ``python -m benchmarks.bench_demo [--size tiny|small] [--jobs N]``
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_demo(out: Path, cache: Path, size: str, jobs: int) -> dict:
    """One run of the demo's command into ``out`` with the certificate store ``cache``."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "DPBANDITS_CACHE_DIR": os.fspath(cache)}
    cmd = [sys.executable, "-m", "dpbandits.cli", "reproduce", "fig5.1", "--size", size,
           "--panels", "AB", "--jobs", str(jobs), "--out", os.fspath(out), "--overwrite",
           "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    agents = {}
    for panel in ("a", "b"):
        path = out / f"panel_{panel}_summary.csv"
        if path.exists():
            with path.open() as fh:
                for row in csv.DictReader(fh):
                    if "seconds" in row:
                        agents[f"{panel.upper()}: {row.get('agent', '?')}"] = round(
                            float(row["seconds"]), 2)
    return {"wall_s": round(wall, 2),
            "cpu_s": round((after.ru_utime - before.ru_utime)
                           + (after.ru_stime - before.ru_stime), 2),
            "load_before": load, "load_after": os.getloadavg(),
            "agent_seconds": agents}


def bench(size: str = "small", jobs: int = 2) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cold = run_demo(tmp / "cold", tmp / "cache", size, jobs)
        warm = run_demo(tmp / "warm", tmp / "cache", size, jobs)
    return {"benchmark": "demo", "command": "dpbandits reproduce fig5.1 --size "
            f"{size} --panels AB --jobs {jobs}", "cpus": os.cpu_count(), "target_s": 30,
            "cold_store": cold, "warm_store": warm}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=["tiny", "small"], default="small")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.size, args.jobs), indent=2))


if __name__ == "__main__":
    main()

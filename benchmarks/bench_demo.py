"""The demo (``bash scripts/demo.sh``: ``dpbandits reproduce fig5.1 --size small --panels AB
--jobs 2``) as the installed command runs it, in a fresh process (issue 28: under 30 s on 2
cores once installed).

Two runs: the first with an empty certificate store (``cold``: every certificate and noise
calibration composed by the accountant, as in a fresh clone on a new machine), the second
with the store the first filled (``warm``: any later run). For each, the wall time and the
CPU time of the command and its workers, and the seconds each agent's simulation took (from
``panel_*_summary.csv``, column ``seconds``, when written). Prints one JSON object.

``--pool-prefetch on`` runs the command as it was before issue 37 for comparison: every
worker also draws its noise in a second thread, whatever the cores (``auto``, the default,
is the command as shipped: a worker prefetches only when processes x 2 threads fit).

Usage: ``python -m benchmarks.bench_demo [--size tiny|small] [--jobs N] [--pool-prefetch
auto|on] [--warm-only]``
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

#: the command with every pool worker prefetching (``--pool-prefetch on``)
_PREFETCH_ON = ("import sys; import dpbandits.harness.reproduce as r; "
                "r.prefetch_in_pool = lambda *a, **k: True; from dpbandits.cli import main; "
                "sys.exit(main(sys.argv[1:]))")


def run_demo(out: Path, cache: Path | None, size: str, jobs: int,
             pool_prefetch: str = "auto") -> dict:
    """One run of the demo's command into ``out`` with the certificate store ``cache``
    (``None``: the user's own store)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if cache is not None:
        env["DPBANDITS_CACHE_DIR"] = os.fspath(cache)
    args = ["reproduce", "fig5.1", "--size", size, "--panels", "AB", "--jobs", str(jobs),
            "--out", os.fspath(out), "--overwrite", "--quiet"]
    head = ([sys.executable, "-c", _PREFETCH_ON] if pool_prefetch == "on"
            else [sys.executable, "-m", "dpbandits.cli"])
    cmd = head + args
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


def bench(size: str = "small", jobs: int = 2, pool_prefetch: str = "auto",
          warm_only: bool = False) -> dict:
    from dpbandits._background import available_cores, prefetch_in_pool

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if warm_only:  # the user's store, filled by an earlier run
            cold, warm = None, run_demo(tmp / "warm", None, size, jobs, pool_prefetch)
        else:
            cold = run_demo(tmp / "cold", tmp / "cache", size, jobs, pool_prefetch)
            warm = run_demo(tmp / "warm", tmp / "cache", size, jobs, pool_prefetch)
    return {"benchmark": "demo", "command": "dpbandits reproduce fig5.1 --size "
            f"{size} --panels AB --jobs {jobs}", "cpus": available_cores(), "target_s": 30,
            "workers_prefetch": pool_prefetch == "on" or prefetch_in_pool(jobs),
            "cold_store": cold, "warm_store": warm}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=["tiny", "small"], default="small")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pool-prefetch", choices=["auto", "on"], default="auto",
                    help="on: every worker prefetches (the command before issue 37)")
    ap.add_argument("--warm-only", action="store_true",
                    help="one run with the user's certificate store")
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.size, args.jobs, args.pool_prefetch, args.warm_only),
                     indent=2))


if __name__ == "__main__":
    main()

"""Run every benchmark of this folder and print one JSON object.

Usage (from the repository root)::

    python -m benchmarks                       # every benchmark, full size
    python -m benchmarks --quick               # every benchmark, smallest sizes (a smoke run)
    python -m benchmarks --reference DIR       # also time the authors' reference
                                               # implementation (a checkout of
                                               # liangzp/DP-Streaming-SCO at DIR)
    python -m benchmarks --only simulate envs  # a selection
    python -m benchmarks --list

Each benchmark runs as ``python -m benchmarks.<module>`` in its own process (BLAS limited to
one thread); the output holds, per benchmark, the JSON it printed (or its error), its wall
time, and the machine's load average before and after (the numbers are only comparable on a
quiet machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

#: name -> (module, arguments, arguments with --quick)
SUITE = {
    "simulate": ("benchmarks.bench_simulate", [], ["--quick"]),
    "agents": ("benchmarks.bench_agents", [], ["--horizon", "300"]),
    "envs": ("benchmarks.bench_envs", [], ["--reps", "5", "--horizon", "300"]),
    "fliphat": ("benchmarks.bench_fliphat", [], ["--reps", "2", "--horizon", "300"]),
    "streaming": ("benchmarks.bench_streaming", [], ["--reps", "2", "--horizon", "300"]),
    "batch": ("benchmarks.bench_batch", [], ["--quick"]),
    "cli": ("benchmarks.bench_cli", [], ["--reps", "2", "--horizon", "100", "--repeat", "1"]),
    "scaling": ("benchmarks.bench_scaling", [], ["--quick"]),
    "overhead": ("benchmarks.bench_overhead", [], ["--horizon", "300", "--repeat", "1"]),
    "fresh": ("benchmarks.bench_fresh", [], ["--quick"]),
    "startup": ("benchmarks.bench_startup", [], ["--repeat", "1"]),
    "demo": ("benchmarks.bench_demo", [], ["--size", "tiny"]),
    "floor": ("benchmarks.bench_floor", [], ["--reps", "2", "--horizon", "300"]),
    "fit_predict": ("benchmarks.bench_fit_predict", [], ["--repeat", "1", "--rows", "30"]),
    "obd": ("benchmarks.bench_obd", [], ["--horizons", "2", "4", "--faithful-horizons", "1",
                                         "2"]),
}


def _json_objects(text: str) -> list:
    """Every JSON value printed on ``text`` (one indented object, or one per line)."""
    dec, out, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        value, i = dec.raw_decode(text, i)
        out.append(value)


def run(name: str, quick: bool = False, reference: str | None = None) -> dict:
    """Run one benchmark of :data:`SUITE` in a child process."""
    module, args, quick_args = SUITE[name]
    cmd = [sys.executable, "-m", module, *(quick_args if quick else args)]
    if reference and name in ("simulate", "scaling"):
        cmd += ["--reference", os.fspath(reference)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    row = {"name": name, "command": " ".join(["python", "-m", *cmd[2:]]),
           "wall_seconds": time.perf_counter() - start}
    if out.returncode:
        tail = out.stderr.strip().splitlines()
        return {**row, "error": tail[-1] if tail else f"exit status {out.returncode}"}
    try:
        results = _json_objects(out.stdout)
    except json.JSONDecodeError as exc:
        return {**row, "error": f"output is not JSON: {exc}"}
    return {**row, "results": results[0] if len(results) == 1 else results}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smallest sizes (a smoke run)")
    ap.add_argument("--reference", metavar="DIR",
                    help="checkout of liangzp/DP-Streaming-SCO to compare with")
    ap.add_argument("--only", nargs="+", choices=sorted(SUITE), metavar="NAME",
                    help=f"benchmarks to run ({', '.join(SUITE)})")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, (module, *_) in SUITE.items():
            print(f"{name:10s} python -m {module}")
        return 0
    if args.reference and not os.path.isfile(os.path.join(args.reference, "bandit_algo.py")):
        ap.error(f"--reference {args.reference!r} is not a checkout of "
                 "liangzp/DP-Streaming-SCO (no bandit_algo.py)")
    report = {"python": platform.python_version(), "machine": platform.machine(),
              "cpus": os.cpu_count(), "load_average_before": os.getloadavg(),
              "quick": args.quick, "reference": args.reference, "benchmarks": []}
    for name in args.only or list(SUITE):
        report["benchmarks"].append(run(name, args.quick, args.reference))
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))
    return 1 if any("error" in b for b in report["benchmarks"]) else 0


if __name__ == "__main__":
    sys.exit(main())

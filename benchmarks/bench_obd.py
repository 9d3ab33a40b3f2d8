"""DP-UCB on the replay of the Open Bandit Dataset sample (campaign ``all``: K = 80 items,
d = 24 one-hot user features, so the faithful release is (dK+1) = 1921 square), faithful and
``block_diagonal=True``, in seconds per accepted round of one replication.

Each variant runs ``simulate("dpbandits/Replay-v0", "dp-ucb", horizon=H)`` (``H`` accepted
rounds; the replay asks the agent for an arm on every logged round, about K per accepted one)
at two horizons in one fresh process after a warm-up; the cost per accepted round is the
difference of the two runs' seconds over the difference of the horizons (set-up, the first
release and the compilation cancel). Also reported: the logged rounds the replay read and
the run's peak resident memory. Needs the sample (``python -m pip download obp==0.5.7
--no-deps --ignore-requires-python -d DIR``, then ``DPBANDITS_OBD=DIR``); without it the
benchmark says so. Prints one JSON object.

Usage: ``python -m benchmarks.bench_obd [--horizons H1 H2] [--faithful-horizons H1 H2]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time
from dpbandits.datasets import load_obd
from dpbandits.harness import simulate
block, h1, h2 = sys.argv[1] == "1", int(sys.argv[2]), int(sys.argv[3])
log = load_obd("all")
kw = dict(n_reps=1, seed=0, env_params={"log": log}, agent_params={"block_diagonal": block})
simulate("dpbandits/Replay-v0", "dp-ucb", horizon=2, **kw)  # compile, calibrate, certify
runs = [simulate("dpbandits/Replay-v0", "dp-ucb", horizon=h, **kw) for h in (h1, h2)]
print(json.dumps({"block_diagonal": block, "K": 80, "d": int(log.contexts.shape[1]),
                  "horizons": [h1, h2], "seconds": [r.seconds for r in runs],
                  "peak_rss_mb": max(r.peak_memory_mb for r in runs),
                  "s_per_accepted_round": (runs[1].seconds - runs[0].seconds) / (h2 - h1)}))
"""


def run_variant(block: bool, h1: int, h2: int) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, "1" if block else "0", str(h1),
                          str(h2)], capture_output=True, text=True, env=env)
    if out.returncode:
        tail = out.stderr.strip().splitlines()
        return {"block_diagonal": block, "error": tail[-1] if tail else "failed"}
    return json.loads(out.stdout)


def bench(horizons=(20, 60), faithful_horizons=(3, 8)) -> dict:
    from dpbandits.datasets.obd import OBD_DOWNLOAD, obd_source

    try:
        source = str(obd_source())
    except (ImportError, FileNotFoundError, ValueError) as exc:
        return {"benchmark": "obd", "skipped": f"no Open Bandit Dataset sample ({exc}); "
                f"fetch it with `{OBD_DOWNLOAD}` and set DPBANDITS_OBD=DIR"}
    load = os.getloadavg()
    rows = [run_variant(True, *horizons), run_variant(False, *faithful_horizons)]
    return {"benchmark": "obd", "source": source, "load_before": load,
            "load_after": os.getloadavg(), "variants": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizons", type=int, nargs=2, default=(20, 60),
                    help="accepted rounds of the two block-diagonal runs")
    ap.add_argument("--faithful-horizons", type=int, nargs=2, default=(3, 8),
                    help="accepted rounds of the two faithful runs (about 1-5 s each)")
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.horizons, args.faithful_horizons), indent=2))


if __name__ == "__main__":
    main()

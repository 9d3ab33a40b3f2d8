"""A fresh process against a warm one (issue 28): the first ``simulate`` call of a new Python
process, the way a user meets it, for DP-HDB at the Figure 5.1 setting (R = 100) and DP-UCB
Gaussian (R = 1), T = 1e4.

Per case, three fresh processes: ``cold`` (an empty certificate store: the accountant
composes the certificate), ``fresh`` (the store the cold run filled, as for any later run) --
each reporting the process's wall time (imports included), the first call's seconds, its
certification's share, and the process's peak resident memory after each import step and
each run (``ru_maxrss``: where the memory goes) -- and ``warm``: a second call
in the fresh process (the simulation loop alone). Prints one JSON object.

Usage: ``python -m benchmarks.bench_fresh [--quick] [--case NAME ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ENV_ID = "dpbandits/Figure5.1-v0"
#: name -> (agent, R, T)
CASES = {"dp-hdb": ("dp-hdb", 100, 10_000), "dp-ucb-gaussian": ("dp-ucb", 1, 10_000)}

CHILD = r"""
import importlib, json, resource, sys, time
t0 = time.perf_counter()
agent, R, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
steps = {}
for name in ("numpy", "scipy.linalg", "gymnasium", "dpbandits", "dpbandits.agents",
             "dpbandits.harness"):
    importlib.import_module(name)
    steps[name] = round(peak_mb(), 1)
from dpbandits.harness import simulate
from dpbandits.privacy.accounting import certification
recompute, spent = certification._recompute, [0.0]
def timed(*args):
    start = time.perf_counter()
    try:
        return recompute(*args)
    finally:
        spent[0] += time.perf_counter() - start
certification._recompute = timed
kw = dict(n_reps=R, seed=0, env_params={"horizon": T})
t1 = time.perf_counter()
first = simulate("dpbandits/Figure5.1-v0", agent, **kw)
t2 = time.perf_counter()
steps["first run"] = round(peak_mb(), 1)
second = simulate("dpbandits/Figure5.1-v0", agent, **kw)
steps["second run"] = round(peak_mb(), 1)
print(json.dumps({"peak_rss_mb_after": steps, "imports_s": t1 - t0, "first_call_s": t2 - t1,
                  "first_loop_s": first.seconds, "certification_s": spent[0],
                  "warm_loop_s": second.seconds,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(agent: str, R: int, T: int, cache: str) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "DPBANDITS_CACHE_DIR": cache}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, agent, str(R), str(T)],
                         capture_output=True, text=True, env=env, check=True)
    row = json.loads(out.stdout)
    return {"process_wall_s": round(time.perf_counter() - start, 3),
            **{k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}}


def bench(cases=None, quick: bool = False) -> dict:
    out = {"benchmark": "fresh", "load_before": os.getloadavg(), "cases": []}
    for name in cases or list(CASES):
        agent, R, T = CASES[name]
        if quick:
            R, T = min(R, 2), 300
        with tempfile.TemporaryDirectory() as cache:
            cold = _child(agent, R, T, cache)
            fresh = _child(agent, R, T, cache)
        out["cases"].append({"case": name, "R": R, "T": T, "cold_store": cold,
                             "warm_store": fresh})
    out["load_after"] = os.getloadavg()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="R <= 2, T = 300 (a smoke run)")
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.case, args.quick), indent=2))


if __name__ == "__main__":
    main()

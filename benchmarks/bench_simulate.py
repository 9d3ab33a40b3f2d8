"""The agents through the public ``simulate`` at the Figure 5.1 setting (T = 1e4, d = 50,
K = 2, epsilon = 1, delta = 1/T on ``dpbandits/Figure5.1-v0``), optionally against the authors'
reference implementation (liangzp/DP-Streaming-SCO) run from a checkout given by path.

Every case runs in a fresh process, so its peak resident memory is its own: ``peak_rss_mb``
is the child's lifetime peak, ``import_rss_mb`` its resident memory after the imports (what
any run through ``simulate`` costs before it starts), ``seconds`` the simulation loop (wall),
``main_thread_cpu`` and ``process_cpu`` the CPU time of the loop's thread and of the whole
process (the second core's share is their difference: the noise and context draws ahead).

The reference is driven as an external program: a child process started in ``--reference
DIR`` imports its modules and its own bandit environment runs its ``DPUCB`` (DP-UCB) or
``OFW_peq1`` (DP-HDB) for one replication at the same T, d, K = 2, epsilon and delta; nothing
of it is copied here. Its times include the construction of the algorithm (its DP-UCB draws
all T noise matrices there).

Usage::

    python -m benchmarks.bench_simulate [--quick] [--reference DIR] [--case NAME ...]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

ENV_ID = "dpbandits/Figure5.1-v0"

#: name -> (agent, params, R, T, reference algorithm or None)
CASES = {
    "dp-hdb": ("dp-hdb", {}, 100, 10_000, "OFW_peq1"),
    "dp-ucb-gaussian": ("dp-ucb", {}, 1, 10_000, "DPUCB"),
    "dp-ucb-wishart": ("dp-ucb", {"noise": "wishart"}, 1, 10_000, None),
    "dp-ucb-authors-code": ("dp-ucb-authors-code", {}, 1, 10_000, "DPUCB"),
    "linucb": ("linucb", {}, 100, 10_000, None),
    "fliphat": ("fliphat", {}, 10, 100_000, None),
}
QUICK = {"R": 2, "T": 300}

CHILD = r"""
import json, resource, sys, time
case = json.loads(sys.argv[1])
from dpbandits.harness import simulate
from dpbandits.harness.memory import current_rss_mb
import dpbandits
kw = dict(n_reps=case["R"], seed=0, agent_params=case["params"])
simulate(case["env"], case["agent"], env_params={"horizon": 50}, **kw)  # compile, calibrate
base = current_rss_mb()
c0, p0 = time.thread_time(), time.process_time()
res = simulate(case["env"], case["agent"], env_params={"horizon": case["T"]}, **kw)
c1, p1 = time.thread_time() - c0, time.process_time() - p0
print(json.dumps({"seconds": res.seconds, "main_thread_cpu": c1, "process_cpu": p1,
                  "seconds_per_replication": res.seconds / case["R"],
                  "import_rss_mb": base, "run_peak_rss_mb": res.peak_memory_mb,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "final_regret_mean": float(res.regret.sum(axis=1).mean()),
                  "dpbandits": dpbandits.__version__}))
"""

REFERENCE = r"""
import json, resource, sys, time
algo, T, d, K, seed = sys.argv[1], *map(int, sys.argv[2:6])
import numpy as np
from threadpoolctl import threadpool_limits
import bandit_algo, env, utils
params = {"env": {"random_seed": seed, "T": T, "d": d, "s": 5, "k": K, "p": 1, "x_std": 0.05,
                  "y_std": 0.05, "test_size": 1000, "test_freq": 100, "lip": 1},
          "prv": {"eps": 1.0, "delta": 1.0 / T}, "logger": utils.Logger(),
          "algo": {"lr_scale": 1, "noise_free": False, "test_flag": False},
          "bandit": {"multi": algo != "DPUCB"}}
with threadpool_limits(1):
    np.random.seed(seed)
    w0, c0 = time.perf_counter(), time.process_time()
    params["algo"]["type"] = getattr(bandit_algo, algo)(params)
    env.bandits_env(params).run()
    w1, c1 = time.perf_counter() - w0, time.process_time() - c0
print(json.dumps({"seconds_per_replication": w1, "process_cpu": c1,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, *args: str, cwd=None) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=cwd)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else
                f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_case(name: str, quick: bool = False) -> dict:
    agent, params, R, T, _ = CASES[name]
    if quick:
        R, T = min(R, QUICK["R"]), QUICK["T"]
    case = {"env": ENV_ID, "agent": agent, "params": params, "R": R, "T": T}
    return {"case": name, "agent": agent, "params": params, "R": R, "T": T,
            **_child(CHILD, json.dumps(case))}


def run_reference(ref_dir: str, algo: str, T: int, d: int = 50, K: int = 2,
                  seed: int = 0) -> dict:
    """One replication of the reference's ``algo`` from the checkout ``ref_dir`` (the child
    runs in that directory, so its modules are the ones imported)."""
    return {"algorithm": algo, "T": T, "d": d, "K": K,
            **_child(REFERENCE, algo, str(T), str(d), str(K), str(seed), cwd=ref_dir)}


def bench(cases=None, quick: bool = False, reference: str | None = None) -> dict:
    out = {"benchmark": "simulate", "env": ENV_ID, "quick": quick,
           "python": platform.python_version(), "load_average": os.getloadavg(),
           "cases": []}
    refs: dict[tuple, dict] = {}
    for name in cases or list(CASES):
        row = run_case(name, quick)
        algo = CASES[name][4]
        if reference and algo:
            key = (algo, row["T"])
            if key not in refs:
                refs[key] = run_reference(reference, algo, row["T"])
            ref = refs[key]
            row["reference"] = ref
            if "seconds_per_replication" in ref and "seconds_per_replication" in row:
                row["speedup_vs_reference"] = (ref["seconds_per_replication"]
                                               / row["seconds_per_replication"])
        out["cases"].append(row)
    out["load_average_after"] = os.getloadavg()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"R <= {QUICK['R']}, T = {QUICK['T']}")
    ap.add_argument("--reference", metavar="DIR",
                    help="checkout of liangzp/DP-Streaming-SCO to time against")
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.case, args.quick, args.reference), indent=2))


if __name__ == "__main__":
    main()

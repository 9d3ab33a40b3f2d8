"""Scaling table: seconds per replication and peak memory of DP-HDB, DP-UCB (Gaussian tree),
FLIPHAT and LinUCB through the public ``simulate`` on ``dpbandits/Figure5.1-v0`` (epsilon = 1)
over d in {50, 500, 5000}, K in {2, 10}, T in {1e4, 1e5} and R in {1, 100}, with the growth
exponents in d and T fitted over the measured cells next to each algorithm's arithmetic count
per round, and the authors' reference implementation's time where it runs (``--reference``).

Each cell runs in its own child process (so peaks do not mix): the agent is built for the
cell's horizon T, compiled on 2 rounds, then probed on h = 2, 8, 32, 128, ... rounds (the first
h rounds of the same agent and environment; h = 2 measures the start-up cost) while the next
probe is predicted to fit the probe budget. The cell's time is predicted from the last two
probes (fixed cost plus a cost per round); only when the prediction fits the cell's budget is
the cell run, by name at its full size as in ``bench_simulate``, and measured. Otherwise it is
recorded as the prediction with the status "extrapolated, not run" and never presented as a
measurement. A cell whose state (predicted from the agent's arrays, below) exceeds the memory
limit is not started: its time is the nearest cell's scaled by the ratio of the arithmetic
counts (also "extrapolated, not run"). The reference (``bandit_algo.OFW_peq1`` for DP-HDB,
``DPUCB`` for DP-UCB, one replication at a time; none exists for FLIPHAT and LinUCB) is probed
and budgeted the same way, in a child started in its checkout.

Usage::

    python -m benchmarks.bench_scaling [--quick] [--reference DIR] [--out DIR]
        [--budget S] [--probe-budget S] [--memory-limit-mb MB] [--agent NAME ...]

Prints one JSON object; ``--out DIR`` also writes scaling.md, scaling.csv and scaling.png there.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import _scaling as S
from benchmarks.bench_simulate import REFERENCE

ENV_ID = "dpbandits/Figure5.1-v0"
ROOT = Path(__file__).resolve().parent.parent
GRID = {"d": (50, 500, 5000), "K": (2, 10), "T": (10_000, 100_000), "R": (1, 100)}
QUICK = {"d": (8, 16), "K": (2,), "T": (64, 256), "R": (1, 2)}
PROBE_START, PROBE_FACTOR = 8, 4
REF_PROBES = (100, 1000, 10_000)
REFERENCE_ALGO = {"dp-hdb": "OFW_peq1", "dp-ucb": "DPUCB"}

#: agent -> (arithmetic per round and replication, what it counts, count(d, K), its exponent
#: in d). Derived from the code: optim/streaming (DP-POFW, DP-HDB's arms), dp_ucb and
#: _ucb_kernels, _linucb_kernels, fliphat and _niht; the environment adds O(Kd) per round (one
#: context, K inner products), and every algorithm's cost is linear in T.
COUNTS = {
    "dp-hdb": ("4Kd + K (d/32 + ~4) random words",
               "per arm the recursive gradient at two iterates, the Frank-Wolfe step and the "
               "scores, O(d) each, and report-noisy-min over the 2d vertices sampled from its "
               "exact law (2d sign bits and about four more words while the noise dominates "
               "the score spread, as here); every arm advances every round",
               lambda d, K: 4.0 * K * d, 1),
    "dp-ucb": ("n^3/3 + (K+4) n^2, n = dK+1",
               "Cholesky of the released V_t (n^3/3), n(n+1)/2 node normals, the node into the "
               "O(log T) partial sums (one addition), the rank-one Gram update, K triangular "
               "solves",
               lambda d, K: (d * K + 1) ** 3 / 3 + (K + 4) * (d * K + 1) ** 2, 3),
    "linucb": ("(K+1) d^2",
               "u_k = V_k^-1 x for every arm (packed symmetric), Sherman-Morrison on the "
               "pulled arm",
               lambda d, K: (K + 1.0) * d * d, 2),
    "fliphat": ("d^2 + 2Kd (+ O(Kd^2 log^2 T / T))",
                "the pulled arm's Gram block (folded 256 rows at a time) and the scores; per "
                "episode of n rounds O(log n) N-IHT iterations of Kd^2 (block matvec) + sKd "
                "(peeling), log2 T episodes",
                lambda d, K: d * d + 2.0 * K * d, 2),
}


def state_mb(agent: str, d: int, K: int, T: int, R: int) -> float:
    """Predicted memory of a cell's state in MiB: the agent's arrays (read off its ``_reset``)
    plus the harness's records (regret, rewards, arms: 20 bytes per round and replication);
    the noise and context chunks are bounded (16 MiB each) and not counted."""
    if agent == "dp-ucb":  # M, the O(log T) partial noise sums, the factor, the release
        n = d * K + 1
        floats = (math.ceil(math.log2(T)) + 1 + 3) * R * n * n
    elif agent == "linucb":  # packed V^-1 per arm, theta, u
        floats = R * K * (d * (d + 1) / 2 + 3 * d)
    elif agent == "fliphat":  # the episode's Gram blocks (the old ones until the fit is done)
        floats = 2 * R * K * d * d + 256 * R * d
    elif agent == "dp-hdb":  # a dozen (R, K, d) vectors
        floats = 12 * R * K * d
    else:
        raise ValueError(f"agent must be one of {sorted(COUNTS)}, got {agent!r}")
    return (8 * floats + 20 * R * T) / 2**20


def reference_state_mb(algo: str, d: int, K: int, T: int) -> float:
    """The reference's arrays: DPUCB draws all T noise matrices (T (dK)^2 floats) up front;
    both draw the T x d contexts; its logger keeps a Python list per round (~200 bytes)."""
    floats = T * d * 2 + T * K
    if algo == "DPUCB":
        floats += T * (d * K) ** 2 + T * d * K
    return (8 * floats + 200 * T) / 2**20


# -- the child: one or more cells in one process ----------------------------------------------

def _child(cells: list[dict]) -> None:
    """Run ``cells`` in this process, one JSON line each (see the module docstring)."""
    import resource

    import dpbandits
    from dpbandits.agents.base import make_agent
    from dpbandits.harness import simulate
    from dpbandits.harness.memory import current_rss_mb

    import_rss = current_rss_mb()
    for c in cells:
        d, K, T, R = c["d"], c["K"], c["T"], c["R"]
        row: dict = {"import_rss_mb": import_rss, "load_average": os.getloadavg(),
                     "dpbandits": dpbandits.__version__,
                     "dpbandits_path": os.path.dirname(dpbandits.__file__)}
        kw = {"n_reps": R, "seed": 0, "env_params": {"horizon": T, "dim": d, "n_arms": K}}
        agent = make_agent(c["agent"], n_arms=K, dim=d, horizon=T)
        simulate(ENV_ID, agent, horizon=min(2, T), **kw)  # compile, calibrate
        probes: list[list[float]] = []
        h = min(2, T)  # the first probe measures the start-up cost (reset, first chunks)
        while h < T:
            res = simulate(ENV_ID, agent, horizon=h, **kw)
            probes.append([h, res.seconds, res.peak_memory_mb])
            nxt = min(T, PROBE_START if h < PROBE_START else h * PROBE_FACTOR)
            if nxt >= T or S.next_probe_seconds(probes, nxt) > c["probe_budget"]:
                break
            h = nxt
        predicted = S.predict_seconds(probes, T) if probes else 0.0
        row.update(probes=probes, predicted_seconds=predicted,
                   status=S.mark(predicted, c["budget"]))
        if row["status"] == S.MEASURED:
            base = current_rss_mb()
            res = simulate(ENV_ID, c["agent"], **kw)
            row.update(seconds=res.seconds, seconds_per_replication=res.seconds / R,
                       run_peak_rss_mb=res.peak_memory_mb,
                       run_added_mb=None if base is None else res.peak_memory_mb - base,
                       basis="measured", final_regret_mean=float(
                           res.regret.sum(axis=1).mean()))
        else:
            h, s = probes[-1][:2]
            row.update(seconds_per_replication=predicted / R, basis=(
                f"probe: {s:.3g} s for the first {h} rounds"
                + (f", {probes[-2][1]:.3g} s for {probes[-2][0]}" if len(probes) > 1 else "")
                + ", linear in the rounds"))
        row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(row), flush=True)


def _spawn(args: list[str], timeout: float, cwd=None) -> list[dict] | dict:
    """Run ``python args`` with one BLAS thread; its JSON lines, or ``{"error": ...}``."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": os.fspath(ROOT)}
    try:
        out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                             cwd=cwd or ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode:
        tail = out.stderr.strip().splitlines()
        return {"error": tail[-1] if tail else f"exit status {out.returncode}", "done": lines}
    return lines


def run_cells(cells: list[dict], budget: float, probe_budget: float) -> list[dict]:
    """Run ``cells`` (dicts with agent, d, K, T, R) in one child; one result row each (an
    "error" row for every cell without output when the child fails)."""
    job = [{**c, "budget": budget, "probe_budget": probe_budget} for c in cells]
    # a child takes at most its probes, the run (predicted <= budget; allow 3x), the imports
    timeout = len(cells) * (3 * budget + 2 * probe_budget) + 120
    out = _spawn(["-m", "benchmarks.bench_scaling", "--child", json.dumps(job)], timeout)
    done = out.get("done", []) if isinstance(out, dict) else out
    rows = [{**c, **r} for c, r in zip(cells, done, strict=False)]
    for c in cells[len(done):]:
        rows.append({**c, "status": S.ERROR, "seconds_per_replication": None,
                     "basis": out["error"] if isinstance(out, dict) else "no output"})
    return rows


def run_reference(ref_dir: str, algo: str, d: int, K: int, T: int, budget: float,
                  probe_budget: float, memory_limit_mb: float) -> dict:
    """One replication of the reference's ``algo`` at (d, K, T), probed at smaller T the same
    way (``REF_PROBES``); measured only when predicted within ``budget`` and memory."""
    def once(t):
        out = _spawn(["-c", REFERENCE, algo, str(t), str(d), str(K), "0"],
                     3 * budget + 60, cwd=ref_dir)
        return out if isinstance(out, dict) else out[-1]

    probes: list[list[float]] = []
    for h in (x for x in REF_PROBES if x < T):
        if reference_state_mb(algo, d, K, h) > memory_limit_mb or (
                probes and S.predict_seconds(probes, h) > probe_budget):
            break
        r = once(h)
        if "error" in r:
            return {"reference_status": S.ERROR, "reference_basis": r["error"]}
        probes.append([h, r["seconds_per_replication"]])
    mem = reference_state_mb(algo, d, K, T)
    predicted = S.predict_seconds(probes, T) if probes else None
    if mem <= memory_limit_mb and (predicted is None or predicted <= budget):
        r = once(T)
        if "error" in r:
            return {"reference_status": S.ERROR, "reference_basis": r["error"]}
        return {"reference_status": S.MEASURED, "reference_algorithm": algo,
                "reference_seconds_per_replication": r["seconds_per_replication"],
                "reference_peak_rss_mb": r["peak_rss_mb"], "reference_probes": probes}
    why = (f"predicted state {mem:.0f} MB > {memory_limit_mb:.0f} MB" if mem > memory_limit_mb
           else f"predicted {predicted:.3g} s > budget {budget:g} s")
    return {"reference_status": S.EXTRAPOLATED, "reference_algorithm": algo,
            "reference_seconds_per_replication": predicted, "reference_probes": probes,
            "reference_basis": why + (" (probes at T = " + ", ".join(str(int(p[0])) for p in
                                                                   probes) + ")"
                                      if probes else ", no probe fits")}


def grid(quick: bool, agents) -> list[dict]:
    g = QUICK if quick else GRID
    return [{"agent": a, "d": d, "K": K, "T": T, "R": R} for a in agents for d in g["d"]
            for K in g["K"] for T in g["T"] for R in g["R"]]


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, cwd=ROOT)
    return out.stdout.strip() or "unknown"


def bench(quick: bool = False, reference: str | None = None, agents=None,
          budget: float = 20.0, probe_budget: float = 3.0,
          memory_limit_mb: float = 3000.0, command: str = "") -> dict:
    agents = list(agents or COUNTS)
    start = time.perf_counter()
    report = {"benchmark": "scaling", "env": ENV_ID, "quick": quick, "command": command,
              "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": _commit(), "python": platform.python_version(),
              "cpus": os.cpu_count(), "load_average": os.getloadavg(),
              "budget_seconds": budget, "probe_budget_seconds": probe_budget,
              "memory_limit_mb": memory_limit_mb, "reference": reference}
    cells = grid(quick, agents)
    for c in cells:
        c["predicted_state_mb"] = state_mb(c["agent"], c["d"], c["K"], c["T"], c["R"])
    runnable = [c for c in cells if c["predicted_state_mb"] <= memory_limit_mb]
    # quick: every cell in one child (fast; the peaks then include the earlier cells')
    batches = [runnable] if quick else [[c] for c in runnable]
    rows = {id(c): c for c in cells}
    for batch in batches:
        if not batch:
            continue
        for c, r in zip(batch, run_cells(batch, budget, probe_budget), strict=True):
            rows[id(c)] = r
    out = [rows[id(c)] for c in cells]
    for r in out:  # not started: scaled from the nearest cell by the arithmetic counts
        if "status" in r:
            continue
        basis = S.nearest_basis(out, r)
        why = f"predicted state {r['predicted_state_mb']:.0f} MB > {memory_limit_mb:.0f} MB"
        r["status"] = S.EXTRAPOLATED
        if basis is None:
            r.update(seconds_per_replication=None, basis=why + "; no cell to scale from")
            continue
        r["seconds_per_replication"] = S.scale_by_count(basis, r, COUNTS[r["agent"]][2])
        r["basis"] = (f"{why}; arithmetic count scaled from d={basis['d']}, K={basis['K']}, "
                      f"T={basis['T']}, R={basis['R']} ({basis['status']})")
    if reference:
        refs: dict = {}
        for r in out:
            algo = REFERENCE_ALGO.get(r["agent"])
            if algo:
                key = (algo, r["d"], r["K"], r["T"])
                if key not in refs:
                    refs[key] = run_reference(reference, algo, r["d"], r["K"], r["T"],
                                              budget, probe_budget, memory_limit_mb)
                r.update(refs[key])
    report["cells"] = out
    report["exponents"] = exponents(out, agents)
    report["load_average_after"] = os.getloadavg()
    report["wall_seconds"] = time.perf_counter() - start
    report["dpbandits"] = next((r["dpbandits"] for r in out if "dpbandits" in r), "unknown")
    report["dpbandits_path"] = next((r["dpbandits_path"] for r in out
                                     if "dpbandits_path" in r), "unknown")
    return report


def exponents(rows: list[dict], agents) -> dict:
    """Per agent: the arithmetic count and its exponent in d, the exponents fitted over the
    measured cells and, for d, over every cell's probes (per-round slope at small T)."""
    out = {}
    for a in agents:
        mine = [r for r in rows if r["agent"] == a]
        per_round = []
        for r in mine:
            p = r.get("probes") or []
            if len(p) >= 2 and p[-1][1] > p[-2][1]:
                per_round.append({**r, "per_round": (p[-1][1] - p[-2][1])
                                  / (p[-1][0] - p[-2][0]) / r["R"]})
        out[a] = {"count": COUNTS[a][0], "count_detail": COUNTS[a][1],
                  "count_exponent_d": COUNTS[a][3],
                  "count_exponent_T": 1,
                  "measured": S.fit_exponents([r for r in mine if r["status"] == S.MEASURED]),
                  "probes": S.fit_exponents(per_round, value="per_round",
                                            groups=("K", "R", "T"), variables=("d",))}
    return out


def write(report: dict, out_dir) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scaling.md").write_text(S.markdown(report))
    S.write_csv(report["cells"], out_dir / "scaling.csv")
    g = QUICK if report["quick"] else GRID
    S.plot(report["cells"], out_dir / "scaling.png", fixed_T=min(g["T"]), fixed_d=min(g["d"]))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"d in {QUICK['d']}, T in {QUICK['T']}, R in {QUICK['R']}, K = 2")
    ap.add_argument("--reference", metavar="DIR",
                    help="checkout of liangzp/DP-Streaming-SCO to time against")
    ap.add_argument("--agent", action="append", choices=sorted(COUNTS))
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds a cell may take to be run (default 20; --quick 2)")
    ap.add_argument("--probe-budget", type=float, default=None,
                    help="seconds the largest probe of a cell may take (default 3; quick 0.5)")
    ap.add_argument("--memory-limit-mb", type=float, default=3000.0,
                    help="cells whose predicted state exceeds this are not started")
    ap.add_argument("--out", metavar="DIR", help="write scaling.md, .csv and .png there")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(json.loads(args.child))
        return
    budget = args.budget if args.budget is not None else (2.0 if args.quick else 20.0)
    probe = args.probe_budget if args.probe_budget is not None else (
        0.5 if args.quick else 3.0)
    command = "python -m benchmarks.bench_scaling " + " ".join(argv if argv is not None
                                                                else sys.argv[1:])
    report = bench(args.quick, args.reference, args.agent, budget, probe,
                   args.memory_limit_mb, command.strip())
    if args.out:
        write(report, args.out)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""How ``dp-screened-ls``'s defaults were chosen: a coarse coordinate search on the tuning
instances of :mod:`experiments.certified_learning.instances` (never on an evaluation
instance or seed).

Objective: the mean over the tuning instances of ``log(R_agent(T) / R_random(T))`` (mean
final regret over the replications, epsilon = 1, delta = 1/T, environment seeds 5000 + r).
Starting from ``START``, each pass visits the parameters in ``GRID`` order and sets each to
the grid value with the best objective given the others; two passes. Every run is a cell of
:func:`dpbandits.harness.grid.run_grid` under ``runs/tune/`` (resumable); the visited
configurations and the choice are written to ``tune_results.csv`` and ``tune_choice.json``.

Usage (from the repository root)::

    python -m experiments.certified_learning.tune [--reps 16] [--passes 2] [--jobs 1]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.harness.grid import CellFiles, run_grid
from experiments.certified_learning.instances import TUNE_SEED, TUNING
from experiments.certified_learning.sls import AGENT, run_cell, sls_cell

HERE = Path(__file__).resolve().parent
STORE = CellFiles(HERE / "runs" / "tune")

#: the starting point (values of the prototype); first_episode is a fraction of T here
START = {"first_fraction": 1 / 20, "screen_size": 12, "clip_screen": 0.35, "clip_fit": 0.5,
         "gram_share": 0.4, "threshold": 2.0, "ridge": 1.0}
GRID = {
    "clip_screen": [0.1, 0.2, 0.35, 0.5],
    "clip_fit": [0.2, 0.3, 0.5, 0.7],
    "first_fraction": [1 / 40, 1 / 20, 1 / 10],
    "screen_size": [8, 12, 16, 20],
    "gram_share": [0.15, 0.25, 0.4, 0.55],
    "threshold": [1.0, 1.5, 2.0, 3.0],
    "ridge": [0.5, 1.0, 2.0],
}


def agent_params(config: dict, horizon: int = 10_000) -> dict:
    """The agent's keyword arguments of a configuration (first_episode from the fraction)."""
    out = {k: v for k, v in config.items() if k != "first_fraction"}
    out["screen_size"] = int(out["screen_size"])
    out["first_episode"] = max(1, math.ceil(config["first_fraction"] * horizon))
    return out


def evaluate(config: dict, reps: int, jobs: int, cache: dict) -> float:
    """Objective of one configuration (lower is better); runs what is missing."""
    key = json.dumps(config, sort_keys=True)
    if key in cache:
        return cache[key]["objective"]
    cells = [sls_cell(inst, "random", {}, reps, TUNE_SEED) for inst in TUNING]
    cells += [sls_cell(inst, AGENT, agent_params(config), reps, TUNE_SEED) for inst in TUNING]
    frames = run_grid(cells, run_cell, STORE, n_jobs=jobs)
    n = len(TUNING)
    ratios = {inst: frames[n + i].final_regret.mean() / frames[i].final_regret.mean()
              for i, inst in enumerate(TUNING)}
    objective = float(np.mean(np.log(list(ratios.values()))))
    cache[key] = {**config, **{f"ratio[{k}]": v for k, v in ratios.items()},
                  "objective": objective}
    print(f"  {objective:+.3f}  " + " ".join(f"{v:.3f}" for v in ratios.values())
          + f"  {config}", flush=True)
    return objective


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=16)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (<= 2)")
    args = parser.parse_args(argv)
    cache: dict = {}
    best = dict(START)
    best_obj = evaluate(best, args.reps, args.jobs, cache)
    for p in range(args.passes):
        print(f"pass {p + 1}", flush=True)
        for name, values in GRID.items():
            for value in values:
                trial = {**best, name: value}
                obj = evaluate(trial, args.reps, args.jobs, cache)
                if obj < best_obj - 1e-12:
                    best, best_obj = trial, obj
            print(f" {name} -> {best[name]} (objective {best_obj:+.3f})", flush=True)
    table = pd.DataFrame(list(cache.values())).sort_values("objective")
    table.to_csv(HERE / "tune_results.csv", index=False, float_format="%.5g")
    choice = {"config": best, "agent_params_at_T=1e4": agent_params(best),
              "objective": best_obj, "reps": args.reps, "env_seeds": f"{TUNE_SEED} + r",
              "instances": {k: v[2] for k, v in TUNING.items()}}
    (HERE / "tune_choice.json").write_text(json.dumps(choice, indent=2) + "\n")
    print(json.dumps(choice, indent=2))


if __name__ == "__main__":
    main()

"""Where ``dp-screened-ls`` loses regret on a correlated, not-centred instance: the ratio to
uniform-random per segment of rounds (the episodes of T = 1e4) for the private agent, its
no-noise twin, the no-noise twin that keeps every coordinate and clips nothing, and LinUCB.
Runs on a *tuning* instance (never an evaluation one); writes ``diagnose_segments.csv``.

Usage (from the repository root)::

    python -m experiments.certified_learning.diagnose [--instance tune-eq2-K2-d80-s8]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from dpbandits.harness.compare import compare
from experiments.certified_learning.instances import TUNE_SEED, TUNING, problem_size

HERE = Path(__file__).resolve().parent
SEGMENTS = (0, 500, 1500, 3500, 7500, 10_000)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instance", default="tune-eq2-K2-d80-s8", choices=sorted(TUNING))
    parser.add_argument("--reps", type=int, default=16)
    args = parser.parse_args(argv)
    env_id, env_params, desc = TUNING[args.instance]
    _, d = problem_size(env_params)
    exact = {"epsilon": math.inf, "screen_size": d, "clip_screen": 1e6, "clip_fit": 1e6}
    agents = {"random": ("random", {}), "linucb (not private)": ("linucb", {}),
              "dp-screened-ls": ("dp-screened-ls", {}),
              "no noise": ("dp-screened-ls", {"epsilon": math.inf}),
              "no noise, every coordinate, no clip": ("dp-screened-ls", exact)}
    _, _, res = compare(agents, env_id, n_reps=args.reps, seed=TUNE_SEED, env_params=env_params)
    rate = res["random"].regret.mean()
    rows = []
    for label, r in res.items():
        row = {"instance": args.instance, "agent": label, "total": r.regret.mean() / rate}
        for a, b in zip(SEGMENTS[:-1], SEGMENTS[1:], strict=True):
            row[f"rounds {a}-{b}"] = r.regret[:, a:b].mean() / rate
        rows.append(row)
    table = pd.DataFrame(rows)
    table.to_csv(HERE / "diagnose_segments.csv", index=False, float_format="%.3f")
    print(desc)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))


if __name__ == "__main__":
    main()

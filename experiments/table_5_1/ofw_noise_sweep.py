#!/usr/bin/env python
"""Diagnostic for the README: how much less noise would DP-TOFW need to reach the SubOpt the
paper reports for OFW?  Runs DP-TOFW (Theorem 3.1 calibration) with epsilon multiplied by k
(the noise divided by about k; for k > 1 these runs are NOT (1, 1/T)-DP) on the Table 5.1
problem, best of the authors' learning-rate scales.

    .venv/bin/python -m experiments.table_5_1.ofw_noise_sweep

Writes ``results/ofw_noise_sweep.csv``.
"""

import math
import tomllib
from pathlib import Path

import pandas as pd

from experiments.table_5_1 import run as E

HERE = Path(__file__).resolve().parent


def main():
    conf = tomllib.loads((HERE / "config.toml").read_text())
    cfg = conf["problem"]
    rows = []
    for T, d, p, paper in [(1000, 5, 1.5, 0.0172), (2000, 5, math.inf, 0.0432),
                           (2000, 10, 1.5, 0.0595)]:
        prob = E.make_problem(T, d, p, 5, cfg)
        scales = conf["full"]["scales"]["OFW_pinf" if math.isinf(p) else "OFW_p1_5"]
        for k in (1, 3, 10, 30, 100):
            c = dict(cfg, epsilon=cfg["epsilon"] * k)
            best = None
            for s in scales:
                r = E.run_ofw(prob, s, c, E.method_rng(cfg, T, d, p, "OFW-sweep", s), "theorem")
                so = E.subopt(prob, E.test_risk(prob, r["theta"]))
                if best is None or so.mean() < best[1].mean():
                    best = (s, so)
            rows.append(dict(T=T, d=d, p=E.p_label(p), noise_divided_by=k, scale=best[0],
                             subopt_mean=best[1].mean(), subopt_std=best[1].std(ddof=1),
                             paper_ofw_subopt=paper))
            print(rows[-1], flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "ofw_noise_sweep.csv", index=False)


if __name__ == "__main__":
    main()

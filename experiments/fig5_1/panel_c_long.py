"""Panel C at T = 1e5 on a reduced epsilon grid (the full grid is
``dpbandits reproduce fig5.1 --size full --panels C``, several CPU-hours on 2 cores).

Run from the repository root:
``.venv/bin/python -m experiments.fig5_1.panel_c_long [--reps N] [--jobs J]``; resumable (a
``sweep``: finished cells are kept in ``results-T1e5/cells``).
"""

import argparse
from pathlib import Path

from dpbandits.harness import SweepSpec, sweep
from dpbandits.harness.reproduce import relative_to_random

OUT = Path(__file__).resolve().parent / "results-T1e5"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--horizon", type=int, default=100_000)
    args = ap.parse_args(argv)
    T = args.horizon
    spec = SweepSpec(
        agents={"DP-HDB (accountant)": {"name": "dp-hdb",
                                        "params": {"calibration": "accountant"},
                                        "grid": {"epsilon": [1.0, 10.0, 100.0]}},
                "DP-UCB (Gaussian)": {"name": "dp-ucb", "params": {"calibration": "accountant"},
                                      "grid": {"epsilon": [10.0, 100.0]}},
                "uniform random": {"name": "random"}},
        env="dpbandits/Figure5.1-v0", env_params={"horizon": T}, horizon=T, seeds=[0],
        n_reps=args.reps, record_every=T // 50)
    frame = sweep(spec, OUT, n_jobs=args.jobs, progress=False)
    table = relative_to_random(frame)
    table["horizon"] = T
    table.to_csv(OUT / "panel_c_T1e5.csv", index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()

"""Helpers shared by the DP-GIBO experiment scripts (config, records, plotting style).

Import after ``sys.path`` points at this folder; call :func:`single_thread` before numpy is
imported (the experiments run many small linear-algebra calls, for which multi-threaded BLAS
spin-waiting is slower, and the machine is shared).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import tomllib
from pathlib import Path


def single_thread() -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def load_config(path: Path, quick: bool) -> dict:
    """The TOML config; ``[quick]`` entries override the top level with ``--quick``."""
    with open(path, "rb") as fh:
        cfg = tomllib.load(fh)
    quick_cfg = cfg.pop("quick", {})
    if quick:
        for key, value in quick_cfg.items():
            if isinstance(value, dict):
                cfg.setdefault(key, {}).update(value)
            else:
                cfg[key] = value
    return cfg


def write_meta(out_dir: Path, cfg: dict, privacy: dict, started: float, extra=None) -> None:
    """JSON record of config, privacy guarantees, versions and run time."""
    import matplotlib
    import numpy
    import pandas
    import scipy

    meta = {
        "config": cfg,
        "privacy": privacy,
        "seconds": round(time.time() - started, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {"numpy": numpy.__version__, "scipy": scipy.__version__,
                     "pandas": pandas.__version__, "matplotlib": matplotlib.__version__},
    }
    if extra:
        meta.update(extra)
    (out_dir / "run_meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


def plot_style():
    import matplotlib

    matplotlib.use("Agg")
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")

"""Helpers shared by the DP-GIBO experiment scripts: config, parameters, records, plot style.

Import as ``from experiments.dp_gibo import common`` (scripts run with ``python -m`` from the
repository root; the package sets one BLAS thread before numpy is imported).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
import tomllib
from pathlib import Path


def arguments(doc: str, here: Path, plot_only: str | None = None) -> argparse.ArgumentParser:
    """The options every DP-GIBO script takes: ``--quick`` (the config's ``[quick]`` smoke
    run), ``--out`` (default: the script's folder) and, if ``plot_only`` names what is
    redrawn, ``--plot-only``."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--quick", action="store_true", help="tiny smoke run")
    ap.add_argument("--out", type=Path, default=here)
    if plot_only is not None:
        ap.add_argument("--plot-only", action="store_true", help=plot_only)
    return ap


def start(parser: argparse.ArgumentParser, here: Path, argv=None) -> tuple:
    """Parse ``argv``; return ``(args, config, start time)``, the config read from
    ``here/config.toml`` (its ``[quick]`` part with ``--quick``)."""
    args = parser.parse_args(argv)
    return args, load_config(here / "config.toml", args.quick), time.time()


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


def as_number(value) -> float:
    """A config number; the configs write infinity as the string ``"inf"``."""
    return math.inf if value == "inf" else float(value)


def surrogate(cfg: dict) -> dict:
    """DP-GIBO's surrogate kernel and acquisition-optimizer settings from the config."""
    from dpbandits.bo import RBF, GradientDesigner

    return dict(kernel=RBF(cfg["surrogate_lengthscale"]),
                designer=GradientDesigner(**cfg.get("designer", {})))


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


def finish(out: Path, cfg: dict, df, summary, meta: dict, started: float, draw) -> None:
    """Write ``results.csv`` (``df``), ``summary.csv``, ``figure.png`` (``draw(df, path)``) and
    ``run_meta.json`` (with ``meta["privacy"]`` and ``meta["info"]``) to ``out``; print the
    summary."""
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "results.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    draw(df, out / "figure.png")
    write_meta(out, cfg, meta["privacy"], started, {"info": meta["info"]})
    print(summary.to_string(index=False))
    print(meta["info"])
    print(f"done in {time.time() - started:.0f} s")


def plot_style():
    import matplotlib

    matplotlib.use("Agg")
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")


def save_figure(fig, path: Path) -> None:
    """Lay out, write (130 dpi) and close ``fig``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)

"""Seaborn plots of regret results (PNG, and SVG on request).

All functions take the tidy frame of ``SimulationResult.to_frame`` (columns ``agent, rep, t,
regret, cum_regret``) and return the written paths.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402


def _save(fig, path, svg: bool) -> list[Path]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path.with_suffix(".png"), dpi=120)
    out = [path.with_suffix(".png")]
    if svg:
        fig.savefig(path.with_suffix(".svg"))
        out.append(path.with_suffix(".svg"))
    plt.close(fig)
    return out


def normalize_by(frame: pd.DataFrame, reference: str, *, by: tuple = ()) -> pd.DataFrame:
    """Add ``rel_regret``: cumulative regret divided by the mean of agent ``reference``
    at the same ``t`` (and the same values of the ``by`` columns)."""
    keys = ["t", *by]
    ref = frame[frame["agent"] == reference]
    if ref.empty:
        raise ValueError(f"reference agent {reference!r} is not in the frame; "
                         f"agents: {sorted(frame['agent'].unique())}")
    ref_mean = ref.groupby(keys, observed=True)["cum_regret"].mean().rename("ref_cum_regret")
    out = frame.merge(ref_mean.reset_index(), on=keys, how="left")
    out["rel_regret"] = out["cum_regret"] / out["ref_cum_regret"]
    return out


def plot_regret_curves(frame: pd.DataFrame, path, *, log: bool = False,
                       normalize: str | None = None, title: str = "", svg: bool = False,
                       hue: str = "agent", ax=None) -> list[Path]:
    """Mean cumulative regret vs t with a 95% confidence band per agent."""
    y = "cum_regret"
    data = frame
    if normalize is not None:
        data = normalize_by(frame, normalize)
        y = "rel_regret"
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.lineplot(data=data, x="t", y=y, hue=hue, errorbar=("ci", 95), ax=ax)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret" if normalize is None
                  else f"cumulative regret / {normalize}")
    if title:
        ax.set_title(title)
    return _save(ax.figure, path, svg) if own else []


def plot_final_regret_distribution(frame: pd.DataFrame, path, *, svg: bool = False,
                                   title: str = "") -> list[Path]:
    """Distribution of final cumulative regret across replications, per agent."""
    last = frame.loc[frame.groupby(["agent", "rep"], observed=True)["t"].idxmax()]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.boxplot(data=last, x="agent", y="cum_regret", ax=ax)
    ax.tick_params(axis="x", rotation=30)
    ax.set_ylabel("final cumulative regret")
    if title:
        ax.set_title(title)
    return _save(fig, path, svg)


def plot_regret_vs_epsilon(frame: pd.DataFrame, path, *, eps_col: str = "agent.epsilon",
                           hue: str = "agent", svg: bool = False) -> list[Path]:
    """Final cumulative regret against epsilon (log x axis), one line per ``hue``."""
    last = frame.loc[frame.groupby(["cell", "rep"], observed=True)["t"].idxmax()]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.lineplot(data=last, x=eps_col, y="cum_regret", hue=hue, marker="o",
                 errorbar=("ci", 95), ax=ax)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("final cumulative regret")
    return _save(fig, path, svg)


def plot_cost(summary: pd.DataFrame, path, *, svg: bool = False) -> list[Path]:
    """Wall time and peak memory per agent from a ``compare`` summary table."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    sns.barplot(data=summary, x="agent", y="seconds", ax=axes[0])
    axes[0].set_ylabel("wall time [s]")
    mem = summary.assign(peak_memory_mb=summary["peak_memory_mb"].fillna(np.nan))
    sns.barplot(data=mem, x="agent", y="peak_memory_mb", ax=axes[1])
    axes[1].set_ylabel("peak traced memory [MB]")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30)
    return _save(fig, path, svg)

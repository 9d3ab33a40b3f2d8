"""Plots of regret results (PNG, and SVG on request).

The functions take the tidy frame of ``SimulationResult.to_frame`` (columns ``agent, rep, t,
regret, cum_regret``) and return the written paths. Confidence bands are analytic by default:
mean ± 1.96 · SE per round over the stored per-replication curves (``band="se"``). Seaborn's
bootstrap band (``band="bootstrap"``) is available but costs far more than the simulations of
a typical comparison, so seaborn is imported only when it is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import cycle
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpbandits.harness.results import (  # noqa: E402
    FrameBuilder,
    SimulationResult,
    privacy_entry,
    recorded_steps,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: normal quantile of a two-sided 95% interval
Z95 = 1.959963984540054
BANDS = ("se", "bootstrap", "none")
_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1)))
_FLOOR_COLOUR = "0.2"  # dark: the reference stays visible over agents as bad as random
#: rounds drawn per curve at most: a cumulative-regret curve is smooth, and drawing every
#: round of a long run costs more than simulating it
MAX_POINTS = 400


def _save(fig, path, svg: bool) -> list[Path]:
    """Write the package's own figure ``fig`` (constrained layout: the legends are part of
    the layout, so a plain ``savefig`` keeps them); the figure first grows by the height of
    its tallest legend below an axes, so that the axes keep their size."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    if legends:
        renderer = fig.canvas.get_renderer()
        grow = max(leg.get_window_extent(renderer).height for leg in legends) / fig.dpi
        fig.set_figheight(fig.get_figheight() + grow + _legend_offset() / 72)
    fig.savefig(path.with_suffix(".png"), dpi=100)
    out = [path.with_suffix(".png")]
    if svg:
        fig.savefig(path.with_suffix(".svg"))
        out.append(path.with_suffix(".svg"))
    plt.close(fig)
    return out


def _figure(figsize: tuple[float, float], **kwargs):
    """A figure of the package's own (constrained layout, which makes room for legends)."""
    return plt.subplots(figsize=figsize, layout="constrained", **kwargs)


def _legend_offset() -> float:
    """Points from an axes' bottom to below its x tick labels and x label (from rcParams)."""
    from matplotlib.font_manager import FontProperties

    rc = plt.rcParams

    def size(key: str) -> float:
        return FontProperties(size=rc[key]).get_size_in_points()

    # tick, pad, tick labels (mathtext 10^k stands taller: 1.5 em), label pad, label, gap
    return (rc["xtick.major.size"] + rc["xtick.major.pad"] + 1.5 * size("xtick.labelsize")
            + rc["axes.labelpad"] + 1.3 * size("axes.labelsize") + 4.0)


def _legend_below(ax: Axes, **kwargs) -> None:
    """The legend under the axes, below its x label: long privacy labels cover no curve.

    The legend is part of the figure's layout, and a figure without a layout engine gets
    constrained layout, so whatever saves the figure (``savefig`` without ``bbox_inches``,
    ``plt.show``, a gallery's scraper) keeps the legend inside the image."""
    from matplotlib.transforms import offset_copy

    fig = ax.get_figure(root=True)
    anchor = offset_copy(ax.transAxes, fig=fig, y=-_legend_offset(), units="points")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.0), bbox_transform=anchor,
              borderaxespad=0.0, frameon=False, **kwargs)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")


def run_title(env: str, horizon: int, n_reps: int | None = None) -> str:
    """The first title line of a run's plots: ``"dpbandits/Figure5.1-v0, horizon T = 10,000,
    10 replications"`` (the environment, the horizon and, if given, the replications)."""
    reps = "" if n_reps is None else f", {n_reps} replication{'s' * (n_reps != 1)}"
    return f"{env}, horizon T = {horizon:,}{reps}"


def _in_order(column: pd.Series) -> list:
    """Distinct values in order of first appearance (fast on long columns)."""
    return list(column.unique())


def _check_band(band: str) -> str:
    if band not in BANDS:
        raise ValueError(f"band must be one of {BANDS}, got {band!r}")
    return band


def privacy_label(privacy: dict | None, certified: dict | None) -> str:
    """Short legend text of an agent's guarantee, e.g. ``"JDP ε=1, δ=1e-04, certified"``,
    ``"claimed ε=1, δ=1e-04, NOT certified"`` or ``"non-private"``."""
    entry = privacy_entry("", privacy, certified)
    if not entry["private"]:
        return "non-private"
    delta = f"{entry['delta']:.0e}" if entry["delta"] else "0"
    text = f"{entry['notion']} ε={entry['epsilon']:.3g}, δ={delta}"
    if entry["notion"] == "GDP":  # the (ε, δ) of μ-GDP is its conversion to (ε, δ)-DP
        mu = (privacy or {}).get("mu")
        text = f"DP ε={entry['epsilon']:.3g}, δ={delta}" + (
            f" (of {mu:.3g}-GDP)" if mu is not None else " (of GDP)")
    if entry["certified"]:
        return f"{text}, certified"
    return f"claimed {text}, NOT certified"


def curve_statistics(frame: pd.DataFrame, y: str = "cum_regret",
                     hue: str = "agent") -> pd.DataFrame:
    """Per ``hue`` and round ``t``: ``mean``, ``se`` (std / sqrt(n), 0 when n = 1), ``n``,
    ``low`` and ``high`` = mean ∓ 1.96 · se (normal 95% interval over replications)."""
    stats = frame.groupby([hue, "t"], observed=True, sort=False)[y].agg(["mean", "std", "count"])
    stats = stats.reset_index().rename(columns={"count": "n"})
    stats["se"] = (stats["std"] / np.sqrt(stats["n"])).fillna(0.0)
    stats["low"] = stats["mean"] - Z95 * stats["se"]
    stats["high"] = stats["mean"] + Z95 * stats["se"]
    return stats.drop(columns="std")


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


def thin_rounds(frame: pd.DataFrame, *, log: bool = False,
                max_points: int = MAX_POINTS) -> pd.DataFrame:
    """Rows of at most ``max_points`` recorded rounds, evenly spaced in t (geometrically when
    ``log``), always keeping the first and the last; statistics per kept round are exact."""
    rounds = np.sort(pd.unique(frame["t"].to_numpy()))  # hashing: 3e6 rows in 0.03 s
    if rounds.size <= max_points:
        return frame
    return frame[frame["t"].isin(thinned_rounds(rounds, log=log, max_points=max_points))]


def thinned_rounds(rounds: np.ndarray, *, log: bool = False,
                   max_points: int = MAX_POINTS) -> np.ndarray:
    """The rounds :func:`thin_rounds` keeps of the sorted distinct recorded ``rounds``."""
    if rounds.size <= max_points:
        return rounds
    if log:
        grid = np.geomspace(rounds[0], rounds[-1], max_points)
    else:
        grid = np.linspace(rounds[0], rounds[-1], max_points)
    return rounds[np.unique(np.clip(np.searchsorted(rounds, grid), 0, rounds.size - 1))]


def thinned_frame(results: Sequence[SimulationResult], record_every: int = 1, *,
                  log: bool = False, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """``thin_rounds(tidy_frame(results, record_every), log=log)`` built from the results'
    arrays at the kept rounds only (the same rows and values, numbered from 0): the plots of
    ``dpbandits compare`` do not wait for the whole frame."""
    rounds = np.unique(np.concatenate([recorded_steps(r.horizon, record_every)
                                       for r in results]))
    builder = FrameBuilder(len(results), record_every,
                           rounds=thinned_rounds(rounds, log=log, max_points=max_points))
    for result in results:
        builder.add(result)
    return builder.frame()


def _styles(keys, floor) -> dict:
    """Colour and line style per curve: distinct for agents, grey dashed for the reference
    (``floor``: uniform random, the worst-case reference), drawn above every band and curve
    so that agents as bad as random do not hide it."""
    colours = cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    dashes = cycle(_LINESTYLES)
    out = {}
    for key in keys:
        if key == floor:
            out[key] = {"color": _FLOOR_COLOUR, "linestyle": "--", "linewidth": 1.4,
                        "zorder": 4}
        else:
            out[key] = {"color": next(colours), "linestyle": next(dashes), "linewidth": 1.6}
    return out


def _draw_curves(ax, data: pd.DataFrame, y: str, hue: str, band: str, labels: dict,
                 floor, styles: dict | None) -> int:
    """Draw one mean curve (and band) per ``hue`` value; returns the replication count."""
    keys = _in_order(data[hue])
    style = _styles(keys, floor)
    for key, given in (styles or {}).items():
        style.setdefault(key, {}).update(given)
    stats = curve_statistics(data, y, hue)
    for key in keys:
        s = stats[stats[hue] == key]
        label = labels.get(key, str(key))
        if key == floor:
            label = f"{label} (reference)"
        ax.plot(s["t"], s["mean"], label=label, **style[key])
        if band == "se":
            ax.fill_between(s["t"], s["low"], s["high"], color=style[key]["color"],
                            alpha=0.2, linewidth=0)
    if band == "bootstrap":
        import seaborn as sns  # only here: bootstrapping is the slow, optional path

        sns.lineplot(data=data, x="t", y=y, hue=hue, errorbar=("ci", 95), ax=ax,
                     palette={k: style[k]["color"] for k in keys}, legend=False,
                     linewidth=0)
    return int(stats["n"].max()) if len(stats) else 0


def plot_regret_curves(frame: pd.DataFrame, path: str | os.PathLike[str] | None = None, *,
                       log: bool = False, normalize: str | None = None, title: str = "",
                       svg: bool = False, hue: str = "agent", ax: Axes | None = None,
                       band: str = "se",
                       labels: dict | None = None, floor: str | None = None,
                       styles: dict | None = None) -> list[Path]:
    """Mean cumulative regret vs round t per ``hue`` value with a 95% band over replications.

    ``band``: ``"se"`` (mean ± 1.96 · SE, default), ``"bootstrap"`` (seaborn) or ``"none"``.
    ``labels`` maps agent labels to legend text (e.g. with ``privacy_label``); ``floor`` names
    the reference curve (uniform random: the worst case, a ceiling of regret), drawn grey and
    dashed above every band and curve and labelled "(reference)". ``log`` puts both
    axes on a log scale; rounds with zero regret are masked, not clipped. ``normalize`` divides
    by the mean curve of that agent. With ``ax`` the curves go there and nothing is written.
    At most ``MAX_POINTS`` rounds per curve are drawn (``thin_rounds``).
    """
    _check_band(band)
    y, data = "cum_regret", thin_rounds(frame, log=log)
    if normalize is not None:
        data, y = normalize_by(data, normalize), "rel_regret"
    own = ax is None
    if ax is None:
        fig, ax = _figure((7.2, 4.6))
    n = _draw_curves(ax, data, y, hue, band, labels or {}, floor, styles)
    if log:
        ax.set_xscale("log", nonpositive="mask")
        ax.set_yscale("log", nonpositive="mask")
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret" if normalize is None
                  else f"cumulative regret / {normalize}")
    band_text = {"se": f"mean ± 1.96·SE over {n} replications (95% CI)",
                 "bootstrap": f"mean, bootstrap 95% CI over {n} replications",
                 "none": f"mean over {n} replications"}[band]
    ax.set_title(f"{title}\n{band_text}" if title else band_text, fontsize=10)
    _legend_below(ax)
    return _save(ax.figure, path, svg) if own else []


def plot_reward_curves(frame: pd.DataFrame, path: str | os.PathLike[str] | None = None, *,
                       reference: float | None = None, title: str = "", svg: bool = False,
                       hue: str = "agent", ax: Axes | None = None, band: str = "se",
                       labels: dict | None = None, styles: dict | None = None) -> list[Path]:
    """Replay of logged data (a frame with ``cum_reward`` and ``log_events``, no regret): mean
    cumulative reward vs accepted round t per ``hue`` value with a 95% band over replications,
    the logged policy's mean reward per round ``reference`` as the grey dashed line
    ``reference * t``, and the accepted rounds with the mean logged rounds read in the title.
    """
    _check_band(band)
    data = thin_rounds(frame)
    own = ax is None
    if ax is None:
        fig, ax = _figure((7.2, 4.6))
    n = _draw_curves(ax, data, "cum_reward", hue, band, labels or {}, None, styles)
    if reference is not None:
        t = np.unique(data["t"].to_numpy())
        ax.plot(t, reference * t, color=_FLOOR_COLOUR, linestyle="--", linewidth=1.2,
                label=f"logged policy ({reference:.3g} per round)")
    last = final_regret(frame)
    accepted, events = int(last["t"].max()), float(last["log_events"].mean())
    ax.set_xlabel("accepted round t")
    ax.set_ylabel("cumulative reward")
    spread = {"se": f"mean ± 1.96·SE over {n} replications (95% CI)",
              "bootstrap": f"mean, bootstrap 95% CI over {n} replications",
              "none": f"mean over {n} replications"}[band]
    text = (f"{accepted} accepted rounds, {events:.0f} logged rounds read on average "
            f"(acceptance {accepted / events:.3g})\n{spread}")
    ax.set_title(f"{title}\n{text}" if title else text, fontsize=9)
    _legend_below(ax)
    return _save(ax.figure, path, svg) if own else []


def final_regret(frame: pd.DataFrame, by: Sequence[str] = ("agent",)) -> pd.DataFrame:
    """Rows of the last recorded round of each replication (per ``by`` group)."""
    return frame.loc[frame.groupby([*by, "rep"], observed=True)["t"].idxmax()]


def plot_final_regret_distribution(frame: pd.DataFrame, path: str | os.PathLike[str], *,
                                   svg: bool = False, title: str = "",
                                   labels: dict | None = None) -> list[Path]:
    """Box plot of final cumulative regret across replications, one box per agent (labels on
    the y axis so long privacy labels stay readable); of final cumulative reward for a replay
    frame (no ``cum_regret``)."""
    labels = labels or {}
    last = final_regret(frame)
    agents = _in_order(frame["agent"])
    y = "cum_regret" if "cum_regret" in frame.columns else "cum_reward"
    what = "final cumulative " + ("regret" if y == "cum_regret" else "reward")
    values = [last.loc[last["agent"] == a, y].to_numpy() for a in agents]
    fig, ax = _figure((7.2, 1.2 + 0.55 * len(agents)))
    boxes = ax.boxplot(values, orientation="horizontal", showmeans=True)
    ax.set_yticks(range(1, len(agents) + 1), [labels.get(a, str(a)) for a in agents],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(what)
    ax.set_title(f"{title}\n{what} over {max(map(len, values))} replications" if title
                 else f"{what} over {max(map(len, values))} replications", fontsize=10)
    _legend_below(ax, handles=[boxes["means"][0], boxes["medians"][0]],
                  labels=["mean", "median"], ncols=2)
    return _save(fig, path, svg)


def _errorbar_lines(ax, table: pd.DataFrame, x: str, hue: str, mean: str, half: str,
                    styles: dict) -> None:
    for key, part in table.groupby(hue, observed=True, sort=False):
        part = part.sort_values(x)
        ax.errorbar(part[x], part[mean], yerr=part[half], marker="o", capsize=3,
                    label=str(key), **styles[key])


def plot_panel_a(frame: pd.DataFrame, path: str | os.PathLike[str], *, svg: bool = False,
                 labels: dict | None = None, band: str = "se", title: str = "") -> list[Path]:
    """Figure 5.1 panel A: the authors' code as the paper plots it (both context scales on one
    axis), then each scale with its own uniform-random floor. ``frame`` has a ``contexts``
    column (``"l1"`` or ``"linf"``)."""
    fig, axes = _figure((18, 4.8), ncols=3)
    agents = frame[~frame["agent"].str.startswith("uniform random")]
    plot_regret_curves(agents, ax=axes[0], labels=labels, band=band,
                       title="as the paper plots it (two context scales on one axis)")
    for ax, scale in zip(axes[1:], ["l1", "linf"], strict=True):
        sub = frame[frame["contexts"] == scale]
        floor = next((a for a in _in_order(sub["agent"]) if a.startswith("uniform random")),
                     None)
        plot_regret_curves(sub, ax=ax, labels=labels, band=band, floor=floor,
                           title=f"{scale}-normalized contexts (as the authors' code runs it)")
    fig.suptitle("Figure 5.1 panel A — NOT certified" + (f"\n{title}" if title else ""))
    return _save(fig, path, svg)


def plot_panel_c(table: pd.DataFrame, path: str | os.PathLike[str], *, svg: bool = False,
                 title: str = "") -> list[Path]:
    """Figure 5.1 panel C: final regret relative to uniform random against epsilon, one line
    per agent and horizon; error bars are 1.96 · SE of the agent's mean (the random mean is
    treated as fixed)."""
    table = table.assign(
        key=table["agent"] + ", T=" + table["horizon"].astype(str),
        half=(Z95 * table["std"] / np.sqrt(table["count"]) / table["mean"]
              * table["relative_to_random"]).fillna(0.0))
    fig, ax = _figure((7.2, 4.6))
    _errorbar_lines(ax, table, "agent.epsilon", "key", "relative_to_random", "half",
                    _styles(_in_order(table["key"]), None))
    ax.axhline(1.0, color=_FLOOR_COLOUR, lw=1, ls="--", label="uniform random")
    ax.axhline(0.5, color=_FLOOR_COLOUR, lw=1, ls=":", label="half of uniform random")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("final regret / uniform random")
    if title:
        ax.set_title(title, fontsize=10)
    _legend_below(ax)
    return _save(fig, path, svg)

"""The arithmetic of the scaling table (``bench_scaling``): predicting a cell's time from its
probes, marking cells that are not run, fitting growth exponents, and writing the table
(Markdown, CSV) and its plot. Pure functions of the rows; nothing here runs a simulation."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence

import numpy as np

MEASURED = "measured"
EXTRAPOLATED = "extrapolated, not run"
ERROR = "error"

#: columns of scaling.csv (and of the Markdown table, with shorter headers)
COLUMNS = ("agent", "d", "K", "T", "R", "status", "seconds_per_replication",
           "peak_rss_mb", "run_added_mb", "predicted_state_mb", "basis",
           "reference_seconds_per_replication", "reference_status", "load_average")


def predict_seconds(probes: Sequence[Sequence[float]], horizon: int) -> float:
    """Wall seconds of a run of ``horizon`` rounds from probes ``[(h, seconds), ...]`` at
    increasing ``h``: linear in the rounds through the last two probes (a fixed start-up cost
    plus a cost per round), or proportional to the last probe when there is one probe or the
    last two do not increase."""
    if not probes:
        raise ValueError("probes must hold at least one (rounds, seconds) pair, got none")
    h1, s1 = probes[-1][0], probes[-1][1]
    if h1 <= 0 or s1 < 0:
        raise ValueError(f"probe (rounds={h1}, seconds={s1}) must have rounds > 0, seconds >= 0")
    if len(probes) >= 2:
        h0, s0 = probes[-2][0], probes[-2][1]
        if h1 > h0 and s1 > s0:
            return s1 + (s1 - s0) / (h1 - h0) * (horizon - h1)
    return s1 * horizon / h1


def next_probe_seconds(probes: Sequence[Sequence[float]], rounds: int) -> float:
    """Predicted cost of the next probe: :func:`predict_seconds` when the last two probes
    increase; otherwise the cost per round is still hidden in the start-up cost, and the next
    probe is predicted to cost the largest probe so far."""
    if len(probes) >= 2 and not probes[-1][1] > probes[-2][1]:
        return max(p[1] for p in probes)
    return predict_seconds(probes, rounds)


def mark(predicted: float, budget: float) -> str:
    """A cell is run (and its time then measured) only when its predicted time fits the
    budget; otherwise it is recorded as the prediction, :data:`EXTRAPOLATED`."""
    return MEASURED if predicted <= budget else EXTRAPOLATED


def nearest_basis(rows: Sequence[dict], target: dict) -> dict | None:
    """The row of the same agent with a time (measured or predicted from its own probes) that
    is closest to ``target``: same R first, then same T, then same K, then nearest log d."""
    cands = [r for r in rows if r["agent"] == target["agent"] and r is not target
             and r.get("seconds_per_replication") is not None
             and str(r.get("basis", "")).startswith(("measured", "probe"))]
    if not cands:
        return None
    return min(cands, key=lambda r: (r["R"] != target["R"], r["T"] != target["T"],
                                     r["K"] != target["K"],
                                     abs(math.log(r["d"] / target["d"]))))


def scale_by_count(basis: dict, target: dict, count) -> float:
    """Seconds per replication of ``target`` from ``basis``: the ratio of the arithmetic
    counts per round ``count(d, K)`` times the ratio of the horizons."""
    ratio = count(target["d"], target["K"]) / count(basis["d"], basis["K"])
    return basis["seconds_per_replication"] * ratio * target["T"] / basis["T"]


def fit_exponents(rows: Sequence[dict], value: str = "seconds_per_replication",
                  groups: Sequence[str] = ("K", "R"),
                  variables: Sequence[str] = ("d", "T")) -> dict:
    """Least squares of ``log value = sum_v e_v log v + c_group`` over ``rows`` (one intercept
    per combination of ``groups``, so e.g. K and R do not bias the exponents). Returns, per
    variable, its exponent or None when the rows do not identify it (e.g. one value of d),
    with the number of rows and the residual standard deviation of the log fit."""
    rows = [r for r in rows if r.get(value) is not None and r[value] > 0]
    out: dict = {"n_cells": len(rows), "residual_sd": None,
                 **{v: None for v in variables}}
    if len(rows) < 2:
        return out
    keys = sorted({tuple(r[g] for g in groups) for r in rows})
    X = np.array([[math.log(r[v]) for v in variables]
                  + [float(tuple(r[g] for g in groups) == k) for k in keys] for r in rows])
    y = np.log([r[value] for r in rows])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    full = np.linalg.matrix_rank(X)
    for i, v in enumerate(variables):
        if np.linalg.matrix_rank(np.delete(X, i, axis=1)) < full:  # column i is identified
            out[v] = float(coef[i])
    dof = len(rows) - full
    if dof > 0:
        out["residual_sd"] = float(np.sqrt(np.sum((X @ coef - y) ** 2) / dof))
    return out


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _seconds(row: dict, key: str = "seconds_per_replication", status: str = "status") -> str:
    s = row.get(key)
    if s is None:
        return "—"
    return f"{s:.3g}" if row.get(status) == MEASURED else f"({s:.3g})"


def markdown(report: dict) -> str:
    """The table as Markdown: one row per cell; predicted (not run) times in parentheses."""
    lines = [
        f"# Scaling table ({report['date']}, dpbandits {report['dpbandits']}, commit "
        f"{report['commit']})", "",
        f"Command: `{report['command']}`. Load average before {_la(report['load_average'])},"
        f" after {_la(report['load_average_after'])}; {report['cpus']} cores. Seconds are "
        "the simulation loop's wall time per replication through `simulate` on "
        "`dpbandits/Figure5.1-v0` (epsilon = 1); peak is the child process's resident set "
        "(imports included), 'added' what the run added to it. Times in parentheses are "
        f"predictions, **not measurements** (status '{EXTRAPOLATED}'); 'basis' says how each "
        f"was predicted. Budget per cell {report['budget_seconds']} s, memory limit "
        f"{report['memory_limit_mb']} MB of predicted state.", "",
        "## Growth exponents (log-log least squares over the measured cells, one intercept "
        "per (K, R))", "",
        "| agent | arithmetic per round and replication | count exponent d / T | fitted d | "
        "fitted T | cells | d from probes |",
        "|---|---|---|---|---|---|---|"]
    for name, ex in report["exponents"].items():
        lines.append(f"| {name} | {ex['count']} | {ex['count_exponent_d']} / 1 | "
                     f"{_fmt(ex['measured']['d'], 2)} | {_fmt(ex['measured']['T'], 2)} | "
                     f"{ex['measured']['n_cells']} | {_fmt(ex['probes']['d'], 2)} |")
    lines += ["", "'d from probes': the d exponent of the per-round cost measured by each "
              "cell's probes at small T (also for cells not run at full T), one intercept "
              "per (K, R, T).", "", "## Cells", "",
              "| agent | d | K | T | R | s / replication | peak MB | added MB | status | "
              "reference s / replication |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cells"]:
        ref = ("—" if r.get("reference_seconds_per_replication") is None else
               _seconds(r, "reference_seconds_per_replication", "reference_status"))
        lines.append(f"| {r['agent']} | {r['d']} | {r['K']} | {r['T']} | {r['R']} | "
                     f"{_seconds(r)} | {_fmt(r.get('peak_rss_mb'), 4)} | "
                     f"{_fmt(r.get('run_added_mb'), 3)} | {r['status']}"
                     f"{'' if r['status'] == MEASURED else ': ' + str(r.get('basis'))} | "
                     f"{ref} |")
    return "\n".join(lines) + "\n"


def _la(la) -> str:
    return "/".join(f"{x:.2f}" for x in la) if la else "—"


def write_csv(cells: Sequence[dict], path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in cells:
            w.writerow({**r, "load_average": _la(r.get("load_average"))})


def plot(cells: Sequence[dict], path, fixed_T: int, fixed_d: int) -> None:
    """Seconds per replication against d (at ``fixed_T``) and against T (at ``fixed_d``), one
    column per K; one line per agent (measured cells) and per reference algorithm, R as the
    line style; predictions (not run) as open markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    rows = [r for r in cells if r.get("seconds_per_replication") is not None]
    # the reference runs one replication at a time: one line per algorithm (drawn at R = 1)
    rows += [{"agent": f"reference {r['reference_algorithm']}", "d": r["d"], "K": r["K"],
              "T": r["T"], "R": 1, "status": r["reference_status"],
              "seconds_per_replication": r["reference_seconds_per_replication"]}
             for r in cells if r["R"] == 1 and r.get("reference_algorithm")
             and r.get("reference_seconds_per_replication") is not None]
    df = pd.DataFrame(rows)
    Ks, agents = sorted(df["K"].unique()), sorted(df["agent"].unique())
    fig, axes = plt.subplots(2, len(Ks), figsize=(5 * len(Ks) + 2, 8), squeeze=False)
    for row, (x, sel) in enumerate((("d", df["T"] == fixed_T), ("T", df["d"] == fixed_d))):
        for col, K in enumerate(Ks):
            ax, part = axes[row][col], df[sel & (df["K"] == K)]
            meas, pred = part[part["status"] == MEASURED], part[part["status"] != MEASURED]
            legend = row == 0 and col == len(Ks) - 1
            if len(meas):
                sns.lineplot(meas, x=x, y="seconds_per_replication", hue="agent", style="R",
                             markers=True, ax=ax, hue_order=agents, legend=legend)
            if len(pred):
                sns.scatterplot(pred, x=x, y="seconds_per_replication", hue="agent",
                                marker="$\\circ$", s=90, ax=ax, legend=False,
                                hue_order=agents)
            if legend and len(meas):
                sns.move_legend(ax, "upper left", bbox_to_anchor=(1.02, 1))
            ax.set(xscale="log", yscale="log", ylabel="seconds per replication",
                   title=f"K = {K}, " + (f"T = {fixed_T:g}" if x == "d" else f"d = {fixed_d}"))
            ticks = sorted(df[x].unique())
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    fig.suptitle("lines: measured; open circles: predicted, not run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

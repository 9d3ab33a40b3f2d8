"""Private agents on real contexts: every certified agent, LinUCB and uniform-random on the
four supervised-to-bandit datasets (iris, wine, breast cancer, digits) at epsilon in {1, 10}.

Each cell is one agent at one epsilon on one dataset, 20 replications (environment seeds
0..19: replication r walks the rows in the same random order for every agent — common random
numbers), one pass over the data (T = n rows: every person is one round, so each agent's
guarantee, stated for one round's (context, reward), is a guarantee per person; a second pass
would make one person several neighbouring units). Cells are stored one Parquet file each
under ``runs/`` by :func:`dpbandits.harness.grid.run_grid` (an interrupted run resumes).

Parts: ``run`` (the grid), ``tight`` (a diagnostic: the three l_2-bounded agents on the three
small datasets with ``context_bound`` set to the largest row's ``||x||_2`` instead of the
default ``sqrt(d)`` -- read off the data, so not a private configuration; it measures what the
slack between the declared and the real norms costs), ``norms`` (context norms against the
declared bounds, no agent), ``report`` (``results.md``, ``results.csv``, ``norms.csv``,
``relative_regret.png``); without a part, ``run``, ``tight`` and ``report``.

Usage (from the repository root; needs the ``datasets`` extra)::

    python -m experiments.real_data [run|tight|norms|report] [--reps 20]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpbandits
from dpbandits.agents import make_agent
from dpbandits.harness.grid import CellFiles, GridCell, run_grid
from dpbandits.harness.results import atomic_write_bytes, git_commit
from dpbandits.harness.simulate import env_sizes, make_env, simulate

HERE = Path(__file__).resolve().parent
STORE = CellFiles(HERE / "runs")
EPSILONS = (1.0, 10.0)
REPS = 20
#: dataset label -> registered id
ENVS = {"iris": "dpbandits/IrisBandit-v0", "wine": "dpbandits/WineBandit-v0",
        "breast cancer": "dpbandits/BreastCancerBandit-v0",
        "digits": "dpbandits/DigitsBandit-v0"}
#: label -> (registry name, params); the private ones also get epsilon
AGENTS = {
    "dp-hdb": ("dp-hdb", {"calibration": "accountant"}),
    "dp-ucb": ("dp-ucb", {"calibration": "accountant"}),
    "fliphat": ("fliphat", {"calibration": "accountant"}),
    "dp-screened-ls": ("dp-screened-ls", {}),
    "adac-oful": ("adac-oful", {"protect": "user"}),
    "ldp-linucb": ("ldp-linucb", {}),
    "linucb": ("linucb", {}),
    "random": ("random", {}),
}
NON_PRIVATE = ("linucb", "random")
#: DP-UCB factorizes one (dK x dK) design per round: on digits (dK = 640) the faithful agent
#: costs ~0.4 s a round at R = 20, ~12 CPU minutes a cell; its block-diagonal variant (the
#: same release and guarantee, cross-arm blocks dropped by post-processing) costs a third
BLOCK_DIAGONAL = ("digits",)
#: the diagnostic part: agents whose sensitivity is stated for ||x||_2 <= L, datasets
TIGHT_AGENTS = ("dp-ucb", "adac-oful", "ldp-linucb")
TIGHT_DATA = ("iris", "wine", "breast cancer")
TIGHT = " (L = largest row l2 norm)"


def cells(reps: int = REPS) -> list[GridCell]:
    """Every (dataset, agent, epsilon) cell; ``epsilon = nan`` for the non-private agents."""
    out = []
    for data in ENVS:
        for label in AGENTS:
            for eps in ([math.nan] if label in NON_PRIVATE else EPSILONS):
                eps_txt = "na" if math.isnan(eps) else f"{eps:g}"
                out.append(GridCell({"data": data, "label": label, "epsilon": eps,
                                     "reps": reps}, 0,
                                    f"{data.replace(' ', '_')}__{label}__eps{eps_txt}__R{reps}"))
    return out


def tight_cells(reps: int = REPS) -> list[GridCell]:
    """The diagnostic cells: ``TIGHT_AGENTS`` on ``TIGHT_DATA`` with the data's own bound."""
    return [GridCell({"data": data, "label": label + TIGHT, "epsilon": eps, "reps": reps}, 0,
                     f"{data.replace(' ', '_')}__{label}-tight__eps{eps:g}__R{reps}")
            for data in TIGHT_DATA for label in TIGHT_AGENTS for eps in EPSILONS]


def max_l2(data: str) -> float:
    """The largest ``||x||_2`` over the rows the environment of ``data`` serves."""
    return float(np.linalg.norm(make_env(ENVS[data], 1).unwrapped.config.X, axis=1).max())


def agent_params(data: str, label: str, epsilon: float) -> dict:
    """The agent's parameters in a cell (DP-UCB block-diagonal on ``BLOCK_DIAGONAL``; a
    ``TIGHT`` label: ``context_bound`` = the data's largest ``||x||_2``)."""
    tight = label.endswith(TIGHT)
    label = label.removesuffix(TIGHT)
    name, params = AGENTS[label]
    params = dict(params)
    if tight:
        params["context_bound"] = max_l2(data)
    if label not in NON_PRIVATE:
        params["epsilon"] = epsilon
    if label == "dp-ucb" and data in BLOCK_DIAGONAL:
        params["block_diagonal"] = True
    return params


def run_cell(cell: GridCell) -> pd.DataFrame:
    """Final regret per replication, the claimed and the certified epsilon, clipped rows."""
    data, label, epsilon, reps = cell["data"], cell["label"], cell["epsilon"], cell["reps"]
    n_arms, dim, horizon = env_sizes(make_env(ENVS[data], 1))
    params = agent_params(data, label, epsilon)
    agent = make_agent(AGENTS[label.removesuffix(TIGHT)][0], n_arms=n_arms, dim=dim,
                       horizon=horizon, **params)
    res = simulate(ENVS[data], agent, n_reps=reps, seed=cell.seed, label=label)
    g, cert = agent.privacy, res.certified
    clipped = getattr(agent, "n_clipped_contexts_", None)
    frame = pd.DataFrame({
        "data": data, "agent": label, "epsilon": epsilon, "rep": np.arange(reps),
        "horizon": horizon, "regret": res.cum_regret[:, -1],
        "claimed": "not private" if g is None else str(g),
        "certified_epsilon": np.nan if not cert or cert["epsilon"] is None
        else cert["epsilon"],
        "params": json.dumps({k: v for k, v in params.items() if k != "epsilon"}),
        "clipped_contexts": np.nan if clipped is None else np.asarray(clipped).reshape(
            reps, -1).sum(axis=1),
        "seconds": res.seconds, "version": dpbandits.__version__,
        "commit": git_commit() or "unknown"})
    print(f"  {cell.key}: regret {frame.regret.mean():7.1f}  ({res.seconds:5.0f} s, "
          f"certified eps {frame.certified_epsilon.iloc[0]:.4g})", flush=True)
    return frame


# ------------------------------------------------------------------------------ norms
def norms() -> pd.DataFrame:
    """Per dataset, the contexts the agents see against the bounds their noise assumes:
    ``||x||_inf`` (DP-HDB, FLIPHAT: bound 1) and ``||x||_2 / sqrt(d)`` (DP-UCB, AdaC-OFUL,
    LDP-LinUCB: ``u = x / L`` with ``L = sqrt(d)``, so this is ``||u||_2`` against 1)."""
    rows = []
    for data, env_id in ENVS.items():
        X = make_env(env_id, 1).unwrapped.config.X
        d = X.shape[1]
        linf, l2 = np.abs(X).max(axis=1), np.linalg.norm(X, axis=1) / math.sqrt(d)
        q = np.quantile(l2, [0.1, 0.5, 0.9])
        rows.append({"data": data, "n": X.shape[0], "d": d, "linf_min": linf.min(),
                     "linf_max": linf.max(), "u2_q10": q[0], "u2_median": q[1], "u2_q90": q[2],
                     "u2_max": l2.max(), "gram_signal_median": q[1] ** 2})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- report
def ratio_ci(agent: np.ndarray, random: np.ndarray, n_boot: int = 10_000, seed: int = 0
             ) -> tuple[float, float, float]:
    """``mean(agent) / mean(random)`` and its 95% paired-bootstrap interval (the arrays hold
    the same replications: common random numbers)."""
    agent, random = np.asarray(agent, float), np.asarray(random, float)
    idx = np.random.default_rng(seed).integers(0, len(agent), (n_boot, len(agent)))
    boots = agent[idx].mean(axis=1) / random[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return float(agent.mean() / random.mean()), float(lo), float(hi)


def table(frames: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, agent, epsilon): regret, its ratio to random with the interval,
    the claimed and the certified epsilon, clipped contexts."""
    rows = []
    for (data, agent, eps), sub in frames.groupby(["data", "agent", "epsilon"], dropna=False,
                                                  sort=False):
        rnd = frames[(frames.data == data) & (frames.agent == "random")].sort_values("rep")
        sub = sub.sort_values("rep")
        if len(rnd) != len(sub) or not np.array_equal(rnd.rep.values, sub.rep.values):
            continue
        ratio, lo, hi = ratio_ci(sub.regret.values, rnd.regret.values)
        rows.append({"data": data, "agent": agent, "epsilon": eps, "reps": len(sub),
                     "horizon": int(sub.horizon.iloc[0]), "regret_mean": sub.regret.mean(),
                     "regret_se": sub.regret.std(ddof=1) / math.sqrt(len(sub)),
                     "ratio_to_random": ratio, "ci_low": lo, "ci_high": hi,
                     "certified_epsilon": sub.certified_epsilon.iloc[0],
                     "claimed": sub.claimed.iloc[0], "params": sub.params.iloc[0],
                     "clipped_contexts": sub.clipped_contexts.sum(min_count=1),
                     "seconds": sub.seconds.iloc[0], "commit": sub.commit.iloc[0]})
    return pd.DataFrame(rows)


def _fmt(v: float, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def report(reps: int = REPS) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    done = [c for c in cells(reps) + tight_cells(reps) if STORE.done(c.key)]
    if not done:
        raise SystemExit("no finished cell under runs/: run the grid first")
    tab = table(pd.concat([STORE.load(c.key) for c in done], ignore_index=True))
    tab.to_csv(HERE / "results.csv", index=False)
    nrm = norms()
    nrm.to_csv(HERE / "norms.csv", index=False)
    lines = ["# Results (generated by `python -m experiments.real_data report`)", "",
             f"{reps} replications, T = n (one pass over the rows), delta = 1/T; ratio = "
             "mean final regret / uniform-random's on the same replications, 95% paired "
             "bootstrap interval; certified eps = epsilon recomputed by dp_accounting from the "
             "agent's own ledger at its delta; contexts clipped = rows clipped to the agent's "
             "context bound, summed over the replications (- : the agent has no such clip); "
             "commit(s) " + ", ".join(sorted(set(tab.commit))), ""]
    for data in ENVS:
        sub = tab[tab.data == data]
        if sub.empty:
            continue
        rnd = sub[sub.agent == "random"].regret_mean.iloc[0]
        lines += [f"## {data} (T = {sub.horizon.iloc[0]}, random's regret {rnd:.1f})", "",
                  "| agent | epsilon | certified eps | regret mean +- se | / random [95% CI] "
                  "| contexts clipped |", "|---|---|---|---|---|---|"]
        for r in sub.itertuples():
            name = r.agent + (" (block-diagonal)" if "block_diagonal" in r.params else "")
            lines.append(f"| {name} | {_fmt(r.epsilon)} | {_fmt(r.certified_epsilon, 4)} | "
                         f"{r.regret_mean:.1f} +- {r.regret_se:.1f} | {r.ratio_to_random:.3f} "
                         f"[{r.ci_low:.3f}, {r.ci_high:.3f}] | {_fmt(r.clipped_contexts)} |")
        lines.append("")
    lines += ["## Context norms against the declared bounds", "",
              "| data | n | d | l_inf norm, every row | l_2 norm / sqrt(d): 10% / median / "
              "90% / max |",
              "|---|---|---|---|---|"]
    for r in nrm.itertuples():
        linf = f"{r.linf_min:.3g}" if r.linf_min == r.linf_max else (
            f"{r.linf_min:.3g} .. {r.linf_max:.3g}")
        lines.append(f"| {r.data} | {r.n} | {r.d} | {linf} | {r.u2_q10:.2f} / "
                     f"{r.u2_median:.2f} / {r.u2_q90:.2f} / {r.u2_max:.2f} |")
    text = "\n".join(lines) + "\n"
    atomic_write_bytes(HERE / "results.md", text.encode())
    plot = tab[(tab.agent != "random") & ~tab.agent.str.endswith(TIGHT)].copy()
    plot["agent, epsilon"] = [a if a in NON_PRIVATE else f"{a}, eps={e:g}"
                              for a, e in zip(plot.agent, plot.epsilon, strict=True)]
    order = list(dict.fromkeys(plot["agent, epsilon"]))
    grid = sns.catplot(data=plot, y="agent, epsilon", x="ratio_to_random", col="data",
                       col_wrap=2, kind="point", order=order, linestyle="none", height=3.6,
                       aspect=1.25, errorbar=None, color="C0")
    for ax, data in zip(grid.axes.flat, ENVS, strict=False):
        sub = plot[plot.data == data].set_index("agent, epsilon").reindex(order)
        ax.errorbar(sub.ratio_to_random, np.arange(len(order)),
                    xerr=[sub.ratio_to_random - sub.ci_low, sub.ci_high - sub.ratio_to_random],
                    fmt="none", ecolor="C0", elinewidth=1)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    grid.set_axis_labels("final regret / uniform random (95% CI)", "")
    grid.figure.suptitle(f"Real contexts, one pass, {reps} replications", y=1.02)
    grid.savefig(HERE / "relative_regret.png", dpi=120, bbox_inches="tight")
    plt.close(grid.figure)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", nargs="?", choices=("run", "tight", "norms", "report"))
    ap.add_argument("--reps", type=int, default=REPS)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.part in (None, "run"):
        run_grid(cells(args.reps), run_cell, STORE)
    if args.part in (None, "tight"):
        run_grid(tight_cells(args.reps), run_cell, STORE)
    if args.part == "norms":
        print(norms().to_string(index=False))
    if args.part in (None, "report"):
        print(report(args.reps))
    print(json.dumps({"argv": sys.argv[1:] if argv is None else argv,
                      "seconds": round(time.perf_counter() - start, 1)}))
    return 0

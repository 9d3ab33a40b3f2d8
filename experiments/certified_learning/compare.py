"""Every certified agent beside non-private LinUCB and uniform-random (issue 18, "the study"):
final regret relative to random with 95% intervals over instances x epsilon x T, the
certified epsilon of every row (recomputed from the agent's own ledger), and the smallest
epsilon at which each agent halves random's regret.

Instances: the evaluation instances of :mod:`experiments.certified_learning.instances`
(Figure 5.1 and three correlated, not-centred ones with other K, d and sparsity; none used to
choose any default), at T = 1e4 and T = 1e5 (delta = 1/T), environment seeds 0 + r
(replication r; common random numbers across agents). One grid cell = one agent at one
(instance, epsilon, T) for ``reps`` replications, stored by
:func:`dpbandits.harness.grid.run_grid` under ``runs/compare/`` (resumable); the cells of
DP-HDB carry the package version in their name, so a new DP-HDB (new noise stream) is rerun.

Parts (from the repository root)::

    python -m experiments.certified_learning.compare grid --horizon 10000 [--agents ...]
    python -m experiments.certified_learning.compare grid --horizon 100000 --agents ...
    python -m experiments.certified_learning.compare report   # compare.md/.csv/.png

The noise-against-signal measurements are in :mod:`experiments.certified_learning.noise`.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpbandits
from dpbandits.agents import make_agent
from dpbandits.harness.grid import CellFiles, GridCell, run_grid
from dpbandits.harness.results import atomic_write_bytes
from dpbandits.harness.simulate import simulate
from experiments.certified_learning.instances import EVAL_SEED, EVALUATION, problem_size
from experiments.certified_learning.sls import ratio_ci

HERE = Path(__file__).resolve().parent
STORE = CellFiles(HERE / "runs" / "compare")
EPSILONS = (0.3, 1.0, 3.0, 10.0)
HORIZONS = (10_000, 100_000)
REPS = 20
HALF = 0.5
#: Figure 5.1 and two correlated, not-centred instances (K = 4, d = 30, s = 3; K = 3, d = 50,
#: dense theta); eq3-K2-d100-s10 is left out for compute (DP-UCB's d K = 200)
INSTANCES = ("figure5.1", "ar5-K4-d30-s3", "ar7-K3-d50-dense")

#: label -> (registry name, fixed params, trust model / basis in a few words)
AGENTS: dict[str, tuple[str, dict, str]] = {
    "dp-screened-ls": ("dp-screened-ls", {}, "JDP; one Gaussian release per user, PLD"),
    "fliphat (accountant)": ("fliphat", {"calibration": "accountant"},
                             "JDP; peeling per episode, PLD over the IHT steps"),
    "dp-ucb (accountant)": ("dp-ucb", {"calibration": "accountant"},
                            "JDP; Gaussian tree, PLD (faithful: whole (dK+1)^2 release)"),
    "dp-ucb (accountant, block-diag.)": (
        "dp-ucb", {"calibration": "accountant", "block_diagonal": True},
        "JDP; same release, per-arm diagonal blocks kept (post-processing)"),
    "dp-ucb (accountant, block-diag., no bonus)": (
        "dp-ucb", {"calibration": "accountant", "block_diagonal": True, "bonus": 0.0},
        "JDP; same release, greedy on the private estimate (diagnostic)"),
    "dp-ucb (Wishart)": ("dp-ucb", {"noise": "wishart"},
                         "JDP; Wishart tree, Sheffet Thm 4.1 per node, optimal composition"),
    "adac-oful": ("adac-oful", {}, "JDP (protect='user'); adaptive episodes, zCDP"),
    "ldp-linucb": ("ldp-linucb", {}, "LDP; every user noises its own statistics"),
    "dp-hdb (theorem)": ("dp-hdb", {}, "JDP; DP-POFW per arm, Theorem 3.4"),
    "dp-hdb (accountant)": ("dp-hdb", {"calibration": "accountant"},
                            "JDP; DP-POFW per arm, accountant"),
    "linucb (not private)": ("linucb", {}, "not private"),
    "random": ("random", {}, "no data used"),
}
NON_PRIVATE = ("linucb (not private)", "random")
VERSIONED = ("dp-hdb",)  # registry names whose cells are keyed by the package version


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in label).strip("_")


def cell(inst: str, label: str, epsilon: float, horizon: int, reps: int = REPS,
         seed: int = EVAL_SEED, version: str = dpbandits.__version__) -> GridCell:
    """One agent of :data:`AGENTS` at one (instance, epsilon, T); the non-private agents get
    ``epsilon = nan``."""
    if label in NON_PRIVATE:
        epsilon = math.nan
    eps_txt = "na" if label in NON_PRIVATE else f"{epsilon:g}"
    name = f"{inst}__{_slug(label)}__eps{eps_txt}__T{horizon}__R{reps}__s{seed}"
    if AGENTS[label][0] in VERSIONED:
        name += f"__v{version}"
    return GridCell({"instance": inst, "label": label, "epsilon": epsilon,
                     "horizon": horizon, "reps": reps}, seed, name)


def cells(instances, labels, epsilons, horizon: int, reps: int = REPS) -> list[GridCell]:
    """Label-major (all of an agent's cells, then the next agent's)."""
    return [cell(inst, label, eps, horizon, reps) for label in labels for inst in instances
            for eps in ([math.nan] if label in NON_PRIVATE else epsilons)]


def run_cell(c: GridCell) -> pd.DataFrame | None:
    """Final cumulative regret per replication, the claimed guarantee and the epsilon the
    harness recomputes from the agent's ledger at its delta; ``None`` if the agent refuses
    the claim (e.g. the Wishart tree cannot certify it)."""
    env_id, env_params, _ = EVALUATION[c["instance"]]
    horizon = c["horizon"]
    env_params = {**env_params, "horizon": horizon}
    K, d = problem_size(env_params)
    name, fixed, basis = AGENTS[c["label"]]
    params = dict(fixed)
    if c["label"] not in NON_PRIVATE:
        params["epsilon"] = c["epsilon"]
    try:
        agent = make_agent(name, n_arms=K, dim=d, horizon=horizon, **params)
    except ValueError as exc:
        print(f"  refused {c.key}: {exc}", flush=True)
        return None
    res = simulate(env_id, agent, n_reps=c["reps"], seed=c.seed, env_params=env_params,
                   label=c["label"])
    g, cert = agent.privacy, res.certified
    frame = pd.DataFrame({"rep": np.arange(c["reps"]), "final_regret": res.cum_regret[:, -1]})
    frame["instance"], frame["agent"], frame["registry_name"] = c["instance"], c["label"], name
    frame["params"] = json.dumps(fixed, sort_keys=True)
    frame["horizon"], frame["seed"] = horizon, c.seed
    frame["epsilon"] = math.nan if c["label"] in NON_PRIVATE else c["epsilon"]
    frame["delta"] = math.nan if g is None or not math.isfinite(g.epsilon) else g.delta
    frame["notion"] = "" if g is None else g.notion
    frame["certified_epsilon"] = (math.nan if cert is None or cert["epsilon"] is None
                                  else cert["epsilon"])
    frame["certified_basis"] = "" if cert is None else cert["basis"]
    frame["basis"] = basis
    frame["seconds"] = res.seconds
    frame["version"] = dpbandits.__version__
    print(f"  {c.key}: R(T) = {frame.final_regret.mean():.1f}, {res.seconds:.0f} s, "
          f"certified eps {frame.certified_epsilon.iloc[0]:.4g}", flush=True)
    return frame


# ----------------------------------------------------------------------------- tables
def summarize(frame: pd.DataFrame, n_boot: int = 10_000) -> pd.DataFrame:
    """One row per (instance, horizon, agent, epsilon) of ``frame`` (per-replication final
    regret, columns ``instance, horizon, agent, epsilon, rep, final_regret`` and optional
    ``certified_epsilon, version, seconds``): mean and standard error of the final regret,
    its ratio to the mean of the ``random`` rows of the same (instance, horizon) with the
    95% paired-bootstrap interval over the replications both have (common random numbers),
    and the first value of the optional columns. Raises if an (instance, horizon) has no
    ``random`` rows or an agent's replications are not random's."""
    rows = []
    keys = ["instance", "horizon", "agent", "epsilon"]
    for (inst, T), block in frame.groupby(["instance", "horizon"], sort=False):
        rnd = block[block.agent == "random"].set_index("rep").final_regret.sort_index()
        if rnd.empty:
            raise ValueError(f"no 'random' rows for instance={inst!r}, horizon={T}")
        for (_, _, label, eps), f in block.groupby(keys, sort=False, dropna=False):
            f = f.set_index("rep").sort_index()
            if not f.index.equals(rnd.index):
                raise ValueError(f"{label!r} at epsilon={eps} on {inst!r}, T={T} has "
                                 f"replications {list(f.index)}, random has {list(rnd.index)}")
            x = f.final_regret.to_numpy()
            ratio, lo, hi = ratio_ci(x, rnd.to_numpy(), n_boot=n_boot)
            row = {"instance": inst, "horizon": T, "agent": label, "epsilon": eps,
                   "reps": len(x), "regret_mean": x.mean(),
                   "regret_se": x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else math.nan,
                   "ratio_to_random": ratio, "ratio_ci_low": lo, "ratio_ci_high": hi}
            for col in ("certified_epsilon", "notion", "version", "seconds"):
                if col in f:
                    row[col] = f[col].iloc[0]
            rows.append(row)
    return pd.DataFrame(rows)


def halving_epsilon(table: pd.DataFrame, level: float = HALF) -> pd.DataFrame:
    """Per (instance, horizon, agent) of a :func:`summarize` table: the smallest epsilon of
    the grid whose mean ratio to random is ``<= level`` (``nan``: none), and whether the
    whole 95% interval is below ``level`` there (``sure``). Non-private agents (epsilon nan)
    are left out."""
    priv = table[table.epsilon.notna()]
    rows = []
    for (inst, T, label), f in priv.groupby(["instance", "horizon", "agent"], sort=False):
        hit = f[f.ratio_to_random <= level].sort_values("epsilon")
        first = hit.iloc[0] if len(hit) else None
        rows.append({"instance": inst, "horizon": T, "agent": label,
                     "epsilon": math.nan if first is None else float(first.epsilon),
                     "sure": bool(first is not None and first.ratio_ci_high <= level),
                     "best_ratio": float(f.ratio_to_random.min())})
    return pd.DataFrame(rows)


def load(horizons=HORIZONS, instances=None, reps: int = REPS) -> pd.DataFrame:
    """Every finished cell of the current grid definition (the DP-HDB cells of the current
    package version only)."""
    frames = []
    for T in horizons:
        for c in cells(instances or INSTANCES, list(AGENTS), EPSILONS, T, reps):
            if STORE.done(c.key):
                frames.append(STORE.load(c.key))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _fmt_eps(x: float) -> str:
    return "never" if not math.isfinite(x) else f"{x:g}"


def report(reps: int = REPS) -> pd.DataFrame:
    """``compare.csv`` (every row), ``compare_halving.csv``, ``compare.md`` and
    ``compare.png`` from the finished cells."""
    frame = load(reps=reps)
    if frame.empty:
        print("no finished cells")
        return frame
    table = summarize(frame)
    table.to_csv(HERE / "compare.csv", index=False, float_format="%.5g")
    halves = halving_epsilon(table)
    halves.to_csv(HERE / "compare_halving.csv", index=False, float_format="%.5g")
    versions = sorted(set(frame.version))
    lines = ["# Every certified agent against uniform random",
             "", "Generated by `python -m experiments.certified_learning.compare report` "
             f"(dpbandits {', '.join(versions)}; per-row version in `compare.csv`). "
             f"{reps} replications, environment seeds {EVAL_SEED}..{EVAL_SEED + reps - 1} "
             "(common random numbers), delta = 1/T. Ratio = mean final regret / uniform "
             "random's, [95% paired-bootstrap interval]; certified = epsilon recomputed from "
             "the agent's own ledger at its delta by the harness (dp_accounting PLD/RDP, or "
             "the closed-form check of the Wishart tree). A missing cell was refused by the "
             "agent or not run (README).", ""]
    for (inst, T), sub in table.groupby(["instance", "horizon"], sort=False):
        desc = EVALUATION[inst][2]
        rnd = sub[sub.agent == "random"].iloc[0]
        lines += [f"## {inst}, T = {T:g}: {desc}", "",
                  f"Uniform random: R(T) = {rnd.regret_mean:.0f} +- {rnd.regret_se:.0f}.", "",
                  "| agent | epsilon | certified eps | R(T) mean +- se | / random [95% CI] |",
                  "|---|---|---|---|---|"]
        order = {label: i for i, label in enumerate(AGENTS)}
        sub = sub.assign(_o=sub.agent.map(order)).sort_values(["_o", "epsilon"])
        for r in sub.itertuples():
            if r.agent == "random":
                continue
            eps = "-" if math.isnan(r.epsilon) else f"{r.epsilon:g}"
            cert = ("-" if not math.isfinite(r.certified_epsilon) else
                    f"{r.certified_epsilon:.4f}")
            lines.append(f"| {r.agent} | {eps} | {cert} | {r.regret_mean:.0f} +- "
                         f"{r.regret_se:.0f} | {r.ratio_to_random:.3f} "
                         f"[{r.ratio_ci_low:.3f}, {r.ratio_ci_high:.3f}] |")
        lines.append("")
    lines += ["## Smallest epsilon of the grid at which the agent halves random's regret", "",
              "(mean ratio <= 0.5; * = the whole 95% interval is below 0.5; 'never': not "
              "at epsilon <= 10, with the best ratio in brackets)", ""]
    cols = [(inst, T) for inst in INSTANCES for T in HORIZONS
            if ((halves.instance == inst) & (halves.horizon == T)).any()]
    lines += ["| agent | " + " | ".join(f"{i}, T = {T:g}" for i, T in cols) + " |",
              "|---|" + "---|" * len(cols)]
    for label in AGENTS:
        cells_txt = []
        for inst, T in cols:
            h = halves[(halves.agent == label) & (halves.instance == inst)
                       & (halves.horizon == T)]
            if h.empty:
                cells_txt.append("-")
                continue
            h = h.iloc[0]
            cells_txt.append(f"{_fmt_eps(h.epsilon)}{'*' if h.sure else ''}" if
                             math.isfinite(h.epsilon) else f"never ({h.best_ratio:.2f})")
        if any(t != "-" for t in cells_txt):
            lines.append(f"| {label} | " + " | ".join(cells_txt) + " |")
    lines.append("")
    atomic_write_bytes(HERE / "compare.md", ("\n".join(lines) + "\n").encode())
    print("\n".join(lines))
    plot(table)
    return table


def plot(table: pd.DataFrame) -> None:
    """Ratio to random against epsilon, one panel per (T, instance), one line per private
    agent with its 95% interval; LinUCB dotted; 0.5 and 1 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    priv = table[table.epsilon.notna()].copy()
    labels = [a for a in AGENTS if a in set(priv.agent)]
    palette = dict(zip(labels, sns.color_palette("tab10", len(labels)), strict=True))
    grid = sns.FacetGrid(priv, row="horizon", col="instance", height=3.0, aspect=1.15,
                         col_order=[i for i in INSTANCES if i in set(priv.instance)],
                         sharey=True, margin_titles=True)

    def _lines(data, **_):
        ax = plt.gca()
        for label in labels:
            f = data[data.agent == label].sort_values("epsilon")
            if f.empty:
                continue
            err = [f.ratio_to_random - f.ratio_ci_low, f.ratio_ci_high - f.ratio_to_random]
            ax.errorbar(f.epsilon, f.ratio_to_random, yerr=err, marker="o", ms=3, lw=1.2,
                        capsize=2, color=palette[label], label=label)
        inst, T = data.instance.iloc[0], data.horizon.iloc[0]
        lin = table[(table.instance == inst) & (table.horizon == T)
                    & (table.agent == "linucb (not private)")]
        if not lin.empty:
            ax.axhline(lin.ratio_to_random.iloc[0], color="k", ls=":", lw=1)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.axhline(HALF, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log")

    grid.map_dataframe(_lines)
    grid.set_axis_labels("epsilon (delta = 1/T)", "final regret / random")
    grid.set_titles(row_template="T = {row_name}", col_template="{col_name}")
    handles, names = grid.axes.flat[0].get_legend_handles_labels()
    grid.figure.legend(handles, names, loc="lower center", ncol=4, fontsize=8,
                       frameon=False)
    grid.figure.subplots_adjust(bottom=0.2)
    grid.set(ylim=(0, 1.25))
    grid.savefig(HERE / "compare.png", dpi=110)
    plt.close(grid.figure)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--horizon", type=int, default=10_000)
    g.add_argument("--reps", type=int, default=REPS)
    g.add_argument("--eps", type=float, nargs="+", default=list(EPSILONS))
    g.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS),
                   metavar="LABEL")
    g.add_argument("--instances", nargs="+", default=list(INSTANCES),
                   choices=list(EVALUATION))
    r = sub.add_parser("report")
    r.add_argument("--reps", type=int, default=REPS)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.part == "grid":
        run_grid(cells(args.instances, args.agents, args.eps, args.horizon, args.reps),
                 run_cell, STORE)
    else:
        report(args.reps)
    print(json.dumps({"part": args.part, "seconds": round(time.perf_counter() - start, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

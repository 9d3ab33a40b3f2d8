"""Reproductions of published figures, callable from the CLI (``dpbandits reproduce NAME``).

``fig5.1`` — Figure 5.1 of seed 000 (DP-HDB vs DP-UCB, T = 1e4, d = 50, K = 2, epsilon = 1,
delta = 1/T), in three panels (see ``experiments/fig5_1/README.md``):

* **A, as published**: the agents as the authors' code runs them (not certified) — DP-HDB on
  l_1-normalized contexts, DP-UCB on l_inf-normalized ones — each next to the uniform-random
  policy on its own scale.
* **B, certified, common instance**: DP-HDB (theorem and accountant calibrations), DP-UCB
  (Gaussian and Wishart), LinUCB, DP-HDB with epsilon = inf and uniform random, all on the
  same l_inf instance with common random numbers.
* **C, where certified privacy starts to pay**: final regret relative to random over an
  epsilon x T grid (a resumable sweep).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import pandas as pd

from dpbandits.harness.compare import compare, summary_table
from dpbandits.harness.results import save_results

ENV_LINF = "dpbandits/Figure5.1-v0"
ENV_L1 = "dpbandits/Figure5.1-l1-v0"

#: size presets: horizon, replications (panels A/B), panel C grid
SIZES = {
    "tiny": {"horizon": 400, "n_reps": 3, "c_eps": [1.0, 100.0], "c_T": [400], "c_reps": 2},
    "small": {"horizon": 10_000, "n_reps": 10, "c_eps": [0.1, 1.0, 10.0, 100.0],
              "c_T": [10_000], "c_reps": 5},
    "full": {"horizon": 10_000, "n_reps": 20, "c_eps": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0],
             "c_T": [10_000, 100_000], "c_reps": 10},
}

PANEL_B = {
    "DP-HDB (theorem)": ("dp-hdb", {"calibration": "theorem"}),
    "DP-HDB (accountant)": ("dp-hdb", {"calibration": "accountant"}),
    "DP-UCB (Gaussian)": ("dp-ucb", {"noise": "gaussian", "calibration": "accountant"}),
    "DP-UCB (Wishart)": ("dp-ucb", {"noise": "wishart"}),
    "LinUCB (non-private)": ("linucb", {}),
    "DP-HDB (eps = inf)": ("dp-hdb", {"epsilon": math.inf}),
    "uniform random": ("random", {}),
}


def _with_eps(agents: dict, epsilon: float) -> dict:
    out = {}
    for label, (name, params) in agents.items():
        p = dict(params)
        if name not in ("linucb", "random") and not math.isinf(p.get("epsilon", 1.0)):
            p["epsilon"] = epsilon
        out[label] = (name, p)
    return out


def panel_a(horizon: int, n_reps: int, seed: int, epsilon: float = 1.0):
    """The code's DP-HDB on l_1 contexts and the code's DP-UCB on l_inf contexts, each with
    uniform random on the same scale."""
    f1, s1, _ = compare({"DP-HDB (authors' code, l1 contexts)": (
        "dp-hdb-authors-code", {"epsilon": epsilon}),
        "uniform random (l1 contexts)": ("random", {})},
        ENV_L1, horizon=horizon, n_reps=n_reps, seed=seed, record_every=max(1, horizon // 100))
    f2, s2, _ = compare({"DP-UCB (authors' code, linf contexts)": (
        "dp-ucb-authors-code", {"epsilon": epsilon}),
        "uniform random (linf contexts)": ("random", {})},
        ENV_LINF, horizon=horizon, n_reps=n_reps, seed=seed, record_every=max(1, horizon // 100))
    f1["contexts"], f2["contexts"] = "l1", "linf"
    s1["contexts"], s2["contexts"] = "l1", "linf"
    return pd.concat([f1, f2], ignore_index=True), pd.concat([s1, s2], ignore_index=True)


def panel_b(horizon: int, n_reps: int, seed: int, epsilon: float = 1.0, n_jobs: int = 1):
    """All certified agents (and references) on one l_inf instance, common random numbers."""
    agents = _with_eps(PANEL_B, epsilon)
    record_every = max(1, horizon // 100)
    if n_jobs == 1:
        frame, summary, _ = compare(agents, ENV_LINF, horizon=horizon, n_reps=n_reps,
                                    seed=seed, record_every=record_every, track_memory=False)
        return frame, summary
    from joblib import Parallel, delayed

    def one(label, spec):
        _, _, res = compare({label: spec}, ENV_LINF, horizon=horizon, n_reps=n_reps, seed=seed)
        return label, res[label]

    done = Parallel(n_jobs=n_jobs)(delayed(one)(k, v) for k, v in agents.items())
    results = dict(done)
    results = {k: results[k] for k in agents}
    frame = pd.concat([r.to_frame(record_every) for r in results.values()], ignore_index=True)
    return frame, summary_table(results)


def panel_c_spec(epsilons, horizon: int, n_reps: int):
    """Sweep spec of panel C at one horizon (DP-HDB, DP-UCB and uniform random)."""
    from dpbandits.harness.sweep import SweepSpec

    return SweepSpec(
        agents={"DP-HDB (accountant)": {"name": "dp-hdb", "params": {"calibration": "accountant"},
                                        "grid": {"epsilon": list(epsilons)}},
                "DP-UCB (Gaussian)": {"name": "dp-ucb", "params": {"calibration": "accountant"},
                                      "grid": {"epsilon": list(epsilons)}},
                "uniform random": {"name": "random"}},
        env=ENV_LINF, env_params={"horizon": horizon}, horizon=horizon, seeds=[0],
        n_reps=n_reps, record_every=max(1, horizon // 50))


def relative_to_random(frame: pd.DataFrame) -> pd.DataFrame:
    """Final regret of each (agent, epsilon) divided by uniform random's mean final regret."""
    last = frame.loc[frame.groupby(["cell", "rep"], observed=True)["t"].idxmax()]
    rnd = last[last["agent"] == "uniform random"]["cum_regret"].mean()
    priv = last[last["agent"] != "uniform random"]
    out = priv.groupby(["agent", "agent.epsilon"], observed=True)["cum_regret"].agg(
        ["mean", "std", "count"]).reset_index()
    out["relative_to_random"] = out["mean"] / rnd
    return out


def fig5_1(args: argparse.Namespace) -> int:
    """Run the requested panels, print the summary tables, write results and plots."""
    from dpbandits.harness.plots import plot_regret_curves

    preset = dict(SIZES[args.size])
    horizon = args.horizon or preset["horizon"]
    n_reps = args.reps or preset["n_reps"]
    out = Path(args.out or f"results/fig5_1-{args.size}")
    out.mkdir(parents=True, exist_ok=True)
    panels = args.panels.upper()
    record = {"reproduction": "fig5.1", "size": args.size, "horizon": horizon,
              "n_reps": n_reps, "seed": 0, "epsilon": 1.0, "delta": 1.0 / horizon}
    timings = {}
    if "A" in panels:
        t0 = time.perf_counter()
        frame, summary = panel_a(horizon, n_reps, seed=0)
        timings["A"] = time.perf_counter() - t0
        save_results(frame, {**record, "panel": "A"}, out, name="panel_a")
        summary.to_csv(out / "panel_a_summary.csv", index=False)
        _plot_panel_a(frame, out / "panel_a", args.svg)
        print("Panel A — as published (NOT certified; each agent next to random on its own "
              "context scale):")
        print(_fmt(summary))
    if "B" in panels:
        t0 = time.perf_counter()
        frame, summary = panel_b(horizon, n_reps, seed=0, n_jobs=args.jobs)
        timings["B"] = time.perf_counter() - t0
        save_results(frame, {**record, "panel": "B",
                             "privacy": dict(zip(summary["agent"], summary["privacy"],
                                                 strict=True)),
                             "certified_epsilon": dict(zip(summary["agent"],
                                                           summary["certified_epsilon"],
                                                           strict=True))},
                     out, name="panel_b")
        summary.to_csv(out / "panel_b_summary.csv", index=False)
        plot_regret_curves(frame, out / "panel_b", title="Figure 5.1, certified, common "
                           "l_inf instance", svg=args.svg)
        plot_regret_curves(frame, out / "panel_b_vs_random", normalize="uniform random",
                           title="cumulative regret / uniform random", svg=args.svg)
        print("Panel B — certified agents on one common instance:")
        print(_fmt(summary))
    if "C" in panels:
        from dpbandits.harness.sweep import sweep

        t0 = time.perf_counter()
        tables = []
        for T in preset["c_T"]:
            spec = panel_c_spec(preset["c_eps"], T, preset["c_reps"])
            frame = sweep(spec, out / f"panel_c_T{T}", n_jobs=args.jobs,
                          progress=not args.quiet)
            rel = relative_to_random(frame)
            rel["horizon"] = T
            tables.append(rel)
        timings["C"] = time.perf_counter() - t0
        table = pd.concat(tables, ignore_index=True)
        table.to_csv(out / "panel_c.csv", index=False)
        _plot_panel_c(table, out / "panel_c", args.svg)
        print("Panel C — final regret / uniform random:")
        print(table.to_string(index=False))
    (out / "timings.json").write_text(json.dumps(timings, indent=2))
    print(f"results written to {out} (seconds per panel: "
          f"{ {k: round(v, 1) for k, v in timings.items()} })")
    return 0


def _fmt(summary: pd.DataFrame) -> str:
    cols = [c for c in ["agent", "mean", "std", "ci95_low", "ci95_high", "certified_epsilon",
                        "seconds", "privacy"] if c in summary.columns]
    with pd.option_context("display.max_colwidth", 70, "display.width", 200):
        return summary[cols].to_string(index=False)


def _plot_panel_a(frame, path, svg):
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    agents = frame[~frame["agent"].str.startswith("uniform random")]
    sns.lineplot(data=agents, x="t", y="cum_regret", hue="agent", errorbar=("ci", 95),
                 ax=axes[0])
    axes[0].set_title("as the paper plots it (two context scales on one axis)")
    axes[0].set_xlabel("round t")
    axes[0].set_ylabel("cumulative regret")
    for ax, scale in zip(axes[1:], ["l1", "linf"], strict=True):
        sub = frame[frame["contexts"] == scale]
        sns.lineplot(data=sub, x="t", y="cum_regret", hue="agent", errorbar=("ci", 95), ax=ax)
        ax.set_title(f"{scale}-normalized contexts (as the authors' code runs it)")
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative regret")
    fig.suptitle("Figure 5.1 panel A — NOT certified")
    fig.tight_layout()
    fig.savefig(Path(path).with_suffix(".png"), dpi=120)
    if svg:
        fig.savefig(Path(path).with_suffix(".svg"))
    plt.close(fig)


def _plot_panel_c(table, path, svg):
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.lineplot(data=table, x="agent.epsilon", y="relative_to_random", hue="agent",
                 style="horizon", marker="o", ax=ax)
    ax.axhline(1.0, color="grey", lw=1, ls="--")
    ax.axhline(0.5, color="grey", lw=1, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("final regret / uniform random")
    fig.tight_layout()
    fig.savefig(Path(path).with_suffix(".png"), dpi=120)
    if svg:
        fig.savefig(Path(path).with_suffix(".svg"))
    plt.close(fig)


REPRODUCTIONS = {"fig5.1": fig5_1}
__all__ = ["REPRODUCTIONS", "fig5_1", "panel_a", "panel_b", "panel_c_spec"]

"""The target of issue 18: a certified agent with its default parameters, at epsilon = 1 and
delta = 1/T, ending with mean regret <= 0.3 x uniform-random on ``dpbandits/Figure5.1-v0``
(T = 1e4, d = 50, K = 2, 20 replications) -- and learning on the other evaluation instances
of :mod:`experiments.certified_learning.instances` (other K, d, sparsity; correlated,
not-centred contexts; none used for tuning).

Parts (cells of :func:`dpbandits.harness.grid.run_grid` under ``runs/target_sls/``,
resumable):

* ``target``  -- every evaluation instance at epsilon = 1: ``dp-screened-ls`` (defaults), its
  non-private twin, FLIPHAT (accountant calibration, defaults; the best certified agent of
  the earlier study), non-private LinUCB and uniform-random; 20 replications, environment
  seeds 0 + r, common random numbers;
* ``epsilon`` -- ``dp-screened-ls`` at epsilon in {0.3, 1, 3, 10} on the same instances;
* ``noise``   -- noise against signal of every release of one 20-replication run per
  instance (the agent's ``episode_log_``; computed from raw data, a diagnostic);
* ``long``    -- Figure 5.1 at T = 1e5 (delta = 1e-5): ``dp-screened-ls``, FLIPHAT
  (accountant) and uniform-random;
* ``report``  -- ``target_sls.md``, ``target_sls.csv`` and ``target_sls.png`` (ratio to
  random against epsilon per instance) from what has finished.

Usage (from the repository root)::

    python -m experiments.certified_learning.target [--reps 20] [--jobs 1]
    python -m experiments.certified_learning.target long
    python -m experiments.certified_learning.target report
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.agents import make_agent
from dpbandits.harness.grid import CellFiles, run_grid
from dpbandits.harness.simulate import simulate
from experiments.certified_learning.instances import EVAL_SEED, EVALUATION, problem_size
from experiments.certified_learning.sls import AGENT, ratio_ci, run_cell, sls_cell, table_sections

HERE = Path(__file__).resolve().parent
STORE = CellFiles(HERE / "runs" / "target_sls")
EPSILONS = (0.3, 1.0, 3.0, 10.0)
TARGET_RATIO = 0.3
LONG = 100_000
LONG_AGENTS = ("dp-screened-ls", "fliphat (accountant)", "random")

#: label -> (registry name, params)
AGENTS = {
    "dp-screened-ls": (AGENT, {}),
    "dp-screened-ls (no noise)": (AGENT, {"epsilon": math.inf}),
    "fliphat (accountant)": ("fliphat", {"calibration": "accountant"}),
    "linucb (not private)": ("linucb", {}),
    "random": ("random", {}),
}


def target_cells(reps: int) -> list:
    return [sls_cell(inst, name, params, reps, EVAL_SEED)
            for inst in EVALUATION for name, params in AGENTS.values()]


def epsilon_cells(reps: int) -> list:
    return [sls_cell(inst, AGENT, {"epsilon": eps} if eps != 1.0 else {}, reps, EVAL_SEED)
            for inst in EVALUATION for eps in EPSILONS]


def long_cells(reps: int) -> list:
    return [sls_cell("figure5.1", *AGENTS[label], reps, EVAL_SEED, horizon=LONG)
            for label in LONG_AGENTS]


def noise_table(reps: int) -> pd.DataFrame:
    """Per release (mean over replications): signal and noise norms of the released vector,
    and for fitting releases the smallest eigenvalue of the noiseless screened Gram against
    the spectral norm of its noise."""
    rows = []
    for inst, (env_id, env_params, _) in EVALUATION.items():
        K, d = problem_size(env_params)
        agent = make_agent(AGENT, n_arms=K, dim=d, horizon=env_params.get("horizon", 10_000))
        simulate(env_id, agent, n_reps=reps, seed=EVAL_SEED, env_params=env_params)
        for row in agent.episode_log_:
            rows.append({"instance": inst, **row})
    return pd.DataFrame(rows)


def summary(reps: int) -> pd.DataFrame:
    """One row per (instance, agent, epsilon) with a finished cell: mean final regret, the
    ratio to random with its 95% paired-bootstrap interval, claimed and certified epsilon."""
    rows = []
    for inst in EVALUATION:
        rnd = STORE.load(sls_cell(inst, "random", {}, reps, EVAL_SEED).key)
        cells = [(label, name, params) for label, (name, params) in AGENTS.items()]
        cells += [(AGENT, AGENT, {"epsilon": eps}) for eps in EPSILONS if eps != 1.0]
        for label, name, params in cells:
            c = sls_cell(inst, name, params, reps, EVAL_SEED)
            if not STORE.done(c.key):
                continue
            rows.append(_row(inst, label, STORE.load(c.key), rnd))
    rnd_key = sls_cell("figure5.1", "random", {}, reps, EVAL_SEED, horizon=LONG).key
    if STORE.done(rnd_key):
        rnd = STORE.load(rnd_key)
        for label in LONG_AGENTS:
            c = sls_cell("figure5.1", *AGENTS[label], reps, EVAL_SEED, horizon=LONG)
            if STORE.done(c.key):
                rows.append(_row("figure5.1 T=1e5", label, STORE.load(c.key), rnd))
    return pd.DataFrame(rows)


def _row(inst: str, label: str, f: pd.DataFrame, rnd: pd.DataFrame) -> dict:
    ratio, lo, hi = ratio_ci(f.final_regret.to_numpy(), rnd.final_regret.to_numpy())
    return {"instance": inst, "agent": label, "epsilon": f.epsilon.iloc[0],
            "delta": f.delta.iloc[0], "certified_epsilon": f.certified_epsilon.iloc[0],
            "reps": len(f), "regret_mean": f.final_regret.mean(),
            "regret_se": f.final_regret.std(ddof=1) / math.sqrt(len(f)),
            "ratio_to_random": ratio, "ratio_ci_low": lo, "ratio_ci_high": hi,
            "clipped_fraction": (f.clipped_fraction.mean() if "clipped_fraction" in f
                                 else np.nan),
            "seconds": f.seconds.iloc[0]}


def _fmt(x, digits=3) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return "-" if math.isnan(x) else "inf"
    return f"{x:.{digits}g}"


def report(reps: int) -> None:
    table = summary(reps)
    table.to_csv(HERE / "target_sls.csv", index=False, float_format="%.5g")
    lines = ["# dp-screened-ls: the target and the other evaluation instances",
             "", "Generated by `python -m experiments.certified_learning.target report`. "
             f"T = 1e4, {reps} replications (environment seeds 0..{reps - 1}, common random "
             "numbers), delta = 1/T; ratio = mean final regret / uniform-random's, 95% paired "
             "bootstrap interval; certified = epsilon recomputed by dp_accounting from the "
             "agent's own ledger.", ""]
    sections = {inst: desc for inst, (_, _, desc) in EVALUATION.items()}
    sections["figure5.1 T=1e5"] = "the Figure 5.1 instance at T = 1e5, delta = 1e-5"
    columns = ("agent", "epsilon", "certified eps", "R(T) mean +- se", "/ random [95% CI]",
               "rewards clipped")
    for sub, heading in table_sections(table, sections, columns):
        lines += heading
        for _, r in sub.sort_values(["agent", "epsilon"]).iterrows():
            lines.append(f"| {r.agent} | {_fmt(r.epsilon)} | {_fmt(r.certified_epsilon, 4)} | "
                         f"{r.regret_mean:.0f} +- {r.regret_se:.0f} | **{r.ratio_to_random:.3f}** "
                         f"[{r.ratio_ci_low:.3f}, {r.ratio_ci_high:.3f}] | "
                         f"{_fmt(r.clipped_fraction, 2)} |")
        lines.append("")
    target = table[(table.instance == "figure5.1") & (table.agent == AGENT)
                   & (table.epsilon == 1.0)]
    if not target.empty:
        r = target.iloc[0]
        ok = r.ratio_to_random <= TARGET_RATIO and r.certified_epsilon <= 1.0
        lines += ["## Target check", "",
                  f"dp-screened-ls, defaults, epsilon = 1, delta = 1e-4 on Figure 5.1: "
                  f"{r.ratio_to_random:.3f} x random (95% CI {r.ratio_ci_low:.3f}-"
                  f"{r.ratio_ci_high:.3f}), certified epsilon {r.certified_epsilon:.6f}: "
                  f"target (<= {TARGET_RATIO} x random, certified <= 1) "
                  f"{'MET' if ok else 'NOT MET'}.", ""]
    noise_path = HERE / "target_sls_noise.csv"
    if noise_path.exists():
        noise = pd.read_csv(noise_path)
        lines += ["## Noise against signal per release (Figure 5.1, mean over replications)", "",
                  "| release | kind | end | signal norm | noise norm | Gram min eig (noiseless) "
                  "| Gram noise spectral norm |", "|---|---|---|---|---|---|---|"]
        for _, r in noise[noise.instance == "figure5.1"].iterrows():
            lines.append(f"| {r.episode} | {r.kind} | {r.end} | {r.signal_norm:.3g} | "
                         f"{r.noise_norm:.3g} | {_fmt(r.get('gram_signal_min_eig', np.nan))} | "
                         f"{_fmt(r.get('gram_noise_spectral', np.nan))} |")
        lines.append("")
    (HERE / "target_sls.md").write_text("\n".join(lines))
    print("\n".join(lines))
    plot(table)


def plot(table: pd.DataFrame) -> None:
    """Ratio to random against epsilon, one line per evaluation instance (95% intervals);
    FLIPHAT at epsilon = 1 as crosses; the target level dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, inst in enumerate(EVALUATION):
        sub = table[(table.instance == inst) & (table.agent == AGENT)].sort_values("epsilon")
        if sub.empty:
            continue
        err = [sub.ratio_to_random - sub.ratio_ci_low, sub.ratio_ci_high - sub.ratio_to_random]
        ax.errorbar(sub.epsilon, sub.ratio_to_random, yerr=err, marker="o", capsize=3,
                    color=f"C{i}", label=f"{inst}")
        fl = table[(table.instance == inst) & (table.agent == "fliphat (accountant)")]
        if not fl.empty:
            ax.plot(fl.epsilon, fl.ratio_to_random, "x", color=f"C{i}", markersize=9)
    ax.axhline(TARGET_RATIO, ls="--", color="grey", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1/T, T = 1e4)")
    ax.set_ylabel("final regret / uniform random")
    ax.set_title("dp-screened-ls (lines) and FLIPHAT at epsilon = 1 (x)")
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "target_sls.png", dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all",
                        choices=["all", "target", "epsilon", "noise", "long", "report"])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (<= 2)")
    args = parser.parse_args(argv)
    if args.part in ("all", "target"):
        run_grid(target_cells(args.reps), run_cell, STORE, n_jobs=args.jobs, progress=True)
    if args.part in ("all", "epsilon"):
        run_grid(epsilon_cells(args.reps), run_cell, STORE, n_jobs=args.jobs, progress=True)
    if args.part in ("all", "long"):
        run_grid(long_cells(args.reps), run_cell, STORE, n_jobs=args.jobs, progress=True)
    if args.part in ("all", "noise"):
        noise_table(args.reps).to_csv(HERE / "target_sls_noise.csv", index=False,
                                      float_format="%.5g")
    report(args.reps)


if __name__ == "__main__":
    main()

"""Reproductions of published figures, callable from the CLI (``dpbandits reproduce NAME``).

``fig5.1`` — Figure 5.1 of Han et al. 2022 (DP-HDB vs DP-UCB, T = 1e4, d = 50, K = 2, epsilon = 1,
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
import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpbandits._background import prefetch_in_pool, prefetch_off
from dpbandits.harness.compare import compare, privacy_records, summary_table
from dpbandits.harness.results import (
    SimulationResult,
    atomic_write_bytes,
    dumps_json,
    save_results,
    tidy_frame,
    write_csv_atomic,
)

if TYPE_CHECKING:
    from dpbandits.harness.sweep import SweepSpec

ENV_LINF = "dpbandits/Figure5.1-v0"
ENV_L1 = "dpbandits/Figure5.1-l1-v0"

#: size presets: horizon, replications (panels A/B), panel C grid
SIZES: dict[str, dict[str, Any]] = {
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


#: panel A: (contexts, environment, {label: (agent, params)}), each pair on its own scale
def _panel_a_groups(epsilon: float) -> list[tuple[str, str, dict]]:
    return [("l1", ENV_L1, {"DP-HDB (authors' code, l1 contexts)": (
                 "dp-hdb-authors-code", {"epsilon": epsilon}),
             "uniform random (l1 contexts)": ("random", {})}),
            ("linf", ENV_LINF, {"DP-UCB (authors' code, linf contexts)": (
                "dp-ucb-authors-code", {"epsilon": epsilon}),
             "uniform random (linf contexts)": ("random", {})})]


#: the order a pool takes the simulations in, longest first (measured: the DP-UCBs'
#: per-round factorizations and noise dominate), so that no long one starts last
_LONGEST_FIRST = ("DP-UCB (Wishart)", "DP-UCB (authors' code, linf contexts)",
                  "DP-UCB (Gaussian)")


def panel_a(horizon: int, n_reps: int, seed: int, epsilon: float = 1.0,
            progress: bool = False, results: dict[str, SimulationResult] | None = None
            ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, SimulationResult]]:
    """The code's DP-HDB on l_1 contexts and the code's DP-UCB on l_inf contexts, each with
    uniform random on the same scale. Returns ``(frame, summary, results)``; ``results``
    given (every label's, e.g. from :func:`simulate_panels`) are assembled, not rerun."""
    record_every = max(1, horizon // 100)
    frames, summaries, out = [], [], {}
    for contexts, env, agents in _panel_a_groups(epsilon):
        if results is None:
            f, s, r = compare(agents, env, horizon=horizon, n_reps=n_reps, seed=seed,
                              record_every=record_every, progress=progress)
        else:
            f, s, r = _assembled({k: results[k] for k in agents}, record_every)
        f["contexts"], s["contexts"] = contexts, contexts
        frames.append(f)
        summaries.append(s)
        out.update(r)
    return (pd.concat(frames, ignore_index=True), pd.concat(summaries, ignore_index=True),
            out)


def panel_b(horizon: int, n_reps: int, seed: int, epsilon: float = 1.0, n_jobs: int = 1,
            progress: bool = False, results: dict[str, SimulationResult] | None = None
            ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, SimulationResult]]:
    """All certified agents (and references) on one l_inf instance, common random numbers.
    Returns ``(frame, summary, results)``; ``results`` as in :func:`panel_a`."""
    agents = _with_eps(PANEL_B, epsilon)
    record_every = max(1, horizon // 100)
    if results is None and n_jobs == 1:
        return compare(agents, ENV_LINF, horizon=horizon, n_reps=n_reps, seed=seed,
                       record_every=record_every, progress=progress)
    if results is None:
        results = simulate_panels("B", horizon, n_reps, seed, epsilon, n_jobs)
    return _assembled({k: results[k] for k in agents}, record_every)


def simulate_panels(panels: str, horizon: int, n_reps: int, seed: int, epsilon: float = 1.0,
                    n_jobs: int = 2) -> dict[str, SimulationResult]:
    """Every simulation of panels A and/or B (``panels`` a subset of ``"AB"``) as one pool of
    ``n_jobs`` processes, longest first, so that panel A's runs use the cores panel B's leave
    idle. Each agent is its own ``compare`` with the panel's seed: the same numbers as the
    panels run one after the other (common random numbers hold per environment and seed).
    Returns ``{label: result}``."""
    from joblib import Parallel, delayed

    tasks = []
    if "A" in panels:
        tasks += [(label, env, spec) for _, env, agents in _panel_a_groups(epsilon)
                  for label, spec in agents.items()]
    if "B" in panels:
        tasks += [(label, ENV_LINF, spec) for label, spec in _with_eps(PANEL_B, epsilon).items()]
    tasks.sort(key=lambda task: (_LONGEST_FIRST.index(task[0]) if task[0] in _LONGEST_FIRST
                                 else len(_LONGEST_FIRST)))

    # the pool is sized by threads, not processes: each worker runs its simulation and, with
    # prefetching, a noise-drawing thread; when the processes alone fill the cores, the
    # workers draw in their own thread (the same numbers: prefetching never changes them)
    prefetch = prefetch_in_pool(n_jobs)

    def one(label, env, spec):
        with prefetch_off(not prefetch):  # in this worker process, for this task
            _, _, res = compare({label: spec}, env, horizon=horizon, n_reps=n_reps, seed=seed)
        return label, res[label]

    return dict(Parallel(n_jobs=n_jobs)(delayed(one)(*task) for task in tasks))


def _assembled(results: dict[str, SimulationResult], record_every: int
               ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, SimulationResult]]:
    """``compare``'s ``(frame, summary, results)`` from results simulated one by one."""
    return tidy_frame(results.values(), record_every), summary_table(results), results


def panel_c_spec(epsilons: Iterable[float], horizon: int, n_reps: int) -> SweepSpec:
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


def fig5_1(args: argparse.Namespace, state: Any = None) -> int:
    """Run the requested panels, print the summary tables, write results and plots.

    ``args``: the ``dpbandits reproduce`` options (panels, size, reps, horizon, jobs, out,
    overwrite, no_plot, svg, band, progress); ``state`` (optional) receives ``out``,
    ``validated`` and ``resumable`` for the command line's error messages. The output
    directory resumes a run of the same size, horizon and replications (panel C's finished
    cells are kept) and is refused otherwise unless ``overwrite``.
    """
    from dpbandits.harness.config import ConfigError, fingerprint
    from dpbandits.harness.outdir import claim_out_dir
    from dpbandits.harness.sweep import sweep, write_sweep_results

    preset = dict(SIZES[args.size])
    horizon = args.horizon or preset["horizon"]
    n_reps = args.reps or preset["n_reps"]
    panels = args.panels.upper()
    if not panels or set(panels) - set("ABC"):
        raise ConfigError(f"--panels must be letters of 'ABC', got {args.panels!r}")
    for key, value in (("--horizon", horizon), ("--reps", n_reps)):
        if value < 1:
            raise ConfigError(f"{key} must be >= 1, got {value}")
    record = {"reproduction": "fig5.1", "size": args.size, "horizon": horizon,
              "n_reps": n_reps, "seed": 0, "epsilon": 1.0, "delta": 1.0 / horizon}
    # resumable: a replacing run (--overwrite) that stops keeps its work beside the earlier
    # results (harness.outdir), which it replaces only at the end (claim.commit)
    claim = claim_out_dir(args.out or f"results/fig5_1-{args.size}", command="reproduce",
                          fingerprint=fingerprint(record), overwrite=args.overwrite,
                          resumable=True)
    out = claim.path
    if state is not None:
        state.out, state.validated, state.resumable = out, True, True
        state.claim = claim
        state.kept = ("panel C's finished cells are kept in {out} and the same command "
                      "resumes them; panels A and B are recomputed in full")
    progress = getattr(args, "progress", False)
    plots = not getattr(args, "no_plot", False)
    timings = {}
    pooled = None
    if args.jobs > 1 and "A" in panels and "B" in panels:
        # one pool for both panels: panel A no longer runs on one core while the other idles
        t0 = time.perf_counter()
        pooled = simulate_panels("AB", horizon, n_reps, seed=0, n_jobs=args.jobs)
        timings["A+B"] = time.perf_counter() - t0  # the panels' own times overlap
    if "A" in panels:
        t0 = time.perf_counter()
        frame, summary, results = panel_a(horizon, n_reps, seed=0, progress=progress,
                                          results=pooled)
        if pooled is None:
            timings["A"] = time.perf_counter() - t0
        _save_panel(frame, summary, results, {**record, "panel": "A"}, out, "panel_a")
        if plots:
            from dpbandits.harness.plots import plot_panel_a

            plot_panel_a(frame, out / "panel_a", svg=args.svg, labels=_labels(results),
                         band=args.band, title=f"{ENV_L1} and {ENV_LINF}, horizon "
                         f"T = {horizon:,}, {n_reps} replications")
        print("Panel A — as published (NOT certified; each agent next to random on its own "
              "context scale):")
        _print(summary, results)
    if "B" in panels:
        t0 = time.perf_counter()
        frame, summary, results = panel_b(horizon, n_reps, seed=0, n_jobs=args.jobs,
                                          progress=progress, results=pooled)
        if pooled is None:
            timings["B"] = time.perf_counter() - t0
        _save_panel(frame, summary, results, {**record, "panel": "B"}, out, "panel_b")
        if plots:
            from dpbandits.harness.plots import plot_regret_curves, run_title

            labels = _labels(results)
            where = run_title(ENV_LINF, horizon)
            plot_regret_curves(frame, out / "panel_b", title="Figure 5.1, certified agents, "
                               f"common l_inf instance (ε = 1)\n{where}", svg=args.svg,
                               labels=labels, floor="uniform random", band=args.band,
                               log=args.log)
            plot_regret_curves(frame, out / "panel_b_vs_random", normalize="uniform random",
                               title=f"cumulative regret / uniform random\n{where}",
                               svg=args.svg, labels=labels, band=args.band)
        print("Panel B — certified agents on one common instance:")
        _print(summary, results)
    if "C" in panels:
        t0 = time.perf_counter()
        tables = []
        for T in preset["c_T"]:
            spec = panel_c_spec(preset["c_eps"], T, preset["c_reps"])
            cdir = out / f"panel_c_T{T}"
            frame = sweep(spec, cdir, n_jobs=args.jobs, progress=progress)
            write_sweep_results(spec, frame, cdir, {**record, "panel": "C", "horizon": T})
            rel = relative_to_random(frame)
            rel["horizon"] = T
            tables.append(rel)
        timings["C"] = time.perf_counter() - t0
        table = pd.concat(tables, ignore_index=True)
        write_csv_atomic(table, out / "panel_c.csv")
        if plots:
            from dpbandits.harness.plots import plot_panel_c

            horizons = ", ".join(f"{T:,}" for T in preset["c_T"])
            plot_panel_c(table, out / "panel_c", svg=args.svg,
                         title=f"{ENV_LINF}, horizon T = {horizons}, "
                         f"{preset['c_reps']} replications per point")
        print("Panel C — final regret / uniform random:")
        print(table.to_string(index=False))
    atomic_write_bytes(out / "timings.json", dumps_json(timings))
    out = claim.commit()
    if state is not None:
        state.out = out
    print(f"results written to {out} ({format_timings(timings)})")
    return 0


def format_timings(timings: dict[str, float]) -> str:
    """``"time per panel: A 12.3 s, B 45.6 s"`` (the demo's last line, not a dict)."""
    return "time per panel: " + ", ".join(f"{panel} {seconds:.1f} s"
                                          for panel, seconds in timings.items())


def _save_panel(frame, summary, results, record, out, name) -> None:
    save_results(frame, {**record, "privacy": privacy_records(results)}, out, name=name)
    write_csv_atomic(summary, out / f"{name}_summary.csv")


def _labels(results) -> dict:
    from dpbandits.harness.plots import privacy_label

    return {k: f"{k} — {privacy_label(r.privacy, r.certified)}" for k, r in results.items()}


def _print(summary: pd.DataFrame, results) -> None:
    from dpbandits.harness.report import format_summary, privacy_notes

    print(format_summary(summary))
    for line in privacy_notes(summary, privacy_records(results)):
        print(line)


REPRODUCTIONS = {"fig5.1": fig5_1}
__all__ = ["REPRODUCTIONS", "fig5_1", "panel_a", "panel_b", "panel_c_spec"]

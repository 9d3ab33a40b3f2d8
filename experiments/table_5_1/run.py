#!/usr/bin/env python
"""Reproduce Table 5.1 and Figure 5.3 of Han et al. 2022 (DP-TOFW vs DP-SCO baselines).

    .venv/bin/python -m experiments.table_5_1.run --reduced      # a few minutes
    .venv/bin/python -m experiments.table_5_1.run                # full grid (hours: NoisySGD)
    .venv/bin/python -m experiments.table_5_1.run --methods OFW NoisySFW --no-figure

Writes into ``experiments/table_5_1/results/<tag>/`` (tag ``reduced`` or ``full``):

* ``raw.csv`` — one row per (T, d, p, method, lr scale, seed): risk, SubOpt, seconds per
  replication, clip counts, certified epsilon. Each (T, d, p, method, scale) is one cell of
  :func:`dpbandits.harness.grid.run_grid` whose rows are appended when it finishes, so the run
  is resumable: cells already present are not recomputed (delete the file to start over).
* ``summary_all_scales.csv`` — mean/std per learning-rate scale (Figure 5.2's information).
* ``table.csv`` / ``table.md`` — each method at its best scale (lowest mean test SubOpt, as
  the paper picked it), next to the paper's Table 5.1 values (``paper_table_5_1.csv``,
  transcribed from the seed text); ``table_subopt.md`` the SubOpt columns only, compactly.
* ``figure_5_3.png`` (+ ``figure_5_3.csv``) — SubOpt against wall-clock time, DP-TOFW vs
  NoisySFW at p = 1.5.
* ``run.json`` — config, versions and the privacy guarantee of every (method, T, d, p).

Timing: every method runs the seeds as one batch of ``R`` replications (numpy vectorized over
the replication axis, numba for NoisySGD); "seconds" is the batch's wall-clock divided by
``R``. The figure instead runs each seed alone (``R = 1``).
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

import numpy as np
import pandas as pd

from dpbandits.harness.grid import CsvTable, GridCell, run_grid
from dpbandits.losses import SquaredLoss
from dpbandits.optim import DPTOFW, LocalMD, NoisySFW, NoisySGD

HERE = Path(__file__).resolve().parent
LOSS = SquaredLoss()
KEYS = ["T", "d", "p", "method", "scale"]


# ----------------------------------------------------------------------------- problem
def p_label(p: float) -> str:
    return "inf" if math.isinf(p) else f"{p:g}"


def make_problem(T: int, d: int, p: float, n_seeds: int, cfg: dict) -> dict:
    """Section 5.2 data for every seed, stacked on a leading replication axis.

    Seed ``s`` of configuration ``(T, d, p)`` always gets the same data (so every method sees
    the same problems): its generator is ``SeedSequence(base_seed, spawn_key=(T, d, p, s))``.
    """
    q = 1.0 if math.isinf(p) else p / (p - 1.0)
    p_code = 0 if math.isinf(p) else int(round(1000 * p))
    X, y, th, Xte, yte = [], [], [], [], []
    for s in range(n_seeds):
        rng = np.random.default_rng(
            np.random.SeedSequence(cfg["base_seed"], spawn_key=(T, d, p_code, s)))
        theta = rng.normal(0.0, cfg["theta_std"], d)
        theta /= np.linalg.norm(theta, p)

        def sample(m, rng=rng, theta=theta):
            x = rng.normal(0.0, cfg["x_std"], (m, d))
            x /= np.linalg.norm(x, q, axis=1, keepdims=True)
            return x, x @ theta + rng.normal(0.0, cfg["nu"], m)

        a, b = sample(T)
        c, e = sample(cfg["test_size"])
        X.append(a), y.append(b), th.append(theta), Xte.append(c), yte.append(e)
    prob = dict(X=np.stack(X), y=np.stack(y), theta=np.stack(th), Xte=np.stack(Xte),
                yte=np.stack(yte), T=T, d=d, p=p)
    prob["risk_opt"] = test_risk(prob, prob["theta"])
    prob["risk_zero"] = test_risk(prob, np.zeros_like(prob["theta"]))
    return prob


def test_risk(prob: dict, theta: np.ndarray) -> np.ndarray:
    """Paper's risk: mean (y - <x, theta>)^2 on the test set; theta (R, d) or (R, m, d)."""
    th = theta if theta.ndim == 3 else theta[:, None, :]
    pred = np.einsum("rnd,rmd->rmn", prob["Xte"], th)
    r = np.mean((prob["yte"][:, None, :] - pred) ** 2, axis=-1)
    return r if theta.ndim == 3 else r[:, 0]


def subopt(prob: dict, risk: np.ndarray) -> np.ndarray:
    ro, rz = prob["risk_opt"], prob["risk_zero"]
    if risk.ndim == 2:
        ro, rz = ro[:, None], rz[:, None]
    return (risk - ro) / (rz - ro)


# ----------------------------------------------------------------------------- methods
def scales_for(method: str, p: float, grid: dict) -> list[float]:
    base = method.removesuffix("-acc")
    if base == "OFW":
        return grid["OFW_pinf" if math.isinf(p) else "OFW_p1_5"]
    return grid[base]


def run_ofw(prob, scale, cfg, rng, calibration, checkpoints=None):
    T, d, p = prob["T"], prob["d"], prob["p"]
    R = prob["X"].shape[0]
    opt = DPTOFW(LOSS, dim=d, p=p, radius=cfg["radius"], horizon=T, epsilon=cfg["epsilon"],
                 delta=1.0 / T, calibration=calibration, x_bound=cfg["x_bound"],
                 y_bound=cfg["y_bound"], lr_scale=scale).reset(R, rng)
    X, y = prob["X"], prob["y"]
    marks = set() if checkpoints is None else set(checkpoints)
    curve, clock = [], 0.0
    t0 = time.perf_counter()
    for t in range(T):
        theta = opt.step(X[:, t], y[:, t])
        if t + 1 in marks:
            clock += time.perf_counter() - t0
            curve.append((clock, subopt(prob, test_risk(prob, theta))))
            t0 = time.perf_counter()
    clock += time.perf_counter() - t0
    return dict(theta=theta, seconds=clock, n_clipped=opt.n_clipped, privacy=opt.privacy,
                curve=curve)


def run_batch(method, prob, scale, cfg, rng):
    T, p = prob["T"], prob["p"]
    L0 = LOSS.lipschitz(p, cfg["x_bound"], cfg["radius"], cfg["y_bound"])
    L1 = LOSS.smoothness(p, cfg["x_bound"])
    common = dict(p=p, radius=cfg["radius"], epsilon=cfg["epsilon"], delta=1.0 / T,
                  lipschitz=L0, lr_scale=scale)
    if method == "NoisySFW":
        opt = NoisySFW(smoothness=L1, **common)
    elif method == "LocalMD":
        opt = LocalMD(noise_constant=100.0, **common)
    elif method in ("NoisySGD", "NoisySGD-acc"):
        cal = "accountant" if method.endswith("-acc") else "theorem"
        opt = NoisySGD(calibration=cal, **common)
    else:
        raise ValueError(f"unknown method {method!r}")
    t0 = time.perf_counter()
    res = opt.fit(LOSS, prob["X"], prob["y"], rng)
    seconds = time.perf_counter() - t0
    return dict(theta=res.theta, seconds=seconds, n_clipped=res.n_clipped, privacy=res.privacy,
                result=res)


def run_method(method, prob, scale, cfg, rng):
    if method in ("OFW", "OFW-acc"):
        return run_ofw(prob, scale, cfg, rng, "accountant" if method == "OFW-acc" else "theorem")
    return run_batch(method, prob, scale, cfg, rng)


def method_rng(cfg, T, d, p, method, scale) -> np.random.Generator:
    p_code = 0 if math.isinf(p) else int(round(1000 * p))
    m_code = sum((i + 1) * ord(c) for i, c in enumerate(method))
    s_code = int(round(scale * 1e6))
    return np.random.default_rng(np.random.SeedSequence(
        cfg["base_seed"] + 1, spawn_key=(T, d, p_code, m_code, s_code)))


# ----------------------------------------------------------------------------- table
def table_cells(grid, methods_filter) -> list[GridCell]:
    """One cell per (p, T, d, method, scale), named by its ``raw.csv`` key columns."""
    cells = []
    for p in (1.5, math.inf):
        methods = grid["methods"]["pinf" if math.isinf(p) else "p1_5"]
        methods = [m for m in methods if methods_filter is None or m in methods_filter]
        for T in grid["T"]:
            for d in grid["d"]:
                for method in methods:
                    for scale in scales_for(method, p, grid["scales"]):
                        key = "|".join((str(T), str(d), p_label(p), method, str(float(scale))))
                        cells.append(GridCell(dict(T=T, d=d, p=p, method=method,
                                                   scale=float(scale)), name=key))
    return cells


def run_table(cfg, grid, methods_filter, out: Path, log) -> dict:
    """Run every cell of the table not yet in ``raw.csv``; return the guarantees of the cells
    run now."""
    privacy, problems = {}, {}

    def compute(cell: GridCell) -> pd.DataFrame:
        T, d, p, method, scale = (cell[k] for k in ("T", "d", "p", "method", "scale"))
        if (T, d, p) not in problems:  # the data of one (T, d, p), shared by its cells
            problems.clear()
            problems[T, d, p] = make_problem(T, d, p, grid["seeds"], cfg)
        prob = problems[T, d, p]
        rng = method_rng(cfg, T, d, p, method, scale)
        r = run_method(method, prob, scale, cfg, rng)
        risk = test_risk(prob, r["theta"])
        so = subopt(prob, risk)
        R = len(risk)
        privacy[f"{method} T={T} d={d} p={p_label(p)}"] = r["privacy"].to_dict()
        log(f"T={T:>5} d={d:>2} p={p_label(p):>3} {method:<12} scale={scale:<7g}"
            f" SubOpt={so.mean():.4f}±{so.std():.4f} risk={risk.mean():.5f}"
            f" {r['seconds'] / R:.3g}s/rep eps={r['privacy'].epsilon:.3g}")
        return pd.DataFrame(dict(
            T=T, d=d, p=p_label(p), method=method, scale=scale,
            seed=np.arange(R), risk=risk, subopt=so, seconds=r["seconds"] / R,
            n_clipped=np.asarray(r["n_clipped"]),
            epsilon_certified=r["privacy"].epsilon,
            certified=r["privacy"].certified,
        ))

    run_grid(table_cells(grid, methods_filter), compute, CsvTable(out / "raw.csv", KEYS))
    return privacy


def summarize(raw: pd.DataFrame, grid) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = raw.copy()
    raw["T"] = raw["T"].astype(int)
    raw["d"] = raw["d"].astype(int)
    raw["p"] = raw["p"].astype(str)
    keep = raw["T"].isin(grid["T"]) & raw["d"].isin(grid["d"]) & (raw["seed"] < grid["seeds"])
    raw = raw[keep]
    agg = raw.groupby(KEYS).agg(
        risk_mean=("risk", "mean"), risk_std=("risk", "std"),
        subopt_mean=("subopt", "mean"), subopt_std=("subopt", "std"),
        seconds_mean=("seconds", "mean"), seconds_std=("seconds", "std"),
        clipped_mean=("n_clipped", "mean"), epsilon_certified=("epsilon_certified", "max"),
        n_seeds=("seed", "count"),
    ).reset_index()
    best = agg.loc[agg.groupby(["T", "d", "p", "method"])["subopt_mean"].idxmin()]
    paper = pd.read_csv(HERE / "paper_table_5_1.csv")
    paper["p"] = paper["p"].astype(str)
    paper = paper.rename(columns={"algo": "method", "risk_mean": "paper_risk_mean",
                                  "risk_std": "paper_risk_std",
                                  "subopt_mean": "paper_subopt_mean",
                                  "subopt_std": "paper_subopt_std",
                                  "time_mean": "paper_time_mean", "time_std": "paper_time_std"})
    best = best.assign(paper_key=best["method"].str.removesuffix("-acc"))
    table = best.merge(paper.drop(columns=["seed_line"]), how="left",
                       left_on=["T", "d", "p", "paper_key"],
                       right_on=["T", "d", "p", "method"], suffixes=("", "_paper"))
    table = table.drop(columns=["paper_key", "method_paper"])
    order = {"OFW": 0, "OFW-acc": 1, "NoisySFW": 2, "LocalMD": 3, "NoisySGD": 4,
             "NoisySGD-acc": 5}
    table = table.sort_values(["T", "d", "p", "method"],
                              key=lambda s: s.map(order) if s.name == "method" else s)
    table = table.sort_values(["T", "d", "p"], kind="stable")
    return agg, table.reset_index(drop=True)


def _pm(m, s, fmt="{:.3g}") -> str:
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return "—"
    s = 0.0 if s is None or (isinstance(s, float) and math.isnan(s)) else s
    return f"{fmt.format(m)} ± {fmt.format(s)}"


def to_markdown(table: pd.DataFrame) -> str:
    head = ("| T | d | p | method | scale | risk (ours) | risk (paper) | SubOpt (ours) | "
            "SubOpt (paper) | s/run (ours, batched) | s/run (paper) | ε certified |\n"
            "|---:|---:|:---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    lines = []
    for r in table.itertuples(index=False):
        cert = f"{r.epsilon_certified:.3g}" if math.isfinite(r.epsilon_certified) else "∞"
        lines.append(
            f"| {r.T} | {r.d} | {r.p} | {r.method} | {r.scale:g} | "
            f"{_pm(r.risk_mean, r.risk_std)} | {_pm(r.paper_risk_mean, r.paper_risk_std)} | "
            f"{_pm(r.subopt_mean, r.subopt_std)} | "
            f"{_pm(r.paper_subopt_mean, r.paper_subopt_std)} | "
            f"{r.seconds_mean:.2g} | "
            f"{_pm(r.paper_time_mean, r.paper_time_std, '{:.3g}')} | {cert} |")
    return head + "\n".join(lines) + "\n"


def to_compact_markdown(table: pd.DataFrame) -> str:
    """One row per (T, d, p): each method's SubOpt at its best scale, "ours (paper)"."""
    methods = [m for m in ("OFW", "OFW-acc", "NoisySFW", "LocalMD", "NoisySGD", "NoisySGD-acc")
               if m in set(table["method"])]
    head = "| T | d | p | " + " | ".join(methods) + " |\n"
    head += "|---:|---:|:---:|" + "---:|" * len(methods) + "\n"
    lines = []
    for (T, d, p), sub in table.groupby(["T", "d", "p"], sort=False):
        cells = []
        for m in methods:
            r = sub[sub["method"] == m]
            if not len(r):
                cells.append("")
                continue
            r = r.iloc[0]
            paper = ("" if pd.isna(r["paper_subopt_mean"]) or m.endswith("-acc")
                     else f" ({r['paper_subopt_mean']:.3g})")
            cells.append(f"{r['subopt_mean']:.3g}{paper}")
        lines.append(f"| {T} | {d} | {p} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- figure
def figure_5_3(cfg, fig_cfg, table: pd.DataFrame, grid, out: Path, log) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    rows = []
    for T, d in fig_cfg["configs"]:
        p = 1.5
        for method in ("OFW", "NoisySFW"):
            sel = table[(table["T"] == T) & (table["d"] == d) & (table["p"] == "1.5")
                        & (table["method"] == method)]
            if len(sel):
                scale = float(sel["scale"].iloc[0])
            else:  # not in this run's table: middle of the grid
                grid_scales = scales_for(method, p, grid["scales"])
                scale = float(grid_scales[len(grid_scales) // 2])
            prob_all = make_problem(T, d, p, fig_cfg["seeds"], cfg)
            for s in range(fig_cfg["seeds"]):
                prob = {k: (v[s:s + 1] if isinstance(v, np.ndarray) else v)
                        for k, v in prob_all.items()}
                rng = method_rng(cfg, T, d, p, method + "-fig", scale + s)
                if method == "OFW":
                    marks = np.unique(np.linspace(1, T, fig_cfg["checkpoints"]).astype(int))
                    r = run_ofw(prob, scale, cfg, rng, "theorem", checkpoints=marks)
                    for k, (clock, so) in enumerate(r["curve"]):
                        rows.append(dict(config=f"T={T}, d={d}", method="DP-TOFW",
                                         scale=scale, seed=s, step=int(marks[k]),
                                         seconds=clock, subopt=float(so[0])))
                else:
                    r = run_batch(method, prob, scale, cfg, rng)
                    res = r["result"]
                    so = subopt(prob, test_risk(prob, res.history))[0]
                    for k in range(1, len(so)):
                        rows.append(dict(config=f"T={T}, d={d}", method="NoisySFW",
                                         scale=scale, seed=s, step=int(res.history_steps[k]),
                                         seconds=float(res.extra["history_time"][k]),
                                         subopt=float(so[k])))
            log(f"figure 5.3: T={T} d={d} {method} scale={scale:g} done")
    df = pd.DataFrame(rows)
    df.to_csv(out / "figure_5_3.csv", index=False)
    # mean +- std across seeds at each checkpoint, plotted against the mean clock
    g = df.groupby(["config", "method", "step"]).agg(
        seconds=("seconds", "mean"), subopt=("subopt", "mean"), sd=("subopt", "std")
    ).reset_index()
    sns.set_theme(style="whitegrid")
    configs = list(dict.fromkeys(g["config"]))
    fig, axes = plt.subplots(1, len(configs), figsize=(5.5 * len(configs), 4), squeeze=False)
    palette = {"DP-TOFW": "tab:blue", "NoisySFW": "tab:orange"}
    for ax, conf in zip(axes[0], configs, strict=True):
        for method, sub in g[g["config"] == conf].groupby("method"):
            sub = sub.sort_values("seconds")
            ax.plot(sub["seconds"], sub["subopt"], label=method, color=palette[method])
            ax.fill_between(sub["seconds"], sub["subopt"] - sub["sd"], sub["subopt"] + sub["sd"],
                            alpha=0.25, color=palette[method])
        ax.set_xscale("log")
        ax.set_title(f"p = 1.5, {conf}, (1, 1/T)-DP")
        ax.set_xlabel("wall-clock seconds (single run)")
        ax.set_ylabel("SubOpt (test)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "figure_5_3.png", dpi=130)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reduced", action="store_true", help="small grid (a few minutes)")
    ap.add_argument("--config", type=Path, default=HERE / "config.toml")
    ap.add_argument("--out", type=Path, default=None, help="output directory")
    ap.add_argument("--methods", nargs="+", default=None, help="only these methods")
    ap.add_argument("--T", nargs="+", type=int, default=None, help="only these T")
    ap.add_argument("--scales", nargs="+", default=[], metavar="METHOD=S1,S2",
                    help="override a method's scale grid (e.g. NoisySGD=1,2); the grid key is "
                         "the method without '-acc' (OFW_p1_5 / OFW_pinf for OFW)")
    ap.add_argument("--no-figure", action="store_true", help="skip Figure 5.3")
    ap.add_argument("--figure-only", action="store_true", help="only Figure 5.3")
    args = ap.parse_args(argv)

    conf = tomllib.loads(args.config.read_text())
    cfg = conf["problem"]
    tag = "reduced" if args.reduced else "full"
    grid = conf[tag]
    run_grid_cfg = dict(grid, scales=dict(grid["scales"]))
    if args.T:
        run_grid_cfg["T"] = [t for t in grid["T"] if t in args.T]
    for item in args.scales:
        key, _, vals = item.partition("=")
        if key not in grid["scales"]:
            ap.error(f"--scales: unknown grid key {key!r}; known: {sorted(grid['scales'])}")
        run_grid_cfg["scales"][key] = [float(v) for v in vals.split(",")]
    out = args.out or HERE / "results" / tag
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_start:7.1f}s] {msg}", flush=True)

    privacy = {}
    if not args.figure_only:
        privacy = run_table(cfg, run_grid_cfg, args.methods, out, log)
    raw = pd.read_csv(out / "raw.csv")
    agg, table = summarize(raw, grid)
    agg.to_csv(out / "summary_all_scales.csv", index=False)
    table.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(to_markdown(table))
    (out / "table_subopt.md").write_text(to_compact_markdown(table))
    log(f"table written to {out / 'table.md'}")
    if not args.no_figure:
        fig_cfg = dict(conf["figure_5_3"])
        if args.reduced:
            fig_cfg["seeds"] = min(fig_cfg["seeds"], grid["seeds"])
        figure_5_3(cfg, fig_cfg, table, grid, out, log)

    import dp_accounting
    import numba

    import dpbandits

    old = out / "run.json"
    if old.exists():  # keep the guarantees recorded by earlier (resumed) invocations
        try:
            privacy = {**json.loads(old.read_text()).get("privacy", {}), **privacy}
        except (json.JSONDecodeError, AttributeError):
            pass
    record = dict(
        command=" ".join([Path(sys.executable).name, "-m", __spec__.name if __spec__ else
                          sys.argv[0], *sys.argv[1:]]),
        tag=tag, config=conf, seconds=time.perf_counter() - t_start,
        versions=dict(python=platform.python_version(), numpy=np.__version__,
                      pandas=pd.__version__, numba=numba.__version__,
                      dp_accounting=getattr(dp_accounting, "__version__", "?"),
                      dpbandits=dpbandits.__version__),
        privacy=privacy,
    )
    (out / "run.json").write_text(json.dumps(record, indent=1, default=str))
    log("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Example 4.1 / Appendix E.1 of Sopa et al. 2025 (Figure 2, left block): DP-GIBO tuning the 15
lengthscales of a GP regression on private validation data; sweeps over the bias tolerance
epsilon, the privacy level mu (against private random search and non-private GP-UCB) and the
evaluation noise sigma.

    python -m experiments.dp_gibo.e41_gp_lengthscales.run [--quick] [--only eps|mu|sigma|mean ...]

(from the repository root). Every DP-GIBO run (and the mu sweep's baselines) is one cell of
:func:`dpbandits.harness.grid.run_grid`, stored in ``cells/`` as it finishes: an interrupted
run resumes (delete ``cells/`` to start over). Writes results_<sweep>.csv, summary.csv,
fig_<sweep>.png and run_meta.json here.
"""

from __future__ import annotations

import json
import math
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.bo import (
    DPGIBO,
    GPUCB,
    RBF,
    GPRegressionObjective,
    NoisyObjective,
    PrivateRandomSearch,
)
from dpbandits.bo.objectives import sample_gp_regression_data
from dpbandits.harness.grid import CellFiles, GridCell, run_grid
from experiments.dp_gibo import common

HERE = Path(__file__).resolve().parent
#: per sweep: the salt of its start points and the first entry of its generators' seeds
#: (fixed: they seed the committed runs)
STREAMS = {"eps": (1, 1), "mu": (2, 2), "mean": (2, 8), "sigma": (3, 6)}
#: the evaluation-noise salt of a sweep's i-th run is NOISE_SALT[sweep] + i
NOISE_SALT = {"eps": 100, "mu": 200, "sigma": 300, "mean": 400}


def problem(cfg):
    rng = np.random.default_rng(cfg["seed"])
    p = cfg["dim"]
    lo, hi = cfg["true_lengthscales"]
    ell = np.geomspace(lo, hi, p)
    X, y = sample_gp_regression_data(rng, cfg["n_train"] + cfg["n_val"], ell,
                                     noise_std=cfg["true_noise_std"])
    ntr = cfg["n_train"]
    obj = GPRegressionObjective(X[:ntr], y[:ntr], X[ntr:], y[ntr:],
                                noise_var=cfg["model_noise_var"])
    bounds = np.tile(cfg["log_ls_bounds"], (p, 1))
    refs = {"loss_true_lengthscales": obj.value(np.log(ell)),
            "loss_lengthscale_1": obj.value(np.zeros(p)),
            "loss_predict_zero": float(np.mean(y[ntr:] ** 2))}
    return obj, bounds, refs


def starts(cfg, bounds, R, salt):
    rng = np.random.default_rng([cfg["seed"], 7, salt])
    return bounds[:, 0] + (bounds[:, 1] - bounds[:, 0]) * rng.random((R, bounds.shape[0]))


def noisy(obj, sigma, cfg, salt):
    return NoisyObjective(obj, sigma, np.random.default_rng([cfg["seed"], 11, salt]))


def runs(cfg, sweep):
    """The DP-GIBO runs of ``sweep``, one dict each: ``setting`` (label), ``value`` (plotted),
    ``privacy`` (its key in run_meta.json), ``index`` (its stream), the evaluation ``noise``
    and the DP-GIBO arguments beyond the common ones (``args``)."""
    c = cfg[f"{sweep}_sweep"]
    out = []
    if sweep == "eps":
        for i, tol in enumerate(c["tolerances"]):
            out.append(dict(setting=f"eps={tol:g}", value=tol, privacy=f"eps={tol}", index=i,
                            noise=c["eval_noise"], args=dict(
                                mu=c["mu"], clip_bound=c["clip_bound"],
                                noise_var=c["eval_noise"] ** 2, tolerance=tol)))
    elif sweep in ("mu", "mean"):
        for pm in c.get("prior_means", [None]):
            for i, mu in enumerate(map(common.as_number, c["mus"])):
                args = dict(mu=mu, clip_bound=c["clip_bound"] if math.isfinite(mu) else math.inf,
                            noise_var=c["eval_noise"] ** 2, tolerance=c["tolerance"])
                setting = f"mu={mu:g}"
                if pm is not None:
                    args["prior_mean"] = pm
                    setting += f", prior mean {pm}"
                out.append(dict(setting=setting, value=mu, index=i, noise=c["eval_noise"],
                                privacy=setting if pm is not None else f"DP-GIBO {setting}",
                                args=args))
    else:
        for i, sigma in enumerate(c["sigmas"]):
            out.append(dict(setting=f"sigma={sigma:g}", value=sigma, privacy=f"sigma={sigma}",
                            index=i, noise=sigma, args=dict(
                                mu=c["mu"], clip_bound=c["clip_bound"], noise_var=sigma**2,
                                batch_size=c["batch_size"], jitter=1e-8)))
    return out


def dpgibo(cfg, sweep, run, bounds):
    c = cfg[f"{sweep}_sweep"]
    x0 = starts(cfg, bounds, c["n_reps"], STREAMS[sweep][0])
    return DPGIBO(n_iters=c["n_iters"], **common.surrogate(cfg), step_rule=cfg["step_rule"],
                  step_size=cfg["step_size"], theta0=x0, bounds=bounds, delta=cfg["delta"],
                  **run["args"])


def cells(cfg, sweep):
    """The grid cells of ``sweep``: one per DP-GIBO run, and for the mu sweep one more for the
    baselines (random search and GP-UCB share one noisy objective, so they are one cell). A
    cell's key covers the config of its sweep, so a changed config never reuses a cell."""
    config = {k: v for k, v in cfg.items() if not k.endswith("_sweep")}
    config[f"{sweep}_sweep"] = cfg[f"{sweep}_sweep"]
    out = [GridCell({"sweep": sweep, "setting": r["setting"], "config": config})
           for r in runs(cfg, sweep)]
    if sweep == "mu":
        out.append(GridCell({"sweep": sweep, "setting": "baselines", "config": config}))
    return out


def gibo_rows(obj, res, sweep, setting, value):
    R, T1, _ = res.history.shape
    vals = obj.values(res.history.reshape(R * T1, -1)).reshape(R, T1)
    evals = np.concatenate([np.zeros((R, 1), int), np.cumsum(res.extra["batch_sizes"], 1)], 1)
    rows = []
    for r in range(R):
        for t in range(T1):
            rows.append(dict(sweep=sweep, method="DP-GIBO" if res.privacy.is_private else
                             "GIBO (mu=inf)", setting=setting, value=value, rep=r, t=t,
                             n_evals=int(evals[r, t]), loss=vals[r, t],
                             n_clipped=int(res.n_clipped[r]),
                             tol_met_frac=float(res.extra["tolerance_met"][r].mean())))
    return rows


def run_cell(cfg, obj, bounds, cell):
    """One cell's rows (and its seconds, as the cell's record)."""
    t0 = time.time()
    sweep = cell["sweep"]
    if cell["setting"] == "baselines":
        rows = baselines(cfg, obj, bounds)
    else:
        run = next(r for r in runs(cfg, sweep) if r["setting"] == cell["setting"])
        i = run["index"]
        res = dpgibo(cfg, sweep, run, bounds).fit(
            noisy(obj, run["noise"], cfg, NOISE_SALT[sweep] + i),
            np.random.default_rng([cfg["seed"], STREAMS[sweep][1], i]),
            n_reps=cfg[f"{sweep}_sweep"]["n_reps"])
        rows = gibo_rows(obj, res, sweep, run["setting"], run["value"])
        print(f"  {sweep} sweep, {run['setting']}: final loss {rows[-1]['loss']:.4f}",
              flush=True)
    return pd.DataFrame(rows), {"seconds": round(time.time() - t0, 1)}


def baselines(cfg, obj, bounds):
    """Private random search (one candidate stream per replication; each budget, a prefix, is
    a separate mu-GDP release) and non-private GP-UCB, on one noisy objective."""
    c = cfg["mu_sweep"]
    rows = []
    budgets = c["rs_budgets"]
    nmax = max(budgets)
    lo, hi = bounds[:, 0], bounds[:, 1]
    eval_obj = noisy(obj, c["eval_noise"], cfg, 299)
    for r in range(c["n_reps"]):
        cand_rng = np.random.default_rng([cfg["seed"], 3, r])
        C = lo + (hi - lo) * cand_rng.random((nmax, bounds.shape[0]))
        L = eval_obj.losses(C)
        clean = obj.values(C)
        for j, mu in enumerate(map(common.as_number, c["mus"])):
            rs = random_search(cfg, mu, bounds)
            for b in budgets:
                idx, ncl = rs.select(L[:b], np.random.default_rng([cfg["seed"], 4, r, j, b]))
                rows.append(dict(sweep="mu", method="private random search", setting=f"mu={mu:g}",
                                 value=mu, rep=r, t=-1, n_evals=b, loss=clean[idx],
                                 n_clipped=ncl, tol_met_frac=np.nan))
    print("  random search done", flush=True)
    res = gp_ucb(cfg, bounds).fit(eval_obj, np.random.default_rng([cfg["seed"], 5]),
                                  n_reps=c["ucb_reps"])
    R, N, _ = res.history.shape
    vals = obj.values(res.history.reshape(R * N, -1)).reshape(R, N)
    for r in range(R):
        for j in range(N):
            rows.append(dict(sweep="mu", method="GP-UCB (non-private)", setting="mu=inf",
                             value=math.inf, rep=r, t=j, n_evals=j + 1, loss=vals[r, j],
                             n_clipped=0, tol_met_frac=np.nan))
    print(f"  GP-UCB final loss {vals[:, -1].mean():.4f}", flush=True)
    return rows


def random_search(cfg, mu, bounds):
    c = cfg["mu_sweep"]
    return PrivateRandomSearch(mu=mu, n_candidates=max(c["rs_budgets"]), bounds=bounds,
                               loss_bounds=c["rs_loss_bounds"], delta=cfg["delta"])


def gp_ucb(cfg, bounds):
    return GPUCB(n_evals=cfg["mu_sweep"]["ucb_evals"], bounds=bounds,
                 kernel=RBF(cfg["surrogate_lengthscale"]))


def privacy(cfg, sweep, bounds) -> dict:
    """The guarantee of every run of ``sweep`` (each follows from the run's parameters)."""
    out = {r["privacy"]: dpgibo(cfg, sweep, r, bounds).privacy.to_dict()
           for r in runs(cfg, sweep)}
    if sweep == "mu":
        for mu in map(common.as_number, cfg["mu_sweep"]["mus"]):
            out[f"random search mu={mu:g}"] = random_search(cfg, mu, bounds).privacy.to_dict()
        out["GP-UCB"] = gp_ucb(cfg, bounds).privacy.to_dict()
    return out


def summarize(dfs, refs):
    out = []
    for name, df in dfs.items():
        g = df[df.method.isin(["DP-GIBO", "GIBO (mu=inf)"])]
        fin = g[g.t == g.t.max()]
        s = fin.groupby(["method", "setting"]).agg(
            final_loss_mean=("loss", "mean"), final_loss_se=("loss", "sem"),
            total_evals_mean=("n_evals", "mean"), tol_met_frac=("tol_met_frac", "mean"),
            n_clipped_mean=("n_clipped", "mean")).reset_index()
        s.insert(0, "sweep", name)
        out.append(s)
        if name == "mu":
            for meth in ("private random search", "GP-UCB (non-private)"):
                b = df[df.method == meth]
                if b.empty:
                    continue
                b = b[b.n_evals == b.n_evals.max()]
                s = b.groupby(["method", "setting"]).agg(
                    final_loss_mean=("loss", "mean"), final_loss_se=("loss", "sem"),
                    total_evals_mean=("n_evals", "mean")).reset_index()
                s.insert(0, "sweep", name)
                out.append(s)
    res = pd.concat(out, ignore_index=True)
    for k, v in refs.items():
        res[k] = v
    return res


def plot(dfs, refs, out_dir):
    common.plot_style()
    import matplotlib.pyplot as plt
    import seaborn as sns

    def ref_lines(ax):
        ax.axhline(refs["loss_true_lengthscales"], color="k", ls="--", lw=0.8,
                   label="true lengthscales")

    if "eps" in dfs:
        df = dfs["eps"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        sns.lineplot(df, x="t", y="loss", hue="setting", ax=axes[0], errorbar="se")
        axes[0].set_xlabel("iteration t")
        m = df.groupby(["setting", "t"]).agg(loss=("loss", "mean"), n_evals=("n_evals", "mean"))
        sns.lineplot(m.reset_index(), x="n_evals", y="loss", hue="setting", ax=axes[1],
                     marker=".", legend=False)
        axes[1].set_xlabel("function evaluations (mean over replications)")
        for ax in axes:
            ref_lines(ax)
            ax.set_ylabel("validation MSE at theta_t")
        fig.suptitle("DP-GIBO, bias tolerance sweep (mu = 1, B = 3, sigma = 0.05)")
        common.save_figure(fig, out_dir / "fig_eps.png")
    if "mu" in dfs:
        df = dfs["mu"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        g = df[df.method.isin(["DP-GIBO", "GIBO (mu=inf)"])]
        m = g.groupby(["setting", "t"]).agg(loss=("loss", "mean"),
                                            n_evals=("n_evals", "mean")).reset_index()
        sns.lineplot(m, x="n_evals", y="loss", hue="setting", ax=axes[0])
        u = df[df.method == "GP-UCB (non-private)"]
        if not u.empty:
            sns.lineplot(u, x="n_evals", y="loss", ax=axes[0], color="k", lw=1,
                         label="GP-UCB (non-private)", errorbar=None)
        rs = df[df.method == "private random search"]
        sns.lineplot(rs, x="n_evals", y="loss", hue="setting", ax=axes[0], ls=":",
                     marker="o", legend=False, errorbar=None)
        axes[0].set_xlabel("function evaluations")
        axes[0].set_title("solid: DP-GIBO; dotted: private random search (same mu colours)")
        fin = pd.concat([g[g.t == g.t.max()].assign(method="DP-GIBO"),
                         rs[rs.n_evals == rs.n_evals.max()]])
        fin = fin.assign(mu=fin.value.map(lambda v: "inf" if math.isinf(v) else f"{v:g}"))
        sns.pointplot(fin, x="mu", y="loss", hue="method", ax=axes[1], errorbar="se",
                      dodge=0.2)
        axes[1].set_title("final validation loss vs privacy level")
        for ax in axes:
            ref_lines(ax)
            ax.set_ylabel("validation MSE")
        common.save_figure(fig, out_dir / "fig_mu.png")
    if "mean" in dfs:
        df = dfs["mean"]
        fig, ax = plt.subplots(figsize=(6.5, 4))
        sns.lineplot(df, x="t", y="loss", hue="setting", ax=ax, errorbar="se")
        ref_lines(ax)
        ax.set_xlabel("iteration t")
        ax.set_ylabel("validation MSE at theta_t")
        ax.set_title("zero vs per-individual estimated prior mean (eps = 0.5)")
        common.save_figure(fig, out_dir / "fig_mean.png")
    if "sigma" in dfs:
        df = dfs["sigma"]
        fin = df[df.t == df.t.max()]
        fig, ax = plt.subplots(figsize=(5.5, 4))
        sns.boxplot(fin, x="setting", y="loss", ax=ax)
        sns.stripplot(fin, x="setting", y="loss", ax=ax, color="k", size=3)
        ref_lines(ax)
        ax.set_title("final loss after T = 45, b = 16, mu = 0.1, B = 1")
        ax.set_ylabel("validation MSE")
        common.save_figure(fig, out_dir / "fig_sigma.png")


SWEEPS = ("eps", "mu", "sigma", "mean")


def main(argv=None):
    ap = common.arguments(__doc__, HERE)
    ap.add_argument("--only", choices=SWEEPS, action="append",
                    help="run only these sweeps (repeatable); the others' results are reused")
    args, cfg, started = common.start(ap, HERE, argv)
    obj, bounds, refs = problem(cfg)
    print("reference losses:", refs, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    meta_path = args.out / "run_meta.json"
    old = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    priv = old.get("privacy", {})
    timing = old.get("seconds_per_sweep", {})
    store = CellFiles(args.out / "cells")
    dfs = {}
    for name in args.only or SWEEPS:
        print(f"sweep {name}", flush=True)
        grid = cells(cfg, name)
        dfs[name] = pd.concat(run_grid(grid, partial(run_cell, cfg, obj, bounds), store),
                              ignore_index=True)
        priv[name] = privacy(cfg, name, bounds)
        timing[name] = round(sum(store.record(c.key)["seconds"] for c in grid), 1)
        dfs[name].to_csv(args.out / f"results_{name}.csv", index=False)
    for name in SWEEPS:  # reuse earlier results of sweeps not run now: cells, else the CSV
        grid, f = cells(cfg, name), args.out / f"results_{name}.csv"
        if name in dfs:
            continue
        if all(store.done(c.key) for c in grid):
            dfs[name] = pd.concat([store.load(c.key) for c in grid], ignore_index=True)
        elif f.exists():
            dfs[name] = pd.read_csv(f)
    dfs = {name: dfs[name] for name in SWEEPS if name in dfs}
    summ = summarize(dfs, refs)
    summ.to_csv(args.out / "summary.csv", index=False)
    print(summ.to_string(index=False))
    plot(dfs, refs, args.out)
    common.write_meta(args.out, cfg, priv, started, {"references": refs,
                                                      "seconds_per_sweep": timing})
    print(f"done in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()

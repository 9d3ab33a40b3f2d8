"""Substitute for Example 4.2 / Appendix E.2 of Sopa et al. 2025 (Figure 2, right): DP-GIBO
(mu = 1) vs non-private GIBO vs private random search, tuning 41 hyper-parameters of a
kernel ridge regression on a real image shipped with matplotlib (see config.toml and
README.md for why this replaces the UCI CT-slice SVM task).

    python -m experiments.dp_gibo.e42_mri_kernel_regression.run [--quick] [--plot-only]

(from the repository root).

Writes results.csv, summary.csv, figure.png and run_meta.json next to this script.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import cbook

from dpbandits.bo import DPGIBO, GPRegressionObjective, PrivateRandomSearch
from experiments.dp_gibo import common

HERE = Path(__file__).resolve().parent


def load_mri() -> np.ndarray:
    """The 256x256 uint16 MRI slice from matplotlib's sample data, scaled to [0, 1]."""
    with cbook.get_sample_data("s1045.ima.gz") as fh:
        im = np.frombuffer(fh.read(), np.uint16).reshape(256, 256).astype(float)
    return im / im.max()


def patch_regression(im: np.ndarray, threshold: float):
    """Rows: pixels inside the head with a full 7x7 neighbourhood; features: the 40 pixels of
    the 7x7 patch outside the central 3x3 block; target: the centre pixel."""
    offs = [(di, dj) for di in range(-3, 4) for dj in range(-3, 4)
            if max(abs(di), abs(dj)) >= 2]
    ii, jj = np.meshgrid(np.arange(3, 253), np.arange(3, 253), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    keep = im[ii, jj] > threshold
    ii, jj = ii[keep], jj[keep]
    X = np.stack([im[ii + di, jj + dj] for di, dj in offs], axis=1)
    return X, im[ii, jj]


def problem(cfg):
    X, y = patch_regression(load_mri(), cfg["tissue_threshold"])
    rng = np.random.default_rng(cfg["seed"])
    idx = rng.permutation(len(y))[: cfg["n_train"] + cfg["n_val"]]
    tr, va = idx[: cfg["n_train"]], idx[cfg["n_train"]:]
    mean, sd = y[tr].mean(), y[tr].std()  # training data are not the protected data
    obj = GPRegressionObjective(X[tr], (y[tr] - mean) / sd, X[va], (y[va] - mean) / sd,
                                tune_noise=True)
    p = X.shape[1]
    bounds = np.vstack([np.tile(cfg["log_ls_bounds"], (p, 1)), [cfg["log_noise_bounds"]]])
    refs = {"n_pixels_available": int(len(y)), "n_features": p,
            "loss_predict_mean": float(np.mean(((y[va] - mean) / sd) ** 2)),
            "loss_box_centre": obj.value(bounds.mean(axis=1))}
    return obj, bounds, refs


def main(argv=None):
    args = common.arguments(__doc__, HERE, "redraw figure.png from results.csv and "
                            "run_meta.json in --out").parse_args(argv)
    if args.plot_only:
        meta = json.loads((args.out / "run_meta.json").read_text())
        plot(pd.read_csv(args.out / "results.csv"), meta["problem"], args.out / "figure.png")
        return
    started = time.time()
    cfg = common.load_config(HERE / "config.toml", args.quick)
    obj, bounds, refs = problem(cfg)
    print("problem:", refs, flush=True)
    d = obj.dim
    R = cfg["n_reps"]
    x0 = bounds[:, 0] + (bounds[:, 1] - bounds[:, 0]) * np.random.default_rng(
        [cfg["seed"], 1]).random((R, d))
    rows, priv = [], {}
    mus = [common.as_number(m) for m in cfg["mus"]]
    variants = [(mu, pm) for pm in cfg["prior_means"] for mu in mus]
    for mu, pm in variants:
        private = math.isfinite(mu)
        alg = DPGIBO(mu=mu, n_iters=cfg["n_iters"],
                     clip_bound=cfg["clip_bound"] if private else math.inf,
                     **common.surrogate(cfg),
                     batch_size=d + cfg["batch_size_offset"], step_rule=cfg["step_rule"],
                     step_size=cfg["step_size"], theta0=x0, bounds=bounds, jitter=1e-8,
                     prior_mean=pm, delta=cfg["delta"])
        t0 = time.time()
        # the same generator for both prior means: identical designs and noise streams
        res = alg.fit(obj, np.random.default_rng([cfg["seed"], 2, mus.index(mu)]), n_reps=R)
        name = f"DP-GIBO mu={mu:g}" if private else "GIBO (mu=inf)"
        name += ", estimated mean" if pm == "estimated" else ""
        priv[name] = alg.privacy.to_dict()
        H = res.history
        vals = obj.values(H.reshape(-1, d)).reshape(R, -1)
        for r in range(R):
            for t in range(H.shape[1]):
                rows.append(dict(method=name, rep=r, t=t, n_evals=t * (d + 1), loss=vals[r, t],
                                 log_ls_0=H[r, t, 0], log_ls_1=H[r, t, 1],
                                 log_noise=H[r, t, -1], n_clipped=int(res.n_clipped[r])))
        print(f"  {name}: final loss {vals[:, -1].mean():.4f} ({time.time() - t0:.0f} s)",
              flush=True)
    budgets = cfg["rs_budgets"]
    lo, hi = bounds[:, 0], bounds[:, 1]
    for r in range(R):
        C = lo + (hi - lo) * np.random.default_rng([cfg["seed"], 3, r]).random((max(budgets), d))
        L = obj.losses(C)
        clean = L.mean(axis=1)
        for j, mu in enumerate([1.0, math.inf]):
            rs = PrivateRandomSearch(mu=mu, n_candidates=max(budgets), bounds=bounds,
                                     loss_bounds=cfg["rs_loss_bounds"], delta=cfg["delta"])
            name = f"private random search mu={mu:g}" if math.isfinite(mu) else \
                "random search (non-private)"
            priv[name] = rs.privacy.to_dict()
            for b in budgets:
                idx, ncl = rs.select(L[:b], np.random.default_rng([cfg["seed"], 4, r, j, b]))
                rows.append(dict(method=name, rep=r, t=-1, n_evals=b, loss=clean[idx],
                                 n_clipped=ncl))
    print("  random search done", flush=True)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "results.csv", index=False)
    last = df[df.n_evals == df.groupby("method").n_evals.transform("max")]
    summ = last.groupby("method").agg(final_loss_mean=("loss", "mean"),
                                      final_loss_se=("loss", "sem"),
                                      n_evals=("n_evals", "max"),
                                      n_clipped_mean=("n_clipped", "mean")).reset_index()
    for k, v in refs.items():
        summ[k] = v
    summ.to_csv(args.out / "summary.csv", index=False)
    print(summ.to_string(index=False))
    plot(df, refs, args.out / "figure.png")
    common.write_meta(args.out, cfg, priv, started, {"problem": refs})
    print(f"done in {time.time() - started:.0f} s")


def plot(df, refs, path):
    common.plot_style()
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(2, 1, figsize=(7, 8))
    g = df[df.t >= 0]
    sns.lineplot(g, x="n_evals", y="loss", hue="method", ax=axes[0], errorbar="se")
    rs = df[df.t < 0]
    sns.lineplot(rs, x="n_evals", y="loss", hue="method", ax=axes[0], marker="o", ls=":",
                 errorbar="se", palette=["tab:olive", "tab:gray"])
    axes[0].axhline(refs["loss_box_centre"], color="k", ls="--", lw=0.8,
                    label="centre of the box (data-independent)")
    axes[0].set_xlabel("function evaluations")
    axes[0].set_ylabel("validation MSE (standardized)")
    axes[0].set_title(f"predicting the training mean: {refs['loss_predict_mean']:.2f}")
    axes[0].legend(fontsize=7)
    axes[0].set_ylim(0, None)
    one = g[g.rep == 0]
    sns.lineplot(one, x="log_ls_0", y="log_ls_1", hue="method", ax=axes[1], sort=False,
                 marker=".", legend=False)
    axes[1].set_title("optimization path of two log-lengthscales (replication 0)")
    common.save_figure(fig, path)


if __name__ == "__main__":
    main()

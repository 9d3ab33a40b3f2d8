"""Appendix E.4 of Sopa et al. 2025 (Figure 4): DP-GIBO vs DP-GD (and non-private GD) on a
weighted Huber linear regression.

    python -m experiments.dp_gibo.e4_huber_regression.run [--quick]   (from the repository root)

Writes results.csv, summary.csv, figure.png and run_meta.json next to this script.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from dpbandits.bo import DPGIBO, RBF, ExactGradientDPGD, HuberRegression
from experiments.dp_gibo import common

HERE = Path(__file__).resolve().parent


def run(cfg: dict):
    rng = np.random.default_rng(cfg["seed"])
    n, d = cfg["n"], cfg["d"]
    X = rng.normal(size=(n, d))
    y = X @ np.full(d, cfg["theta_true"]) + rng.normal(size=n)
    obj = HuberRegression(X, y, c=cfg["huber_c"])
    erm = minimize(obj.value, np.zeros(d), jac=obj.gradient, method="BFGS", tol=1e-12).x
    common = dict(n_iters=cfg["n_iters"], step_rule=cfg["step_rule"],
                  step_size=cfg["step_size"], delta=cfg["delta"])
    B, mu = cfg["clip_bound"], cfg["mu"]
    methods = {
        f"DP-GIBO mu={mu:g}": DPGIBO(mu=mu, clip_bound=B, kernel=RBF(cfg["lengthscale"]),
                                     batch_size=cfg["batch_size"], record_diagnostics=True,
                                     **common),
        f"DP-GD mu={mu:g}": ExactGradientDPGD(mu=mu, clip_bound=B, record_diagnostics=True,
                                               **common),
        "GD (non-private)": ExactGradientDPGD(mu=np.inf, clip_bound=np.inf, **common),
    }
    rows, privacy = [], {}
    for i, (name, alg) in enumerate(methods.items()):
        res = alg.fit(obj, np.random.default_rng([cfg["seed"], i]), n_reps=cfg["n_reps"])
        privacy[name] = alg.privacy.to_dict()
        H = res.history
        R, T1, _ = H.shape
        grads = np.stack([[obj.gradient(H[r, t]) for t in range(T1)] for r in range(R)])
        clean = res.extra.get("nonprivate_clipped_mean_gradient")
        for r in range(R):
            for t in range(T1):
                row = dict(method=name, rep=r, t=t, theta_1=H[r, t, 0],
                           dist_erm=np.linalg.norm(H[r, t] - erm),
                           dist_truth=np.linalg.norm(H[r, t] - cfg["theta_true"]),
                           grad_norm=np.linalg.norm(grads[r, t]),
                           loss=obj.value(H[r, t]))
                if clean is not None and t < T1 - 1:
                    row["estimated_grad_norm"] = np.linalg.norm(clean[r, t])
                rows.append(row)
    info = {"erm": erm.tolist(), "gradient_bound": obj.gradient_bound}
    return pd.DataFrame(rows), {"privacy": privacy, "info": info}


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    T = df.t.max()
    pick = df[df.t.isin([5, 10, 20, T])]
    out = pick.pivot_table(index="method", columns="t", values="dist_erm",
                           aggfunc=["mean", "std"])
    out.columns = [f"dist_erm_t{t}_{a}" for a, t in out.columns]
    return out.reset_index()


def plot(df: pd.DataFrame, path: Path, erm1: float) -> None:
    common.plot_style()
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(3, 1, figsize=(7, 9))
    sns.lineplot(df[df.rep == 0], x="t", y="theta_1", hue="method", ax=axes[0], lw=1)
    axes[0].axhline(erm1, color="k", ls="--", lw=0.8)
    axes[0].set_title("Estimate of one coordinate (replication 0; dashed: minimizer)")
    sns.lineplot(df, x="t", y="grad_norm", hue="method", ax=axes[1], errorbar=("pi", 50),
                 legend=False)
    axes[1].set_yscale("log")
    axes[1].set_title("||grad f(theta_t)||: median and interquartile band")
    est = df[df.method.str.startswith("DP-GIBO")].dropna(subset=["estimated_grad_norm"])
    long = est.melt(id_vars=["t", "rep"], value_vars=["grad_norm", "estimated_grad_norm"],
                    var_name="quantity", value_name="norm")
    sns.lineplot(long, x="t", y="norm", hue="quantity", ax=axes[2], errorbar=("pi", 50))
    axes[2].set_yscale("log")
    axes[2].set_title("DP-GIBO: true gradient norm vs its clipped surrogate estimate")
    for ax in axes:
        ax.set_xlabel("iteration t")
    common.save_figure(fig, path)


def main(argv=None) -> None:
    args, cfg, started = common.start(common.arguments(__doc__, HERE), HERE, argv)
    df, meta = run(cfg)
    common.finish(args.out, cfg, df, summarize(df), meta, started,
                  partial(plot, erm1=meta["info"]["erm"][0]))


if __name__ == "__main__":
    main()

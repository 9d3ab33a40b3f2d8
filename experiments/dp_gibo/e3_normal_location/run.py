"""Appendix E.3 of Sopa et al. 2025 (Figure 3): DP-GIBO on the location of a Normal model.

    python -m experiments.dp_gibo.e3_normal_location.run [--quick]   (from the repository root)

Writes results.csv (one row per method x replication x iteration), summary.csv,
figure.png and run_meta.json next to this script.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.bo import DPGIBO, GIBO, ExactGradientDPGD, NormalLocation, Polynomial
from dpbandits.bo._common import clip_and_average
from experiments.dp_gibo import common

HERE = Path(__file__).resolve().parent


def run(cfg: dict) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(cfg["seed"])
    d, n = cfg["d"], cfg["n"]
    X = rng.normal(cfg["theta_true"], 1.0, size=(n, d))
    obj = NormalLocation(X)
    mle = obj.mle
    B = cfg["clip_bound"]
    # fixed point of the clipped mean gradient (what any B = 1 method targets without noise)
    fp = ExactGradientDPGD(mu=np.inf, n_iters=3000, clip_bound=B, step_size=0.5).fit(
        obj, np.random.default_rng(0)).theta[0]
    common = dict(n_iters=cfg["n_iters"], kernel=Polynomial(cfg["kernel_degree"]),
                  batch_size=cfg["batch_size"], step_rule=cfg["step_rule"],
                  step_size=cfg["step_size"], jitter=cfg["jitter"], delta=cfg["delta"],
                  record_diagnostics=True)
    methods = {f"DP-GIBO mu={mu:g}": DPGIBO(mu=mu, clip_bound=B, **common)
               for mu in cfg["mus"]}
    methods["GIBO (mu=inf), B=1"] = GIBO(clip_bound=B, **common)
    methods["GIBO (mu=inf), no clipping"] = GIBO(**common)
    rows, privacy = [], {}
    for i, (name, alg) in enumerate(methods.items()):
        res = alg.fit(obj, np.random.default_rng([cfg["seed"], i]), n_reps=cfg["n_reps"])
        privacy[name] = alg.privacy.to_dict()
        H = res.history  # (R, T+1, d)
        R, T1, _ = H.shape
        nll = obj.values(H.reshape(-1, d)).reshape(R, T1)
        clean = res.extra["nonprivate_clipped_mean_gradient"]  # (R, T, d)
        noise = res.extra["nonprivate_noise"]
        true = res.extra["nonprivate_true_gradient"]
        exact_clipped = np.stack([[clip_and_average(obj.per_individual_gradients(H[r, t]), B)[0]
                                   if np.isfinite(alg.clip_bound) else true[r, t]
                                   for t in range(T1 - 1)] for r in range(R)])
        for r in range(R):
            for t in range(T1):
                row = dict(method=name, mu=alg.mu, rep=r, t=t, theta_1=H[r, t, 0],
                           nll=nll[r, t], nll_gap=nll[r, t] - obj.value(mle),
                           dist_mle=np.linalg.norm(H[r, t] - mle),
                           dist_clipped_fixed_point=np.linalg.norm(H[r, t] - fp))
                if t < T1 - 1:
                    row.update(
                        surrogate_bias=np.linalg.norm(clean[r, t] - exact_clipped[r, t]),
                        bias_vs_true_gradient=np.linalg.norm(clean[r, t] - true[r, t]),
                        noise_norm=np.linalg.norm(noise[r, t]),
                        n_clipped=res.extra["n_clipped_per_iter"][r, t])
                rows.append(row)
    info = {"mle": mle.tolist(), "clipped_fixed_point": fp.tolist(),
            "dist_mle_to_fixed_point": float(np.linalg.norm(mle - fp))}
    return pd.DataFrame(rows), {"privacy": privacy, "info": info}


def summarize(df: pd.DataFrame, n: int) -> pd.DataFrame:
    T = df.t.max()
    last = df[df.t > T - 50] if T > 50 else df[df.t > T // 2]
    per_rep = last.groupby(["method", "rep"]).agg(
        dist_mle_last=("dist_mle", "mean"), nll_gap_last=("nll_gap", "mean"),
        dist_fp_last=("dist_clipped_fixed_point", "mean"))
    fin = df[df.t == T].set_index(["method", "rep"])[["dist_mle"]].rename(
        columns={"dist_mle": "dist_mle_final"})
    diag = df.dropna(subset=["noise_norm"]).groupby(["method", "rep"]).agg(
        surrogate_bias=("surrogate_bias", "median"), noise_norm=("noise_norm", "median"),
        clipped_frac=("n_clipped", lambda s: s.sum() / (len(s) * n)))
    out = per_rep.join(fin).join(diag).groupby("method").agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    return out.reset_index()


def plot(df: pd.DataFrame, path: Path) -> None:
    common.plot_style()
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(3, 1, figsize=(7, 9))
    one = df[df.rep == 0]
    sns.lineplot(one, x="t", y="theta_1", hue="method", ax=axes[0], lw=1)
    axes[0].axhline(df.attrs.get("mle_1", np.nan), color="k", ls="--", lw=0.8, label="MLE")
    axes[0].set_title("Estimate of one coordinate (replication 0)")
    sns.lineplot(df, x="t", y="nll_gap", hue="method", ax=axes[1], errorbar=("pi", 50),
                 legend=False)
    axes[1].set_yscale("log")
    axes[1].set_title("f(theta_t) - f(MLE): median and interquartile band over replications")
    sub = df[(df.method == df.attrs.get("bias_method")) & df.noise_norm.notna()]
    long = sub.melt(id_vars=["t", "rep"], value_vars=["surrogate_bias", "noise_norm"],
                    var_name="quantity", value_name="norm")
    sns.lineplot(long, x="t", y="norm", hue="quantity", ax=axes[2], errorbar=("pi", 50))
    axes[2].set_yscale("log")
    axes[2].set_title(f"Gradient bias vs added noise, {df.attrs.get('bias_method')}")
    for ax in axes:
        ax.set_xlabel("iteration t")
    axes[0].legend(fontsize=7)
    common.save_figure(fig, path)


def main(argv=None) -> None:
    args, cfg, started = common.start(common.arguments(__doc__, HERE), HERE, argv)
    df, meta = run(cfg)
    df.attrs["mle_1"] = meta["info"]["mle"][0]
    df.attrs["bias_method"] = f"DP-GIBO mu={min(cfg['mus']):g}"
    common.finish(args.out, cfg, df, summarize(df, cfg["n"]), meta, started, plot)


if __name__ == "__main__":
    main()

"""DP-GIBO tuning DP-HDB's l_1 radius and pre-selection gap h_sub on held-out simulated users
(the optimizer of Sopa et al. 2025 on the agent of Han et al. 2022), against non-private GIBO,
private random search and the agent's defaults. Also maps the loss surface on a grid, for the
tuned agent and for the certified epsilon = 1 agent.

    python -m experiments.dp_gibo.agent_tuning.run [--quick] [--out DIR] [--plot-only]

(from the repository root).

Writes landscape.csv, results.csv, summary.csv, figure.png and run_meta.json.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.bo import DPGIBO, HyperparameterSpace, PrivateRandomSearch
from dpbandits.harness import AgentTuningObjective, simulate
from experiments.dp_gibo import common

HERE = Path(__file__).resolve().parent


def make_space(cfg) -> HyperparameterSpace:
    s = cfg["space"]
    return HyperparameterSpace(s["names"], low=s["low"], high=s["high"], log=True)


def objective(cfg, space, seeds, epsilon) -> AgentTuningObjective:
    fixed = {**cfg["agent_params"], "epsilon": common.as_number(epsilon)}
    return AgentTuningObjective(cfg["agent"], cfg["env"], space, user_seeds=seeds,
                                horizon=cfg["horizon"], fixed_params=fixed,
                                agent_seed=cfg["seed"] % 2**31)


def user_seeds(cfg):
    """Validation and test users: disjoint seed ranges (distinct problems)."""
    base = 1_000_000
    val = list(range(base, base + cfg["n_val_users"]))
    test = list(range(2 * base, 2 * base + cfg["n_test_users"]))
    return val, test


def landscape(cfg, space, val):
    rows = []
    g = np.linspace(0.0, 1.0, cfg["grid_points"])
    pts = np.array([[a, b] for a in g for b in g])
    for eps in cfg["landscape_epsilons"]:
        vals = objective(cfg, space, val, eps).values(pts)
        for p, v in zip(pts, vals, strict=True):
            rows.append(dict(agent_epsilon=str(eps), u_radius=p[0], u_h_sub=p[1],
                             **space.to_params(p), val_loss=v))
        print(f"  landscape eps={eps}: min {vals.min():.4f} max {vals.max():.4f}", flush=True)
    return pd.DataFrame(rows)


def run_gibo(cfg, space, val_obj, test_obj, start):
    c = cfg["gibo"]
    rows, priv, diag = [], {}, {}
    for mu in (c["mu"], math.inf):
        private = math.isfinite(mu)
        alg = DPGIBO(mu=mu, n_iters=c["n_iters"],
                     clip_bound=c["clip_bound"] if private else math.inf,
                     **common.surrogate(c), noise_var=c["noise_var"],
                     batch_size=c["batch_size"], step_rule=c["step_rule"],
                     step_size=c["step_size"], theta0=start, bounds=space.bounds,
                     delta=c["delta"])
        t0 = time.time()
        res = alg.fit(val_obj, np.random.default_rng([cfg["seed"], 1, int(private)]),
                      n_reps=c["n_reps"])
        name = f"DP-GIBO mu={mu:g}" if private else "GIBO (non-private)"
        priv[name] = alg.privacy.to_dict()
        R, T1, d = res.history.shape
        val_curve = val_obj.values(res.history.reshape(R * T1, d)).reshape(R, T1)
        test_final = test_obj.values(res.theta)
        share = res.n_clipped / (c["n_iters"] * val_obj.n_individuals)
        diag[name] = {"noise_std": res.extra["noise_std"],
                      "clipped_share": float(share.mean())}
        for r in range(R):
            for t in range(T1):
                rows.append(dict(method=name, rep=r, t=t, n_evals=t * c["batch_size"],
                                 val_loss=val_curve[r, t],
                                 test_loss=test_final[r] if t == T1 - 1 else np.nan,
                                 u_radius=res.history[r, t, 0], u_h_sub=res.history[r, t, 1],
                                 **space.to_params(res.history[r, t])))
        print(f"  {name}: val {val_curve[:, -1].mean():.4f} test {test_final.mean():.4f} "
              f"clipped {share.mean():.0%} ({time.time() - t0:.0f} s)", flush=True)
    return rows, priv, diag


def run_random_search(cfg, space, val_obj, test_obj):
    c, g = cfg["random_search"], cfg["gibo"]
    rows, priv = [], {}
    for r in range(g["n_reps"]):
        cands = np.random.default_rng([cfg["seed"], 2, r]).random((c["budget"], space.dim))
        L = val_obj.losses(cands)
        for j, mu in enumerate((g["mu"], math.inf)):
            rs = PrivateRandomSearch(mu=mu, n_candidates=c["budget"], bounds=space.bounds,
                                     loss_bounds=c["loss_bounds"], delta=g["delta"])
            idx, n_clipped = rs.select(L, np.random.default_rng([cfg["seed"], 3, r, j]))
            name = (f"private random search mu={mu:g}" if math.isfinite(mu)
                    else "random search (non-private)")
            priv[name] = rs.privacy.to_dict()
            rows.append(dict(method=name, rep=r, t=-1, n_evals=c["budget"],
                             val_loss=L[idx].mean(), test_loss=test_obj.value(cands[idx]),
                             n_clipped=n_clipped, u_radius=cands[idx, 0],
                             u_h_sub=cands[idx, 1], **space.to_params(cands[idx])))
    print("  random search done", flush=True)
    return rows, priv


def references(cfg, val, test, val_obj, test_obj, start):
    """Per-round regret of the defaults and of uniform random play on both user sets."""
    rows = []
    for name, seeds, obj in (("val", val, val_obj), ("test", test, test_obj)):
        rand = simulate(cfg["env"], "random", horizon=cfg["horizon"], n_reps=len(seeds),
                        seed=0, env_seeds=seeds).regret.mean()
        rows.append(dict(users=name, defaults=obj.value(start), uniform_random_arm=rand))
    return pd.DataFrame(rows)


def main(argv=None):
    args, cfg, started = common.start(
        common.arguments(__doc__, HERE, "redraw figure.png from the CSVs in --out"), HERE, argv)
    space = make_space(cfg)
    start = space.from_params(dict(zip(space.names, cfg["space"]["start"], strict=True)))
    if args.plot_only:
        plot(pd.read_csv(args.out / "landscape.csv", dtype={"agent_epsilon": str}),
             pd.read_csv(args.out / "results.csv"), space, start, args.out / "figure.png")
        return
    val, test = user_seeds(cfg)
    eps = cfg["agent_params"]["epsilon"]
    val_obj, test_obj = objective(cfg, space, val, eps), objective(cfg, space, test, eps)
    args.out.mkdir(parents=True, exist_ok=True)

    print("landscape", flush=True)
    land = landscape(cfg, space, val)
    land.to_csv(args.out / "landscape.csv", index=False)
    refs = references(cfg, val, test, val_obj, test_obj, start)
    print(refs.to_string(index=False), flush=True)
    print("optimizers", flush=True)
    g_rows, priv, diag = run_gibo(cfg, space, val_obj, test_obj, start)
    rs_rows, rs_priv = run_random_search(cfg, space, val_obj, test_obj)
    priv.update(rs_priv)
    df = pd.DataFrame(g_rows + rs_rows)
    df.to_csv(args.out / "results.csv", index=False)

    final = df[(df.t == -1) | (df.t == df.t.max())]
    summ = final.groupby("method").agg(
        val_loss_mean=("val_loss", "mean"), val_loss_se=("val_loss", "sem"),
        test_loss_mean=("test_loss", "mean"), test_loss_se=("test_loss", "sem"),
        radius_median=("radius", "median"), h_sub_median=("h_sub", "median"),
        n_evals=("n_evals", "max")).reset_index()
    r = refs.set_index("users")
    for col in ("defaults", "uniform_random_arm"):
        summ[f"{col}_val"] = r.loc["val", col]
        summ[f"{col}_test"] = r.loc["test", col]
    summ.to_csv(args.out / "summary.csv", index=False)
    print(summ.to_string(index=False))
    plot(land, df, space, start, args.out / "figure.png")
    common.write_meta(args.out, cfg, priv, started, {"diagnostics": diag,
                                                      "references": refs.to_dict("records")})
    print(f"done in {time.time() - started:.0f} s")


def plot(land, df, space, start, path):
    common.plot_style()
    import matplotlib.pyplot as plt
    import seaborn as sns

    eps_values = list(dict.fromkeys(land.agent_epsilon))
    fig, axes = plt.subplots(1, len(eps_values) + 1, figsize=(5 * (len(eps_values) + 1), 4.3))
    for ax, eps in zip(axes, eps_values, strict=False):
        sub = land[land.agent_epsilon == eps]
        grid = sub.pivot(index="u_h_sub", columns="u_radius", values="val_loss")
        im = ax.pcolormesh(grid.columns, grid.index, grid.values, shading="nearest",
                           cmap="viridis")
        fig.colorbar(im, ax=ax, label="validation loss (mean per-round regret)")
        ax.set_title(f"DP-HDB epsilon = {eps}: loss surface")
        ax.set_xlabel("radius (log scale, 0.1 .. 10)")
        ax.set_ylabel("h_sub (log scale, 0.01 .. 2)")
        if eps == eps_values[0]:
            for name, color in (("DP-GIBO mu=1", "w"), ("GIBO (non-private)", "tab:red")):
                for _, path_r in df[df.method == name].groupby("rep"):
                    ax.plot(path_r.u_radius, path_r.u_h_sub, color=color, lw=0.8, alpha=0.8)
            rs = df[df.method == "private random search mu=1"]
            ax.scatter(rs.u_radius, rs.u_h_sub, color="tab:orange", marker="x", s=30,
                       label="private random search picks")
            ax.scatter([start[0]], [start[1]], color="k", marker="*", s=80,
                       label="start (defaults)")
            ax.legend(fontsize=7, loc="lower right")
    ax = axes[-1]
    g = df[df.t >= 0]
    sns.lineplot(g, x="n_evals", y="val_loss", hue="method", ax=ax, errorbar="se")
    rs = df[df.t < 0]
    for (name, sub), color in zip(rs.groupby("method"), ("tab:orange", "tab:gray"),
                                  strict=False):
        ax.errorbar(sub.n_evals.iloc[0], sub.val_loss.mean(), yerr=sub.val_loss.sem(),
                    fmt="o", color=color, label=name)
    ax.set_xlabel("function evaluations (each = one batched simulation of all users)")
    ax.set_ylabel("validation loss")
    ax.legend(fontsize=7)
    common.save_figure(fig, path)


if __name__ == "__main__":
    main()

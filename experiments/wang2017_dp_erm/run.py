#!/usr/bin/env python
"""Wang, Ye & Xu 2017, Appendix A, Figures 1 and 2: DP-SVRG vs DP-GD (l2-regularized logistic
regression, lambda = 1e-2) and DP-SVRG++ vs DP-GD (unregularized), epsilon in {0.2, 0.5, 1},
delta = 1e-3; optimality gap against gradient evaluations and wall time.

    .venv/bin/python -m experiments.wang2017_dp_erm.run            # default (~10 min)
    .venv/bin/python -m experiments.wang2017_dp_erm.run --quick    # smoke run (~1 min)
    .venv/bin/python -m experiments.wang2017_dp_erm.run --full     # paper sizes (n = 2e5, T = 15)

Data sets (no internet here, Covertype cannot be downloaded):
* ``iris`` — a real data set shipped with SciPy (``scipy/io/arff/tests/data/iris.arff``):
  versicolor (0) vs virginica (1), n = 100, the 4 measurements plus a constant, each row
  scaled to unit l_2 norm (a per-record map, so it costs no privacy);
* ``synthetic-covertype`` — synthetic data of Covertype's shape (10 correlated continuous
  features, a one-hot of 4 "wilderness areas" and one of 40 "soil types", d = 54), labels
  from a logistic model, rows scaled to unit norm.

Every private run is calibrated by an accountant to the target (epsilon, delta)
("certified"); with ``paper_noise`` the same algorithms also run at the paper's printed noise
with c = 1 ("paper-c1"), whose accountant-certified epsilon is reported in privacy.csv.
Writes results/{results.csv, privacy.csv, fig1_<data>.png, fig2_<data>.png, run.json}.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import tomllib
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy
import seaborn as sns
from scipy import optimize
from scipy.io import arff

from dpbandits.losses import LogisticLoss
from dpbandits.optim import DPGD, DPSVRG, DPSVRGPlusPlus
from dpbandits.optim.batch.data import prepare_data
from dpbandits.optim.batch.oracle import GradientOracle, Regularizer, objective

HERE = Path(__file__).resolve().parent
LOSS = LogisticLoss()


# ------------------------------------------------------------------------------ data
def load_iris() -> tuple[np.ndarray, np.ndarray]:
    path = Path(scipy.io.__file__).parent / "arff" / "tests" / "data" / "iris.arff"
    data, _ = arff.loadarff(path)
    feats = np.array([[row[i] for i in range(4)] for row in data], dtype=float)
    label = np.array([row[4].decode() for row in data])
    keep = label != "Iris-setosa"
    X = np.hstack([feats[keep], np.ones((keep.sum(), 1))])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (label[keep] == "Iris-virginica").astype(float)
    return X, y


def synthetic_covertype(n: int, d: int, rng: np.random.Generator):
    n_cont, n_wild = 10, 4
    n_soil = d - n_cont - n_wild
    A = rng.standard_normal((n_cont, n_cont)) / math.sqrt(n_cont)
    cont = rng.standard_normal((n, n_cont)) @ A
    wild = np.eye(n_wild)[rng.choice(n_wild, size=n, p=[0.45, 0.05, 0.44, 0.06])]
    soil_p = rng.dirichlet(np.full(n_soil, 0.5))
    soil = np.eye(n_soil)[rng.choice(n_soil, size=n, p=soil_p)]
    X = np.hstack([cont, wild, soil])
    w = np.concatenate([rng.standard_normal(n_cont), rng.standard_normal(n_wild),
                        rng.standard_normal(n_soil)]) * 1.5
    logits = X @ w - np.mean(X @ w)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logits))).astype(float)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, y


def reference_optimum(X, y, reg: Regularizer) -> float:
    """Non-private F* by BFGS on the exact (unclipped: ||x|| = 1 so nothing is clipped)
    objective, gradient tolerance 1e-10."""
    data = prepare_data(X, y, 1)
    oracle = GradientOracle(LOSS, data, 1e12)

    def f(t):
        return float(objective(LOSS, t[None], X, y, reg)[0])

    def g(t):
        return oracle.mean(t[None])[0][0] + reg.gradient(t[None])[0]

    res = optimize.minimize(f, np.zeros(X.shape[1]), jac=g, method="BFGS",
                            options={"gtol": 1e-10, "maxiter": 20_000})
    return float(res.fun)


# ------------------------------------------------------------------------------ runs
def paper_sigma(kind: str, n: int, eps: float, delta: float, G: float, T: int, m: int) -> float:
    """The paper's printed noise with c = 1: eq. (3) DP-SVRG, eq. (6) DP-SVRG++, eq. (11)."""
    if kind == "svrg":
        return math.sqrt(G**2 * T * m * math.log(1 / delta) / (n**2 * eps**2))
    if kind == "svrgpp":
        return math.sqrt(G**2 * 2**T * m * math.log(2 / delta) / (n**2 * eps**2))
    return math.sqrt(G**2 * T * math.log(1 / delta) / (n**2 * eps**2))


def record(rows, res, *, dataset, figure, algorithm, calibration, eps, X, y, reg, fstar):
    vals = objective(LOSS, res.history, X, y, reg)  # (R, K)
    evals = np.asarray(res.extra["grad_evals"])
    walls = np.asarray(res.extra["wall_time"])
    for r in range(vals.shape[0]):
        for j in range(vals.shape[1]):
            rows.append({"dataset": dataset, "figure": figure, "algorithm": algorithm,
                         "calibration": calibration, "epsilon": eps, "rep": r,
                         "step": int(res.history_steps[j]), "grad_evals": int(evals[j]),
                         "wall_time": float(walls[j]), "gap": float(vals[r, j] - fstar)})


def run_figure(figure: int, dataset: str, X, y, conf, args, rows, privacy_rows):
    pr, rc = conf["privacy"], conf["run"]
    delta, G = pr["delta"], pr["clip_norm"]
    n = X.shape[0]
    R = rc["replications"]
    if figure == 1:
        fc = conf["figure1"]
        lam = fc["reg_strength"]
        reg = Regularizer("l2", lam)
        T_s, m_s = fc["svrg_epochs"], fc["svrg_inner"]
        T_gd = fc["gd_iters"]
        if args.quick:
            T_s, m_s, T_gd = 5, 1000, 200

        def make_vr(eps, sigma=None):
            return DPSVRG(eps, delta, n_epochs=T_s, inner_steps=m_s, reg="l2",
                          reg_strength=lam, clip_norm=G, noise_std=sigma)

        def make_gd(eps, sigma=None):
            return DPGD(eps, delta, n_iters=T_gd, reg="l2", reg_strength=lam, clip_norm=G,
                        noise_std=sigma, record_every=max(1, T_gd // 100))

        vr_name, vr_kind, vr_args = "DP-SVRG", "svrg", (T_s, m_s)
    else:
        fc = conf["figure2"]
        reg = Regularizer(None, 0.0)
        T_s, m_s, eta = fc["svrgpp_epochs"], fc["svrgpp_inner"], fc["svrgpp_step"]
        T_gd, eta_gd = fc["gd_iters"], fc["gd_step"]
        if args.full:
            T_s = 15
        if args.quick:
            T_s, T_gd = 8, 200

        def make_vr(eps, sigma=None):
            return DPSVRGPlusPlus(eps, delta, n_epochs=T_s, inner_steps=m_s, step_size=eta,
                                  clip_norm=G, noise_std=sigma)

        def make_gd(eps, sigma=None):
            return DPGD(eps, delta, n_iters=T_gd, step_size=eta_gd, clip_norm=G,
                        noise_std=sigma, record_every=max(1, T_gd // 100))

        vr_name, vr_kind, vr_args = "DP-SVRG++", "svrgpp", (T_s, m_s)

    fstar = reference_optimum(X, y, reg)
    seed = rc["seed"] + 1000 * figure + (0 if dataset == "iris" else 500)
    plan = [(vr_name, vr_kind, make_vr, vr_args), ("DP-GD", "gd", make_gd, (T_gd, 1))]
    for name, kind, make, (T, m) in plan:
        # non-private reference curve
        res = make(math.inf).fit(LOSS, X, y, np.random.default_rng(seed), n_reps=1)
        record(rows, res, dataset=dataset, figure=figure, algorithm=name,
               calibration="non-private", eps=math.inf, X=X, y=y, reg=reg, fstar=fstar)
        for i, eps in enumerate(pr["epsilons"]):
            variants = [("certified", None)]
            if rc["paper_noise"]:
                variants.append(("paper-c1", paper_sigma(kind, n, eps, delta, G, T, m)))
            for cal, sigma in variants:
                opt = make(eps, sigma)
                t0 = time.perf_counter()
                res = opt.fit(LOSS, X, y, np.random.default_rng(seed + 10 * i + len(cal)),
                              n_reps=R)
                secs = time.perf_counter() - t0
                record(rows, res, dataset=dataset, figure=figure, algorithm=name,
                       calibration=cal, eps=eps, X=X, y=y, reg=reg, fstar=fstar)
                final = objective(LOSS, res.theta, X, y, reg) - fstar
                pg = res.privacy
                privacy_rows.append({
                    "dataset": dataset, "figure": figure, "algorithm": name,
                    "calibration": cal, "target_epsilon": eps, "delta": delta, "n": n,
                    "noise_std": res.extra["noise_std"], "certified_epsilon": pg.epsilon,
                    "final_gap_mean": float(final.mean()), "final_gap_sd": float(final.std()),
                    "grad_evals": res.n_gradient_evals, "seconds": secs, "basis": pg.basis})
                print(f"  fig{figure} {dataset:>19} {name:>9} eps={eps:<4} {cal:>9}: "
                      f"sigma={res.extra['noise_std']:.3g} certified eps={pg.epsilon:.3g} "
                      f"gap={final.mean():.3g} ({secs:.1f}s)", flush=True)
    return fstar


# ------------------------------------------------------------------------------ plots
def plot(df: pd.DataFrame, figure: int, dataset: str, out: Path):
    sub = df[(df.figure == figure) & (df.dataset == dataset)].copy()
    sub["series"] = sub.algorithm + " " + sub.calibration
    sub["gap"] = sub["gap"].clip(lower=1e-12)
    eps_vals = sorted(e for e in sub.epsilon.unique() if math.isfinite(e))
    fig, axes = plt.subplots(2, len(eps_vals), figsize=(5 * len(eps_vals), 8), squeeze=False)
    for j, eps in enumerate(eps_vals):
        part = pd.concat([sub[sub.epsilon == eps], sub[~np.isfinite(sub.epsilon)]])
        for i, xcol in enumerate(["grad_evals", "wall_time"]):
            ax = axes[i, j]
            sns.lineplot(data=part, x=xcol, y="gap", hue="series", style="calibration",
                         errorbar=("pi", 100), ax=ax, legend=(i == 0 and j == 0))
            if i == 0 and j == 0:
                handles, labels = ax.get_legend_handles_labels()
                ax.get_legend().remove()
            ax.set_yscale("log")
            if xcol == "grad_evals":
                ax.set_xscale("log")
            ax.set_title(f"{dataset}, epsilon = {eps}")
            ax.set_xlabel("gradient evaluations" if xcol == "grad_evals" else "wall time (s)")
            ax.set_ylabel("optimality gap F(w) - F*")
    fig.legend(handles, labels, loc="center right", frameon=False)
    fig.suptitle(f"Wang, Ye & Xu 2017, Figure {figure} "
                 f"({'DP-SVRG' if figure == 1 else 'DP-SVRG++'} vs DP-GD), delta = 1e-3; "
                 "bands: min-max over replications")
    fig.tight_layout(rect=(0, 0, 0.85, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny smoke run")
    ap.add_argument("--full", action="store_true", help="paper sizes: n = 200000, T = 15")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()
    matplotlib.use("Agg")
    conf = tomllib.loads((HERE / "config.toml").read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(conf["run"]["seed"])
    n_syn = 200_000 if args.full else (5000 if args.quick else conf["data"]["synthetic_n"])
    datasets = {"iris": load_iris(),
                "synthetic-covertype": synthetic_covertype(n_syn, conf["data"]["synthetic_d"],
                                                           rng)}
    rows, privacy_rows, fstars = [], [], {}
    t0 = time.perf_counter()
    for figure in (1, 2):
        for name, (X, y) in datasets.items():
            print(f"figure {figure}, {name}: n = {X.shape[0]}, d = {X.shape[1]}", flush=True)
            fstars[f"fig{figure}-{name}"] = run_figure(figure, name, X, y, conf, args, rows,
                                                       privacy_rows)
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "results.csv", index=False)
    pd.DataFrame(privacy_rows).to_csv(args.out / "privacy.csv", index=False)
    for figure in (1, 2):
        for name in datasets:
            plot(df, figure, name, args.out / f"fig{figure}_{name}.png")
    meta = {"config": conf, "quick": args.quick, "full": args.full, "fstar": fstars,
            "synthetic_n": n_syn, "seconds": time.perf_counter() - t0,
            "numpy": np.__version__, "scipy": scipy.__version__}
    (args.out / "run.json").write_text(json.dumps(meta, indent=2, default=str))
    print(f"done in {meta['seconds']:.0f}s -> {args.out}")


if __name__ == "__main__":
    main()

"""Which certified agent learns where? FLIPHAT, DP-HDB variants, DP-UCB on Figure 5.1.

Parts (each a grid of :func:`dpbandits.harness.grid.run_grid`, resumable: one Parquet file
per finished cell under ``runs/<part>/``):

* ``target``  — the benchmark of issue 10: every agent at (epsilon = 1, delta = 1/T) on the
  common Figure 5.1 instance (d = 50, K = 2, l_inf contexts), T = 1e5;
* ``grid``    — panel C extended: final regret relative to uniform-random over
  epsilon x T (``--horizon``), for the agents chosen with ``--agents``;
* ``setting1``— the authors' Setting 1 (d = 400, s* = 5, K = 3, T = 2e4, per-arm features),
  FLIPHAT with the authors' calibration (uncertified) and certified, next to uniform-random
  and a non-private Lasso bandit;
* ``report``  — tables (CSV), figures (PNG) and ``results.md`` from whatever has finished.

Usage (from the repository root)::

    python -m experiments.certified_learning.study target --reps 4
    python -m experiments.certified_learning.study grid --horizon 10000 --reps 4
    python -m experiments.certified_learning.study grid --horizon 100000 --reps 4 \
        --agents random linucb fliphat-acc fliphat-tight
    python -m experiments.certified_learning.study setting1 --reps 6
    python -m experiments.certified_learning.study report

All agents of a part share the environment seed (common random numbers): replication r faces
the same theta*, contexts and reward noise for every agent.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

import dpbandits
from dpbandits.agents import make_agent
from dpbandits.harness.grid import CellFiles, GridCell, run_grid
from dpbandits.harness.results import atomic_write_bytes
from dpbandits.harness.simulate import agent_rng, simulate

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
ENV = "dpbandits/Figure5.1-v0"
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)

# label -> (registry name, fixed params, one-line description of the guarantee's basis)
AGENTS = {
    "random": ("random", {}, "no data used (0-DP)"),
    "linucb": ("linucb", {}, "not private"),
    "fliphat-thm": ("fliphat", {"calibration": "theorem"},
                    "FLIPHAT, peeling lemma per call, basic composition over M, parallel "
                    "over episodes; default R = x_max C + 0.05 sqrt(2 ln(1+n))"),
    "fliphat-acc": ("fliphat", {"calibration": "accountant"},
                    "FLIPHAT, PLD accountant over the M iterations; default R"),
    "fliphat-tight": ("fliphat", {"calibration": "accountant", "n_iter": 1,
                                  "reward_bound": 0.5},
                      "FLIPHAT, PLD accountant, one IHT step, rewards truncated to |r| <= 0.5"),
    "dp-ucb-acc": ("dp-ucb", {"calibration": "accountant"},
                   "DP-UCB Gaussian tree, PLD accountant"),
    "dp-hdb-thm": ("dp-hdb", {}, "DP-HDB, Theorem 3.4 per arm, two arms per user"),
    "dp-hdb-acc": ("dp-hdb", {"calibration": "accountant"},
                   "DP-HDB, accountant-calibrated DP-POFW"),
    "dp-hdb-gumbel": ("dp-hdb", {"calibration": "accountant",
                                 "optimizer_params": {"selection": "gumbel"}},
                      "DP-HDB, exponential-mechanism (Gumbel) LMO, bounded-range "
                      "composition (zCDP)"),
    "dp-hdb-tofw": ("dp-hdb", {"calibration": "accountant", "optimizer": "dp-tofw"},
                    "DP-HDB with DP-TOFW (p = 1.5) per arm, accountant"),
    "dp-hdb-gumbel-r05": ("dp-hdb", {"calibration": "accountant", "reward_bound": 0.5,
                                     "optimizer_params": {"selection": "gumbel"}},
                          "DP-HDB Gumbel LMO with |r| <= 0.5 (clipped)"),
}
TARGET_AGENTS = ("random", "linucb", "fliphat-thm", "fliphat-acc", "fliphat-tight",
                 "dp-ucb-acc", "dp-hdb-thm", "dp-hdb-gumbel")
NON_PRIVATE = ("random", "linucb")


class _NoLedger:
    """Delegating wrapper hiding an agent's ledger from the harness (its accountant query is
    done here, with an RDP fallback for events the PLD method does not support)."""

    def __init__(self, agent):
        self._agent = agent
        self.name = agent.name

    def reset(self, n_reps, rng):
        return self._agent.reset(n_reps, rng)

    def act(self, contexts):
        return self._agent.act(contexts)

    def update(self, contexts, arms, rewards):
        return self._agent.update(contexts, arms, rewards)

    @property
    def privacy(self):
        return self._agent.privacy


def certified_epsilon(agent) -> tuple[float | None, str]:
    """epsilon recomputed from the agent's ledger at its delta (PLD, else RDP)."""
    from dpbandits.privacy.accounting import epsilon_of

    ledger, g = getattr(agent, "ledger", None), agent.privacy
    if ledger is None or g is None or not math.isfinite(g.epsilon):
        return None, ""
    for method in ("pld", "rdp"):
        try:
            return float(epsilon_of(ledger, g.delta, method)), method
        except ValueError:
            continue
    return None, "unsupported"


def cell(label: str, epsilon: float, horizon: int, reps: int, seed: int = 0,
         non_private=NON_PRIVATE) -> GridCell:
    """One agent at one (epsilon, T), stored as ``<label>__eps<epsilon>__T<T>__R<reps>__s<seed>``
    (``epsna`` for the agents in ``non_private``, which get ``epsilon = nan``)."""
    if label in non_private:
        epsilon = math.nan
    eps_txt = "na" if label in non_private else f"{epsilon:g}"
    return GridCell({"label": label, "epsilon": epsilon, "horizon": horizon, "reps": reps},
                    seed, f"{label}__eps{eps_txt}__T{horizon}__R{reps}__s{seed}")


def _privacy_columns(frame: pd.DataFrame, g, certified: bool, cert, method: str) -> None:
    """The claimed guarantee ``g``, whether it is certified, and the ledger's epsilon."""
    frame["claimed"] = "not private" if g is None else str(g)
    frame["certified"] = certified
    frame["certified_epsilon"] = np.nan if cert is None else cert
    frame["accountant"] = method


def _print_final(what: str, frame: pd.DataFrame, horizon: int, seconds: float, cert) -> None:
    last = frame[frame.t == horizon].cum_regret
    print(f"  {what}: R(T) = {last.mean():9.1f} +- {last.std(ddof=1) / math.sqrt(len(last)):7.1f}"
          f"  ({seconds:6.0f} s, certified eps {cert})", flush=True)


def run_cell(part: str, cell: GridCell, record_points: int = 50) -> pd.DataFrame | None:
    """One agent of ``AGENTS`` at one (epsilon, T) on the Figure 5.1 instance; ``None`` if
    the agent cannot be calibrated there. A grid cell already run as a target cell (epsilon
    = 1) is copied from ``runs/target/``."""
    target = CellFiles(RUNS / "target")
    if part == "grid" and target.done(cell.key):
        return target.load(cell.key)
    label, epsilon, horizon = cell["label"], cell["epsilon"], cell["horizon"]
    name, fixed, basis = AGENTS[label]
    params = dict(fixed)
    if label not in NON_PRIVATE:
        params["epsilon"] = epsilon
    try:
        agent = make_agent(name, n_arms=2, dim=50, horizon=horizon, **params)
    except ValueError as exc:  # e.g. the theorem's closed form does not certify
        print(f"  skip {label} eps={epsilon:g} T={horizon}: {exc}", flush=True)
        return None
    res = simulate(ENV, _NoLedger(agent), n_reps=cell["reps"], seed=cell.seed,
                   env_params={"horizon": horizon}, label=label)
    cert, method = certified_epsilon(agent)
    frame = res.to_frame(max(1, horizon // record_points))
    g = agent.privacy
    frame["epsilon"] = epsilon
    frame["horizon"] = horizon
    frame["seconds"] = res.seconds
    _privacy_columns(frame, g, bool(g is not None and g.certified and math.isfinite(g.epsilon)),
                     cert, method)
    frame["basis"] = basis
    frame["version"] = dpbandits.__version__  # the random streams are per package version
    _print_final(cell.key, frame, horizon, res.seconds, cert)
    return frame


# ----------------------------------------------------------------------------- setting 1
#: the authors' Setting 1 beta* (FLIPHAT note, section 2.5): nonzeros, all positive
SETTING1_BETA = (0.748, 0.637, 0.634, 0.696, 0.720)


class Setting1:
    """Per-arm feature bandit of the authors' Setting 1, vectorized over R replications.

    K = 3 arms, d = 400, x_{k,t} ~ N(0, Sigma) i.i.d. with Sigma_ij = 0.1^|i-j| (AR(0.1)),
    one shared beta* (s* = 5, the authors' values), reward x_{a,t}' beta* + N(0, 0.1^2).
    """

    def __init__(self, n_reps, seed, n_arms=3, dim=400, noise_std=0.1, rho=0.1):
        self.R, self.K, self.d, self.sigma = n_reps, n_arms, dim, noise_std
        idx = np.arange(dim)
        self.chol = np.linalg.cholesky(rho ** np.abs(idx[:, None] - idx[None]))
        self.beta = np.zeros(dim)
        self.beta[:len(SETTING1_BETA)] = SETTING1_BETA
        self.rng = np.random.default_rng(np.random.SeedSequence([0x5E771, seed]))

    def contexts(self):
        z = self.rng.standard_normal((self.R, self.K, self.d))
        return z @ self.chol.T  # (R, K, d)

    def step(self, feats, arms):
        mu = feats @ self.beta  # (R, K)
        rows = np.arange(self.R)
        reward = mu[rows, arms] + self.sigma * self.rng.standard_normal(self.R)
        return reward, mu.max(axis=1) - mu[rows, arms]


class LassoBandit:
    """Greedy sparsity-agnostic Lasso bandit (Oh, Iyengar & Zeevi 2021), non-private baseline
    of the authors: refit every ``refit`` rounds with
    ``lambda_t = 2 lambda_0 sqrt((4 ln t + 2 ln d) / t)`` on all data so far; the Lasso
    ``(1/2t)||y - X b||^2 + lambda_t ||b||_1`` is solved by FISTA on the sufficient
    statistics, vectorized over replications (warm start)."""

    def __init__(self, n_reps, dim, lam0=1.0, refit=200, iters=150):
        self.A = np.zeros((n_reps, dim, dim))
        self.b = np.zeros((n_reps, dim))
        self.theta = np.zeros((n_reps, dim))
        self.lam0, self.refit, self.iters, self.t = lam0, refit, iters, 0
        self.rng = np.random.default_rng(0)

    def act(self, feats):
        s = feats @ self.theta[:, :, None]
        s = s[..., 0] + 1e-12 * self.rng.random(s.shape[:2])  # random tie-break
        return np.argmax(s, axis=1)

    def update(self, chosen, reward):
        self.A += chosen[:, :, None] * chosen[:, None, :]
        self.b += chosen * reward[:, None]
        self.t += 1
        if self.t % self.refit == 0:
            self._fit()

    def _fit(self):
        t, d = self.t, self.A.shape[1]
        lam = 2 * self.lam0 * math.sqrt((4 * math.log(t) + 2 * math.log(d)) / t)
        A, b = self.A / t, self.b / t
        L = np.linalg.eigvalsh(A)[:, -1][:, None]  # per-replication step 1/L
        x = y = self.theta.copy()
        tk = 1.0
        for _ in range(self.iters):
            g = np.einsum("rij,rj->ri", A, y) - b
            z = y - g / L
            x_new = np.sign(z) * np.maximum(np.abs(z) - lam / L, 0.0)
            tk_new = (1 + math.sqrt(1 + 4 * tk * tk)) / 2
            y = x_new + ((tk - 1) / tk_new) * (x_new - x)
            x, tk = x_new, tk_new
        self.theta = x


SETTING1_NON_PRIVATE = ("random", "lasso")


def run_setting1(cell: GridCell) -> pd.DataFrame | None:
    """One agent of Setting 1 at one epsilon; ``None`` if it cannot be calibrated there."""
    label, epsilon, horizon, reps, seed = (cell["label"], cell["epsilon"], cell["horizon"],
                                           cell["reps"], cell.seed)
    K, d = 3, 400
    env = Setting1(reps, seed)
    x_max = math.sqrt(2 * math.log(d))
    b_max = float(np.abs(env.beta).sum())  # the authors' oracle b_max = ||beta*||_1
    common = {"n_arms": K, "dim": K * d, "horizon": horizon, "epsilon": epsilon,
              "delta": 0.01, "feature_model": "per-arm", "sparsity": 10,
              "context_bound": x_max, "theta_bound": b_max}
    # eta_0 = 1e-4 (step = 2 eta_0), sigma-free truncation sqrt(2 ln(1+n)); the authors'
    # floor(0.16 ln(1 + n b_max^2)) is 1 for every episode of 64..16384 rounds and 0 below
    # (FLIPHAT note 2.5), i.e. one IHT step: n_iter = 1 reproduces what their figures ran
    authors = {"step": 2e-4, "n_iter": 1, "noise_std": 1.0}
    specs = {
        "fliphat-authors": {**common, **authors, "calibration": "authors"},
        "fliphat-thm": {**common, **authors, "calibration": "theorem"},
        "fliphat-acc": {**common, **authors, "calibration": "accountant"},
        "fliphat-tight": {**common, "calibration": "accountant", "n_iter": 1,
                          "reward_bound": 5.0},
    }
    agent, g, cert, method = None, None, None, ""
    if label in specs:
        try:
            agent = make_agent("fliphat", **specs[label])
        except ValueError as exc:
            print(f"  skip setting1 {label} eps={epsilon:g}: {exc}", flush=True)
            return None
        agent.reset(reps, agent_rng(seed))
        g = agent.privacy
        cert, method = certified_epsilon(agent)
    elif label == "lasso":
        agent = LassoBandit(reps, d)
    rng = agent_rng(seed)
    regret = np.empty((reps, horizon))
    start = time.perf_counter()
    for t in range(horizon):
        feats = env.contexts()
        if label == "random":
            arms = rng.integers(0, K, reps)
        elif label == "lasso":
            arms = agent.act(feats)
        else:
            arms = agent.act(feats.reshape(reps, -1))
        reward, inst = env.step(feats, arms)
        regret[:, t] = inst
        if label == "lasso":
            agent.update(feats[np.arange(reps), arms], reward)
        elif label != "random":
            agent.update(feats.reshape(reps, -1), arms, reward)
    seconds = time.perf_counter() - start
    steps = np.unique(np.append(np.arange(horizon // 50, horizon + 1, horizon // 50),
                                horizon))
    cum = np.cumsum(regret, axis=1)[:, steps - 1]
    frame = pd.DataFrame({"agent": label, "rep": np.repeat(np.arange(reps), len(steps)),
                          "t": np.tile(steps, reps), "cum_regret": cum.ravel()})
    frame["epsilon"] = epsilon
    frame["seconds"] = seconds
    _privacy_columns(frame, g, bool(g is not None and g.certified), cert, method)
    _print_final(f"setting1 {cell.key}", frame, horizon, seconds, cert)
    return frame


# ----------------------------------------------------------------------------- report
def _load(part: str) -> pd.DataFrame:
    files = sorted((RUNS / part).glob("*.parquet"))
    if not files:
        return pd.DataFrame()
    frames = []
    for f in files:
        frame = pd.read_parquet(f)
        frame["reps"] = int(f.stem.split("__R")[1].split("__")[0])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _final(frame: pd.DataFrame) -> pd.DataFrame:
    last = frame[frame.t == frame.horizon] if "horizon" in frame else frame[
        frame.t == frame.t.max()]
    keys = ["agent", "epsilon", "reps"] + (["horizon"] if "horizon" in frame else [])
    out = last.groupby(keys, dropna=False).agg(
        mean=("cum_regret", "mean"), sd=("cum_regret", "std"), n=("cum_regret", "size"),
        seconds=("seconds", "first"), certified=("certified", "first"),
        certified_epsilon=("certified_epsilon", "first"), claimed=("claimed", "first"))
    out["se"] = out["sd"] / np.sqrt(out["n"])
    return out.reset_index()


def _relative(final: pd.DataFrame, by=("horizon",)) -> pd.DataFrame:
    rnd = final[final.agent == "random"].set_index(list(by))["mean"]
    out = final.copy()
    key = out[list(by)].apply(tuple, axis=1) if len(by) > 1 else out[by[0]]
    out["random_mean"] = key.map(rnd)
    out["ratio_to_random"] = out["mean"] / out["random_mean"]
    return out


def report() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    lines = ["# Results (generated by `study.py report`)", ""]
    target = _load("target")
    if not target.empty:
        fin = _relative(_final(target), by=("horizon", "reps"))
        fin = fin.sort_values("ratio_to_random")
        fin.to_csv(HERE / "target_summary.csv", index=False)
        lines += ["## Target: epsilon = 1, delta = 1/T, Figure 5.1 instance, T = 1e5", "",
                  "| agent | R(T) mean +- se | / random | reps | certified | eps (ledger) "
                  "| seconds |", "|---|---|---|---|---|---|---|"]
        for r in fin.itertuples():
            lines.append(f"| {r.agent} | {r.mean:.0f} +- {r.se:.0f} | "
                         f"{r.ratio_to_random:.3f} | {r.n} | {r.certified} | "
                         f"{r.certified_epsilon:.3g} | {r.seconds:.0f} |")
        lines.append("")
        fig, ax = plt.subplots(figsize=(7.5, 4.6))
        sns.lineplot(data=target, x="t", y="cum_regret", hue="agent", errorbar=("se", 1.96),
                     ax=ax)
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative pseudo-regret")
        ax.set_title("Figure 5.1 instance, epsilon = 1, delta = 1/T (95% CI)")
        fig.tight_layout()
        fig.savefig(HERE / "target_regret.png", dpi=120)
        plt.close(fig)
    grid = _load("grid")
    if not grid.empty:
        fin = _final(grid)
        rnd = fin[fin.agent == "random"][["horizon", "reps", "mean"]].rename(
            columns={"mean": "rnd"})
        lin = fin[fin.agent == "linucb"]
        priv = fin[~fin.agent.isin(NON_PRIVATE)].merge(rnd, on=["horizon", "reps"])
        rnd = rnd[rnd.reps == rnd.reps.max()]
        priv["ratio_to_random"] = priv["mean"] / priv["rnd"]
        # one cell per (agent, epsilon, T): the one with the most replications
        priv = priv.sort_values("reps").drop_duplicates(["agent", "epsilon", "horizon"],
                                                        keep="last")
        priv.to_csv(HERE / "grid_relative.csv", index=False)
        lines += ["## Panel C extended: final regret / random over epsilon x T", ""]
        for T, sub in priv.groupby("horizon"):
            piv = sub.pivot_table(index="agent", columns="epsilon", values="ratio_to_random")
            lines.append(f"T = {T:g} (random R(T) = {rnd.set_index('horizon').loc[T, 'rnd']:.0f}"
                         + (f", LinUCB ratio {float(lin[lin.horizon == T]['mean'].iloc[0]) / rnd.set_index('horizon').loc[T, 'rnd']:.3f}"  # noqa: E501
                            if (lin.horizon == T).any() else "") + ")")
            lines.append("")
            lines.append("| agent | " + " | ".join(f"{e:g}" for e in piv.columns) + " |")
            lines.append("|---|" + "---|" * len(piv.columns))
            for agent, row in piv.iterrows():
                lines.append(f"| {agent} | " + " | ".join(
                    "-" if np.isnan(v) else f"{v:.2f}" for v in row.values) + " |")
            lines.append("")
            beats = sub[sub.ratio_to_random <= 0.5].groupby("agent")["epsilon"].min()
            lines.append("Smallest epsilon with regret <= 0.5 x random: " + (", ".join(
                f"{a} {e:g}" for a, e in beats.items()) or "none") + "")
            lines.append("")
        g = sns.relplot(data=priv, x="epsilon", y="ratio_to_random", hue="agent",
                        col="horizon", kind="line", marker="o", height=3.6, aspect=1.2)
        for ax in g.axes.flat:
            ax.set_xscale("log")
            ax.axhline(1.0, color="grey", lw=0.8)
            ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        g.set_axis_labels("epsilon (delta = 1/T)", "final regret / uniform random")
        g.savefig(HERE / "grid_relative.png", dpi=120)
        plt.close(g.figure)
    s1 = _load("setting1")
    if not s1.empty:
        fin = _final(s1)
        rnd = float(fin[fin.agent == "random"]["mean"].iloc[0]) if (
            fin.agent == "random").any() else np.nan
        fin["ratio_to_random"] = fin["mean"] / rnd
        fin.to_csv(HERE / "setting1_summary.csv", index=False)
        lines += ["## Setting 1 of the authors (d = 400, s* = 5, K = 3, T = 2e4, delta = 0.01)",
                  "", "| agent | epsilon | R(T) mean +- se | / random | certified | "
                  "eps (ledger) |", "|---|---|---|---|---|---|"]
        for r in fin.sort_values(["agent", "epsilon"]).itertuples():
            lines.append(f"| {r.agent} | {r.epsilon:g} | {r.mean:.0f} +- {r.se:.0f} | "
                         f"{r.ratio_to_random:.3f} | {r.certified} | "
                         f"{r.certified_epsilon:.3g} |")
        lines.append("")
        data = fin[~fin.agent.isin(["random", "lasso"])]
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        sns.lineplot(data=data, x="epsilon", y="mean", hue="agent", marker="o", ax=ax)
        for name, ls in (("random", "--"), ("lasso", ":")):
            if (fin.agent == name).any():
                ax.axhline(float(fin[fin.agent == name]["mean"].iloc[0]), color="k", ls=ls,
                           lw=1, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 0.01)")
        ax.set_ylabel("R(20,000)")
        ax.legend(fontsize=8)
        ax.set_title("Authors' Setting 1: authors' vs certified calibration")
        fig.tight_layout()
        fig.savefig(HERE / "setting1_regret.png", dpi=120)
        plt.close(fig)
    atomic_write_bytes(HERE / "results.md", ("\n".join(lines) + "\n").encode())
    print("\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    t = sub.add_parser("target")
    t.add_argument("--reps", type=int, default=4)
    t.add_argument("--horizon", type=int, default=100_000)
    t.add_argument("--agents", nargs="+", default=list(TARGET_AGENTS))
    g = sub.add_parser("grid")
    g.add_argument("--reps", type=int, default=4)
    g.add_argument("--horizon", type=int, default=10_000)
    g.add_argument("--eps", type=float, nargs="+", default=list(EPSILONS))
    g.add_argument("--agents", nargs="+", default=list(AGENTS))
    s = sub.add_parser("setting1")
    s.add_argument("--reps", type=int, default=6)
    s.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 2.0, 5.0, 10.0])
    s.add_argument("--agents", nargs="+", default=["random", "lasso", "fliphat-authors",
                                                    "fliphat-thm", "fliphat-acc",
                                                    "fliphat-tight"])
    sub.add_parser("report")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.part == "target":
        cells = [cell(label, 1.0, args.horizon, args.reps) for label in args.agents]
        run_grid(cells, partial(run_cell, "target"), CellFiles(RUNS / "target"))
    elif args.part == "grid":
        cells = [cell(label, eps, args.horizon, args.reps) for label in args.agents
                 for eps in ([math.nan] if label in NON_PRIVATE else args.eps)]
        run_grid(cells, partial(run_cell, "grid"), CellFiles(RUNS / "grid"))
    elif args.part == "setting1":
        cells = [cell(label, eps, 20_000, args.reps, non_private=SETTING1_NON_PRIVATE)
                 for label in args.agents
                 for eps in ([math.nan] if label in SETTING1_NON_PRIVATE else args.eps)]
        run_grid(cells, run_setting1, CellFiles(RUNS / "setting1"))
    else:
        report()
    log = {"argv": sys.argv[1:] if argv is None else argv,
           "seconds": time.perf_counter() - start}
    print(json.dumps(log))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

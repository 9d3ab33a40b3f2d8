"""Noise against signal, per arm over time, in the statistics the private agents estimate
from (a diagnostic: computed from the raw data inside the agent, never released).

* DP-UCB (Gaussian tree, accountant; the block-diagonal option reads the same release): at
  checkpoint rounds t, per arm k, the smallest eigenvalue of the true Gram block
  ``G_kk(t) = sum_{s<t, a_s=k} x_s x_s^T`` against the spectral norm of the release's noise
  in that block (and in the whole ``dK x dK`` Gram, which the faithful agent inverts), the
  shift ``2 Upsilon`` added to every release, the target vector's signal against its noise,
  the radius ``beta_t`` and, for the round's context, the mean bonus
  ``beta_t ||x||_{V_kk^-1}`` against the mean ``|<theta~_k, x>|`` of the estimate.
* dp-screened-ls: after every fitting release, per arm, the smallest eigenvalue of the
  summed noiseless screened Gram (all fitting episodes so far, the sum the estimate uses)
  against the spectral norm of the summed Gram noise, the ridge it adds, and the summed
  targets' signal against their noise.

Replications: environment seeds 0 + r as in the study (means over replications). Writes
``noise.csv``. Usage (from the repository root)::

    python -m experiments.certified_learning.noise [--reps 4]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits.agents import make_agent
from dpbandits.harness.simulate import simulate
from experiments.certified_learning.compare import INSTANCES
from experiments.certified_learning.instances import EVAL_SEED, EVALUATION, problem_size

HERE = Path(__file__).resolve().parent
#: (instance, epsilon, horizon) of the DP-UCB and dp-screened-ls measurements
RUNS = [(inst, eps, 10_000) for inst in INSTANCES for eps in (1.0, 10.0)] + [
    ("figure5.1", 1.0, 100_000)]


def checkpoints(horizon: int) -> list[int]:
    """Rounds 100, 300, 1000, 3000, ... below ``horizon``, and ``horizon - 1``."""
    pts = [c * 10**j for j in range(2, 7) for c in (1, 3) if c * 10**j < horizon]
    return pts + [horizon - 1]


def _sym(a: np.ndarray) -> np.ndarray:
    return np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)


def _spectral(a: np.ndarray) -> np.ndarray:
    return np.abs(np.linalg.eigvalsh(a)).max(axis=-1)


class _Probe:
    """Plays ``agent`` unchanged and calls ``measure(agent, contexts, t)`` before acting at
    the checkpoint rounds (t = number of updates so far)."""

    def __init__(self, agent, points, measure) -> None:
        self.agent, self.points, self.measure = agent, set(points), measure
        self.name = agent.name

    def reset(self, n_reps, rng):
        self.t = 0
        return self.agent.reset(n_reps, rng)

    def act(self, contexts):
        if self.t in self.points:
            self.measure(self.agent, contexts, self.t)
        return self.agent.act(contexts)

    def update(self, contexts, arms, rewards):
        self.agent.update(contexts, arms, rewards)
        self.t += 1

    @property
    def privacy(self):
        return self.agent.privacy


def dp_ucb_rows(inst: str, epsilon: float, horizon: int, reps: int) -> list[dict]:
    env_id, env_params, _ = EVALUATION[inst]
    env_params = {**env_params, "horizon": horizon}
    K, d = problem_size(env_params)
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=horizon, epsilon=epsilon,
                       calibration="accountant", block_diagonal=True)
    D, rows = K * d, []
    pulls = np.zeros((reps, K))

    def measure(a, contexts, t):
        M = _sym(a._M)
        N = _sym(a._stack[a._lev]) if a._lev >= 0 else np.zeros_like(M)
        idx = a.indices(contexts)
        theta = np.linalg.solve(a._V, a._u[..., None])[..., 0].reshape(reps, K, d)
        mean = np.einsum("rkd,rd->rk", theta, contexts)
        full_noise = float(_spectral(N[:, :D, :D]).mean())
        for k in range(K):
            sl = slice(k * d, (k + 1) * d)
            lam = np.linalg.eigvalsh(M[:, sl, sl])[:, 0]
            rows.append({
                "instance": inst, "agent": "dp-ucb (accountant)", "epsilon": epsilon,
                "horizon": horizon, "t": t, "arm": k,
                "pulls": float(pulls[:, k].mean()),
                "gram_min_eig": float(lam.mean()),
                "gram_noise_spectral": float(_spectral(N[:, sl, sl]).mean()),
                "full_gram_noise_spectral": full_noise,
                "shift_or_ridge": float(a.constants["shift"]),
                "target_signal": float(np.linalg.norm(M[:, sl, D], axis=1).mean()),
                "target_noise": float(np.linalg.norm(N[:, sl, D], axis=1).mean()),
                "beta": float(np.mean(a._last_beta)),
                "bonus": float(np.mean(idx[:, k] - mean[:, k])),
                "estimate_abs_mean": float(np.abs(mean[:, k]).mean())})

    class _Counting(_Probe):
        def update(self, contexts, arms, rewards):
            pulls[np.arange(reps), arms] += 1
            super().update(contexts, arms, rewards)

    simulate(env_id, _Counting(agent, checkpoints(horizon), measure), n_reps=reps,
             seed=EVAL_SEED, env_params=env_params)
    return rows


def screened_ls_rows(inst: str, epsilon: float, horizon: int, reps: int) -> list[dict]:
    env_id, env_params, _ = EVALUATION[inst]
    env_params = {**env_params, "horizon": horizon}
    K, d = problem_size(env_params)
    agent = make_agent("dp-screened-ls", n_arms=K, dim=d, horizon=horizon, epsilon=epsilon)
    rows: list[dict] = []
    state: dict = {}
    release = agent._release_fit

    def measured_release():  # wraps the agent's own release; the agent is unchanged
        raw_gram, raw_b = agent._gram.copy(), agent._sum.copy()
        b_before = agent._b_released.copy()
        g_before = agent._gram_released.copy()
        release()
        if "gram" not in state:
            state["gram"] = np.zeros_like(raw_gram)
            state["b"] = np.zeros_like(raw_b)
            state["gram_noise"] = np.zeros_like(raw_gram)
            state["b_noise"] = np.zeros_like(raw_b)
        state["gram"] += raw_gram
        state["b"] += raw_b
        state["gram_noise"] += agent._gram_released - g_before - raw_gram
        state["b_noise"] += agent._b_released - b_before - raw_b
        s = raw_gram.shape[-1]
        ridge = agent._ridge * 2.0 * agent.sigmas["gram"] * math.sqrt(agent._n_fits * s)
        lam = np.linalg.eigvalsh(state["gram"])[..., 0]
        spec = _spectral(state["gram_noise"])
        for k in range(K):
            rows.append({
                "instance": inst, "agent": "dp-screened-ls", "epsilon": epsilon,
                "horizon": horizon, "t": agent.t_ + 1, "arm": k,
                "pulls": float(np.trace(state["gram"][:, k], axis1=1, axis2=2).mean()),
                "gram_min_eig": float(lam[:, k].mean()),
                "gram_noise_spectral": float(spec[:, k].mean()),
                "shift_or_ridge": ridge,
                "target_signal": float(np.linalg.norm(state["b"][:, k], axis=1).mean()),
                "target_noise": float(np.linalg.norm(state["b_noise"][:, k], axis=1).mean())})

    agent._release_fit = measured_release
    simulate(env_id, agent, n_reps=reps, seed=EVAL_SEED, env_params=env_params)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args(argv)
    rows: list[dict] = []
    for inst, eps, T in RUNS:
        rows += screened_ls_rows(inst, eps, T, args.reps)
        rows += dp_ucb_rows(inst, eps, T, args.reps)
        print(f"  {inst} eps={eps:g} T={T}: {len(rows)} rows", flush=True)
    table = pd.DataFrame(rows)
    table["noise_over_signal"] = table.gram_noise_spectral / table.gram_min_eig
    table.to_csv(HERE / "noise.csv", index=False, float_format="%.5g")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.groupby(["agent", "instance", "epsilon", "horizon", "t"])[
            ["gram_min_eig", "gram_noise_spectral", "shift_or_ridge", "target_signal",
             "target_noise"]].mean().to_string(float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()

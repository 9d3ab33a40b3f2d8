"""How the authors' code of Figure 5.1 logs DP-UCB's regret, measured.

The code's DP-UCB run draws theta* of shape (d, K) (arm i in column i; each support of s
coordinates drawn *with replacement*, then l_1-normalized) and generates rewards from it. It
then flattens theta* row-major into a (dK,)-vector, which interleaves the arms, while the
features of arm i are the block vector with the context in block i. The regret it logs is
therefore measured against arm parameters theta_scr_a = flat[a d : (a+1) d] (halves of the
interleaved vector), not against the theta* that generated the rewards.

This script replays that setting with our reconstruction of the code's DP-UCB
(``dp-ucb-authors-code``), vectorized over replications, and reports the logged and the true
cumulative regret, their ratio per replication, and how often a support has fewer than s
coordinates because of the draws with replacement.

Usage: ``python -m experiments.fig5_1.authors_logged_regret [--horizon T] [--reps R] [--seed S]``
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dpbandits.agents import make_agent

D, K, S, NOISE = 50, 2, 5, 0.05  # the code's main.py: d = 50, k = 2, s = 5; N(0, 0.05^2)


def draw_theta(rng: np.random.Generator, reps: int) -> np.ndarray:
    """theta* of shape (R, d, K) as the code draws it: s support indices with replacement."""
    theta = np.zeros((reps, D, K))
    idx = rng.integers(0, D, size=(reps, K, S))
    rows = np.arange(reps)[:, None, None]
    arms = np.arange(K)[None, :, None]
    theta[rows, idx, arms] = 1.0
    return theta / theta.sum(axis=1, keepdims=True)


def scrambled(theta: np.ndarray) -> np.ndarray:
    """The arm parameters the code's regret uses: row-major flattening read in d-blocks."""
    reps = theta.shape[0]
    flat = theta.reshape(reps, D * K)  # flat[j K + i] = theta[j, i]
    return flat.reshape(reps, K, D).transpose(0, 2, 1)  # column a = flat[a d:(a+1) d]


def run(horizon: int, reps: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    theta = draw_theta(rng, reps)
    theta_log = scrambled(theta)
    agent = make_agent("dp-ucb-authors-code", n_arms=K, dim=D, horizon=horizon, epsilon=1.0)
    agent.reset(reps, np.random.default_rng([seed, 1]))
    true_regret = np.zeros(reps)
    logged_regret = np.zeros(reps)
    rows = np.arange(reps)
    for _ in range(horizon):
        x = rng.normal(0.0, NOISE, size=(reps, D))
        x /= np.abs(x).max(axis=1, keepdims=True)
        means = np.einsum("rd,rdk->rk", x, theta)
        means_log = np.einsum("rd,rdk->rk", x, theta_log)
        arms = agent.act(x)
        rewards = means[rows, arms] + rng.normal(0.0, NOISE, size=reps)
        agent.update(x, arms, rewards)
        true_regret += means.max(axis=1) - means[rows, arms]
        logged_regret += means_log.max(axis=1) - means_log[rows, arms]
    support = (theta > 0).sum(axis=1)  # (R, K)
    return {"true": true_regret, "logged": logged_regret,
            "short_support": float(np.mean(support < S))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = run(args.horizon, args.reps, args.seed)
    ratio = out["logged"] / out["true"]
    half = 1.96 * ratio.std(ddof=1) / math.sqrt(args.reps)
    exact = 1.0 - math.prod(1.0 - j / D for j in range(S))
    print(f"T = {args.horizon}, {args.reps} replications, seed {args.seed}")
    print(f"final cumulative regret, true:   {out['true'].mean():8.1f}")
    print(f"final cumulative regret, logged: {out['logged'].mean():8.1f}")
    print(f"logged / true per replication: mean {ratio.mean():.3f} "
          f"(95% CI {ratio.mean() - half:.3f}-{ratio.mean() + half:.3f}), "
          f"min {ratio.min():.3f}, max {ratio.max():.3f}")
    print(f"arms whose support has < {S} coordinates: {out['short_support']:.3f} "
          f"(exact probability {exact:.3f})")


if __name__ == "__main__":
    main()

"""
Off-policy evaluation: IPS and SNIPS
====================================

Estimate the value of a fixed policy from a log that another policy collected, without
running it: inverse propensity scoring (IPS, Horvitz & Thompson 1952) and its
self-normalized variant (SNIPS, Swaminathan & Joachims 2015). The log is synthetic, so the
true value of every policy is known and the estimates can be checked against it.

These estimators are **not** differentially private: each estimate is an average of the
logged users' rewards, released exactly.
"""

# %%
# A log collected by a softmax policy that favours good arms (propensities not uniform), and
# three target policies: the best arm in hindsight, a fixed arm, and uniform random (given as
# probabilities).
import matplotlib.pyplot as plt
import numpy as np

from dpbandits.datasets import ips, snips, synthetic_log

log, expected = synthetic_log(5_000, n_arms=3, dim=5, seed=1, logging="softmax")
n, K = expected.shape
targets = {
    "best arm": expected.argmax(axis=1),
    "always arm 0": np.zeros(n, dtype=np.int64),
    "uniform random": np.full((n, K), 1.0 / K),
}


def true_value(target):
    """Mean expected reward of ``target`` on the logged contexts."""
    probs = target if target.ndim == 2 else np.eye(K)[target]
    return float((probs * expected).sum(axis=1).mean())


rows = []
for name, target in targets.items():
    for estimate in (ips(log, target), snips(log, target)):
        rows.append((name, estimate, true_value(target)))
        print(f"{name:15s} {estimate.estimator:5s} {estimate.value:.4f} "
              f"[{estimate.ci_low:.4f}, {estimate.ci_high:.4f}]  true {true_value(target):.4f}")

# %%
# Each estimate with its 95% interval (normal approximation) next to the true value.
fig, ax = plt.subplots(figsize=(9, 4.2))
for i, (_, estimate, truth) in enumerate(rows):
    y = i // 2 + (0.15 if estimate.estimator == "snips" else -0.15)
    ax.errorbar(estimate.value, y, xerr=[[estimate.value - estimate.ci_low],
                                         [estimate.ci_high - estimate.value]],
                fmt="o" if estimate.estimator == "ips" else "s", capsize=3,
                color="C0" if estimate.estimator == "ips" else "C1",
                label=estimate.estimator.upper() if i < 2 else None)
    ax.plot([truth, truth], [i // 2 - 0.35, i // 2 + 0.35], color="black", lw=1.5,
            label="true value" if i == 0 else None)
ax.set_yticks(range(len(targets)), list(targets))
ax.set_xlabel("value (mean reward per round)")
ax.set_title("Off-policy estimates from a softmax-logged log of 5,000 rounds")
ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the axes: covers no point
fig.tight_layout()

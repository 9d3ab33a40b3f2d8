"""
Off-policy evaluation: IPS, SNIPS, DM, DR, Switch-DR and private estimates
==========================================================================

Estimate the value of a fixed policy from a log that another policy collected, without
running it. Every estimator is in :mod:`dpbandits.offpolicy`: inverse propensity scoring
(IPS, Horvitz & Thompson 1952) and its self-normalized variant (SNIPS, Swaminathan & Joachims
2015), the Direct Method and doubly robust estimation (Dudík, Langford & Li 2011), Switch-DR
(Wang, Agarwal & Dudík 2017), and the differentially private IPS, SNIPS and DR of
:class:`~dpbandits.offpolicy.PrivateEstimator`. The log is synthetic, so the true value of
every policy is known and the estimates can be checked against it.

The plain estimators are **not** differentially private: each estimate is a statistic of the
logged users' rewards, released exactly. The private ones add calibrated Gaussian noise.
"""

# %%
# A log collected by a softmax policy that favours good arms (propensities not uniform), and
# three target policies: the best arm in hindsight, a fixed arm, and uniform random (given as
# probabilities). The first 1,000 rounds are a pilot, used only to fit the reward model the
# model-based estimators need; the other 5,000 are evaluated.
import matplotlib.pyplot as plt
import numpy as np

from dpbandits import offpolicy as ope
from dpbandits.envs import synthetic_log

full, expected_full = synthetic_log(6_000, n_arms=3, dim=5, seed=1, logging="softmax")
pilot, log = full.subset(slice(0, 1_000)), full.subset(slice(1_000, 6_000))
expected = expected_full[1_000:]
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


# %%
# The reward model: one ridge regression per arm, fit on the pilot's rounds of that arm and
# used to predict every arm on the evaluated contexts, ``q`` of shape (n, K). It is fixed
# without the evaluated log, as the private DR requires.
q = np.column_stack([
    ope.RidgeRegressor(alpha=1.0).fit(pilot.contexts[pilot.actions == k],
                                      pilot.rewards[pilot.actions == k]).predict(log.contexts)
    for k in range(K)])

# %%
# The plain estimators, each with its 95% normal interval, and the private ones at
# epsilon = 1: their ``total_low``/``total_high`` interval covers both the sampling error and
# the privacy noise (``noise_low``/``noise_high`` covers the noise alone).
# Private DR takes ``q`` as a model fit on data disjoint from the log (the pilot):
# ``reward_model="disjoint"``; without it, it fits its own model privately on the log.
private = {name: ope.PrivateEstimator(name, epsilon=1.0, delta=1e-6, max_weight=10.0,
                                      reward_range=(0.0, 1.0),
                                      **({"reward_model": "disjoint"} if name == "dr" else {}))
           for name in ope.PRIVATE_ESTIMATORS}
rows = []  # (policy, estimator label, value, low, high)
for policy, target in targets.items():
    plain = {
        "IPS": ope.ips(log, target),
        "SNIPS": ope.snips(log, target),
        "DM": ope.direct_method(log, target, estimated_rewards=q),
        "DR": ope.doubly_robust(log, target, estimated_rewards=q),
        "Switch-DR": ope.switch_dr(log, target, estimated_rewards=q, threshold=5.0),
    }
    for label, est in plain.items():
        rows.append((policy, label, est.value, est.ci_low, est.ci_high))
    for name, estimator in private.items():
        out = estimator.estimate(log, target, rng=np.random.default_rng(7),
                                 estimated_rewards=q if name == "dr" else None)
        rows.append((policy, f"private {name.upper()}", out.value, out.total_low,
                     out.total_high))
    print(f"{policy}: true value {true_value(target):.4f}")
    for _, label, value, low, high in rows[-8:]:
        print(f"    {label:14s} {value:.4f}  [{low:.4f}, {high:.4f}]")

# %%
# Each estimate with its interval next to the true value (black bar). The private intervals
# are wider: they add the noise and use a sampling bound that holds at every sample size.
labels = list(dict.fromkeys(label for _, label, *_ in rows))
fig, axes = plt.subplots(1, len(targets), figsize=(11, 4.2), sharey=True)
for ax, (policy, target) in zip(axes, targets.items(), strict=True):
    for i, (_, label, value, low, high) in enumerate(r for r in rows if r[0] == policy):
        ax.errorbar(value, i, xerr=[[value - low], [high - value]], capsize=3,
                    fmt="s" if label.startswith("private") else "o",
                    color="C1" if label.startswith("private") else "C0")
    truth = true_value(target)
    ax.axvline(truth, color="black", lw=1.5)
    ax.set_title(f"{policy} (true {truth:.3f})", fontsize=10)
    ax.set_xlabel("value (mean reward per round)")
axes[0].set_yticks(range(len(labels)), labels)
axes[0].invert_yaxis()
fig.suptitle("Off-policy estimates from 5,000 softmax-logged rounds (95% intervals; "
             "private: epsilon = 1, delta = 1e-6)", fontsize=10)
fig.tight_layout()

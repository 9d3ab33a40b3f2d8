"""Off-policy estimates of a fixed policy's value from a log: IPS and self-normalized IPS.

The value of a target policy ``pi`` is ``V(pi) = E_x[sum_k pi(k | x) mu_k(x)]``. With
importance weights ``w_i = pi(a_i | x_i) / p_i`` (``p_i`` the logged propensity):

* **IPS** (inverse propensity scoring; Horvitz & Thompson 1952): ``V_ips = mean_i w_i r_i``,
  unbiased whenever ``p_i > 0`` wherever ``pi`` puts mass. Interval: the CLT (normal) interval
  ``V_ips +- z sd(w r) / sqrt(n)`` with the sample standard deviation (``ddof = 1``).
* **SNIPS** (self-normalized IPS; Swaminathan & Joachims 2015, "The self-normalized estimator
  for counterfactual learning"): ``V_snips = sum_i w_i r_i / sum_i w_i``, biased by O(1/n)
  but with lower variance. Interval: the delta method on the ratio of means, standard error
  ``sqrt(sum_i w_i^2 (r_i - V_snips)^2) / sum_i w_i``.

Both intervals are asymptotic (normal approximation), exact in the large-n limit only; with
tiny propensities (OBD: 1/80) the weights are large and n must be large too.
:func:`policy_actions` evaluates an agent's current policy (a snapshot: it is not updated) on
logged contexts, one ``act`` call per context for all its replications.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from dpbandits._validation import check_real
from dpbandits.envs.logged import LoggedBandit

__all__ = ["PolicyEstimate", "ips", "policy_actions", "snips"]


@dataclass(frozen=True)
class PolicyEstimate:
    """An off-policy value estimate: ``value`` with its ``std_error`` and the two-sided
    ``level`` interval ``[ci_low, ci_high]`` (``interval`` names how it was built) from ``n``
    logged rounds; ``estimator`` is ``"ips"`` or ``"snips"``; ``matched`` counts the rounds
    where the target policy puts mass on the logged action (``w_i > 0``)."""

    estimator: str
    value: float
    std_error: float
    ci_low: float
    ci_high: float
    level: float
    interval: str
    n: int
    matched: int


def _weights(log: LoggedBandit, target) -> np.ndarray:
    """``pi(a_i | x_i) / p_i`` for ``target``: arms (n,) of a deterministic policy, or
    probabilities (n, K) of a stochastic one (rows summing to 1)."""
    if not isinstance(log, LoggedBandit):
        raise TypeError(f"log must be a LoggedBandit, got {type(log).__name__}")
    n, K = log.n_rounds, log.n_arms
    pi = np.asarray(target)
    rows = np.arange(n)
    if pi.ndim == 1:
        if pi.shape != (n,) or pi.dtype.kind not in "iu":
            raise ValueError(f"target must be integer arms of shape ({n},) (one per logged "
                             f"round) or probabilities of shape ({n}, {K}), got shape "
                             f"{pi.shape} dtype {pi.dtype}")
        if pi.min() < 0 or pi.max() >= K:
            raise ValueError(f"target arms must lie in [0, {K - 1}] (n_arms={K}), got values "
                             f"in [{pi.min()}, {pi.max()}]")
        prob = (pi == log.actions).astype(np.float64)
    elif pi.ndim == 2:
        if pi.shape != (n, K) or not np.isfinite(pi).all() or (pi < 0).any():
            raise ValueError(f"target probabilities must be finite, >= 0 and of shape ({n}, "
                             f"{K}), got shape {pi.shape}")
        sums = pi.sum(axis=1)
        if not np.allclose(sums, 1.0, rtol=0, atol=1e-9):
            i = int(np.flatnonzero(~np.isclose(sums, 1.0, rtol=0, atol=1e-9))[0])
            raise ValueError(f"target probabilities must sum to 1 in every row; row {i} sums "
                             f"to {sums[i]}")
        prob = pi[rows, log.actions].astype(np.float64)
    else:
        raise ValueError(f"target must be 1-d arms or 2-d probabilities, got shape {pi.shape}")
    return prob / log.propensities


def _z(level) -> float:
    lv = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    return float(norm.ppf(0.5 + lv / 2.0))


def ips(log: LoggedBandit, target: np.ndarray, *, level: float = 0.95) -> PolicyEstimate:
    """Inverse-propensity estimate of ``target``'s value on ``log`` with its CLT interval.

    ``target``: the arm the policy plays in every logged context, shape (n,), or its action
    probabilities, shape (n, K)."""
    w = _weights(log, target)
    z, n = _z(level), log.n_rounds
    terms = w * log.rewards
    value = float(terms.mean())
    se = float(terms.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return PolicyEstimate("ips", value, se, value - z * se, value + z * se, float(level),
                          "CLT (normal approximation)", n, int((w > 0).sum()))


def snips(log: LoggedBandit, target: np.ndarray, *, level: float = 0.95) -> PolicyEstimate:
    """Self-normalized inverse-propensity estimate with its delta-method interval.

    Raises ``ValueError`` when the target policy never plays a logged action (every weight is
    0: the log says nothing about it)."""
    w = _weights(log, target)
    z, n = _z(level), log.n_rounds
    total = float(w.sum())
    if total <= 0.0:
        raise ValueError(f"snips: the target policy never plays the logged action in any of "
                         f"the {n} rounds of log {log.name!r}; its value cannot be estimated "
                         "from this log")
    value = float((w * log.rewards).sum() / total)
    se = float(math.sqrt(float(np.sum((w * (log.rewards - value)) ** 2))) / total)
    return PolicyEstimate("snips", value, se, value - z * se, value + z * se, float(level),
                          "delta method (normal approximation)", n, int((w > 0).sum()))


def policy_actions(agent: Any, contexts: np.ndarray) -> np.ndarray:
    """The arms an agent's current policy plays on each of ``contexts`` (n, d): shape (R, n)
    for its ``R`` replications. ``act`` is called once per context (the context repeated for
    every replication); ``update`` never is, so the policy is a fixed snapshot (an agent that
    randomizes draws from its own generator)."""
    x = np.asarray(contexts, dtype=np.float64)
    R = getattr(agent, "n_reps_", None)
    if R is None:
        raise ValueError("policy_actions: reset (or run) the agent first: its replications "
                         "are the policies evaluated")
    if x.ndim != 2:
        raise ValueError(f"contexts must have shape (n, d), got {x.shape}")
    out = np.empty((R, x.shape[0]), dtype=np.int64)
    for i in range(x.shape[0]):
        out[:, i] = agent.act(np.repeat(x[i:i + 1], R, axis=0))
    return out

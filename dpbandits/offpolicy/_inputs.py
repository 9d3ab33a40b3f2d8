"""Checked inputs shared by the estimators: the target policy's probabilities (n, K), the
importance weights (n,), reward-model predictions (n, K) and a reward range."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandits._validation import as_float64, check_range
from dpbandits.envs.logged import LoggedBandit


def check_log(log: Any) -> LoggedBandit:
    """``log`` if it is a :class:`~dpbandits.envs.LoggedBandit`, else a TypeError."""
    if not isinstance(log, LoggedBandit):
        raise TypeError(f"log must be a LoggedBandit, got {type(log).__name__}")
    return log


def target_probabilities(log: LoggedBandit, target: Any) -> np.ndarray:
    """``pi(k | x_i)`` as a float array (n, K) from ``target``: the arms (n,) of a deterministic
    policy (one-hot rows), its probabilities (n, K) (finite, >= 0, rows summing to 1 within
    1e-9), or an object with ``action_probabilities(contexts)`` (e.g. a fitted agent), which is
    called on the log's contexts."""
    n, K = log.n_rounds, log.n_arms
    if hasattr(target, "action_probabilities") and not isinstance(target, np.ndarray):
        target = target.action_probabilities(log.contexts)
    pi = np.asarray(target)
    if pi.ndim == 1:
        if pi.shape != (n,) or pi.dtype.kind not in "iu":
            raise ValueError(f"target must be integer arms of shape ({n},) (one per logged "
                             f"round) or probabilities of shape ({n}, {K}), got shape "
                             f"{pi.shape} dtype {pi.dtype}")
        if pi.min() < 0 or pi.max() >= K:
            raise ValueError(f"target arms must lie in [0, {K - 1}] (n_arms={K}), got values "
                             f"in [{pi.min()}, {pi.max()}]")
        out = np.zeros((n, K))
        out[np.arange(n), pi] = 1.0
        return out
    if pi.ndim != 2:
        raise ValueError(f"target must be 1-d arms or 2-d probabilities, got shape "
                         f"{pi.shape}{obp_hint('target', pi.shape, n, K)}")
    if pi.shape != (n, K) or pi.dtype.kind not in "biuf" or not np.isfinite(pi).all() or (
            pi < 0).any():
        raise ValueError(f"target probabilities must be finite, >= 0 and of shape ({n}, "
                         f"{K}), got shape {pi.shape}")
    sums = pi.sum(axis=1)
    bad = ~np.isclose(sums, 1.0, rtol=0, atol=1e-9)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"target probabilities must sum to 1 in every row; row {i} sums "
                         f"to {sums[i]}")
    return as_float64("target", pi).astype(np.float64)


def obp_hint(name: str, shape: tuple[int, ...], n: int, K: int) -> str:
    """The reshape that fixes an obp-shaped array (``(n, K, len_list)``, obp's
    ``action_dist`` and ``estimated_rewards_by_reg_model``), or ""."""
    if len(shape) != 3 or shape[:2] != (n, K):
        return ""
    if shape[2] == 1:
        return (f" (obp's (n_rounds, n_actions, len_list) layout: pass {name}[..., 0], or "
                f"np.squeeze({name}, axis=2), for shape ({n}, {K}))")
    return (f" (obp's (n_rounds, n_actions, len_list) layout with len_list={shape[2]}: "
            f"evaluate one position at a time, {name}[..., j] for position j)")


def importance_weights(log: LoggedBandit, pi: np.ndarray) -> np.ndarray:
    """``w_i = pi(a_i | x_i) / p_i``, shape (n,)."""
    return pi[np.arange(log.n_rounds), log.actions] / log.propensities


def check_estimated_rewards(log: LoggedBandit, q: Any) -> np.ndarray:
    """Reward-model predictions ``q_hat(x_i, k)``: finite floats of shape (n, K)."""
    n, K = log.n_rounds, log.n_arms
    arr = np.asarray(q)
    if arr.shape != (n, K) or arr.dtype.kind not in "biuf":
        raise ValueError(f"estimated_rewards must be numeric of shape ({n}, {K}) (one "
                         f"prediction per logged round and arm), got shape {arr.shape} dtype "
                         f"{arr.dtype}{obp_hint('estimated_rewards', arr.shape, n, K)}; see "
                         "fit_reward_model")
    arr = as_float64("estimated_rewards", arr).astype(np.float64)
    if not np.isfinite(arr).all():
        i, k = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"estimated_rewards[{i}, {k}] is {arr[i, k]}; predictions must be "
                         "finite")
    return arr


def check_reward_range(log: LoggedBandit, reward_range: Any,
                       name: str = "reward_range") -> tuple[float, float] | None:
    """``(lo, hi)`` with ``lo < hi`` finite and every logged reward inside, or None."""
    if reward_range is None:
        return None
    lo, hi = check_range(name, reward_range)
    outside = (log.rewards < lo) | (log.rewards > hi)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(f"{name}=({lo}, {hi}) but log {log.name!r} has reward {log.rewards[i]} "
                         f"in row {i}; every reward must lie in the range")
    return lo, hi

"""A fixed policy from an agent: the arms it plays, or its action probabilities, on logged
contexts, for every replication of a (simulated or fitted) agent."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from dpbandits._validation import as_float64

__all__ = ["policy_actions", "policy_probabilities"]


def _contexts(agent: Any, contexts: np.ndarray, who: str) -> tuple[np.ndarray, int]:
    x = as_float64("contexts", contexts)  # exact or refused
    R = getattr(agent, "n_reps_", None)
    if R is None:
        raise ValueError(f"{who}: reset (or run) the agent first: its replications are the "
                         "policies evaluated")
    if x.ndim != 2:
        raise ValueError(f"contexts must have shape (n, d), got {x.shape}")
    return x, R


def policy_actions(agent: Any, contexts: np.ndarray) -> np.ndarray:
    """The arms an agent's current policy plays on each of ``contexts`` (n, d): shape (R, n)
    for its ``R`` replications. ``act`` is called once per context (the context repeated for
    every replication); ``update`` never is, so the policy is a fixed snapshot (an agent that
    randomizes draws from its own generator)."""
    x, R = _contexts(agent, contexts, "policy_actions")
    out = np.empty((R, x.shape[0]), dtype=np.int64)
    for i in range(x.shape[0]):
        out[:, i] = agent.act(np.repeat(x[i:i + 1], R, axis=0))
    return out


def policy_probabilities(agent: Any, contexts: np.ndarray) -> np.ndarray:
    """``pi_r(k | x_i)`` of every replication ``r`` of an agent on ``contexts`` (n, d): shape
    (R, n, K), where the agent defines them (deterministic agents: one-hot rows; ``random``:
    uniform; :meth:`dpbandits.agents.Agent.action_probabilities` is the one-replication form).
    They are computed on a copy: nothing is learnt and no generator advances."""
    x, R = _contexts(agent, contexts, "policy_probabilities")
    twin = copy.deepcopy(agent)
    out = np.empty((R, x.shape[0], agent.n_arms))
    for i in range(x.shape[0]):
        out[:, i] = twin._action_probabilities(np.repeat(x[i:i + 1], R, axis=0))
    return out

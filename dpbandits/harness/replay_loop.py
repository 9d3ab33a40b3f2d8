"""The harness's round loop on a replay environment (Li, Chu, Langford & Wang 2011,
Algorithm 3), replications kept in step on accepted rounds.

For accepted round ``t`` every replication is offered logged rounds until the agent's arm
equals the logged action: ``act`` is called on the current contexts of all replications,
the replications that match keep their round, the others discard theirs and are offered the
next one, until every replication has matched; then one ``update`` feeds every replication
its accepted round. So each replication follows Algorithm 3 on its own pass (its history
holds only its accepted rounds), and the agent's ``update`` runs exactly ``horizon`` times.

``act`` is therefore called about ``K`` times (more with many replications: until the last
one matches) per ``update``: agents must be able to act any number of times between
updates without changing what they learned (every built-in agent whose ``act`` is a
function of its state and the context; an agent drawing a per-round stream in ``act``
fails with a ``ValueError`` naming it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandits.envs.replay import ReplayCore
from dpbandits.harness.faults import blame_agent, blamed


def replay_rounds(core: ReplayCore, agent: Any, horizon: int, contexts: np.ndarray, *,
                  trusted: bool = False, bar: Any = None, every: int = 1,
                  label: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play ``horizon`` accepted rounds; returns ``(arms, rewards, log_events)``, each
    ``(horizon, R)``: the accepted arm and logged reward of round ``t`` and the logged rounds
    each replication had read up to and including it. ``contexts`` are the reset's contexts;
    ``trusted``: ``agent`` is a dpbandits ``Agent`` fed by this environment (its unchecked
    update, as in ``simulate``)."""
    R = core.n_reps
    arms_hist = np.empty((horizon, R), dtype=np.int32)
    rewards_hist = np.empty((horizon, R))
    events = np.empty((horizon, R), dtype=np.int64)
    update = agent._update_trusted if trusted else agent.update
    label = label or getattr(agent, "name", "") or type(agent).__name__
    for t in range(horizon):
        arms = np.empty(R, dtype=np.int64)
        pending = np.ones(R, dtype=np.bool_)
        x = contexts
        while True:
            try:
                proposed = np.asarray(agent.act(x))
            except IndexError as exc:  # a per-round stream of `horizon` rounds ran out
                err = ValueError(
                    f"agent {label!r} cannot be "
                    "replayed: its act() draws from a stream of one entry per round "
                    f"({exc}), but replay calls act() on every logged round offered (about "
                    f"K = {core.n_arms} per accepted round)")
                blame_agent(agent, label, "act", t, horizon, err)
                raise err from None
            except Exception as exc:
                blame_agent(agent, label, "act", t, horizon, exc)
                raise
            hit = core.offer(proposed, pending)
            arms[hit] = proposed[hit]
            pending &= ~hit
            if not pending.any():
                break
            x = core.contexts()
        rewards = core.accept()
        with blamed(agent, label, "update", t, horizon):
            update(x, arms, rewards)
        arms_hist[t] = arms
        rewards_hist[t] = rewards
        events[t] = core.pos
        contexts = core.contexts()
        if bar is not None and (t + 1) % every == 0:
            bar.update(every)
    return arms_hist, rewards_hist, events

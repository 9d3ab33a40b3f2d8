"""A bandit agent's continuous hyper-parameters as a DP-GIBO objective (Sopa et al. 2025 x
Han et al. 2022).

The validation individuals are ``n`` **held-out simulated users**: user ``i`` is one bandit
problem (its own parameter instance, context stream and reward noise), generated from
``user_seeds[i]``. The loss of user ``i`` at hyper-parameters ``params`` is the agent's
average per-round pseudo-regret on user ``i``'s problem over ``horizon`` rounds. All users of
one evaluation run as the ``n`` replications of one batched simulation, so one function
evaluation of DP-GIBO is one call of :func:`~dpbandits.harness.simulate.simulate`.

Why this fits Theorem 3.1 of Sopa et al. 2025: replications of a simulation never share data,
so user ``i``'s loss depends only on user ``i``'s problem and on the agent's own randomness,
which is data-independent (``agent_rng(agent_seed)``, the same at every ``params``: common
random numbers, so the loss surface is smooth in ``params`` rather than re-noised at every
evaluation). Replacing one user therefore changes one per-individual loss and, after
clipping, the averaged gradient by at most ``2B/n`` — pinned by
``tests/test_harness_tuning.py``. The tuning guarantee protects the held-out users; the
agent's own guarantee (over the rounds of a run) is separate and unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dpbandits._validation import check_int
from dpbandits.bo.adapter import HyperparameterObjective, HyperparameterSpace
from dpbandits.harness.simulate import simulate

__all__ = ["AgentTuningObjective"]


class AgentTuningObjective(HyperparameterObjective):
    """Per-user average pseudo-regret of ``agent`` as a function of the hyper-parameters in
    ``space`` (coordinates in ``[0, 1]^d``; pass ``bounds=space.bounds`` to the optimizer).

    Parameters
    ----------
    agent : str
        Registered agent name (``"dp-hdb"``, ``"fliphat"``, ...).
    env : str
        Registered environment id; ``env_params`` are passed to ``gymnasium.make_vec``.
    space : HyperparameterSpace
        The tuned hyper-parameters (names are keyword arguments of the agent).
    user_seeds : sequence of int
        One environment seed per held-out user (``n = len(user_seeds)`` individuals);
        distinct seeds give distinct users.
    horizon : int, optional
        Rounds per user (default: the environment's horizon).
    fixed_params : mapping, optional
        Agent keyword arguments held fixed (e.g. ``epsilon``, ``calibration``); must not
        overlap ``space.names``.
    env_params : mapping, optional
        Keyword arguments of the environment, passed to ``gymnasium.make_vec``.
    agent_seed : int, default 0
        Seed of the agent's own randomness, shared by every evaluation.
    """

    def __init__(self, agent: str, env: str, space: HyperparameterSpace, *,
                 user_seeds: Sequence[int] | np.ndarray, horizon: int | None = None,
                 fixed_params: Mapping | None = None, env_params: Mapping | None = None,
                 agent_seed: int = 0) -> None:
        if not isinstance(agent, str):
            raise TypeError(f"agent must be a registered agent name, got {type(agent).__name__}")
        if not isinstance(env, str):
            raise TypeError(f"env must be a registered environment id, got "
                            f"{type(env).__name__}")
        seeds = (list(user_seeds) if isinstance(user_seeds, list | tuple | range | np.ndarray)
                 else None)
        if not seeds:
            raise ValueError(f"user_seeds must be a non-empty sequence of seeds, got "
                             f"{user_seeds!r}")
        seeds = [check_int(f"user_seeds[{i}]", s, low=0) for i, s in enumerate(seeds)]
        if len(set(seeds)) != len(seeds):
            raise ValueError("user_seeds must be distinct: equal seeds would be the same user")
        fixed = dict(fixed_params or {})
        if not isinstance(space, HyperparameterSpace):
            raise TypeError(f"space must be a HyperparameterSpace, got {type(space).__name__}")
        overlap = sorted(set(fixed) & set(space.names))
        if overlap:
            raise ValueError(f"fixed_params and space both set {overlap}")
        self.agent = agent
        self.env = env
        self.user_seeds = seeds
        self.horizon = None if horizon is None else check_int("horizon", horizon, low=1)
        self.fixed_params = fixed
        self.env_params = dict(env_params or {})
        self.agent_seed = check_int("agent_seed", agent_seed, low=0)
        super().__init__(self.user_regrets, space, n_individuals=len(seeds))

    def user_regrets(self, params: Mapping) -> np.ndarray:
        """``(n,)`` average per-round pseudo-regret of every held-out user at ``params``."""
        res = simulate(self.env, self.agent, horizon=self.horizon, n_reps=len(self.user_seeds),
                       seed=self.agent_seed, agent_params={**self.fixed_params, **params},
                       env_params=self.env_params, env_seeds=self.user_seeds)
        return res.regret.mean(axis=1)

"""
Plugging in your own agent
==========================

Any object with ``reset(n_reps, rng)``, ``act(contexts) -> arms`` and
``update(contexts, arms, rewards)`` can be simulated; subclassing
:class:`dpbandits.agents.Agent` adds the input checks, parameters and the registry. Here an
epsilon-greedy agent (non-private) is checked against the contract every registered agent
passes, then compared with LinUCB and uniform random on the Figure 5.1 instance.
"""

# %%
# The agent: per-arm linear estimates updated by a stochastic-gradient step, and a random
# arm with probability ``explore``. Contexts come batched over replications, shape (R, d).
import matplotlib.pyplot as plt
import numpy as np

from dpbandits.agents import Agent, register_agent
from dpbandits.harness import compare, plot_regret_curves
from dpbandits.testing import check_agent


@register_agent("epsilon-greedy-example")
class EpsilonGreedy(Agent):
    """Per-arm least-mean-squares estimates; a uniformly random arm with probability
    ``explore``."""

    def __init__(self, *, n_arms, dim, horizon, explore=0.1):
        self.explore = explore
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)

    def _reset(self, n_reps, rng):
        self.rng = rng
        self.theta = np.zeros((n_reps, self.n_arms, self.dim))
        self.counts = np.ones((n_reps, self.n_arms))

    def act(self, contexts):
        greedy = np.einsum("rd,rkd->rk", contexts, self.theta).argmax(axis=1)
        explore = self.rng.random(len(contexts)) < self.explore
        return np.where(explore, self.rng.integers(0, self.n_arms, len(contexts)), greedy)

    def _update(self, contexts, arms, rewards):
        rows = np.arange(len(arms))
        self.counts[rows, arms] += 1
        step = 1.0 / self.counts[rows, arms]
        error = np.einsum("rd,rd->r", contexts, self.theta[rows, arms]) - rewards
        self.theta[rows, arms] -= step[:, None] * error[:, None] * contexts

    @property
    def privacy(self):
        return None  # non-private: it states no guarantee


# %%
# The contract: shapes over replications, same seed same run, parameters that round-trip
# through ``get_params``/``clone``, one clear error for bad input.
check_agent(EpsilonGreedy(n_arms=2, dim=5, horizon=100))
print("check_agent passed")

# %%
# Registered, it is used by name like the built-in agents, with parameters per label.
agents = {"epsilon-greedy (0.1)": ("epsilon-greedy-example", {"explore": 0.1}),
          "epsilon-greedy (0.3)": ("epsilon-greedy-example", {"explore": 0.3}),
          "LinUCB": "linucb", "uniform random": "random"}
frame, summary, results = compare(agents, "dpbandits/Figure5.1-v0", horizon=2000, n_reps=10,
                                  seed=0, record_every=20)
print(summary[["agent", "n", "mean", "ci95_low", "ci95_high"]].to_string(index=False))

# %%
# Mean cumulative regret with its 95% band; uniform random is the grey floor.
fig, ax = plt.subplots(figsize=(8, 4.6))
plot_regret_curves(frame, ax=ax, floor="uniform random",
                   title="A plugged-in agent on the Figure 5.1 instance")

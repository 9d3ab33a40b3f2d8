"""
Real data and a replay of logged data
=====================================

The two standard ways of running a bandit on real data (see :doc:`../real-data`):

* **supervised-to-bandit**: Fisher's iris flowers become a bandit whose arms are the three
  species; a round is one flower, the reward is 1 for the right species;
* **replay of a log** (Li, Chu, Langford & Wang 2011, Algorithm 3): a policy walks a log of
  uniformly random choices and keeps only the rounds where it agrees with the logged action.
"""

# %%
# Iris: a certified agent and LinUCB against random, every flower one round, ten random
# passes over the 150 flowers.
import matplotlib.pyplot as plt

from dpbandits.datasets import synthetic_log
from dpbandits.harness import compare, plot_regret_curves, plot_reward_curves

agents = {"dp-screened-ls (epsilon = 1)": ("dp-screened-ls", {"epsilon": 1.0}),
          "LinUCB": "linucb", "uniform random": "random"}
frame, summary, _ = compare(agents, "dpbandits/IrisBandit-v0", n_reps=10, seed=0)
print(summary[["agent", "n", "mean", "ci95_low", "ci95_high", "certified_epsilon"]]
      .to_string(index=False))

# %%
# Regret counts the flowers given the wrong species: random is wrong two times in three.
fig, ax = plt.subplots(figsize=(8, 4.6))
plot_regret_curves(frame, ax=ax, floor="uniform random", title="Iris as a 3-armed bandit")

# %%
# Replay: a synthetic log of 30,000 uniformly random choices among three arms (the log a
# file would hold: contexts, actions, rewards, propensities). ``horizon`` counts accepted
# rounds.
log, _ = synthetic_log(30_000, n_arms=3, dim=5, seed=0)
agents = {"DP-UCB (epsilon = 1)": ("dp-ucb", {"epsilon": 1.0}), "LinUCB": "linucb",
          "uniform random": "random"}
frame, summary, results = compare(agents, "dpbandits/Replay-v0", horizon=2000, n_reps=10,
                                  seed=0, env_params={"log": log})
print(summary[["agent", "n", "accepted", "log_events", "mean", "ci95_low", "ci95_high"]]
      .to_string(index=False))

# %%
# There is no regret without the true parameters: the plot shows cumulative reward over the
# accepted rounds, with the logging policy's mean reward per round as the grey line.
reference = next(iter(results.values())).reference_reward
fig, ax = plt.subplots(figsize=(8, 4.6))
plot_reward_curves(frame, ax=ax, reference=reference, title="Replay of a uniform log")

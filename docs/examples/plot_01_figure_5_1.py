"""
Figure 5.1 at the small size
============================

The reproduction of Figure 5.1 of Han et al. (2022) that ``bash scripts/demo.sh`` runs
(``dpbandits reproduce fig5.1 --size small --panels AB``): horizon T = 10,000, d = 50,
K = 2, epsilon = 1, delta = 1/T, ten replications per agent.

* Panel A runs the agents as the authors' code runs them (not certified): DP-HDB on
  l_1-normalized contexts and DP-UCB on l_inf-normalized ones, each next to uniform random on
  its own scale.
* Panel B runs every certified agent on one l_inf instance with common random numbers.
"""

# %%
# Panel A: the published comparison, each agent next to its own random floor.
import matplotlib.pyplot as plt

from dpbandits.harness.plots import plot_regret_curves, privacy_label
from dpbandits.harness.reproduce import SIZES, panel_a, panel_b

size = SIZES["small"]
frame_a, summary_a, results_a = panel_a(size["horizon"], size["n_reps"], seed=0)
print(summary_a[["agent", "contexts", "n", "mean", "ci95_low", "ci95_high"]].to_string(
    index=False))

# %%
# The two context scales give the two agents different problems: each panel below shares one
# scale, so each agent is compared with uniform random on the contexts it actually saw.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
for ax, scale in zip(axes, ["l1", "linf"], strict=True):
    sub = frame_a[frame_a["contexts"] == scale]
    floor = next(a for a in sub["agent"].unique() if a.startswith("uniform random"))
    plot_regret_curves(sub, ax=ax, floor=floor, title=f"{scale} contexts")

# %%
# Panel B: the certified agents on one instance. Two worker processes, as the demo runs it.
frame_b, summary_b, results_b = panel_b(size["horizon"], size["n_reps"], seed=0, n_jobs=2)
print(summary_b[["agent", "n", "mean", "ci95_low", "ci95_high", "epsilon",
                 "certified_epsilon"]].to_string(index=False))

# %%
# The legend states each agent's guarantee as the accountant certified it from the agent's
# own ledger.
labels = {name: f"{name}: {privacy_label(r.privacy, r.certified)}"
          for name, r in results_b.items()}
fig, ax = plt.subplots(figsize=(9, 5))
plot_regret_curves(frame_b, ax=ax, labels=labels, floor="uniform random",
                   title="Figure 5.1, certified agents, epsilon = 1")

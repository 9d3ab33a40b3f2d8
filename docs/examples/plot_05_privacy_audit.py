"""
An empirical privacy audit
==========================

A privacy claim can be tested from outside: run the mechanism many times on two
neighbouring inputs, pick a rule "say D' when the output exceeds tau", and bound its
false-positive and true-positive rates with Clopper-Pearson intervals. Any epsilon smaller
than ``ln(p1 / p0)`` (with the confidence bounds) is refuted. The audit gives a lower bound:
it can catch an implementation that adds too little noise, never prove one correct.

Here a counting query (sensitivity 1) released with Laplace noise at a claimed epsilon of 1,
as the library implements it, and a broken variant that adds half the noise.
"""

# %%
# The sampler runs the mechanism ``n`` times on ``D`` (``world = 0``, count 10) or on its
# neighbour ``D'`` (``world = 1``, count 11) and returns the released values.
import matplotlib.pyplot as plt
import numpy as np

from dpbandits.audits import AUDITS
from dpbandits.privacy.audit import AuditSpec, audit
from dpbandits.privacy.mechanisms import laplace_noise, laplace_scale

EPSILON = 1.0


def sampler(noise_factor):
    scale = noise_factor * laplace_scale(EPSILON, sensitivity=1.0)

    def run(world, n, rng):
        return 10.0 + world + laplace_noise(rng, scale, n)

    return run


results = []
for variant, factor, expected in (("as implemented", 1.0, "consistent"),
                                  ("half the noise", 0.5, "violation")):
    spec = AuditSpec(component="laplace counting query", epsilon=EPSILON, delta=0.0,
                     runs=20_000, seed=0, variant=variant, broken=factor != 1.0,
                     expected=expected, statistic="released count")
    results.append(audit(sampler(factor), spec))


def show(result):
    print(f"{result.variant}: claimed epsilon {result.epsilon:g}, lower bound "
          f"{result.eps_lb:.3f} (confidence {result.confidence:g})\n"
          f"    verdict {result.verdict}, expected {result.expected}")


for result in results:
    show(result)

# %%
# The released values in the two worlds: with the calibrated noise they overlap enough that
# no rule separates them by more than a factor ``e^1``; with half the noise they do not.
rng = np.random.default_rng(1)
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, (result, factor) in zip(axes, zip(results, (1.0, 0.5), strict=True), strict=True):
    bins = np.linspace(4, 17, 80)
    for world in (0, 1):
        ax.hist(sampler(factor)(world, 20_000, rng), bins=bins, alpha=0.5, density=True,
                label="D (count 10)" if world == 0 else "D' (count 11)")
    ax.set_title(f"{result.variant}\nclaimed epsilon {result.epsilon:g}, lower bound "
                 f"{result.eps_lb:.2f}: {result.verdict}", fontsize=10)
    ax.set_xlabel("released value")
    ax.legend()
fig.tight_layout()

# %%
# The library's own catalogue audits every private component the same way; each entry has a
# broken variant that the audit must catch (``dpbandits audit laplace``).
for result in (AUDITS["laplace"](seed=0), AUDITS["laplace"](seed=0, broken=True)):
    show(result)

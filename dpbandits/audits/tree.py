"""Audit of the binary-tree aggregator (``dpbandits.privacy.tree.TreeAggregator``).

Canary: a scalar stream of zeros whose first element is 0 (``D``) or ``Delta`` (``D'``): leaf 1
lies in the most nodes, ``L = nodes_per_datum``. White-box statistic: the sum of the releases
at ``t = 1, 2, 4, ..., 2^{L-1}``; each of them is exactly the noisy node ``[1, t]``, and the
likelihood ratio of the whole released sequence depends on these nodes only, so the statistic
is optimal. Claim: Gaussian nodes of std ``sigma = sqrt(L) Delta / mu`` make every prefix
sum released ``mu``-GDP with ``mu = gdp_mu(epsilon, delta)``. Broken variant: the missing
``sqrt(L)`` factor (the natural calibration error).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits.audits._registry import AuditContext, register
from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import AuditResult
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.tree import TreeAggregator, tree_levels

EPS, DELTA, SENS = 1.0, 1e-5, 1.0
HORIZON = 64  # L = 7 levels
_BROKEN = "node sigma without the sqrt(levels) factor"


@register("tree", fast_runs=20_000, thorough_runs=400_000)
def audit_tree(ctx: AuditContext) -> AuditResult:
    """privacy.tree.TreeAggregator with Gaussian nodes

    Canary: scalar stream of length 64, first element 0 vs Delta = 1, all others 0
    Broken variant: node sigma without the sqrt(levels) factor
    Shows: one datum's influence on all T released prefix sums is hidden by sqrt(L)-calibrated node
        noise (node reuse across releases is correct: fresh noise per release or a missing sqrt(L)
        would be caught)
    Cannot show: errors that only affect data at other positions (leaf 1 is the one in the most
        nodes); non-Gaussian node noise
    """
    levels = tree_levels(HORIZON)
    mu = gdp_mu(EPS, DELTA)
    sigma = (1.0 if ctx.broken else math.sqrt(levels)) * SENS / mu
    read_at = {2**j for j in range(levels)}

    def node_noise(rng, shape):
        return gaussian_noise(rng, sigma, shape)

    def sampler(world, n, rng):
        tree = TreeAggregator(HORIZON, (1,), n, node_noise, rng)
        first = np.full((n, 1), world * SENS)
        zeros = np.zeros((n, 1))
        stat = np.zeros(n)
        for t in range(1, HORIZON + 1):
            release = tree.add(first if t == 1 else zeros)
            if t in read_at:
                stat += release[:, 0]
        return stat

    return ctx.audit(sampler, epsilon=EPS, delta=DELTA, mu_claim=mu, batch_size=100_000,
                     statistic="sum of releases at t = 2^j (the nodes holding leaf 1)",
                     canary=f"leaf 1 = 0 vs {SENS}, T = {HORIZON}, L = {levels}",
                     basis="Gaussian tree = Gaussian mechanism with sensitivity sqrt(L) Delta",
                     extra={"levels": levels, "node_sigma": sigma})

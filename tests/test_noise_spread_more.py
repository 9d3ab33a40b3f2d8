"""The noise each private component draws has the spread its plan declares, release by
release (issue 34 item 5), for the components not covered by ``test_noise_spread.py``.

Same method as there: on data for which the noise-free part of every release is exactly 0
(zero contexts, zero rewards, zero data), ``sum(z^2) / sigma^2`` over the ``N >= 20,000``
released coordinates of one release (independent across replications) is chi-square with
``N`` degrees of freedom; the two-sided acceptance region at ``p = 1e-9`` is about
``N (1 +/- 6.1 sqrt(2/N))`` (normal approximation: mean ``N``, sd ``sqrt(2N)``; 6.1 sd is the
1e-9 two-sided normal quantile), i.e. +/- 6.1% at ``N = 20,000``, while a cut of the noise by
0.8 moves the statistic by -36%. The exact chi-square quantiles are used. Seeds are fixed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.agents.dp_ucb import DPUCB

P_VALUE = 1e-9
MIN_N = 20_000


def _assert_chi_square(name: str, standardized: np.ndarray) -> float:
    """``standardized``: the noise coordinates over their declared sd, N(0, 1) i.i.d.
    Returns the statistic over N (for the mutation table)."""
    n = standardized.size
    assert n >= MIN_N, f"{name}: only {n} coordinates"
    stat = float(np.sum(standardized ** 2))
    lo, hi = stats.chi2.ppf(P_VALUE / 2, n), stats.chi2.isf(P_VALUE / 2, n)
    assert lo <= stat <= hi, (f"{name}: sum z^2/sigma^2 = {stat:.1f} over {n} coordinates "
                              f"(ratio {stat / n:.3f}), outside [{lo:.1f}, {hi:.1f}]")
    return stat / n


# -- dp-ucb: every release of the Gaussian tree ----------------------------------------------
def _upper_standardized(release: np.ndarray, s: float) -> np.ndarray:
    """The upper triangle of symmetric releases (R, n, n) whose nodes are ``(Z + Z^T)/sqrt 2``
    with ``Z_ij ~ N(0, s^2)``: sd ``s`` off the diagonal, ``s sqrt 2`` on it."""
    n = release.shape[-1]
    iu, ju = np.triu_indices(n)
    return release[:, iu, ju] / np.where(iu == ju, s * math.sqrt(2.0), s)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("auto", marks=pytest.mark.heavy)])
def test_dp_ucb_tree_releases_draw_the_plans_node_scale(backend):
    # zero contexts and rewards: the exact prefix Gram M_t is 0, so the release M_t + N_t
    # (``_release``, the tree's output before the agent post-processes it) is the sum of the
    # popcount(t) independent nodes at the set bits of t: sd s sqrt(popcount t) per entry
    n_arms, dim, horizon, reps = 2, 2, 7, 1400  # n = dK + 1 = 5: 15 coordinates x 1400
    agent = DPUCB(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=1.0, delta=1e-5,
                  backend=backend)
    s = agent._plan.scales["node_sigma"]
    agent.reset(reps, np.random.default_rng(20261129))
    x = np.zeros((reps, dim))
    for t in range(1, horizon + 1):
        agent.update(x, agent.act(x), np.zeros(reps))
        assert agent.t_ == t
        _assert_chi_square(f"dp-ucb release t={t}",
                           _upper_standardized(agent._release, s * math.sqrt(t.bit_count())))

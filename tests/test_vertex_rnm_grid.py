"""DP-POFW's report-noisy-min sampler (privacy/vertex_rnm.py): a zero or non-finite noise
scale is refused (before: ``0/0`` thresholds made the selection a coin over the
negative-sign vertices, neither private nor the argmin), and the guarantee states the
additive slack of sampling on the 2^-53 grid (issue 34, item 8)."""

import math
import re

import numpy as np
import pytest

from dpbandits.optim import DPPOFW
from dpbandits.privacy.vertex_rnm import Spill, fixed_words, select_rows, tv_slack


def _words(R, d, seed=0):
    return np.random.default_rng(seed).bit_generator.random_raw(R * fixed_words(d)).reshape(
        R, fixed_words(d))


@pytest.mark.parametrize("beta", [0.0, -1.0, math.nan, math.inf])
def test_select_rows_refuses_a_degenerate_noise_scale(beta):
    direction = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
    with pytest.raises(ValueError, match=r"beta .* must be positive and finite"):
        select_rows(direction, beta, _words(2, 3), Spill(np.random.default_rng(1)))


def test_select_rows_refuses_a_non_finite_direction():
    direction = np.array([[0.0, 1.0], [np.nan, 0.0]])
    with pytest.raises(ValueError, match="direction must be finite.*row 1"):
        select_rows(direction, 1.0, _words(2, 2), Spill(np.random.default_rng(1)))


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_dp_pofw_step_refuses_a_zero_noise_scale(backend):
    opt = DPPOFW("squared", dim=3, radius=1.0, horizon=20, epsilon=1.0, delta=1e-3,
                 backend=backend).reset(n_reps=2, rng=0)
    opt._state["c"] = 0.0  # what an underflowed schedule constant would give
    with pytest.raises(ValueError, match="beta"):
        opt.step(np.ones((2, 3)), np.zeros(2))


def test_guarantee_states_the_grid_slack():
    d, n, eps = 50, 10_000, 1.0
    opt = DPPOFW("squared", dim=d, radius=1.0, horizon=n, epsilon=eps, delta=1e-4)
    g = opt.privacy
    assert g.certified and "2^-53 grid" in g.caveat
    eta = tv_slack(d, 2.0 * math.sqrt(n) / opt.kappa)
    run = float(re.search(r"holds up to an additive ([0-9.e+-]+)$", g.caveat).group(1))
    assert run == pytest.approx((1.0 + math.exp(eps)) * n * eta, rel=0.05)  # 2 digits shown
    # 2^-53 m (9 m + 2 Delta + 1018), m = 2d: the bound derived in the module docstring
    assert tv_slack(1, 0.0) == 2.0**-53 * 2 * (18 + 1018)
    assert tv_slack(2, 3.0) == 2.0**-53 * 4 * (36 + 6 + 1018)
    gumbel = DPPOFW("squared", dim=d, radius=1.0, horizon=n, epsilon=eps, delta=1e-4,
                    selection="gumbel")
    assert gumbel.privacy.caveat == ""  # inverse-CDF sampling: not this sampler


def test_dp_hdb_carries_its_arms_grid_slack():
    from dpbandits.agents import make_agent

    g = make_agent("dp-hdb", n_arms=2, dim=4, horizon=200, epsilon=1.0, delta=1e-3).privacy
    assert g.certified and "2^-53 grid" in g.caveat and "twice that" in g.caveat

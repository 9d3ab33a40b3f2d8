"""DP-UCB's Wishart noise covers its rows after rounding (issue 34, items 7-8).

Sheffet's Theorem 4.1 needs every row ``v = [x; y]`` (``||x|| <= L``, ``|y| <= B~``, so
``||v||^2 <= L^2 + B~^2`` exactly) within the noise scale ``L~^2``. Before, ``L~ =
sqrt(fl(L^2) + fl(B~^2))`` in floating point missed the exact ``L^2 + B~^2`` by up to 4.4e-16
relative (at the default ``dim = 3``, ``L = sqrt(3)``, ``B~ = 1``, among others), so the
ledger's row bound and the noise scale were below the rows' exact squared norm.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandits.agents import make_agent
from dpbandits.agents.dp_ucb import wishart_row_bound

bounds = st.floats(min_value=1e-75, max_value=1e75, allow_nan=False, allow_infinity=False)


def _covers(lt: float, L: float, B: float) -> bool:
    need = Fraction(L) ** 2 + Fraction(B) ** 2
    return Fraction(lt) ** 2 >= need and Fraction(lt * lt) >= need


@settings(max_examples=300, deadline=None)
@given(bounds, bounds)
def test_row_bound_covers_the_exact_squared_norm(L, B):
    lt = wishart_row_bound(L, B)
    assert _covers(lt, L, B)
    # and it is tight: at most a few ulps above the rounded formula
    assert lt <= math.sqrt(L * L + B * B) * (1 + 8 * 2.0**-52)


def test_dp_ucb_wishart_ledger_and_contribution_bound_hold_exactly():
    agent = make_agent("dp-ucb", n_arms=2, dim=3, horizon=64, noise="wishart", epsilon=1.0)
    L, B = math.sqrt(3), 1.0  # the defaults: context_bound sqrt(dim), reward_bound 1
    assert not _covers(math.sqrt(L**2 + B**2), L, B)  # the case the old formula missed
    assert _covers(agent.l_tilde, L, B)
    leaf = agent.ledger
    leaf = getattr(leaf, "event", leaf)
    need = Fraction(L) ** 2 + Fraction(B) ** 2
    assert Fraction(leaf.row_bound_sq) >= need and leaf.scale >= leaf.row_bound_sq
    # the worst row: x on the sphere of radius L (clipped), y = B; its exact norm <= L~
    agent.reset(1, np.random.default_rng(0))
    x = np.array([[1e300, 1e300, -1e300]])
    (c,) = agent._contributions(x, np.array([1]), np.array([5.0]))
    v = c.values[0]
    assert c.bound == "norm" and sum(Fraction(float(t)) ** 2 for t in v) <= Fraction(
        c.sensitivity) ** 2


@pytest.mark.parametrize("calibration", ["theorem", "accountant"])
def test_dp_ucb_gaussian_node_scale_covers_the_exact_sensitivity(calibration):
    """The Gaussian node's sensitivity ``||vv^T||_F = ||v||^2`` reaches the exact
    ``L^2 + B~^2``; the plan's sensitivity (which the noise scale and the ledger's multiplier
    are relative to) must not fall short of it by the rounding of ``sqrt(L^2 + B~^2)``."""
    agent = make_agent("dp-ucb", n_arms=2, dim=3, horizon=64, noise="gaussian",
                       calibration=calibration, epsilon=1.0, delta=1e-5)
    L, B = math.sqrt(3), 1.0
    need = Fraction(L) ** 2 + Fraction(B) ** 2
    assert Fraction(float(math.sqrt(L**2 + B**2)) ** 2) < need  # the old formula's shortfall
    assert Fraction(agent.plan.sensitivities["node"]) >= need

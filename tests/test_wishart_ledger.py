"""DP-UCB's Wishart tree ledger and its closed-form check (privacy.accounting.wishart):
Sheffet 2015 Thm 4.1 per node, Kairouz-Oh-Viswanath optimal composition over the nodes of a
datum. The agent's claim is recomputed from the ledger and a claim it does not certify is
refused."""

import itertools
import math

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.dp_ucb import tree_depth, wishart_degrees
from dpbandits.privacy.accounting import (
    WishartTreeDpEvent,
    compose,
    delta_of,
    epsilon_of,
    gaussian_event,
)
from dpbandits.privacy.accounting.certification import certified_guarantee
from dpbandits.privacy.accounting.wishart import _delta_rr
from dpbandits.privacy.tree import tree_levels


def _tree(k=2000, dim=3, nodes=10, scale=2.0, bound=2.0):
    return WishartTreeDpEvent(dim=dim, degrees=k, scale=scale, row_bound_sq=bound,
                              nodes_per_datum=nodes)


@pytest.mark.parametrize("n, eps0, eps", [(1, 0.5, 0.2), (3, 0.7, 0.4), (5, 0.3, 0.0),
                                          (4, 0.9, 1.7)])
def test_delta_rr_is_the_hockey_stick_of_n_fold_randomized_response(n, eps0, eps):
    p = math.exp(eps0) / (1 + math.exp(eps0))
    direct = 0.0
    for bits in itertools.product((0, 1), repeat=n):  # 1: the output agrees with the input
        a = math.prod(p if b else 1 - p for b in bits)
        b = math.prod(1 - p if b else p for b in bits)
        direct += max(0.0, a - math.exp(eps) * b)
    assert float(_delta_rr(np.array(eps), np.array(eps0), n)) == pytest.approx(direct, abs=1e-14)


def test_kairouz_oh_viswanath_grid_points_by_hand():
    """At a fixed per-node delta0, epsilon = (N - 2i) eps0 has the theorem's delta_i; the check
    (best delta0) is at least as good, and certifies its own answer."""
    led, n = _tree(), 10
    delta0 = 1e-6
    eps0 = math.sqrt(28 * math.log(4 / delta0) / (2000 - 3))
    i = 3
    d_i = sum(math.comb(n, ell) * (math.exp((n - ell) * eps0) - math.exp((n - 2 * i + ell) * eps0))
              for ell in range(i)) / (1 + math.exp(eps0)) ** n
    delta = 1 - (1 - delta0) ** n * (1 - d_i)
    assert epsilon_of(led, delta) <= (n - 2 * i) * eps0 + 1e-9
    eps = epsilon_of(led, 1e-3)
    assert delta_of(led, eps) <= 1e-3 * (1 + 1e-3)
    assert epsilon_of(led, 1e-3, method="rdp") == eps


def test_nothing_is_certified_outside_theorem_4_1():
    assert epsilon_of(_tree(k=3), 1e-3) == math.inf  # k = p: no privacy term
    assert epsilon_of(_tree(k=30), 1e-3) == math.inf  # eps0 >= 1 for every delta0 < delta
    assert epsilon_of(_tree(scale=1.0, bound=2.0), 1e-3) == math.inf  # noise below the rows
    assert epsilon_of(_tree(), 0.0) == math.inf
    assert delta_of(_tree(k=3), 1.0) == 1.0
    # a larger scale than the rows' bound is Theorem 4.1 on rescaled rows: same answer
    assert epsilon_of(_tree(scale=5.0), 1e-3) == epsilon_of(_tree(), 1e-3)


def test_more_nodes_or_fewer_degrees_cost_more():
    base = epsilon_of(_tree(), 1e-4)
    assert epsilon_of(_tree(nodes=20), 1e-4) > base
    assert epsilon_of(_tree(k=1000), 1e-4) > base
    assert epsilon_of(compose([_tree(nodes=5), _tree(nodes=5)]), 1e-4) == pytest.approx(base)
    with pytest.raises(ValueError, match="mixes"):
        epsilon_of(compose([_tree(), gaussian_event(3.0)]), 1e-4)


def test_agent_ledger_is_recomputed_by_the_harness():
    """Before: the Wishart agent had no ledger (certified epsilon None / NaN)."""
    agent = make_agent("dp-ucb", n_arms=2, dim=50, horizon=10_000, epsilon=1.0,
                       noise="wishart")
    led = agent.ledger
    assert isinstance(led, WishartTreeDpEvent)
    assert (led.degrees, led.dim) == (agent.constants["k"], agent.feature_dim + 1)
    assert led.nodes_per_datum == tree_levels(10_000)
    assert led.scale == led.row_bound_sq == pytest.approx(agent.l_tilde**2)
    cert = certified_guarantee(agent)
    assert cert is not None and 0 < cert["epsilon"] <= 1.0
    assert "Sheffet" in cert["basis"] and "optimal composition" in cert["basis"]
    assert "optimal composition" in agent.privacy.basis
    assert "advanced composition" not in agent.privacy.basis


def test_issue_example_is_certified_by_optimal_not_advanced_composition():
    """T = 1000, delta = 1e-3, epsilon = 25: the per-node split of the paper under advanced
    composition certifies only ~29.75; the ledger's check certifies <= 25."""
    T, delta, eps = 1000, 1e-3, 25.0
    m = tree_depth(T)
    e0 = eps / math.sqrt(8 * m * math.log(2 / delta))
    advanced = math.sqrt(2 * m * math.log(2 / delta)) * e0 + m * e0 * math.expm1(e0)
    assert 29.7 < advanced < 29.9  # the issue quotes 29.75
    agent = make_agent("dp-ucb", n_arms=2, dim=1, horizon=T, epsilon=eps, delta=delta,
                       noise="wishart")
    assert certified_guarantee(agent)["epsilon"] <= eps


def test_claims_are_accepted_iff_certified():
    T, delta = 1000, 1e-3
    # the old rule (per-node eps0 < 1 of the paper's split) refused 26.5; it is certified
    agent = make_agent("dp-ucb", n_arms=2, dim=1, horizon=T, epsilon=26.5, delta=delta,
                       noise="wishart")
    assert certified_guarantee(agent)["epsilon"] <= 26.5
    with pytest.raises(ValueError, match=r"epsilon=40 at horizon=1000, delta=0\.001.*"
                                         r"largest epsilon certified.*about 26\.\d"):
        make_agent("dp-ucb", n_arms=2, dim=1, horizon=T, epsilon=40.0, delta=delta,
                   noise="wishart")


def test_refusal_is_exactly_where_the_ledger_fails():
    T, D, delta = 1000, 2, 1e-3
    for eps in (26.0, 26.7, 26.8, 27.5, 30.0):
        k = wishart_degrees(T, D, eps, delta)
        cert = epsilon_of(_tree(k=k, dim=D + 1, nodes=tree_levels(T)), delta)
        if cert <= eps:
            make_agent("dp-ucb", n_arms=2, dim=1, horizon=T, epsilon=eps, delta=delta,
                       noise="wishart")
        else:
            with pytest.raises(ValueError, match="cannot certify"):
                make_agent("dp-ucb", n_arms=2, dim=1, horizon=T, epsilon=eps, delta=delta,
                           noise="wishart")

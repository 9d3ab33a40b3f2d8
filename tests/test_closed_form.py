"""The closed-form check of generalized-Gaussian ledgers (privacy.accounting.closed_form):
Lemma 2.1 per mechanism from its noise parameters, basic composition over the mechanisms a
datum enters. It recomputes DP-TOFW's l_q claim, and too little noise fails it."""

import dataclasses
import math

import attr
import pytest

from dpbandits.agents import make_agent
from dpbandits.optim import DPTOFW, NoisySFW
from dpbandits.privacy import accounting
from dpbandits.privacy.accounting import (
    GeneralizedGaussianDpEvent,
    GeneralizedGaussianTreeDpEvent,
    delta_of,
    epsilon_of,
)
from dpbandits.privacy.accounting.certification import certified_guarantee
from dpbandits.testing import ContractError, check_privacy


def _tofw(calibration="accountant", **kw):
    base = dict(dim=20, p=1.5, radius=1.0, horizon=3000, epsilon=1.0, delta=1e-5,
                calibration=calibration)
    return DPTOFW("squared", **{**base, **kw})


def _tree(sigma_plus=100.0, kappa=2.0, sensitivity=4.0, nodes=6):
    return GeneralizedGaussianTreeDpEvent(
        sigma_plus=sigma_plus, q_plus=3.0, scale=1.0, kappa=kappa, sensitivity=sensitivity,
        nodes_per_datum=nodes, node_epsilon=0.1, node_delta=1e-6)


def test_lemma_2_1_and_basic_composition_by_hand():
    led, delta = _tree(), 1e-5
    eps0 = math.sqrt(2 * 2.0 * math.log(6 / delta)) * 4.0 / 100.0  # Lemma 2.1 at delta / 6
    assert epsilon_of(led, delta) == pytest.approx(6 * eps0, rel=1e-12)
    assert epsilon_of(led, delta, method="rdp") == epsilon_of(led, delta)
    # the stored budgets are not read: the claim follows the noise
    assert epsilon_of(attr.evolve(led, node_epsilon=1e-9), delta) == epsilon_of(led, delta)
    # delta_of is the inverse
    assert delta_of(led, epsilon_of(led, delta)) == pytest.approx(delta, rel=1e-9)
    # two trees compose basically: delta split over all 12 nodes
    both = accounting.compose([led, led])
    assert epsilon_of(both, delta) == pytest.approx(
        12 * math.sqrt(2 * 2.0 * math.log(12 / delta)) * 4.0 / 100.0, rel=1e-12)
    one = GeneralizedGaussianDpEvent(6.0, 3.0, 1.0, 2.0, 1.0, 1e-3)
    assert epsilon_of(one, 1e-3) == pytest.approx(math.sqrt(2 * 2.0 * math.log(1e3)) / 6.0)


def test_outside_lemma_2_1s_range_nothing_is_certified():
    led = _tree(sigma_plus=5.0)  # per-node epsilon ~ 6 > 1
    assert epsilon_of(led, 1e-5) == math.inf
    assert delta_of(led, 3.0) == 1.0
    assert epsilon_of(_tree(), 0.0) == math.inf
    with pytest.raises(ValueError, match="mixes Lemma 2.1"):
        epsilon_of(accounting.compose([_tree(), accounting.gaussian_event(1.0)]), 1e-5)


@pytest.mark.parametrize("calibration", ["theorem", "accountant"])
@pytest.mark.parametrize("n,eps,delta", [(3000, 1.0, 1e-5), (100, 0.3, 1e-3)])
def test_dp_tofw_lq_claim_is_recomputed_from_its_ledger(calibration, n, eps, delta):
    opt = _tofw(calibration, horizon=n, epsilon=eps, delta=delta)
    assert not opt.gaussian_branch and opt.privacy.certified
    cert = certified_guarantee(opt)
    assert cert["epsilon"] == pytest.approx(eps, rel=1e-9)
    assert cert["epsilon"] <= eps * (1 + 1e-12)
    # 1% less noise than the calibration: the recomputed epsilon exceeds the claim
    thin = attr.evolve(opt.ledger, sigma_plus=0.99 * opt.ledger.sigma_plus)
    assert epsilon_of(thin, delta) > eps * 1.005


class _ThinTOFW(DPTOFW):
    """DP-TOFW with half the node noise of its calibration (its ledger says so too)."""

    def _make_plan(self):
        plan = super()._make_plan()
        scales = {**plan.scales, "sigma_plus": plan.scales["sigma_plus"] / 2}
        return dataclasses.replace(plan, scales=scales, events=attr.evolve(
            plan.ledger, sigma_plus=plan.ledger.sigma_plus / 2))


def test_the_contract_check_catches_too_little_lq_noise():
    kw = dict(dim=20, p=1.5, radius=1.0, horizon=3000, epsilon=1.0, delta=1e-5)
    check_privacy(DPTOFW("squared", **kw))
    with pytest.raises(ContractError, match="above the claimed epsilon"):
        check_privacy(_ThinTOFW("squared", **kw))


def test_dp_hdb_with_dp_tofw_arms_and_noisy_sfw_are_recomputed():
    agent = make_agent("dp-hdb", n_arms=2, dim=20, horizon=500, optimizer="dp-tofw",
                       calibration="accountant")
    cert = certified_guarantee(agent)
    assert cert["epsilon"] == pytest.approx(agent.privacy.epsilon, rel=1e-9)
    sfw = NoisySFW(p=1.5, epsilon=1.0, delta=1e-3)
    assert epsilon_of(sfw.ledger_for(1000, 20), 1e-3) == pytest.approx(1.0, rel=1e-12)

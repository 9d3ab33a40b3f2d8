"""Calibration as data (dpbandits.privacy.plan): every private component's privacy, ledger and
noise come from one frozen plan; its public noise parameters cannot be changed behind the
ledger's back; audits change the plan, not private attributes; one calibration vocabulary."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

from dpbandits.agents import available_agents, make_agent
from dpbandits.optim import DPPOFW, DPTOFW
from dpbandits.privacy.accounting import epsilon_of
from dpbandits.privacy.plan import (
    ALIASES,
    CALIBRATIONS,
    NoisePlan,
    Planned,
    Scales,
    check_calibration,
)

SMALL = dict(n_arms=2, dim=3, horizon=200)
PRIVATE_AGENTS = [n for n in available_agents() if n not in ("greedy", "linucb", "random")]


@pytest.mark.parametrize("name", PRIVATE_AGENTS)
def test_privacy_and_ledger_are_the_plans(name):
    agent = make_agent(name, **SMALL)
    assert isinstance(agent, Planned) and isinstance(agent.plan, NoisePlan)
    assert agent.privacy is agent.plan.guarantee
    assert agent.ledger is agent.plan.ledger
    assert agent.plan.calibration in CALIBRATIONS
    twin = pickle.loads(pickle.dumps(agent))
    assert twin.plan.scales == agent.plan.scales


@pytest.mark.parametrize("name, attribute", [
    ("ldp-linucb", "multiplier"), ("ldp-linucb", "sigmas"), ("adac-oful", "multiplier"),
    ("adac-oful", "sigmas"), ("adac-oful", "eps_trigger"), ("adac-oful", "trigger_sensitivity"),
    ("dp-screened-ls", "multiplier"), ("dp-screened-ls", "sigmas"), ("dp-ucb", "constants"),
    ("dp-moment-ls", "multiplier"), ("dp-moment-ls", "sigmas"),
    ("dp-budget-ls", "multiplier"), ("dp-budget-ls", "sigmas"),
])
def test_public_noise_parameters_cannot_be_changed_silently(name, attribute):
    """Regression (issue 25): ``agent.multiplier = ...`` used to be accepted, and the ledger
    then certified the assigned value while the noise kept the calibrated one."""
    agent = make_agent(name, **SMALL)
    before = (agent.ledger, getattr(agent, attribute))
    value = getattr(agent, attribute)
    changed = ({k: v / 10 for k, v in value.items()} if isinstance(value, dict) else value / 10)
    with pytest.raises(AttributeError, match="noise plan"):
        setattr(agent, attribute, changed)
    assert (agent.ledger, getattr(agent, attribute)) == before


def test_the_ledger_describes_the_noise_drawn():
    """ldp-linucb: the message noise has the plan's standard deviation, and the ledger's
    noise multiplier is the plan's (gram sd = multiplier x the unit sensitivity)."""
    from dpbandits.agents.ldp_linucb import UNIT_SENSITIVITY

    agent = make_agent("ldp-linucb", **SMALL, epsilon=2.0)
    plan = agent.plan
    assert plan.ledger.noise_multiplier == plan.scales["multiplier"]
    assert plan.scales["gram"] == pytest.approx(plan.scales["multiplier"] * UNIT_SENSITIVITY)
    n = 4000
    agent.reset(n, np.random.default_rng(3))
    zero = np.zeros((n, SMALL["dim"]))
    gram, target = agent.message(zero, np.zeros(n, dtype=np.int64), np.zeros(n))
    sd = gram.std()
    # relative standard error of a sample sd is 1/sqrt(2N): 6 of them
    assert abs(sd / plan.scales["gram"] - 1) < 6 / math.sqrt(2 * gram.size)


def test_a_scaled_plan_changes_the_noise_and_drops_the_certificate():
    agent = make_agent("ldp-linucb", **SMALL, epsilon=2.0)
    broken = agent.with_plan(agent.plan.scaled(2.0, "gram", "target"))
    assert broken.plan.scales["gram"] == agent.plan.scales["gram"] / 2
    assert broken.plan.scales["multiplier"] == agent.plan.scales["multiplier"]
    assert broken.ledger is None and not broken.privacy.certified
    assert "divided by 2" in broken.privacy.caveat and broken.plan.altered
    assert agent.privacy.certified and agent.ledger is not None  # the original is unchanged
    n = 4000
    broken.reset(n, np.random.default_rng(3))
    gram, _ = broken.message(np.zeros((n, 3)), np.zeros(n, dtype=np.int64), np.zeros(n))
    assert abs(gram.std() / broken.plan.scales["gram"] - 1) < 6 / math.sqrt(2 * gram.size)


def test_dp_hdb_passes_a_changed_plan_to_its_arm_optimizers():
    agent = make_agent("dp-hdb", **SMALL)
    broken = agent.with_plan(agent.plan.scaled(50.0, "kappa"))
    for opt, own in zip(broken.arm_optimizers, agent.arm_optimizers, strict=True):
        assert opt.kappa == pytest.approx(own.kappa / 50.0)
        assert not opt.privacy.certified
    assert all(opt.privacy.certified for opt in agent.arm_optimizers)


def test_wishart_degrees_can_be_replaced_for_an_audit():
    agent = make_agent("dp-ucb", n_arms=2, dim=1, horizon=4, noise="wishart", epsilon=1.0,
                       delta=1e-5, context_bound=1.0, reward_bound=1.0)
    broken = agent.with_plan(agent.plan.replaced(degrees=3))
    assert broken.constants["k"] == 3 and agent.constants["k"] > 3
    assert broken.constants["rho_min"] == agent.constants["rho_min"]  # derived once


@pytest.mark.parametrize("make", [
    lambda: DPPOFW("squared", dim=3, radius=1.0, horizon=50, epsilon=1.0, delta=1e-3),
    lambda: DPTOFW("squared", dim=3, p=1.5, radius=1.0, horizon=50, epsilon=1.0, delta=1e-3),
])
def test_streaming_optimizers_read_privacy_and_ledger_from_their_plan(make):
    opt = make()
    assert opt.privacy is opt.plan.guarantee and opt.ledger is opt.plan.ledger
    assert epsilon_of(opt.ledger, 1e-3) <= 1.0 * (1 + 1e-6)
    assert opt.calibration_used == opt.plan.calibration == "theorem"


def test_the_plan_is_immutable():
    plan = make_agent("dp-screened-ls", **SMALL).plan
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.calibration = "theorem"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        plan.scales._items = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.scales["screen"] = 0.0  # type: ignore[index]
    with pytest.raises(KeyError, match="the plan has"):
        plan.scales["nope"]


def test_scales_refuse_nan_and_negative_values():
    for bad in (math.nan, -1.0):
        with pytest.raises(ValueError, match="scale 'x'"):
            Scales({"x": bad})
    with pytest.raises(ValueError, match="factor"):
        NoisePlan("theorem", {"x": 1.0}).scaled(0.0)


# -- one vocabulary -----------------------------------------------------------------------
def test_former_values_are_aliases():
    assert ALIASES == {"paper": "theorem", "zcdp": "theorem", "pld": "accountant"}
    assert check_calibration("pld", ("theorem", "accountant")) == "accountant"
    old = make_agent("adac-oful", **SMALL, calibration="pld")
    new = make_agent("adac-oful", **SMALL, calibration="accountant")
    assert old.plan.scales == new.plan.scales and old.plan.calibration == "accountant"
    assert old.get_params()["calibration"] == "pld"  # stored as given (scikit-learn rule)
    paper = make_agent("ldp-linucb", **SMALL, calibration="paper")
    assert paper.plan == make_agent("ldp-linucb", **SMALL, calibration="theorem").plan


@pytest.mark.parametrize("name, allowed", [
    ("dp-ucb", "['theorem', 'accountant']"), ("fliphat", "['theorem', 'accountant', 'authors']"),
    ("ldp-linucb", "['accountant', 'theorem']"), ("adac-oful", "['theorem', 'accountant']"),
    ("dp-hdb", "['theorem', 'accountant']"),
])
def test_an_unknown_calibration_names_the_vocabulary(name, allowed):
    with pytest.raises(ValueError) as err:
        make_agent(name, **SMALL, calibration="exact")
    text = str(err.value)
    assert "calibration" in text and "'exact'" in text and allowed in text
    assert "dp_accounting" in text or "closed form" in text


# -- issue 34, item 3: a plan the component did not derive is flagged -----------------------
def _forged(plan):
    """scales / 4 under the original guarantee and ledger (the review's hand-built plan)."""
    return NoisePlan(plan.calibration, {k: v / 4 for k, v in plan.scales.items()},
                     plan.guarantee, plan.events, plan.sensitivities)


@pytest.mark.parametrize("name", PRIVATE_AGENTS)
def test_with_plan_flags_a_forged_plan(name):
    """Regression: a hand-built NoisePlan kept the original guarantee and ledger, so the
    agent reported itself certified while drawing 4x smaller noise."""
    agent = make_agent(name, **SMALL)
    if not agent.privacy.certified:
        pytest.skip("the authors' calibration is not certified to begin with")
    forged = agent.with_plan(_forged(agent.plan))
    assert not forged.privacy.certified and forged.ledger is None
    assert forged.plan.scales == _forged(agent.plan).scales  # it draws what it was given
    assert "did not derive" in forged.privacy.caveat
    assert agent.with_plan(agent.plan).plan is agent.plan  # its own plan stays certified
    scaled = agent.with_plan(agent.plan.scaled(4.0))  # an audit's broken variant: as before
    assert scaled.plan == agent.plan.scaled(4.0) and not scaled.privacy.certified


def test_dp_hdb_arms_draw_a_forged_plan_flagged():
    agent = make_agent("dp-hdb", **SMALL)
    forged = agent.with_plan(_forged(agent.plan))
    assert not forged.privacy.certified
    for opt, own in zip(forged.arm_optimizers, agent.arm_optimizers, strict=True):
        assert opt.kappa == pytest.approx(own.kappa / 4) and not opt.privacy.certified


def test_batch_with_plan_flags_a_forged_plan():
    from dpbandits.optim import OPTIMIZERS

    opt = OPTIMIZERS["dp-gd"](epsilon=1.0, delta=1e-3, n_iters=20)
    forged = opt.with_plan(_forged).plan_for(64)
    assert not forged.guarantee.certified and forged.ledger is None
    assert forged.scales == _forged(opt.plan_for(64)).scales
    assert opt.with_plan(lambda plan: plan).plan_for(64) == opt.plan_for(64)

"""A declared range of expected rewards: environments that know theirs say so
(``expected_reward_range``), the harness hands it to agents that take a ``reward_range``
unless the caller set one, and dp-moment-ls / dp-budget-ls centre their targets at its
midpoint without touching their noise, plan or ledger."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.agents import agent_class, make_agent
from dpbandits.harness.simulate import build_agent, env_reward_range, make_env, simulate
from dpbandits.testing import check_adversarial_inputs, instance_for_checks

AGENTS = ("dp-moment-ls", "dp-budget-ls")
SIZE = {"n_arms": 3, "dim": 8, "horizon": 400}


def _run(agent, contexts, rewards):
    """Actions of every round and the final released contrasts, after playing the rounds."""
    agent.reset(2, np.random.default_rng(11))
    actions = []
    for x, r in zip(contexts, rewards, strict=True):
        a = agent.act(x)
        actions.append(a)
        agent.update(x, a, r[np.arange(2), a])
    return np.array(actions), agent._c_released.copy()


@pytest.mark.parametrize("name, extra", [("dp-moment-ls", {}),
                                         ("dp-budget-ls", {"fit_snr": 0.0})])
def test_targets_are_the_rewards_minus_the_midpoint(name, extra):
    """Declaring (0, 2) is, bit for bit, the agent without a range fed rewards minus 1: the
    centre is the midpoint, subtracted before the clip, in both phases (dp-budget-ls with
    ``fit_snr = 0`` fits at this size)."""
    rng = np.random.default_rng(5)
    T = SIZE["horizon"]
    contexts = rng.normal(size=(T, 2, SIZE["dim"]))
    rewards = (rng.random((T, 2, SIZE["n_arms"])) < 0.5).astype(float) * 2.0
    declared = make_agent(name, **SIZE, **extra, reward_range=(0.0, 2.0))
    shifted = make_agent(name, **SIZE, **extra)
    acts_d, c_d = _run(declared, contexts, rewards)
    acts_s, c_s = _run(shifted, contexts, rewards - 1.0)
    assert declared.screened_ is not None  # the fitting phase was reached
    assert np.array_equal(acts_d, acts_s) and np.array_equal(c_d, c_s)
    acts_0, _ = _run(make_agent(name, **SIZE, **extra), contexts, rewards)
    assert not np.array_equal(acts_0, acts_d)  # and the centre matters for 0/2 rewards


@pytest.mark.parametrize("name", AGENTS)
def test_the_centre_changes_no_noise_scale_or_ledger(name):
    plain = make_agent(name, **SIZE)
    declared = make_agent(name, **SIZE, reward_range=(-3.0, 7.0))
    assert declared.plan.scales == plain.plan.scales
    assert declared.plan.sensitivities == plain.plan.sensitivities
    assert declared.ledger == plain.ledger


@pytest.mark.parametrize("value, error, text", [
    ((1.0, 0.0), ValueError, r"reward_range must have low < high, got \(1.0, 0.0\)"),
    ((0.0, float("inf")), ValueError, r"reward_range\[1\] must be finite"),
    ((float("nan"), 1.0), ValueError, r"reward_range\[0\] must not be NaN"),
    ((0.0, 1.0, 2.0), TypeError, r"reward_range must be a pair \(low, high\)"),
    ("01", TypeError, r"reward_range must be a pair"),
])
def test_a_bad_range_names_itself(value, error, text):
    with pytest.raises(error, match=text):
        make_agent("dp-budget-ls", **SIZE, reward_range=value)


def test_a_centre_near_the_float_limit_is_finite_and_its_overflow_is_clipped():
    """The midpoint of (-1.7e308, 1.7e308) is 0, not inf - inf; against a centre of 1.5e308
    a reward of -1.7e308 overflows, is clipped to -y_max and counted, and its contribution
    is finite even on a context of infinite norm (the adversarial floats contract: an
    infinite difference over an infinite norm would be NaN)."""
    wide = make_agent("dp-moment-ls", **SIZE, reward_range=(-1.7e308, 1.7e308))
    assert wide._centre == 0.0
    far = make_agent("dp-moment-ls", **SIZE, reward_range=(1.4e308, 1.6e308))
    far.reset(1, np.random.default_rng(0))
    x = np.ones((1, SIZE["dim"]))
    far.update(x, np.array([0]), np.array([-1.7e308]))
    assert far.n_clipped_rewards_[0] == 1
    (c,) = far._contributions(x, np.array([0]), np.array([-1.7e308]))
    assert np.all(np.isfinite(c.values))
    check_adversarial_inputs(instance_for_checks(agent_class("dp-budget-ls")).clone(
        reward_range=(1.4e308, 1.6e308)))


def test_environments_declare_the_range_of_their_expected_rewards():
    assert env_reward_range(make_env("dpbandits/LogisticBandit-v0", 1)) == (0.0, 1.0)
    assert env_reward_range(make_env("dpbandits/IrisBandit-v0", 1)) == (0.0, 1.0)
    assert env_reward_range(make_env("dpbandits/Figure5.1-v0", 1)) is None
    assert env_reward_range(make_env("dpbandits/GLMBandit-v0", 1)) is None
    single = make_env("dpbandits/LogisticBandit-v0", 1).unwrapped
    assert single.expected_reward_range == (0.0, 1.0)


def test_the_harness_hands_the_declared_range_to_agents_that_take_one():
    agent = build_agent("dp-budget-ls", 3, 20, 2000, {}, (0.0, 1.0))
    assert agent.reward_range == (0.0, 1.0)
    mine = build_agent("dp-budget-ls", 3, 20, 2000, {"reward_range": None}, (0.0, 1.0))
    assert mine.reward_range is None  # the caller's choice wins, None included
    assert build_agent("linucb", 3, 20, 2000, {}, (0.0, 1.0)) is not None  # takes none
    env = "dpbandits/LogisticBandit-v0"
    auto = simulate(env, "dp-budget-ls", n_reps=2, seed=4, horizon=600)
    given = simulate(env, "dp-budget-ls", n_reps=2, seed=4, horizon=600,
                     agent_params={"reward_range": (0.0, 1.0)})
    none = simulate(env, "dp-budget-ls", n_reps=2, seed=4, horizon=600,
                    agent_params={"reward_range": None})
    assert np.array_equal(auto.cum_regret, given.cum_regret)
    assert not np.array_equal(auto.cum_regret, none.cum_regret)
    assert auto.config["env_reward_range"] == [0.0, 1.0]
    assert "env_reward_range" not in simulate("dpbandits/GLMBandit-v0", "random",
                                              n_reps=1, horizon=10).config

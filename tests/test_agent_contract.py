"""The base-class contract every agent inherits (dpbandits.agents.base): input checks on
act/update, parameters frozen after construction, reward-link declarations, re-registration."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _agents import RandomArms

from dpbandits.agents import LinkMismatchWarning, make_agent, register_agent
from dpbandits.agents.base import _REGISTRY, _WARNED_LINKS
from dpbandits.harness.simulate import simulate


class ZeroAgent(RandomArms):
    """Always arm 0; records the contexts it was given."""

    def _reset(self, n_reps, rng):
        self.seen = None

    def act(self, contexts):
        self.seen = contexts
        return np.zeros(len(contexts), dtype=np.int64)


class BadArms(ZeroAgent):
    def act(self, contexts):
        return np.full(len(contexts), 5, dtype=np.int64)


def _fresh(cls=ZeroAgent, reps=3):
    return cls(n_arms=2, dim=4, horizon=10).reset(reps, np.random.default_rng(0))


@pytest.mark.parametrize("contexts, text", [
    (np.zeros((3, 5)), "contexts must have shape (3, 4)"),
    (np.full((3, 4), np.nan), "finite"),
    ([["a"] * 4] * 3, "contexts must be array-like"),
])
def test_act_checks_contexts_and_names_the_agent(contexts, text):
    with pytest.raises((ValueError, TypeError)) as info:
        _fresh().act(contexts)
    assert str(info.value).startswith("ZeroAgent.act: ") and text in str(info.value)


def test_act_hands_subclasses_float64_contexts():
    agent = _fresh()
    agent.act(np.ones((3, 4), dtype=np.int32))
    assert agent.seen.dtype == np.float64


def test_act_checks_the_arms_it_returns():
    with pytest.raises(ValueError, match=r"BadArms\.act: returned arms must lie in \[0, 1\]"):
        _fresh(BadArms).act(np.zeros((3, 4)))


@pytest.mark.parametrize("arms, rewards, text", [
    (np.array([0, 1, 2]), np.zeros(3), "arms must lie in [0, 1]"),
    (np.array([0.0, 1.0, 0.0]), np.zeros(3), "arms must be an integer array"),
    (np.array([0, 1, 0]), np.array([0.0, np.inf, 0.0]), "rewards must contain only finite"),
    (np.array([0, 1, 0]), np.zeros(4), "rewards must have shape (3)"),
])
def test_update_checks_and_names_the_argument(arms, rewards, text):
    with pytest.raises(ValueError) as info:
        _fresh().update(np.zeros((3, 4)), arms, rewards)
    assert str(info.value).startswith("ZeroAgent.update: ") and text in str(info.value)


def test_builtin_agent_errors_name_agent():
    agent = make_agent("dp-hdb", n_arms=2, dim=4, horizon=100)
    agent.reset(2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^DPHDB\.act: contexts must have shape \(2, 4\)"):
        agent.act(np.zeros((2, 3)))


def test_privacy_parameters_are_frozen_and_set_params_recalibrates():
    agent = make_agent("dp-ucb", n_arms=2, dim=3, horizon=200, epsilon=1.0)
    sigma = agent.constants
    with pytest.raises(AttributeError, match=r"DPUCB\.epsilon is fixed at construction.*"
                                             r"set_params\(epsilon=\.\.\.\)"):
        agent.epsilon = 0.1
    assert agent.get_params()["epsilon"] == 1.0 and agent.privacy.epsilon == 1.0
    same = agent.set_params(epsilon=0.1)
    assert same is agent and agent.get_params()["epsilon"] == 0.1
    assert agent.privacy.epsilon == 0.1
    # the noise is re-calibrated: a smaller epsilon needs more noise
    fresh = make_agent("dp-ucb", n_arms=2, dim=3, horizon=200, epsilon=0.1)
    assert agent.constants == fresh.constants != sigma
    with pytest.raises(AttributeError):
        agent.epsilon = 1.0  # still frozen after set_params


@pytest.mark.parametrize("name", ["dp-screened-ls", "dp-ucb", "adac-oful", "ldp-linucb",
                                  "dp-hdb", "fliphat"])
def test_horizon_one_needs_an_explicit_delta(name):
    """Issue 25: the default delta = 1/horizon is 1 at horizon = 1; the error says so (it
    said 'delta must be < 1.0, got 1.0' for a delta nobody passed)."""
    with pytest.raises(ValueError, match=r"delta defaults to 1/horizon, which is 1 at "
                                         r"horizon=1.*pass delta in \(0, 1\) explicitly"):
        make_agent(name, n_arms=2, dim=3, horizon=1)


def test_set_params_rejects_unknown_names_and_leaves_agent_unchanged():
    agent = make_agent("dp-hdb", n_arms=2, dim=4, horizon=500)
    with pytest.raises(ValueError, match="no parameter 'epsilno'; did you mean 'epsilon'"):
        agent.set_params(epsilno=0.5)
    with pytest.raises(ValueError, match="epsilon"):
        agent.set_params(epsilon=-1.0)
    assert agent.get_params()["epsilon"] == 1.0 and agent.privacy.epsilon == 1.0


def test_clone_is_independent_and_bit_identical():
    agent = make_agent("dp-hdb", n_arms=2, dim=10, horizon=300)
    other = agent.clone(epsilon=2.0)
    assert other is not agent and other.get_params()["epsilon"] == 2.0
    assert agent.get_params()["epsilon"] == 1.0
    env = "dpbandits/GLMBandit-v0"
    params = {"n_arms": 2, "dim": 10, "horizon": 300}
    a = simulate(env, agent, n_reps=2, seed=3, env_params=params)
    b = simulate(env, agent.clone(), n_reps=2, seed=3, env_params=params)
    np.testing.assert_array_equal(a.cum_regret, b.cum_regret)


def test_subclass_state_is_not_frozen():
    agent = _fresh()
    agent.counter = 1  # not a constructor parameter: a subclass may keep any state
    agent.counter += 1
    assert agent.counter == 2


LOGISTIC = "dpbandits/LogisticBandit-v0"


@pytest.mark.parametrize("name", ["linucb", "dp-ucb", "fliphat", "dp-hdb", "greedy",
                                  "dp-ucb-authors-code"])
def test_linear_agents_warn_once_on_a_logistic_env(name):
    _WARNED_LINKS.clear()  # "once" is per process: forget what earlier tests triggered
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            simulate(LOGISTIC, name, n_reps=1, seed=0, horizon=60)
    mismatch = [w for w in caught if issubclass(w.category, LinkMismatchWarning)]
    assert len(mismatch) == 1
    text = str(mismatch[0].message)
    assert name in text and LOGISTIC in text and "'logistic'" in text


@pytest.mark.parametrize("name, params", [("random", {}), ("dp-hdb", {"link": "logistic"}),
                                          ("greedy", {"link": "logistic"})])
def test_matching_or_link_free_agents_do_not_warn(name, params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinkMismatchWarning)
        simulate(LOGISTIC, name, agent_params=params, n_reps=1, seed=0, horizon=60)


def test_identity_agents_run_silently_on_linear_envs():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinkMismatchWarning)
        simulate("dpbandits/GLMBandit-v0", "linucb", n_reps=1, seed=0, horizon=30)


def test_reregistering_the_same_class_replaces_it_and_another_class_is_refused():
    source = '''
from dpbandits.agents import register_agent
from test_agent_contract import ZeroAgent

@register_agent("contract-test-agent")
class Registered(ZeroAgent):
    pass
'''
    try:
        first, second = {"__name__": "cell"}, {"__name__": "cell"}
        exec(compile(source, "<notebook cell>", "exec"), first)
        exec(compile(source, "<notebook cell>", "exec"), second)  # the same cell re-run
        assert _REGISTRY["contract-test-agent"] is second["Registered"]
        with pytest.raises(ValueError, match="already registered by cell.Registered"):
            @register_agent("contract-test-agent")
            class Other(ZeroAgent):
                pass
    finally:
        _REGISTRY.pop("contract-test-agent", None)


def test_authors_code_warm_up_alternates_arms_like_the_code():
    agent = make_agent("dp-hdb-authors-code", n_arms=2, dim=5, horizon=50, t0=4)
    assert agent.warmup_rounds == 2 * 4 + 1
    rng = np.random.default_rng(1)
    agent.reset(1, np.random.default_rng(0))
    arms = []
    for t in range(agent.warmup_rounds):
        x = rng.normal(size=(1, 5))
        a = agent.act(x)
        arms.append(int(a[0]))
        agent.update(x, a, rng.normal(size=1))
        snapshot_taken = np.any(agent._theta_fs != 0)
        # the snapshot of every arm is taken exactly when the warm-up's last update is done
        assert snapshot_taken == (t == agent.warmup_rounds - 1)
    assert arms == [0, 1, 0, 1, 0, 1, 0, 1, 0]
    np.testing.assert_array_equal(agent._theta_fs, agent._theta)

"""Properties every private agent must have: reproducibility and independent replications."""

import numpy as np
import pytest

from dpbandits.agents import make_agent

AGENTS = [("dp-hdb", {"t0": 5}), ("dp-ucb", {}), ("dp-ucb", {"noise": "wishart",
                                                            "epsilon": 0.5})]


def _play(name, params, contexts, rewards_fn, seed):
    T, R, d = contexts.shape
    agent = make_agent(name, n_arms=2, dim=d, horizon=T, **params)
    agent.reset(R, np.random.default_rng(seed))
    arms = np.empty((T, R), dtype=int)
    for t in range(T):
        arms[t] = agent.act(contexts[t])
        agent.update(contexts[t], arms[t], rewards_fn(t, arms[t]))
    return arms


def _data(seed, T=60, R=3, d=4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, R, d))
    x /= np.abs(x).max(-1, keepdims=True)
    theta = rng.standard_normal((2, d)) / d
    return x, lambda t, a: np.einsum("rd,rd->r", x[t], theta[a])


@pytest.mark.parametrize("name,params", AGENTS)
def test_same_seed_same_results(name, params):
    x, rew = _data(0)
    assert np.array_equal(_play(name, params, x, rew, 7), _play(name, params, x, rew, 7))


@pytest.mark.parametrize("name,params", AGENTS)
def test_replications_do_not_share_data(name, params):
    x, rew = _data(1)
    base = _play(name, params, x, rew, 3)
    x2 = x.copy()
    x2[:, 1] = -x2[:, 1]  # change replication 1's data only
    changed = _play(name, params, x2, rew, 3)
    np.testing.assert_array_equal(base[:, [0, 2]], changed[:, [0, 2]])


def test_replications_get_different_noise():
    # identical data in every replication: private agents must still act differently
    x, rew = _data(2, R=1)
    x = np.repeat(x, 4, axis=1)
    arms = _play("dp-hdb", {"t0": 5, "epsilon": 0.5}, x, rew, 0)
    assert len({tuple(arms[:, r]) for r in range(4)}) > 1

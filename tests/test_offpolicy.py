"""IPS and SNIPS against the known value of a fixed policy on synthetic logs (uniform and
non-uniform logging), their intervals' standard errors and coverage, exact cases, errors, and
evaluating an agent's policy snapshot."""

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.envs import synthetic_log
from dpbandits.harness.simulate import simulate
from dpbandits.offpolicy import ips, policy_actions, snips


def _theta(log, mu):
    return np.linalg.lstsq(log.contexts, (mu - 0.5) / 0.4, rcond=None)[0].T


def _policy(log, mu, flip=False):
    """Arms of the best (or, flipped, the worst) linear policy and its value V_n on the
    logged contexts."""
    theta = _theta(log, mu)
    arms = np.argmax(log.contexts @ (-theta if flip else theta).T, axis=1)
    m = mu[np.arange(log.n_rounds), arms]
    return arms, m


def _exact_sd(m, p, value, snips_=False):
    """Standard deviation of the estimator given the contexts, from the known means ``m`` of
    the target's arms and the probabilities ``p`` that the logging policy played them: each
    term w r (IPS) has variance m/p - m^2, each w (r - V) (SNIPS, delta method) second moment
    (m (1 - m) + (m - V)^2) / p."""
    if snips_:
        return np.sqrt(np.sum((m * (1 - m) + (m - value) ** 2) / p)) / m.size
    return np.sqrt(np.sum(m / p - m ** 2)) / m.size


@pytest.mark.parametrize("logging", ["uniform", "softmax"])
@pytest.mark.parametrize("flip", [False, True])
def test_ips_and_snips_estimate_the_known_value(logging, flip):
    log, mu = synthetic_log(30_000, n_arms=3, dim=5, seed=5, logging=logging)
    arms, m = _policy(log, mu, flip)
    value = m.mean()
    # probability that the logging policy played the target's arm (to know the variance)
    if logging == "uniform":
        p = np.full(log.n_rounds, 1 / 3)
    else:
        z = np.exp((mu - mu.max(axis=1, keepdims=True)) / 0.25)
        p = (z / z.sum(axis=1, keepdims=True))[np.arange(log.n_rounds), arms]
    for est, sd in ((ips(log, arms), _exact_sd(m, p, value)),
                    (snips(log, arms), _exact_sd(m, p, value, snips_=True))):
        assert abs(est.value - value) <= 4 * sd, (est, value, sd)
        assert est.std_error == pytest.approx(sd, rel=0.1)  # n = 30,000: within 10%
        assert est.ci_low < est.value < est.ci_high
        assert est.ci_high - est.ci_low == pytest.approx(2 * 1.959964 * est.std_error)
    if logging == "softmax":  # IPS that took the logging policy for uniform would be caught
        wrong = np.mean((log.actions == arms) * log.rewards * 3)
        assert abs(wrong - value) > 8 * _exact_sd(m, p, value)


@pytest.mark.parametrize("estimator", [ips, snips])
def test_the_95_percent_intervals_cover_the_value_about_95_percent_of_the_time(estimator):
    hits = []
    for seed in range(200):
        log, mu = synthetic_log(2000, n_arms=3, dim=4, seed=100 + seed, logging="softmax",
                                temperature=0.5)
        arms, m = _policy(log, mu)
        est = estimator(log, arms)
        hits.append(est.ci_low <= m.mean() <= est.ci_high)
    # Binomial(200, 0.95): sd 1.5%; 0.89 is 4 sd below, 0.985 excludes intervals twice too wide
    assert 0.89 <= np.mean(hits) <= 0.985


def test_the_logging_policy_itself_is_estimated_by_the_mean_reward():
    log, _ = synthetic_log(5000, n_arms=4, seed=0)
    uniform = np.full((log.n_rounds, 4), 0.25)
    assert ips(log, uniform).value == pytest.approx(log.mean_reward, rel=1e-12)
    assert snips(log, uniform).value == pytest.approx(log.mean_reward, rel=1e-12)
    assert ips(log, log.actions).value == pytest.approx(4 * log.mean_reward, rel=1e-12)
    assert snips(log, log.actions).value == pytest.approx(log.mean_reward, rel=1e-12)
    est = ips(log, uniform, level=0.9)
    assert est.level == 0.9 and est.interval.startswith("CLT")
    assert snips(log, uniform).interval.startswith("delta method")
    assert est.ci_high - est.value == pytest.approx(1.644854 * est.std_error, rel=1e-6)


def test_errors_name_the_argument():
    log, _ = synthetic_log(100, n_arms=3, seed=0)
    with pytest.raises(ValueError, match=r"target must be integer arms of shape \(100,\)"):
        ips(log, np.zeros(99, dtype=int))
    with pytest.raises(ValueError, match=r"target arms must lie in \[0, 2\]"):
        ips(log, np.full(100, 3))
    with pytest.raises(ValueError, match="row 0 sums to 0.75"):
        snips(log, np.full((100, 3), 0.25))
    with pytest.raises(ValueError, match="level must be < 1"):
        ips(log, log.actions, level=1.0)
    never = (log.actions + 1) % 3
    with pytest.raises(ValueError, match="never plays the logged action"):
        snips(log, never)
    assert ips(log, never).value == 0.0 and ips(log, never).matched == 0
    with pytest.raises(TypeError, match="LoggedBandit"):
        ips({"a": 1}, log.actions)


def test_an_agent_snapshot_learnt_on_one_log_is_evaluated_on_another():
    log, mu = synthetic_log(9000, n_arms=3, dim=5, seed=9)
    train, test, mu = log.subset(slice(0, 6000)), log.subset(slice(6000, 9000)), mu[6000:]
    agent = make_agent("linucb", n_arms=3, dim=5, horizon=1500)
    simulate("dpbandits/Replay-v0", agent, n_reps=2, seed=0, horizon=1500,
             env_params={"log": train})
    t_before = agent.t_
    arms = policy_actions(agent, test.contexts)
    assert arms.shape == (2, 3000) and agent.t_ == t_before  # nothing learnt
    np.testing.assert_array_equal(arms[:, 7], agent.act(np.repeat(test.contexts[7:8], 2, 0)))
    for r in range(2):
        est = snips(test, arms[r])
        true = mu[np.arange(3000), arms[r]].mean()
        assert est.ci_low - 0.02 <= true <= est.ci_high + 0.02
        assert est.value > test.mean_reward  # it learnt something from the replay
    with pytest.raises(ValueError, match="reset"):
        policy_actions(make_agent("linucb", n_arms=3, dim=5, horizon=10), test.contexts)


def test_action_probabilities_of_deterministic_and_random_agents_feed_the_estimators():
    from dpbandits.offpolicy import doubly_robust, policy_probabilities

    log, mu = synthetic_log(3000, n_arms=3, dim=5, seed=4)
    train, test = log.subset(slice(0, 1000)), log.subset(slice(1000, None))
    for name in ("linucb", "greedy"):
        agent = make_agent(name, n_arms=3, dim=5, horizon=1000).fit(
            train.contexts, train.actions, train.rewards, rng=0)
        t_before = agent.t_
        probs = agent.action_probabilities(test.contexts)
        arms = agent.predict(test.contexts)
        np.testing.assert_array_equal(probs, np.eye(3)[arms])  # one-hot rows of its choices
        assert agent.t_ == t_before
        # the agent itself is a target: the same estimate as its arms or its probabilities
        assert ips(test, agent).value == ips(test, arms).value == ips(test, probs).value
        assert doubly_robust(test, agent, estimated_rewards=mu[1000:]).value == pytest.approx(
            doubly_robust(test, arms, estimated_rewards=mu[1000:]).value, rel=1e-15)
    rand = make_agent("random", n_arms=3, dim=5, horizon=10).fit(
        train.contexts[:10], train.actions[:10], train.rewards[:10], rng=0)
    np.testing.assert_array_equal(rand.action_probabilities(test.contexts[:5]),
                                  np.full((5, 3), 1 / 3))
    assert snips(test, rand).value == pytest.approx(test.mean_reward, rel=1e-12)
    # dp-screened-ls breaks ties at random: no declared deterministic policy
    sls = make_agent("dp-screened-ls", n_arms=3, dim=5, horizon=10).fit(
        train.contexts[:10], train.actions[:10], train.rewards[:10], rng=0)
    with pytest.raises(NotImplementedError, match="action probabilities are not available"):
        sls.action_probabilities(test.contexts[:5])
    # R replications: (R, n, K), one-hot rows of policy_actions for a deterministic agent
    agent = make_agent("linucb", n_arms=3, dim=5, horizon=300)
    simulate("dpbandits/Replay-v0", agent, n_reps=2, seed=0, horizon=200,
             env_params={"log": train})
    many = policy_probabilities(agent, test.contexts[:50])
    np.testing.assert_array_equal(many, np.eye(3)[policy_actions(agent, test.contexts[:50])])
    with pytest.raises(ValueError, match="needs a one-replication agent"):
        agent.action_probabilities(test.contexts[:5])


def test_the_estimators_old_import_path_warns_and_gives_the_same_objects():
    import dpbandits.datasets as datasets
    from dpbandits import offpolicy

    for name in ("ips", "snips", "policy_actions", "PolicyEstimate"):
        with pytest.warns(DeprecationWarning, match=f"dpbandits.datasets.{name} is deprecated"):
            assert getattr(datasets, name) is getattr(offpolicy, name)
        assert name not in datasets.__all__
    with pytest.raises(AttributeError):
        datasets.no_such_name  # noqa: B018

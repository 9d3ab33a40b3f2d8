import math

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.dp_hdb import default_t0
from dpbandits.harness.simulate import simulate

ENV = "dpbandits/GLMBandit-v0"


def _x(rng, reps, d):
    x = rng.standard_normal((reps, d))
    return x / np.abs(x).max(1, keepdims=True)


def test_forced_sampling_order_is_fixed_whatever_the_data():
    kw = dict(n_arms=3, dim=4, horizon=40, t0=5, epsilon=1.0)
    runs = []
    for seed in (0, 1):
        agent = make_agent("dp-hdb", **kw)
        agent.reset(2, np.random.default_rng(seed))
        rng = np.random.default_rng(100 + seed)
        arms = []
        for _ in range(15):
            x = _x(rng, 2, 4)
            a = agent.act(x)
            agent.update(x, a, rng.uniform(-1, 1, 2))
            arms.append(a)
        runs.append(np.stack(arms))
    expected = np.repeat(np.arange(3), 5)[:, None].repeat(2, axis=1)
    assert np.array_equal(runs[0], expected) and np.array_equal(runs[1], expected)


def test_each_arm_advances_once_per_round_and_unselected_gradient_is_zero():
    agent = make_agent("dp-hdb", n_arms=2, dim=3, horizon=30, t0=4, epsilon=2.0)
    agent.reset(3, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    opts = agent.arm_optimizers
    for t in range(30):
        x = _x(rng, 3, 3)
        a = agent.act(x)
        steps_before = [o.t for o in opts]
        sums_before = [o._state["sum"].copy() for o in opts]
        agent.update(x, a, rng.uniform(-1, 1, 3))
        steps_after = [o.t for o in opts]
        if t < 8:  # forced sampling: only the forced arm moves
            forced = t // 4
            assert [s1 - s0 for s0, s1 in zip(steps_before, steps_after, strict=True)] == [
                int(k == forced) for k in range(2)]
        else:
            assert all(s1 - s0 == 1 for s0, s1 in zip(steps_before, steps_after, strict=True))
            for k, o in enumerate(opts):
                unselected = a != k
                # the synthetic sample (0, zeta(0)) adds an exactly-zero gradient increment
                assert np.array_equal(o._state["sum"][unselected], sums_before[k][unselected])
    assert all(o.t == agent.arm_horizon for o in opts)
    assert agent.arm_horizon == 4 + 30 - 2 * 4


def test_forced_sampling_estimators_are_kept():
    agent = make_agent("dp-hdb", n_arms=2, dim=3, horizon=20, t0=3, epsilon=math.inf)
    agent.reset(1, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for t in range(20):
        x = _x(rng, 1, 3)
        a = agent.act(x)
        agent.update(x, a, np.array([x[0, 0]]))
        if t == 5:
            fs = agent.forced_sampling_estimates
    assert np.array_equal(agent.forced_sampling_estimates, fs)
    assert not np.array_equal(agent.estimates, fs)


def test_non_private_twin_learns_sublinearly():
    res = simulate(ENV, "dp-hdb", n_reps=10, seed=0, agent_params={"epsilon": math.inf},
                   env_params={"n_arms": 2, "dim": 10, "horizon": 4000})
    rnd = simulate(ENV, "random", n_reps=10, seed=0,
                   env_params={"n_arms": 2, "dim": 10, "horizon": 4000})
    cum = res.cum_regret.mean(0)
    # slope of log cumulative regret vs log t over the second half of the horizon
    t = np.arange(1, 4001)
    sl = np.polyfit(np.log(t[2000:]), np.log(cum[2000:]), 1)[0]
    assert sl < 0.8
    assert cum[-1] < 0.25 * rnd.cum_regret.mean(0)[-1]


@pytest.mark.heavy
def test_regret_decreases_as_epsilon_grows():
    env = {"n_arms": 2, "dim": 10, "horizon": 3000}
    finals = []
    for eps in (0.5, 50.0, math.inf):
        res = simulate(ENV, "dp-hdb", n_reps=12, seed=4,
                       agent_params={"epsilon": eps, "t0": 20}, env_params=env)
        finals.append(res.cum_regret[:, -1])
    means = [f.mean() for f in finals]
    ses = [f.std(ddof=1) / math.sqrt(len(f)) for f in finals]
    for i in range(2):  # each step down in regret, allowing 2 standard errors of slack
        assert means[i] + 2 * math.hypot(ses[i], ses[i + 1]) > means[i + 1]
    assert means[0] > means[2]


def test_privacy_split_and_ledger_certify_the_claim():
    from dpbandits.privacy.accounting import epsilon_of

    T = 500
    agent = make_agent("dp-hdb", n_arms=2, dim=5, horizon=T, epsilon=1.0)
    g = agent.privacy
    assert (g.epsilon, g.delta, g.notion, g.certified) == (1.0, 1.0 / T, "JDP", True)
    # each arm alone is certified within half the budget, and the agent's ledger composes
    # the two arms a changed user reaches: more than one arm alone, at most the claim
    arm = agent.arm_optimizers[0]
    assert epsilon_of(arm.ledger, g.delta / 2) <= g.epsilon / 2
    assert epsilon_of(arm.ledger, g.delta) < epsilon_of(agent.ledger, g.delta) <= g.epsilon
    paper = make_agent("dp-hdb", n_arms=2, dim=5, horizon=T, epsilon=1.0,
                       privacy_split="paper")
    assert not paper.privacy.certified and "two arms" in paper.privacy.caveat
    # the paper's per-arm calibration composed over two arms exceeds the claim
    assert epsilon_of(paper.ledger, g.delta) > epsilon_of(agent.ledger, g.delta)
    assert make_agent("dp-hdb", n_arms=2, dim=5, horizon=T, epsilon=math.inf).ledger is None


def test_default_t0_is_the_authors_formula():
    assert default_t0(50, 10_000, 1.0) == int(math.log(5e5) * math.log(1e4))
    assert default_t0(50, 10_000, math.inf) == 1
    assert default_t0(50, 10_000, 0.1, n_arms=2) == 2500  # capped at T / (2K)


def test_a_changed_user_reaches_at_most_two_arms(monkeypatch):
    """Proof B.1's premise, which makes the default split (epsilon/2 per arm) necessary and
    sufficient: replacing the user of round t changes the round-t input of the arm pulled in
    either world and of no other arm (the others take the data-free synthetic sample). The
    arms' inputs are read off the one call that feeds them all, ``ArmSteps.step``, whose
    contract (arm k takes (x, y) where arms == k, else (0, y_synth)) is tested in
    test_vertex_rnm."""
    from dpbandits.optim.streaming.dp_pofw import ArmSteps

    K, d, R, T, t0, changed = 3, 4, 40, 40, 3, 20
    rng = np.random.default_rng(2)
    xs, ys = _x(rng, R * T, d).reshape(T, R, d), rng.uniform(-1, 1, (T, R))
    inputs = []
    for world in (0, 1):
        agent = make_agent("dp-hdb", n_arms=K, dim=d, horizon=T, t0=t0, epsilon=1.0)
        agent.reset(R, np.random.default_rng(0))
        seen = [[] for _ in range(K)]

        def spy(self, x, y, arms, y_synth, out, step=ArmSteps.step, seen=seen):
            for k, log in enumerate(seen):  # the sample arm k's optimizer takes
                mask = arms == k
                log.append((np.where(mask[:, None], x, 0.0), np.where(mask, y, y_synth)))
            return step(self, x, y, arms, y_synth, out)

        monkeypatch.setattr(ArmSteps, "step", spy)
        for t in range(changed + 1):
            x, y = xs[t], ys[t]
            if world == 1 and t == changed:
                x, y = -x, -y  # the neighbouring user: another context and reward
            agent.update(x, agent.act(x), y)
        inputs.append([log[-1] for log in seen])  # every arm's input at the changed round
    differs = np.stack([np.any(a[0] != b[0], axis=1) | (a[1] != b[1])
                        for a, b in zip(*inputs, strict=True)], axis=1)  # (R, K)
    assert differs.sum(axis=1).max() == 2  # two arms in some replications, never three
    assert differs.sum(axis=1).min() >= 1


def test_dp_tofw_arms_run_at_half_the_budget_on_the_agents_samples():
    """With ``optimizer="dp-tofw"`` arm 0's forced-sampling estimate is exactly that of a
    DP-TOFW at (epsilon/2, delta/2) with the given ``p``, fed the same samples from the
    first of the agent's per-arm generators."""
    from dpbandits.optim import DPTOFW

    T, t0, d, R = 50, 3, 4, 2
    agent = make_agent("dp-hdb", n_arms=2, dim=d, horizon=T, t0=t0, epsilon=1.0,
                       optimizer="dp-tofw", optimizer_params={"p": 1.3})
    agent.reset(R, np.random.default_rng(0))
    arm0 = DPTOFW("squared", dim=d, p=1.3, radius=1.0, horizon=t0 + T - 2 * t0, epsilon=0.5,
                  delta=0.5 / T).reset(R, np.random.default_rng(0).spawn(2)[0])
    rng = np.random.default_rng(1)
    for _ in range(t0):
        x, y = _x(rng, R, d), rng.uniform(-1, 1, R)
        agent.update(x, agent.act(x), y)
        expected = arm0.step(x, y)
    np.testing.assert_array_equal(agent.forced_sampling_estimates[:, 0], expected)
    assert np.any(expected != 0)


@pytest.mark.parametrize("kw,match", [
    (dict(n_arms=1), "n_arms"), (dict(dim=0), "dim"), (dict(epsilon=0.0), "epsilon"),
    (dict(delta=1.5), "delta"), (dict(t0=30), "t0"), (dict(radius=0.0), "radius"),
    (dict(link="probit"), "link"), (dict(calibration="x"), "calibration"),
    (dict(optimizer="sgd"), "optimizer"), (dict(privacy_split="x"), "privacy_split"),
])
def test_bad_configuration(kw, match):
    base = dict(n_arms=2, dim=3, horizon=50)
    with pytest.raises((ValueError, TypeError), match=match):
        make_agent("dp-hdb", **{**base, **kw})


def test_bad_round_input():
    # bad contexts and arms: every registered agent is checked in test_contracts.py
    agent = make_agent("dp-hdb", n_arms=2, dim=3, horizon=50, t0=2)
    agent.reset(2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rewards"):
        agent.update(np.zeros((2, 3)), np.zeros(2, dtype=int), np.zeros(3))
    with pytest.raises(ValueError, match="forced sampling"):
        agent.update(np.zeros((2, 3)), np.ones(2, dtype=int), np.zeros(2))

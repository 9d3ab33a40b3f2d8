import math

import numpy as np
import pytest

from dpbandits.agents import make_agent


def _stream(rng, n_reps, horizon, dim, n_arms, noise=0.05):
    theta = rng.standard_normal((n_reps, n_arms, dim))
    theta /= np.abs(theta).sum(-1, keepdims=True)
    x = rng.standard_normal((horizon, n_reps, dim))
    x /= np.abs(x).max(-1, keepdims=True)
    eps = noise * rng.standard_normal((horizon, n_reps, n_arms))
    return theta, x, eps


def _run(agent, theta, x, eps, rng):
    horizon, n_reps, _ = x.shape
    agent.reset(n_reps, rng)
    regret = np.zeros((horizon, n_reps))
    arms_hist = np.zeros((horizon, n_reps), dtype=int)
    for t in range(horizon):
        means = np.einsum("rkd,rd->rk", theta, x[t])
        a = agent.act(x[t])
        rows = np.arange(n_reps)
        agent.update(x[t], a, means[rows, a] + eps[t, rows, a])
        regret[t] = means.max(1) - means[rows, a]
        arms_hist[t] = a
    return regret, arms_hist


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_linucb_matches_dense_oful_reference(backend):
    rng = np.random.default_rng(0)
    dim, n_arms, horizon, lam, sigma, s_bound = 4, 3, 60, 0.5, 0.1, 2.0
    theta, x, eps = _stream(rng, 1, horizon, dim, n_arms)
    agent = make_agent("linucb", n_arms=n_arms, dim=dim, horizon=horizon, reg=lam,
                       noise_std=sigma, theta_bound=s_bound, backend=backend)
    agent.reset(1, np.random.default_rng(1))
    alpha = 1.0 / horizon
    grams = [lam * np.eye(dim) for _ in range(n_arms)]
    bs = [np.zeros(dim) for _ in range(n_arms)]
    for t in range(horizon):
        xt = x[t, 0]
        idx = []
        for i in range(n_arms):
            th = np.linalg.solve(grams[i], bs[i])
            beta = sigma * math.sqrt(2 * math.log(1 / alpha) + np.linalg.slogdet(grams[i])[1]
                                     - dim * math.log(lam)) + s_bound * math.sqrt(lam)
            idx.append(xt @ th + beta * math.sqrt(xt @ np.linalg.solve(grams[i], xt)))
        np.testing.assert_allclose(agent.indices(x[t]), np.array([idx]), rtol=1e-9, atol=1e-12)
        a_ref = int(np.argmax(idx))
        a = agent.act(x[t])
        assert a[0] == a_ref
        r = theta[0, a_ref] @ xt + eps[t, 0, a_ref]
        agent.update(x[t], a, np.array([r]))
        grams[a_ref] += np.outer(xt, xt)
        bs[a_ref] += r * xt


@pytest.mark.parametrize("name", ["linucb", "greedy"])
def test_nonprivate_agents_learn_far_below_random(name):
    rng = np.random.default_rng(3)
    dim, n_arms, horizon, n_reps = 5, 2, 1500, 20
    theta, x, eps = _stream(rng, n_reps, horizon, dim, n_arms)
    kw = dict(n_arms=n_arms, dim=dim, horizon=horizon)
    reg_learn, _ = _run(make_agent(name, **kw), theta, x, eps, np.random.default_rng(4))
    reg_rand, _ = _run(make_agent("random", **kw), theta, x, eps, np.random.default_rng(4))
    cum_learn = reg_learn.sum(0).mean()
    cum_rand = reg_rand.sum(0).mean()
    assert cum_learn < 0.2 * cum_rand
    # sublinear: the second half of the horizon costs less than the first half
    half = horizon // 2
    assert reg_learn[half:].sum() < 0.6 * reg_learn[:half].sum()


def test_random_agent_is_uniform_and_reproducible():
    n_reps, horizon = 200, 50
    agent = make_agent("random", n_arms=4, dim=2, horizon=horizon)
    x = np.zeros((n_reps, 2))
    agent.reset(n_reps, np.random.default_rng(7))
    arms = np.stack([agent.act(x) for _ in range(horizon)])
    counts = np.bincount(arms.ravel(), minlength=4)
    n = arms.size
    # each count ~ Binomial(n, 1/4): 5 standard deviations
    assert np.all(np.abs(counts - n / 4) < 5 * math.sqrt(n * 0.25 * 0.75))
    agent.reset(n_reps, np.random.default_rng(7))
    again = np.stack([agent.act(x) for _ in range(horizon)])
    assert np.array_equal(arms, again)


def test_greedy_logistic_learns():
    rng = np.random.default_rng(11)
    dim, n_arms, horizon, n_reps = 3, 2, 2000, 10
    theta = 3 * rng.standard_normal((n_reps, n_arms, dim))
    x = rng.standard_normal((horizon, n_reps, dim))
    agent = make_agent("greedy", n_arms=n_arms, dim=dim, horizon=horizon, link="logistic")
    agent.reset(n_reps, np.random.default_rng(0))
    regret = np.zeros(horizon)
    rows = np.arange(n_reps)
    for t in range(horizon):
        p = 1 / (1 + np.exp(-np.einsum("rkd,rd->rk", theta, x[t])))
        a = agent.act(x[t])
        y = (rng.random(n_reps) < p[rows, a]).astype(float)
        agent.update(x[t], a, y)
        regret[t] = (p.max(1) - p[rows, a]).mean()
    # after learning, per-round regret is far below a random policy's
    assert regret[-500:].mean() < 0.3 * regret[: n_arms].mean() + 0.02


def test_agent_bad_input():
    with pytest.raises(ValueError, match="n_arms"):
        make_agent("linucb", n_arms=1, dim=2, horizon=10)
    with pytest.raises(ValueError, match="dim"):
        make_agent("linucb", n_arms=2, dim=0, horizon=10)
    with pytest.raises(ValueError, match="reg"):
        make_agent("linucb", n_arms=2, dim=2, horizon=10, reg=-1.0)
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("nope", n_arms=2, dim=2, horizon=10)
    agent = make_agent("linucb", n_arms=2, dim=3, horizon=2)
    with pytest.raises(RuntimeError, match="reset"):
        agent.act(np.zeros((1, 3)))
    agent.reset(2, np.random.default_rng(0))
    # bad contexts and arms: every registered agent is checked in test_contracts.py
    with pytest.raises(ValueError, match="rewards"):
        agent.update(np.zeros((2, 3)), np.array([0, 1]), np.zeros(3))
    agent.update(np.zeros((2, 3)), np.array([0, 1]), np.zeros(2))
    agent.update(np.zeros((2, 3)), np.array([0, 1]), np.zeros(2))
    with pytest.raises(ValueError, match="horizon"):
        agent.update(np.zeros((2, 3)), np.array([0, 1]), np.zeros(2))


def test_linucb_kernels_agree_with_numpy_and_survive_repeated_contexts_and_pickling():
    """The packed-inverse kernels give the numpy path's indices (up to rounding) over a long
    run, including updates that repeat a context without an index step in between (the
    cached V^-1 x must not be reused after its arm changed), and continue identically after
    pickling mid-run."""
    import pickle

    rng = np.random.default_rng(3)
    R, d, K, T = 3, 5, 3, 300
    x = rng.standard_normal((T, R, d))
    ys = rng.standard_normal((T, R))
    agents = [make_agent("linucb", n_arms=K, dim=d, horizon=T + 10, reg=0.7, backend=b)
              for b in ("numba", "numpy")]
    for ag in agents:
        ag.reset(R, np.random.default_rng(0))
    for t in range(T):
        if t == T // 2:
            agents.append(pickle.loads(pickle.dumps(agents[0])))
        idx = [ag.indices(x[t]) for ag in agents]
        np.testing.assert_allclose(idx[0], idx[1], rtol=1e-8, atol=1e-10)
        if len(idx) == 3:
            assert np.array_equal(idx[0], idx[2])
        a = np.argmax(idx[1], axis=1)
        for ag in agents:
            ag.update(x[t], a, ys[t])
            if t % 50 == 0:  # the same context and arm again, no index step in between
                ag.update(x[t], a, ys[t])

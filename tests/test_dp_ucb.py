import math

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.dp_ucb import (
    gaussian_bounds,
    gaussian_sigma_accountant,
    gaussian_sigma_theorem,
    symmetric_gaussian_noise,
    tree_depth,
    wishart_degrees,
    wishart_noise,
)


def _contexts(rng, n, d, reps=1):
    x = rng.standard_normal((n, reps, d))
    return x / np.abs(x).max(-1, keepdims=True)


def test_noise_off_equals_dense_oful_on_embedded_features():
    rng = np.random.default_rng(0)
    d, K, T, lam, sigma, S = 3, 2, 40, 0.7, 0.1, 1.3
    alpha = 1.0 / T
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, epsilon=math.inf, reg=lam,
                       noise_std=sigma, theta_bound=S, reward_bound=10.0)
    agent.reset(1, np.random.default_rng(1))
    theta_star = rng.standard_normal(K * d) / 3
    xs = _contexts(rng, T, d)
    D = K * d
    G, u = np.zeros((D, D)), np.zeros(D)
    for t in range(T):
        x = xs[t, 0]
        V = G + lam * np.eye(D)
        th = np.linalg.solve(V, u)
        beta = sigma * math.sqrt(2 * math.log(2 / alpha) + np.linalg.slogdet(V)[1]
                                 - D * math.log(lam)) + S * math.sqrt(lam)
        idx = []
        for i in range(K):
            phi = np.zeros(D)
            phi[i * d:(i + 1) * d] = x
            idx.append(phi @ th + beta * math.sqrt(phi @ np.linalg.solve(V, phi)))
        got = agent.indices(xs[t])
        np.testing.assert_allclose(got[0], idx, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(agent._last_beta, [beta], rtol=1e-12)
        a = int(agent.act(xs[t])[0])
        assert a == int(np.argmax(idx))
        phi = np.zeros(D)
        phi[a * d:(a + 1) * d] = x
        y = phi @ theta_star + 0.1 * rng.standard_normal()
        agent.update(xs[t], np.array([a]), np.array([y]))
        G += np.outer(phi, phi)
        u += y * phi


def test_formulas_match_the_paper():
    T, D, eps, delta, alpha, lt = 10_000, 100, 1.0, 1e-4, 1e-4, math.sqrt(51.0)
    m = 1 + math.ceil(math.log2(T))
    assert tree_depth(T) == m == 15
    assert [tree_depth(n) for n in (1, 2, 3, 4, 5, 1024, 1025)] == [1, 2, 3, 3, 4, 11, 12]
    s = gaussian_sigma_theorem(T, eps, delta, lt)
    assert s**2 == pytest.approx(16 * m * lt**4 * math.log(4 / delta) ** 2 / eps**2)
    b = gaussian_bounds(T, D, s, alpha)
    ups_a = s * math.sqrt(2 * m) * (4 * math.sqrt(D) + 2 * math.log(2 * T / alpha))
    ups_b = (math.sqrt(32) * m * lt**2 * math.log(4 / delta)
             * (4 * math.sqrt(D) + 2 * math.log(2 * T / alpha)) / eps)
    assert b["upsilon"] == pytest.approx(ups_a) == pytest.approx(ups_b)
    assert (b["rho_min"], b["rho_max"], b["shift"]) == pytest.approx(
        (ups_a, 3 * ups_a, 2 * ups_a))
    assert b["gamma"] == pytest.approx(
        math.sqrt(1 / ups_a) * math.sqrt(m) * s * (math.sqrt(D)
                                                   + math.sqrt(2 * math.log(2 * T / alpha))))
    k = wishart_degrees(T, D, eps, delta)
    assert k == D + 1 + math.ceil(224 * m * math.log(8 * m / delta) * math.log(2 / delta))


def test_accountant_calibration_certifies_and_is_tighter():
    from dpbandits.privacy.accounting import epsilon_of, gaussian_event

    T, eps, delta, lt = 10_000, 1.0, 1e-4, math.sqrt(51.0)
    s_acc = gaussian_sigma_accountant(T, eps, delta, lt)
    s_thm = gaussian_sigma_theorem(T, eps, delta, lt)
    assert s_acc < s_thm
    agent = make_agent("dp-ucb", n_arms=2, dim=50, horizon=T, epsilon=eps, delta=delta,
                       calibration="accountant")
    # recompute independently: 14 levels, effective sensitivity L~^2
    levels = T.bit_length()
    assert epsilon_of(gaussian_event(s_acc / (math.sqrt(levels) * lt**2)), delta) <= eps * 1.001
    assert epsilon_of(agent.ledger, delta) <= eps * 1.001


def test_effective_sensitivity_of_symmetrized_gram_update():
    rng = np.random.default_rng(5)
    lt = 2.0
    v = rng.standard_normal((2000, 6))
    w = rng.standard_normal((2000, 6))
    v *= lt / np.linalg.norm(v, axis=1, keepdims=True)
    w *= lt / np.linalg.norm(w, axis=1, keepdims=True) * rng.random((2000, 1))
    diff = v[:, :, None] * v[:, None, :] - w[:, :, None] * w[:, None, :]
    assert np.max(np.linalg.norm(diff, axis=(1, 2)) / math.sqrt(2)) <= lt**2 * (1 + 1e-12)
    # nearly attained by orthogonal unit vectors
    e1, e2 = np.eye(6)[0] * lt, np.eye(6)[1] * lt
    d = np.outer(e1, e1) - np.outer(e2, e2)
    assert np.linalg.norm(d) / math.sqrt(2) == pytest.approx(lt**2)


def test_symmetrized_node_noise_moments():
    rng = np.random.default_rng(2)
    s, n = 1.5, 40_000
    z = symmetric_gaussian_noise(s)(rng, (n, 4, 4))
    assert np.array_equal(z, np.swapaxes(z, 1, 2))
    # sample variance of n normals has relative std sqrt(2/n) ~ 0.007; allow 5 sigma
    tol = 5 * math.sqrt(2 / n)
    assert z[:, 0, 1].var() / s**2 == pytest.approx(1.0, abs=tol)
    assert z[:, 2, 2].var() / (2 * s**2) == pytest.approx(1.0, abs=tol)


def test_release_minus_noise_is_exact_gram_prefix_with_single_shift():
    d, K, T = 2, 2, 13
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, epsilon=1.0, delta=0.01)
    agent.reset(2, np.random.default_rng(0))
    recorded = []
    inner = agent._tree.node_noise

    def spy(rng, shape):
        z = inner(rng, shape)
        recorded.append(z)
        return z

    agent._tree.node_noise = spy
    rng = np.random.default_rng(1)
    D = K * d
    M = np.zeros((2, D + 1, D + 1))
    for t in range(1, T + 1):
        x = _contexts(rng, 1, d, reps=2)[0]
        arms = rng.integers(0, K, 2)
        y = rng.uniform(-1, 1, 2)
        agent.update(x, arms, y)
        v = np.zeros((2, D + 1))
        for r in range(2):
            v[r, arms[r] * d:(arms[r] + 1) * d] = x[r]
        v[:, D] = y
        M += v[:, :, None] * v[:, None, :]
        # the binary mechanism sums the noise of the nodes at the set bits of t
        nodes = [((t >> j) << j) for j in range(t.bit_length()) if (t >> j) & 1]
        noise = sum(recorded[n - 1] for n in nodes)
        released = agent._release
        np.testing.assert_allclose(released - noise, M, atol=1e-8)
        assert np.array_equal(released, np.swapaxes(released, 1, 2))
        # V = top-left block + 2 Upsilon I exactly once
        shift = agent.constants["shift"]
        np.testing.assert_allclose(agent._V, released[:, :D, :D] + shift * np.eye(D),
                                   rtol=1e-12)
        np.testing.assert_allclose(agent._u, released[:, :D, D])
    # one node drawn per step (no fresh per-round noise, no T pre-drawn matrices)
    assert len(recorded) == T
    assert agent._tree._exact.shape[0] <= tree_depth(T)


def test_noise_block_plus_shift_dominates_upsilon_at_figure_size():
    T, D = 10_000, 100
    agent = make_agent("dp-ucb", n_arms=2, dim=50, horizon=T, epsilon=1.0)
    c = agent.constants
    rng = np.random.default_rng(3)
    node = symmetric_gaussian_noise(c["node_sigma"])
    draws = 60
    total = np.zeros((draws, D + 1, D + 1))
    for _ in range(c["m"]):  # worst case: m nodes in one release
        total += node(rng, (draws, D + 1, D + 1))
    eig = np.linalg.eigvalsh(total[:, :D, :D] + c["shift"] * np.eye(D))
    assert eig.min() >= c["rho_min"]
    assert eig.max() <= c["rho_max"]


def test_wishart_noise_mean_and_topup_to_m_nodes():
    rng = np.random.default_rng(4)
    w = wishart_noise(rng, (4000,), 3, 7, 2.0)
    assert np.all(np.linalg.eigvalsh(w) > 0)
    # E W = df * scale * I; entry (0,0)/scale ~ chi2(7): std sqrt(14)
    tol = 5 * math.sqrt(2 * 7) * 2.0 / math.sqrt(4000)
    np.testing.assert_allclose(w.mean(0), 14 * np.eye(3), atol=tol)
    agent = make_agent("dp-ucb", n_arms=2, dim=2, horizon=64, epsilon=0.5, delta=1e-3,
                       noise="wishart")
    agent.reset(1, np.random.default_rng(0))
    c = agent.constants
    x = np.array([[0.5, -1.0]])
    for _ in range(5):
        agent.update(x, np.array([0]), np.array([0.3]))
    # all the noise is PSD Wishart with m*k degrees in total: V + c I - data >= 0
    lam = np.linalg.eigvalsh(agent._V - c["shift"] * np.eye(4))
    assert lam.min() > 0
    assert c["rho_min"] > 0 and c["rho_max"] > c["rho_min"]


def test_bonus_uses_square_root_not_squared_norm():
    agent = make_agent("dp-ucb", n_arms=2, dim=2, horizon=10, epsilon=math.inf, reg=4.0)
    agent.reset(1, np.random.default_rng(0))
    x = np.array([[1.0, 0.0]])
    idx = agent.indices(x)
    beta = agent._last_beta[0]
    # V = 4 I: x^T V^-1 x = 1/4, sqrt = 1/2 (the squared-norm bug would give 1/4)
    np.testing.assert_allclose(idx[0], [beta * 0.5, beta * 0.5])


def test_privacy_statement_and_bad_input():
    g = make_agent("dp-ucb", n_arms=2, dim=3, horizon=100, epsilon=1.0).privacy
    assert g.notion == "JDP" and g.epsilon == 1.0 and g.delta == 0.01 and "Claim 7" in g.basis
    assert not make_agent("dp-ucb", n_arms=2, dim=3, horizon=100,
                          epsilon=math.inf).privacy.is_private
    with pytest.raises(ValueError, match="epsilon"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=100, epsilon=0.0)
    with pytest.raises(ValueError, match="delta"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=100, delta=1.0)
    with pytest.raises(ValueError, match="noise"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=100, noise="laplace")
    with pytest.raises(ValueError, match="n_arms"):
        make_agent("dp-ucb", n_arms=1, dim=3, horizon=100)
    with pytest.raises(ValueError, match="context_bound"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=100, context_bound=-1.0)
    with pytest.raises(ValueError, match="accountant"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=100, noise="wishart",
                   calibration="accountant")


def test_clipping_is_counted():
    agent = make_agent("dp-ucb", n_arms=2, dim=2, horizon=10, epsilon=1.0, context_bound=1.0,
                       reward_bound=0.5)
    agent.reset(2, np.random.default_rng(0))
    agent.update(np.array([[3.0, 0.0], [0.5, 0.5]]), np.array([0, 1]), np.array([0.1, 2.0]))
    assert agent.n_clipped_contexts_.tolist() == [1, 0]
    assert agent.n_clipped_rewards_.tolist() == [0, 1]

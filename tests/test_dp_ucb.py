import math

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.dp_ucb import (
    gaussian_sigma_accountant,
    gaussian_sigma_theorem,
    tree_depth,
)
from dpbandits.privacy.mechanisms import (
    gaussian_mechanism_delta,
    gaussian_sigma_analytic,
    symmetric_gaussian,
    wishart_matrix,
)
from dpbandits.privacy.tree import tree_levels


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


def test_tree_depth_bounds_the_nodes_of_a_datum_and_of_a_release():
    """``m`` must bound both the nodes one datum enters and the nodes one release sums (the
    noise of a release and the advanced composition both use it), without being loose by
    more than one level."""
    most_in_a_release = 0
    for T in range(1, 2049):
        most_in_a_release = max(most_in_a_release, T.bit_count())
        m = tree_depth(T)
        assert max(tree_levels(T), most_in_a_release) <= m <= tree_levels(T) + 1, T


# (T, epsilon, delta, L~): the theorem's closed form is 1.3x-2.6x the exact per-node
# requirement here, so a missing sqrt(m), L~ in place of L~^2 or sqrt(ln(4/delta)) in place
# of ln(4/delta) makes some case fail
THEOREM_CASES = [(10_000, 1.0, 1e-4, math.sqrt(51.0)), (100, 0.1, 1e-3, 1.0),
                 (1000, 5.0, 1e-6, 2.0), (50, 3.0, 1e-2, 0.5)]


@pytest.mark.parametrize("T, eps, delta, lt", THEOREM_CASES)
def test_theorem_node_sigma_meets_each_nodes_share_of_the_budget(T, eps, delta, lt):
    """Section 4.2: a datum enters ``m`` nodes, each a Gaussian mechanism on the Gram matrix
    (effective l_2 sensitivity ``L~^2``) that must be ``(eps0, delta/(2m))``-DP with
    ``eps0 = eps / sqrt(8 m ln(2/delta))`` for advanced composition to give
    ``(eps, delta)``; the exact delta of the Gaussian mechanism checks the closed form."""
    m = tree_depth(T)
    s = gaussian_sigma_theorem(T, eps, delta, lt)
    eps0 = eps / math.sqrt(8 * m * math.log(2 / delta))
    assert gaussian_mechanism_delta(s, eps0, lt**2) <= delta / (2 * m)
    # and not far above the smallest sigma that meets it (over-noising fails too)
    assert s < 3 * gaussian_sigma_analytic(eps0, delta / (2 * m), lt**2)


@pytest.mark.parametrize("T, eps, delta, lt", THEOREM_CASES)
def test_theorem_calibrated_agent_ledger_certifies_the_claim(T, eps, delta, lt):
    from dpbandits.privacy.accounting import epsilon_of

    # L^2 + B^2 = L~^2 with L = 0.8 L~ and B = 0.6 L~
    agent = make_agent("dp-ucb", n_arms=2, dim=3, horizon=T, epsilon=eps, delta=delta,
                       context_bound=0.8 * lt, reward_bound=0.6 * lt)
    assert agent.l_tilde == pytest.approx(lt)
    assert epsilon_of(agent.ledger, delta) <= eps


def test_release_noise_has_the_calibrated_node_sigma():
    """The noise in the first release is one node: off-diagonal entries N(0, s^2) and
    diagonal entries N(0, 2 s^2) with ``s`` the plan's ``node_sigma``, the value the ledger
    certifies; sample variances of n normals have relative std sqrt(2/n) (5 of them)."""
    R, d, K = 4000, 2, 2
    D = d * K
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=100, epsilon=1.0, delta=1e-3)
    agent.reset(R, np.random.default_rng(6))
    x = np.tile([[0.5, -1.0]], (R, 1))
    agent.update(x, np.zeros(R, dtype=np.int64), np.full(R, 0.3))
    v = np.zeros(D + 1)
    v[:d], v[D] = x[0], 0.3
    noise = agent._release - np.outer(v, v)
    # the plan's scale (what the ledger certifies), not the constants view a cut would follow
    s = agent.plan.scales["node_sigma"]
    assert agent.constants["node_sigma"] == s
    off = noise[:, np.triu_indices(D + 1, 1)[0], np.triu_indices(D + 1, 1)[1]].ravel()
    diag = noise[:, np.arange(D + 1), np.arange(D + 1)].ravel()
    assert np.mean(off**2) / s**2 == pytest.approx(1.0, abs=5 * math.sqrt(2 / off.size))
    assert np.mean(diag**2) / (2 * s**2) == pytest.approx(1.0, abs=5 * math.sqrt(2 / diag.size))


@pytest.mark.parametrize("shifted", [False, True])
def test_wishart_release_eigenvalues_lie_in_proposition_9_bounds(shifted):
    """Every release's noise is Wishart(L~^2 I, m k) (tree nodes plus top-up); Proposition 9:
    the eigenvalues of its D x D block, shifted down by c when ``wishart_shift``, lie in
    [rho_min, rho_max] (with probability >= 1 - alpha/2T each; 200 draws here)."""
    T, d, K = 64, 2, 2
    D = d * K
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, epsilon=0.5, delta=1e-3,
                       noise="wishart", wishart_shift=shifted)
    c = agent.constants
    w = wishart_matrix(np.random.default_rng(8), D + 1, c["m"] * c["k"], agent.l_tilde**2,
                       (200,))
    eig = np.linalg.eigvalsh(w[:, :D, :D] + c["shift"] * np.eye(D))
    assert c["rho_min"] <= eig.min() and eig.max() <= c["rho_max"]
    # Sheffet (2015, Thm 4.1) per node at the advanced-composition split of Section 4.1
    m, eps, delta = c["m"], 0.5, 1e-3
    eps0, delta0 = eps / math.sqrt(8 * m * math.log(2 / delta)), delta / (2 * m)
    assert c["k"] >= D + 1 + 28 * math.log(4 / delta0) / eps0**2


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
    z = symmetric_gaussian(rng, 4, sigma_off=s, sigma_diag=s * math.sqrt(2.0), size=n)
    assert np.array_equal(z, np.swapaxes(z, 1, 2))
    # sample variance of n normals has relative std sqrt(2/n) ~ 0.007; allow 5 sigma
    tol = 5 * math.sqrt(2 / n)
    assert z[:, 0, 1].var() / s**2 == pytest.approx(1.0, abs=tol)
    assert z[:, 2, 2].var() / (2 * s**2) == pytest.approx(1.0, abs=tol)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_release_minus_noise_is_exact_gram_prefix_with_single_shift(backend):
    """The release at t is the exact Gram prefix plus the noise of the nodes at the set bits
    of t, node t being the symmetric Gaussian of the t-th block of P = n(n+1)/2 standard
    normals of the generator spawned from the agent's (recomputed here from the same seed)."""
    d, K, T, R = 2, 2, 13, 2
    D = K * d
    n = D + 1
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, epsilon=1.0, delta=0.01,
                       backend=backend)
    agent.reset(R, np.random.default_rng(0))
    s = agent.constants["node_sigma"]
    iu, ju = np.triu_indices(n)
    z = np.random.default_rng(0).spawn(1)[0].standard_normal((T, R, iu.size))
    nodes = np.zeros((T, R, n, n))
    nodes[:, :, iu, ju] = z * np.where(iu == ju, s * math.sqrt(2), s)
    nodes[:, :, ju, iu] = nodes[:, :, iu, ju]
    rng = np.random.default_rng(1)
    M = np.zeros((R, n, n))
    for t in range(1, T + 1):
        x = _contexts(rng, 1, d, reps=R)[0]
        arms = rng.integers(0, K, R)
        y = rng.uniform(-1, 1, R)
        agent.update(x, arms, y)
        v = np.zeros((R, n))
        for r in range(R):
            v[r, arms[r] * d:(arms[r] + 1) * d] = x[r]
        v[:, D] = y
        M += v[:, :, None] * v[:, None, :]
        # the binary mechanism sums the noise of the nodes at the set bits of t
        noise = sum(nodes[((t >> j) << j) - 1] for j in range(t.bit_length()) if (t >> j) & 1)
        released = agent._release
        np.testing.assert_allclose(released - noise, M, atol=1e-8)
        assert np.array_equal(released, np.swapaxes(released, 1, 2))
        # V = top-left block + 2 Upsilon I exactly once
        shift = agent.constants["shift"]
        np.testing.assert_allclose(agent._V, released[:, :D, :D] + shift * np.eye(D),
                                   rtol=1e-12)
        np.testing.assert_allclose(agent._u, released[:, :D, D])
    # O(log T) memory: one partial noise sum per level
    assert agent._stack.shape[0] <= tree_depth(T)


def test_noise_block_plus_shift_lies_in_proposition_11_bounds_at_figure_size():
    T, D = 10_000, 100
    agent = make_agent("dp-ucb", n_arms=2, dim=50, horizon=T, epsilon=1.0)
    c = agent.constants
    rng = np.random.default_rng(3)
    draws = 60
    total = np.zeros((draws, D + 1, D + 1))
    for _ in range(c["m"]):  # worst case: m nodes in one release
        total += symmetric_gaussian(rng, D + 1, sigma_off=c["node_sigma"],
                                    sigma_diag=c["node_sigma"] * math.sqrt(2.0), size=draws)
    V = total[:, :D, :D] + c["shift"] * np.eye(D)
    eig = np.linalg.eigvalsh(V)
    assert eig.min() >= c["rho_min"]
    assert eig.max() <= c["rho_max"]
    # Proposition 11: the noise h of the target has ||h||_{V^-1} <= gamma
    h = total[:, :D, D]
    assert np.sqrt(np.einsum("ri,ri->r", h, np.linalg.solve(V, h[:, :, None])[..., 0])).max() \
        <= c["gamma"]


def test_wishart_noise_mean_and_topup_to_m_nodes():
    rng = np.random.default_rng(4)
    w = wishart_matrix(rng, 3, 7, 2.0, (4000,))
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


def test_bonus_scales_the_exploration_term_and_zero_plays_greedily():
    # same seed and same history (arms chosen outside the agents): the releases are equal,
    # so the indices differ only by the bonus term, which is linear in `bonus`
    rng = np.random.default_rng(3)
    R, K, d, T = 40, 2, 4, 300
    agents = {b: make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, calibration="accountant",
                            bonus=b) for b in (1.0, 0.5, 0.0)}
    for a in agents.values():
        a.reset(R, np.random.default_rng(7))
    for _ in range(T // 2):
        x = _contexts(rng, 1, d, R)[0]
        arms = rng.integers(0, K, R)
        y = x[:, 0] * (arms == 0) + 0.05 * rng.standard_normal(R)
        for a in agents.values():
            a.update(x, arms, y)
    x = _contexts(rng, 1, d, R)[0]
    idx = {b: a.indices(x) for b, a in agents.items()}
    full = agents[1.0]
    assert agents[0.0].privacy == full.privacy and agents[0.0].ledger == full.ledger
    np.testing.assert_allclose(idx[0.5], 0.5 * (idx[1.0] + idx[0.0]), rtol=1e-9, atol=1e-9)
    # bonus 0: the index is the private estimate's mean reward, <V^-1 u~, phi_k>
    theta = np.linalg.solve(full._V, full._u[..., None])[..., 0].reshape(R, K, d)
    np.testing.assert_allclose(idx[0.0], np.einsum("rkd,rd->rk", theta, x), rtol=1e-8,
                               atol=1e-10)
    assert np.all(idx[1.0] - idx[0.0] > 0)  # the default's bonus is on
    changed = np.mean(agents[0.0].act(x) != full.act(x))
    assert changed > 0.1, changed  # the option changes the actions
    with pytest.raises(ValueError, match="bonus"):
        make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, bonus=-1.0)


def test_indefinite_path_clips_overflowing_contexts_instead_of_zeroing_them():
    """Issue 25: the rare indefinite-design path clipped contexts with a plain norm, which
    overflows to inf for entries near 1e308 and zeroed the row (index = estimate only, no
    exploration bonus, nothing counted). It now clips as the kernels do: a huge context
    scores like the same direction at norm L."""
    import numpy as np

    from dpbandits.agents import make_agent

    agent = make_agent("dp-ucb", n_arms=2, dim=3, horizon=50, backend="numpy")
    agent.reset(1, np.random.default_rng(0))
    huge = np.array([[1.7e308, -1.7e308, 0.0]])
    unit = np.array([[1.0, -1.0, 0.0]]) / np.sqrt(2.0) * agent._L
    out = []
    for x in (huge, unit):
        beta, idx = np.empty(1), np.empty((1, 2))
        agent._ok[:] = False  # take the LU path
        agent._indefinite(x, beta, idx)
        out.append(idx)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)
    assert np.all(out[0] > 0)  # the bonus is there (a zeroed row scored 0)

"""DP-UCB's ``block_diagonal`` option: the per-arm diagonal blocks of the same release (same
noise draws, same guarantee and ledger), cross-arm blocks dropped."""

import numpy as np
import pytest

from dpbandits.agents import make_agent


def _run(block_diagonal, backend, noise="gaussian", K=3, d=4, T=40, R=3, eps=1.0):
    agent = make_agent("dp-ucb", n_arms=K, dim=d, horizon=T, epsilon=eps, noise=noise,
                       backend=backend, block_diagonal=block_diagonal)
    agent.reset(R, np.random.default_rng(5))
    data = np.random.default_rng(6)
    for _ in range(T // 2):
        x = data.uniform(-1, 1, (R, d))
        agent.update(x, data.integers(0, K, R), data.normal(size=R))
    return agent, data.uniform(-1, 1, (R, d))


def _indices_from(V, u, x, beta, K, d, L):
    """The UCB indices computed directly from ``V`` (R, D, D) and ``u`` (R, D)."""
    x = x * np.minimum(1.0, L / np.linalg.norm(x, axis=1))[:, None]
    theta = np.linalg.solve(V, u[..., None])[..., 0]
    idx = np.empty((x.shape[0], K))
    for k in range(K):
        phi = np.zeros((x.shape[0], K * d))
        phi[:, k * d:(k + 1) * d] = x
        w = np.linalg.solve(V, phi[..., None])[..., 0]
        idx[:, k] = (np.einsum("rd,rd->r", phi, theta)
                     + beta * np.sqrt(np.einsum("rd,rd->r", phi, w)))
    return idx


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("noise, eps", [("gaussian", 1.0), ("wishart", 10.0)])
def test_estimate_is_the_full_release_with_cross_arm_blocks_zeroed(backend, noise, eps):
    K, d = 3, 4
    full, x = _run(False, backend, noise, K, d, eps=eps)
    block, x2 = _run(True, backend, noise, K, d, eps=eps)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(block._release, full._release)  # same noise draws
    mask = np.kron(np.eye(K), np.ones((d, d)))
    V = full._V * mask  # the full release's V_t with its cross-arm blocks zeroed
    np.testing.assert_allclose(block._V, V, rtol=0, atol=0)
    u = full._u  # the release's last column (with the Wishart top-up), as the default has it
    np.testing.assert_array_equal(block._u, u)
    logdet = np.linalg.slogdet(V)[1]
    np.testing.assert_allclose(block._logdet, logdet, rtol=1e-9)
    idx = block.indices(x)
    expected = _indices_from(V, u, x, block.beta(logdet), K, d, block._L)
    np.testing.assert_allclose(idx, expected, rtol=1e-8, atol=1e-8)
    # and it is not the faithful estimate: the cross-arm noise mattered
    assert not np.allclose(full.indices(x), idx)


def test_guarantee_and_ledger_are_the_default_ones():
    for noise, eps in (("gaussian", 1.0), ("wishart", 10.0)):
        kw = dict(n_arms=2, dim=5, horizon=1000, epsilon=eps, noise=noise)
        a = make_agent("dp-ucb", **kw)
        b = make_agent("dp-ucb", block_diagonal=True, **kw)
        assert a.privacy == b.privacy
        assert a.ledger == b.ledger
        assert a.constants == b.constants


def test_backends_agree_and_noise_off_is_unchanged():
    a, x = _run(True, "numba")
    b, _ = _run(True, "numpy")
    np.testing.assert_allclose(a.indices(x), b.indices(x), rtol=1e-9, atol=1e-9)
    # without noise the cross-arm blocks are exactly zero: the option changes nothing
    f, x = _run(False, "numpy", eps=np.inf)
    g, _ = _run(True, "numpy", eps=np.inf)
    np.testing.assert_allclose(f.indices(x), g.indices(x), rtol=1e-10, atol=1e-12)


def test_block_diagonal_must_be_a_bool():
    with pytest.raises(TypeError, match="block_diagonal"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=10, block_diagonal=1)

"""DP-UCB's compiled kernels against their numpy twins, the exact node samplers, and the
reproducibility of the chunked, prefetched noise streams.

Statistical tests use fixed seeds and a false-alarm level ``ALPHA`` per test (KS p-values).
"""

import math
import pickle

import numpy as np
import pytest
from _waits import HANG_CAP
from scipy import stats

from dpbandits.agents import _ucb_ops as kernels
from dpbandits.agents import make_agent
from dpbandits.harness import simulate
from dpbandits.privacy import mechanisms as mech
from dpbandits.privacy import streams

ALPHA = 1e-3

CONFIGS = {
    "gaussian": ("dp-ucb", {"epsilon": 1.0, "delta": 0.01}),
    "gaussian-accountant": ("dp-ucb", {"epsilon": 2.0, "calibration": "accountant"}),
    "wishart": ("dp-ucb", {"epsilon": 0.5, "delta": 1e-3, "noise": "wishart"}),
    "wishart-unshifted": ("dp-ucb", {"epsilon": 0.5, "delta": 1e-3, "noise": "wishart",
                                     "wishart_shift": False}),
    "non-private": ("dp-ucb", {"epsilon": math.inf, "reg": 0.5}),
    "authors-code": ("dp-ucb-authors-code", {"epsilon": 1.0}),
    "authors-code-non-private": ("dp-ucb-authors-code", {"epsilon": math.inf}),
}


def _play(name, params, *, R=3, d=3, K=2, T=40, seed=0, **extra):
    """Arms and indices of an agent on a fixed stream of contexts and rewards."""
    agent = make_agent(name, n_arms=K, dim=d, horizon=T, **params, **extra)
    agent.reset(R, np.random.default_rng(seed))
    rng = np.random.default_rng(100 + seed)
    arms, idx = [], []
    for _ in range(T):
        x = rng.standard_normal((R, d))
        x /= np.abs(x).max(axis=1, keepdims=True)
        if name == "dp-ucb":
            idx.append(agent.indices(x))
        a = agent.act(x)
        arms.append(a)
        agent.update(x, a, rng.uniform(-1.2, 1.2, R))  # some rewards are clipped
    return np.array(arms), np.array(idx), agent


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_numba_kernels_match_the_numpy_twin(config):
    name, params = CONFIGS[config]
    a1, i1, ag1 = _play(name, params, backend="numba")
    a2, i2, ag2 = _play(name, params, backend="numpy")
    assert np.array_equal(a1, a2)
    np.testing.assert_allclose(i1, i2, rtol=1e-9, atol=1e-12)
    if name == "dp-ucb":
        np.testing.assert_allclose(ag1._V, ag2._V, rtol=1e-12, atol=1e-9)
        assert np.array_equal(ag1.n_clipped_rewards_, ag2.n_clipped_rewards_)
        assert ag1.n_clipped_rewards_.sum() > 0


# integration: compiles the parallel kernels cold (about 25 s of CPU in a fresh clone)
@pytest.mark.integration
@pytest.mark.parametrize("config", ["gaussian", "wishart", "authors-code"])
def test_parallel_build_and_thread_count_do_not_change_results(config, monkeypatch):
    import numba

    name, params = CONFIGS[config]
    a1, i1, _ = _play(name, params, backend="numba")
    import dpbandits._backends

    monkeypatch.setattr(dpbandits._backends, "PARALLEL_WORK", 0)
    assert kernels.ucb_ops("numba", 3, 5).parallel
    threads = numba.get_num_threads()
    try:
        for n_threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(n_threads)
            a2, i2, _ = _play(name, params, backend="numba")
            assert np.array_equal(a1, a2) and np.array_equal(i1, i2)
    finally:
        numba.set_num_threads(threads)


@pytest.mark.parametrize("config", ["gaussian", "wishart", "authors-code"])
def test_results_do_not_depend_on_chunks_or_prefetching(config, monkeypatch):
    name, params = CONFIGS[config]
    a1, i1, _ = _play(name, params, T=60)
    monkeypatch.setattr(streams, "MAX_CHUNK", 7)  # several chunks, prefetched
    a2, i2, ag = _play(name, params, T=60)
    stream = ag._nodes if name == "dp-ucb" else ag._noise
    assert stream.chunk == 7 and stream.prefetch
    monkeypatch.setenv("DPBANDITS_PREFETCH", "0")
    a3, i3, ag = _play(name, params, T=60)
    assert not (ag._nodes if name == "dp-ucb" else ag._noise).prefetch
    assert np.array_equal(a1, a2) and np.array_equal(i1, i2)
    assert np.array_equal(a1, a3) and np.array_equal(i1, i3)


def test_same_seed_same_results_and_another_seed_differs():
    runs = [simulate("dpbandits/SparseLinearBandit-v0", "dp-ucb", n_reps=2, seed=s,
                     env_params={"horizon": 60}).regret for s in (3, 3, 4)]
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize("config", ["gaussian", "wishart", "authors-code"])
def test_agent_pickled_mid_run_continues_identically(config, monkeypatch):
    monkeypatch.setattr(streams, "MAX_CHUNK", 4)
    name, params = CONFIGS[config]
    R, d, K, T = 2, 3, 2, 20
    agent = make_agent(name, n_arms=K, dim=d, horizon=T, **params)
    agent.reset(R, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((T, R, d))
    ys = rng.uniform(-1, 1, (T, R))
    for t in range(9):
        agent.update(xs[t], agent.act(xs[t]), ys[t])
    twin = pickle.loads(pickle.dumps(agent))
    for t in range(9, T):
        a, b = agent.act(xs[t]), twin.act(xs[t])
        assert np.array_equal(a, b)
        agent.update(xs[t], a, ys[t])
        twin.update(xs[t], b, ys[t])


def test_parallel_work_threshold_picks_the_build():
    assert not kernels.ucb_ops("numba", 1, 10_000).parallel
    assert not kernels.ucb_ops("numba", 10, 101).parallel  # Figure 5.1 panels: serial
    assert kernels.ucb_ops("numba", 100, 101).parallel
    assert kernels.ucb_ops("numba", 50_000, 3).parallel  # the audits' batches
    assert kernels.ucb_ops("numpy", 100, 101).backend == "numpy"


# --------------------------------------------------------------------------------------------
# exact node samplers
# --------------------------------------------------------------------------------------------
def test_symmetric_gaussian_has_the_law_of_the_symmetrized_square():
    """Off-diagonal entries N(0, s^2), diagonal N(0, 2 s^2) (KS), symmetric, and distinct
    entries of the upper triangle uncorrelated (|r| within the normal bound of 1/sqrt(n))."""
    s, n_dim, n = 1.7, 4, 20_000
    z = mech.symmetric_gaussian(np.random.default_rng(0), n_dim, sigma_off=s,
                                sigma_diag=s * math.sqrt(2.0), size=n)
    assert z.shape == (n, n_dim, n_dim)
    assert np.array_equal(z, np.swapaxes(z, 1, 2))
    iu, ju = np.triu_indices(n_dim, 1)
    tests = [z[:, i, j] / s for i, j in zip(iu, ju, strict=True)]
    tests += [z[:, i, i] / (s * math.sqrt(2)) for i in range(n_dim)]
    pvals = [stats.kstest(v, "norm").pvalue for v in tests]
    assert min(pvals) > ALPHA / len(pvals)  # Bonferroni
    upper = z[:, np.triu_indices(n_dim)[0], np.triu_indices(n_dim)[1]]
    corr = np.corrcoef(upper, rowvar=False)[np.triu_indices(upper.shape[1], 1)]
    bound = stats.norm.ppf(1 - ALPHA / (2 * corr.size)) / math.sqrt(n)
    assert np.abs(corr).max() < bound


def test_the_ks_check_rejects_the_unscaled_diagonal():
    """Power: the same KS check sees a diagonal drawn at variance s^2 instead of 2 s^2."""
    z = np.random.default_rng(1).standard_normal(20_000)
    assert stats.kstest(z / math.sqrt(2), "norm").pvalue < 1e-10


@pytest.mark.parametrize("n_dim, df", [(3, 3), (4, 9), (6, 6.5)])
def test_wishart_matrix_quadratic_forms_are_chi_square(n_dim, df):
    """For W ~ Wishart_n(c I, df) and any unit vector a, a^T W a / c ~ chi2(df) (and the
    trace / c ~ chi2(n df)): KS at each of three directions (coordinate axes probe the
    diagonal, a mixed direction the off-diagonal correlations). With Bartlett's chi-squares
    in the wrong order (chi2(df - i) on U's diagonal) these fail for df close to n."""
    c, n = 2.5, 20_000
    rng = np.random.default_rng(10 + n_dim)
    w = mech.wishart_matrix(rng, n_dim, df, c, n)
    assert np.allclose(w, np.swapaxes(w, 1, 2))
    a = rng.standard_normal(n_dim)
    dirs = [np.eye(n_dim)[0], np.eye(n_dim)[-1], a / np.linalg.norm(a)]
    pvals = [stats.kstest(np.einsum("i,rij,j->r", v, w, v) / c, stats.chi2(df).cdf).pvalue
             for v in dirs]
    pvals.append(stats.kstest(np.trace(w, axis1=1, axis2=2) / c,
                              stats.chi2(n_dim * df).cdf).pvalue)
    assert min(pvals) > ALPHA / len(pvals)


def test_wishart_ks_check_has_power_against_lower_bartlett_order():
    """U U^T with U's diagonal in L's order (chi2(df - i) for row i) is not Wishart: the
    first axis then gets chi2(df) + chi2(n - 1)."""
    n_dim, df, n = 4, 4, 20_000
    rng = np.random.default_rng(3)
    iu, ju = np.triu_indices(n_dim, 1)
    u = np.zeros((n, n_dim, n_dim))
    u[:, iu, ju] = rng.standard_normal((n, iu.size))
    u[:, np.arange(n_dim), np.arange(n_dim)] = np.sqrt(
        rng.chisquare(df - np.arange(n_dim), (n, n_dim)))
    w = u @ np.swapaxes(u, 1, 2)
    assert stats.kstest(w[:, 0, 0], stats.chi2(df).cdf).pvalue < 1e-10


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_kernel_wishart_node_from_the_agents_variates_is_wishart(backend):
    """The node the agent builds from its variate layout (packed strict upper triangle,
    chi2(k - n + 1 + i) diagonal) has Wishart quadratic forms (KS)."""
    n_dim, k, c, n = 4, 5, 1.5, 20_000
    ops = kernels.ucb_ops(backend, n, n_dim)
    rng = np.random.default_rng(5)
    z = rng.standard_normal((n, n_dim * (n_dim - 1) // 2))
    chi = rng.chisquare(k - n_dim + 1 + np.arange(n_dim), (n, n_dim))
    out = np.zeros((n, n_dim, n_dim))
    ops["wishart_into"](out, z, chi, c)
    w = np.triu(out) + np.swapaxes(np.triu(out, 1), 1, 2)
    a = np.array([0.5, -0.5, 0.5, 0.5])
    pvals = [stats.kstest(np.einsum("i,rij,j->r", v, w, v) / c, stats.chi2(k).cdf).pvalue
             for v in (np.eye(n_dim)[0], np.eye(n_dim)[-1], a)]
    assert min(pvals) > ALPHA / len(pvals)


# --------------------------------------------------------------------------------------------
# chunked streams
# --------------------------------------------------------------------------------------------
def _uniforms(g, start, count):
    return (g.random((count, 3)), np.arange(start, start + count))


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("chunk", [1, 4, 10, 25])
def test_chunked_draws_hand_out_the_same_rounds_whatever_the_chunk(chunk, prefetch):
    from functools import partial

    ref = np.random.default_rng(0).random((23, 3))
    s = streams.ChunkedDraws(partial(_uniforms, np.random.default_rng(0)), 23, 3, chunk=chunk,
                             prefetch=prefetch)
    assert s.prefetch == (prefetch and chunk < 23)
    got = [s.next() for _ in range(23)]
    assert np.array_equal(np.array([g[0] for g in got]), ref)
    assert [int(g[1]) for g in got] == list(range(23))
    assert s.position == 23
    with pytest.raises(IndexError, match="23 rounds"):
        s.next()


def test_chunk_rounds_respects_budget_and_bounds():
    assert streams.chunk_rounds(10, 1000, budget=100) == 10
    assert streams.chunk_rounds(10**9, 1000) == 1
    assert streams.chunk_rounds(1, 5) == 5
    assert streams.chunk_rounds(1, 10**6) == streams.MAX_CHUNK


def _regret_sum(seed):
    return float(simulate("dpbandits/SparseLinearBandit-v0", "dp-ucb", n_reps=1, seed=seed,
                          env_params={"horizon": 600}).regret.sum())


@pytest.mark.integration
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_worker_draws_ahead_with_its_own_thread():
    """After a run has started the background drawing thread, a forked worker (e.g. a
    multiprocessing pool) has no copy of it: it must start its own, not wait forever."""
    import multiprocessing

    here = _regret_sum(1)  # starts the shared worker thread in this process
    with multiprocessing.get_context("fork").Pool(1) as pool:
        there = pool.map_async(_regret_sum, [1]).get(timeout=HANG_CAP)[0]
    assert there == here

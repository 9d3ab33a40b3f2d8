"""Tests for dpbandits.privacy.tree (binary-mechanism prefix sums)."""

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy.mechanisms import gaussian_noise, generalized_gaussian_noise
from dpbandits.privacy.tree import (
    TreeAggregator,
    tree_levels,
    tree_max_nodes_per_release,
    tree_node_levels,
)

HORIZONS = [1, 2, 3, 7, 8, 9, 1000]


def _gauss(sigma):
    def node_noise(rng, shape):
        return gaussian_noise(rng, sigma, shape)

    return node_noise


class _Counting:
    """Node-noise wrapper recording how many nodes were drawn."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __call__(self, rng, shape):
        self.calls += 1
        return self.inner(rng, shape)


# ------------------------------------------------------------------ exactness without noise
@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("shape", [(4,), (3, 3)])
def test_zero_noise_releases_exact_prefix_sums(horizon, shape):
    rng = np.random.default_rng(horizon)
    R = 3
    # Integer-valued data: every partial sum is exact in float64, so equality is exact.
    data = rng.integers(-50, 50, size=(horizon, R, *shape)).astype(float)
    if len(shape) == 2:
        data = data + np.swapaxes(data, -1, -2)  # symmetric matrices
    prefix = np.cumsum(data, axis=0)
    tree = TreeAggregator(horizon, shape, R, None, None)
    for t in range(horizon):
        out = tree.add(data[t])
        assert out.shape == (R, *shape)
        assert np.array_equal(out, prefix[t])
        assert tree.t == t + 1
    with pytest.raises(ValueError, match="horizon"):
        tree.add(data[0])


def test_zero_noise_float_data_close_to_prefix_sums():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(300, 2, 5))
    tree = TreeAggregator(300, 5, 2, None, None)
    out = np.stack([tree.add(z) for z in data])
    np.testing.assert_allclose(out, np.cumsum(data, axis=0), rtol=1e-12, atol=1e-11)


def test_release_is_a_fresh_array():
    tree = TreeAggregator(4, 2, 1, None, None)
    out = tree.add(np.ones((1, 2)))
    out[:] = 99.0
    np.testing.assert_array_equal(tree.add(np.ones((1, 2))), [[2.0, 2.0]])


# ------------------------------------------------------------------ node counts
@pytest.mark.parametrize("horizon", HORIZONS)
def test_node_counts(horizon):
    counter = _Counting(_gauss(1.0))
    tree = TreeAggregator(horizon, 2, 1, counter, np.random.default_rng(0))
    assert tree.last_node_count == 0
    levels = math.floor(math.log2(horizon)) + 1
    assert tree.nodes_per_datum == tree.n_levels == levels == tree_levels(horizon)
    assert tree.nodes_per_datum <= math.ceil(math.log2(horizon)) + 1
    if horizon & (horizon - 1) == 0:  # powers of two: the paper's count is attained
        assert tree.nodes_per_datum == math.ceil(math.log2(horizon)) + 1
    seen = []
    for t in range(1, horizon + 1):
        tree.add(np.zeros((1, 2)))
        assert tree.last_node_count == bin(t).count("1")
        assert tree.live_node_count == bin(t).count("1")
        assert counter.calls == t  # exactly one node completed (and drawn) per step
        seen.append(tree.last_node_count)
    assert tree.max_nodes_per_release == max(seen) == tree_max_nodes_per_release(horizon)
    assert tree.max_nodes_per_release <= math.ceil(math.log2(horizon)) + 1


def test_explicit_max_nodes_values():
    assert [tree_max_nodes_per_release(T) for T in HORIZONS] == [1, 1, 2, 3, 3, 3, 9]
    assert [tree_levels(T) for T in HORIZONS] == [1, 2, 2, 3, 4, 4, 10]


@pytest.mark.parametrize("horizon", [1, 5, 9, 13, 16])
def test_tree_structure_by_labelled_nodes(horizon):
    """Recover which data each drawn node contains, with one-hot labels.

    Element i carries the one-hot e_i (first T coordinates); node k's noise is the one-hot
    label e_k (last T coordinates). Each release then tells exactly which nodes it summed and
    which data it covers, so node contents follow by induction. Checks: every node is a
    dyadic block, every release sums popcount(t) distinct nodes, and the largest number of
    nodes containing one datum equals nodes_per_datum.
    """
    T = horizon

    class Labels:
        k = 0

        def __call__(self, rng, shape):
            out = np.zeros(shape)
            out[:, T + self.k] = 1.0
            self.k += 1
            return out

    tree = TreeAggregator(T, 2 * T, 1, Labels(), np.random.default_rng(0))
    content = {}
    for t in range(1, T + 1):
        z = np.zeros((1, 2 * T))
        z[0, t - 1] = 1.0
        out = tree.add(z)[0]
        data, labels = out[:T], out[T:]
        np.testing.assert_array_equal(data, (np.arange(T) < t).astype(float))
        used = np.flatnonzero(labels)
        assert np.all(labels[used] == 1.0) and len(used) == tree.last_node_count
        new = t - 1  # the node completed at step t
        assert new in used
        rest = sum((content[k] for k in used if k != new), np.zeros(T))
        content[new] = data - rest
        block = np.flatnonzero(content[new])
        size = len(block)
        assert size & (size - 1) == 0 and block[-1] == t - 1 and t % size == 0
        assert np.all(content[new][block] == 1.0)
    per_datum = np.sum(list(content.values()), axis=0)
    assert per_datum.max() == tree.nodes_per_datum
    assert per_datum[0] == tree.nodes_per_datum


# ------------------------------------------------------------------ noise statistics
def test_release_variance_is_node_count_times_node_variance():
    sigma, R, T, shape = 1.3, 20_000, 12, (2,)
    rng = np.random.default_rng(42)
    tree = TreeAggregator(T, shape, R, _gauss(sigma), rng)
    data = np.random.default_rng(1).normal(size=(T, R, *shape))
    prefix = np.cumsum(data, axis=0)
    n = R * shape[0]  # pooled independent coordinates
    alpha = 1e-3 / (2 * T)  # Bonferroni over all checks below
    lo, hi = stats.chi2.ppf(alpha / 2, n) / n, stats.chi2.ppf(1 - alpha / 2, n) / n
    prev = np.zeros((R, *shape))
    for t in range(1, T + 1):
        err = tree.add(data[t - 1]) - prefix[t - 1]
        ratio = np.mean(err**2) / (bin(t).count("1") * sigma**2)
        assert lo < ratio < hi, (t, ratio)
        # Noise reuse: consecutive releases share their common nodes, so the increment's
        # noise has popcount(t XOR (t-1)) nodes, not popcount(t) + popcount(t-1).
        inc_ratio = np.mean((err - prev) ** 2) / (bin(t ^ (t - 1)).count("1") * sigma**2)
        assert lo < inc_ratio < hi, (t, inc_ratio)
        prev = err


def test_replications_get_independent_noise():
    R, n_coords = 4000, 3
    tree = TreeAggregator(3, n_coords, R, _gauss(1.0), np.random.default_rng(3))
    tree.add(np.zeros((R, n_coords)))
    out = tree.add(np.zeros((R, n_coords)))
    # Correlation between replication r and r+1 across coordinates pooled: ~ N(0, 1/n).
    a, b = out[:-1].ravel(), out[1:].ravel()
    r = np.corrcoef(a, b)[0, 1]
    assert abs(r) < stats.norm.ppf(1 - 1e-3 / 2) / math.sqrt(a.size)


def test_generalized_gaussian_and_matrix_nodes():
    def gg(rng, shape):
        return generalized_gaussian_noise(rng, 0.5, 3.0, shape[-1], size=shape[:-1])

    tree = TreeAggregator(5, 6, 3, gg, np.random.default_rng(0))
    for _ in range(5):
        assert tree.add(np.ones((3, 6))).shape == (3, 6)

    def sym(rng, shape):
        z = rng.normal(size=shape)
        return (z + np.swapaxes(z, -1, -2)) / math.sqrt(2)

    tree = TreeAggregator(6, (3, 3), 2, sym, np.random.default_rng(0))
    for _ in range(6):
        out = tree.add(np.eye(3)[None].repeat(2, axis=0))
        np.testing.assert_allclose(out, np.swapaxes(out, -1, -2), atol=1e-12)


# ------------------------------------------------------------------ memory and determinism
@pytest.mark.parametrize("horizon", [1, 9, 1000])
def test_memory_is_logarithmic(horizon):
    R, shape = 2, (3, 3)
    counter = _Counting(_gauss(1.0))
    tree = TreeAggregator(horizon, shape, R, counter, np.random.default_rng(0))
    bound_nodes = math.ceil(math.log2(horizon)) + 1 if horizon > 1 else 1
    one_node = R * 9 * 8  # bytes of one node array (float64)
    for _ in range(horizon):
        tree.add(np.ones((R, *shape)))
    arrays = [v for v in vars(tree).values() if isinstance(v, np.ndarray)]
    node_slots = {a.shape[0] for a in arrays}
    assert max(node_slots) <= bound_nodes
    # Two slots per level at most (exact + noisy), nothing that grows with the horizon.
    assert sum(a.nbytes for a in arrays) <= 2 * bound_nodes * one_node
    assert tree.live_node_count <= bound_nodes
    assert counter.calls == horizon  # no pre-drawn noise


def test_same_seed_bit_identical():
    data = np.random.default_rng(0).normal(size=(20, 3, 4))

    def run(seed):
        tree = TreeAggregator(20, 4, 3, _gauss(2.0), np.random.default_rng(seed))
        return np.stack([tree.add(z) for z in data])

    assert np.array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


# ------------------------------------------------------------------ bad input
def test_bad_constructor_arguments():
    rng = np.random.default_rng(0)
    noise = _gauss(1.0)
    with pytest.raises(ValueError, match="horizon"):
        TreeAggregator(0, 3, 1, noise, rng)
    with pytest.raises(TypeError, match="horizon"):
        TreeAggregator(2.5, 3, 1, noise, rng)
    with pytest.raises(ValueError, match="n_reps"):
        TreeAggregator(4, 3, 0, noise, rng)
    with pytest.raises(ValueError, match="shape"):
        TreeAggregator(4, (3, 0), 1, noise, rng)
    with pytest.raises(TypeError, match="shape"):
        TreeAggregator(4, "3", 1, noise, rng)
    with pytest.raises(TypeError, match="node_noise"):
        TreeAggregator(4, 3, 1, 1.0, rng)
    with pytest.raises(TypeError, match="rng"):
        TreeAggregator(4, 3, 1, noise, 123)
    with pytest.raises(TypeError, match="rng"):
        TreeAggregator(4, 3, 1, noise, None)
    with pytest.raises(ValueError, match="horizon"):
        tree_levels(0)


def test_bad_add_arguments():
    tree = TreeAggregator(4, (2, 2), 3, _gauss(1.0), np.random.default_rng(0))
    with pytest.raises(ValueError, match="values"):
        tree.add(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="values"):
        tree.add(np.zeros((2, 2, 2)))
    bad = np.zeros((3, 2, 2))
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="values"):
        tree.add(bad)
    assert tree.t == 0  # rejected input leaves the state untouched


def test_bad_node_noise_output():
    tree = TreeAggregator(4, 2, 3, lambda rng, shape: np.zeros((3,)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="node_noise"):
        tree.add(np.zeros((3, 2)))
    tree = TreeAggregator(
        4, 2, 3, lambda rng, shape: np.full(shape, np.inf), np.random.default_rng(0))
    with pytest.raises(ValueError, match="node_noise"):
        tree.add(np.zeros((3, 2)))


def test_partial_noise_sums_equal_the_nodes_at_the_set_bits():
    """S[level] = eta_t + S[above] (tree_node_levels) is the sum of the noise of the nodes at
    the set bits of t, for every t; integer noise keeps the comparison exact."""
    T = 1100
    eta = np.arange(1, T + 1) * 1000 + 7  # node t's noise, distinct integers
    S = np.zeros(tree_levels(T), dtype=np.int64)
    for t in range(1, T + 1):
        level, above = tree_node_levels(t)
        assert (t >> level) & 1 and not t & ((1 << level) - 1)
        S[level] = eta[t - 1] + (S[above] if above >= 0 else 0)
        nodes = [((t >> j) << j) for j in range(t.bit_length()) if (t >> j) & 1]
        assert S[level] == sum(eta[n - 1] for n in nodes), t

"""The lazy report-noisy-min sampler of DP-POFW (privacy/vertex_rnm.py) and the
compiled DP-POFW / DP-HDB steps (optim/streaming/_pofw_kernels.py): the selection has the
exact law of report-noisy-min with Laplace noise in every regime (chi^2 against the exact
probabilities, p > 1e-3 at fixed seeds), the numpy and compiled paths give the same numbers
on the same words, and runs are reproducible whatever the threads, chunks and prefetching."""

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits import _backends
from dpbandits.harness.simulate import simulate
from dpbandits.optim import DPPOFW
from dpbandits.optim.streaming.dp_pofw import ArmSteps
from dpbandits.privacy.mechanisms import report_noisy_argmax_probabilities, report_noisy_argmin
from dpbandits.privacy.vertex_rnm import (
    EMPTY,
    Spill,
    fixed_words,
    select_row,
    select_rows,
    sign_words,
)

needs_numba = pytest.mark.skipif(not _backends.HAVE_NUMBA, reason="numba not installed")


def _exact_probs(direction, beta):
    # argmin(s + beta L) over s = (+dir, -dir) is argmax(-s + beta L) (L symmetric)
    return report_noisy_argmax_probabilities(-np.concatenate([direction, -direction]), beta)


def _compiled_rows(direction, beta, words, spill):
    """The kernels' order: every row from its fixed words, then the rows that ran out
    served in order from the spill."""
    fn = _backends.kernels("optim.streaming._pofw_kernels").select_row_compiled
    M = np.abs(direction).max(axis=1)
    cand = np.zeros(sign_words(direction.shape[1]), dtype=np.uint64)
    idx = np.array([fn(direction[r], 1.0, M[r], beta, words[r], EMPTY, 0, cand)[0]
                    for r in range(len(words))])
    for r in np.flatnonzero(idx < 0):
        idx[r] = spill.serve(lambda b, s0, r=r: fn(direction[r], 1.0, M[r], beta, words[r], b,
                                                   s0, cand), words.shape[1])
    return idx


def _words_used(direction, beta, words):
    """Words each row needs (its fixed words and as many more as it asks for)."""
    M = np.abs(direction).max(axis=1)
    cand = np.zeros(sign_words(direction.shape[1]), dtype=np.uint64)
    extra = np.random.default_rng(0).bit_generator.random_raw(10_000)
    with np.errstate(over="ignore"):
        return np.array([select_row(direction[r], 1.0, M[r], beta, words[r], extra, 0,
                                    cand)[1] for r in range(len(words))])


# regimes: (direction, beta) -- noise far above the spread (no hits: the paper's setting),
# comparable (hits, few candidates), far below (B often empty: the step-4 fallback)
REGIMES = {
    "noise-dominated": (np.array([0.3, -0.2]), 200.0),
    "comparable": (np.array([0.3, -0.2, 0.05]), 0.4),
    "spread-dominated": (np.array([0.3, -0.2]), 0.05),
    "one-coordinate": (np.array([0.7]), 0.5),
}


@pytest.mark.heavy
@pytest.mark.parametrize("regime", sorted(REGIMES))
def test_selection_has_the_exact_report_noisy_min_law(regime):
    direction, beta = REGIMES[regime]
    N = 40_000
    rng = np.random.default_rng(11)
    words = rng.bit_generator.random_raw((N, fixed_words(direction.size)))
    D = np.tile(direction, (N, 1))
    idx = select_rows(D, beta, words, Spill(np.random.default_rng(12)))
    probs = _exact_probs(direction, beta)
    counts = np.bincount(idx, minlength=probs.size)
    keep = probs * N > 5
    assert stats.chisquare(counts[keep], probs[keep] * N * counts[keep].sum()
                           / (probs[keep] * N).sum()).pvalue > 1e-3
    used = _words_used(D[:2000], beta, words[:2000])
    nw = sign_words(direction.size)
    if regime == "noise-dominated":  # signs, one exponential gap, at most one pick word
        assert np.mean(used <= nw + 2) > 0.9
    if regime == "spread-dominated":  # the fallback draws one word per vertex
        assert np.mean(used >= nw + 2 * direction.size) > 0.2


@pytest.mark.heavy
def test_selection_law_in_fifty_dimensions_matches_the_direct_sampler():
    """d = 50 (two sign words, the last one partly used) and d = 40: the lazy sampler
    against 2d Laplace draws per row (two-sample chi^2 over the 2d vertices)."""
    rng = np.random.default_rng(3)
    N = 30_000
    for d, beta in ((50, 0.15), (40, 0.5)):
        direction = rng.normal(size=d) * 0.2
        D = np.tile(direction, (N, 1))
        rows = _compiled_rows if _backends.HAVE_NUMBA else select_rows  # (fast, same)
        lazy = rows(D, beta, rng.bit_generator.random_raw((N, fixed_words(d))),
                    Spill(np.random.default_rng(4)))
        direct = report_noisy_argmin(rng, np.concatenate([D, -D], axis=1), beta)
        table = np.stack([np.bincount(lazy, minlength=2 * d),
                          np.bincount(direct, minlength=2 * d)])
        table = table[:, table.sum(axis=0) >= 10]
        assert table.shape[1] > 10  # the law is spread over many vertices
        assert stats.chi2_contingency(table).pvalue > 1e-3


@needs_numba
@pytest.mark.parametrize("d,beta,scale", [(2, 0.4, 0.3), (3, 0.05, 0.3), (50, 5.0, 0.1),
                                          (50, 0.02, 0.1), (1, 1.0, 0.0)])
@pytest.mark.heavy
def test_numpy_and_compiled_selection_take_the_same_words(d, beta, scale):
    rng = np.random.default_rng(d)
    N = 3000
    D = rng.normal(size=(N, d)) * scale
    words = rng.bit_generator.random_raw((N, fixed_words(d)))
    spills = [Spill(np.random.default_rng(5)) for _ in range(2)]
    a = select_rows(D, beta, words, spills[0])
    b = _compiled_rows(D, beta, words, spills[1])
    np.testing.assert_array_equal(a, b)
    assert spills[0].pos == spills[1].pos and spills[0].buf.size == spills[1].buf.size
    if beta <= 0.05:
        assert spills[0].buf.size > 0  # the spill was needed and served alike


def test_the_spill_serves_rows_in_order_from_where_the_last_stopped():
    spill = Spill(np.random.default_rng(0))
    seen = []

    def sample(need):
        def run(buf, s0):
            if buf.size - s0 < need:
                return -1, 0
            seen.append(buf[s0:s0 + need].copy())
            return 7, 2 + need  # two fixed words, then `need` from the spill
        return run

    assert spill.serve(sample(3000), 2) == 7 and spill.pos == 3000
    assert spill.serve(sample(3000), 2) == 7  # needs a refill: keeps the unused words
    fresh = np.random.default_rng(0).bit_generator.random_raw(2 * Spill.BLOCK)
    np.testing.assert_array_equal(np.concatenate(seen), fresh[:6000])


# ------------------------------------------------------------------ DP-POFW, both backends
def _pofw(backend, **kw):
    base = dict(dim=6, radius=0.8, horizon=120, epsilon=1.0, delta=1e-3, x_bound=1.0,
                y_bound=1.0)
    base.update(kw)
    loss = base.pop("loss", "squared")
    return DPPOFW(loss, backend=backend, **base)


@needs_numba
@pytest.mark.parametrize("loss,epsilon", [("squared", 1.0), ("logistic", 1.0),
                                          ("squared", 300.0)])
def test_dp_pofw_backends_give_the_same_numbers(loss, epsilon):
    """Same seed: the same vertices (hence iterates up to the rounding of the increments),
    the same clipping counts and directions; epsilon = 300 makes the spill work."""
    R = 7
    opts = [_pofw(b, loss=loss, epsilon=epsilon).reset(R, 3) for b in ("numba", "numpy")]
    assert opts[0]._state["kernel"] and not opts[1]._state["kernel"]
    rng = np.random.default_rng(4)
    for _ in range(120):
        x, y = rng.uniform(-1.5, 1.5, (R, 6)), rng.uniform(-1.5, 1.5, R)
        a, b = (o.step(x, y) for o in opts)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(opts[0].last_direction, opts[1].last_direction,
                                   rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(opts[0].n_clipped, opts[1].n_clipped)
    assert opts[0].n_clipped.min() > 0
    if epsilon > 100:
        assert opts[0]._state["spill"].buf.size > 0


@needs_numba
def test_dp_pofw_synthetic_rows_match_an_explicit_zero_sample():
    """``_step_rows`` with a mask equals ``step`` on (0, y_synth) in the unmasked rows,
    including the clip count of a synthetic response above the bound."""
    R = 6
    for backend in ("numba", "numpy"):
        a = _pofw(backend, y_bound=0.3).reset(R, 1)
        b = _pofw(backend, y_bound=0.3).reset(R, 1)
        rng = np.random.default_rng(2)
        for _ in range(40):
            x, y = rng.uniform(-1, 1, (R, 6)), rng.uniform(-1, 1, R)
            mask = rng.random(R) < 0.5
            a._step_rows(x, y, mask, 0.5)
            b.step(np.where(mask[:, None], x, 0.0), np.where(mask, y, 0.5))
            np.testing.assert_array_equal(a.theta, b.theta)
        np.testing.assert_array_equal(a.n_clipped, b.n_clipped)
        assert a.n_clipped.min() > 0


@pytest.mark.parametrize("backend,epsilon", [("numba", 1.0), ("numba", 300.0), ("numpy", 1.0)])
def test_arm_steps_equal_one_masked_step_per_arm(backend, epsilon):
    """``ArmSteps.step`` (one compiled call for K optimizers; new iterates into ``out``)
    gives bit for bit what K calls of
    ``_step_rows`` give, arm k taking (x, y) where arms == k and (0, y_synth) elsewhere,
    including the clip counts; epsilon = 300 makes the spill work."""
    if backend == "numba" and not _backends.HAVE_NUMBA:
        pytest.skip("numba not installed")
    K, R = 3, 9
    fused = [_pofw(backend, epsilon=epsilon, y_bound=0.4).reset(R, k) for k in range(K)]
    apart = [_pofw(backend, epsilon=epsilon, y_bound=0.4).reset(R, k) for k in range(K)]
    group = ArmSteps(fused)
    assert group.fused == (backend == "numba")
    if backend == "numba":  # the one-call path must be the one taken
        for o in fused:
            o._step_rows = None
    rng = np.random.default_rng(8)
    for _ in range(100):
        x, y = rng.uniform(-1.5, 1.5, (R, 6)), rng.uniform(-1, 1, R)
        arms = rng.integers(0, K, R)
        out = np.full((R, K, 6), np.nan)
        group.step(x, y, arms, 0.5, out)
        for k, o in enumerate(apart):
            o._step_rows(x, y, arms == k, 0.5)
        for k, (a, b) in enumerate(zip(fused, apart, strict=True)):
            np.testing.assert_array_equal(a.theta, b.theta)
            np.testing.assert_array_equal(out[:, k], b.theta)  # spilled rows included
    for a, b in zip(fused, apart, strict=True):
        np.testing.assert_array_equal(a.n_clipped, b.n_clipped)
        assert a._state["t"] == b._state["t"] == 100
    assert min(o.n_clipped.min() for o in fused) > 0
    if epsilon > 100 and backend == "numba":
        assert max(o._state["spill"].buf.size for o in fused) > 0


# ------------------------------------------------------------------ DP-HDB through simulate
def _hdb(backend, seed=3, epsilon=1.0, link="identity", **agent):
    env = {"n_arms": 3, "dim": 7, "horizon": 500, "link": link}
    if link == "logistic":
        env["noise"] = "bernoulli"
    return simulate("dpbandits/GLMBandit-v0", "dp-hdb", n_reps=5, seed=seed, env_params=env,
                    agent_params={"backend": backend, "epsilon": epsilon, "link": link,
                                  "t0": 10, **agent})


@needs_numba
@pytest.mark.parametrize("link,epsilon", [("identity", 1.0), ("logistic", 1.0),
                                          ("identity", 100.0)])
@pytest.mark.heavy
def test_dp_hdb_backends_give_the_same_numbers(link, epsilon):
    a, b = _hdb("numba", link=link, epsilon=epsilon), _hdb("numpy", link=link, epsilon=epsilon)
    np.testing.assert_array_equal(a.arms, b.arms)
    np.testing.assert_allclose(a.regret, b.regret, rtol=1e-12, atol=1e-12)


# integration: compiles the parallel kernels cold (about 20 s of CPU in a fresh clone)
@pytest.mark.integration
def test_dp_hdb_same_seed_is_bit_identical_whatever_threads_chunks_prefetch(monkeypatch):
    from dpbandits.privacy import streams

    ref = _hdb("auto")
    assert not np.array_equal(ref.arms, _hdb("auto", seed=4).arms)
    monkeypatch.setenv("DPBANDITS_PREFETCH", "0")
    monkeypatch.setattr(_backends, "PARALLEL_WORK", 1)  # the parallel builds on every round
    monkeypatch.setattr(streams, "CHUNK_BUDGET", 5000)  # other chunk sizes
    again = _hdb("auto")
    np.testing.assert_array_equal(ref.arms, again.arms)
    np.testing.assert_array_equal(ref.regret, again.regret)


def test_the_kernel_path_is_the_default_where_it_applies():
    assert _pofw("auto")._kernel_usable() == _backends.HAVE_NUMBA
    assert not _pofw("auto", selection="gumbel")._kernel_usable()
    assert not _pofw("auto", loss="huber")._kernel_usable()
    assert not _pofw("numpy")._kernel_usable()
    assert not _pofw("auto", epsilon=math.inf, delta=0.0)._kernel_usable()
    with pytest.raises(ValueError, match="backend"):
        _pofw("fortran")


def _scalar_rows(direction, beta, words, spill):
    """The reference order with the plain-Python scalar sampler: every row from its fixed
    words, then the rows that ran out served in order from the spill."""
    M = np.abs(direction).max(axis=1)
    cand = np.zeros(sign_words(direction.shape[1]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        idx = np.array([select_row(direction[r], 1.0, M[r], beta, words[r], EMPTY, 0, cand)[0]
                        for r in range(len(words))])
        for r in np.flatnonzero(idx < 0):
            idx[r] = spill.serve(lambda b, s0, r=r: select_row(direction[r], 1.0, M[r], beta,
                                                               words[r], b, s0, cand),
                                 words.shape[1])
    return idx


# d around the sign-word boundaries (2d = 64, 128) and beta from noise- to spread-dominated
@pytest.mark.parametrize("d", [1, 3, 31, 32, 33, 64, 65])
@pytest.mark.parametrize("beta", [300.0, 2.0, 0.3, 0.02])
def test_vectorized_selection_takes_the_scalar_samplers_words(d, beta):
    """``select_rows`` is the vectorized form of ``select_row``: the same index from the same
    words, row by row, and the same spill words consumed. Deterministic, so any change of
    the vectorized walk (gaps, exclusions, the two pick steps, the fallback) fails here;
    the law of ``select_row`` itself is the chi-square tests' subject above. Rows mix
    scales (one all-zero row: no thinning walk) so every branch is taken."""
    rng = np.random.default_rng(1000 + d)
    N = 160
    D = rng.normal(size=(N, d)) * rng.choice([0.0, 0.01, 0.3, 1.0], size=(N, 1))
    D[0] = 0.0
    D[1] = np.where(np.arange(d) % 2, 0.5, -0.5)  # ties at +/- M
    words = rng.bit_generator.random_raw((N, fixed_words(d)))
    # words at the ends of the grid (a zero uniform, a uniform of 1, fields all ones: the
    # picks' rejection loops run on) in a third of the places after the sign words
    special = np.array([0, 2**64 - 1, 2**63, 2**11 - 1, 2**11], dtype=np.uint64)
    nw = sign_words(d)
    put = rng.random((N, words.shape[1] - nw)) < 1 / 3
    words[:, nw:][put] = rng.choice(special, size=int(put.sum()))
    spills = [Spill(np.random.default_rng(7)) for _ in range(2)]
    got = select_rows(D, beta, words, spills[0])
    np.testing.assert_array_equal(got, _scalar_rows(D, beta, words, spills[1]))
    assert (spills[0].pos, spills[0].buf.size) == (spills[1].pos, spills[1].buf.size)
    assert np.all((0 <= got) & (got < 2 * d))


@pytest.mark.parametrize("d, signs", [(12, 2**24 - 1), (8, 0b11), (8, 0b111111)])
def test_a_pick_word_with_every_field_rejected_moves_to_the_next_word(d, signs):
    """Rows whose pick word is all ones: with ``beta`` far above the spread the walk ends at
    the first gap, the candidates are the sign bits, and every field of the all-ones word is
    out of range (``2^5 - 1 >= 2d = 24`` for the many-candidates pick; ``7 >= 6`` for the
    k-th-candidate pick), so both samplers must take the next word, never the word's leftover
    top bits. Rows with two candidates (one bit per field, 64 fields) share the batch, so the
    vectorized loop runs past the all-ones row's last whole field."""
    nw = sign_words(d)
    F = fixed_words(d)
    rng = np.random.default_rng(5)
    words = rng.bit_generator.random_raw((4, F))
    words[:, 0] = [signs, 0b11, signs, 0b11]
    words[:, nw] = 2**62  # the first gap: u = 1/4, far beyond the 2d positions
    words[0::2, nw + 1] = 2**64 - 1
    D = np.full((4, d), 0.5)
    spills = [Spill(np.random.default_rng(7)) for _ in range(2)]
    got = select_rows(D, 1e6, words, spills[0])
    np.testing.assert_array_equal(got, _scalar_rows(D, 1e6, words, spills[1]))

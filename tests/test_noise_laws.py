"""The one sampler per noise law in :mod:`dpbandits.privacy.mechanisms`: the symmetric Gaussian
matrix in each law the components use (property tests: exact symmetry and the variances of
the diagonal and off-diagonal entries the law declares), the two exact methods of the Laplace
and exponential-mechanism samplers, report-noisy-min/max with Gaussian noise (its law by
quadrature) and with excluded candidates, and the compiled twins of DP-UCB (nodes built by the
kernels from the samplers' variates equal the samplers' nodes).

Variance checks: ``N`` draws of a ``N(0, v)`` entry have a sample variance with standard error
``v sqrt(2 / N)``; the tolerance is 5 of those (a false alarm has probability about 6e-7 per
entry, and the seeds are fixed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpbandits.agents import _ucb_ops
from dpbandits.agents.screened_ls import gram_noise
from dpbandits.privacy import mechanisms as mech

N = 20_000
ALPHA = 1e-3

#: the laws the components call the sampler with: name -> (sigma_diag / sigma_off)
LAWS = {
    # (Z + Z^T)/sqrt 2: DP-UCB's nodes, the authors'-code DP-UCB, the screened Gram/moment
    "goe": math.sqrt(2.0),
    # i.i.d. upper triangle, diagonal included: LDP-LinUCB's randomizer
    "iid": 1.0,
}


def _within_five_se(sample_var: np.ndarray, var: float, n: int) -> bool:
    return bool(np.all(np.abs(sample_var - var) <= 5.0 * var * math.sqrt(2.0 / n)))


@pytest.mark.parametrize("law", sorted(LAWS))
@given(n=st.integers(1, 5), sigma=st.floats(1e-3, 1e3), draws=st.sampled_from(["packed",
                                                                                "square"]),
       seed=st.integers(0, 2**32 - 1))
def test_symmetric_sampler_is_symmetric_with_the_declared_variances(law, n, sigma, draws, seed):
    s_diag = sigma * LAWS[law]
    z = mech.symmetric_gaussian(np.random.default_rng(seed), n, sigma_off=sigma,
                                sigma_diag=s_diag, size=N, draws=draws)
    assert z.shape == (N, n, n)
    assert np.array_equal(z, np.swapaxes(z, 1, 2))  # exact, not up to rounding
    assert _within_five_se(np.mean(np.diagonal(z, axis1=1, axis2=2) ** 2, axis=0), s_diag**2, N)
    iu, ju = np.triu_indices(n, 1)
    assert _within_five_se(np.mean(z[:, iu, ju] ** 2, axis=0), sigma**2, N)


@given(n=st.integers(1, 5), sigma=st.floats(1e-3, 1e3), seed=st.integers(0, 2**32 - 1))
def test_the_screened_gram_law_is_sigma_squared_on_the_scaled_half_vectorization(n, sigma,
                                                                               seed):
    """dp-screened-ls / dp-moment-ls / adac-oful: N(0, sigma^2) on the diagonal and on the
    off-diagonals times sqrt 2 (the vector their fit_sensitivity is computed for)."""
    z = gram_noise(np.random.default_rng(seed), (N, n, n), sigma)
    assert np.array_equal(z, np.swapaxes(z, 1, 2))
    assert _within_five_se(np.mean(np.diagonal(z, axis1=1, axis2=2) ** 2, axis=0), sigma**2, N)
    iu, ju = np.triu_indices(n, 1)
    assert _within_five_se(np.mean((math.sqrt(2.0) * z[:, iu, ju]) ** 2, axis=0), sigma**2, N)


def test_the_variance_check_rejects_the_other_law():
    """Power: the iid law's diagonal fails the goe law's declared diagonal variance."""
    z = mech.symmetric_gaussian(np.random.default_rng(0), 3, sigma_off=1.0, sigma_diag=1.0,
                                size=N)
    assert not _within_five_se(np.mean(np.diagonal(z, axis1=1, axis2=2) ** 2, axis=0), 2.0, N)


def test_forms_and_draw_orders_agree():
    """``packed``, ``upper`` and ``full`` hold the same numbers; ``square`` draws n^2 + n
    normals (its strict upper triangle, then the diagonal), ``packed`` n(n+1)/2."""
    n, kw = 4, {"sigma_off": 0.5, "sigma_diag": 2.0, "size": (2, 3)}
    full = mech.symmetric_gaussian(np.random.default_rng(1), n, **kw)
    upper = mech.symmetric_gaussian(np.random.default_rng(1), n, form="upper", **kw)
    packed = mech.symmetric_gaussian(np.random.default_rng(1), n, form="packed", **kw)
    iu, ju = np.triu_indices(n)
    assert np.array_equal(np.triu(full), upper)
    assert np.array_equal(full[..., iu, ju], packed)
    g = np.random.default_rng(2)
    square, diag = g.standard_normal((2, 3, n, n)), g.standard_normal((2, 3, n))
    sq = mech.symmetric_gaussian(np.random.default_rng(2), n, draws="square", **kw)
    strict = np.triu_indices(n, 1)
    assert np.array_equal(sq[..., strict[0], strict[1]], 0.5 * square[..., strict[0], strict[1]])
    assert np.array_equal(np.diagonal(sq, axis1=-2, axis2=-1), 2.0 * diag)


@pytest.mark.parametrize("kwargs, match", [
    ({"sigma_off": -1.0, "sigma_diag": 1.0}, "sigma_off"),
    ({"sigma_off": 1.0, "sigma_diag": math.nan}, "sigma_diag"),
    ({"sigma_off": 1.0, "sigma_diag": 1.0, "form": "lower"}, "form"),
    ({"sigma_off": 1.0, "sigma_diag": 1.0, "draws": "row"}, "draws"),
])
def test_symmetric_sampler_names_the_bad_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mech.symmetric_gaussian(np.random.default_rng(0), 3, **kwargs)


@pytest.mark.parametrize("method", mech.LAPLACE_METHODS)
def test_both_laplace_methods_draw_the_laplace_law(method):
    x = mech.laplace_noise(np.random.default_rng(3), 0.7, N, method=method)
    assert stats.kstest(x, stats.laplace(scale=0.7).cdf).pvalue > ALPHA


def test_laplace_method_is_checked():
    with pytest.raises(ValueError, match="method"):
        mech.standard_laplace(np.random.default_rng(0), 3, method="ziggurat")


@pytest.mark.parametrize("method", mech.EXPONENTIAL_METHODS)
def test_both_exponential_mechanism_methods_draw_the_softmax_law(method):
    scores = np.array([0.3, -0.2, 0.05, 0.0])
    idx = mech.exponential_mechanism(np.random.default_rng(4), np.tile(scores, (N, 1)), 0.2,
                                     method=method)
    probs = mech.exponential_mechanism_probabilities(scores, 0.2)
    counts = np.bincount(idx, minlength=scores.size)
    assert stats.chisquare(counts, probs * N).pvalue > ALPHA


def test_exponential_mechanism_at_scale_zero_is_the_argmax_for_both_methods():
    scores = np.array([[0.1, 0.7, 0.7, -1.0]])
    for method in mech.EXPONENTIAL_METHODS:
        assert mech.exponential_mechanism(np.random.default_rng(0), scores, 0.0,
                                          method=method).tolist() == [1]


# -- Gaussian noise into a buffer -------------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.0, 1.0, 0.37])
def test_gaussian_noise_into_a_buffer_draws_the_same_numbers(sigma):
    """``out=`` (NoisySGD's reused buffer) fills the same numbers, in the same order, as the
    allocating call, and leaves the generator in the same state."""
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    want = mech.gaussian_noise(r1, sigma, (3, 5, 4))
    buf = np.empty((3, 5, 4))
    got = mech.gaussian_noise(r2, sigma, (3, 5, 4), out=buf)
    assert got is buf and got.tobytes() == want.tobytes()
    assert r1.random() == r2.random()


@pytest.mark.parametrize("out", [np.empty((3, 4)), np.empty((4, 3), dtype=np.float32),
                                 np.empty((4, 6))[:, ::2], [0.0] * 12])
def test_gaussian_noise_refuses_a_bad_buffer(out):
    with pytest.raises(ValueError, match=r"out must be .*float64 .*shape size = \(4, 3\)"):
        mech.gaussian_noise(np.random.default_rng(0), 1.0, (4, 3), out=out)


# -- report-noisy-min/max ----------------------------------------------------------------------
def _gaussian_argmin_probabilities(scores: np.ndarray, sigma: float) -> np.ndarray:
    """``P(i) = int phi_sigma(x - s_i) prod_{j != i} P(N(s_j, sigma²) > x) dx`` by quadrature."""
    from scipy import integrate

    def p(i):
        others = np.delete(scores, i)
        f = lambda x: (stats.norm.pdf(x, scores[i], sigma)  # noqa: E731
                       * np.prod(stats.norm.sf(x, others, sigma)))
        return integrate.quad(f, scores.min() - 12 * sigma, scores.max() + 12 * sigma,
                              points=list(scores), limit=200)[0]
    return np.array([p(i) for i in range(scores.size)])


def test_gaussian_report_noisy_argmin_draws_its_law():
    scores = np.array([0.3, -0.2, 0.05, 0.0])
    idx = mech.gaussian_report_noisy_argmin(np.random.default_rng(12), np.tile(scores, (N, 1)),
                                            0.25)
    probs = _gaussian_argmin_probabilities(scores, 0.25)
    assert probs.sum() == pytest.approx(1.0, abs=1e-8)
    counts = np.bincount(idx, minlength=scores.size)
    assert stats.chisquare(counts, probs * N).pvalue > ALPHA
    # argmax of the scores is argmin of their negation, in law
    idx = mech.gaussian_report_noisy_argmax(np.random.default_rng(13),
                                            np.tile(-scores, (N, 1)), 0.25)
    counts = np.bincount(idx, minlength=scores.size)
    assert stats.chisquare(counts, probs * N).pvalue > ALPHA


@pytest.mark.parametrize("largest", [True, False])
def test_gaussian_report_noisy_selection_is_the_argmin_of_the_gaussian_noise(largest):
    """Bit for bit ``arg{max,min}(scores + gaussian_noise(rng, sigma, scores.shape))``, the
    inline code PrivateRandomSearch used before."""
    scores = np.random.default_rng(1).normal(size=(6, 9))
    pick = mech.gaussian_report_noisy_argmax if largest else mech.gaussian_report_noisy_argmin
    got = pick(np.random.default_rng(2), scores, 0.4)
    noisy = scores + np.random.default_rng(2).normal(0.0, 0.4, scores.shape)
    want = np.argmax(noisy, axis=1) if largest else np.argmin(noisy, axis=1)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
    assert pick(np.random.default_rng(2), scores, 0.0).tolist() == (
        np.argmax(scores, axis=1) if largest else np.argmin(scores, axis=1)).tolist()


@pytest.mark.parametrize("pick", [mech.report_noisy_argmax, mech.report_noisy_argmin,
                                  mech.gaussian_report_noisy_argmax,
                                  mech.gaussian_report_noisy_argmin])
def test_excluded_candidates_are_never_chosen_and_the_draws_do_not_depend_on_them(pick):
    scores = np.zeros((400, 5))
    exclude = np.zeros((400, 5), dtype=bool)
    exclude[:, [0, 3]] = True
    exclude[::2, 4] = True
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    idx = pick(r1, scores, 1.0, exclude=exclude)
    assert not exclude[np.arange(400), idx].any()
    assert set(idx.tolist()) == {1, 2, 4}
    pick(r2, scores, 1.0)
    assert r1.random() == r2.random()


def test_report_noisy_argmax_takes_a_scale_per_row():
    """A per-row scale multiplies each row's standard Laplace variates (peeling's use); a
    zero-scale row is the exact argmax."""
    scores = np.array([[0.0, 5.0, 1.0], [0.0, 5.0, 1.0]])
    b = np.array([0.0, 2.0])
    got = mech.report_noisy_argmax(np.random.default_rng(4), scores, b)
    noisy = scores + b[:, None] * mech.standard_laplace(np.random.default_rng(4), (2, 3),
                                                        method="inversion")
    assert got.tolist() == np.argmax(noisy, axis=1).tolist() and got[0] == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(scale=np.array([1.0, -1.0])), r"scale must be >= 0 in every row, got min -1"),
    (dict(scale=np.array([1.0, 1.0, 1.0])), r"scale must have shape \(2\)"),
    (dict(scale=1.0, exclude=np.ones((2, 3), dtype=bool)),
     "exclude must leave at least one candidate in every row"),
    (dict(scale=1.0, exclude=np.zeros((2, 2), dtype=bool)),
     r"exclude must be a bool array of the scores' shape \(2, 3\), got bool of shape"),
    (dict(scale=1.0, exclude=np.zeros((2, 3))), "exclude must be a bool array"),
])
def test_report_noisy_argmax_names_the_bad_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mech.report_noisy_argmax(np.random.default_rng(0), np.zeros((2, 3)), **kwargs)


# -- compiled twins of DP-UCB ------------------------------------------------------------------
def _kernel_node(backend: str, z: np.ndarray, n: int, scales: np.ndarray) -> np.ndarray:
    """The symmetric Gaussian node DP-UCB's update (step 3) pushes on an empty noise stack
    from the packed normals ``z`` (R, n(n+1)/2), as an upper triangle."""
    R, D = z.shape[0], n - 1
    ops = _ucb_ops.ucb_ops(backend, R, n)
    stack = np.zeros((1, R, n, n))
    ops["ucb_update"](np.zeros((R, n, n)), np.zeros((R, D)), np.zeros(R, dtype=np.int64),
                      np.zeros(R), np.array([1.0, 1.0]), np.zeros((R, 3), dtype=np.int64),
                      stack, 0, -1, z, scales, np.zeros((R, n, n)), np.zeros((R, n, n)),
                      False, 1e6, np.zeros((R, 1, D, D)), np.zeros((R, D)), np.zeros(R),
                      np.ones(R, dtype=np.bool_))
    return stack[0]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_dp_ucb_kernel_nodes_equal_the_symmetric_sampler(backend):
    """For the same generator state the kernel's node is exactly the sampler's upper
    triangle (law of (Z + Z^T)/sqrt 2)."""
    n, R, s = 4, 6, 0.8
    z = np.random.default_rng(7).standard_normal((R, n * (n + 1) // 2))
    node = _kernel_node(backend, z, n, np.array([s, s * math.sqrt(2.0)]))
    ref = mech.symmetric_gaussian(np.random.default_rng(7), n, sigma_off=s,
                                  sigma_diag=s * math.sqrt(2.0), size=R, form="upper")
    assert np.array_equal(node, ref)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_dp_ucb_kernel_wishart_nodes_equal_the_wishart_sampler(backend):
    """For the same generator state (the strict upper triangle's normals, then the
    chi-squares) the kernel's ``scale U U^T`` is :func:`wishart_matrix`'s draw, up to the
    rounding of LAPACK's dlauum against matmul."""
    n, df, c, R = 4, 6.5, 1.5, 8
    rng = np.random.default_rng(8)
    z = rng.standard_normal((R, n * (n - 1) // 2))
    chi = rng.chisquare(df - n + 1 + np.arange(n), size=(R, n))
    out = np.zeros((R, n, n))
    _ucb_ops.ucb_ops(backend, R, n)["wishart_into"](out, z, chi, c)
    ref = mech.wishart_matrix(np.random.default_rng(8), n, df, c, R)
    assert np.allclose(np.triu(out), np.triu(ref), rtol=1e-13, atol=1e-13)

"""The one row-norm / clip / normalize primitive of :mod:`dpbandits.geometry` over the whole
float range: subnormals, tiny mixed with large, near overflow, signed zeros. Every bound is
checked in exact rational arithmetic on the floats returned (``||out||_2^2 <= c^2`` as a
``Fraction``; ``l_1`` and ``l_inf`` exactly too; other ``q`` with 60-digit ``mpmath``)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from _exact import exact_norm, exact_norm_at_most
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpbandits.geometry import (
    clip_limits,
    clip_rows,
    clip_to_norm,
    clipped_coefficients,
    gradient_rows,
    lp_norm,
    norm_error_bound,
    normalize_to_norm,
)
from dpbandits.privacy.contributions import largest_change, largest_norm

INF = math.inf
PROPS = settings(max_examples=150, deadline=None)

# every finite float, biased towards the troublesome ends of the range
_entries = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-300, max_value=1e-300),  # squares underflow
    st.floats(min_value=-5e-308, max_value=5e-308),  # subnormal or nearly
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1e308, -1.7976931348623157e308,
                     2.0**-537, 1.0, -1.0]),
    st.floats(min_value=1e300, max_value=1.7976931348623157e308),  # squares overflow
)
_rows = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 9)), elements=_entries)
_q = st.sampled_from([1.0, 1.5, 2.0, 3.0, 7.0, INF])
_bound = st.one_of(st.sampled_from([1.0, 0.7, 1e-200, 1e250, 5e-324, 1e-310]),
                   st.floats(min_value=1e-240, max_value=1e300))


# -- norms ------------------------------------------------------------------------------------
@PROPS
@given(x=_rows, q=_q)
@example(x=np.full((1, 64), 2.0**-537), q=2.0)
@example(x=np.full((1, 3), 1e308), q=2.0)
@example(x=np.array([[5e-324, -0.0, 0.0]]), q=2.0)
def test_norm_is_accurate_over_the_whole_float_range(x, q):
    """Relative error within norm_error_bound (the margin every certificate rests on) for
    norms above 2^-900; an overflowing norm is inf only when the true one is too."""
    got = lp_norm(x, q)
    eta = norm_error_bound(q, x.shape[-1])
    for row, n in zip(x, got, strict=True):
        true = exact_norm(row, q)
        if math.isinf(true):
            assert math.isinf(n)
        elif true > 2.0**-900:
            assert abs(n - true) <= eta * true
        else:
            assert abs(n - true) <= 2.0**-900


def test_underflowing_squares_no_longer_give_a_small_norm():
    x = np.full(64, 0.7071) * 2.0**-537
    x[0] = math.sqrt(1.4999) * 2.0**-537
    naive = math.sqrt(float(np.dot(x, x)))
    assert naive < 0.2 * exact_norm(x, 2.0)  # the pattern of the violation
    assert lp_norm(x, 2.0) == pytest.approx(exact_norm(x, 2.0), rel=1e-15)


@PROPS
@given(x=_rows, q=_q)
@example(x=np.full((2, 64), 2.0**-537) * np.array([[1.0], [-1.0]]), q=2.0)
def test_contract_measurements_are_the_primitive(x, q):
    """The contract's ``largest_norm`` / ``largest_change`` (privacy.contributions) measure
    with the primitive the components clip with: the same numbers as ``lp_norm`` row by row
    and pair by pair, accurate over the whole float range; a difference that overflows is
    ``inf``."""
    size, i = largest_norm(x, q)
    assert size == float(lp_norm(x, q).max()) and size == lp_norm(x[i], q)
    with np.errstate(over="ignore", invalid="ignore"):
        diffs = np.abs(x[:, None, :] - x[None, :, :])
    change, i, j = largest_change(x, q)
    if not np.all(np.isfinite(diffs)):
        assert change == INF
        return
    want = lp_norm(diffs, q)
    assert change == want.max() and change == want[i, j]
    true = max(exact_norm(d, q) for d in diffs.reshape(-1, x.shape[1]))
    if math.isinf(true):  # the norm itself exceeds the largest float
        assert change == INF
    elif true > 2.0**-900:
        assert abs(change - true) <= norm_error_bound(q, x.shape[1]) * true


# -- clipping ---------------------------------------------------------------------------------
@PROPS
@given(x=_rows, q=_q, bound=_bound)
@example(x=np.full((1, 64), 2.0**-537), q=2.0, bound=1e-160)
@example(x=np.array([[1e308, 1e308, -1e308]]), q=2.0, bound=1.0)
@example(x=np.array([[3.0, 4.0]]), q=2.0, bound=5.0)  # on the bound: pulled inside, ulps
def test_clip_bound_holds_exactly(x, q, bound):
    out, norms = clip_rows(x, q, bound)
    assert out.shape == x.shape and np.all(np.isfinite(out))
    for row_in, row, n in zip(x, out, norms, strict=True):
        assert exact_norm_at_most(row, q, bound)
        if n <= clip_limits(bound, q, x.shape[-1])[0] if bound >= 2.0**-800 else False:
            assert np.array_equal(row, row_in)  # certified inside: untouched, bit for bit
        if n > bound and bound >= 1e-200 and np.any(row_in != 0):
            # scaled onto the bound from inside, direction kept
            assert exact_norm(row, q) >= bound * (1 - 1e-12)
            assert not np.any(np.sign(row) * np.sign(row_in) < 0)  # no sign flips


@PROPS
@given(x=_rows, q=_q)
@example(x=np.full((1, 64), 2.0**-537), q=2.0)
@example(x=np.array([[1e308, 1e308, -1e308]]), q=2.0)
@example(x=np.array([[-0.0, 0.0], [0.0, -5e-324]]), q=2.0)
def test_normalize_gives_unit_rows_exactly_inside(x, q):
    u, zero = normalize_to_norm(x, q)
    for row_in, row, z in zip(x, u, zero, strict=True):
        assert exact_norm_at_most(row, q, 1.0)
        if z:
            assert np.all(row == 0.0) and np.all(row_in == 0.0)
        else:
            assert exact_norm(row, q) >= 1 - 1e-12
            assert not np.any(np.sign(row) * np.sign(row_in) < 0)  # no sign flips


_psi = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e300, max_value=1.7976931348623157e308),
    st.floats(min_value=-1.7976931348623157e308, max_value=-1e300),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1.9 * 2.0**1023, -1.9 * 2.0**1023, 5e-324, INF,
                     -INF, math.nan]),
)
_gradient_bound = st.one_of(
    st.sampled_from([2.0**-51, 2.0**-800, 1e-200, 1.0, 0.7, 1e250, 1e300, 0.0, INF]),
    st.floats(min_value=2.0**-800, max_value=1e300))


@settings(max_examples=200, deadline=None)
@given(x=_rows, q=_q, bound=_gradient_bound, psi=st.lists(_psi, min_size=4, max_size=4))
@example(x=np.array([[1.0]]), q=2.0, bound=2.0**-51, psi=[1.9 * 2.0**1023] * 4)  # issue 34.1
@example(x=np.array([[1.0, 0.0]]), q=2.0, bound=2.0**-51, psi=[-1.9 * 2.0**1023] * 4)
@example(x=np.array([[5e-324, 5e-324]]), q=2.0, bound=2.0**-800, psi=[1e300] * 4)
@example(x=np.array([[1e308, -1e308]]), q=2.0, bound=2.0**-800, psi=[1e-300] * 4)
@example(x=np.array([[3.0, 1.0]]), q=INF, bound=0.7, psi=[1e10] * 4)
def test_gradient_coefficients_bound_psi_x_over_the_whole_float_range(x, q, bound, psi):
    """The batch oracle / NoisySGD path: the gradient ``psi x`` of a linear-predictor loss
    clipped as ``coef * row`` (:func:`gradient_rows`, :func:`clipped_coefficients`, one
    rounding per entry). Exact norm ``<= bound`` for every finite row and every ``psi``
    (huge, subnormal, infinite or NaN); unclipped gradients are ``psi x`` bit for bit."""
    g = gradient_rows(x, q, bound)
    psi_col = np.resize(np.asarray(psi), x.shape[0])
    coef, was = clipped_coefficients(psi_col, g.norms, g.unclipped, g.clipped, g.limit,
                                     g.bound)
    with np.errstate(over="ignore", invalid="ignore"):
        out = coef[:, None] * g.rows
    for row_in, row, p, size_ok, kept in zip(x, out, psi_col, ~was, g.unclipped == 1.0,
                                             strict=True):
        if math.isinf(bound):
            continue  # no clipping, no claim
        assert np.all(np.isfinite(row)) and exact_norm_at_most(row, q, bound), (row_in, p)
        if kept and size_ok and abs(p) * lp_norm(row_in, q) <= g.limit:
            with np.errstate(over="ignore", invalid="ignore"):
                assert np.array_equal(row, p * row_in)  # unclipped: the gradient itself


def test_gradient_rows_keep_ordinary_rows_and_clip_along_the_row():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1e-200, 0.0]])
    g = gradient_rows(x, 2.0, 1.0)
    assert g.rows is x and np.all(g.unclipped == 1.0)  # no extreme row: nothing replaced
    coef, was = clipped_coefficients(np.array([-10.0, 5.0, 1.0]), g.norms, g.unclipped,
                                     g.clipped, g.limit, g.bound)
    assert was.tolist() == [True, False, False]
    np.testing.assert_allclose(coef[0] * x[0], [-0.6, -0.8], rtol=1e-13)
    assert coef[1:].tolist() == [5.0, 1.0]
    tiny = gradient_rows(np.array([[5e-324, 5e-324]]), 2.0, 1.0)
    # replaced by its certified unit row: coefficients |psi| ||x|| or target
    assert tiny.unclipped[0] == tiny.norms[0] and tiny.clipped[0] == tiny.target
    assert exact_norm_at_most(tiny.rows[0], 2.0, 1.0) and tiny.rows[0, 0] > 0.7


def test_rows_inside_are_untouched_and_clipped_rows_move_by_ulps_only():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 12)) * rng.choice([1e-3, 1.0, 30.0], (400, 1))
    out, norms = clip_rows(x, 2.0, 1.0)
    inside = norms <= clip_limits(1.0, 2.0, 12)[0]
    assert inside.sum() > 50 and (~inside).sum() > 50
    assert np.array_equal(out[inside], x[inside])
    np.testing.assert_allclose(lp_norm(out[~inside], 2.0), 1.0, rtol=1e-13)
    assert np.all(lp_norm(out[~inside], 2.0) < 1.0)


def test_tiny_and_zero_bounds():
    x = np.array([[1.25, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, -0.0, 0.0]])
    for bound in (5e-324, 2.2e-313, 1e-310, 1e-250):
        for q in (1.0, 1.05, 2.0, INF):
            out, _ = clip_rows(x, q, bound)
            assert all(exact_norm_at_most(r, q, bound) for r in out)
    out, was = clip_to_norm(x, 2.0, 0.0)
    assert np.all(out == 0.0) and was.tolist() == [True, True, False]
    with pytest.raises(ValueError, match=r"bound must be 0, inf or at least 2\^-800.*1e-300"):
        clip_limits(1e-300, 2.0, 3)


def test_non_finite_input_is_refused_naming_the_entry():
    for f in (lambda v: clip_to_norm(v, 2.0, 1.0), lambda v: normalize_to_norm(v)):
        with pytest.raises(ValueError, match=r"x\[1, 2\] = (np\.float64\()?nan"):
            f(np.array([[1.0, 2.0, 3.0], [0.0, 1.0, np.nan]]))
        with pytest.raises(ValueError, match=r"x\[0, 0\] = (np\.float64\()?-?inf"):
            f(np.array([[-np.inf, 2.0]]))
    with pytest.raises(ValueError, match="bound"):
        normalize_to_norm(np.ones(3), 2.0, 0.0)


# -- compiled twins against the primitive -------------------------------------------------------
_ADVERSARIAL = [
    np.full(64, 0.7071) * 2.0**-537,
    np.array([1e308, 1e308, -1e308]),
    np.array([-0.0, 0.0, 5e-324]),
    np.array([-1e300, 2.0**-1070, -0.0, 3e-310, 2.0**-1070]),
    np.array([3.0, 4.0]),  # on the bound 5: pulled inside
    np.array([5e-324]),
    np.zeros(4),
]


@pytest.mark.parametrize("bound", [5.0, 1.0, 1e-200, 1e250])
def test_compiled_l2_twin_matches_the_primitive_on_adversarial_floats(bound):
    numba = pytest.importorskip("numba")
    from dpbandits.geometry import _limits, clip_row_l2_into

    twin = numba.njit(clip_row_l2_into)
    rng = np.random.default_rng(11)
    rows = _ADVERSARIAL + [rng.standard_normal(9) * s for s in (1e-160, 1.0, 7.0, 1e160)]
    limit, target = _limits(bound, 2.0, 1)  # d-specific below
    for row in rows:
        limit, target = _limits(bound, 2.0, row.size)
        out = np.empty_like(row)
        nrm = twin(row, bound, limit, target, out)
        ref, ref_norm = clip_rows(row[None, :], 2.0, bound)
        assert exact_norm_at_most(out, 2.0, bound)
        assert (nrm > bound) == (ref_norm[0] > bound)
        np.testing.assert_allclose(nrm, ref_norm[0], rtol=1e-14)
        np.testing.assert_allclose(out, ref[0], rtol=1e-13, atol=0)


@pytest.mark.parametrize("bound", [0.7, 1e-200, 3e-320])
def test_compiled_linf_twin_is_identical_to_the_primitive(bound):
    pytest.importorskip("numba")
    from dpbandits.optim.streaming import _pofw_kernels

    rng = np.random.default_rng(12)
    rows = _ADVERSARIAL + [rng.standard_normal(9) * s for s in (1e-160, 1.0, 7.0, 1e160)]
    for row in rows:
        nrm = np.abs(row).max()
        if not nrm > bound:
            continue
        out = _pofw_kernels._clip_into(row, nrm, bound, np.empty_like(row))
        ref, _ = clip_rows(row[None, :], INF, bound)
        assert np.array_equal(out, ref[0]) and np.abs(out).max() <= bound


@settings(max_examples=150, deadline=None)
@given(x=_rows, q=st.sampled_from([1.5, 3.0, 1.25, 7.0]),
       bound=st.one_of(st.sampled_from([1.0, 2.0**-800, 1e-200, 1e250]),
                       st.floats(min_value=2.0**-800, max_value=1e300)))
@example(x=np.full((2, 20), 20.0**(-1 / 3)), q=3.0, bound=1.0)  # DP-TOFW's rows: on the bound
def test_compiled_lq_clip_is_the_numpy_clip_bit_for_bit(x, q, bound):
    """DP-TOFW's compiled input clip (``_clip_kernels.clip_rows_lq``, the twin of
    :func:`clip_rows`): every row's exact norm within the bound; with numpy's AVX2 loops
    (the suite's pinned dispatch) the very same floats as the numpy path."""
    pytest.importorskip("numba")
    from dpbandits._backends import kernels

    kernel = kernels("optim.streaming._clip_kernels").clip_rows_lq
    d = x.shape[-1]
    limit, target = clip_limits(bound, q, d)
    shrink = 1.0 - 2.0 * norm_error_bound(q, d) - 12.0 * 2.0**-53
    out, norms = np.empty_like(x), np.empty(x.shape[0])
    kernel(x, q, limit, target, shrink, out, norms)
    for row in out:
        assert exact_norm_at_most(row, q, bound)
    if os.environ.get("NPY_DISABLE_CPU_FEATURES"):
        ref, ref_norms = clip_rows(x, q, bound)
        assert np.array_equal(out, ref) and np.array_equal(norms, ref_norms)

"""Tests that kill the privacy-relevant mutants of :mod:`dpbandits.geometry` which the rest of
the fast suite let survive (issue 34 item 5; docs/mutation-report.md lists them).

The compiled kernels' twins (``clip_row_l2_into``, ``clip_row_lq_into`` and their helpers)
are plain Python that numba compiles; here they run uncompiled, so a mutation of their source
is seen (numba cannot compile the mutation tool's wrappers). Every bound is checked in exact
arithmetic on the floats returned (:func:`exact_norm_at_most`)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from _exact import exact_norm, exact_norm_at_most

from dpbandits import geometry
from dpbandits.geometry import (
    _limits,
    clip_limits,
    clip_row_l2_into,
    clip_row_lq_into,
    clip_rows,
    clip_to_norm,
    clipped_coefficients,
    dual_exponent,
    gradient_rows,
    kappa_q,
    lmo_lp_ball,
    lp_norm,
    noise_geometry,
    norm_error_bound,
    normalize_rows,
    normalize_to_norm,
    pairwise_sum,
    plus_norm,
    q_plus,
    row_lq_norm,
    row_max,
    unit_lq_norm,
)

INF = math.inf
_U = 2.0**-53


def _rows() -> list[np.ndarray]:
    """Rows over the whole float range: tiny, huge, mixed, signed zeros, on the bound, and
    lengths across the eight-accumulator summation (1..20 entries)."""
    rng = np.random.default_rng(34)
    rows = [
        np.array([3.0, 4.0]),
        np.array([-0.0, 0.0, -0.0]),
        np.array([5e-324]),
        np.array([1e308, -1e308, 1e308]),
        np.array([1e-300, -1e300, 2.0**-1074]),
        np.full(64, 2.0**-537),
        np.array([-7.0]),
    ]
    for n in (1, 3, 8, 9, 17, 20):
        for s in (1e-160, 1.0, 7.0, 1e160):
            rows.append(rng.standard_normal(n) * s)
    return rows


# -- the l_2 twin (DP-UCB / Wishart kernels) ---------------------------------------------------
@pytest.mark.parametrize("bound", [5.0, 1.0, 0.25, 1e-200, 1e250])
def test_l2_twin_uncompiled_holds_the_bound_and_is_the_primitive(bound):
    """A row inside ``limit`` is returned bit for bit with its computed norm; a row above
    is scaled along itself to just inside the bound (exact norm ``<= bound``, within
    ``1e-12`` of it), as :func:`clip_rows` does."""
    for row in _rows():
        limit, target = _limits(bound, 2.0, row.size)
        out = np.full_like(row, np.nan)
        nrm = clip_row_l2_into(row, bound, limit, target, out)
        ref, ref_norm = clip_rows(row[None, :], 2.0, bound)
        assert exact_norm_at_most(out, 2.0, bound), (row, bound)
        assert nrm == pytest.approx(ref_norm[0], rel=1e-14, abs=0.0)
        if ref_norm[0] <= limit:
            assert np.array_equal(out, row) and np.array_equal(np.signbit(out), np.signbit(row))
        else:
            np.testing.assert_allclose(out, ref[0], rtol=1e-13, atol=0)
            assert exact_norm(out, 2.0) >= bound * (1 - 1e-12)


# -- the l_q twin (DP-TOFW's compiled input clip) ----------------------------------------------
def test_pairwise_sum_is_numpys_summation_bit_for_bit():
    """The norm of the compiled clip equals numpy's only if the sum is taken in numpy's
    order; mixed magnitudes make any other order round differently."""
    rng = np.random.default_rng(7)
    for n in range(1, 129):
        for _ in range(3):
            a = rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)
            assert pairwise_sum(a, n) == np.sum(a), n
    a = np.arange(1.0, 21.0)
    assert pairwise_sum(a, 5) == 15.0  # only the first n entries


def test_row_max_is_the_largest_magnitude():
    for row in _rows():
        assert row_max(row) == np.abs(row).max()
    assert row_max(np.array([-3.0, 2.0, -1.0])) == 3.0


@pytest.mark.parametrize("q", [1.5, 3.0, 7.0])
def test_lq_norm_twin_is_accurate(q):
    """``row_lq_norm`` within ``norm_error_bound`` of the exact norm (that error bound is
    what the clip's margins rest on); zero rows have norm 0."""
    for row in _rows():
        work = np.empty_like(row)
        n = row_lq_norm(row, q, work)
        if not np.any(row):
            assert n == 0.0
            continue
        exact = exact_norm(row, q)
        if math.isinf(exact):  # above the largest float: the computed norm is inf too
            assert math.isinf(n)
            continue
        assert abs(n - exact) <= norm_error_bound(q, row.size) * exact, (row, q)
        m = np.abs(row).max()
        assert unit_lq_norm(row, q, m, work) == pytest.approx(exact / m, rel=1e-14)


@pytest.mark.parametrize("bound", [1.0, 0.5, 2.0**-800, 1e-200, 1e250])
@pytest.mark.parametrize("q", [1.5, 3.0, 7.0])
def test_lq_twin_uncompiled_holds_the_bound_and_is_the_primitive(q, bound):
    """DP-TOFW's clip: exact norm ``<= bound`` for every row; rows inside ``limit``
    unchanged bit for bit; rows above scaled along themselves to within ``1e-12`` of the
    bound; the returned norm is the row's computed norm before clipping."""
    rows = _rows() + [np.full(20, 20.0 ** (-1 / 3)) * bound]  # on the bound (DP-TOFW's rows)
    for row in rows:
        d = row.size
        limit, target = clip_limits(bound, q, d)
        shrink = 1.0 - 2.0 * norm_error_bound(q, d) - 12.0 * _U
        out = np.full_like(row, np.nan)
        nrm = clip_row_lq_into(row, q, limit, target, shrink, out, np.empty_like(row))
        ref, ref_norm = clip_rows(row[None, :], q, bound)
        assert exact_norm_at_most(out, q, bound), (row, q, bound)
        assert nrm == pytest.approx(ref_norm[0], rel=1e-13, abs=0.0)
        if nrm <= limit:
            assert np.array_equal(out, row)
        else:
            np.testing.assert_allclose(out, ref[0], rtol=1e-12, atol=0)
            assert exact_norm(out, q) >= bound * (1 - 1e-12)


# -- the regularity constants behind the generalized Gaussian's noise scale ---------------------
def _switch(d: int) -> float:
    """The largest q in Lemma 3.2's first branch, ``q - 1 <= e^2 (log d - 1)`` (floats)."""
    t = math.e**2 * (math.log(d) - 1.0)
    q = 1.0 + t
    while q - 1.0 > t:
        q = math.nextafter(q, 0.0)
    while math.nextafter(q, INF) - 1.0 <= t:
        q = math.nextafter(q, INF)
    return q


@pytest.mark.parametrize("d", [20, 100, 5000])
def test_lemma_3_2_switches_exactly_where_the_paper_says(d):
    """Han et al. 2022, Lemma 3.2: ``kappa = min(q - 1, e^2 (log d - 1))`` with smooth norm
    ``l_q`` up to the switch and ``l_{log d}`` after it. The kappa sets the noise
    (``sigma^2 = 2 kappa log(1/delta) s^2 / eps^2``), so moving the switch or the constant
    changes the noise drawn."""
    qs = _switch(d)
    cap = math.e**2 * (math.log(d) - 1.0)
    assert q_plus(qs, d) == qs and kappa_q(qs, d) == pytest.approx(qs - 1.0, rel=1e-15)
    above = math.nextafter(qs, INF)
    assert q_plus(above, d) == max(2.0, math.log(d))
    for q in (above, qs + 0.5, qs + 1.5):
        assert kappa_q(q, d) == pytest.approx(cap, rel=1e-15)


@pytest.mark.parametrize("d", [1, 2, 3, 8, 50, 1000])
@pytest.mark.parametrize("p", [1.0, 1.25, 1.6, 1.75, 2.0, 2.5, 4.0, INF])
def test_noise_geometry_is_regular_at_the_extreme_vectors(p, d):
    """Definition 2.2: ``||x||_q <= ||x||_+ <= sqrt(kappa / kappa_+) ||x||_q``, and
    ``1 <= kappa_+ <= kappa``. Between l_r and l_q (r, q >= 1) the ratio of norms is extreme
    at a basis vector and at the all-ones vector, so both are checked. A smooth norm that is
    smaller than the l_q norm lets the generalized Gaussian's noise fall short."""
    g = noise_geometry(p, d)
    q = dual_exponent(p)
    assert 1.0 <= g.kappa_plus <= g.kappa * (1 + 1e-15)
    for x in (np.eye(d)[0], np.ones(d)):
        nq = lp_norm(x, q)
        n_plus = plus_norm(x, g)
        assert nq * (1 - 1e-14) <= n_plus <= math.sqrt(g.kappa / g.kappa_plus) * nq * (1 + 1e-14)
    if q >= 2.0:  # Lemma 3.2: the smooth norm is an unscaled l_r with 2 <= r <= q
        assert g.scale == 1.0 and 2.0 <= g.q_plus <= q and g.kappa == kappa_q(q, d)
    else:  # Lemma 3.3: a rescaled l_2, kappa = d^{1 - 2/p}
        assert g.q_plus == 2.0
        assert g.kappa == pytest.approx(d ** (1 - 2 / p if p != INF else 1.0), rel=1e-15)


@pytest.mark.parametrize("f", [q_plus, kappa_q, noise_geometry])
def test_regularity_constants_refuse_a_dimension_below_one(f):
    with pytest.raises(ValueError, match=r"^d must be >= 1, got 0"):
        f(2.0, 0)
    with pytest.raises(ValueError, match=r"^[pq] must be >= 1.0, got 0.5"):
        f(0.5, 3)


# -- clip_rows with q = inf (DP-POFW's / DP-HDB's input clip, the l_1-dual optimizers) ----------
# fl(fl(c / x) * x) = c + 1 ulp for this pair: the scaled entry alone would leave the bound
_X_OVER, _C_OVER = 3.8064830680943693, 0.4809938040753181


def test_linf_clip_holds_the_bound_where_the_scaled_entry_rounds_up():
    assert (_C_OVER / _X_OVER) * _X_OVER > _C_OVER  # the premise: one rounding too many
    for sign in (1.0, -1.0):
        x = np.array([[sign * _X_OVER, 0.5 * sign * _X_OVER, -1.0]])
        out, norms = clip_rows(x, INF, _C_OVER)
        assert norms[0] == _X_OVER
        assert exact_norm_at_most(out[0], INF, _C_OVER)
        assert out[0, 0] == sign * _C_OVER


@pytest.mark.parametrize("bound", [0.7, 1e-10, 1e-300, 5e-324])
def test_linf_clip_scales_along_the_row_and_keeps_rows_inside(bound):
    """Over-bound rows become ``x * (bound / max|x|)`` (relative error of a few ulps, also
    where ``bound / max|x|`` is subnormal: max entries of 1e300 against bounds of 1e-10 and
    below); rows inside are unchanged bit for bit."""
    x = np.array([
        [3.0, -1.5, 0.25],
        [1e300, -2.5e299, 1e290],
        [-1e308, 1e307, 0.0],
        [0.5 * bound, -0.25 * bound, 0.0],  # inside
        [0.0, -0.0, 0.0],  # inside
    ])
    out, norms = clip_rows(x, INF, bound)
    np.testing.assert_array_equal(norms, np.abs(x).max(axis=1))
    for row_in, row, n in zip(x, out, norms, strict=True):
        assert exact_norm_at_most(row, INF, bound)
        if n <= bound:
            assert np.array_equal(row, row_in)
            continue
        want = [Fraction(float(v)) / Fraction(float(n)) * Fraction(bound) for v in row_in]
        for got, w in zip(row, want, strict=True):
            # 3 roundings; a subnormal result has an absolute error of 2^-1074 instead
            assert abs(Fraction(float(got)) - w) <= 4 * _U * abs(w) + Fraction(2.0**-1074) * 2


def test_zero_bound_and_untouched_rows_return_the_input_itself():
    """``clip_rows`` returns ``x`` itself when no row moves (documented; callers rely on it
    to skip a copy), and :func:`clip_to_norm` then returns a copy (the caller's array is
    never aliased)."""
    z = np.array([[0.0, -0.0], [0.0, 0.0]])
    out, _ = clip_rows(z, 2.0, 0.0)
    assert out is z
    x = np.array([[0.3, -0.4], [0.0, 0.1]])
    for q in (1.0, 2.0, INF):
        assert clip_rows(x, q, 1.0)[0] is x
        c, was = clip_to_norm(x, q, 1.0)
        assert c is not x and np.array_equal(c, x) and not was.any()
    c, was = clip_to_norm(x, 2.0, 0.45)
    assert was.tolist() == [True, False]


@pytest.mark.parametrize("q", [1.0, 2.0, 3.0, INF])
def test_clip_rows_converts_other_dtypes_exactly_before_measuring(q):
    """Issue 34 item 8: the unvalidated core on float32 and int64 input. ``abs(-2^63)`` in
    int64 is negative, and float32 arithmetic misses a bound by 1e-7 relative; the core
    converts to float64 exactly first, and refuses (naming ``x``) what it cannot convert."""
    big = np.array([[-(2**63), 0]], dtype=np.int64)
    out, norms = clip_rows(big, q, 1.0)
    assert out.dtype == np.float64 and norms[0] == 2.0**63
    assert exact_norm_at_most(out[0], q, 1.0) and out[0, 0] < 0
    f32 = np.array([[0.1, 0.7, -0.3], [3.0, 4.0, 12.0]], dtype=np.float32)
    out, norms = clip_rows(f32, q, 0.5)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(norms, lp_norm(f32.astype(np.float64), q))
    for row in out:
        assert exact_norm_at_most(row, q, 0.5)
    with pytest.raises(ValueError, match=r"^x"):
        clip_rows(np.array([[2**53 + 1]], dtype=np.int64), q, 1.0)
    with pytest.raises(TypeError, match=r"^x"):
        clip_rows(np.array([[1 + 1j]]), q, 1.0)


def test_normalize_to_norm_defaults_to_the_unit_l2_sphere():
    x = np.array([[3.0, 4.0, 0.0], [1e-300, 0.0, -1e-300], [0.0, 0.0, 0.0]])
    u, zero = normalize_to_norm(x)
    assert zero.tolist() == [False, False, True]
    for row in u[:2]:
        assert exact_norm_at_most(row, 2.0, 1.0) and exact_norm(row, 2.0) >= 1 - 1e-12
    u, _ = normalize_to_norm(x, 1.0, 0.5)
    for row in u[:2]:
        assert exact_norm_at_most(row, 1.0, 0.5) and exact_norm(row, 1.0) >= 0.5 * (1 - 1e-12)


# -- the linear-minimization oracle (every Frank-Wolfe iterate stays in the ball) ---------------
@pytest.mark.parametrize("p", [1.5, 3.0])
@pytest.mark.parametrize("scale", [1e-3, 0.5, 1.0, 40.0])
def test_lmo_vertex_is_on_the_sphere_for_gradients_of_any_size(p, scale):
    """``||v||_p = radius`` and ``<g, v> = -radius ||g||_q`` (Hölder equality), also for
    gradients whose entries are all below 1."""
    g = np.array([[0.3, -0.2, 0.1], [-1.0, 0.5, 0.25]]) * scale
    v = lmo_lp_ball(g, p, 2.0)
    q = dual_exponent(p)
    np.testing.assert_allclose(lp_norm(v, p), 2.0, rtol=1e-13)
    np.testing.assert_allclose(np.sum(g * v, axis=-1), -2.0 * lp_norm(g, q), rtol=1e-13)


# -- errors name the parameter (the project's standard; the names are what a user sees) ---------
_GOOD = np.array([[1.0, 2.0]])
_NAN = np.array([[1.0, np.nan]])


@pytest.mark.parametrize("call,name", [
    (lambda: dual_exponent(0.5), "p"),
    (lambda: lmo_lp_ball(_GOOD, 0.5, 1.0), "p"),
    (lambda: lmo_lp_ball(_GOOD, 2.0, 0.0), "radius"),
    (lambda: lmo_lp_ball(_NAN, 2.0, 1.0), "grad"),
    (lambda: geometry.project_l2_ball(_GOOD, -1.0), "radius"),
    (lambda: geometry.project_l2_ball(_NAN, 1.0), "x"),
    (lambda: geometry.project_linf_ball(_GOOD, 0.0), "radius"),
    (lambda: geometry.project_linf_ball(_NAN, 1.0), "x"),
    (lambda: geometry.project_l1_ball(_GOOD, 0.0), "radius"),
    (lambda: geometry.project_l1_ball(_NAN, 1.0), "x"),
    (lambda: geometry.project_lp_ball(_GOOD, 0.5, 1.0), "p"),
    (lambda: geometry.project_lp_ball(_GOOD, 3.0, 0.0), "radius"),
    (lambda: geometry.project_lp_ball(_GOOD, 3.0, 1.0, tol=0.5), "tol"),
    (lambda: geometry.project_lp_ball(_NAN, 3.0, 1.0), "x"),
    (lambda: clip_to_norm(_GOOD, 0.5, 1.0), "q"),
    (lambda: clip_to_norm(_GOOD, 2.0, -1.0), "bound"),
    (lambda: normalize_to_norm(_GOOD, 0.5), "q"),
    (lambda: normalize_to_norm(_GOOD, 2.0, 0.0), "bound"),
    (lambda: plus_norm(_NAN, noise_geometry(2.0, 2)), "z"),
])
def test_invalid_arguments_are_refused_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name}(\[| )"):
        call()


def test_plus_norm_refuses_a_non_geometry_naming_its_type():
    with pytest.raises(TypeError, match="got tuple$"):
        plus_norm(_GOOD, (1.0, 2.0))  # type: ignore[arg-type]


# -- normalize_rows (the agents' context normalization) and the gradient coefficients -----------
def test_normalize_rows_defaults_and_other_dtypes():
    """Defaults: the unit l_2 sphere (callers rely on them). int64 ``-2^63`` and float32
    rows are converted exactly before measuring, so the bound holds on them too."""
    x = np.array([[3.0, 4.0], [1e308, -1e308], [0.0, -0.0]])
    u, norms = normalize_rows(x)
    assert norms[0] == 5.0 and norms[2] == 0.0 and np.all(u[2] == 0.0)
    for row in u[:2]:
        assert exact_norm_at_most(row, 2.0, 1.0) and exact_norm(row, 2.0) >= 1 - 1e-12
    for q in (1.0, 2.0, 3.0, INF):
        big = np.array([[-(2**63), 1]], dtype=np.int64)
        u, norms = normalize_rows(big, q, 0.5)
        assert u.dtype == np.float64 and norms[0] == lp_norm(big.astype(np.float64), q)[0]
        assert exact_norm_at_most(u[0], q, 0.5) and u[0, 0] < 0
        f32 = np.array([[0.1, 0.7, -0.3]], dtype=np.float32)
        u, _ = normalize_rows(f32, q, 0.5)
        assert u.dtype == np.float64 and exact_norm_at_most(u[0], q, 0.5)
    with pytest.raises(ValueError, match=r"^x"):
        normalize_rows(np.array([[2**53 + 1]], dtype=np.int64))


def test_a_gradient_exactly_at_the_limit_is_kept_and_one_at_the_bound_is_not_clipped():
    """``|psi| ||x|| == limit`` keeps the gradient ``psi x`` itself (not zero, not scaled);
    ``|psi| ||x|| == bound`` is not counted as clipped (the rule is ``norm > bound``)."""
    x = np.array([[1.0, 0.0]])
    g = gradient_rows(x, 2.0, 0.5)
    for psi in (g.limit, -g.limit):
        coef, was = clipped_coefficients(np.array([psi]), g.norms, g.unclipped, g.clipped,
                                         g.limit, g.bound)
        assert coef[0] == psi and not was[0]
    coef, was = clipped_coefficients(np.array([0.5]), g.norms, g.unclipped, g.clipped,
                                     g.limit, g.bound)
    assert not was[0] and 0.0 < coef[0] <= g.target


def test_gradient_rows_margins_are_for_the_rows_dimension():
    """The margins of :func:`clip_limits` grow with the row length ``d``; a design of ``n``
    rows (or ``R`` replicates of them) gets the margins of ``d``, never of ``n`` or ``R``."""
    for shape in [(2, 40), (40, 2), (3, 40, 5), (3, 5, 40)]:
        x = np.ones(shape)
        g = gradient_rows(x, 2.0, 0.5)
        assert (g.limit, g.target) == clip_limits(0.5, 2.0, shape[-1])


@pytest.mark.parametrize("bound", [0.0, INF])
def test_gradient_rows_scale_nothing_at_a_zero_or_infinite_bound(bound):
    """``bound = inf``: every gradient is ``psi x`` bit for bit (tiny and huge rows too);
    ``bound = 0``: every gradient is zero and every non-zero one counted as clipped."""
    x = np.array([[1e-300, 3e-310], [1e300, -1e300], [0.3, 5e-324], [0.0, -0.0]])
    psi = np.array([3.0, 1e-5, -7.0, 2.0])
    g = gradient_rows(x, 2.0, bound)
    assert (g.limit, g.target) == (bound, bound)
    coef, was = clipped_coefficients(psi, g.norms, g.unclipped, g.clipped, g.limit, g.bound)
    out = coef[:, None] * g.rows
    if bound == 0.0:
        assert np.all(out == 0.0) and was.tolist() == [True, True, True, False]
    else:
        assert np.array_equal(out, psi[:, None] * x) and not was.any()


# -- boundaries of the twins: kept at the limit, numpy's summation, the certify-or-zero fallback --
@pytest.mark.parametrize("q", [2.0, 1.5, 3.0])
def test_twins_keep_a_row_whose_computed_norm_is_exactly_the_limit(q):
    """A row whose computed norm equals ``limit`` is certified as it is (``norm <= limit``)
    and returned unchanged, like :func:`clip_rows` does."""
    for bound in (1.0, 1e-200, 1e250):
        limit, target = clip_limits(bound, q, 1)
        row = np.array([limit])
        out = np.full_like(row, np.nan)
        if q == 2.0:
            nrm = clip_row_l2_into(row, bound, limit, target, out)
        else:
            shrink = 1.0 - 2.0 * norm_error_bound(q, 1) - 12.0 * _U
            nrm = clip_row_lq_into(row, q, limit, target, shrink, out, np.empty(1))
        assert nrm == limit and np.array_equal(out, row)
        assert np.array_equal(clip_rows(row[None, :], q, bound)[0][0], row)


def test_pairwise_sum_groups_eight_running_sums_from_eight_entries_on():
    """``[1, u, u, ...]`` (``u = 2^-53``): summed in turn every ``1 + u`` rounds back to 1;
    numpy's eight running sums keep the ``u``'s. The twin must agree at every length."""
    for n in range(1, 40):
        a = np.full(n, _U)
        a[0] = 1.0
        assert pairwise_sum(a, n) == np.sum(a), n


@pytest.mark.parametrize("q", [1.5, 3.0])
def test_lq_twin_shrinks_until_certified_and_zeroes_what_it_cannot_certify(q):
    """The fallback of the compiled clip (as :func:`_onto`'s): a scaled row whose computed
    norm is above ``limit`` is shrunk by ``shrink`` up to three times until it is within,
    and set to zero if it still is not. Reached here with targets above the limit (with the
    targets of :func:`clip_limits` the first check passes)."""
    x = np.array([3.0, -1.0, 0.5, 2.0])
    d = x.size
    limit = 1.0
    shrink = 1.0 - 2.0 * norm_error_bound(q, d) - 12.0 * _U
    work = np.empty(d)
    for k in (1, 2, 3):  # needs k shrinks
        target = limit / shrink ** (k - 0.5)
        out = np.full_like(x, np.nan)
        nrm = clip_row_lq_into(x, q, limit, target, shrink, out, work)
        assert nrm == pytest.approx(exact_norm(x, q), rel=1e-14)
        assert row_lq_norm(out, q, work) <= limit
        assert row_lq_norm(out, q, work) > limit * shrink  # not shrunk once too often
        np.testing.assert_allclose(out / x, (out / x)[0], rtol=1e-14)  # along the row
        assert np.all(out * x > 0)
    out = np.full_like(x, np.nan)
    nrm = clip_row_lq_into(x, q, limit, 2.0 * limit, shrink, out, work)  # never certified
    assert np.array_equal(out, np.zeros(d)) and nrm == pytest.approx(exact_norm(x, q), rel=1e-14)


def test_normalize_rows_normalizes_along_the_last_axis_of_any_shape():
    """``(R, n, d)`` arrays (replicates of a design): every length-``d`` row is scaled onto
    the sphere, whatever ``n`` and ``R``; the shape is kept."""
    rng = np.random.default_rng(3)
    for shape in [(2, 3, 5), (2, 5, 3)]:
        x = rng.standard_normal(shape)
        u, norms = normalize_rows(x, 2.0, 0.5)
        assert u.shape == x.shape and norms.shape == shape[:-1]
        for row_in, row in zip(x.reshape(-1, shape[-1]), u.reshape(-1, shape[-1]), strict=True):
            assert exact_norm_at_most(row, 2.0, 0.5) and exact_norm(row, 2.0) >= 0.5 * (1 - 1e-12)
            np.testing.assert_allclose(row, 0.5 * row_in / np.linalg.norm(row_in), rtol=1e-13)


# -- gradient_rows: the l_inf round-down, mixed designs, the caller's array ---------------------
def test_linf_gradient_factor_is_rounded_down_until_the_product_is_within():
    """``q = inf`` has no margin: the clipped factor ``f`` of a row must satisfy
    ``fl(f ||x||) <= target``, and is the largest such float (rounded down, not more)."""
    x = np.array([[_X_OVER, -0.5], [-_X_OVER, 1.0]])
    g = gradient_rows(x, INF, _C_OVER)
    assert g.target == _C_OVER
    for f, n in zip(g.clipped, g.norms, strict=True):
        assert f * n <= g.target < math.nextafter(f, INF) * n
    coef, was = clipped_coefficients(np.array([1e10, -1e10]), g.norms, g.unclipped,
                                     g.clipped, g.limit, g.bound)
    for row in coef[:, None] * g.rows:
        assert exact_norm_at_most(row, INF, _C_OVER)
    assert was.all()


def test_gradient_rows_with_replaced_rows_keep_the_ordinary_ones_and_the_input():
    """A design mixing ordinary rows with rows that must be replaced (norms below
    ``2^-890``): ordinary rows keep ``unclipped = 1`` (their gradient is ``psi x`` bit for
    bit, within the bound), and the caller's array is not modified."""
    x = np.array([[1e-300, 0.0], [3.0, 4.0], [0.0, 0.0]])
    x0 = x.copy()
    g = gradient_rows(x, 2.0, 1.0)
    assert np.array_equal(x, x0) and g.rows is not x
    assert g.unclipped[1] == 1.0 and g.unclipped[2] == 1.0
    psi = np.array([1e301, 0.1, 5.0])
    coef, was = clipped_coefficients(psi, g.norms, g.unclipped, g.clipped, g.limit, g.bound)
    out = coef[:, None] * g.rows
    assert np.array_equal(out[1], 0.1 * x[1]) and not was[1]
    for row in out:
        assert exact_norm_at_most(row, 2.0, 1.0)
    assert exact_norm(out[0], 2.0) >= 1.0 - 1e-12 and was[0]  # 1e301 * 1e-300 = 10: clipped


def test_clip_rows_keeps_only_rows_within_the_limit_of_their_length():
    """The margin grows with the row length ``d``: a row of ``d = 40`` whose computed norm
    is ``bound (1 - 50 u)`` is above its limit (``bound (1 - 100 u)``) and must be moved,
    also inside an ``(R, n, d)`` array with ``n`` much smaller than ``d``."""
    bound = 1.0
    row = np.zeros(40)
    row[0] = bound * (1 - 50 * _U)
    assert row[0] > clip_limits(bound, 2.0, 40)[0]
    for q in (1.5, 2.0, 3.0):
        for x in (row[None, :], row[None, None, :]):
            out, _ = clip_rows(x, q, bound)
            assert out.reshape(-1)[0] <= clip_limits(bound, q, 40)[1]


# -- round three: the clip's margins, the norms' fallbacks, the argument checks ---------------
@pytest.mark.parametrize("d", [1, 2, 7, 1000])
def test_margins_are_the_derivations_constants(d):
    """``norm_error_bound``'s ``(2d + 16) u`` (0 for ``q = inf``: a maximum is exact) and
    ``_limits``'s ``limit = bound (1 - eta - 4u)``, ``target = bound (1 - 3 eta - 12u)`` with
    the same ``eta`` (its inline copy is what the kernels compile): the margins the exact-norm
    guarantee of every clip is derived with; a smaller one is a weaker clip that random
    floats rarely expose."""
    u = 2.0**-53
    assert norm_error_bound(math.inf, d) == 0.0
    for q in (1.0, 1.5, 2.0, 7.0):
        eta = norm_error_bound(q, d)
        assert eta == (2.0 * d + 16.0) * u
        for bound in (1.0, 3.7e-200, 2.5e300):
            assert _limits(bound, q, d) == (bound * (1.0 - eta - 4.0 * u),
                                            bound * (1.0 - 3.0 * eta - 12.0 * u))
            assert clip_limits(bound, q, d) == _limits(bound, q, d)
        assert _limits(2.0, math.inf, d) == (2.0, 2.0)


@pytest.mark.parametrize("call, message", [
    (lambda: clip_limits(1.0, 0.5, 3), r"^q must be >= 1\.0, got 0\.5$"),
    (lambda: clip_limits(-1.0, 2.0, 3), r"^bound must be >= 0\.0, got -1\.0$"),
    (lambda: clip_limits(1.0, 2.0, 0), r"^d must be >= 1, got 0$"),
    (lambda: lp_norm([1.0, 2.0], 0.5), r"^p must be >= 1\.0, got 0\.5$"),
    (lambda: lp_norm(np.float64(3.0), 2.0), r"^x must have at least one axis, got shape \(\)$"),
    (lambda: lp_norm(np.ones((2, 3)), 2.0, axis=2), r"^axis must be <= 1, got 2$"),
    (lambda: lp_norm(np.ones((2, 3)), 2.0, axis=-3), r"^axis must be >= -2, got -3$"),
])
def test_norm_and_limit_arguments_are_refused_naming_them(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_lp_norm_takes_every_axis_in_range():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(lp_norm(x, 1.0, axis=1), [3.0, 12.0])
    np.testing.assert_array_equal(lp_norm(x, 1.0, axis=-2), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(lp_norm(x, 1.0, axis=0), lp_norm(x, 1.0, axis=-2))
    with pytest.raises(TypeError, match=r"^x must be array-like of real numbers"):
        lp_norm(np.array(["a"]), 2.0)


def test_l1_norm_is_the_plain_sum_wherever_it_is_finite():
    """``p = 1``: a row whose plain sum is finite gets that sum bit for bit (the compiled
    twins sum the same way), also when another row's sum overflows (that row's norm is
    ``inf``: it exceeds the largest float); the scaled sum would round differently."""
    row = [0.6369616873214543, 0.2697867137638703, 0.04097352393619469,
           0.016527635528529094, 0.8132702392002724]
    plain = np.sum(np.abs(row))
    m = max(row)
    assert plain != m * np.sum(np.array(row) / m)  # the two sums differ on this row
    x = np.array([row, [1e308, 1e308, 0.0, 0.0, 0.0]])
    with np.errstate(over="ignore"):
        got = lp_norm(x, 1.0)
    assert got[0] == plain and got[1] == math.inf


def test_rows_at_a_subnormal_bound_are_kept_where_certified_and_zeroed_elsewhere():
    """Below ``2^-800`` one scale factor cannot always be certified: ``_onto`` zeroes the
    rows it cannot certify (exact norm 0 <= bound) and keeps the others, each with exact norm
    at most the bound."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 6)) * np.logspace(-300, 0, 400)[:, None]
    for q in (1.0, 1.5, 2.0):
        out, _ = clip_rows(x, q, 1e-310)
        kept = np.any(out != 0.0, axis=1)
        assert 0 < kept.sum() < len(x)
        assert all(exact_norm_at_most(r, q, 1e-310) for r in out[kept])

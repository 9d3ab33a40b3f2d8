"""Tests for dpbandits.geometry: norms, LMOs, projections, clipping, regularity constants."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import brentq, minimize

from dpbandits import geometry as geo
from dpbandits.geometry import (
    NoiseGeometry,
    clip_limits,
    clip_to_norm,
    dual_exponent,
    kappa_q,
    lmo_lp_ball,
    lp_norm,
    noise_geometry,
    norm_error_bound,
    plus_norm,
    project_l1_ball,
    project_l2_ball,
    project_linf_ball,
    project_lp_ball,
    q_plus,
)

INF = math.inf
FAST = settings(max_examples=40, deadline=None)

P_VALUES = [1.0, 1.05, 1.5, 2.0, 3.0, 7.0, INF]
p_strategy = st.one_of(st.sampled_from(P_VALUES), st.floats(1.0, 25.0))
radius_strategy = st.floats(0.05, 20.0)


@st.composite
def batches(draw, max_rows=4, max_d=7, scale=50.0):
    n = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, max_d))
    elems = st.floats(-scale, scale, allow_nan=False, allow_infinity=False)
    return draw(arrays(np.float64, (n, d), elements=elems))


def _norm(x, p):
    """Independent reference norm (a plain sum of powers, rescaled by the max entry)."""
    a = np.abs(np.asarray(x, dtype=float))
    m = a.max(axis=-1, keepdims=True)
    if math.isinf(p):
        return m[..., 0]
    m = np.where(m > 0, m, 1.0)
    return m[..., 0] * np.sum((a / m) ** p, axis=-1) ** (1.0 / p)


def _random_feasible(rng, n, d, p, radius):
    """Points of the l_p ball of radius ``radius``: boundary, interior and sparse ones."""
    z = rng.standard_normal((n, d)) * rng.exponential(1.0, size=(n, d))
    z[: n // 4] *= rng.random((n // 4, d)) < 0.3  # sparse directions
    nz = _norm(z, p)
    nz[nz == 0] = 1.0
    t = np.where(np.arange(n) % 2 == 0, 1.0, rng.random(n))  # half exactly on the sphere
    return z / nz[:, None] * (radius * t)[:, None]


# --------------------------------------------------------------------------- norms
@pytest.mark.parametrize(
    ("p", "q"), [(1.0, INF), (INF, 1.0), (2.0, 2.0), (1.5, 3.0), (3.0, 1.5), (4.0, 4.0 / 3.0)]
)
def test_dual_exponent_edge_cases(p, q):
    assert dual_exponent(p) == pytest.approx(q)
    assert dual_exponent(dual_exponent(p)) == pytest.approx(p)


def test_dual_exponent_numpy_inf_and_holder():
    assert dual_exponent(np.inf) == 1.0
    assert dual_exponent(np.float64(1.0)) == INF
    for p in (1.1, 1.5, 2.5, 9.0):
        q = dual_exponent(p)
        assert 1 / p + 1 / q == pytest.approx(1.0)


@pytest.mark.parametrize("p", [1.0, 1.3, 2.0, 3.0, 10.0, INF])
def test_lp_norm_matches_numpy(p):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5))
    np.testing.assert_allclose(lp_norm(x, p), np.linalg.norm(x, ord=p, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(
        lp_norm(x, p, axis=1), np.linalg.norm(x, ord=p, axis=1), rtol=1e-12
    )


def test_lp_norm_large_p_no_overflow():
    x = np.array([1e200, -3e200, 2e200])
    assert lp_norm(x, 50.0) == pytest.approx(3e200 * (1 + (1 / 3) ** 50 + (2 / 3) ** 50) ** 0.02)
    assert lp_norm(np.zeros(4), 3.0) == 0.0
    for p in (1.0, 1.5, 2.0, 3.0, INF):  # tiny vectors do not underflow to norm 0
        assert lp_norm(np.array([6e-200, 0.0]), p) == pytest.approx(6e-200)
        c, w = clip_to_norm(np.array([[6e-200, 0.0]]), p, 0.0)
        assert w[0] and np.all(c == 0.0)


# --------------------------------------------------------------------------- LMO
@FAST
@given(g=batches(), p=p_strategy, radius=radius_strategy, seed=st.integers(0, 2**32 - 1))
def test_lmo_is_optimal(g, p, radius, seed):
    v = lmo_lp_ball(g, p, radius)
    assert v.shape == g.shape
    q = dual_exponent(p)
    gq = _norm(g, q)
    # feasible, and attains the Hölder lower bound -radius ||g||_q
    assert np.all(_norm(v, p) <= radius * (1 + 1e-12) + 1e-300)
    val = np.sum(g * v, axis=-1)
    np.testing.assert_allclose(val, -radius * gq, rtol=1e-9, atol=1e-9 * radius)
    # no random feasible point does better
    rng = np.random.default_rng(seed)
    for row in range(g.shape[0]):
        z = _random_feasible(rng, 200, g.shape[1], p, radius)
        assert np.min(z @ g[row]) >= val[row] - 1e-9 * (1 + radius * gq[row])


@pytest.mark.parametrize("p", [1.0, INF])
def test_lmo_matches_vertex_enumeration(p):
    """The l_1 and l_inf balls are polytopes: the LMO value is the best vertex."""
    rng = np.random.default_rng(1)
    d, radius = 5, 1.7
    if p == 1.0:
        verts = np.concatenate([np.eye(d), -np.eye(d)]) * radius
    else:
        verts = np.array(list(itertools.product([-1.0, 1.0], repeat=d))) * radius
    g = rng.standard_normal((20, d))
    v = lmo_lp_ball(g, p, radius)
    np.testing.assert_allclose(np.sum(g * v, -1), (g @ verts.T).min(axis=1), rtol=1e-12)


def test_lmo_closed_forms_zero_gradient_and_batching():
    g = np.array([0.5, -2.0, 1.0])
    np.testing.assert_array_equal(lmo_lp_ball(g, 1, 3.0), [0.0, 3.0, 0.0])
    np.testing.assert_array_equal(lmo_lp_ball(g, np.inf, 3.0), [-3.0, 3.0, -3.0])
    np.testing.assert_allclose(lmo_lp_ball(g, 2, 3.0), -3.0 * g / np.linalg.norm(g))
    for p in P_VALUES:
        np.testing.assert_array_equal(lmo_lp_ball(np.zeros((2, 4)), p, 1.0), 0.0)
    rng = np.random.default_rng(2)
    gb = rng.standard_normal((2, 3, 4))
    for p in (1.0, 1.5, INF):
        vb = lmo_lp_ball(gb, p, 2.0)
        ref = np.stack([lmo_lp_ball(row, p, 2.0) for row in gb.reshape(-1, 4)])
        np.testing.assert_allclose(vb, ref.reshape(gb.shape))


def test_lmo_extreme_exponents_are_finite():
    g = np.array([[1e-200, 3.0, -2.0], [1e150, -1e150, 0.0]])
    for p in (1.0 + 1e-9, 1.001, 50.0, 1e6):
        v = lmo_lp_ball(g, p, 1.0)
        assert np.all(np.isfinite(v))
        assert np.all(_norm(v, p) <= 1 + 1e-9)


# --------------------------------------------------------------------------- projections
def _duality_gap(x, proj, p, radius):
    """``max_{||z||_p <= r} <x - P, z - P> = r ||x - P||_q - <x - P, P>`` (>= 0; 0 iff P is
    the Euclidean projection). An exact optimality certificate of the projection."""
    r = x - proj
    return radius * _norm(r, dual_exponent(p)) - np.sum(r * proj, axis=-1)


PROJ_P = [1.0, 1.01, 1.3, 1.5, 2.0, 2.5, 4.0, 12.0, INF]


@FAST
@given(
    x=batches(scale=30.0),
    p=st.one_of(st.sampled_from(PROJ_P), st.floats(1.001, 40.0)),
    radius=radius_strategy,
    seed=st.integers(0, 2**32 - 1),
)
def test_projection_properties(x, p, radius, seed):
    proj = project_lp_ball(x, p, radius)
    assert proj.shape == x.shape
    scale = 1.0 + np.linalg.norm(x, axis=-1)
    # feasible
    assert np.all(_norm(proj, p) <= radius * (1 + 1e-12))
    # points inside are unchanged
    inside = _norm(x, p) <= radius
    np.testing.assert_array_equal(proj[inside], x[inside])
    # idempotent
    np.testing.assert_allclose(project_lp_ball(proj, p, radius), proj, rtol=1e-9, atol=1e-12)
    # optimal: exact duality gap, and the variational inequality at random feasible z
    assert np.all(_duality_gap(x, proj, p, radius) <= 1e-8 * scale * (1 + radius))
    rng = np.random.default_rng(seed)
    for row in range(x.shape[0]):
        z = _random_feasible(rng, 200, x.shape[1], p, radius)
        vi = (z - proj[row]) @ (x[row] - proj[row])
        assert np.max(vi) <= 1e-8 * scale[row] * (1 + radius)


@pytest.mark.parametrize("p", [1.0, 1.2, 1.5, 2.0, 3.0, 6.0, INF])
def test_projection_matches_slsqp(p):
    """Reference: SLSQP on the smooth reformulation over |x| (the projection keeps the signs
    of x, so it suffices to solve min 0.5||w - |x|||^2 s.t. 0 <= w, sum w^p <= r^p)."""
    rng = np.random.default_rng(3)
    radius = 1.3
    for _ in range(6):
        x = rng.standard_normal(4) * 2.5
        a = np.abs(x)
        proj = project_lp_ball(x, p, radius)
        if math.isinf(p):
            cons = []
        else:
            cons = [{"type": "ineq", "fun": lambda w, p=p: 1.0 - np.sum((w / radius) ** p),
                     "jac": lambda w, p=p: -p * (w / radius) ** (p - 1) / radius}]
        x0 = 0.5 * radius * a / _norm(a, p)
        res = minimize(lambda w, a=a: 0.5 * np.sum((w - a) ** 2), x0=x0,
                       jac=lambda w, a=a: w - a, constraints=cons, method="SLSQP",
                       bounds=[(0.0, min(ai, radius)) for ai in a],
                       options={"ftol": 1e-12, "maxiter": 1000})
        # status 8 ("positive directional derivative") = stalled at the precision limit
        assert res.status in (0, 8), res.message
        ref = np.sign(x) * res.x
        np.testing.assert_allclose(proj, ref, atol=1e-5)
        # ours is at least as good as the (possibly slightly infeasible) SLSQP point
        assert 0.5 * np.sum((proj - x) ** 2) <= res.fun + 1e-7


def test_l1_projection_matches_threshold_root():
    """Duchi et al.'s sort-based threshold equals the root of sum max(|x|-t, 0) = r."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 9)) * 3
    radius = 2.0
    proj = project_l1_ball(x, radius)
    for row, xr in enumerate(x):
        if np.abs(xr).sum() <= radius:
            np.testing.assert_array_equal(proj[row], xr)
            continue
        a = np.abs(xr)
        t = brentq(lambda s, a=a: np.maximum(a - s, 0).sum() - radius, 0, a.max())
        np.testing.assert_allclose(proj[row], np.sign(xr) * np.maximum(a - t, 0), atol=1e-10)


def test_l1_projection_ties_and_batching():
    x = np.array([[3.0, 3.0, 3.0], [1.0, -1.0, 0.0], [5.0, 0.0, 0.0]])
    proj = project_l1_ball(x, 1.5)
    np.testing.assert_allclose(proj, [[0.5, 0.5, 0.5], [0.75, -0.75, 0.0], [1.5, 0.0, 0.0]])
    xb = np.random.default_rng(5).standard_normal((2, 3, 4, 6)) * 2
    ref = np.stack([project_l1_ball(r, 1.0) for r in xb.reshape(-1, 6)]).reshape(xb.shape)
    np.testing.assert_allclose(project_l1_ball(xb, 1.0), ref)


def test_general_lp_projection_matches_special_cases():
    """The KKT route (used for 1 < p < inf) agrees with the closed forms at and near
    p = 1, 2, inf, and with clipping in one dimension."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((200, 6)) * 3
    radius = 1.2
    general = geo._project_lp_general
    np.testing.assert_allclose(general(x, 2.0, radius, 1e-12), project_l2_ball(x, radius),
                               atol=1e-12)
    np.testing.assert_allclose(general(x, 1.0 + 1e-6, radius, 1e-12),
                               project_l1_ball(x, radius), atol=1e-4)
    np.testing.assert_allclose(general(x, 1e4, radius, 1e-12), project_linf_ball(x, radius),
                               atol=5e-3)
    x1 = rng.standard_normal((50, 1)) * 3
    for p in (1.5, 3.0, 40.0):
        np.testing.assert_allclose(general(x1, p, radius, 1e-12), np.clip(x1, -radius, radius),
                                   atol=1e-12)
    # the dispatcher uses the exact special cases
    np.testing.assert_array_equal(project_lp_ball(x, 1, radius), project_l1_ball(x, radius))
    np.testing.assert_array_equal(project_lp_ball(x, 2, radius), project_l2_ball(x, radius))
    np.testing.assert_array_equal(project_lp_ball(x, np.inf, radius),
                                  project_linf_ball(x, radius))


def test_lp_projection_far_points_and_extreme_p():
    x = np.array([[1e8, -3e7, 2.0], [1e-9, 0.0, -1e-9], [0.0, 0.0, 0.0]])
    for p in (1.001, 1.5, 3.0, 50.0, 300.0):
        proj = project_lp_ball(x, p, 0.5)
        assert np.all(np.isfinite(proj))
        assert np.all(_duality_gap(x, proj, p, 0.5) <= 1e-8 * (1 + np.linalg.norm(x, axis=-1)))
        np.testing.assert_array_equal(proj[1:], x[1:])


def test_projection_batched_leading_axes():
    xb = np.random.default_rng(7).standard_normal((2, 5, 3)) * 4
    for p in (1.0, 1.7, 2.0, 5.0, INF):
        out = project_lp_ball(xb, p, 1.0)
        ref = np.stack([project_lp_ball(r, p, 1.0) for r in xb.reshape(-1, 3)])
        np.testing.assert_allclose(out, ref.reshape(xb.shape), atol=1e-12)


# --------------------------------------------------------------------------- clipping
@FAST
@given(x=batches(), q=p_strategy, bound=st.one_of(st.just(0.0), st.floats(1e-8, 30.0)))
def test_clip_to_norm(x, q, bound):
    clipped, was = clip_to_norm(x, q, bound)
    norms = _norm(x, q)
    np.testing.assert_array_equal(was, norms > bound)
    assert np.all(lp_norm(clipped, q) <= bound)
    # rows inside the bound are untouched, except those within rounding distance of it, which
    # are pulled inside by at most a relative 3 eta + 12 u (module docstring of geometry)
    inside = _norm(x, q) <= clip_limits(bound, q, x.shape[-1])[0] if bound > 0 else ~was
    np.testing.assert_array_equal(clipped[~was & inside], x[~was & inside])
    eta = norm_error_bound(q, x.shape[-1])
    np.testing.assert_allclose(clipped[~was], x[~was], rtol=3 * eta + 12 * 2.0**-53, atol=0)
    if bound > 0:
        # direction kept and the norm is (essentially) exactly the bound
        np.testing.assert_allclose(_norm(clipped[was], q), bound, rtol=1e-12)
        cos = np.sum(clipped[was] * x[was], -1)
        assert np.all(cos > 0)


def test_clip_to_norm_special_bounds():
    x = np.array([[3.0, 4.0], [0.1, 0.0], [0.0, 0.0]])
    c, w = clip_to_norm(x, 2, 1.0)
    np.testing.assert_allclose(c, [[0.6, 0.8], [0.1, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(w, [True, False, False])
    c, w = clip_to_norm(x, 2, np.inf)
    np.testing.assert_array_equal(c, x)
    assert not w.any()
    c, w = clip_to_norm(x, 1, 0.0)
    np.testing.assert_array_equal(c, 0.0)
    np.testing.assert_array_equal(w, [True, True, False])
    for tiny in (5e-324, 2.2e-313, 1e-310):  # subnormal bounds: still never above the bound
        for q in (1.0, 1.05, 2.0, INF):
            c, w = clip_to_norm(np.array([[1.25, 1.0, 1.0], [1.0, 0.0, 0.0]]), q, tiny)
            assert w.all() and np.all(lp_norm(c, q) <= tiny)


# --------------------------------------------------------------------------- regularity
def _paper_kappa(q, d):
    return min(q - 1.0, math.e**2 * (math.log(d) - 1.0))


def _check_regular(q, d, geom):
    """Definition 2.2: ||x||_q^2 <= ||x||_+^2 <= (kappa/kappa_+) ||x||_q^2, kappa_+ >= 1."""
    assert geom.kappa_plus >= 1.0 - 1e-12
    assert geom.kappa >= geom.kappa_plus - 1e-12
    rng = np.random.default_rng(d)
    xs = [np.ones(d), np.eye(d)[0], rng.standard_normal((300, d)),
          rng.standard_normal((50, d)) * (rng.random((50, d)) < 0.3)]
    x = np.vstack([np.atleast_2d(v) for v in xs])
    x = x[np.abs(x).sum(-1) > 0]
    nq = _norm(x, q)
    nplus = plus_norm(x, geom)
    assert np.all(nq <= nplus * (1 + 1e-12))
    assert np.all(nplus**2 <= geom.kappa / geom.kappa_plus * nq**2 * (1 + 1e-12))


@pytest.mark.parametrize(
    ("q", "d", "kappa", "r"),
    [
        (2.0, 1000, 1.0, 2.0),  # p = 2: Euclidean, kappa = 1
        (3.0, 1000, 2.0, 3.0),  # first branch of Lemma 3.2: q - 1
        (4.0, 50, 3.0, 4.0),
        (INF, 1000, math.e**2 * (math.log(1000) - 1), math.log(1000)),  # second branch
        (INF, 50, math.e**2 * (math.log(50) - 1), math.log(50)),
        (50.0, 1000, math.e**2 * (math.log(1000) - 1), math.log(1000)),
    ],
)
def test_kappa_and_q_plus_values(q, d, kappa, r):
    assert kappa_q(q, d) == pytest.approx(kappa)
    assert q_plus(q, d) == pytest.approx(r)
    assert kappa_q(q, d) == pytest.approx(_paper_kappa(q, d))  # paper value where log d >= 2
    _check_regular(q, d, NoiseGeometry(kappa_q(q, d), q_plus(q, d), 1.0))


@pytest.mark.parametrize("d", [1, 2, 5, 10, 20])
@pytest.mark.parametrize("q", [2.0, 2.5, 3.0, 6.0, 30.0, INF])
def test_small_d_guard_keeps_regularity(q, d):
    r, kappa = q_plus(q, d), kappa_q(q, d)
    assert 2.0 <= r <= q  # smooth (kappa_+ = r - 1 >= 1) and ||x||_q <= ||x||_r
    assert kappa >= (r - 1.0) * d ** (2.0 / r - (0.0 if math.isinf(q) else 2.0 / q)) - 1e-12
    _check_regular(q, d, NoiseGeometry(kappa, r, 1.0))


def test_small_d_paper_constant_would_be_too_small():
    """For d < e^2 the paper's e^2 (log d - 1) is below what any smooth l_r needs (even
    negative for d <= 2); the guard uses l_2 and kappa = d^{1 - 2/q}."""
    assert _paper_kappa(INF, 5) < 5.0
    assert q_plus(INF, 5) == 2.0 and kappa_q(INF, 5) == pytest.approx(5.0)
    assert _paper_kappa(INF, 2) < 0 and kappa_q(INF, 2) == pytest.approx(2.0)
    assert kappa_q(INF, 1) == 1.0 and kappa_q(2, 1) == 1.0
    # the literal reading "exponent = min{q-1, log d - 1}" gives l_1 for q = 2: not smooth
    assert q_plus(2, 1000) == 2.0


@settings(max_examples=60, deadline=None)
@given(q=st.one_of(st.floats(1.0, 60.0), st.just(INF)), d=st.integers(1, 5000))
def test_regularity_constant_is_always_valid(q, d):
    r, kappa = q_plus(q, d), kappa_q(q, d)
    inv_q = 0.0 if math.isinf(q) else 1.0 / q
    if q >= 2:
        assert 2.0 <= r <= q
        assert kappa >= (r - 1.0) * d ** (2.0 / r - 2.0 * inv_q) * (1 - 1e-12)
        if math.log(d) >= 2:
            assert kappa == pytest.approx(_paper_kappa(q, d))
    else:
        assert r == 2.0
        assert kappa == pytest.approx(d ** (2.0 * inv_q - 1.0))


@pytest.mark.parametrize("d", [1, 3, 16, 100])
@pytest.mark.parametrize("p", [2.5, 4.0, 10.0, INF])
def test_noise_geometry_p_above_two(p, d):
    geom = noise_geometry(p, d)
    inv_p = 0.0 if math.isinf(p) else 1.0 / p
    assert geom.q_plus == 2.0
    assert geom.kappa == pytest.approx(d ** (1 - 2 * inv_p))
    assert geom.scale == pytest.approx(d ** (0.5 - inv_p))
    assert kappa_q(dual_exponent(p), d) == pytest.approx(geom.kappa)
    _check_regular(dual_exponent(p), d, geom)


def test_noise_geometry_values_and_plus_norm():
    g = noise_geometry(np.inf, 16)
    assert (g.kappa, g.q_plus, g.scale) == (16.0, 2.0, 4.0)
    g = noise_geometry(4.0, 16)
    assert g.kappa == pytest.approx(4.0) and g.scale == pytest.approx(2.0)
    g = noise_geometry(1.5, 50)  # q = 3
    assert (g.kappa, g.q_plus, g.scale) == (2.0, 3.0, 1.0)
    g = noise_geometry(1, 50)  # q = inf
    assert g.q_plus == pytest.approx(math.log(50)) and g.scale == 1.0
    for p in (1.0, 1.5, 2.0, 3.0, INF):
        for d in (1, 2, 7, 30):
            _check_regular(dual_exponent(p), d, noise_geometry(p, d))
    z = np.array([[3.0, 4.0], [1.0, 0.0]])
    np.testing.assert_allclose(plus_norm(z, noise_geometry(np.inf, 2)),
                               np.sqrt(2) * np.array([5.0, 1.0]))
    with pytest.raises(AttributeError):
        noise_geometry(2, 3).kappa = 2.0  # frozen
    with pytest.raises(TypeError, match="geometry"):
        plus_norm(z, (1.0, 2.0, 1.0))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("p", [0.5, 0.0, -1.0, float("nan")])
def test_bad_exponent(p):
    for call in (
        lambda: dual_exponent(p),
        lambda: lp_norm(np.ones(3), p),
        lambda: lmo_lp_ball(np.ones(3), p, 1.0),
        lambda: project_lp_ball(np.ones(3), p, 1.0),
        lambda: noise_geometry(p, 3),
    ):
        with pytest.raises(ValueError, match="p"):
            call()
    with pytest.raises(ValueError, match="q"):
        clip_to_norm(np.ones(3), p, 1.0)
    with pytest.raises(ValueError, match="q"):
        kappa_q(p, 3)


def test_bad_types_and_values():
    with pytest.raises(TypeError, match="p"):
        dual_exponent("2")
    for r in (0.0, -1.0, float("nan"), np.inf):
        for f in (project_l1_ball, project_l2_ball, project_linf_ball):
            with pytest.raises(ValueError, match="radius"):
                f(np.ones(3), r)
        with pytest.raises(ValueError, match="radius"):
            lmo_lp_ball(np.ones(3), 2, r)
        with pytest.raises(ValueError, match="radius"):
            project_lp_ball(np.ones(3), 3, r)
    with pytest.raises(ValueError, match="bound"):
        clip_to_norm(np.ones(3), 2, -0.1)
    with pytest.raises(ValueError, match="tol"):
        project_lp_ball(np.ones(3), 3, 1.0, tol=0.0)
    for d in (0, -3):
        with pytest.raises(ValueError, match="d"):
            kappa_q(2, d)
        with pytest.raises(ValueError, match="d"):
            noise_geometry(2, d)
    with pytest.raises(TypeError, match="d"):
        q_plus(2, 3.5)


def test_nan_and_shape_errors():
    bad = np.array([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="x"):
        lp_norm(bad, 2)
    with pytest.raises(ValueError, match="grad"):
        lmo_lp_ball(bad, 2, 1.0)
    with pytest.raises(ValueError, match="x"):
        project_lp_ball(bad, 1.5, 1.0)
    with pytest.raises(ValueError, match="x"):
        clip_to_norm(np.array([np.inf, 1.0]), 2, 1.0)
    with pytest.raises(ValueError, match="z"):
        plus_norm(bad, noise_geometry(2, 3))
    for f in (lambda v: lmo_lp_ball(v, 2, 1.0), lambda v: project_l1_ball(v, 1.0),
              lambda v: project_lp_ball(v, 3.0, 1.0), lambda v: clip_to_norm(v, 2, 1.0)):
        with pytest.raises(ValueError, match="shape"):
            f(np.float64(3.0))  # a scalar has no vector axis
        with pytest.raises(ValueError, match="shape"):
            f(np.zeros((3, 0)))
    with pytest.raises(TypeError):
        lmo_lp_ball([["a", "b"]], 2, 1.0)

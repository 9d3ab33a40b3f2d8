"""GP layer of dpbandits.bo: kernels, exact GP, gradient posterior, acquisition."""

import numpy as np
import pytest

from dpbandits.bo.acquisition import GradientDesigner
from dpbandits.bo.gp import ExactGP, GPDesign
from dpbandits.bo.kernels import RBF, Matern52, Polynomial, make_kernel

D = 3
KERNELS = [
    RBF(np.array([0.7, 1.2, 0.9]), 1.5),
    RBF(1.0),
    Matern52(np.array([0.8, 1.1, 0.6]), 2.0),
    Polynomial(2, 1.0, 0.5),
    Polynomial(3, 0.5, 1.0),
]


def _fd(f, x, h=1e-6):
    """Central differences of f along each coordinate of the last axis of x."""
    return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.shape[-1])],
                    axis=-1)


@pytest.mark.parametrize("k", KERNELS, ids=repr)
def test_kernel_derivatives_match_finite_differences(k):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(4, D)), rng.normal(size=(5, D))
    g1 = k.grad_first(A, B)
    assert g1.shape == (4, 5, D)
    np.testing.assert_allclose(g1, _fd(lambda a: k(a, B), A), atol=1e-7)
    fd2 = np.stack([(k(A, B + 1e-6 * e) - k(A, B - 1e-6 * e)) / 2e-6 for e in np.eye(D)],
                   axis=-1)
    np.testing.assert_allclose(k.grad_second(A, B), fd2, atol=1e-7)
    ch = np.stack([(k.grad_first(A, B + 1e-6 * e) - k.grad_first(A, B - 1e-6 * e)) / 2e-6
                   for e in np.eye(D)], axis=-1)
    np.testing.assert_allclose(k.cross_hessian(A, B), ch, atol=1e-6)
    np.testing.assert_allclose(k.grad_diag(A), _fd(k.diag, A), atol=1e-7)
    np.testing.assert_allclose(k.diag(A), np.diag(k(A, A)))
    # cross-Hessian at (x, x) is the prior gradient covariance: symmetric PSD
    G = k.grad_cov(A[0])
    np.testing.assert_allclose(G, G.T, atol=1e-12)
    assert np.linalg.eigvalsh(G).min() > -1e-10


def test_rbf_prior_gradient_covariance_closed_form():
    k = RBF(np.array([0.5, 2.0]), 3.0)
    np.testing.assert_allclose(k.grad_cov(np.array([0.3, -1.0])), np.diag(3.0 / np.array(
        [0.25, 4.0])))
    np.testing.assert_allclose(Matern52(2.0, 1.0).grad_cov(np.zeros(4)),
                               5.0 / (3.0 * 4.0) * np.eye(4))


@pytest.mark.parametrize("k", [RBF(np.array([0.7, 1.2, 0.9]), 1.5), Matern52(0.8, 2.0),
                               Polynomial(2)], ids=repr)
def test_gp_posterior_matches_dense_computation_and_finite_differences(k):
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(9, D)), rng.normal(size=(9, 4))
    noise = 0.05
    gp = ExactGP(k, noise_var=noise, jitter=0.0, prior_mean=0.3).fit(X[:4], Y[:4])
    gp.add(X[4:], Y[4:])
    Kt = k(X, X) + noise * np.eye(9)
    Xs = rng.normal(size=(3, D))
    mean = 0.3 + k(Xs, X) @ np.linalg.solve(Kt, Y - 0.3)
    cov = k(Xs, Xs) - k(Xs, X) @ np.linalg.solve(Kt, k(X, Xs))
    np.testing.assert_allclose(gp.mean(Xs), mean, atol=1e-10)
    np.testing.assert_allclose(gp.cov(Xs), cov, atol=1e-10)
    np.testing.assert_allclose(gp.var(Xs), np.diag(cov), atol=1e-10)
    x = Xs[0]
    fd_mean = np.stack([(gp.mean(x + 1e-6 * e) - gp.mean(x - 1e-6 * e))[0] / 2e-6
                        for e in np.eye(D)])
    assert gp.grad_mean(x).shape == (D, 4)
    np.testing.assert_allclose(gp.grad_mean(x), fd_mean, atol=1e-6)
    # gradient covariance = mixed second difference of the posterior covariance
    h = 1e-4

    def pc(a, b):
        return gp.cov(np.stack([a, b]))[0, 1]

    E = np.eye(D)
    fd = np.array([[(pc(x + h * E[i], x + h * E[j]) - pc(x + h * E[i], x - h * E[j])
                     - pc(x - h * E[i], x + h * E[j]) + pc(x - h * E[i], x - h * E[j]))
                    / (4 * h * h) for j in range(D)] for i in range(D)])
    np.testing.assert_allclose(gp.grad_cov(x), fd, atol=1e-5)
    # dense formula
    G = k.grad_first(x, X)[0]
    dense = k.grad_cov(x) - G.T @ np.linalg.solve(Kt, G)
    np.testing.assert_allclose(gp.grad_cov(x), dense, atol=1e-10)
    assert gp.grad_trace(x) == pytest.approx(np.trace(dense), abs=1e-10)


def test_incremental_cholesky_equals_full_fit():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(40, D)), rng.normal(size=40)
    k = RBF(0.8)
    a = ExactGP(k, noise_var=1e-3).fit(X, Y)
    b = ExactGP(k, noise_var=1e-3).fit(X[:1], Y[:1])
    for i in range(1, 40, 7):
        b.add(X[i: i + 7], Y[i: i + 7])
    np.testing.assert_allclose(b.L, a.L, atol=1e-10)
    np.testing.assert_allclose(b.mean(X[:5]), a.mean(X[:5]), atol=1e-10)


@pytest.mark.parametrize("noise", [0.0, 0.01])
@pytest.mark.parametrize("k", [RBF(1.0), Matern52(0.7), Polynomial(2)], ids=repr)
def test_gradient_trace_non_increasing_as_points_are_added(k, noise):
    rng = np.random.default_rng(3)
    theta = rng.normal(size=4)
    design = GPDesign(k, noise_var=noise, jitter=1e-9)
    traces = [design.grad_trace(theta)]
    for _ in range(25):
        design.add(theta + 0.7 * rng.normal(size=(1, 4)))
        traces.append(design.grad_trace(theta))
    traces = np.array(traces)
    assert np.all(np.diff(traces) <= 1e-8 * traces[0])
    assert traces[-1] < traces[0]
    assert traces[-1] >= -1e-8


@pytest.mark.parametrize("k", [RBF(1.0), RBF(np.array([0.5, 1.0, 2.0, 1.5, 0.8])),
                               Matern52(1.0)], ids=repr)
def test_lemma_a6_d_plus_one_points_make_trace_vanish(k):
    """Noiseless: {theta, theta + h e_j} (d+1 points) leave a trace O(h^2) -> 0."""
    d = 5
    theta = np.linspace(-0.3, 0.4, d)
    prior = np.trace(k.grad_cov(theta))
    tr = {}
    for h in (1e-2, 1e-3):
        design = GPDesign(k, noise_var=0.0, jitter=1e-14)
        design.add(np.vstack([theta, theta + h * np.eye(d)]))
        tr[h] = design.grad_trace(theta)
    assert tr[1e-3] < 1e-4 * prior
    assert 30 < tr[1e-2] / tr[1e-3] < 300  # quadratic in h
    # fewer than d+1 points cannot: one coordinate stays unobserved
    design = GPDesign(k, noise_var=0.0, jitter=1e-14)
    design.add(np.vstack([theta, theta + 1e-3 * np.eye(d)[:-1]]))
    assert design.grad_trace(theta) > 0.5 * k.grad_cov(theta)[-1, -1]


def test_polynomial_kernel_central_differences_give_exact_gradient():
    """Quadratics: 2d central-difference points make the gradient posterior exactly 0, and
    the gradient of the posterior mean is the true gradient (Lemma A.2 with Tr = 0)."""
    d = 4
    rng = np.random.default_rng(4)
    a, theta = rng.normal(size=d), rng.normal(size=d)
    pts = np.vstack([theta + 0.5 * np.eye(d), theta - 0.5 * np.eye(d)])
    gp = ExactGP(Polynomial(2), noise_var=0.0, jitter=1e-13)
    gp.fit(pts, 0.5 * np.sum((pts - a) ** 2, axis=1))
    assert abs(gp.grad_trace(theta)) < 1e-8
    np.testing.assert_allclose(gp.grad_mean(theta), theta - a, atol=1e-6)


def test_lemma_a2_rkhs_bias_bound_polynomial_kernel():
    """||grad L - grad m||^2 <= ||L||_H^2 Tr(grad posterior cov) for L = ||x - a||^2 / 2 in the
    RKHS of (x'y + 1)^2, whose norm^2 is |a|^4/4 + |a|^2/2 + d/4."""
    d = 5
    rng = np.random.default_rng(5)
    a = rng.normal(1.0, 1.0, size=d)
    norm2 = np.sum(a**2) ** 2 / 4 + np.sum(a**2) / 2 + d / 4
    theta = np.zeros(d)
    checked = 0
    for b in (2, 4, 7, 12):
        X = theta + rng.normal(size=(b, d))
        gp = ExactGP(Polynomial(2), noise_var=0.0, jitter=1e-12)
        gp.fit(X, 0.5 * np.sum((X - a) ** 2, axis=1))
        err2 = np.sum((gp.grad_mean(theta) - (theta - a)) ** 2)
        assert err2 <= norm2 * gp.grad_trace(theta) * (1 + 1e-6) + 1e-8
        checked += err2 > 1e-6
    assert checked >= 2  # the bound was exercised, not trivially 0 <= 0


def test_greedy_design_reaches_tolerance_and_reports_exact_trace():
    k = RBF(1.0)
    design = GPDesign(k, noise_var=0.01, jitter=1e-10)
    theta = np.zeros(4)
    step = GradientDesigner(n_candidates=64, n_restarts=1).select(
        design, theta, np.random.default_rng(0), tolerance=0.5, max_batch=40)
    assert step.tolerance_met
    assert step.trace_before == pytest.approx(4.0)
    assert step.trace_after <= 0.5 + 1e-9
    assert step.trace_after == pytest.approx(design.grad_trace(theta), rel=1e-9)
    assert design.m == step.points.shape[0] >= 1
    # the last point was needed: without it the trace is above the tolerance
    short = GPDesign(k, noise_var=0.01, jitter=1e-10)
    short.add(step.points[:-1])
    assert short.grad_trace(theta) > 0.5
    # each greedy point beats random points at reducing the trace
    rnd = GPDesign(k, noise_var=0.01, jitter=1e-10)
    rnd.add(theta + np.random.default_rng(1).uniform(-2, 2, size=step.points.shape))
    assert rnd.grad_trace(theta) > step.trace_after


@pytest.mark.parametrize("d", [15, 41])
def test_default_design_informs_the_gradient_in_high_dimension(d):
    """d + 1 greedy points at the default settings must remove most of the prior gradient
    trace. With a fixed 2-lengthscale box (the old default) the candidates of d = 41 lie ~7
    lengthscales away and the trace stays at its prior value d (seen in the Example 4.2
    substitute, where DP-GIBO then moved by noise alone)."""
    k = RBF(1.0)
    design = GPDesign(k, noise_var=0.0, jitter=1e-8)
    theta = np.zeros(d)
    step = GradientDesigner(n_candidates=128, n_restarts=1, maxiter=20).select(
        design, theta, np.random.default_rng(0), batch_size=d + 1)
    assert step.trace_before == pytest.approx(d)
    assert step.trace_after < 0.5 * d
    dist = np.linalg.norm(step.points - theta, axis=1)
    assert np.median(dist) < 3.0  # lengthscales


def test_default_search_radius_keeps_typical_distance_fixed():
    from dpbandits.bo.acquisition import default_search_radius

    for d in (1, 3, 5, 41, 200):
        h = default_search_radius(RBF(0.5), d)
        assert h.shape == (d,)
        if d <= 3:
            np.testing.assert_allclose(h, 1.0)  # 2 lengthscales
        else:  # E||(z - theta) / ell||^2 = sum h^2 / (3 ell^2) = 4
            assert np.sum(h**2) / (3 * 0.25) == pytest.approx(4.0)
    np.testing.assert_array_equal(default_search_radius(Polynomial(2), 7), np.ones(7))


def test_greedy_design_respects_bounds_and_fixed_batch():
    design = GPDesign(RBF(1.0), noise_var=0.0)
    bounds = np.array([[0.0, 0.2], [-1.0, 1.0]])
    step = GradientDesigner(n_candidates=32).select(
        design, np.array([0.1, 0.0]), np.random.default_rng(0), batch_size=3, bounds=bounds)
    assert step.points.shape == (3, 2)
    assert np.all(step.points >= bounds[:, 0]) and np.all(step.points <= bounds[:, 1])
    assert step.tolerance_met


def test_acquisition_gradient_matches_finite_differences():
    des = GradientDesigner()
    for k in (RBF(np.array([0.5, 1.0, 1.5, 0.8])), Matern52(0.9), Polynomial(2)):
        g = GPDesign(k, 0.01, jitter=1e-10)
        rng = np.random.default_rng(3)
        g.add(rng.normal(size=(6, 4)))
        th = rng.normal(size=4)
        Q = g.solve(g.grad_cross(th))
        z = rng.normal(size=4)
        v, gr = des._value_grad(z, g, th, Q)
        fd = np.array([(des._value_grad(z + 1e-6 * e, g, th, Q)[0]
                        - des._value_grad(z - 1e-6 * e, g, th, Q)[0]) / 2e-6 for e in np.eye(4)])
        np.testing.assert_allclose(gr, fd, atol=1e-6)
        before = g.grad_trace(th)
        g.add(z[None])
        assert before - g.grad_trace(th) == pytest.approx(-v, rel=1e-6)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="lengthscale"):
        RBF(0.0)
    with pytest.raises(ValueError, match="lengthscale"):
        RBF([1.0, -2.0])
    with pytest.raises(ValueError, match="outputscale"):
        Matern52(1.0, -1.0)
    with pytest.raises(ValueError, match="degree"):
        Polynomial(0)
    with pytest.raises(TypeError, match="degree"):
        Polynomial(2.5)
    with pytest.raises(ValueError, match="kernel must be one of"):
        make_kernel("laplace")
    with pytest.raises(ValueError, match="lengthscale has 2 entries"):
        RBF([1.0, 2.0])(np.zeros((1, 3)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="same d"):
        RBF(1.0)(np.zeros((1, 3)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="finite"):
        RBF(1.0)(np.full((1, 2), np.nan), np.zeros((1, 2)))
    with pytest.raises(TypeError, match="Kernel"):
        ExactGP("rbf")
    with pytest.raises(ValueError, match="noise_var"):
        ExactGP(RBF(1.0), noise_var=-1.0)
    gp = ExactGP(RBF(1.0)).fit(np.zeros((2, 2)) + [[0, 0], [1, 1]], np.zeros(2))
    with pytest.raises(ValueError, match="Y must have shape"):
        gp.add(np.ones((1, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="d=2"):
        gp.mean(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="exactly one of tolerance"):
        GradientDesigner().select(GPDesign(RBF(1.0)), np.zeros(2), np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        GradientDesigner().select(GPDesign(RBF(1.0)), np.zeros(2), 0, batch_size=1)
    with pytest.raises(ValueError, match="n_candidates"):
        GradientDesigner(n_candidates=0)

"""Tests for the DP-ERM optimizers of Wang, Ye & Xu 2017: DP-SVRG, DP-SVRG++, DP-AccMD, DP-GD.

Convergence tests run with the noise off (``epsilon = inf``) on problems whose minimizer is
known to high accuracy, and check the inequalities the paper's analysis proves (eq. 39/4 for
DP-SVRG, eq. 57 for DP-SVRG++, eq. 76 for DP-AccMD, the PL recursion and eq. 87 for DP-GD)
plus log-log slopes. Calibration tests recompute each guarantee from the ledger with
dp_accounting directly (not through the code that calibrated it).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize

from dpbandits.losses import LogisticLoss, SquaredLoss
from dpbandits.optim import DPGD, DPSVRG, DPAccMD, DPSVRGPlusPlus
from dpbandits.optim.batch import dp_svrg
from dpbandits.optim.batch.data import prepare_data
from dpbandits.optim.batch.dp_accmd import l1_squared_prox
from dpbandits.optim.batch.dp_svrg import svrg_contraction, svrg_theory_parameters
from dpbandits.optim.batch.oracle import GradientOracle, Regularizer, objective

LOGISTIC = LogisticLoss()


# ------------------------------------------------------------------------------ problems
def logistic_problem(n=400, d=5, seed=0, scale=2.0):
    """Non-separable logistic regression, rows on the unit sphere (so ||grad f|| <= 1)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.standard_normal(d) * scale
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ w))).astype(float)
    return X, y


def minimize_exact(loss, X, y, reg=None, x0=None):
    """Reference minimizer of the (unconstrained) objective by BFGS to gtol 1e-12."""
    d = X.shape[1]
    reg = reg or Regularizer(None, 0.0)

    def f(t):
        return float(objective(loss, t[None], X, y, reg)[0])

    def g(t):
        data = prepare_data(X, y, 1)
        grad, _ = GradientOracle(loss, data, 1e12).mean(t[None])
        return grad[0] + reg.gradient(t[None])[0]

    res = optimize.minimize(f, np.zeros(d) if x0 is None else x0, jac=g, method="BFGS",
                            options={"gtol": 1e-12, "maxiter": 10_000})
    return res.x, res.fun


def gaps(loss, X, y, history, fstar, reg=None):
    """Mean optimality gap over replications for every recorded iterate: (n_iterates,)."""
    vals = objective(loss, history, X, y, reg)  # (R, K)
    return (vals - fstar).mean(axis=0)


# ------------------------------------------------------------------------------ DP-SVRG
def test_svrg_theory_parameters_meet_eq4():
    eta, m, A = svrg_theory_parameters(0.25, 0.05)
    assert eta == pytest.approx(1 / 12)
    assert A <= 0.5 and svrg_contraction(eta, m - 1, 0.25, 0.05) > 0.5  # smallest such m
    # eta = 1/(12 L) (as printed in Theorem 4.2) cannot satisfy eq. (4)
    with pytest.raises(ValueError, match="too large"):
        svrg_theory_parameters(0.25, 0.05, step_size=1 / (12 * 0.25))


def test_svrg_noise_off_contracts_at_least_as_eq4():
    """E F(x~_s) - F* <= A (E F(x~_{s-1}) - F*) with A <= 1/2 (eq. 39, no noise)."""
    X, y = logistic_problem(n=300, d=5, seed=1)
    reg = Regularizer("l2", 0.05)
    _, fstar = minimize_exact(LOGISTIC, X, y, reg)
    opt = DPSVRG(math.inf, 1e-3, n_epochs=5, reg="l2", reg_strength=0.05)
    res = opt.fit(LOGISTIC, X, y, np.random.default_rng(3), n_reps=4)
    eta, m = res.extra["step_size"], res.extra["inner_steps"]
    A = svrg_contraction(eta, m, 0.25, 0.05)
    assert A <= 0.5
    g = gaps(LOGISTIC, X, y, res.history, fstar, reg)
    assert g[0] > 0.05
    for s in range(1, 4):  # before machine precision
        assert g[s] <= A * g[s - 1] + 1e-13
    slope = np.polyfit(np.arange(4), np.log(g[:4]), 1)[0]
    assert slope < math.log(0.5)
    assert np.all(res.n_clipped == 0)  # ||x|| = 1: logistic gradients never exceed G = 1
    assert res.n_gradient_evals == 5 * (300 + 2 * m)


def _fit_direction(opt, X, y, x, snap, idx):
    """``v`` of Algorithm 1/2, line 7 (no noise), as ``fit`` computes it: the oracle ``fit``
    builds (clip norm ``G``), its snapshot at ``snap`` and ``dp_svrg._direction``, one
    replication per index in ``idx``."""
    R = idx.size
    oracle = GradientOracle(LOGISTIC, prepare_data(X, y, R), float(opt.clip_norm))
    snapshot = oracle.snapshot(np.tile(snap, (R, 1)))
    v, _ = dp_svrg._direction(oracle, snapshot, np.tile(x, (R, 1)), idx)
    return v


def test_svrg_variance_reduced_gradient_is_unbiased():
    """E_{i, u}[v] = grad F(x) (clipped mean gradient), Monte Carlo with 4-sigma tolerance,
    with clipping active (features of norm up to 3, G = 1)."""
    rng = np.random.default_rng(5)
    n, d, N = 50, 4, 40_000
    X = rng.standard_normal((n, d)) * rng.uniform(0.2, 3.0, size=(n, 1))
    y = (rng.random(n) < 0.5).astype(float)
    opt = DPSVRG(math.inf, 1e-3, inner_steps=10, step_size=0.1)
    x = rng.standard_normal(d)
    snap = rng.standard_normal(d)
    sigma = 0.7
    idx = rng.integers(0, n, size=N)
    noise = rng.normal(0.0, sigma, size=(N, d))
    v = _fit_direction(opt, X, y, x, snap, idx) + noise
    data = prepare_data(X, y, 1)
    oracle = GradientOracle(LOGISTIC, data, 1.0)
    full, nclip = oracle.mean(x[None])
    assert nclip[0] > 0  # clipping is exercised
    se = v.std(axis=0, ddof=1) / math.sqrt(N)
    assert np.all(np.abs(v.mean(axis=0) - full[0]) <= 4.0 * se)
    # exact expectation over the index (no noise): enumerate all n indices
    v_all = _fit_direction(opt, X, y, x, snap, np.arange(n))
    np.testing.assert_allclose(v_all.mean(axis=0), full[0], atol=1e-12)
    # a biased variant (dropping the snapshot mean) would fail the same check
    assert np.max(np.abs((v_all - oracle.snapshot(np.tile(snap, (n, 1))).mean).mean(0)
                         - full[0])) > 1e-3


def test_svrgpp_noise_off_meets_eq57_and_halves_per_epoch():
    """E F(x~_s) - F* <= (F(x~_0) - F*)/2^{s-1} + 3 m ||x~_0 - x*||^2 / (4 eta 2^s)."""
    X, y = logistic_problem(n=300, d=4, seed=2, scale=1.0)
    xstar, fstar = minimize_exact(LOGISTIC, X, y)
    opt = DPSVRGPlusPlus(math.inf, 1e-3, n_epochs=6, inner_steps=10)
    res = opt.fit(LOGISTIC, X, y, np.random.default_rng(0), n_reps=4)
    eta, m = res.extra["step_size"], res.extra["inner_steps"]
    assert eta == pytest.approx(1 / (13 * 0.25))
    assert res.extra["epoch_lengths"] == [10 * 2**s for s in range(1, 7)]
    g = gaps(LOGISTIC, X, y, res.history, fstar)
    s = np.arange(1, 7)
    bound = g[0] / 2.0 ** (s - 1) + 3 * m * np.sum(xstar**2) / (4 * eta * 2.0**s)
    assert np.all(g[1:] <= bound)
    slope = np.polyfit(s, np.log2(g[1:]), 1)[0]
    assert slope <= -1.0  # at least the 1/2^s rate


def test_svrg_requires_inner_steps_without_strong_convexity():
    with pytest.raises(ValueError, match="inner_steps"):
        DPSVRG(1.0, 1e-3, smoothness=0.25)
    opt = DPSVRG(1.0, 1e-3)  # needs the loss for L: resolved at fit
    with pytest.raises(RuntimeError, match="smoothness"):
        opt.privacy_for(100)


# ------------------------------------------------------------------------------ DP-AccMD
def log_spectrum_quadratic(d=100):
    """F(theta) = sum_i lambda_i (theta_i - 1)^2 / 2 with lambda log-spaced in [1e-6, 1], as a
    finite sum of squared losses (rows sqrt(n lambda_i) e_i). Its x*-weight per eigenvalue
    decays like 1/lambda, the regime where gradient descent's gap is ~1/k and an accelerated
    method's ~1/k^2 (for 1 << k << 1e6)."""
    lam = np.logspace(-6, 0, d)
    n = d
    X = math.sqrt(n) * np.diag(np.sqrt(lam))
    y = math.sqrt(n) * np.sqrt(lam)
    return X, y, np.ones(d), 0.0


def test_accmd_noise_off_accelerated_rate_l2():
    """eq. (76) without noise: F(y_k) - F* <= 8 L_C B_w(x*, x0)/(k+1)^2, and the log-log slope
    is about -2 where plain gradient descent's is about -1."""
    X, y, xstar, fstar = log_spectrum_quadratic()
    loss = SquaredLoss()
    r = 2.0 * np.linalg.norm(xstar)
    # L = 1 is the smoothness of F (the per-sample ||x_i||^2 is irrelevant to the rate)
    opt = DPAccMD(math.inf, 1e-3, n_iters=100, geometry="l2", radius=r, clip_norm=1e12,
                  smoothness=1.0)
    res = opt.fit(loss, X, y, np.random.default_rng(0))
    g = gaps(loss, X, y, res.history, fstar)
    k = res.history_steps
    bound = 8 * res.extra["L_C"] * opt.bregman_initial(xstar) / (k + 1) ** 2
    assert np.all(g[1:] <= bound[1:])
    sel = k >= 20
    slope = np.polyfit(np.log(k[sel]), np.log(g[sel]), 1)[0]
    assert -2.4 < slope < -1.6
    gd = DPGD(math.inf, 1e-3, n_iters=100, step_size=1.0, clip_norm=1e12).fit(
        loss, X, y, np.random.default_rng(0))
    slope_gd = np.polyfit(np.log(k[sel]), np.log(gaps(loss, X, y, gd.history, fstar)[sel]), 1)[0]
    assert slope_gd > -1.2  # the contrast that makes the slope test meaningful


def fista_l1_ball(loss, X, y, r, L, iters=4000):
    """Reference minimizer over the l_1 ball: accelerated projected gradient (FISTA)."""
    from dpbandits.geometry import project_l1_ball

    data = prepare_data(X, y, 1)
    oracle = GradientOracle(loss, data, 1e12)
    x = z = np.zeros((1, X.shape[1]))
    t = 1.0
    for _ in range(iters):
        g, _ = oracle.mean(z)
        x_new = project_l1_ball(z - g / L, r)
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        z = x_new + (t - 1) / t_new * (x_new - x)
        x, t = x_new, t_new
    return x[0]


def test_accmd_noise_off_bound_l1_ball():
    X, y = logistic_problem(n=300, d=20, seed=4, scale=3.0)
    r = 1.5
    xstar = fista_l1_ball(LOGISTIC, X, y, r, 0.25)
    fstar = float(objective(LOGISTIC, xstar, X, y))
    assert abs(np.abs(xstar).sum() - r) < 1e-6  # the constraint is active
    opt = DPAccMD(math.inf, 1e-3, n_iters=100, geometry="l1", radius=r)
    res = opt.fit(LOGISTIC, X, y, np.random.default_rng(0))
    g = gaps(LOGISTIC, X, y, res.history, fstar)
    assert g.min() > -1e-9  # fstar is the minimum over the ball
    k = res.history_steps
    bound = 8 * res.extra["L_C"] * math.log(2 * 20) / (k + 1) ** 2
    assert np.all(g[1:] <= bound[1:] + 1e-9)
    assert np.all(np.abs(res.history).sum(-1) <= r * (1 + 1e-9))  # feasible iterates
    assert g[-1] < 0.02 * g[1]


def test_l1_squared_prox_matches_lp_reference():
    """The y-step solver against an LP-based reference (min over s of beta s^2/2 + LP(s))."""
    rng = np.random.default_rng(0)
    for _ in range(10):
        d = int(rng.integers(2, 6))
        x = rng.standard_normal(d)
        x *= rng.choice([0.3, 1.0]) / np.abs(x).sum()
        gvec = rng.standard_normal(d) * rng.choice([0.3, 5.0])
        beta = float(rng.choice([0.5, 4.0]))
        yv = l1_squared_prox(x[None], gvec[None], beta, 1.0)[0]
        assert np.abs(yv).sum() <= 1.0 + 1e-9

        def lp(s, x=x, gvec=gvec, d=d):
            c = np.concatenate([gvec, -gvec, np.zeros(2 * d)])
            a_ub = np.array([np.r_[np.ones(2 * d), np.zeros(2 * d)],
                             np.r_[np.zeros(2 * d), np.ones(2 * d)]])
            a_eq = np.hstack([np.eye(d), -np.eye(d), -np.eye(d), np.eye(d)])
            return optimize.linprog(c, A_ub=a_ub, b_ub=[s, 1.0], A_eq=a_eq, b_eq=-x,
                                    bounds=(0, None), method="highs",
                                    options={"primal_feasibility_tolerance": 1e-10,
                                             "dual_feasibility_tolerance": 1e-10}).fun

        # beta s^2/2 + LP(s) is convex in s: golden-section search on [0, 4]
        def h(s, beta=beta, lp=lp):
            return 0.5 * beta * s * s + lp(s)

        a, b = 0.0, 4.0
        inv = (math.sqrt(5) - 1) / 2
        c, e = b - inv * (b - a), a + inv * (b - a)
        hc, he = h(c), h(e)
        for _ in range(60):
            if hc < he:
                b, e, he = e, c, hc
                c = b - inv * (b - a)
                hc = h(c)
            else:
                a, c, hc = c, e, he
                e = a + inv * (b - a)
                he = h(e)
        ref = min(hc, he, h(0.0))
        mine = 0.5 * beta * np.abs(yv - x).sum() ** 2 + gvec @ (yv - x)
        assert mine <= ref + 1e-9 * (1 + abs(ref))


def test_accmd_theta0_outside_ball_rejected():
    X, y = logistic_problem(n=20, d=3)
    opt = DPAccMD(1.0, 1e-3, geometry="l1", radius=1.0, theta0=np.array([1.0, 1.0, 0.0]))
    with pytest.raises(ValueError, match="theta0 must lie"):
        opt.fit(LOGISTIC, X, y, np.random.default_rng(0))


# ------------------------------------------------------------------------------ DP-GD
def test_dpgd_noise_off_pl_recursion():
    """Strongly convex (hence PL) objective, eta = 1/L: gap_t <= (1 - mu/L)^t gap_0."""
    X, y = logistic_problem(n=300, d=5, seed=6)
    lam = 0.05
    reg = Regularizer("l2", lam)
    _, fstar = minimize_exact(LOGISTIC, X, y, reg)
    opt = DPGD(math.inf, 1e-3, n_iters=60, reg="l2", reg_strength=lam)
    res = opt.fit(LOGISTIC, X, y, np.random.default_rng(0))
    L = 0.25 + lam
    assert res.extra["step_size"] == pytest.approx(1 / L)
    g = gaps(LOGISTIC, X, y, res.history, fstar, reg)
    t = res.history_steps
    assert np.all(g <= (1 - lam / L) ** t * g[0] + 1e-12)


def test_dpgd_random_output_gradient_norm_bound():
    """Section 6.2 output: m uniform on {0..T-1}; E||grad F(x_m)||^2 <= 2 L (F(x_0) - F*)/T."""
    X, y = logistic_problem(n=200, d=4, seed=7, scale=1.0)
    _, fstar = minimize_exact(LOGISTIC, X, y)
    T, R = 20, 2000
    opt = DPGD(math.inf, 1e-3, n_iters=T, output="random")
    res = opt.fit(LOGISTIC, X, y, np.random.default_rng(11), n_reps=R)
    m = res.extra["output_index"]
    np.testing.assert_array_equal(res.theta, res.history[np.arange(R), m])
    counts = np.bincount(m, minlength=T)
    assert counts.size == T  # never T itself
    chi2 = np.sum((counts - R / T) ** 2 / (R / T))
    assert chi2 < T - 1 + 5 * math.sqrt(2 * (T - 1))
    data = prepare_data(X, y, 1)
    grads, _ = GradientOracle(LOGISTIC, data, 1.0).mean(res.history[0, :T])
    mean_sq = float(np.mean(np.sum(grads**2, axis=1)))
    f0 = float(objective(LOGISTIC, np.zeros(4), X, y))
    assert mean_sq <= 2 * 0.25 * (f0 - fstar) / T


# ------------------------------------------------------------------------------ calibration
def _pld_eps(event, delta):
    acc = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(event)
    return acc.get_epsilon(delta)


def _rdp_replace_eps(event, delta):
    acc = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(event)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_full_gradient_methods_certified_by_independent_pld(eps):
    n, delta = 500, 1e-5
    for opt in (DPGD(eps, delta, n_iters=300), DPAccMD(eps, delta, n_iters=40)):
        ledger = opt.ledger_for(n)
        assert opt.privacy_for(n).epsilon == eps and opt.privacy_for(n).certified
        recomputed = _pld_eps(ledger, delta)
        assert recomputed <= eps * (1 + 1e-9)
        assert recomputed >= 0.99 * eps  # calibration is tight, not just valid
        # the noise is what the ledger says: sigma = k * 2G/n
        k = ledger.event.noise_multiplier
        assert opt.noise_std_for(n) == pytest.approx(k * 2.0 / n)
        assert ledger.count == opt.n_iters


@pytest.mark.heavy
def test_svrg_certified_by_independent_rdp_and_tight():
    n, delta, eps = 400, 1e-3, 1.0
    for opt in (DPSVRG(eps, delta, n_epochs=3, inner_steps=200, step_size=0.1),
                DPSVRGPlusPlus(eps, delta, n_epochs=4, inner_steps=5, step_size=0.1)):
        ledger = opt.ledger_for(n)
        assert ledger.count == opt.total_steps()
        recomputed = _rdp_replace_eps(ledger, delta)
        assert 0.97 * eps <= recomputed <= eps * (1 + 1e-9)
        wor, full = ledger.event.events
        assert isinstance(wor, dp_accounting.SampledWithoutReplacementDpEvent)
        assert (wor.source_dataset_size, wor.sample_size) == (n, 1)
        sigma = math.hypot(wor.event.noise_multiplier * 4.0, full.noise_multiplier * 2.0 / n)
        assert opt.noise_std_for(n) == pytest.approx(sigma)
    # the paper's eq. (3) noise with c = 1 is far from certified at this epsilon
    paper_sigma = math.sqrt(600 * math.log(1 / delta)) / (n * eps)
    loose = DPSVRG(eps, delta, n_epochs=3, inner_steps=200, step_size=0.1, noise_std=paper_sigma)
    assert loose.privacy_for(n).epsilon > 10 * eps


def test_noise_std_override_reaccounted():
    opt = DPGD(1.0, 1e-5, n_iters=100, noise_std=0.01)
    k = 0.01 / (2.0 / 1000)
    assert opt.privacy_for(1000).epsilon == pytest.approx(
        _pld_eps(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(k), 100), 1e-5),
        rel=1e-3)


def test_clipping_enforced_and_counted():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 3)) * 5.0  # logistic gradients up to ~5 > G = 1
    y = (rng.random(100) < 0.5).astype(float)
    res = DPGD(1.0, 1e-5, n_iters=3).fit(LOGISTIC, X, y, np.random.default_rng(0))
    assert res.n_clipped[0] > 0
    data = prepare_data(X, y, 1)
    oracle = GradientOracle(LOGISTIC, data, 1.0)
    theta = rng.standard_normal((2, 3))
    for i in range(5):
        g, _ = oracle.at_index(theta, np.array([i, i]))
        assert np.all(np.linalg.norm(g, axis=1) <= 1.0)
    # replace-one sensitivity of the clipped mean gradient is <= 2G/n (grey box)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -X[0] * 10, 1 - y[0]
    g1, _ = GradientOracle(LOGISTIC, prepare_data(X, y, 2), 1.0).mean(theta)
    g2, _ = GradientOracle(LOGISTIC, prepare_data(X2, y2, 2), 1.0).mean(theta)
    assert np.all(np.linalg.norm(g1 - g2, axis=1) <= 2.0 / 100 + 1e-15)


# ------------------------------------------------------------------------------ determinism
@pytest.mark.parametrize("make", [
    lambda: DPSVRG(1.0, 1e-3, n_epochs=2, inner_steps=30, step_size=0.1),
    lambda: DPSVRGPlusPlus(1.0, 1e-3, n_epochs=2, inner_steps=5),
    lambda: DPGD(1.0, 1e-3, n_iters=10),
    lambda: DPGD(1.0, 1e-3, n_iters=10, output="random", reg="l1", reg_strength=0.01),
    lambda: DPAccMD(1.0, 1e-3, n_iters=10, geometry="l1"),
    lambda: DPAccMD(1.0, 1e-3, n_iters=10, geometry="l2"),
])
def test_same_seed_bit_identical(make):
    X, y = logistic_problem(n=60, d=3)
    a = make().fit(LOGISTIC, X, y, np.random.default_rng(42), n_reps=3)
    b = make().fit(LOGISTIC, X, y, np.random.default_rng(42), n_reps=3)
    c = make().fit(LOGISTIC, X, y, np.random.default_rng(43), n_reps=3)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.history, b.history)
    assert not np.array_equal(a.theta, c.theta)
    assert not np.array_equal(a.theta[0], a.theta[1])  # replications do not share noise
    # per-replication data sets give the same shapes
    Xr = np.stack([X, X[::-1], X])
    yr = np.stack([y, y[::-1], y])
    d = make().fit(LOGISTIC, Xr, yr, np.random.default_rng(42))
    assert d.theta.shape == (3, 3)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("cls", [DPSVRG, DPSVRGPlusPlus, DPGD, DPAccMD])
def test_bad_privacy_parameters(cls):
    with pytest.raises(ValueError, match="epsilon"):
        cls(0.0, 1e-3)
    with pytest.raises(ValueError, match="epsilon"):
        cls(-1.0, 1e-3)
    with pytest.raises(ValueError, match="delta"):
        cls(1.0, 1.5)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        cls(1.0, 0.0)
    with pytest.raises(TypeError, match="epsilon"):
        cls("1", 1e-3)
    with pytest.raises(ValueError, match="clip_norm"):
        cls(1.0, 1e-3, clip_norm=0.0)
    with pytest.raises(ValueError, match="noise_std"):
        cls(1.0, 1e-3, noise_std=-1.0)


@pytest.mark.parametrize("cls, kwargs, error, match", [
    (DPSVRG, {"n_epochs": 0}, ValueError, "n_epochs"),
    (DPSVRG, {"inner_steps": 2.5}, TypeError, "inner_steps"),
    (DPGD, {"reg": "l3"}, ValueError, "reg must be one of"),
    (DPGD, {"reg_strength": 0.1}, ValueError, "reg_strength"),
    (DPGD, {"output": "best"}, ValueError, "output"),
    (DPAccMD, {"geometry": "linf"}, ValueError, "geometry"),
    (DPGD, {"step_size": -0.1}, ValueError, "step_size"),
])
def test_bad_hyperparameters(cls, kwargs, error, match):
    with pytest.raises(error, match=match):
        cls(1.0, 1e-3, **kwargs)


def test_bad_data():
    opt = DPGD(1.0, 1e-3, n_iters=2)
    X, y = logistic_problem(n=20, d=3)
    rng = np.random.default_rng(0)
    with pytest.raises(RuntimeError, match="call fit"):
        _ = opt.privacy
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X must contain only finite"):
        opt.fit(LOGISTIC, bad, y, rng)
    with pytest.raises(ValueError, match="y must have shape"):
        opt.fit(LOGISTIC, X, y[:-1], rng)
    with pytest.raises(ValueError, match="n_reps=2 does not match"):
        opt.fit(LOGISTIC, np.stack([X] * 3), np.stack([y] * 3), rng, n_reps=2)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        opt.fit(LOGISTIC, X, y, 0)
    with pytest.raises(TypeError, match="loss must provide"):
        opt.fit(object(), X, y, rng)
    with pytest.raises(ValueError, match="theta0 must have shape"):
        DPGD(1.0, 1e-3, theta0=np.zeros(5)).fit(LOGISTIC, X, y, rng)
    res = opt.fit(LOGISTIC, X, y, rng)
    assert opt.privacy == res.privacy and opt.ledger.count == 2


def test_accmd_bregman_initial_is_the_distance_of_theorem_5_4_in_both_geometries():
    """``B_w(x*, 0)``: ``||x*||^2 / (2 r^2)`` (l2); the KL divergence of the sparsest lift of
    ``x*/r`` from the uniform point (l1): 0 at ``x* = 0``, ``log(2d)`` at a vertex."""
    d, r = 5, 2.0
    l1 = DPAccMD(math.inf, 1e-3, geometry="l1", radius=r)
    l2 = DPAccMD(math.inf, 1e-3, geometry="l2", radius=r)
    vertex = np.zeros(d)
    vertex[2] = -r
    assert l1.bregman_initial(np.zeros(d)) == pytest.approx(0.0, abs=1e-15)
    assert l1.bregman_initial(vertex) == pytest.approx(math.log(2 * d), rel=1e-14)
    inner = np.array([0.3, -0.2, 0.0, 0.0, 0.1])
    assert 0.0 < l1.bregman_initial(inner) < math.log(2 * d)
    assert l2.bregman_initial(vertex) == pytest.approx(0.5, rel=1e-15)

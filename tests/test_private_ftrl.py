"""Tests for Private FTRL (Arora, Marinov & Ullah 2020, earlier version): faithful updates, the
claimed-guarantee calibration, the generalized-Gaussian noise, and the privacy audit showing
the claim is violated for a non-smooth loss (its Lemma C.1 fails)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from scipy import optimize, special, stats

from dpbandits.geometry import lp_norm
from dpbandits.losses import AbsoluteLoss
from dpbandits.optim.batch.private_ftrl import (
    FTRL_CAVEAT,
    PrivateFTRL,
    generalized_gaussian_coordinates,
)
from dpbandits.privacy import accounting as acc
from dpbandits.privacy.audit import AuditSpec, audit

ABS = AbsoluteLoss()


def lad_data(R, n, d, seed, b=2.0):
    """x uniform on the sphere, y = <x, theta*> + U[-b, b]: F(theta) - F* =
    ||theta - theta*||^2 / (2 b d) for ||theta - theta*|| <= b."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((R, n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    ts = np.zeros(d)
    ts[0] = 0.5
    return X, X @ ts + rng.uniform(-b, b, size=(R, n)), ts


# ------------------------------------------------------------------------------ utility
def test_noise_off_last_iterate_rate():
    """Theorem 5.1 / A.3 without noise (G = L): E F(w_T) - F* <= G D log T/(2 sqrt T) +
    3 G D/(2 sqrt T), and the excess risk decays at least like T^{-1/2}."""
    d, b, R = 3, 2.0, 30
    ns = [250, 1000, 4000]
    means = []
    for i, n in enumerate(ns):
        X, y, ts = lad_data(R, n, d, seed=10 + i, b=b)
        opt = PrivateFTRL(math.inf, 1e-5, radius=1.0)
        res = opt.fit(ABS, X, y, np.random.default_rng(i))
        ex = np.sum((res.theta - ts) ** 2, axis=1) / (2 * b * d)
        means.append(ex.mean())
        D = 1.0 / math.sqrt(2.0)  # sqrt(max Psi - min Psi) on the unit ball
        assert ex.mean() <= D * math.log(n) / (2 * math.sqrt(n)) + 3 * D / (2 * math.sqrt(n))
    slope = np.polyfit(np.log(ns), np.log(means), 1)[0]
    assert slope < -0.5 + 0.15


def test_lp_update_is_the_ftrl_argmin():
    """w = argmin_{||w||_p <= r} <G, w> + ||w||_p^2 / (2 eta (p-1)), checked numerically."""
    rng = np.random.default_rng(0)
    p, r, eta = 1.5, 1.0, 0.3
    opt = PrivateFTRL(math.inf, 1e-5, p=p, radius=r, step_size=eta, step_schedule="fixed")
    X = rng.standard_normal((2, 3))
    y = np.array([5.0, -5.0])
    res = opt.fit(ABS, X, y, np.random.default_rng(0))  # T = 2: w_3 from G = g_1 + g_2
    w1 = np.zeros(3)
    g1 = np.sign(X[0] @ w1 - y[0]) * X[0]
    q = p / (p - 1)
    g1 = g1 * min(1.0, 1.0 / lp_norm(g1, q))  # clipped to ||.||_q <= L = 1
    # recompute w_2 then w_3 with scipy
    def argmin(G, eta_t):
        cons = {"type": "ineq", "fun": lambda w: r - np.sum(np.abs(w) ** p) ** (1 / p)}
        f = lambda w: G @ w + np.sum(np.abs(w) ** p) ** (2 / p) / (2 * eta_t * (p - 1))  # noqa
        best = min((optimize.minimize(f, w0, constraints=[cons], method="SLSQP",
                                      options={"ftol": 1e-14, "maxiter": 500})
                    for w0 in (np.zeros(3) + 1e-3, -G / np.abs(G).sum() * 0.5)),
                   key=lambda o: o.fun)
        return best.x
    eta_t = eta / math.sqrt(2)
    w2 = argmin(g1, eta_t)
    g2 = np.sign(X[1] @ w2 - y[1]) * X[1]
    g2 = g2 * min(1.0, 1.0 / lp_norm(g2, q))
    w3 = argmin(g1 + g2, eta_t)
    np.testing.assert_allclose(res.theta[0], w3, atol=1e-4)


# ------------------------------------------------------------------------------ noise
@pytest.mark.parametrize("q", [1.5, 2.0, 3.0])
def test_generalized_gaussian_sampler(q):
    rng = np.random.default_rng(1)
    sigma, N = 0.7, 200_000
    x = generalized_gaussian_coordinates(rng, sigma, q, N)
    for k in (2, 4):
        mom = sigma**k * special.gamma((k + 1) / q) / special.gamma(1 / q)
        se = np.std(np.abs(x) ** k) / math.sqrt(N)
        assert abs(np.mean(np.abs(x) ** k) - mom) < 5 * se
    assert stats.kstest(x[:20_000], stats.gennorm(q, scale=sigma).cdf).pvalue > 1e-3
    assert abs(np.mean(x > 0) - 0.5) < 5 * 0.5 / math.sqrt(N)


# ------------------------------------------------------------------------------ the claim
def test_claimed_guarantee_is_calibrated_and_marked_uncertified():
    T, eps, delta, L = 1000, 1.0, 1e-5, 1.0
    opt = PrivateFTRL(eps, delta, lipschitz=L)
    sigma = opt.noise_std_for(T)
    rho = 4 * L**2 / (T * sigma**2)  # Theorem 5.4
    assert acc.zcdp_epsilon(rho, delta) == pytest.approx(eps, rel=1e-6)
    pg = opt.privacy_for(T)
    assert pg.epsilon == pytest.approx(eps, rel=1e-6)
    assert not pg.certified and not pg.is_private and pg.caveat == FTRL_CAVEAT
    assert isinstance(opt.ledger_for(T), dp_accounting.ZCDpEvent)
    # the valid bound for the same noise: one Gaussian of multiplier sigma/(2L)
    cert = opt.certified_privacy_for(T)
    assert cert.certified and cert.epsilon > 10 * eps
    assert cert.epsilon == pytest.approx(
        acc.gdp_epsilon(2 * L / sigma, delta), rel=1e-2)
    # Theorem 4.4 variant: only xi_1 is noisy -> nothing protects later samples
    first = PrivateFTRL(eps, delta, noise="first")
    assert math.isinf(first.certified_privacy_for(T).epsilon)
    # l_p: flat RDP on alpha < 2^{q-1}/(2^{q-1}-1), Mironov conversion
    lp = PrivateFTRL(40.0, delta, p=1.5)
    q = 3.0
    a_max = 2 ** (q - 1) / (2 ** (q - 1) - 1)
    c = 2 * (2 * L) ** q / (T ** (q - 1) * lp.noise_std_for(T) ** q)
    assert c + math.log(1 / delta) / (a_max - 1) == pytest.approx(40.0)
    assert lp.certified_privacy_for(T) is None
    with pytest.raises(ValueError, match="alpha_max"):
        PrivateFTRL(5.0, delta, p=1.5).noise_std_for(T)


def _ftrl_runs(opt, T, world, runs, rng, kind):
    """Final iterate (d = 1) of ``runs`` runs. Rows 1..T-1: f = |w| (``kind="abs"``) or
    alternating linear losses +-w (``kind="linear"``); the last row is the canary, a linear
    loss +w (world 0) or -w (world 1) written as |w -+ 2| (|w| <= 1 < 2)."""
    X = np.ones((T, 1))
    y = np.zeros(T)
    if kind == "linear":
        y[:-1] = np.where(np.arange(T - 1) % 2 == 0, 2.0, -2.0)
    y[-1] = -2.0 if world == 0 else 2.0
    return opt.fit(ABS, X, y, rng, n_reps=runs).theta[:, 0]


def _cp_eps_lb(s0, s1, delta, alpha):
    """Self-contained Clopper-Pearson bound for the rule 'S > 0' (D' pushes S up)."""
    n0, n1 = s0.size, s1.size
    k0, k1 = int(np.sum(s0 > 0)), int(np.sum(s1 > 0))
    fpr_ub = stats.beta.ppf(1 - alpha, k0 + 1, n0 - k0) if k0 < n0 else 1.0
    tpr_lb = stats.beta.ppf(alpha, k1, n1 - k1 + 1) if k1 > 0 else 0.0
    return math.log(max(tpr_lb - delta, 1e-300) / fpr_ub)


@pytest.mark.heavy
def test_audit_refutes_the_claim_for_a_nonsmooth_loss():
    """f = |w| on the first T-1 samples makes the iterate mean-reverting, so the last sample
    is barely hidden: the empirical lower bound on epsilon exceeds the claimed epsilon
    (about 2.3 against 1 at this seed; the violation grows with T)."""
    T, eps, delta, runs = 1500, 1.0, 1e-5, 6000
    opt = PrivateFTRL(eps, delta)

    def sampler(world, n, rng):
        return _ftrl_runs(opt, T, world, n, rng, "abs")

    res = audit(sampler, AuditSpec(epsilon=opt.privacy_for(T).epsilon, delta=delta, runs=runs,
                                   seed=3, confidence=0.99, selection="bonferroni",
                                   thresholds=[0.0], orientation="greater",
                                   component="PrivateFTRL", expected="violation"))
    assert res.verdict == "violation" and res.eps_lb > 1.5 * eps
    # the same conclusion from a self-contained Clopper-Pearson computation
    rng0, rng1 = np.random.default_rng(100), np.random.default_rng(101)
    s0 = _ftrl_runs(opt, T, 0, runs, rng0, "abs")
    s1 = _ftrl_runs(opt, T, 1, runs, rng1, "abs")
    lb = _cp_eps_lb(s0, s1, delta, 0.005)
    assert lb > 1.5 * eps
    # ... and it never exceeds the valid (certified) bound for the same noise
    assert max(lb, res.eps_lb) <= opt.certified_privacy_for(T).epsilon


def test_audit_consistent_for_linear_losses():
    """Sanity (note 8.3): when gradients do not depend on the iterate the claim holds and
    the same audit stays below it."""
    T, eps, delta, runs = 600, 1.0, 1e-5, 6000
    opt = PrivateFTRL(eps, delta)
    s0 = _ftrl_runs(opt, T, 0, runs, np.random.default_rng(200), "linear")
    s1 = _ftrl_runs(opt, T, 1, runs, np.random.default_rng(201), "linear")
    assert _cp_eps_lb(s0, s1, delta, 0.005) < eps
    assert 0.3 < np.mean(s0 > 0) < 0.7  # the statistic is not degenerate


def test_audit_first_noise_only_variant_is_not_private():
    T, runs = 200, 2000
    opt = PrivateFTRL(1.0, 1e-5, noise="first")
    s0 = _ftrl_runs(opt, T, 0, runs, np.random.default_rng(1), "abs")
    s1 = _ftrl_runs(opt, T, 1, runs, np.random.default_rng(2), "abs")
    assert np.mean(s1 > 0) == 1.0 and np.mean(s0 > 0) == 0.0


# ------------------------------------------------------------------------------ misc
def test_same_seed_bit_identical_and_anytime():
    X, y, _ = lad_data(2, 200, 3, seed=0)
    for kw in ({}, {"step_schedule": "anytime"}, {"p": 1.5}):
        eps = 40.0 if kw.get("p") else 1.0
        a = PrivateFTRL(eps, 1e-5, **kw).fit(ABS, X, y, np.random.default_rng(9))
        b = PrivateFTRL(eps, 1e-5, **kw).fit(ABS, X, y, np.random.default_rng(9))
        np.testing.assert_array_equal(a.history, b.history)
        assert not np.array_equal(a.theta[0], a.theta[1])
        assert np.all(lp_norm(a.history, float(kw.get("p", 2.0))) <= 1.0 + 1e-9)


@pytest.mark.parametrize("args, kwargs, match", [
    ((1.0, 1e-5), {"p": 3.0}, "p must be in"),
    ((1.0, 1e-5), {"p": 1.0}, "p must be >"),
    ((1.0, 1e-5), {"noise": "none"}, "noise must be one of"),
    ((1.0, 1e-5), {"step_schedule": "decay"}, "step_schedule"),
    ((1.0, 0.0), {}, r"delta must be in \(0, 1\)"),
    ((1.0, 1e-5), {"lipschitz": -2.0}, "lipschitz"),
])
def test_bad_parameters(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivateFTRL(*args, **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match="y must have shape"):
        PrivateFTRL(1.0, 1e-5).fit(ABS, np.ones((10, 2)), np.zeros(9), np.random.default_rng(0))

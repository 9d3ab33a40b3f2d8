"""Tests for Private SGD (Arora, Marinov & Ullah 2020, Algorithm 1): stopping time (Theorem 2),
convergence rate without noise, the Theorem 6 / Remark 1 calibration and the accountant's
figure."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from dpbandits.losses import AbsoluteLoss, GeometricMedianLoss, HingeLoss
from dpbandits.optim import PrivateSGD
from dpbandits.optim.batch.private_sgd import expected_stopping_time, n_fresh_steps

ABS = AbsoluteLoss()


def lad_data(R, n, d, seed, b=2.0, radius=1.0):
    """LAD regression with a known population minimizer: x uniform on the unit sphere,
    y = <x, theta*> + U[-b, b]. For ||theta - theta*|| <= b the population risk is
    F(theta) = F(theta*) + ||theta - theta*||^2 / (2 b d) (exact)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((R, n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    theta_star = np.zeros(d)
    theta_star[0] = 0.5 * radius
    y = X @ theta_star + rng.uniform(-b, b, size=(R, n))
    return X, y, theta_star


def excess_risk(theta, theta_star, b, d):
    return np.sum((theta - theta_star) ** 2, axis=-1) / (2 * b * d)


# ------------------------------------------------------------------------------ Theorem 2
def test_stopping_time_matches_coupon_collector_and_is_below_2n():
    """tau ~ n ln 2 (exact mean from the coupon-collector sum), tau <= 2n in all runs, and
    exactly floor(n/2) + 1 gradient evaluations."""
    n, R = 64, 3000
    X = np.ones((n, 1))
    opt = PrivateSGD(math.inf, 1e-5)
    res = opt.fit(ABS, X, np.zeros(n), np.random.default_rng(0), n_reps=R)
    tau = res.extra["tau"]
    mean, var = expected_stopping_time(n)
    assert abs(tau.mean() - mean) <= 4 * math.sqrt(var / R)
    assert tau.max() <= 2 * n
    assert res.n_gradient_evals == n_fresh_steps(n) == 33
    assert tau.min() >= 33
    # large n: tau / n concentrates at ln 2
    n = 3000
    res = opt.fit(ABS, np.ones((n, 1)), np.zeros(n), np.random.default_rng(1), n_reps=40)
    assert abs(res.extra["tau"].mean() / n - math.log(2)) < 0.01
    assert res.extra["tau"].max() <= 2 * n


# ------------------------------------------------------------------------------ utility
def test_noise_off_rate_and_bound():
    """Without noise, E F(w_hat) - F* <= 5 L D / sqrt(n) (Theorem 4 with sigma = 0) and the
    excess risk decays at least like n^{-1/2} (log-log slope)."""
    d, b, R = 3, 2.0, 30
    ns = [250, 1000, 4000]
    means = []
    for i, n in enumerate(ns):
        X, y, ts = lad_data(R, n, d, seed=i, b=b)
        res = PrivateSGD(math.inf, 1e-5, radius=1.0).fit(ABS, X, y, np.random.default_rng(i))
        ex = excess_risk(res.theta, ts, b, d)
        means.append(ex.mean())
        assert ex.mean() <= 5 * 1.0 * 2.0 / math.sqrt(n)
    slope = np.polyfit(np.log(ns), np.log(means), 1)[0]
    assert slope < -0.5 + 0.15


def test_theorem6_utility_bound_with_noise():
    """E F(w_hat) - F* <= 5LD/sqrt(n) + 20 L D sqrt(d ln(1/delta))/(eps n) at the largest
    epsilon Theorem 6 allows (its internal eps = 1/(2 sqrt n))."""
    n, d, b, R = 2000, 3, 2.0, 20
    delta = 1e-5
    eps_bar = 8 * math.sqrt(math.log(3 / delta)) / (2 * math.sqrt(n))
    opt = PrivateSGD(eps_bar, delta)
    tp = opt.theorem_parameters(n)
    assert tp["eps"] == pytest.approx(1 / (2 * math.sqrt(n)))
    X, y, ts = lad_data(R, n, d, seed=7, b=b)
    res = opt.fit(ABS, X, y, np.random.default_rng(7))
    ex = excess_risk(res.theta, ts, b, d)
    bound = 5 * 2 / math.sqrt(n) + 20 * 2 * math.sqrt(d * math.log(1 / tp["delta"])) / (
        tp["eps"] * n)
    assert ex.mean() <= bound
    assert np.all(np.linalg.norm(res.theta, axis=1) <= 1.0 + 1e-12)  # stays in W


# ------------------------------------------------------------------------------ privacy
def _rdp_replace(event, delta):
    acc = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(event)
    return acc.get_epsilon(delta)


def test_theorem_calibration_follows_remark1_and_is_confirmed_by_accountant():
    n, delta, L = 1600, 1e-5, 2.0
    eps_bar = 0.3  # Theorem 6 allows eps_bar <= 8 sqrt(ln(3/delta)) / (2 sqrt(n)) = 0.355
    opt = PrivateSGD(eps_bar, delta, lipschitz=L)
    tp = opt.theorem_parameters(n)
    eps_in = eps_bar / (8 * math.sqrt(math.log(3 / delta)))
    assert tp["eps"] == pytest.approx(eps_in)
    assert opt.noise_std_for(n) == pytest.approx(
        8 * L * math.sqrt(math.log(3 / delta)) / (math.sqrt(n) * eps_in))
    pg = opt.privacy_for(n)
    assert pg.epsilon <= eps_bar and pg.delta <= delta  # Remark 1's arithmetic
    assert pg.certified  # the accountant confirms the claim at the claimed delta
    acc_eps = _rdp_replace(opt.ledger_for(n), pg.delta)
    assert acc_eps <= pg.epsilon
    # side by side: the accountant's figure for the same noise is smaller, and the
    # closed-form amplification of the exact Gaussian (Balle et al. 2018) smaller still
    acc_pg = opt.accountant_privacy_for(n)
    assert acc_pg.epsilon < 0.7 * pg.epsilon
    assert opt.amplified_epsilon(n) < acc_pg.epsilon
    ledger = opt.ledger_for(n)
    assert ledger.sample_size == n_fresh_steps(n) and ledger.source_dataset_size == n
    assert ledger.event.noise_multiplier == pytest.approx(opt.noise_std_for(n) / (2 * L))


def test_theorem_range_errors():
    n = 1600
    with pytest.raises(ValueError, match=r"1/\(2 sqrt\(n\)\)"):
        PrivateSGD(2.0, 1e-5).noise_std_for(n)
    with pytest.raises(ValueError, match="delta in"):
        PrivateSGD(0.1, 0.2).noise_std_for(n)
    with pytest.raises(ValueError, match="delta in"):
        PrivateSGD(0.1, 1e-5).noise_std_for(32)  # 6 e^{-n/16} > delta


@pytest.mark.heavy
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_accountant_calibration_certified_and_tight(eps):
    n, delta = 1000, 1e-5
    opt = PrivateSGD(eps, delta, calibration="accountant")
    recomputed = _rdp_replace(opt.ledger_for(n), delta)
    assert 0.98 * eps <= recomputed <= eps * (1 + 1e-9)
    assert opt.privacy_for(n).epsilon == pytest.approx(recomputed)
    assert opt.privacy_for(n).certified
    # more privacy needs more noise
    assert PrivateSGD(eps / 2, delta, calibration="accountant").noise_std_for(n) > \
        opt.noise_std_for(n)


def test_noise_std_override_reports_both_figures():
    n = 1600
    opt = PrivateSGD(1.0, 1e-5, noise_std=80.0)
    thm = opt.theorem_privacy_for(n)
    assert thm is not None and thm.certified
    assert opt.privacy_for(n).epsilon == pytest.approx(opt.accountant_epsilon(n))
    assert PrivateSGD(1.0, 1e-5, noise_std=0.1).theorem_privacy_for(n) is None


# ------------------------------------------------------------------------------ misc
def test_clipping_counted_and_other_losses():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3)) * 3.0  # |grad| = ||x|| up to ~10 > L = 1
    y = np.sign(rng.standard_normal(200))
    res = PrivateSGD(math.inf, 1e-5).fit(HingeLoss(), X, y, rng, n_reps=2)
    assert res.n_clipped.sum() > 0
    res = PrivateSGD(math.inf, 1e-5).fit(GeometricMedianLoss(), X * 0.1, None, rng, n_reps=2)
    # unit-norm subgradients: at most ulp-level rescaling, and the iterate stays in W
    assert res.theta.shape == (2, 3) and np.all(np.linalg.norm(res.theta, axis=1) <= 1 + 1e-12)


def test_same_seed_bit_identical():
    X, y, _ = lad_data(1, 300, 3, seed=0)
    make = lambda: PrivateSGD(1.0, 1e-5, calibration="accountant")  # noqa: E731
    a = make().fit(ABS, X[0], y[0], np.random.default_rng(5), n_reps=3)
    b = make().fit(ABS, X[0], y[0], np.random.default_rng(5), n_reps=3)
    c = make().fit(ABS, X[0], y[0], np.random.default_rng(6), n_reps=3)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.extra["tau"], b.extra["tau"])
    assert not np.array_equal(a.theta, c.theta)


def test_bad_input():
    with pytest.raises(ValueError, match="epsilon"):
        PrivateSGD(0.0, 1e-5)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        PrivateSGD(1.0, 0.0)
    with pytest.raises(ValueError, match="lipschitz"):
        PrivateSGD(1.0, 1e-5, lipschitz=0.0)
    with pytest.raises(ValueError, match="radius"):
        PrivateSGD(1.0, 1e-5, radius=-1.0)
    with pytest.raises(ValueError, match="calibration"):
        PrivateSGD(1.0, 1e-5, calibration="magic")  # "paper" is an alias of "theorem"
    with pytest.raises(RuntimeError, match="call fit"):
        _ = PrivateSGD(1.0, 1e-5).privacy
    with pytest.raises(ValueError, match="labels -1 or \\+1"):
        PrivateSGD(math.inf, 1e-5).fit(HingeLoss(), np.ones((10, 2)), np.zeros(10),
                                       np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least 2 rows"):
        PrivateSGD(math.inf, 1e-5).fit(ABS, np.ones((1, 2)), np.zeros(1),
                                       np.random.default_rng(0))

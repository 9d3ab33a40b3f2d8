"""Baselines of Sopa et al. 2025: DP-GD, private random search (and its GDP conversion), GP-UCB."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri

from dpbandits.bo import (
    GPUCB,
    CallableObjective,
    ExactGradientDPGD,
    HuberRegression,
    PrivateRandomSearch,
)
from dpbandits.bo.baselines import gdp_mu_to_pure_dp, pure_dp_to_gdp_mu
from dpbandits.privacy.accounting import epsilon_of, gdp_epsilon
from dpbandits.privacy.mechanisms import exponential_mechanism_probabilities


def _huber(seed=0, n=100):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return HuberRegression(X, X @ np.ones(4) + rng.normal(size=n))


# ---------------------------------------------------------------------------- DP-GD
def test_dpgd_non_private_converges_to_huber_minimizer():
    obj = _huber()
    ref = minimize(obj.value, np.zeros(4), jac=obj.gradient, method="BFGS", tol=1e-12).x
    res = ExactGradientDPGD(mu=math.inf, n_iters=3000, clip_bound=math.inf, step_size=1.0).fit(
        obj, np.random.default_rng(0))
    np.testing.assert_allclose(res.theta[0], ref, atol=1e-6)
    assert not res.privacy.is_private


def test_dpgd_noise_clipping_and_privacy():
    obj = _huber()
    alg = ExactGradientDPGD(mu=1.0, n_iters=100, clip_bound=1.0, step_size=0.5,
                            record_diagnostics=True)
    # the noise added is the noise the ledger accounts for: multiplier times sensitivity 2B/n
    sigma = alg.ledger.event.noise_multiplier * 2 * 1.0 / 100
    assert alg.noise_std(100) == pytest.approx(sigma, rel=1e-12)
    res = alg.fit(obj, np.random.default_rng(1), n_reps=2)
    w = res.extra["nonprivate_noise"].ravel()
    assert abs(w.std() / sigma - 1) < 5 / math.sqrt(2 * w.size)
    assert np.all(res.n_clipped > 0)  # B = 1 < sup grad norm sqrt(2) binds
    assert obj.gradient_bound > 1.0
    assert np.linalg.norm(res.theta - 1.0, axis=1).max() < 1.0
    assert res.privacy.notion == "GDP" and res.privacy.mu == 1.0
    assert epsilon_of(alg.ledger, 1e-5) == pytest.approx(res.privacy.epsilon, rel=0.02)


def test_dpgd_requires_gradients():
    obj = CallableObjective(lambda th: np.zeros(3), dim=2, n_individuals=3)
    with pytest.raises(TypeError, match="gradients"):
        ExactGradientDPGD(mu=1.0, n_iters=2, clip_bound=1.0).fit(obj, np.random.default_rng(0))


# ---------------------------------------------------------------- GDP conversion
@pytest.mark.parametrize("eps", [0.1, 0.8, 2.0, 5.0])
def test_pure_dp_implies_gdp_tradeoff_dominance(eps):
    mu = pure_dp_to_gdp_mu(eps)
    alpha = np.linspace(0, 1, 20001)
    f_eps = np.maximum.reduce([np.zeros_like(alpha), 1 - math.exp(eps) * alpha,
                               math.exp(-eps) * (1 - alpha)])

    def g(m):
        return ndtr(ndtri(1 - alpha) - m)

    assert np.all(g(mu) <= f_eps + 1e-12)  # eps-DP curve lies above G_mu
    assert np.any(g(0.98 * mu) > f_eps + 1e-6)  # and mu cannot be lowered
    assert gdp_mu_to_pure_dp(mu) == pytest.approx(eps, rel=1e-10)


# ------------------------------------------------------------------ random search
def _loss_matrix():
    rng = np.random.default_rng(2)
    return rng.uniform(0, 1, size=(6, 40)) + np.linspace(0, 0.3, 6)[:, None]


def test_random_search_exponential_selection_frequencies():
    L = _loss_matrix()
    mu = 1.0
    rs = PrivateRandomSearch(mu=mu, n_candidates=6, bounds=[[0, 1]], loss_bounds=(0, 2))
    eps = gdp_mu_to_pure_dp(mu)
    sens = 2.0 / 40
    p = exponential_mechanism_probabilities(-L.mean(axis=1), 2 * sens / eps)
    rng = np.random.default_rng(3)
    N = 4000
    counts = np.bincount([rs.select(L, rng)[0] for _ in range(N)], minlength=6)
    # each frequency within 5 binomial standard deviations
    assert np.all(np.abs(counts / N - p) <= 5 * np.sqrt(p * (1 - p) / N) + 1e-12)
    assert p.max() < 0.5  # the privacy noise matters at this n


def test_random_search_gaussian_selection_and_mu_inf():
    L = _loss_matrix()
    rs_inf = PrivateRandomSearch(mu=math.inf, n_candidates=6, bounds=[[0, 1]],
                                 loss_bounds=(0, 2))
    assert rs_inf.select(L, np.random.default_rng(0))[0] == int(np.argmin(L.mean(axis=1)))
    rs = PrivateRandomSearch(mu=1.0, n_candidates=6, bounds=[[0, 1]], loss_bounds=(0, 2),
                             selection="gaussian")
    picks = [rs.select(L, np.random.default_rng(s))[0] for s in range(300)]
    assert len(set(picks)) > 1
    assert rs.privacy.mu == 1.0 and rs.privacy.epsilon == pytest.approx(gdp_epsilon(1.0, 1e-5))


def test_random_search_gaussian_selection_is_the_shared_report_noisy_min_bit_for_bit():
    """``selection="gaussian"`` draws through ``gaussian_report_noisy_argmin``: the same pick
    as the inline ``argmin(scores + N(0, std²))`` it replaced, for every seed."""
    L = _loss_matrix()
    rs = PrivateRandomSearch(mu=1.0, n_candidates=6, bounds=[[0, 1]], loss_bounds=(0, 2),
                             selection="gaussian")
    scores = np.clip(L, 0, 2).mean(axis=1)
    std = 2.0 / L.shape[1] * math.sqrt(L.shape[0]) / 1.0
    for seed in range(50):
        want = int(np.argmin(scores + np.random.default_rng(seed).normal(0.0, std, 6)))
        assert rs.select(L, np.random.default_rng(seed))[0] == want


def test_random_search_clips_losses_and_counts():
    L = _loss_matrix()
    L[0, :3] = 50.0
    rs = PrivateRandomSearch(mu=1.0, n_candidates=6, bounds=[[0, 1]], loss_bounds=(0, 1.2))
    _, n_clip = rs.select(L, np.random.default_rng(0))
    assert n_clip == int(np.count_nonzero(L > 1.2))


def test_random_search_fit_and_determinism():
    obj = CallableObjective(lambda th: (th[0] - 0.3) ** 2 + np.zeros(50), dim=1,
                            n_individuals=50)
    rs = PrivateRandomSearch(mu=math.inf, n_candidates=200, bounds=[[0, 1]], loss_bounds=(0, 1))
    a = rs.fit(obj, np.random.default_rng(4), n_reps=2)
    b = rs.fit(obj, np.random.default_rng(4), n_reps=2)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert np.all(np.abs(a.theta - 0.3) < 0.02)


# ------------------------------------------------------------------------ GP-UCB
def test_gp_ucb_finds_minimum_of_smooth_function_and_is_non_private():
    target = np.array([0.3, -0.4])

    def f(th):
        return np.full(10, np.sum((th - target) ** 2))

    obj = CallableObjective(f, dim=2, n_individuals=10)
    res = GPUCB(n_evals=30, bounds=[[-2, 2], [-2, 2]], n_init=5, beta=2.0).fit(
        obj, np.random.default_rng(5))
    assert np.linalg.norm(res.theta[0] - target) < 0.15
    inc = res.extra["observed_mean_loss"][0]
    best = np.array([obj.value(h) for h in res.history[0]])
    np.testing.assert_allclose(best, np.minimum.accumulate(inc))
    assert not res.privacy.is_private


@pytest.mark.parametrize("cls, kwargs, match", [
    (ExactGradientDPGD, dict(mu=1.0, n_iters=0, clip_bound=1.0), "n_iters"),
    (ExactGradientDPGD, dict(mu=1.0, n_iters=3, clip_bound=math.inf), "clip_bound"),
    (PrivateRandomSearch, dict(mu=1.0, n_candidates=3, bounds=None, loss_bounds=(0, 1)),
     "bounds"),
    (PrivateRandomSearch, dict(mu=1.0, n_candidates=3, bounds=[[0, 1]], loss_bounds=(1, 0)),
     "loss_bounds"),
    (PrivateRandomSearch, dict(mu=1.0, n_candidates=3, bounds=[[0, 1]], loss_bounds=(0, 1),
                               selection="laplace"), "selection"),
    (GPUCB, dict(n_evals=3, bounds=[[0, 1]], n_init=5), "n_init"),
    (GPUCB, dict(n_evals=10, bounds=[[0, 1]], beta=-1.0), "beta"),
])
def test_baseline_bad_inputs(cls, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        cls(**kwargs)


def test_gp_ucb_acquisition_gradient_matches_finite_differences():
    from dpbandits.bo import RBF, ExactGP, Polynomial

    ucb = GPUCB(n_evals=10, bounds=[[0, 1]] * 3)
    for k in (RBF(0.7), Polynomial(2)):
        rng = np.random.default_rng(0)
        gp = ExactGP(k, noise_var=1e-3).fit(rng.normal(size=(8, 3)), rng.normal(size=8))
        x = rng.normal(size=3)
        _, g = ucb._lcb_and_grad(x, gp, 1.3)
        fd = np.array([(ucb._lcb_and_grad(x + 1e-6 * e, gp, 1.3)[0]
                        - ucb._lcb_and_grad(x - 1e-6 * e, gp, 1.3)[0]) / 2e-6
                       for e in np.eye(3)])
        np.testing.assert_allclose(g, fd, atol=1e-7)

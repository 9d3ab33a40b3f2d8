"""Objectives of dpbandits.bo and the hyper-parameter adapter."""

import math

import numpy as np
import pytest

from dpbandits.bo import (
    DPGIBO,
    RBF,
    CallableObjective,
    ExactGP,
    GPRegressionObjective,
    GradientDesigner,
    HuberRegression,
    HyperparameterObjective,
    HyperparameterSpace,
    NoisyObjective,
    NormalLocation,
    as_objective,
)
from dpbandits.bo.objectives import sample_gp_regression_data


def _fd_grad(obj, theta, h=1e-6):
    """Finite-difference per-individual gradients (n, d)."""
    d = theta.size
    return np.stack([(obj.per_individual_losses(theta + h * e)
                      - obj.per_individual_losses(theta - h * e)) / (2 * h)
                     for e in np.eye(d)], axis=1)


def test_normal_location_losses_gradients_and_mle():
    X = np.random.default_rng(0).normal(size=(20, 3))
    obj = NormalLocation(X)
    th = np.array([0.2, -0.1, 0.5])
    np.testing.assert_allclose(obj.per_individual_losses(th),
                               0.5 * np.sum((X - th) ** 2, axis=1))
    np.testing.assert_allclose(obj.per_individual_gradients(th), _fd_grad(obj, th), atol=1e-6)
    np.testing.assert_allclose(obj.gradient(obj.mle), 0.0, atol=1e-12)


def test_huber_losses_gradients_and_gradient_bound():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4)) * rng.choice([0.2, 1.0, 5.0], size=(200, 1))
    obj = HuberRegression(X, X @ np.ones(4) + 3 * rng.normal(size=200), c=1.0)
    th = rng.normal(size=4)
    np.testing.assert_allclose(obj.per_individual_gradients(th), _fd_grad(obj, th), atol=1e-5)
    norms = np.linalg.norm(obj.per_individual_gradients(th), axis=1)
    assert norms.max() <= obj.gradient_bound + 1e-12
    assert obj.gradient_bound <= math.sqrt(2) + 1e-12
    assert obj.gradient_bound > 1.2  # the "B = 1 is the true value" reading is off


def test_gp_regression_objective_matches_exact_gp():
    rng = np.random.default_rng(2)
    ell = np.array([0.4, 0.8, 2.0])
    X, y = sample_gp_regression_data(rng, 90, ell, noise_std=0.1)
    obj = GPRegressionObjective(X[:60], y[:60], X[60:], y[60:], noise_var=0.02, chunk=2)
    thetas = rng.normal(size=(5, 3)) * 0.5
    L = obj.losses(thetas)
    assert L.shape == (5, 30)
    for th, row in zip(thetas, L, strict=True):
        gp = ExactGP(RBF(np.exp(th), 1.0), noise_var=0.02, jitter=0.0).fit(X[:60], y[:60])
        np.testing.assert_allclose(row, (y[60:] - gp.mean(X[60:])) ** 2, rtol=1e-8, atol=1e-12)
    tuned = GPRegressionObjective(X[:60], y[:60], X[60:], y[60:], tune_noise=True)
    np.testing.assert_allclose(tuned.losses(np.append(thetas[0], math.log(0.02))), L[:1],
                               rtol=1e-8)
    assert tuned.dim == 4


def test_noisy_objective_adds_iid_noise_and_reports_clean_values():
    obj = NormalLocation(np.zeros((400, 2)))
    noisy = NoisyObjective(obj, 0.3, np.random.default_rng(3))
    th = np.ones((5, 2))
    diff = (noisy.losses(th) - obj.losses(th)).ravel()
    assert abs(diff.std() / 0.3 - 1) < 5 / math.sqrt(2 * diff.size)
    assert noisy.value(th[0]) == obj.value(th[0])
    assert noisy.has_gradients


def test_callable_objective_and_as_objective():
    def f(th):
        return np.arange(4.0) * th.sum()

    obj = as_objective(f, dim=2, n_individuals=4)
    np.testing.assert_allclose(obj.losses([[1.0, 2.0], [0.0, 1.0]]),
                               [np.arange(4.0) * 3, np.arange(4.0)])
    assert not obj.has_gradients

    class Thing:
        dim, n_individuals = 2, 4

        def per_individual_losses(self, th):
            return f(th)

    assert isinstance(as_objective(Thing()), CallableObjective)
    with pytest.raises(ValueError, match="dim and n_individuals"):
        as_objective(f)
    with pytest.raises(TypeError, match="objective must be"):
        as_objective(3)
    bad = CallableObjective(lambda th: np.zeros(3), dim=2, n_individuals=4)
    with pytest.raises(ValueError, match="shape"):
        bad.losses([0.0, 0.0])
    nan = CallableObjective(lambda th: np.full(4, np.nan), dim=2, n_individuals=4)
    with pytest.raises(ValueError, match="non-finite"):
        nan.losses([0.0, 0.0])
    with pytest.raises(ValueError, match="thetas must have shape"):
        obj.losses(np.zeros((2, 3)))


def test_hyperparameter_space_roundtrip_and_errors():
    sp = HyperparameterSpace(["radius", "h"], low=[0.1, 1.0], high=[10.0, 3.0], log=[True, False])
    p = sp.to_params([0.5, 0.25])
    assert p["radius"] == pytest.approx(1.0) and p["h"] == pytest.approx(1.5)
    np.testing.assert_allclose(sp.from_params(p), [0.5, 0.25])
    np.testing.assert_array_equal(sp.bounds, [[0, 1], [0, 1]])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sp.to_params([1.2, 0.0])
    with pytest.raises(ValueError, match="low > 0"):
        HyperparameterSpace(["a"], [0.0], [1.0], log=True)
    with pytest.raises(ValueError, match="distinct"):
        HyperparameterSpace(["a", "a"], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="low must be < high"):
        HyperparameterSpace(["a"], [1.0], [1.0])
    with pytest.raises(ValueError, match="missing"):
        sp.from_params({"radius": 1.0})


def test_hyperparameter_objective_with_dp_gibo():
    """A simulated 'held-out users' loss (n users, each preferring a nearby optimum) tuned
    by DP-GIBO through the adapter; without privacy it reaches the population optimum."""
    rng = np.random.default_rng(4)
    prefs = rng.normal([1.0, 2.0], 0.1, size=(40, 2))  # user i's best (radius, h)
    sp = HyperparameterSpace(["radius", "h"], low=[0.1, 1.0], high=[10.0, 3.0],
                             log=[True, False])

    def per_user_loss(params):
        v = np.array([math.log(params["radius"]), params["h"]])
        return np.sum((v - np.c_[np.log(prefs[:, 0]), prefs[:, 1]]) ** 2, axis=1)

    obj = HyperparameterObjective(per_user_loss, sp, n_individuals=40)
    alg = DPGIBO(mu=math.inf, clip_bound=math.inf, n_iters=15, kernel=RBF(0.3), batch_size=3,
                 step_size=0.02, bounds=sp.bounds, theta0=np.array([0.2, 0.2]),
                 designer=GradientDesigner(n_candidates=32, n_restarts=1))
    res = alg.fit(obj, np.random.default_rng(5))
    best = sp.to_params(res.theta[0])
    assert obj.value(res.theta[0]) < 0.2 * obj.value(res.history[0, 0])
    assert best["h"] == pytest.approx(2.0, abs=0.3)
    with pytest.raises(TypeError, match="space"):
        HyperparameterObjective(per_user_loss, {"radius": (0, 1)}, 40)

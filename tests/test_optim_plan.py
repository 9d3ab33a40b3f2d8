"""Noise plans of the batch optimizers and the Bayesian-optimization methods
(:mod:`dpbandits.privacy.plan`): the refactor kept every number bit for bit (fixtures recorded
on the code before it, ``tests/fixtures/optim_plan_baseline.py``), the plan's views cannot be
assigned, a scaled plan changes the noise actually added and says it is not certified, and
``calibration=`` takes the one vocabulary."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpbandits.audits._scaffold import shrink_plan
from dpbandits.bo import (
    DPGIBO,
    CallableObjective,
    ExactGradientDPGD,
    HuberRegression,
    PrivateRandomSearch,
)
from dpbandits.bo import baselines as bo_baselines
from dpbandits.losses import AbsoluteLoss, LogisticLoss, SquaredLoss
from dpbandits.optim import (
    DPGD,
    DPSVRG,
    DPAccMD,
    DPSVRGPlusPlus,
    LocalMD,
    NoisySFW,
    NoisySGD,
    PrivateFTRL,
    PrivateSGD,
)
from dpbandits.optim.batch import noisy_sfw
from dpbandits.optim.batch.noisy_sgd import noisy_sgd_noise_multiplier
from dpbandits.privacy.plan import NoisePlan

_SPEC = importlib.util.spec_from_file_location(
    "optim_plan_baseline", Path(__file__).parent / "fixtures" / "optim_plan_baseline.py")
baseline = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(baseline)
REFERENCE = json.loads(baseline.PATH.read_text())


# ------------------------------------------------------------ (a), (b): the numbers of main
def _sizes(name):
    _, _, _, first, more = baseline.CASES[name]
    return [first, *more]


def _size_record(opt, n, d):
    g = opt.privacy_for(n, d)
    return {"epsilon": baseline.hexf(g.epsilon), "delta": baseline.hexf(g.delta),
            "certified": g.certified, "basis": g.basis,
            "ledger": repr(opt.ledger_for(n, d)), **baseline.noise_numbers(opt, n, d)}


@pytest.mark.parametrize("name", list(baseline.CASES))
def test_plan_and_fit_are_those_of_main(name):
    """Scales (every public noise number), guarantee and ledger at the first recorded size,
    and a seeded fit, bit for bit as before the refactor; the plan is what they come from."""
    cls, kwargs, loss, (n, d), _ = baseline.CASES[name]
    ref = REFERENCE["optim"][name]
    opt = cls(**kwargs)
    assert _size_record(opt, n, d) == ref["sizes"][f"{n},{d}"]
    plan = opt.plan_for(n, d)
    assert opt.privacy_for(n, d) is plan.guarantee and opt.ledger_for(n, d) is plan.ledger
    assert opt.plan_for(n, d) is plan  # computed once per size
    X, y = baseline.data(n, d, logistic=loss == "logistic")
    res = cls(**kwargs).fit(baseline.LOSSES[loss](), X, y, np.random.default_rng(7), n_reps=2)
    assert baseline.digest(res.theta) == ref["theta"]
    assert baseline.digest(res.history) == ref["history"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [k for k in baseline.CASES if len(_sizes(k)) > 1])
def test_plans_of_other_sizes_are_those_of_main(name):
    cls, kwargs, *_ = baseline.CASES[name]
    opt = cls(**kwargs)
    for n, d in _sizes(name)[1:]:
        assert _size_record(opt, n, d) == REFERENCE["optim"][name]["sizes"][f"{n},{d}"]


@pytest.mark.parametrize("name", list(baseline.BO_CASES) + list(baseline.RS_CASES))
def test_bo_plan_and_fit_are_those_of_main(name):
    ref = REFERENCE["bo"][name]
    obj = baseline.huber()
    if name in baseline.BO_CASES:
        cls, kwargs = baseline.BO_CASES[name]
        alg = cls(**kwargs)
        res = cls(**kwargs).fit(obj, np.random.default_rng(5), n_reps=2)
        assert {str(n): baseline.hexf(alg.noise_std(n)) for n in (7, 20, 333)} == \
            ref["noise_std"]
        assert baseline.digest(res.history) == ref["history"]
    else:
        alg = PrivateRandomSearch(**baseline.RS_CASES[name])
        res = PrivateRandomSearch(**baseline.RS_CASES[name]).fit(
            obj, np.random.default_rng(5), n_reps=3)
    g = alg.privacy
    assert (baseline.hexf(g.epsilon), baseline.hexf(g.mu), g.basis, repr(alg.ledger)) == (
        ref["epsilon"], ref["mu"], ref["basis"], ref["ledger"])
    assert g is alg.plan.guarantee and alg.ledger is alg.plan.ledger
    assert baseline.digest(res.theta) == ref["theta"]


# ------------------------------------------------------------ (c) the views are read-only
VIEWS = [
    (NoisySGD(epsilon=1.0, delta=1e-3), ("sigma", "noise_multiplier")),
    (NoisySFW(epsilon=1.0, delta=1e-3), ("schedule",)),
    (LocalMD(epsilon=1.0, delta=1e-3), ("phases",)),
    (DPSVRG(1.0, 1e-3, inner_steps=5), ("noise_std_for",)),
    (DPGD(1.0, 1e-3), ("noise_std_for",)),
    (DPAccMD(1.0, 1e-3), ("noise_std_for",)),
    (PrivateSGD(1.0, 1e-3), ("noise_std_for",)),
    (PrivateFTRL(1.0, 1e-3), ("noise_std_for",)),
    (DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1), ("noise_std",)),
    (ExactGradientDPGD(mu=1.0, n_iters=2, clip_bound=1.0), ("noise_std",)),
]


@pytest.mark.parametrize("component, names", VIEWS, ids=lambda v: type(v).__name__)
def test_assigning_a_plan_view_raises(component, names):
    for name in names:
        with pytest.raises(AttributeError, match="noise plan"):
            setattr(component, name, lambda *a: 0.0)
    with pytest.raises(AttributeError):
        component.plan = component  # a property without setter
    assert callable(getattr(component, names[0]))  # still the method


# ------------------------------------------------ (d) a scaled plan changes the noise added
def _zeros(n, d):
    return np.zeros((n, d)), np.zeros(n)


#: (optimizer, loss, n, d): zero gradients everywhere and inactive constraints, so the output
#: is a linear function of the noise
LINEAR = {
    "noisy-sgd-numpy": (NoisySGD(p=2.0, epsilon=1.0, delta=1e-3, lr_scale=1e-3,
                                 backend="numpy"), SquaredLoss(), 8, 3),
    "noisy-sgd-numba": (NoisySGD(p=2.0, epsilon=1.0, delta=1e-3, lr_scale=1e-3,
                                 backend="numba"), SquaredLoss(), 8, 3),
    "local-md": (LocalMD(p=2.0, epsilon=1.0, delta=1e-3, noise_constant=1e-3), SquaredLoss(),
                 64, 2),
    "dp-svrg": (DPSVRG(1.0, 1e-3, n_epochs=2, inner_steps=5, step_size=0.1), LogisticLoss(),
                20, 3),
    "dp-svrg++": (DPSVRGPlusPlus(1.0, 1e-3, n_epochs=2, inner_steps=3, step_size=0.1),
                  LogisticLoss(), 20, 3),
    "private-sgd": (PrivateSGD(1.0, 1e-3, radius=1e6, step_size=0.01,
                               calibration="accountant"), AbsoluteLoss(), 20, 3),
    "dp-gd": (DPGD(1.0, 1e-3, n_iters=10, step_size=0.1), LogisticLoss(), 20, 3),
    "dp-accmd": (DPAccMD(1.0, 1e-3, n_iters=10, geometry="l2", radius=1e6, smoothness=1.0),
                 LogisticLoss(), 20, 3),
    "private-ftrl": (PrivateFTRL(1.0, 1e-3, radius=1e6, step_size=0.01), AbsoluteLoss(), 20,
                     3),
}


@pytest.mark.parametrize("name", list(LINEAR))
def test_a_scaled_plan_scales_the_noise_added(name):
    opt, loss, n, d = LINEAR[name]
    X, y = _zeros(n, d)
    own = opt.fit(loss, X, y, np.random.default_rng(3), n_reps=4)
    broken = shrink_plan(opt, 10.0)
    res = broken.fit(loss, X, y, np.random.default_rng(3), n_reps=4)
    assert np.all(np.abs(own.theta) > 0)  # the noise moved every coordinate
    np.testing.assert_allclose(res.theta * 10.0, own.theta, rtol=1e-9, atol=0)
    assert own.privacy.certified == (name != "private-ftrl")  # its claim is never certified
    assert not res.privacy.certified
    assert "not certified" in res.privacy.caveat and broken.ledger is None
    assert broken.plan.altered and not opt.plan.altered  # the original is unchanged
    again = opt.fit(loss, X, y, np.random.default_rng(3), n_reps=4)
    np.testing.assert_array_equal(again.theta, own.theta)


def test_a_scaled_plan_of_private_ftrl_stays_not_certified():
    """Its claim is never certified; the changed plan keeps that and says why."""
    opt = PrivateFTRL(1.0, 1e-3)
    changed = opt.with_plan(lambda plan: plan.scaled(4.0)).plan_for(50)
    assert not changed.guarantee.certified and "divided by 4" in changed.guarantee.caveat
    assert changed.scales["sigma"] == opt.plan_for(50).scales["sigma"] / 4.0


def test_a_scaled_plan_scales_the_noise_of_noisy_sfw(monkeypatch):
    """NoisySFW's iterates are LMO vertices (scale-free), so the noise is measured where it is
    drawn: every sampler call gets the plan's sigma."""
    calls = []
    real = noisy_sfw.generalized_gaussian_noise

    def spy(rng, sigma, q, d, size):
        calls.append(sigma)
        return real(rng, sigma, q, d, size)

    monkeypatch.setattr(noisy_sfw, "generalized_gaussian_noise", spy)
    opt = NoisySFW(p=1.5, epsilon=1.0, delta=1e-3)
    X, y = _zeros(64, 3)
    own = opt.fit("squared", X, y, np.random.default_rng(0))
    own_sigmas, calls[:] = list(calls), []
    res = shrink_plan(opt, 10.0).fit("squared", X, y, np.random.default_rng(0))
    assert len(own_sigmas) == 2 and all(s > 0 for s in own_sigmas)
    np.testing.assert_allclose(np.array(calls) * 10.0, own_sigmas, rtol=1e-12)
    assert own.privacy.certified and not res.privacy.certified


def test_a_scaled_plan_scales_the_noise_of_the_bo_methods():
    zero = CallableObjective(lambda th: np.zeros(4), dim=2, n_individuals=4)
    flat = HuberRegression(np.zeros((4, 2)), np.zeros(4))
    for alg, obj in ((DPGIBO(mu=1.0, n_iters=3, clip_bound=1.0, batch_size=1, step_size=0.1),
                      zero),
                     (ExactGradientDPGD(mu=1.0, n_iters=3, clip_bound=1.0), flat)):
        own = alg.fit(obj, np.random.default_rng(2), n_reps=2)
        broken = shrink_plan(alg, 10.0)
        res = broken.fit(obj, np.random.default_rng(2), n_reps=2)
        assert broken.noise_std(4) == pytest.approx(alg.noise_std(4) / 10.0, rel=1e-15)
        assert np.all(np.abs(own.theta) > 0)
        np.testing.assert_allclose(res.theta * 10.0, own.theta, rtol=1e-9)
        assert own.privacy.certified and not res.privacy.certified
        assert broken.ledger is None and alg.ledger is not None


@pytest.mark.parametrize("selection", ["exponential", "gaussian"])
def test_a_scaled_plan_scales_the_noise_of_random_search(monkeypatch, selection):
    seen = []
    for name in ("exponential_mechanism", "gaussian_report_noisy_argmin"):
        real = getattr(bo_baselines, name)

        def spy(rng, scores, scale, *rest, _real=real):  # the temperature or the noise std
            seen.append(scale)
            return _real(rng, scores, scale, *rest)

        monkeypatch.setattr(bo_baselines, name, spy)
    alg = PrivateRandomSearch(mu=1.0, n_candidates=5, bounds=[[0, 1]], loss_bounds=[0, 1],
                              selection=selection)
    losses = np.random.default_rng(0).random((5, 8))
    alg.select(losses, np.random.default_rng(1))
    broken = shrink_plan(alg, 10.0)
    broken.select(losses, np.random.default_rng(1))
    assert seen[1] == pytest.approx(seen[0] / 10.0, rel=1e-15)
    assert alg.privacy.certified and not broken.privacy.certified


def test_with_plan_keeps_the_scale_names_and_needs_a_function():
    opt = DPGD(1.0, 1e-3)
    other = NoisePlan("theorem", {"std": 1.0})
    with pytest.raises(ValueError, match=r"scales \['sigma'\]"):
        opt.with_plan(lambda plan: other).plan_for(10)
    with pytest.raises(TypeError, match="function NoisePlan -> NoisePlan"):
        opt.with_plan(opt.plan_for(10))
    with pytest.raises(RuntimeError, match="call fit"):
        _ = opt.plan
    opt.fit(LogisticLoss(), *_zeros(10, 2), np.random.default_rng(0))
    assert opt.plan is opt.plan_for(10) and opt.privacy is opt.plan.guarantee


def test_a_changed_bo_parameter_recalibrates_the_plan():
    alg = DPGIBO(mu=1.0, n_iters=4, clip_bound=1.0, batch_size=1)
    first = alg.plan
    assert alg.plan is first
    alg.mu = 2.0
    assert alg.plan.scales["multiplier"] == pytest.approx(1.0)  # sqrt(4) / 2
    assert alg.privacy.mu == 2.0


# ------------------------------------------------------------ (e) the calibration vocabulary
UNKNOWN = [
    lambda c: NoisySGD(delta=1e-3, calibration=c),
    lambda c: noisy_sgd_noise_multiplier(10, 10, epsilon=1.0, delta=1e-3, calibration=c),
    lambda c: PrivateSGD(1.0, 1e-3, calibration=c),
    lambda c: DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1, calibration=c),
    lambda c: ExactGradientDPGD(mu=1.0, n_iters=2, clip_bound=1.0, calibration=c),
    lambda c: PrivateRandomSearch(mu=1.0, n_candidates=2, bounds=[[0, 1]],
                                  loss_bounds=[0, 1], calibration=c),
]


@pytest.mark.parametrize("make", UNKNOWN)
def test_an_unknown_calibration_names_parameter_value_and_choices(make):
    with pytest.raises(ValueError, match=r"calibration .*must be one of \[.*'theorem'.*\].*"
                                         r"got 'magic'"):
        make("magic")


@pytest.mark.heavy
def test_aliases_are_accepted():
    n = 12
    theorem = NoisySGD(epsilon=1.0, delta=1e-3).plan_for(n)
    paper = NoisySGD(epsilon=1.0, delta=1e-3, calibration="paper").plan_for(n)
    assert paper.calibration == theorem.calibration == "theorem"
    assert paper.scales == theorem.scales
    assert noisy_sgd_noise_multiplier(n, 20, epsilon=1.0, delta=1e-3, calibration="pld") == \
        noisy_sgd_noise_multiplier(n, 20, epsilon=1.0, delta=1e-3, calibration="accountant")
    sgd = PrivateSGD(0.3, 1e-3, calibration="zcdp").plan_for(400)
    assert sgd.calibration == "theorem"
    assert sgd.scales == PrivateSGD(0.3, 1e-3).plan_for(400).scales
    gibo = DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1, calibration="paper")
    assert gibo.plan.calibration == "theorem" and math.isfinite(gibo.privacy.epsilon)

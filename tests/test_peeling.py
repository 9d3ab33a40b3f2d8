"""Private top-s peeling (dpbandits.privacy.peeling): certified scale, non-private limit,
distribution, the privacy of one noisy-max step, fresh randomness, accounting and an audit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy.accounting import epsilon_of
from dpbandits.privacy.audit import AuditSpec, audit
from dpbandits.privacy.mechanisms import report_noisy_argmax_probabilities
from dpbandits.privacy.peeling import (
    hard_threshold,
    peel,
    peeling_epsilon,
    peeling_event,
    peeling_noise_multiplier,
    peeling_scale_theorem,
)


# ----------------------------------------------------------------------------- scale
@pytest.mark.parametrize("eps,delta,s,lam", [(1.0, 1e-5, 10, 0.3), (0.5, 0.01, 3, 2.0),
                                             (2.0, 1e-3, 1, 1e-4)])
def test_theorem_scale_is_certified_and_proportional_to_the_sensitivity(eps, delta, s, lam):
    """Lemma 3.3 of Cai, Wang & Zhang (2021): the closed-form scale makes one call
    (eps, delta)-DP, which the PLD accountant confirms; the form is 1.5x-3x conservative
    here, so the certified epsilon also stays above eps/4 (over-noising fails too)."""
    scale = peeling_scale_theorem(eps, delta, s, lam)
    assert peeling_scale_theorem(eps, delta, s, 2 * lam) == pytest.approx(2 * scale, rel=1e-15)
    assert eps / 4 < peeling_epsilon(scale / lam, s, delta) <= eps


@pytest.mark.parametrize("count", [1, 2, 5])
def test_theorem_multiplier_splits_the_budget_over_calls(count):
    eps, delta, s = 1.0, 1e-5, 10
    c = peeling_noise_multiplier(eps, delta, s, count=count, calibration="theorem")
    # basic composition: every call gets (eps/count, delta/count) of the theorem
    assert c == peeling_scale_theorem(eps / count, delta / count, s, 1.0)
    # the per-call claim is what the PLD accountant certifies, and so is the whole
    assert peeling_epsilon(c, s, delta / count) <= eps / count
    assert peeling_epsilon(c, s, delta, count) <= eps


@pytest.mark.parametrize("count", [1, 3])
def test_accountant_multiplier_is_certified_and_nearly_tight(count):
    eps, delta, s = 1.0, 1e-5, 10
    c = peeling_noise_multiplier(eps, delta, s, count=count)
    assert peeling_epsilon(c, s, delta, count) <= eps
    assert peeling_epsilon(0.99 * c, s, delta, count) > eps  # within 1% of the optimum
    theorem = peeling_noise_multiplier(eps, delta, s, count=count, calibration="theorem")
    assert c < theorem


def test_theorem_closed_form_refused_where_it_does_not_certify():
    # advanced composition needs small per-step epsilons: at eps=10, delta=0.1 the closed
    # form gives epsilon ~ 11.7 by the PLD accountant
    with pytest.raises(ValueError, match="does not certify"):
        peeling_noise_multiplier(10.0, 0.1, 10, calibration="theorem")
    assert peeling_noise_multiplier(10.0, 0.1, 10) > 0  # the accountant still calibrates


def test_event_is_s_noisy_max_plus_s_laplace_per_call():
    c, s, count = 8.0, 3, 2
    # delta = 0: pure composition, 2/c per selection step and 1/c per released value
    assert epsilon_of(peeling_event(c, s, count), 0.0) == pytest.approx(
        count * s * 3.0 / c, rel=1e-3)
    assert peeling_noise_multiplier(math.inf, 0.1, 5) == 0.0


# ----------------------------------------------------------------------------- behaviour
def test_non_private_limit_is_hard_thresholding():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((50, 40))
    out = peel(rng, v, 7, 0.0)
    np.testing.assert_array_equal(out.values, hard_threshold(v, 7))
    top = np.argsort(-np.abs(v), axis=1)[:, :7]
    np.testing.assert_array_equal(out.support, top)  # selected in decreasing order of |v|


def test_hard_threshold_ties_go_to_lowest_index_like_peel():
    v = np.array([[1.0, -2.0, 2.0, 0.5, 2.0]])
    np.testing.assert_array_equal(hard_threshold(v, 2), [[0.0, -2.0, 2.0, 0.0, 0.0]])
    out = peel(np.random.default_rng(1), v, 2, 0.0)
    np.testing.assert_array_equal(out.support, [[1, 2]])


def test_huge_gap_selects_the_support_and_value_noise_is_laplace():
    rng = np.random.default_rng(2)
    R, D, s, b = 4000, 30, 4, 1.0
    v = np.zeros((R, D))
    support = np.array([3, 11, 17, 29])
    v[:, support] = 100.0
    out = peel(rng, v, s, b)
    np.testing.assert_array_equal(np.sort(out.support, axis=1), np.tile(support, (R, 1)))
    noise = (out.values[:, support] - 100.0).ravel()
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > 1e-3
    # E|Laplace(b)| = b, sd b: tolerance 5 standard errors
    assert abs(np.abs(noise).mean() - b) < 5 * b / math.sqrt(noise.size)
    off = np.ones((R, D), dtype=bool)
    off[:, support] = False
    assert np.all(out.values[off] == 0.0)


def test_selection_is_without_replacement_with_exactly_s_coordinates():
    rng = np.random.default_rng(3)
    v = rng.standard_normal((500, 12))
    out = peel(rng, v, 12, 5.0)  # s = D: every coordinate once, in a random order
    np.testing.assert_array_equal(np.sort(out.support, axis=1), np.tile(np.arange(12),
                                                                        (500, 1)))
    out = peel(rng, v, 5, np.linspace(0.1, 3.0, 500))  # per-replication scales
    assert all(len(set(row)) == 5 for row in out.support)
    assert np.all((out.values != 0).sum(axis=1) == 5)
    np.testing.assert_array_equal(out.scale, np.linspace(0.1, 3.0, 500))


def test_one_noisy_max_step_ratio_within_exp_two_lambda_over_b():
    """The first peeling step is report-noisy-max on |v|: its selection probabilities are
    checked exactly (numerical integration) and by Monte Carlo of ``peel`` itself."""
    lam, b = 0.5, 1.0
    v = np.array([2.0, 0.0, 0.3])
    v2 = v + np.array([-lam, lam, lam])  # ||v - v2||_inf = lam, non-monotone in |v|
    p = report_noisy_argmax_probabilities(np.abs(v), b)
    p2 = report_noisy_argmax_probabilities(np.abs(v2), b)
    ratio = np.maximum(p / p2, p2 / p)
    bound = math.exp(2 * lam / b)
    assert ratio.max() <= bound
    assert ratio.max() > math.exp(lam / b)  # the factor 2 of non-monotone scores is needed
    n = 200_000
    rng = np.random.default_rng(4)
    for vec, probs in ((v, p), (v2, p2)):
        first = peel(rng, np.tile(vec, (n, 1)), 1, b).support[:, 0]
        freq = np.bincount(first, minlength=3) / n
        se = np.sqrt(probs * (1 - probs) / n)
        assert np.all(np.abs(freq - probs) < 5 * se)
    # empirical ratios within the bound up to Monte Carlo error (5 standard errors)
    f = np.bincount(peel(rng, np.tile(v, (n, 1)), 1, b).support[:, 0], minlength=3) / n
    f2 = np.bincount(peel(rng, np.tile(v2, (n, 1)), 1, b).support[:, 0], minlength=3) / n
    rel_se = np.sqrt((1 - f) / (n * f) + (1 - f2) / (n * f2))
    emp = np.maximum(f / f2, f2 / f)
    assert np.all(emp <= bound * np.exp(5 * rel_se))


def test_consecutive_calls_never_replay_noise():
    """Regression for the authors' PRNG-key chaining (FLIPHAT note 5c): with v = 0 the
    selection order is pure noise; consecutive calls must not be shifted copies."""
    rng = np.random.default_rng(5)
    v = np.zeros((200, 1000))
    a = peel(rng, v, 5, 1.0).support
    b = peel(rng, v, 5, 1.0).support
    assert not np.any(np.all(a[:, 1:] == b[:, :-1], axis=1))
    assert not np.any(np.all(a == b, axis=1))
    # and the selections are uniform over coordinates (chi-square, 20 bins)
    sel = peel(rng, np.zeros((4000, 20)), 1, 1.0).support[:, 0]
    assert stats.chisquare(np.bincount(sel, minlength=20)).pvalue > 1e-3


def test_draw_count_does_not_depend_on_the_data():
    r1, r2 = np.random.default_rng(6), np.random.default_rng(6)
    peel(r1, np.zeros((3, 8)), 3, 0.0)
    peel(r2, np.random.default_rng(9).standard_normal((3, 8)) * 50, 3, 2.5)
    assert r1.random() == r2.random()


@pytest.mark.parametrize("kwargs,match", [
    ({"s": 0}, "sparsity"), ({"s": 9}, "sparsity"), ({"scale": -1.0}, "scale"),
    ({"scale": np.ones(4)}, "scale"), ({"v": np.full((3, 8), np.nan)}, "finite"),
    ({"v": np.zeros(8)}, "dimension"), ({"rng": 3}, "Generator"),
    ({"scale": np.array([1.0, -1.0, 1.0])}, "scale"),
])
def test_bad_inputs_raise(kwargs, match):
    args = {"rng": np.random.default_rng(0), "v": np.zeros((3, 8)), "s": 2, "scale": 1.0}
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        peel(args["rng"], args["v"], args["s"], args["scale"])


@pytest.mark.parametrize("call,match", [
    (lambda: peeling_scale_theorem(0.0, 0.1, 2, 1.0), "epsilon"),
    (lambda: peeling_scale_theorem(1.0, 0.0, 2, 1.0), "delta"),
    (lambda: peeling_scale_theorem(1.0, 0.1, 2, -1.0), "sensitivity"),
    (lambda: peeling_noise_multiplier(1.0, 1.5, 2), "delta"),
    (lambda: peeling_noise_multiplier(1.0, 0.0, 2), "delta"),
    (lambda: peeling_noise_multiplier(1.0, 0.1, 2, calibration="magic"), "calibration"),
    (lambda: peeling_noise_multiplier(1.0, 0.1, 2, count=0), "count"),
    (lambda: peeling_event(0.0, 2), "noise_multiplier"),
])
def test_bad_calibration_inputs_raise(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ------------------------------------------------------------------ calibration vocabulary
def test_calibration_goes_through_the_vocabulary_and_its_aliases():
    """``calibration=`` of peeling_noise_multiplier is dpbandits.privacy.plan's vocabulary
    (check_calibration): the aliases give the very same multiplier as the names they stand
    for, and another value (including ``"authors"``, which the peeling mechanism does not
    have) names the parameter, the value and the allowed values."""
    args = (1.0, 1e-3, 3)
    theorem = peeling_noise_multiplier(*args, count=2, calibration="theorem")
    accountant = peeling_noise_multiplier(*args, count=2, calibration="accountant")
    assert theorem != accountant
    for alias in ("paper", "zcdp"):
        assert peeling_noise_multiplier(*args, count=2, calibration=alias) == theorem
    assert peeling_noise_multiplier(*args, count=2, calibration="pld") == accountant
    for bad in ("magic", "authors", "Theorem", None, 1):
        with pytest.raises(ValueError) as err:
            peeling_noise_multiplier(*args, calibration=bad)
        text = str(err.value)
        assert text.startswith("calibration of peeling_noise_multiplier must be one of")
        assert "['theorem', 'accountant']" in text and repr(bad) in text


# ----------------------------------------------------------------------------- audit
def _peel_audit(scale_factor: float, runs: int):
    """Canary: two coordinates, the first far ahead (selected in both worlds); the
    neighbour moves every coordinate by lambda. Statistic: the released first value."""
    s, lam, c, delta = 1, 1.0, 3.0, 1e-6
    claim = peeling_epsilon(c, s, delta)
    v0 = np.array([40.0, 0.0])
    v1 = v0 + lam

    def sampler(world, n, rng):
        v = np.tile(v1 if world else v0, (n, 1))
        return peel(rng, v, s, scale_factor * c * lam).values[:, 0]

    return audit(sampler, AuditSpec(epsilon=claim, delta=delta, runs=runs, seed=11,
                                    confidence=0.999, component="peeling",
                                    canary="l_inf shift of every coordinate by lambda",
                                    statistic="released value of the leading coordinate"))


def test_peeling_audit_consistent_and_detects_undercalibration():
    ok = _peel_audit(1.0, 60_000)
    assert ok.verdict == "consistent", ok
    broken = _peel_audit(0.25, 60_000)  # noise 4x below the sensitivity it claims
    assert broken.verdict == "violation", broken

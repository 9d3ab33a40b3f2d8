"""Tests that kill the surviving mutants of the privacy primitives (issue 34 item 5;
docs/mutation-report.md, sections on ``privacy/mechanisms.py`` and ``privacy/plan.py``).

Each asserts a contract: the spread of drawn noise against its declared scale (chi-square at a
two-sided p = 1e-9 from the exact chi-square quantiles of ``N`` draws, fixed seed), a
calibrated scale against its defining formula or the exact Gaussian-mechanism delta, and a
plan's certificate against the floating-point soundness of its scales."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy import mechanisms as mech
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.plan import NoisePlan

P_VALUE = 1e-9
N = 20_000


def _assert_chi_square(z: np.ndarray) -> None:
    """``z`` are noise / declared sd: ``sum z^2`` is chi-square(N) (exact quantiles)."""
    n = z.size
    stat = float(np.sum(z ** 2))
    lo, hi = stats.chi2.ppf(P_VALUE / 2, n), stats.chi2.isf(P_VALUE / 2, n)
    assert lo <= stat <= hi, f"sum z^2 = {stat:.1f} over {n}, outside [{lo:.1f}, {hi:.1f}]"


@pytest.mark.parametrize("sigma", [2.0, 0.37])
def test_gaussian_noise_into_a_buffer_has_the_declared_spread(sigma):
    """Kills ``s != 1.0`` -> ``s != 2.0`` (sigma = 2 left unscaled: sd 1 instead of 2)."""
    out = np.empty(N)
    mech.gaussian_noise(np.random.default_rng(11), sigma, N, out=out)
    _assert_chi_square(out / sigma)


def test_classical_gaussian_sigma_is_the_dwork_roth_formula():
    """Dwork & Roth 2014, Theorem A.1: sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon
    (kills the constants 2 -> 3 and 1.25 -> 2.25)."""
    for eps, delta, sens in [(0.5, 1e-5, 1.0), (0.9, 1e-3, 2.5)]:
        expected = math.sqrt(2.0 * math.log(1.25 / delta)) * sens / eps
        assert mech.gaussian_sigma_classical(eps, delta, sens) == pytest.approx(expected,
                                                                                rel=1e-15)


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (10.0, 0.2), (30.0, 0.4), (0.1, 1e-8)])
def test_analytic_gaussian_sigma_is_tight_at_unit_sensitivity(eps, delta):
    """At sensitivity 1 (kills ``delta_f == 0.0`` -> ``== 1.0``, which returned sigma 0) and
    with sigma below the sensitivity (large epsilon: the downward bracket, kills ``hi = lo``
    -> None): the returned sigma certifies delta exactly and no smaller sigma does
    (delta at sigma (1 - 1e-9) exceeds the target)."""
    sigma = mech.gaussian_sigma_analytic(eps, delta, 1.0)
    assert sigma > 0.0
    assert mech.gaussian_mechanism_delta(sigma, eps, 1.0) <= delta
    assert mech.gaussian_mechanism_delta(sigma * (1 - 1e-9), eps, 1.0) > delta


def test_gaussian_mechanism_delta_is_zero_where_it_underflows():
    """sigma / Delta = 1e3 at epsilon 50: delta is numerically 0, not +inf or an error
    (kills ``return -inf`` -> ``+inf`` and the ``x >= 0`` guard mutants)."""
    assert mech.gaussian_mechanism_delta(1e3, 50.0, 1.0) == 0.0
    assert mech.gaussian_mechanism_delta(0.05, 50.0, 1.0) == pytest.approx(
        stats.norm.cdf(10 - 2.5) - math.exp(50) * stats.norm.cdf(-10 - 2.5), abs=1e-12)


@pytest.mark.parametrize("method", mech.EXPONENTIAL_METHODS)
def test_exponential_mechanism_softmax_law_at_large_scores_per_row(method):
    """Rows of very different magnitude (1e3 vs 0): each row's law is its own softmax, not
    overflowed (``w += max``) nor underflowed by a max over all rows (``axis=None``)."""
    scores = np.tile([[1000.0, 999.0], [0.0, -1.0]], (N // 2, 1))
    idx = mech.exponential_mechanism(np.random.default_rng(5), scores, 1.0, method=method)
    p0 = 1.0 / (1.0 + math.exp(-1.0))
    for row in (0, 1):
        k = int(np.sum(idx[row::2] == 0))
        n = N // 2
        # two-sided binomial acceptance region at p = 1e-9
        lo, hi = stats.binom.ppf(P_VALUE / 2, n, p0), stats.binom.isf(P_VALUE / 2, n, p0)
        assert lo <= k <= hi, (row, k, lo, hi)


def _guarantee() -> PrivacyGuarantee:
    return PrivacyGuarantee(1.0, 1e-5, basis="test")


@pytest.mark.parametrize("scales, sens", [({"sigma": 1e-310}, {"q": 1.0}),
                                          ({"sigma": 1.0}, {"q": 0.0}),
                                          ({"sigma": 1.0}, {"q": 1e-310}),
                                          ({"sigma": 1.0}, {"q": math.inf})])
def test_a_plan_with_a_degenerate_scale_or_sensitivity_is_not_certified(scales, sens):
    """Kills the mutants of ``_degenerate`` and of ``__post_init__``'s flagging: a subnormal
    noise scale or a sensitivity that is 0, subnormal or infinite certifies nothing."""
    plan = NoisePlan("theorem", scales, _guarantee(), None, sens)
    assert plan.guarantee.certified is False
    assert "floating point" in plan.guarantee.caveat
    assert (plan.guarantee.epsilon, plan.guarantee.delta) == (1.0, 1e-5)


@pytest.mark.parametrize("scales, sens", [({"sigma": 0.0, "b": math.inf}, {"q": 1.0}),
                                          ({"sigma": sys.float_info.min},
                                           {"q": sys.float_info.min})])
def test_a_sound_plan_stays_certified(scales, sens):
    """0 / inf scales (unused releases) and the smallest normal numbers are sound."""
    assert NoisePlan("theorem", scales, _guarantee(), None, sens).guarantee.certified is True


def test_scaled_divides_the_named_scales_and_drops_the_certificate():
    plan = NoisePlan("theorem", {"a": 2.0, "b": 3.0}, _guarantee(), None, {"q": 1.0})
    cut = plan.scaled(4.0, "a")
    assert dict(cut.scales) == {"a": 0.5, "b": 3.0}
    assert dict(plan.scaled(0.5).scales) == {"a": 4.0, "b": 6.0}  # factor < 1 is allowed
    assert cut.guarantee.certified is False and cut.ledger is None and cut.is_flagged
    twice = cut.scaled(2.0, "b")
    assert "a divided by 4" in twice.altered and "b divided by 2" in twice.altered


def test_a_forged_plan_is_adopted_uncertified_and_a_foreign_one_refused():
    plan = NoisePlan("theorem", {"a": 2.0}, _guarantee(), None, {"q": 1.0})
    forged = NoisePlan("theorem", {"a": 0.5}, _guarantee(), None, {"q": 1.0})
    adopted = plan.adopt(forged)
    assert dict(adopted.scales) == {"a": 0.5}
    assert adopted.guarantee.certified is False and adopted.ledger is None
    with pytest.raises(ValueError, match="scales"):
        plan.adopt(NoisePlan("theorem", {"b": 2.0}, _guarantee(), None, {"q": 1.0}))
    with pytest.raises(ValueError, match="NoisePlan"):
        plan.adopt({"a": 2.0})  # type: ignore[arg-type]


def test_a_non_private_plan_has_zero_scales():
    plan = NoisePlan.non_private("no noise", {"sigma": 1.0, "b": 2.0})
    assert dict(plan.scales) == {"sigma": 0.0, "b": 0.0}
    assert plan.calibration == "none" and not plan.is_private

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
from dpbandits.privacy.plan import NoisePlan, Scales

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



# ------------------------------------------------------------------ second triage (m-mech2):
# draws compared exactly with the documented construction from the same seed
# ------------------------------------------------------------------ mechanisms: draws
def test_gaussian_noise_into_a_buffer_is_scaled_by_every_sigma():
    # a skipped multiplication (``s != 2.0`` for ``s != 1.0``) drew sigma 1 for sigma 2
    for sigma in (0.5, 1.0, 2.0, 3.0):
        want = mech.gaussian_noise(np.random.default_rng(5), sigma, (7, 3))
        buf = np.empty((7, 3))
        got = mech.gaussian_noise(np.random.default_rng(5), sigma, (7, 3), out=buf)
        assert np.array_equal(got, want), sigma


def test_standard_laplace_is_its_documented_construction():
    # exponentials, then ceil(n/8) uniform bytes whose bits are the signs; a byte range of
    # 1..255 (a biased sign) or another variate changes the draws
    n = 1000
    got = mech.standard_laplace(np.random.default_rng(11), (n,))
    rng = np.random.default_rng(11)
    e = rng.standard_exponential(n)
    bits = np.unpackbits(rng.integers(0, 256, -(-n // 8), dtype=np.uint8), count=n)
    assert np.array_equal(got, np.where(bits == 1, -e, e))


def test_laplace_noise_by_inversion_is_numpys_laplace_times_the_scale():
    got = mech.laplace_noise(np.random.default_rng(3), 2.5, (50,), method="inversion")
    want = 2.5 * np.random.default_rng(3).laplace(0.0, 1.0, (50,))
    assert np.array_equal(got, want)


@pytest.mark.parametrize("largest", [True, False])
def test_report_noisy_selection_adds_laplace_by_inversion(largest):
    # the pick is the argmax/argmin of scores + scale * Laplace drawn by inversion; the
    # noise subtracted, or drawn another way, picks other indices
    scores = np.random.default_rng(0).normal(size=(400, 4))
    f = mech.report_noisy_argmax if largest else mech.report_noisy_argmin
    got = f(np.random.default_rng(9), scores, 0.7)
    noisy = scores + 0.7 * np.random.default_rng(9).laplace(0.0, 1.0, scores.shape)
    want = np.argmax(noisy, axis=1) if largest else np.argmin(noisy, axis=1)
    assert np.array_equal(got, want)


def test_exponential_mechanism_by_inversion_is_stable_and_per_row():
    # rows of very different magnitudes, scores near exp's overflow: the shift by the row's
    # own maximum keeps both rows' CDFs exact (P(0) = P(1) = 1/2 in each row)
    scores = np.array([[0.0, 0.0], [1000.0, 1000.0]])
    for u, want in ((0.25, 0), (0.75, 1)):
        got = mech.exponential_mechanism_from_uniforms(scores, 1.0, np.full(2, u))
        assert got.tolist() == [want, want], u


def test_wishart_without_a_leading_shape_and_at_n_one():
    w = mech.wishart_matrix(np.random.default_rng(2), 3, 5.0, scale=2.0)
    assert w.shape == (3, 3)
    u = mech.bartlett_factor(np.arange(3.0), np.array([1.0, 4.0, 9.0]), 3)
    assert np.array_equal(u, [[1.0, 0.0, 1.0], [0.0, 2.0, 2.0], [0.0, 0.0, 3.0]])
    # n = 1: scale times a chi^2(df) draw
    one = mech.wishart_matrix(np.random.default_rng(4), 1, 3.0, scale=2.0)
    assert one.shape == (1, 1)
    assert one[0, 0] == pytest.approx(2.0 * np.random.default_rng(4).chisquare(3.0, (1,))[0],
                                      rel=1e-15)


# ------------------------------------------------------------------ mechanisms: calibration
def test_classical_gaussian_sigma_is_the_closed_form():
    for eps, delta, sens in ((0.5, 1e-5, 2.0), (0.9, 1e-3, 1.0)):
        want = math.sqrt(2.0 * math.log(1.25 / delta)) * sens / eps
        assert mech.gaussian_sigma_classical(eps, delta, sens) == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (20.0, 1e-5), (0.1, 1e-8)])
def test_analytic_sigma_at_unit_sensitivity_is_the_smallest_certifying_sigma(eps, delta):
    # sensitivity 1 (a mutant returned 0 for it) and a large epsilon (sigma/Delta < e^-1:
    # the downward bracket search); the sigma certifies delta and 1e-6 less does not
    sigma = mech.gaussian_sigma_analytic(eps, delta, 1.0)
    assert sigma > 0.0
    assert mech.gaussian_mechanism_delta(sigma, eps, 1.0) <= delta
    assert mech.gaussian_mechanism_delta(sigma * (1 - 1e-6), eps, 1.0) > delta


def test_gaussian_delta_is_zero_not_infinite_where_it_underflows():
    # sigma/Delta = 1e4 at epsilon 10: log Phi(B) - log Phi(A) + epsilon rounds to exactly 0,
    # the branch where delta is numerically 0 (a mutant returned +inf there, another took
    # the log of 0)
    d = mech.gaussian_mechanism_delta(1e4, 10.0, 1.0)
    assert d == 0.0


# ------------------------------------------------------------------ plan: certificates
def _plan(sensitivity: float = 1.0, scale: float = 1.0) -> NoisePlan:
    return NoisePlan("theorem", {"s": scale}, PrivacyGuarantee(1.0, 1e-5),
                     sensitivities={"d": sensitivity})


@pytest.mark.parametrize("sensitivity, scale, certified", [
    (1.0, 1.0, True),
    (sys.float_info.min, 1.0, True),   # smallest normal: fine
    (5e-324, 1.0, False),              # subnormal sensitivity
    (math.inf, 1.0, False),
    (0.0, 1.0, False),
    (1.0, 0.0, True),                  # an unused release
    (1.0, sys.float_info.min, True),
    (1.0, 1e-310, False),              # subnormal scale
])
def test_a_plan_with_a_degenerate_sensitivity_or_scale_is_not_certified(sensitivity, scale,
                                                                        certified):
    assert _plan(sensitivity, scale).guarantee.certified is certified


def test_scales_accept_zero_and_a_plan_can_be_scaled_up():
    assert Scales({"a": 0.0})["a"] == 0.0
    up = _plan().scaled(0.5)  # factor < 1: more noise, still flagged as changed
    assert up.scales["s"] == 2.0 and up.is_flagged and not up.guarantee.certified


def test_adopt_keeps_an_equal_plan_and_refuses_other_scale_names():
    own = _plan()
    same = _plan()
    assert same is not own and own.adopt(same) is own and own.guarantee.certified
    other = NoisePlan("theorem", {"t": 1.0}, PrivacyGuarantee(1.0, 1e-5))
    with pytest.raises(ValueError, match="scales"):
        own.adopt(other)
    with pytest.raises(ValueError, match="NoisePlan"):
        own.adopt("plan")  # type: ignore[arg-type]


def test_replaced_keeps_the_scales_it_does_not_name():
    plan = NoisePlan("theorem", {"a": 1.0, "b": 2.0}, PrivacyGuarantee(1.0, 1e-5))
    changed = plan.replaced(a=0.5)
    assert dict(changed.scales) == {"a": 0.5, "b": 2.0}
    assert changed.is_flagged and not changed.guarantee.certified


def test_a_non_private_plan_draws_no_noise_and_claims_nothing():
    plan = NoisePlan.non_private("epsilon = inf", {"s": 5.0, "t": 1.0})
    assert dict(plan.scales) == {"s": 0.0, "t": 0.0}
    assert plan.calibration == "none" and not plan.is_private and plan.ledger is None

"""Tests for dpbandits.privacy.accounting.

Reference values come from closed forms computed here independently of the module: the
analytic Gaussian mechanism (Balle & Wang 2018), the Laplace hockey-stick curve, and the exact
composition of n binary randomized responses (a binomial sum), which is the tight
epsilon of n pure eps_t-DP steps (Kairouz, Oh & Viswanath 2015).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from scipy import optimize, stats

from dpbandits.privacy import accounting as acc
from dpbandits.privacy import guarantee
from dpbandits.privacy.accounting import (
    bounded_range_to_zcdp,
    calibrate,
    compose,
    delta_of,
    epsilon_of,
    gaussian_event,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    laplace_event,
    pld,
    pure_dp_event,
    pure_dp_to_zcdp,
    rdp,
    subsampled_gaussian_event,
    zcdp_epsilon,
    zcdp_event,
)
from dpbandits.privacy.accounting.events import flatten

# ------------------------------------------------------------------------------------------
# Independent closed forms
# ------------------------------------------------------------------------------------------


def balle_wang_delta(sigma: float, eps: float) -> float:
    """Analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8), sensitivity 1."""
    return stats.norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * stats.norm.cdf(
        -1 / (2 * sigma) - eps * sigma
    )


def rr_composition_delta(eps_t: float, n: int, eps: float) -> float:
    """Exact delta(eps) of n composed eps_t-DP randomized responses.

    The privacy loss is eps_t (2B - n) with B ~ Binomial(n, e^eps_t / (1 + e^eps_t)).
    """
    i = np.arange(n + 1)
    loss = eps_t * (2 * i - n)
    pmf = stats.binom.pmf(i, n, 1.0 / (1.0 + math.exp(-eps_t)))
    return float(np.sum(pmf * np.clip(-np.expm1(eps - loss), 0.0, None)))


def rr_composition_epsilon(eps_t: float, n: int, delta: float) -> float:
    return optimize.brentq(
        lambda e: rr_composition_delta(eps_t, n, e) - delta, 0.0, n * eps_t, xtol=1e-13
    )


# ------------------------------------------------------------------------------------------
# Re-export and event constructors
# ------------------------------------------------------------------------------------------


def test_reexports_privacy_guarantee():
    assert acc.PrivacyGuarantee is guarantee.PrivacyGuarantee
    assert "PrivacyGuarantee" in acc.__all__


def test_event_constructors_build_dp_accounting_events():
    assert gaussian_event(2.0) == dp_accounting.GaussianDpEvent(2.0)
    assert gaussian_event(2.0, count=3) == dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(2.0), 3
    )
    assert laplace_event(0.5) == dp_accounting.LaplaceDpEvent(0.5)
    assert zcdp_event(0.1, count=2) == dp_accounting.SelfComposedDpEvent(
        dp_accounting.ZCDpEvent(0.1), 2
    )
    sub = subsampled_gaussian_event(1.5, 0.01)
    assert sub == dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.5))
    # pure DP: binary randomized response with flip probability 1 / (1 + e^eps)
    rr = pure_dp_event(0.7)
    assert isinstance(rr, dp_accounting.RandomizedResponseDpEvent)
    assert rr.num_buckets == 2
    assert rr.noise_parameter == pytest.approx(2 / (1 + math.exp(0.7)), rel=1e-14)
    # count > 1 is an explicit n-fold composition (safe under dp_accounting's PLDAccountant)
    many = pure_dp_event(0.7, count=5)
    assert isinstance(many, dp_accounting.ComposedDpEvent)
    assert many.events == [rr] * 5
    both = compose([rr, sub])
    assert isinstance(both, dp_accounting.ComposedDpEvent) and both.events == [rr, sub]
    assert compose(iter([rr])).events == [rr]


def test_pure_dp_ledger_is_recomputable_with_plain_dp_accounting():
    # The representation must be understood by dp_accounting itself (REPLACE_ONE RDP).
    event = pure_dp_event(0.3, count=20)
    plain = rdp_lib.RdpAccountant(
        orders=acc.RDP_ORDERS, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
    )
    plain.compose(event)
    assert epsilon_of(event, 1e-6, method="rdp") == pytest.approx(plain.get_epsilon(1e-6))


# ------------------------------------------------------------------------------------------
# Gaussian mechanism: closed form and GDP
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sigma, eps",
    [(0.5, 0.3), (0.5, 3.0), (0.5, 8.0), (1.0, 0.3), (1.0, 1.0), (1.0, 4.0), (2.0, 1.0),
     (2.0, 2.0), (5.0, 0.3), (5.0, 1.0)],
)
def test_gaussian_matches_balle_wang(sigma, eps):
    exact = balle_wang_delta(sigma, eps)
    assert exact > 1e-12  # above the PLD's truncation floor
    got_delta = delta_of(gaussian_event(sigma), eps)
    assert exact * (1 - 1e-9) <= got_delta <= exact * (1 + 1e-3)
    got_eps = epsilon_of(gaussian_event(sigma), exact)
    assert eps - 1e-9 <= got_eps <= eps * (1 + 1e-3) + 1e-6
    # RDP is an upper bound (loose at large delta; within a modest factor at small delta)
    rdp = epsilon_of(gaussian_event(sigma), exact, method="rdp")
    assert got_eps <= rdp
    if exact <= 1e-3:
        assert rdp <= 1.5 * got_eps


@pytest.mark.parametrize("sigma", [0.7, 1.0, 4.0])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_gaussian_mechanism_is_exactly_inverse_sigma_gdp(sigma, eps):
    mu = 1.0 / sigma
    assert gdp_delta(mu, eps) == pytest.approx(balle_wang_delta(sigma, eps), rel=1e-10)
    assert delta_of(gaussian_event(sigma), eps) == pytest.approx(gdp_delta(mu, eps), rel=1e-3)


def test_gaussian_count_composes_as_gdp():
    sigma, k, delta = 8.0, 64, 1e-6
    composed = epsilon_of(gaussian_event(sigma, count=k), delta)
    assert composed == pytest.approx(gdp_epsilon(math.sqrt(k) / sigma, delta), rel=1e-3)
    separate = epsilon_of(compose([gaussian_event(sigma)] * k), delta)
    assert separate == pytest.approx(composed, rel=2e-3)


@pytest.mark.parametrize(
    "mu, eps", [(0.1, 0.05), (0.5, 0.5), (1.0, 1.0), (1.0, 3.0), (3.0, 2.0), (10.0, 20.0)]
)
def test_gdp_round_trips(mu, eps):
    delta = gdp_delta(mu, eps)
    assert 0 < delta < 1
    e = gdp_epsilon(mu, delta)
    assert e == pytest.approx(eps, rel=1e-8)
    assert gdp_delta(mu, e) <= delta  # lands on the safe side
    m = gdp_mu(eps, delta)
    assert m == pytest.approx(mu, rel=1e-8)
    assert gdp_delta(m, eps) <= delta


def test_gdp_known_values_and_monotonicity():
    # delta(0) of mu-GDP is the total variation 2 Phi(mu/2) - 1; beyond it epsilon is 0
    tv = 2 * stats.norm.cdf(0.5) - 1
    assert gdp_epsilon(1.0, tv + 1e-3) == 0.0
    assert gdp_epsilon(1.0, tv - 1e-3) > 0.0
    deltas = [gdp_delta(1.0, e) for e in (0.1, 0.5, 1.0, 2.0, 4.0)]
    assert all(a > b for a, b in zip(deltas, deltas[1:], strict=False))
    mus = [gdp_mu(1.0, d) for d in (1e-8, 1e-5, 1e-2)]
    assert all(a < b for a, b in zip(mus, mus[1:], strict=False))
    # numerically stable far in the tail (no overflow of e^eps, no negative delta)
    assert 0.0 <= gdp_delta(0.5, 300.0) < 1e-300


# ------------------------------------------------------------------------------------------
# Laplace
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("b", [0.5, 2.0, 10.0])
def test_single_laplace_closed_form(b):
    eps0 = 1.0 / b
    # (1/b, 0)-DP and not better: epsilon at delta = 0 is 1/b
    at_zero = epsilon_of(laplace_event(b), 0.0)
    assert eps0 - 1e-12 <= at_zero <= eps0 + 1e-4
    # hockey-stick curve delta(eps) = 1 - exp((eps - eps0)/2) on [0, eps0]
    for delta in (1e-6, 1e-3, 0.02):
        exact = max(0.0, eps0 + 2 * math.log1p(-delta))
        got = epsilon_of(laplace_event(b), delta)
        assert exact - 1e-9 <= got <= exact + 2e-4


def test_k_fold_laplace_between_one_fold_and_basic_composition():
    b, k = 2.0, 10
    eps0 = 1.0 / b
    # at delta = 0 basic composition is tight: k / b
    assert epsilon_of(laplace_event(b, count=k), 0.0) == pytest.approx(k * eps0, abs=k * 1e-4)
    for delta in (1e-8, 1e-5, 1e-3):
        got = epsilon_of(laplace_event(b, count=k), delta)
        one_fold = epsilon_of(laplace_event(b), delta)
        assert one_fold < got < k * eps0
        assert got <= epsilon_of(laplace_event(b, count=k), delta, method="rdp")
    # advanced-composition-like scaling: far below k/b for many steps
    assert epsilon_of(laplace_event(20.0, count=400), 1e-6) < 0.5 * 400 / 20.0


# ------------------------------------------------------------------------------------------
# Pure DP steps
# ------------------------------------------------------------------------------------------


def test_single_pure_dp_step_closed_form():
    eps = 1.0
    assert epsilon_of(pure_dp_event(eps), 0.0) == pytest.approx(eps, abs=1e-4)
    for e in (0.0 + 1e-3, 0.25, 0.5, 0.9):
        exact = (math.exp(eps) - math.exp(e)) / (1 + math.exp(eps))
        got = delta_of(pure_dp_event(eps), e)
        assert exact * (1 - 1e-9) <= got <= exact * (1 + 1e-4)
    assert delta_of(pure_dp_event(eps), 1.5) == 0.0


def test_pure_dp_count_is_composed_count_times():
    # dp_accounting's PLDAccountant composes a self-composed RR once; we must not.
    eps_t, n, delta = 0.5, 10, 1e-6
    exact = rr_composition_epsilon(eps_t, n, delta)
    rr = pure_dp_event(eps_t)
    for event in (
        pure_dp_event(eps_t, count=n),
        dp_accounting.SelfComposedDpEvent(rr, n),
        compose([rr] * n),
        compose([dp_accounting.SelfComposedDpEvent(rr, 2)] * (n // 2)),
    ):
        got = epsilon_of(event, delta)
        assert exact - 1e-9 <= got <= exact * (1 + 1e-3)
    assert exact > 2 * eps_t  # far above a single step


def test_many_tiny_pure_dp_steps_are_accounted_accurately():
    # With a coarse PLD grid (1e-3), 1e4 steps of tiny pure-DP once gave 5.45 instead
    # of ~0.7 for the theorem schedule. Here: equal steps eps_t = 0.005, checked against the
    # exact binomial answer and the zCDP / advanced-composition brackets.
    n, eps_t, delta = 10_000, 0.005, 1e-4
    event = pure_dp_event(eps_t, count=n)
    got = epsilon_of(event, delta)
    exact = rr_composition_epsilon(eps_t, n, delta)
    assert exact - 1e-9 <= got <= exact * (1 + 1e-3)
    rho = n * pure_dp_to_zcdp(eps_t)
    assert got < zcdp_epsilon(rho, delta) < rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert got > n * eps_t * math.expm1(eps_t)  # lower-order term of advanced composition
    rdp = epsilon_of(event, delta, method="rdp")
    assert got <= rdp <= 1.5 * got
    # robust to the grid: that coarse interval and an unaligned one
    for h in (1e-3, 3.3e-4):
        coarse = epsilon_of(event, delta, discretization=h)
        assert exact - 1e-9 <= coarse <= exact * (1 + 1e-3)
    # and the automatic grid is fine relative to the per-step loss
    counts, _ = flatten(event)
    assert pld._auto_discretization(counts) <= eps_t / 10 * (1 + 1e-9)


def test_heterogeneous_pure_dp_schedule_against_zcdp():
    # Theorem 3.4-like schedule eps_t = eps / (2 sqrt(t log n log(1/delta))), shorter horizon.
    n, eps, delta = 2000, 1.0, 1e-4
    t = np.arange(1, n + 1)
    schedule = eps / (2 * np.sqrt(t * math.log(n) * math.log(1 / delta)))
    event = compose([pure_dp_event(float(e)) for e in schedule])
    got = epsilon_of(event, delta)
    zcdp = epsilon_of(compose([zcdp_event(pure_dp_to_zcdp(float(e))) for e in schedule]), delta,
                      method="rdp")
    rho = float(np.sum(schedule**2) / 2)
    assert zcdp == pytest.approx(zcdp_epsilon(rho, delta), rel=1e-9)
    assert got < zcdp
    assert got > 0.5 * zcdp
    # grid-independent (a 10x coarser grid changes the answer by < 1%)
    assert epsilon_of(event, delta, discretization=1e-3) == pytest.approx(got, rel=1e-2)


def test_finite_pair_pld_equals_dp_accounting_connect_the_dots():
    for eps, h in ((0.005, 1e-3), (0.3, 7e-4), (2.0, 1e-4), (1e-4, 1e-3)):
        mine = pld._pld_of_finite_pair([eps, -eps], [1 / (1 + math.exp(-eps)),
                                                      1 / (1 + math.exp(eps))], h)
        grid = sorted({math.floor(eps / h), math.ceil(eps / h),
                       math.floor(-eps / h), math.ceil(-eps / h)})
        e = np.asarray(grid) * h
        deltas = np.where(e >= -eps, np.maximum(0.0, math.exp(eps) - np.exp(e)),
                          -np.expm1(e) * (1 + math.exp(eps))) / (1 + math.exp(eps))
        ref = pld_lib.PrivacyLossDistribution(
            pld_pmf.create_pmf_pessimistic_connect_dots(h, grid, deltas)
        )
        for q in np.linspace(-2 * eps, 2 * eps, 17):
            assert mine.get_delta_for_epsilon(q) == pytest.approx(
                ref.get_delta_for_epsilon(q), rel=1e-9, abs=1e-15
            )


# ------------------------------------------------------------------------------------------
# Cross-checks, mixtures, special events
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        gaussian_event(5.0, count=50),
        laplace_event(10.0, count=20),
        subsampled_gaussian_event(1.0, 0.05, count=100),
        pure_dp_event(0.05, count=400),
        compose([gaussian_event(3.0, 10), laplace_event(20.0, 5), pure_dp_event(0.1, 30)]),
    ],
    ids=["gaussian", "laplace", "subsampled-gaussian", "pure-dp", "mixture"],
)
def test_pld_below_rdp_within_reasonable_factor(event):
    for delta in (1e-3, 1e-6):
        pld = epsilon_of(event, delta)
        rdp = epsilon_of(event, delta, method="rdp")
        assert 0 < pld <= rdp <= 1.5 * pld
        # delta_of is the inverse of epsilon_of (same accountant)
        assert delta_of(event, pld) <= delta * (1 + 1e-6)
        assert delta_of(event, rdp, method="rdp") <= delta * (1 + 1e-6)


def test_subsampling_amplifies_privacy():
    full = epsilon_of(gaussian_event(2.0, count=100), 1e-5)
    sub = epsilon_of(subsampled_gaussian_event(2.0, 0.01, count=100), 1e-5)
    assert sub < 0.1 * full
    one = epsilon_of(subsampled_gaussian_event(2.0, 1.0), 1e-5)
    assert one == pytest.approx(epsilon_of(gaussian_event(2.0), 1e-5), rel=1e-3)


def test_noop_nonprivate_and_unsupported_events():
    assert epsilon_of(dp_accounting.NoOpDpEvent(), 1e-5) == 0.0
    assert delta_of(dp_accounting.NoOpDpEvent(), 1.0) == 0.0
    nonpriv = compose([gaussian_event(1.0), dp_accounting.NonPrivateDpEvent()])
    assert epsilon_of(nonpriv, 1e-5) == math.inf
    assert epsilon_of(nonpriv, 1e-5, method="rdp") == math.inf
    assert delta_of(nonpriv, 1.0) == 1.0
    with pytest.raises(ValueError, match="rdp"):
        epsilon_of(zcdp_event(0.1), 1e-5, method="pld")
    with pytest.raises(ValueError, match="not supported"):
        epsilon_of(dp_accounting.UnsupportedDpEvent(), 1e-5)
    with pytest.raises(ValueError, match="not supported"):
        epsilon_of(dp_accounting.UnsupportedDpEvent(), 1e-5, method="rdp")
    # Gaussian noise is never (eps, 0)-DP
    assert epsilon_of(gaussian_event(1.0), 0.0) == math.inf


# ------------------------------------------------------------------------------------------
# zCDP
# ------------------------------------------------------------------------------------------


def test_zcdp_conversion_constants():
    assert pure_dp_to_zcdp(0.3) == pytest.approx(0.045)
    assert bounded_range_to_zcdp(0.3) == pytest.approx(0.01125)
    assert bounded_range_to_zcdp(0.3) == pytest.approx(pure_dp_to_zcdp(0.3) / 4)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.125, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_zcdp_epsilon_tight_and_valid(rho, delta):
    got = zcdp_epsilon(rho, delta)
    simple = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert got <= simple
    # the Gaussian mechanism with mu = sqrt(2 rho) is rho-zCDP, so no valid conversion can
    # be below its exact epsilon
    assert got >= gdp_epsilon(math.sqrt(2 * rho), delta)
    assert epsilon_of(zcdp_event(rho), delta, method="rdp") <= simple


# ------------------------------------------------------------------------------------------
# Calibration
# ------------------------------------------------------------------------------------------


def test_calibrate_gaussian_composition_of_100_steps():
    eps, delta = 1.0, 1e-5

    def event_of(sigma):
        return gaussian_event(sigma, count=100)

    sigma = calibrate(event_of, eps, delta)
    assert epsilon_of(event_of(sigma), delta) <= eps
    assert epsilon_of(event_of(sigma * 0.99), delta) > eps
    # 100 Gaussians with noise sigma are (10/sigma)-GDP
    analytic = 10.0 / gdp_mu(eps, delta)
    assert analytic * (1 - 1e-6) <= sigma <= analytic * (1 + 3e-3)


def test_calibrate_gaussian_with_rdp_and_bracket():
    eps, delta = 2.0, 1e-6

    def event_of(sigma):
        return gaussian_event(sigma, count=10)

    sigma = calibrate(event_of, eps, delta, method="rdp", lower=0.5, upper=100.0)
    assert 0.5 < sigma < 100.0
    assert epsilon_of(event_of(sigma), delta, method="rdp") <= eps
    assert epsilon_of(event_of(sigma * 0.99), delta, method="rdp") > eps
    assert sigma >= calibrate(event_of, eps, delta)  # RDP needs at least as much noise


def test_calibrate_pure_dp_schedule():
    # noise b scales every step: step t is (1 / (b sqrt(t)))-DP, t = 1..300
    n, eps, delta = 300, 1.0, 1e-5
    t = np.arange(1, n + 1)

    def event_of(b):
        return compose([pure_dp_event(float(1.0 / (b * math.sqrt(s)))) for s in t])

    b = calibrate(event_of, eps, delta)
    assert epsilon_of(event_of(b), delta) <= eps
    assert epsilon_of(event_of(b * 0.99), delta) > eps


def test_calibrate_largest_per_step_epsilon_when_increasing():
    n, eps, delta = 1000, 1.0, 1e-6

    def event_of(eps_t):
        return pure_dp_event(eps_t, count=n)

    eps_t = calibrate(event_of, eps, delta, decreasing=False)
    assert epsilon_of(event_of(eps_t), delta) <= eps
    assert epsilon_of(event_of(eps_t * 1.01), delta) > eps
    assert eps_t > eps / n  # far better than basic composition


def test_calibrate_reports_unreachable_targets():
    # Gaussian noise never gives delta = 0
    with pytest.raises(ValueError, match="cannot be met"):
        calibrate(lambda s: gaussian_event(s), 1.0, 0.0)
    # wrong direction: more of the parameter means less privacy
    with pytest.raises(ValueError, match="decreasing"):
        calibrate(lambda e: pure_dp_event(e), 0.5, 0.0)
    # the event does not depend on the parameter
    with pytest.raises(ValueError, match="does not seem to depend"):
        calibrate(lambda s: gaussian_event(1.0), 100.0, 1e-5)
    # upper end of the bracket fails
    with pytest.raises(ValueError, match="bracket"):
        calibrate(lambda s: gaussian_event(s), 1.0, 1e-5, lower=0.1, upper=1.0)
    # lower end already meets: it is optimal within the bracket
    assert calibrate(lambda s: gaussian_event(s), 1.0, 1e-5, lower=10.0, upper=20.0) == 10.0
    with pytest.raises(TypeError, match="event_of_noise"):
        calibrate(lambda s: 1.0, 1.0, 1e-5)


def test_rdp_method_adds_the_replace_one_curve_of_randomized_response():
    # RDP composes additively order by order: the pure-DP steps (randomized response,
    # REPLACE_ONE) and the Gaussian/Laplace steps (ADD_OR_REMOVE_ONE) accounted separately by
    # plain dp_accounting accountants and summed give the method's curve and epsilon.
    orders = list(acc.RDP_ORDERS)
    rr = rdp_lib.RdpAccountant(orders, dp_accounting.NeighboringRelation.REPLACE_ONE)
    rr.compose(pure_dp_event(0.1, count=30))
    rest = rdp_lib.RdpAccountant(orders, dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    rest.compose(compose([gaussian_event(3.0, 50), laplace_event(20.0, 10)]))
    ledger = compose([pure_dp_event(0.1, 30), gaussian_event(3.0, 50), laplace_event(20.0, 10)])
    curve = rdp.rdp_curve(ledger)
    np.testing.assert_allclose(curve, rr.rdp + rest.rdp, rtol=1e-12)
    want = rdp_lib.compute_epsilon(orders, rr.rdp + rest.rdp, 1e-5)[0]
    assert epsilon_of(ledger, 1e-5, method="rdp") == pytest.approx(want, rel=1e-12)
    # the pure-DP steps alone are exactly dp_accounting's replace-one reading
    assert epsilon_of(pure_dp_event(0.1, 30), 1e-5, method="rdp") == pytest.approx(
        rr.get_epsilon(1e-5), rel=1e-12)
    assert delta_of(pure_dp_event(0.1, 30), 1.0, method="rdp") == pytest.approx(
        rr.get_delta(1.0), rel=1e-12)


def test_calibrate_bracket_options_and_callable_accountant():
    # a closed-form "accountant": epsilon(x) = 10 / x, so the answer is x = 10 / eps
    def accountant(x, delta):
        return 10.0 / x

    seen = []

    def event_of(x):
        seen.append(x)
        return x

    x = calibrate(event_of, 2.0, 1e-5, method=accountant, start=3.0, growth=1.5, rtol=1e-6)
    assert 5.0 <= x <= 5.0 * (1 + 1e-6)
    assert seen[:3] == [3.0, 4.5, 6.75]  # start, then growth toward more noise
    # rtol=inf stops at the first feasible point; a given infeasible end stays the bad end
    seen.clear()
    assert calibrate(event_of, 2.0, 1e-5, method=accountant, lower=1.0, start=2.0,
                     rtol=math.inf) == 8.0
    assert seen == [1.0, 2.0, 8.0]
    with pytest.raises(ValueError, match="start"):
        calibrate(event_of, 2.0, 1e-5, method=accountant, upper=9.0, start=2.0)
    with pytest.raises(ValueError, match="start"):
        calibrate(event_of, 2.0, 1e-5, method=accountant, lower=3.0, start=2.0)
    with pytest.raises(ValueError, match="growth"):
        calibrate(event_of, 2.0, 1e-5, method=accountant, growth=1.0)
    with pytest.raises(ValueError, match="discretization"):
        calibrate(event_of, 2.0, 1e-5, method=accountant, discretization=1e-4)


def test_without_replacement_calibration_meets_the_replace_one_target():
    n, m, count, eps, delta = 200, 10, 30, 1.0, 1e-5
    k = acc.wor_gaussian_multiplier(n, m, count, eps, delta)
    ledger = acc.wor_gaussian_event(n, m, k, count)
    plain = rdp_lib.RdpAccountant(list(acc.WOR_SEARCH_ORDERS),
                                  dp_accounting.NeighboringRelation.REPLACE_ONE)
    plain.compose(ledger)
    assert plain.get_epsilon(delta) <= eps
    assert acc.replace_one_rdp_epsilon(ledger, delta) <= eps  # more orders: only smaller
    assert acc.replace_one_rdp_epsilon(acc.wor_gaussian_event(n, m, k * 0.999, count),
                                       delta, acc.WOR_SEARCH_ORDERS) > eps


# ------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------

_EV = gaussian_event(1.0)
_F = gaussian_event

BAD_INPUT = [
    (gaussian_event, (-1.0,), {}, ValueError, "noise_multiplier"),
    (gaussian_event, (0.0,), {}, ValueError, "noise_multiplier"),
    (gaussian_event, (float("nan"),), {}, ValueError, "noise_multiplier"),
    (gaussian_event, (float("inf"),), {}, ValueError, "noise_multiplier"),
    (gaussian_event, ("1",), {}, TypeError, "noise_multiplier"),
    (gaussian_event, (1.0,), {"count": 0}, ValueError, "count"),
    (gaussian_event, (1.0,), {"count": 1.5}, TypeError, "count"),
    (laplace_event, (-1.0,), {}, ValueError, "scale_over_sensitivity"),
    (laplace_event, (1.0,), {"count": -2}, ValueError, "count"),
    (pure_dp_event, (0.0,), {}, ValueError, "epsilon"),
    (pure_dp_event, (-0.5,), {}, ValueError, "epsilon"),
    (pure_dp_event, (0.5,), {"count": 0}, ValueError, "count"),
    (zcdp_event, (-0.1,), {}, ValueError, "rho"),
    (zcdp_event, (0.1,), {"count": True}, TypeError, "count"),
    (subsampled_gaussian_event, (1.0, 0.0), {}, ValueError, "sampling_prob"),
    (subsampled_gaussian_event, (1.0, 1.5), {}, ValueError, "sampling_prob"),
    (subsampled_gaussian_event, (-1.0, 0.5), {}, ValueError, "noise_multiplier"),
    (compose, ([],), {}, ValueError, "events"),
    (compose, ([1.0],), {}, TypeError, r"events\[0\]"),
    (compose, (_EV,), {}, TypeError, "events"),
    (epsilon_of, ("x", 1e-5), {}, TypeError, "event"),
    (epsilon_of, (_EV, -0.1), {}, ValueError, "delta"),
    (epsilon_of, (_EV, 1.0), {}, ValueError, "delta"),
    (epsilon_of, (_EV, 1e-5), {"method": "moments"}, ValueError, "method"),
    (epsilon_of, (_EV, 1e-5), {"discretization": 0.0}, ValueError, "discretization"),
    (delta_of, (_EV, 0.0), {}, ValueError, "epsilon"),
    (delta_of, (_EV, -1.0), {}, ValueError, "epsilon"),
    (delta_of, (_EV, 1.0), {"method": "exact"}, ValueError, "method"),
    (gdp_delta, (0.0, 1.0), {}, ValueError, "mu"),
    (gdp_delta, (1.0, -1.0), {}, ValueError, "epsilon"),
    (gdp_epsilon, (1.0, 0.0), {}, ValueError, "delta"),
    (gdp_epsilon, (1.0, 1.0), {}, ValueError, "delta"),
    (gdp_epsilon, (-1.0, 1e-5), {}, ValueError, "mu"),
    (gdp_mu, (0.0, 1e-5), {}, ValueError, "epsilon"),
    (gdp_mu, (1.0, 0.0), {}, ValueError, "delta"),
    (pure_dp_to_zcdp, (0.0,), {}, ValueError, "epsilon"),
    (bounded_range_to_zcdp, (-1.0,), {}, ValueError, "epsilon"),
    (zcdp_epsilon, (0.0, 1e-5), {}, ValueError, "rho"),
    (zcdp_epsilon, (1.0, 0.0), {}, ValueError, "delta"),
    (zcdp_epsilon, (1.0, 1.2), {}, ValueError, "delta"),
    (calibrate, (1.0, 1.0, 1e-5), {}, TypeError, "event_of_noise"),
    (calibrate, (_F, 0.0, 1e-5), {}, ValueError, "epsilon"),
    (calibrate, (_F, 1.0, 1.0), {}, ValueError, "delta"),
    (calibrate, (_F, 1.0, 1e-5), {"method": "x"}, ValueError, "method"),
    (calibrate, (_F, 1.0, 1e-5), {"rtol": 0.0}, ValueError, "rtol"),
    (calibrate, (_F, 1.0, 1e-5), {"lower": -1.0}, ValueError, "lower"),
    (calibrate, (_F, 1.0, 1e-5), {"upper": 0.0}, ValueError, "upper"),
    (calibrate, (_F, 1.0, 1e-5), {"lower": 5.0, "upper": 2.0}, ValueError, "lower"),
    (calibrate, (_F, 1.0, 1e-5), {"decreasing": "yes"}, TypeError, "decreasing"),
]


@pytest.mark.parametrize(
    "func, args, kwargs, exc, match",
    BAD_INPUT,
    ids=[f"{f.__name__}-{i}" for i, (f, *_rest) in enumerate(BAD_INPUT)],
)
def test_bad_input_is_rejected_with_named_parameter(func, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        func(*args, **kwargs)


def test_certify_recomputes_a_ledger_once_and_names_its_accountant():
    from dpbandits.privacy.accounting import certify, epsilon_of, gaussian_event

    ledger = gaussian_event(2.0)
    first = certify(ledger, 1e-5)
    assert first.epsilon == epsilon_of(ledger, 1e-5, method="pld")
    assert first.delta == 1e-5 and "PLD" in first.basis
    assert certify(gaussian_event(2.0), 1e-5) is first  # same content: the cached result
    assert certify(ledger, 1e-6).epsilon > first.epsilon  # delta is part of the key

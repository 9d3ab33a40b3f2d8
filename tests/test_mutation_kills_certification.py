"""Tests added to kill surviving mutants of the certification and the accountant queries
(``privacy/accounting/{certification,pld,query,rdp}.py``; scripts/mutation.sh,
docs/mutation-report.md). Each asserts a contract whose mutation changed a certified epsilon, a
recomputed delta, the privacy-loss distribution of an event, or which ledgers are certified as
sampled without replacement:

* a certificate is the closed form / accountant number of its ledger at the claimed delta;
* the PLDs of Laplace and randomized response are pessimistic and at most one grid step
  pessimistic: with the privacy loss rounded up to a grid of step ``h``, an ``n``-fold
  composition is dominated by the exact one at ``epsilon - n h``, so
  ``delta_exact(eps) <= delta(eps) <= delta_exact(eps - n h)`` and
  ``eps_exact <= epsilon(0) <= eps_exact + h`` (connect-the-dots lies between the exact pair
  and the rounded-up one: it is a post-processing of the latter, and the former of it);
* the Gaussian queries against the closed form of Balle & Wang 2018 and RDP ``alpha/(2 k^2)``.

The float slack (``_FLOAT``) covers rounding of sums of a few hundred probabilities and
dp_accounting's tail truncation (1e-15 per composition)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from itertools import product
from types import SimpleNamespace

import attr
import dp_accounting
import numpy as np
import pytest
from dp_accounting import dp_event as _ev
from dp_accounting.rdp import compute_epsilon
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpbandits.privacy.accounting import (
    GeneralizedGaussianDpEvent,
    WishartTreeDpEvent,
    certification,
    compose,
    delta_of,
    epsilon_of,
    gaussian_event,
    laplace_event,
    pure_dp_event,
    zcdp_event,
)
from dpbandits.privacy.accounting.certification import (
    Certificate,
    _has_wor_events,
    certified_guarantee,
    certify,
)
from dpbandits.privacy.accounting.events import wor_gaussian_event
from dpbandits.privacy.accounting.pld import _pld_of_finite_pair, _rr_atoms
from dpbandits.privacy.accounting.rdp import (
    RDP_ORDERS,
    SCO_BASELINE_ORDERS,
    WOR_SEARCH_ORDERS,
    rdp_curve,
    replace_one_rdp_epsilon,
)

_FLOAT = 1e-12


@pytest.fixture(autouse=True)
def _fresh_certificates():
    """certify() remembers certificates by the ledger's repr: every test recomputes its own."""
    saved = dict(certification._CACHE)
    certification._CACHE.clear()
    yield
    certification._CACHE.clear()
    certification._CACHE.update(saved)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class _Opaque(dp_accounting.DpEvent):
    """An event neither accountant knows."""

    tag: str = "opaque"


@attr.s(frozen=True, slots=True, auto_attribs=True)
class _Bundle(dp_accounting.DpEvent):
    """An event of another kind that holds sub-events in ``events``."""

    events: tuple = ()


def _wor(n: int = 50, count: int = 2) -> _ev.DpEvent:
    return wor_gaussian_event(n, 1, 2.0, count)


def _gaussian_delta(sigma: float, eps: float) -> float:
    """Exact delta(eps) of N(0, sigma^2) vs N(1, sigma^2) (Balle & Wang 2018, Theorem 8)."""
    a, b = 0.5 / sigma, eps * sigma
    return float(stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b))


# -- certification.py: closed-form ledgers -----------------------------------------------------
def _lemma_2_1(sigma: float, kappa: float = 1.0) -> GeneralizedGaussianDpEvent:
    return GeneralizedGaussianDpEvent(sigma_over_sensitivity=sigma, q_plus=2.0, scale=1.0,
                                      kappa=kappa, epsilon=0.5, delta=1e-5)


def test_lemma_2_1_ledger_is_certified_by_its_closed_form_at_the_claimed_delta():
    # two mechanisms per datum: basic composition with delta split in two (Lemma 2.1 of Han
    # et al. 2022 per mechanism: eps0 = sqrt(2 kappa log(1/delta0)) / sigma)
    delta = 1e-5
    ledger = compose([_lemma_2_1(12.0), _lemma_2_1(20.0, kappa=2.0)])
    by_hand = ((math.sqrt(2.0) / 12.0 + math.sqrt(4.0) / 20.0)
               * math.sqrt(math.log(2.0 / delta)))
    cert = certify(ledger, delta)
    assert cert.epsilon == pytest.approx(by_hand, rel=1e-12)
    assert cert.epsilon == epsilon_of(ledger, delta)
    assert cert.delta == delta
    assert isinstance(cert.basis, str) and "closed form" in cert.basis.lower()
    # delta_of inverts it (the closed form N exp(-(eps / C)^2))
    assert delta_of(ledger, by_hand) == pytest.approx(delta, rel=1e-9)


def test_wishart_ledger_is_certified_by_its_closed_form_at_the_claimed_delta():
    delta = 1e-5
    ledger = WishartTreeDpEvent(dim=3, degrees=20_003, scale=1.0, row_bound_sq=1.0,
                                nodes_per_datum=3)
    cert = certify(ledger, delta)
    assert cert.epsilon is not None and math.isfinite(cert.epsilon) and cert.epsilon > 0
    assert cert.epsilon == epsilon_of(ledger, delta)
    assert cert.delta == delta
    assert isinstance(cert.basis, str) and "wishart" in cert.basis.lower()
    # delta_of at the certified epsilon is the claim, up to the check's grid of per-node
    # deltas (400 points: within 10 %, tests/test_mutation_kills_accounting.py)
    got = delta_of(ledger, cert.epsilon)
    assert delta / 1.1 <= got <= delta * 1.1


# -- certification.py: accountant ledgers ------------------------------------------------------
def test_gaussian_certificate_is_dp_accountings_pld_epsilon():
    sigma, count, delta = 4.0, 16, 1e-5  # sqrt(16)/4: a 1-GDP ledger
    ledger = gaussian_event(sigma, count)
    cert = certify(ledger, delta)
    h_ref = 1e-4
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=h_ref)
    acc.compose(dp_accounting.GaussianDpEvent(sigma), count)
    ref = acc.get_epsilon(delta)
    # both are pessimistic PLDs, at most one grid step above the exact epsilon; the automatic
    # step here is the 1-GDP loss's extent (20 std + mean 0.5) over pld's 2e4 grid points
    h_auto = 20.5 / 2e4
    assert abs(cert.epsilon - ref) <= h_auto + h_ref
    assert cert.delta == delta
    assert "pld" in cert.basis.lower()
    # the exact Gaussian delta at the certificate is at most the claim (it is a valid bound)
    assert _gaussian_delta(1.0, cert.epsilon) <= delta * (1 + 1e-9)


def test_zcdp_ledger_falls_back_to_the_rdp_accountant():
    delta = 1e-6
    ledger = zcdp_event(0.01, count=3)  # not supported by the PLD method
    cert = certify(ledger, delta)
    rho = 0.03  # rho-zCDP => (rho + 2 sqrt(rho log(1/delta)), delta) (Bun & Steinke 2016)
    assert cert.epsilon is not None
    assert cert.epsilon == epsilon_of(ledger, delta, method="rdp")
    assert cert.epsilon <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert cert.delta == delta
    assert "RDP" in cert.basis.upper()


def test_unsupported_ledger_is_not_recomputable_and_names_both_accountants():
    delta = 1e-5
    cert = certify(compose([_Opaque(), gaussian_event(2.0)]), delta)
    assert cert.epsilon is None
    assert cert.delta == delta
    assert isinstance(cert.basis, str)
    assert "pld:" in cert.basis.lower() and "rdp:" in cert.basis.lower()


def test_certificate_dict_has_exactly_the_documented_keys():
    cert = Certificate(0.5, 1e-6, "basis")
    assert cert.to_dict() == {"epsilon": 0.5, "delta": 1e-6, "basis": "basis"}


# -- certification.py: sampling without replacement --------------------------------------------
_UNION = tuple(sorted(set(RDP_ORDERS) | set(SCO_BASELINE_ORDERS) | set(WOR_SEARCH_ORDERS)))


@pytest.mark.parametrize("n, k, count", [
    (1000, 3.0, 20),  # optimal order 112: in SCO_BASELINE_ORDERS, not in RDP_ORDERS
    (10, 3.0, 2),  # optimal order 37: in RDP_ORDERS only
])
def test_without_replacement_ledger_is_certified_over_every_searched_order(n, k, count):
    delta = 1e-5
    ledger = wor_gaussian_event(n, 1, k, count)
    # dp_accounting's replace-one RDP accountant, directly
    accountant = dp_accounting.rdp.RdpAccountant(
        orders=list(_UNION), neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(ledger)
    curve = np.asarray(accountant.rdp)

    def over(orders) -> float:
        keep = np.isin(_UNION, orders)
        return float(compute_epsilon(np.asarray(_UNION)[keep], curve[keep], delta)[0])

    union = over(_UNION)
    cert = certify(ledger, delta, "replace-one")
    assert cert.epsilon == pytest.approx(union, rel=1e-12)
    assert cert.delta == delta
    assert isinstance(cert.basis, str) and "rdp" in cert.basis.lower()
    alone = [over(orders) for orders in (RDP_ORDERS, SCO_BASELINE_ORDERS, WOR_SEARCH_ORDERS)]
    assert all(union <= e for e in alone)
    # the package's query on one grid is the same conversion
    assert replace_one_rdp_epsilon(ledger, delta, WOR_SEARCH_ORDERS) == pytest.approx(
        alone[2], rel=1e-12)
    # each case's optimal order lies in one grid only, so the union is strictly below the
    # other two (the epsilon over a set of orders is the least over its orders)
    assert sum(union < e for e in alone) == 2


def test_without_replacement_ledger_rdp_cannot_account_is_not_recomputable():
    # Poisson sampling has no replace-one RDP bound in dp_accounting
    cert = certify(_ev.PoissonSampledDpEvent(0.5, _wor()), 1e-5, "replace-one")
    assert cert.epsilon is None
    assert cert.delta == 1e-5
    assert isinstance(cert.basis, str) and "rdp" in cert.basis.lower()


def test_without_replacement_under_add_remove_is_not_certified_by_replace_one_rdp():
    cert = certify(_wor(), 1e-5, "add-remove")
    assert cert.epsilon is None  # dp_accounting has no add/remove bound for it
    assert "rdp:" in cert.basis.lower()


@pytest.mark.parametrize("nest", [
    lambda w: w,
    lambda w: _ev.SelfComposedDpEvent(w, 3),
    lambda w: compose([gaussian_event(2.0), _ev.SelfComposedDpEvent(w, 2)]),
    # a leaf that wraps it (inside a composition, and as the ledger itself)
    lambda w: compose([gaussian_event(2.0), _ev.PoissonSampledDpEvent(0.5, w)]),
    lambda w: _ev.PoissonSampledDpEvent(0.5, w),
    lambda w: _ev.SelfComposedDpEvent(_ev.PoissonSampledDpEvent(
        0.5, _ev.SelfComposedDpEvent(w, 2)), 2),
    # an event of another kind holding it in ``events``
    lambda w: _Bundle((gaussian_event(2.0), w)),
    lambda w: compose([laplace_event(1.0), _Bundle((_ev.PoissonSampledDpEvent(0.5, w),))]),
])
def test_sampling_without_replacement_is_found_at_every_depth(nest):
    assert _has_wor_events(nest(_wor())) is True
    assert _has_wor_events(nest(_wor(count=1))) is True  # the bare event
    # and the same shape without it is not flagged
    assert _has_wor_events(nest(gaussian_event(3.0))) is False


# -- certification.py: certified_guarantee -----------------------------------------------------
def test_certified_guarantee_is_the_certificate_of_a_finite_claim_and_none_otherwise():
    ledger = gaussian_event(3.0, 4)
    privacy = SimpleNamespace(epsilon=1.0, delta=1e-5)  # no ``neighbouring``: not WOR-certified
    got = certified_guarantee(SimpleNamespace(ledger=ledger, privacy=privacy))
    assert got == certify(ledger, 1e-5).to_dict()
    assert set(got) == {"epsilon", "delta", "basis"} and got["delta"] == 1e-5
    assert certified_guarantee(SimpleNamespace(privacy=privacy)) is None  # no ledger attribute
    assert certified_guarantee(SimpleNamespace(ledger=None, privacy=privacy)) is None
    assert certified_guarantee(SimpleNamespace(ledger=ledger)) is None  # no privacy attribute
    assert certified_guarantee(SimpleNamespace(ledger=ledger, privacy=None)) is None
    infinite = SimpleNamespace(epsilon=math.inf, delta=0.0)
    assert certified_guarantee(SimpleNamespace(ledger=ledger, privacy=infinite)) is None
    wor = SimpleNamespace(epsilon=5.0, delta=1e-5, neighbouring="replace-one")
    got = certified_guarantee(SimpleNamespace(ledger=_wor(), privacy=wor))
    assert got == certify(_wor(), 1e-5, "replace-one").to_dict()
    assert got["epsilon"] is not None


# -- pld.py: Laplace -----------------------------------------------------------------------------
def _laplace_delta(b: float, eps: float) -> float:
    """Exact delta(eps) of Lap(0, b) vs Lap(1, b), eps >= 0: 1 - exp((eps - 1/b) / 2)."""
    return max(0.0, -math.expm1((eps - 1.0 / b) / 2.0))


@pytest.mark.parametrize("b, h", [(2.0, 1e-3), (0.7, 0.013), (0.25, 7e-4)])
def test_laplace_pld_is_pure_dp_and_at_most_one_grid_step_pessimistic(b, h):
    ev = laplace_event(b)
    eps0 = 1.0 / b
    assert eps0 <= epsilon_of(ev, 0.0, discretization=h) <= eps0 + h + _FLOAT
    for eps in np.linspace(0.0, eps0, 7)[1:]:
        got = delta_of(ev, float(eps), discretization=h)
        assert _laplace_delta(b, eps) - _FLOAT <= got
        assert got <= _laplace_delta(b, max(eps - h, 0.0)) + _FLOAT
    assert delta_of(ev, eps0 + h, discretization=h) == 0.0


# -- pld.py: randomized response -----------------------------------------------------------------
def _rr_delta(p: float, k: int, count: int, eps: float) -> float:
    """Exact delta(eps) of ``count`` k-ary randomized responses (replace-one): per step the loss
    is +L (P-mass 1 - p + p/k), -L (p/k) or 0 ((k - 2) p / k), L = log((1 - p + p/k) / (p/k))."""
    top, bottom, mid = 1 - p + p / k, p / k, (k - 2) * p / k
    loss = math.log(top / bottom)
    total = 0.0
    for a, b in product(range(count + 1), repeat=2):
        c = count - a - b
        if c < 0:
            continue
        mass = (math.factorial(count) / (math.factorial(a) * math.factorial(b) * math.factorial(c))
                * top ** a * bottom ** b * mid ** c)
        total += mass * max(0.0, -math.expm1(eps - (a - b) * loss))
    return total


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
def test_pure_dp_step_is_randomized_response_with_that_epsilon(eps):
    # binary randomized response with p = 2/(1 + e^eps): log((1 - p/2) / (p/2)) = eps
    h = 1e-3
    got = epsilon_of(pure_dp_event(eps), 0.0, discretization=h)
    assert eps - _FLOAT <= got <= eps + h + _FLOAT
    for count in (1, 3):
        ev = pure_dp_event(eps, count)
        p = 2.0 / (1.0 + math.exp(eps))
        for e in (0.2 * eps, eps):
            d = delta_of(ev, e, discretization=h)
            lo, hi = _rr_delta(p, 2, count, e), _rr_delta(p, 2, count, e - count * h)
            assert lo - _FLOAT <= d <= hi + _FLOAT


@pytest.mark.parametrize("p, k, count", [(0.5, 3, 2), (0.3, 4, 3), (0.8, 5, 1), (0.6, 3, 4)])
def test_k_ary_randomized_response_composes_with_its_zero_loss_outcomes(p, k, count):
    h = 1e-3
    ev = _ev.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)
    ev = ev if count == 1 else _ev.SelfComposedDpEvent(ev, count)
    loss = math.log((1 - p + p / k) / (p / k))
    assert count * loss <= epsilon_of(ev, 0.0, discretization=h) <= count * (loss + h) + _FLOAT
    for eps in (0.1, 0.5 * loss, loss, 1.5 * loss):
        got = delta_of(ev, eps, discretization=h)
        lo, hi = _rr_delta(p, k, count, eps), _rr_delta(p, k, count, eps - count * h)
        assert lo - _FLOAT <= got <= hi + _FLOAT, (eps, lo, got, hi)


@given(p=st.floats(min_value=1e-300, max_value=1.0, exclude_max=True),
       k=st.integers(min_value=2, max_value=10_000))
def test_randomized_response_atoms_never_understate_the_loss_of_this_p(p, k):
    # the exact loss of k-ary randomized response with this float p, to 60 digits
    with localcontext() as ctx:
        ctx.prec = 60
        pk = Decimal(p) / k
        exact = ((1 - Decimal(p) + pk) / pk).ln()
    losses, masses = _rr_atoms(p, k)
    assert Decimal(losses[0]) >= exact and losses[1] == -losses[0]
    # a rounding margin, not a bias: a few ulps of the terms whose rounding it covers (the
    # two logarithms, and top's relative error, which 1/top bounds)
    top = 1 - p + p / k
    scale = abs(math.log(top)) + abs(math.log(p / k)) + 1 / top + 1
    assert Decimal(losses[0]) - exact <= Decimal(1e-15 * scale)
    assert masses[:2] == [1 - p + p / k, p / k]
    # P-masses of a distribution: three roundings of terms at most 1, each within 2 ulps
    assert math.fsum(masses) == pytest.approx(1.0, abs=8 * 2.0**-53)


def _pair_delta(losses, masses, eps: float) -> float:
    return float(sum(w * max(0.0, -math.expm1(eps - x))
                     for x, w in zip(losses, masses, strict=True)))


@pytest.mark.parametrize("h, m", [(0.01, 56), (0.01, 111), (0.03, 17), (0.007, 40)])
def test_finite_pair_pld_is_exact_at_grid_points_and_never_below_the_largest_loss(h, m):
    # losses on the grid and between grid points; for (0.01, 56) and (0.01, 111), (-m*h)/h
    # rounds just below -m, so floor gives -(m+1) with the loss a full step above it: all of
    # its mass goes to the grid point above and the PMF must start there, one step higher
    for loss in (m * h, m * h + 0.37 * h):
        masses = [math.exp(loss) / (1 + math.exp(loss)), 1 / (1 + math.exp(loss))]
        losses = [loss, -loss]
        pld = _pld_of_finite_pair(losses, masses, h)
        assert loss - _FLOAT <= pld.get_epsilon_for_delta(0.0) <= loss + h + _FLOAT
        for j in range(0, m + 3, max(1, m // 7)):
            assert pld.get_delta_for_epsilon(j * h) == pytest.approx(
                _pair_delta(losses, masses, j * h), abs=_FLOAT)


# -- query.py: delta_of --------------------------------------------------------------------------
@pytest.mark.parametrize("sigma, eps", [(1.0, 0.5), (2.0, 1.0), (0.5, 3.0)])
def test_gaussian_delta_is_the_exact_gaussian_mechanism_delta(sigma, eps):
    ev = gaussian_event(sigma)
    h = 1e-3
    got = delta_of(ev, eps, discretization=h)
    # pessimistic; a loss rounded up by at most h: delta_exact(eps) <= got <= delta_exact(eps - h)
    assert _gaussian_delta(sigma, eps) - _FLOAT <= got <= _gaussian_delta(sigma, eps - h) + _FLOAT
    # the requested grid is the one used: dp_accounting's PLD of this Gaussian on it
    coarse = 0.05
    ref = dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=sigma, value_discretization_interval=coarse)
    assert delta_of(ev, eps, discretization=coarse) == pytest.approx(
        ref.get_delta_for_epsilon(eps), rel=1e-9, abs=_FLOAT)
    # the RDP method is the RDP conversion of alpha / (2 sigma^2): a looser, valid bound
    orders = np.asarray(RDP_ORDERS, dtype=float)
    rdp = dp_accounting.rdp.rdp_privacy_accountant.compute_delta(
        orders, orders / (2 * sigma ** 2), eps)[0]
    assert delta_of(ev, eps, method="rdp") == pytest.approx(rdp, rel=1e-12)
    assert delta_of(ev, eps, method="rdp") >= _gaussian_delta(sigma, eps)


def test_delta_is_clamped_to_a_probability_and_zero_for_a_no_op():
    assert delta_of(_ev.NoOpDpEvent(), 0.1) == 0.0
    assert delta_of(compose([gaussian_event(1.0), _ev.NonPrivateDpEvent()]), 0.1) == 1.0
    assert 0.0 <= delta_of(gaussian_event(1e-3), 1e-3) <= 1.0


# -- rdp.py: rdp_curve ---------------------------------------------------------------------------
@pytest.mark.parametrize("counts", [(1,), (2,), (3,), (2, 1), (1, 2, 5)])
def test_gaussian_rdp_curve_is_the_sum_of_alpha_over_two_k_squared(counts):
    pairs = list(zip((1.5, 3.0, 0.8)[:len(counts)], counts, strict=True))
    ledger = compose([gaussian_event(s, c) for s, c in pairs])
    orders = (1.5, 2.0, 8.0, 64.0)
    want = sum(c * np.asarray(orders) / (2 * s * s) for s, c in pairs)
    np.testing.assert_allclose(rdp_curve(ledger, orders), want, rtol=1e-12)


# -- round three: the PLD's leaves (pld._leaf_pld, _leaf_scales, build_pld) --------------------
_SAMPLED = _ev.PoissonSampledDpEvent


@pytest.mark.parametrize("event", [
    _ev.GaussianDpEvent(0.0), _ev.LaplaceDpEvent(0.0), _ev.RandomizedResponseDpEvent(0.0, 3),
    _SAMPLED(0.3, _ev.GaussianDpEvent(0.0)), _SAMPLED(0.3, _ev.LaplaceDpEvent(0.0)),
    _ev.ComposedDpEvent([_ev.GaussianDpEvent(2.0), _ev.SelfComposedDpEvent(
        _ev.LaplaceDpEvent(0.0), 3)]),
], ids=["gauss", "laplace", "rr", "sampled-gauss", "sampled-laplace", "composed"])
def test_a_leaf_without_noise_is_not_private_by_the_pld(event):
    """A Gaussian or Laplace leaf of multiplier 0 (sampled or not), or randomized response
    that always lies (``p = 0``), releases its input: epsilon and delta are infinite / 1,
    never an error (these raised ZeroDivisionError while choosing the grid)."""
    assert epsilon_of(event, 1e-5, "pld") == math.inf
    assert delta_of(event, 1.0, "pld") == 1.0


@pytest.mark.parametrize("event", [
    _ev.RandomizedResponseDpEvent(1.0, 4), _ev.RandomizedResponseDpEvent(0.5, 1),
    _SAMPLED(0.0, _ev.GaussianDpEvent(0.5)), _SAMPLED(0.0, _ev.LaplaceDpEvent(0.5)),
], ids=["rr-uniform", "rr-one-bucket", "sampled-never-gauss", "sampled-never-laplace"])
def test_a_leaf_that_reveals_nothing_costs_nothing_by_the_pld(event):
    assert epsilon_of(event, 1e-5, "pld") == 0.0


@pytest.mark.parametrize("event", [
    _ev.GaussianDpEvent(1.0),
    _ev.SelfComposedDpEvent(_ev.GaussianDpEvent(1.0), 3),
    _SAMPLED(0.02, _ev.GaussianDpEvent(1.0)),
    _ev.SelfComposedDpEvent(_SAMPLED(0.02, _ev.GaussianDpEvent(1.0)), 3),
    _SAMPLED(0.02, _ev.LaplaceDpEvent(1.0)),
    _ev.SelfComposedDpEvent(_SAMPLED(0.02, _ev.LaplaceDpEvent(1.0)), 3),
    _ev.SelfComposedDpEvent(_SAMPLED(0.02, _ev.LaplaceDpEvent(1.0)), 50),
    _ev.ComposedDpEvent([_ev.GaussianDpEvent(1.0), _ev.LaplaceDpEvent(1.0)]),
], ids=["gauss", "gauss-x3", "sampled-gauss", "sampled-gauss-x3", "sampled-laplace",
        "sampled-laplace-x3", "sampled-laplace-x50", "gauss+laplace"])
def test_pld_leaves_match_dp_accountings_pld_accountant(event):
    """Every leaf kind the PLD method builds by hand (and its repeats, by direct convolution
    up to 4 copies and by self-composition beyond) against dp_accounting's own
    ``PLDAccountant`` at a finer grid: the same epsilon within 1e-3 relative (the automatic
    grid's documented accuracy is about 1e-4 of the loss's moments; both are pessimistic; an
    unamplified sampled leaf would be several times larger)."""
    from dp_accounting.pld import pld_privacy_accountant

    reference = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-5)
    reference.compose(event)
    assert epsilon_of(event, 1e-5, "pld") == pytest.approx(reference.get_epsilon(1e-5),
                                                            rel=1e-3)


def test_an_event_the_pld_cannot_build_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^event ZCDpEvent\(rho=0\.5, xi=0\.0\) is not "
                       r"supported by the PLD method \(zCDP events need method='rdp'\)$"):
        epsilon_of(_ev.ZCDpEvent(0.5), 1e-5, "pld")
    with pytest.raises(ValueError, match=r"^event SingleEpochTreeAggregationDpEvent\(.*\) is "
                       r"not supported by the PLD method$"):
        epsilon_of(_ev.SingleEpochTreeAggregationDpEvent(1.0, 4), 1e-5, "pld")

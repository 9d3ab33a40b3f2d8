"""Tests added to kill surviving mutants of the private ridge sums, the private off-policy
estimators, peeling and the accounting conversions (scripts/mutation.sh,
docs/mutation-report.md): each pins a contract (a noise law, a sensitivity attained by a
neighbouring pair, a conversion against a closed form or dp_accounting) whose mutation
changed the noise drawn, a sensitivity or a claim.

Spread tests: ``sum(z^2) / sigma^2`` over ``N`` standardized noise coordinates is chi-square
with ``N`` degrees of freedom; it is compared with the exact two-sided chi-square quantiles at
``p = 1e-9`` (about ``N (1 +/- 6.1 sqrt(2/N))``: +/- 11 % at N = 6,000), fixed seeds, so a
noise cut to 0.8 of its sd (-36 % in the statistic) fails and a false alarm has probability
1e-9."""

from __future__ import annotations

import math
from fractions import Fraction

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from dpbandits.envs.logged import LoggedBandit
from dpbandits.offpolicy.private import PrivateEstimator, _up
from dpbandits.privacy import peeling
from dpbandits.privacy.accounting import (
    GeneralizedGaussianDpEvent,
    GeneralizedGaussianTreeDpEvent,
    WishartTreeDpEvent,
    closed_form,
    compose,
    conversions,
    epsilon_of,
    gaussian_event,
    wishart,
)
from dpbandits.privacy.accounting.events import flatten, svrg_event, wor_gaussian_event
from dpbandits.private_ridge import (
    noisy_arm_sums,
    normalized_rows,
    ridge_parts,
    unit_rows,
    whitened_terms,
)

P_VALUE = 1e-9


def _assert_chi_square(name: str, standardized: np.ndarray) -> None:
    """``standardized``: noise coordinates over their declared sd, N(0, 1) i.i.d."""
    n = standardized.size
    stat = float(np.sum(standardized ** 2))
    lo, hi = stats.chi2.ppf(P_VALUE / 2, n), stats.chi2.isf(P_VALUE / 2, n)
    assert lo <= stat <= hi, (f"{name}: sum z^2/sigma^2 = {stat:.1f} over {n} coordinates "
                              f"(ratio {stat / n:.3f}), outside [{lo:.1f}, {hi:.1f}]")


# -- dpbandits/private_ridge.py ----------------------------------------------------------------
def _ridge_data(rng: np.random.Generator, n: int = 40, d: int = 3, k: int = 4):
    u = rng.normal(size=(n, d))
    u /= np.maximum(1.0, np.linalg.norm(u, axis=1))[:, None]
    return u, rng.uniform(-2.0, 2.0, n), rng.integers(0, k, n)


def test_noisy_arm_sums_are_the_per_arm_sums_plus_data_independent_noise():
    # the noise is drawn the same whatever the data (same seed, same draws), so the release
    # on the data minus the release on zero data is the noiseless sums, per arm
    rng = np.random.default_rng(3)
    u, y, arms = _ridge_data(rng)
    k, d = 4, u.shape[1]
    g1, t1 = noisy_arm_sums(u, y, arms, k, 0.7, 1.3, np.random.default_rng(9))
    g0, t0 = noisy_arm_sums(np.zeros_like(u), np.zeros_like(y), arms, k, 0.7, 1.3,
                            np.random.default_rng(9))
    gram = np.zeros((k, d, d))
    target = np.zeros((k, d))
    for ui, yi, a in zip(u, y, arms, strict=True):
        gram[a] += np.outer(ui, ui)
        target[a] += yi * ui
    np.testing.assert_allclose(g1 - g0, gram, rtol=0, atol=1e-12)
    np.testing.assert_allclose(t1 - t0, target, rtol=0, atol=1e-12)


def test_noisy_arm_sums_draw_the_declared_independent_noise():
    # zero data: the release is the noise. Gram: symmetric, diagonal sd sigma_gram,
    # off-diagonal sd sigma_gram / sqrt 2, independent across arms (a noise shared by the
    # arms would release the difference of two arms' sums exactly); target sd sigma_target.
    k, d, sg, st = 2000, 4, 0.37, 2.9
    gram, target = noisy_arm_sums(np.zeros((1, d)), np.zeros(1), np.zeros(1, dtype=np.int64),
                                  k, sg, st, np.random.default_rng(2026))
    np.testing.assert_array_equal(gram, np.swapaxes(gram, 1, 2))
    iu, ju = np.triu_indices(d, 1)
    diag = gram[:, np.arange(d), np.arange(d)]
    _assert_chi_square("gram diagonal", diag / sg)                  # N = 8,000
    _assert_chi_square("gram off-diagonal", gram[:, iu, ju] / (sg / math.sqrt(2.0)))  # 12,000
    _assert_chi_square("target", target / st)                       # N = 8,000
    # arms independent: the difference of two arms' noise has twice the variance
    _assert_chi_square("gram diagonal, arm differences",
                       (diag[0::2] - diag[1::2]) / (sg * math.sqrt(2.0)))  # N = 4,000


def test_unit_rows_scale_by_the_bound_and_clip_to_the_unit_ball():
    rng = np.random.default_rng(4)
    L = 2.5
    x = rng.normal(size=(200, 3)) * rng.choice([0.1, 1.0, 10.0], (200, 1))
    x[0] = [L, 0.0, 0.0]  # exactly on the bound: inside, not marked
    u, marks = unit_rows(x, L)
    norms = np.linalg.norm(x, axis=1)
    np.testing.assert_array_equal(marks, norms > L)
    assert not marks[0]
    assert np.all(np.linalg.norm(u, axis=1) <= 1.0)
    inside = ~marks
    np.testing.assert_allclose(u[inside], x[inside] / L, rtol=1e-12)  # a few ulps of margin
    # rows over the bound keep their direction and land on the unit sphere
    np.testing.assert_allclose(u[marks], x[marks] / norms[marks, None], rtol=1e-12)


def test_normalized_rows_clip_rewards_to_the_symmetric_bound_and_mark_them():
    x = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 1.0]])
    r = np.array([-5.0, 0.5, 2.0])
    u, y, cx, cr = normalized_rows(x, r, 1.0, 1.5)
    np.testing.assert_array_equal(y, [-1.5, 0.5, 1.5])
    np.testing.assert_array_equal(cr, [True, False, True])
    np.testing.assert_array_equal(cx, [True, False, False])
    np.testing.assert_allclose(u, [[0.6, 0.8], [0.3, 0.4], [0.0, 1.0]], rtol=1e-12)


@pytest.mark.parametrize("off_diagonal", [math.sqrt(2.0), 1.0])
def test_whitened_terms_are_each_users_terms_in_its_arms_block_in_the_noise_metric(
        off_diagonal):
    # the contributions hooks' rows: a user's u u^T (upper triangle, off-diagonals times
    # off_diagonal) over sigma_gram and y u over sigma_target, in its arm's block, zero
    # elsewhere; with off_diagonal = sqrt 2 the row norm is the Frobenius/l2 move in the
    # noise metric of noisy_arm_sums
    rng = np.random.default_rng(6)
    u, y, arms = _ridge_data(rng, n=12, d=3, k=3)
    sg, st = 0.5, 4.0
    rows = whitened_terms(u, y, arms, 3, off_diagonal, sg, st)
    iu, ju = np.triu_indices(3)
    width = iu.size + 3
    assert rows.shape == (12, 3 * width)
    for i in range(12):
        expect = np.zeros((3, width))
        outer = np.outer(u[i], u[i])[iu, ju]
        expect[arms[i], :iu.size] = outer * np.where(iu == ju, 1.0, off_diagonal) / sg
        expect[arms[i], iu.size:] = y[i] * u[i] / st
        np.testing.assert_allclose(rows[i], expect.ravel(), rtol=1e-14, atol=0)
        if off_diagonal == math.sqrt(2.0):
            metric = math.hypot(np.linalg.norm(np.outer(u[i], u[i])) / sg,
                                np.linalg.norm(y[i] * u[i]) / st)
            assert np.linalg.norm(rows[i]) == pytest.approx(metric, rel=1e-13)


def test_ridge_parts_solve_the_ridge_system_and_raise_the_spectrum():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(2, 3, 3))
    gram = a @ np.swapaxes(a, 1, 2) - 0.5 * np.eye(3)  # symmetric, may be indefinite
    target = rng.normal(size=(2, 3))
    shift, floor, extra_floor = 0.3, 0.2, 5.0
    theta, v_inv, logdet, raised, extra = ridge_parts(gram, target, shift, floor, extra_floor)
    logdets, any_raised = 0.0, False
    for k in range(2):
        w, q = np.linalg.eigh(gram[k] + shift * np.eye(3))
        any_raised |= bool((w < floor).any())
        v = q @ np.diag(np.maximum(w, floor)) @ q.T
        np.testing.assert_allclose(v_inv[k], np.linalg.inv(v), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(theta[k], np.linalg.solve(v, target[k]), rtol=1e-10,
                                   atol=1e-12)
        big = q @ np.diag(np.maximum(w, extra_floor)) @ q.T
        np.testing.assert_allclose(extra[k], np.linalg.inv(big), rtol=1e-10, atol=1e-12)
        logdets += math.log(np.linalg.det(v))
    assert logdet == pytest.approx(logdets, rel=1e-10)
    assert bool(raised) == any_raised
    assert ridge_parts(gram, target, shift, floor)[4] is None


# -- dpbandits/offpolicy/private.py ---------------------------------------------------------------
def _log(rounds, k=2):
    """A log from ``(arm, reward, propensity)`` rounds, zero contexts."""
    arms, rewards, props = zip(*rounds, strict=True)
    return LoggedBandit(np.zeros((len(rounds), 1)), list(arms), list(rewards), list(props), k)


def _move(est, rounds0, rounds1, pis, q=None):
    """``||f(D') - f(D)||`` for two logs of rounds with the target probabilities ``pis``."""
    s0, s1 = (est.statistic(_log(r), pis, q)[0] for r in (rounds0, rounds1))
    return float(np.linalg.norm(s1 - s0))


# reward ranges where each branch of the sensitivities is the largest
RANGES = [(0.0, 1.0), (-2.0, 0.5), (0.25, 3.0), (-3.0, -2.0), (-0.5, 4.0)]
N_SMALL = 4


@pytest.mark.parametrize("reward_range", RANGES)
def test_ips_and_snips_sensitivities_are_attained_by_a_neighbouring_pair(reward_range, m=7.5):
    # a round's term (w~ r~, w~) ranges over the corners (0, 0) (target never plays the
    # logged arm), (M lo, M) and (M hi, M) (weight clipped at M, reward at an end); the
    # declared sensitivity is the largest move between two corners, attained here
    lo, hi = reward_range
    rest = [(1, 0.5 * (lo + hi), 0.5)] * (N_SMALL - 1)
    pis = np.tile([1.0, 0.0], (N_SMALL, 1))
    off = pis.copy()
    off[0] = [0.0, 1.0]
    corners = [((0, lo, 1e-3), off), ((0, lo, 1e-3), pis), ((0, hi, 1e-3), pis)]
    for name in ("ips", "snips"):
        est = PrivateEstimator(name, epsilon=1.0, delta=1e-5, max_weight=m,
                               reward_range=reward_range)
        worst = 0.0
        for (r0, p0), (r1, p1) in [(a, b) for a in corners for b in corners]:
            s0 = est.statistic(_log([r0, *rest]), p0)[0]
            s1 = est.statistic(_log([r1, *rest]), p1)[0]
            worst = max(worst, float(np.linalg.norm(s1 - s0)))
        assert worst == pytest.approx(est.sensitivity(N_SMALL), rel=1e-9), name


@pytest.mark.parametrize("reward_range", RANGES)
def test_dr_sensitivity_is_attained_by_a_neighbouring_pair(reward_range, m=7.5):
    # term = baseline + w~ (r~ - q~_a): the largest hi + M (hi - lo) (baseline hi, reward hi,
    # prediction lo on the logged arm), the smallest lo - M (hi - lo); the target puts
    # 1e-9 on the logged arm (weight M at propensity 1e-9 / M), the rest on the other arm
    lo, hi = reward_range
    a = 1e-9
    est = PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=m,
                           reward_range=reward_range, reward_model="disjoint")
    pis = np.tile([a, 1.0 - a], (N_SMALL, 1))
    rest = [(1, lo, 0.5)] * (N_SMALL - 1)
    q_hi = np.tile([0.5 * (lo + hi)] * 2, (N_SMALL, 1))  # the other rounds: same predictions
    q_lo = q_hi.copy()
    q_hi[0], q_lo[0] = (lo, hi), (hi, lo)  # baseline ~hi and prediction lo, or the reverse
    s0 = est.statistic(_log([(0, hi, a / m), *rest]), pis, q_hi)[0]
    s1 = est.statistic(_log([(0, lo, a / m), *rest]), pis, q_lo)[0]
    # (hi + M (hi - lo)) - (lo - M (hi - lo)) up to the 1e-9 of the baseline on arm 0
    assert float(s0[0] - s1[0]) == pytest.approx(est.sensitivity(N_SMALL), rel=1e-8)


def test_dr_baseline_is_cut_to_the_range_when_the_targets_sum_above_one():
    # target rows may sum to 1 + 1e-9 (accepted): without the cut of the baseline sum_k pi_k q_k to
    # [lo, hi], one replaced round moves the DR query past its sensitivity (by ~1e-9)
    lo, hi, m, a = -1.0, 1.0, 1.0, 1e-12
    est = PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=m,
                           reward_range=(lo, hi), reward_model="disjoint")
    pis = np.tile([a, 1.0 + 0.9e-9 - a], (N_SMALL, 1))  # accepted: within 1e-9
    rest = [(1, 0.0, 0.5)] * (N_SMALL - 1)
    q_top, q_bottom = np.zeros((N_SMALL, 2)), np.zeros((N_SMALL, 2))
    q_top[0], q_bottom[0] = (lo, hi), (hi, lo)
    s0 = est.statistic(_log([(0, hi, a / m), *rest]), pis, q_top)[0]
    s1 = est.statistic(_log([(0, lo, a / m), *rest]), pis, q_bottom)[0]
    assert abs(float(s0[0] - s1[0])) <= est.sensitivity(N_SMALL)


U = 2.0**-53


def _rounding_bound(name: str, n: int, m: float, lo: float, hi: float) -> Fraction:
    """What floating point can add to one replaced round's move (the derivation in
    ``_rounding_allowance``'s docstring): ``12 u T`` for the means, ``T`` a bound on a round's
    term; ``2 u (sqrt 2 n + 1) T'`` for SNIPS's pair of sums (sqrt 2 < 1.5 here)."""
    r = Fraction(max(abs(lo), abs(hi)))
    fm, flo, fhi = Fraction(m), Fraction(lo), Fraction(hi)
    if name == "snips":
        return 2 * Fraction(U) * (Fraction(3, 2) * n + 1) * fm * max(r, Fraction(1))
    term = fm * r if name == "ips" else r + fm * (fhi - flo)
    return 12 * Fraction(U) * term


def _exact_sensitivity(name: str, n: int, m: float, lo: float, hi: float) -> Fraction:
    fm, flo, fhi = Fraction(m), Fraction(lo), Fraction(hi)
    if name == "ips":
        return fm * (max(fhi, Fraction(0)) - min(flo, Fraction(0))) / n
    if name == "dr":
        return (fhi - flo) * (1 + 2 * fm) / n
    return fm * max(Fraction(math.hypot(1.0, lo)), Fraction(math.hypot(1.0, hi)), fhi - flo)


@pytest.mark.parametrize("name", ["ips", "snips", "dr"])
@pytest.mark.parametrize("m, lo, hi", [
    (1.0, 0.0, 1.0), (1e-3, -1.0, 1.0), (5.0, -1.0, 1.0), (1e3, 1e70, 1e70 + 1e56),
    (2.0, -1e70, -1e70 + 1e55), (1e75, 0.0, 1e-75), (7.0, 3.0, 1e3)])
def test_sensitivity_covers_the_exact_move_plus_the_rounding_of_one_round(name, m, lo, hi):
    # in rational arithmetic: sensitivity(n) >= Delta + the derived rounding bound (hypot is
    # within an ulp: the comparison uses Delta's own rounding, covered by the allowance's room)
    est = PrivateEstimator(name, epsilon=1.0, delta=1e-5, max_weight=m, reward_range=(lo, hi))
    for n in (1, 4, 1000, 10**6):
        need = _exact_sensitivity(name, n, m, lo, hi) + _rounding_bound(name, n, m, lo, hi)
        assert Fraction(est.sensitivity(n)) >= need, n


def test_up_never_lands_below_the_real_product_it_stands_for():
    # _up(fl(a b c)) >= a b c exactly, for products of three correctly rounded floats (the
    # sensitivities and noise scales it raises), over 4,000 random mantissas and exponents
    rng = np.random.default_rng(12)
    for a, b, c in rng.uniform(1.0, 2.0, (4_000, 3)) * 2.0 ** rng.integers(-60, 60, (4_000, 3)):
        x = a * b * c
        assert Fraction(_up(x)) >= Fraction(a) * Fraction(b) * Fraction(c), (a, b, c)
    assert _up(1.0) > 1.0 and _up(3.5e-300) > 3.5e-300


def test_private_dr_features_and_targets_respect_their_bounds_exactly():
    # the model's sensitivities assume ||z||_2 <= 1 and |y| <= B = model_target / 2 for the
    # floats used. A range whose centring rounds puts hi - centre (first range) or
    # centre - lo (second) an ulp of the centre beyond (hi - lo) / 2 unless clipped
    est = PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=2.0, context_bound=2.0)
    x = np.array([[2.0, 0.0], [0.0, -2.0], [1.2, 1.6], [0.2, 0.4], [300.0, -400.0]])
    z = est._features(x)
    for row in z:
        assert sum(Fraction(v) ** 2 for v in row) <= 1
    expect = np.hstack([x / 2.0, np.ones((5, 1))]) / math.sqrt(2.0)
    expect[4, :2] = [0.6 / math.sqrt(2.0), -0.8 / math.sqrt(2.0)]  # clipped to ||x|| = L
    np.testing.assert_allclose(z, expect, rtol=1e-12)
    for lo, hi in [(0.7148085531751387, 0.714815849729603),
                   (-2.8440960658185954, -2.522226674742653)]:
        est = PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=2.0,
                               reward_range=(lo, hi))
        half = Fraction(est.plan.sensitivities["model_target"]) / 2
        assert half >= (Fraction(hi) - Fraction(lo)) / 2
        y = est._targets(np.array([lo, hi, -1e308, 1e308, 0.5 * (lo + hi)]))
        assert all(abs(Fraction(v)) <= half for v in y)
        np.testing.assert_allclose(y, [-(hi - lo) / 2, (hi - lo) / 2, -(hi - lo) / 2,
                                       (hi - lo) / 2, 0.0], rtol=0, atol=1e-15)
    model = est.private_reward_model(_log([(0, lo, 0.5), (1, hi, 0.5)]), rng=0)
    assert model.centre == pytest.approx(0.5 * (lo + hi), rel=1e-15)


def test_private_dr_model_noise_is_the_plans_multiplier_on_attained_sensitivities():
    # one replaced round moves the Gram sums by sqrt 2 in Frobenius norm (contexts +-x on
    # the sphere: z and z' orthogonal) and the target sums by hi - lo = 2B (rewards lo and
    # hi, same context): the plan's sensitivities, attained. The noise (sigma_gram,
    # sigma_target) makes the pair one Gaussian mechanism of multiplier model_multiplier:
    # hypot(s_gram / sigma_gram, s_target / sigma_target) = 1 / k, not above (privacy) nor
    # below by more than rounding (the claim is the noise's)
    est = PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=2.0,
                           reward_range=(-1.0, 3.0), context_bound=1.0, model_share=0.3)
    sens = est.plan.sensitivities

    def sums(x0, r0):
        log = LoggedBandit(np.array([x0, [0.0], [0.0]]), [0, 0, 0], [r0, 1.0, 1.0],
                           [0.5] * 3, 2)
        return est.model_sums(log)

    (g0, _), (g1, _) = sums([1.0], 1.0), sums([-1.0], 1.0)
    assert np.linalg.norm(g1 - g0) == pytest.approx(sens["model_gram"], rel=1e-12)
    (_, b0), (_, b1) = sums([1.0], -1.0), sums([1.0], 3.0)
    assert np.linalg.norm(b1 - b0) == pytest.approx(sens["model_target"], rel=1e-12)
    assert sens["model_target"] == pytest.approx(4.0, rel=1e-15)
    sg, st = est.model_noise()
    inv_k = 1.0 / est.model_multiplier
    metric = math.hypot(sens["model_gram"] / sg, sens["model_target"] / st)
    assert inv_k * (1 - 1e-12) <= metric <= inv_k


# -- dpbandits/privacy/accounting/conversions.py -------------------------------------------------
GDP_POINTS = [(0.5, 0.3), (1.0, 1.0), (2.0, 0.5), (0.2, 2.0), (3.0, 4.0)]  # (mu, epsilon)


@pytest.mark.parametrize("mu, eps", GDP_POINTS)
def test_gdp_delta_is_the_closed_form_of_dong_roth_su(mu, eps):
    # Corollary 2.13: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), evaluated
    # directly (no cancellation at these points)
    direct = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert conversions.gdp_delta(mu, eps) == pytest.approx(direct, rel=1e-9)
    assert conversions._gdp_delta(mu, 0.0) == pytest.approx(
        2 * stats.norm.cdf(mu / 2) - 1, rel=1e-9)  # total variation at eps = 0


@pytest.mark.parametrize("mu, delta", [(0.5, 1e-5), (1.0, 1e-6), (3.0, 1e-3), (0.1, 0.2)])
def test_gdp_epsilon_is_the_smallest_epsilon_at_delta(mu, delta):
    eps = conversions.gdp_epsilon(mu, delta)
    tv = 2 * stats.norm.cdf(mu / 2) - 1
    if delta >= tv:
        assert eps == 0.0
        return
    assert conversions.gdp_delta(mu, eps) <= delta
    assert conversions.gdp_delta(mu, eps * (1 - 1e-9)) > delta  # and not loose


@pytest.mark.parametrize("kind, eps, delta", [
    ("gdp", 0.1, 1e-5), ("gdp", 1.0, 1e-5), ("gdp", 1.0, 1e-9), ("gdp", 8.0, 1e-3),
    ("gdp", 30.0, 1e-6), ("zcdp", 0.5, 1e-5), ("zcdp", 1.0, 1e-6), ("zcdp", 5.0, 1e-3)])
def test_the_conversions_give_the_largest_parameter_certifying_the_target(kind, eps, delta):
    # computed without the store and through it: the parameter is (eps, delta)-DP, one a
    # little larger is not (1e-9 for mu, 1e-6 for rho); the confirmation accepts exactly it
    if kind == "gdp":
        searches = (conversions._gdp_mu, conversions.gdp_mu)
        confirms, step = conversions._is_gdp_mu, 1e-9

        def certifies(v):
            return conversions._gdp_delta(v, eps) <= delta
    else:
        searches = (conversions._zcdp_rho, conversions.zcdp_rho)
        confirms, step = conversions._is_zcdp_rho, 1e-6

        def certifies(v):
            return conversions.zcdp_epsilon(v, delta) <= eps
    for v in (search(eps, delta) for search in searches):
        assert certifies(v) and not certifies(v * (1 + step))
        assert confirms(v, eps, delta)
        assert not confirms(v * (1 + 1e-6), eps, delta)
        assert not confirms(v * (1 - 1e-6), eps, delta)

@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_pure_and_bounded_range_to_zcdp_are_the_papers_constants(eps):
    # Bun & Steinke 2016 Prop. 1.4: eps^2 / 2; Cesar & Rogers 2021: eps^2 / 8
    assert conversions.pure_dp_to_zcdp(eps) == pytest.approx(eps * eps / 2, rel=1e-15)
    assert conversions.bounded_range_to_zcdp(eps) == pytest.approx(eps * eps / 8, rel=1e-15)


@pytest.mark.parametrize("kwargs", [{"estimator": "ips"}, {"estimator": "dr", "model_share": 0.3}])
def test_the_plans_noise_is_the_smallest_the_accountant_certifies(kwargs):
    # the calibration's search steps by 1 + 1e-4: noise 2e-4 below the plan's (every event of
    # the ledger) no longer certifies the claim, the plan's does
    est = PrivateEstimator(epsilon=1.0, delta=1e-5, max_weight=5.0, **kwargs)
    scales = [e.noise_multiplier for e in getattr(est.ledger, "events", [est.ledger])]
    assert scales == ([est.model_multiplier, est.multiplier] if est.model_multiplier
                      else [est.multiplier])
    assert epsilon_of(compose([gaussian_event(k) for k in scales]), 1e-5) <= 1.0 * (1 + 1e-9)
    cut = compose([gaussian_event(k / (1 + 2e-4)) for k in scales])
    assert epsilon_of(cut, 1e-5) > 1.0


def test_constructor_parameters_round_trip_and_their_bounds_are_the_documented_ones():
    est = PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=5.0, reward_model="private",
                           context_bound=3.0, model_ridge=1.0)
    params = est.get_params()
    assert params["reward_model"] == "private" and params["context_bound"] == 3.0
    assert params["model_ridge"] == 1.0
    assert PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=5.0).model_ridge == 1.0
    # reward_range: width >= 1e-75 and |endpoints| <= 1e75 accepted at the edges
    PrivateEstimator("ips", epsilon=1.0, delta=1e-5, max_weight=5.0, reward_range=(0.0, 1e-75))
    PrivateEstimator("ips", epsilon=1.0, delta=1e-5, max_weight=5.0, reward_range=(-1e75, 1e75))
    for bad in [(1e-70, 1e-70 + 1e-80), (0.0, 1.1e75)]:
        with pytest.raises(ValueError, match="reward_range must have width at least 1e-75"):
            PrivateEstimator("ips", epsilon=1.0, delta=1e-5, max_weight=5.0, reward_range=bad)
    for share in (0.0, -0.1, 1.0):
        with pytest.raises(ValueError, match="model_share"):
            PrivateEstimator("dr", epsilon=1.0, delta=1e-5, max_weight=5.0, model_share=share)


def test_ridge_parts_batch_their_log_determinants_and_raise_only_below_the_floor():
    rng = np.random.default_rng(10)
    a = rng.normal(size=(3, 2, 4, 4))
    gram = a @ np.swapaxes(a, -1, -2)
    logdet = ridge_parts(gram, np.zeros((3, 2, 4)), np.array([0.1, 1.0, 2.0]), 0.05)[2]
    assert logdet.shape == (3,)
    for b, s in enumerate([0.1, 1.0, 2.0]):
        expect = sum(np.linalg.slogdet(gram[b, k] + s * np.eye(4))[1] for k in range(2))
        assert logdet[b] == pytest.approx(expect, rel=1e-10)
    # an eigenvalue equal to the floor is not raised
    assert not ridge_parts(np.zeros((1, 2, 2)), np.zeros((1, 2)), 0.5, 0.5)[3]


# -- dpbandits/privacy/accounting/closed_form.py ---------------------------------------------
def _gg(sigma_over_s: float, kappa: float) -> GeneralizedGaussianDpEvent:
    return GeneralizedGaussianDpEvent(sigma_over_s, 2.0, 1.0, kappa, 1.0, 1e-6)


def _gg_tree(sigma_plus: float, kappa: float, sensitivity: float, nodes: int
             ) -> GeneralizedGaussianTreeDpEvent:
    return GeneralizedGaussianTreeDpEvent(sigma_plus, 2.0, 1.0, kappa, sensitivity, nodes,
                                          0.1, 1e-7)


def test_lemma_2_1_epsilon_composes_every_mechanism_by_hand():
    # eps(delta) = sum_i sqrt(2 kappa_i) s_i / sigma_i * sqrt(log(N / delta)), N the number
    # of mechanisms (a tree counts nodes_per_datum); parameters below 1 are valid
    a, b = _gg(40.0, 0.5), _gg_tree(30.0, 2.0, 0.5, 3)
    ledger = compose([a, a, b])
    c = 2 * math.sqrt(2 * 0.5) / 40.0 + 3 * math.sqrt(2 * 2.0) * 0.5 / 30.0
    delta = 1e-6
    expect = c * math.sqrt(math.log(5 / delta))
    assert closed_form.lemma_2_1_epsilon(ledger, delta) == pytest.approx(expect, rel=1e-12)
    assert closed_form.lemma_2_1_delta(ledger, expect) == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("kappa", [0.5, 2.0])
@pytest.mark.parametrize("tree", [False, True])
def test_lemma_2_1_is_trusted_exactly_where_each_mechanisms_epsilon_is_at_most_one(kappa, tree):
    # one mechanism: eps0(delta) = sqrt(2 kappa log(1/delta)) s / sigma; finite at 0.99,
    # inf at 1.01 (both directions of the delta conversion too)
    delta = 1e-5
    for target, finite in ((0.99, True), (1.01, False)):
        ratio = math.sqrt(2 * kappa * math.log(1 / delta)) / target  # sigma / s
        event = _gg_tree(2.0 * ratio, kappa, 2.0, 1) if tree else _gg(ratio, kappa)
        eps = closed_form.lemma_2_1_epsilon(event, delta)
        assert (eps == pytest.approx(target, rel=1e-12)) if finite else math.isinf(eps)
        got = closed_form.lemma_2_1_delta(event, target)
        assert (got == pytest.approx(delta, rel=1e-9)) if finite else got == 1.0


def test_lemma_2_1_delta_refuses_where_the_per_mechanism_epsilon_exceeds_one():
    # two mechanisms of c = 0.5 each (C = 1): at eps = 2.2, delta = 2 exp(-(2.2/1)^2) =
    # 0.0158 and each mechanism's eps0(delta / 2) = 1.1 > 1: not certified (1.0), although
    # eps0(2 delta) = 0.93 would pass
    event = compose([_gg(math.sqrt(2.0) / 0.5, 1.0)] * 2)
    assert closed_form.lemma_2_1_delta(event, 2.2) == 1.0
    assert closed_form.lemma_2_1_delta(event, 1.9) == pytest.approx(
        2 * math.exp(-(1.9 ** 2)), rel=1e-12)  # eps0 = 0.95 there
    zero = _gg_tree(1.0, 2.0, 0.0, 2)  # sensitivity 0: nothing leaks
    assert closed_form.lemma_2_1_delta(zero, 0.5) == 0.0
    one = _gg(math.sqrt(2.0), 1.0)  # C = 1 exactly
    assert closed_form.lemma_2_1_delta(one, 0.9) == pytest.approx(math.exp(-0.81), rel=1e-12)
    assert closed_form.lemma_2_1_delta(compose([one, dp_accounting.NonPrivateDpEvent()]),
                                       0.9) == 1.0


@pytest.mark.parametrize("bad", [
    dict(sigma=0.0), dict(sensitivity=-1.0), dict(kappa=0.0), dict(nodes=0)])
def test_lemma_2_1_events_with_invalid_noise_are_refused(bad):
    p = dict(sigma=10.0, kappa=1.0, sensitivity=1.0, nodes=1) | bad
    event = _gg_tree(p["sigma"], p["kappa"], p["sensitivity"], p["nodes"])
    with pytest.raises(ValueError, match="needs sigma > 0"):
        closed_form.lemma_2_1_epsilon(event, 1e-5)


# -- dpbandits/privacy/accounting/wishart.py ---------------------------------------------------
def _wishart(gap: int, nodes: int, scale: float = 1.0, bound: float = 1.0, dim: int = 3
             ) -> WishartTreeDpEvent:
    return WishartTreeDpEvent(dim=dim, degrees=dim + gap, scale=scale, row_bound_sq=bound,
                              nodes_per_datum=nodes)


def _kov_delta(eps: float, gap: int, n: int) -> float:
    """Sheffet's Theorem 4.1 per node, Kairouz, Oh & Viswanath's optimal composition over
    ``n`` nodes, written out from the papers and minimized over 20,000 per-node delta0 (50x
    finer than the check's grid, so never above the check's own minimum)."""
    d0 = np.geomspace(1e-15, math.exp(-1.0) * (1 - 1e-12), 20_000)
    e0 = np.sqrt(28.0 * np.log(4.0 / d0) / gap)
    d0, e0 = d0[e0 < 1.0], e0[e0 < 1.0]
    p = 1.0 / (1.0 + np.exp(-e0))
    q = 1.0 - p
    rr = sum(math.comb(n, k) * np.maximum(p ** (n - k) * q ** k
                                          - math.exp(eps) * q ** (n - k) * p ** k, 0.0)
             for k in range(n + 1))
    return float((1.0 - (1.0 - d0) ** n * (1.0 - rr)).min())


@pytest.mark.parametrize("gap, nodes, delta", [(20_000, 3, 1e-5), (5_000, 2, 1e-3),
                                               (100_000, 5, 1e-6)])
def test_wishart_tree_epsilon_and_delta_agree_with_the_composition_theorem(gap, nodes, delta):
    ev = _wishart(gap, nodes)
    eps = wishart.wishart_tree_epsilon(ev, delta)
    assert _kov_delta(eps, gap, nodes) <= delta  # certified by the theorems
    assert _kov_delta(0.99 * eps, gap, nodes) > delta  # and within 1% of the best
    got = wishart.wishart_tree_delta(ev, eps)
    fine = _kov_delta(eps, gap, nodes)
    assert fine * (1 - 1e-9) <= got <= 1.1 * fine  # a 400-point grid: within 10%


def test_wishart_tree_certifies_epsilon_zero_when_the_total_variation_allows_it():
    # 1 node, k - p = 20,000 at delta = 0.3: the optimal composition holds at eps = 0
    ev = _wishart(20_000, 1)
    assert _kov_delta(0.0, 20_000, 1) <= 0.3
    assert wishart.wishart_tree_epsilon(ev, 0.3) == 0.0


def test_wishart_tree_fields_are_validated_and_an_uncovered_scale_certifies_nothing():
    ok = _wishart(20_000, 1, dim=1)  # dim 1 and one node per datum are valid
    assert math.isfinite(wishart.wishart_tree_epsilon(ok, 1e-5))
    assert math.isfinite(wishart.wishart_tree_epsilon(_wishart(20_000, 2, 2.0, 2.0), 1e-5))
    uncovered = _wishart(20_000, 1, scale=0.5, bound=1.0)
    assert math.isinf(wishart.wishart_tree_epsilon(uncovered, 1e-5))
    assert wishart.wishart_tree_delta(uncovered, 1.0) == 1.0
    assert wishart.wishart_tree_delta(_wishart(10, 1), 1.0) == 1.0  # no delta0 works
    for bad in (dict(dim=0), dict(nodes_per_datum=0), dict(scale=0.0), dict(row_bound_sq=0.0)):
        fields = dict(dim=3, degrees=20_003, scale=1.0, row_bound_sq=1.0, nodes_per_datum=1)
        fields |= bad
        if "dim" in bad:
            fields["degrees"] = 20_000
        with pytest.raises(ValueError, match="needs dim >= 1"):
            wishart.wishart_tree_epsilon(WishartTreeDpEvent(**fields), 1e-5)


# -- dpbandits/privacy/accounting/events.py ------------------------------------------------------
def test_flatten_counts_every_leaf_once_per_composition():
    g, h = dp_accounting.GaussianDpEvent(2.0), dp_accounting.GaussianDpEvent(3.0)
    counts, non_private = flatten(compose([g, dp_accounting.NoOpDpEvent()]))
    assert counts == {g: 1} and non_private is False
    assert flatten(dp_accounting.SelfComposedDpEvent(g, 1))[0] == {g: 1}
    assert flatten(dp_accounting.SelfComposedDpEvent(g, 0)) == ({}, False)
    nested = compose([dp_accounting.SelfComposedDpEvent(compose([g, h]), 3), g])
    assert flatten(nested)[0] == {g: 4, h: 3}
    with pytest.raises(ValueError, match="count must be >= 0"):
        flatten(dp_accounting.SelfComposedDpEvent(g, -1))


def test_without_replacement_and_svrg_events_are_the_documented_compositions():
    inner = dp_accounting.SampledWithoutReplacementDpEvent(
        source_dataset_size=100, sample_size=5, event=dp_accounting.GaussianDpEvent(2.0))
    assert wor_gaussian_event(100, 5, 2.0) == inner
    assert flatten(wor_gaussian_event(100, 5, 2.0, count=2))[0] == {inner: 2}
    one = dp_accounting.SampledWithoutReplacementDpEvent(
        source_dataset_size=50, sample_size=1, event=dp_accounting.GaussianDpEvent(1.5))
    step = dp_accounting.ComposedDpEvent([one, dp_accounting.GaussianDpEvent(4.0)])
    assert svrg_event(50, 7, 1.5, 4.0) == dp_accounting.SelfComposedDpEvent(step, 7)


# -- dpbandits/privacy/peeling.py ------------------------------------------------------------------
def test_hard_threshold_keeps_the_largest_and_breaks_ties_to_the_lowest_index():
    v = np.random.default_rng(0).integers(-2, 3, (3, 200)).astype(float)
    out = peeling.hard_threshold(v, 50)
    for row, kept in zip(v, out, strict=True):
        order = sorted(range(200), key=lambda j: (-abs(row[j]), j))[:50]
        expect = np.zeros(200)
        expect[order] = row[order]
        np.testing.assert_array_equal(kept, expect)
    with pytest.raises(ValueError, match="s \\(sparsity\\)"):
        peeling.hard_threshold(v, 201)


def test_peel_scale_arrays_are_validated_and_zero_is_exact_thresholding():
    v = np.random.default_rng(1).normal(size=(4, 30))
    rng = np.random.default_rng(2)
    np.testing.assert_array_equal(peeling.peel(rng, v, 5, np.zeros(4)).values,
                                  peeling.hard_threshold(v, 5))
    with pytest.raises(ValueError, match="scale"):
        peeling.peel(rng, v, 5, np.array([1.0, 1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="scale"):
        peeling.peel(rng, v, 5, np.ones(5))


def test_peeling_calibration_parameters_and_methods():
    assert peeling.peeling_scale_theorem(math.inf, 1e-5, 3, 1.0) == 0.0
    with pytest.raises(ValueError, match="s \\(sparsity\\)"):
        peeling.peeling_scale_theorem(1.0, 1e-5, 0, 1.0)
    # s = 1 and the RDP method are accepted (validated before epsilon = inf returns no noise)
    assert peeling.peeling_noise_multiplier(math.inf, 1e-5, 1, method="rdp") == 0.0
    assert peeling.peeling_epsilon(3.0, 1, 1e-5, method="rdp") == epsilon_of(
        peeling.peeling_event(3.0, 1), 1e-5, "rdp")

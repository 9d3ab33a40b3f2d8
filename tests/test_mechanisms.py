"""Tests for dpbandits.privacy.mechanisms.

Statistical tests use fixed seeds; every tolerance comes from the sampling distribution of
the statistic at the given sample size (KS / chi-square p-values, chi-square quantiles of a
sample variance, normal bounds on a sample correlation), at a stated false-alarm level.
"""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution
from scipy import stats

from dpbandits.privacy import mechanisms as mech

ALPHA = 1e-3  # per-test false-alarm level of the statistical checks


def _lq_norm(z, q):
    return np.sum(np.abs(z) ** q, axis=-1) ** (1.0 / q)


def _var_bounds_known_mean(n, alpha):
    """Interval for (sum of n squared N(0, s^2) draws / n) / s^2: chi2(n)/n quantiles."""
    return stats.chi2.ppf(alpha / 2, n) / n, stats.chi2.ppf(1 - alpha / 2, n) / n


# ------------------------------------------------------------------ generalized Gaussian
@pytest.mark.parametrize("q_plus", [1.5, 2.0, 3.9])
@pytest.mark.parametrize("d", [1, 5, 50])
def test_generalized_gaussian_norm_is_gamma(q_plus, d):
    sigma, n = 1.7, 20_000
    rng = np.random.default_rng(1000 + d + int(10 * q_plus))
    z = mech.generalized_gaussian_noise(rng, sigma, q_plus, d, size=n)
    assert z.shape == (n, d)
    sq = _lq_norm(z, q_plus) ** 2
    p = stats.kstest(sq, stats.gamma(a=d / 2, scale=2 * sigma**2).cdf).pvalue
    assert p > ALPHA


def test_gamma_ks_check_has_power_against_the_paper_typo():
    # The paper's Gamma(d/2, 2 sigma) (instead of 2 sigma^2) must be rejected by the same test.
    sigma, d, n = 1.7, 5, 20_000
    rng = np.random.default_rng(7)
    z = mech.generalized_gaussian_noise(rng, sigma, 3.0, d, size=n)
    sq = _lq_norm(z, 3.0) ** 2
    assert stats.kstest(sq, stats.gamma(a=d / 2, scale=2 * sigma).cdf).pvalue < 1e-10


@pytest.mark.parametrize("q_plus", [1.5, 3.9])
def test_generalized_gaussian_matches_independent_scipy_construction(q_plus):
    # Reference built independently with scipy.stats.gennorm (Algorithm 4 as printed, with
    # the corrected Gamma scale); compare the first coordinate and a direction statistic.
    sigma, d, n = 0.8, 5, 20_000
    z = mech.generalized_gaussian_noise(np.random.default_rng(11), sigma, q_plus, d, size=n)
    ref_rng = np.random.default_rng(12)
    r = np.sqrt(ref_rng.gamma(d / 2, 2 * sigma**2, n))
    x = stats.gennorm(beta=q_plus).rvs(size=(n, d), random_state=ref_rng)
    ref = r[:, None] * x / _lq_norm(x, q_plus)[:, None]
    assert stats.ks_2samp(z[:, 0], ref[:, 0]).pvalue > ALPHA
    u_z = np.abs(z[:, 0]) / _lq_norm(z, q_plus)
    u_ref = np.abs(ref[:, 0]) / _lq_norm(ref, q_plus)
    assert stats.ks_2samp(u_z, u_ref).pvalue > ALPHA


def test_generalized_gaussian_is_symmetric():
    # The authors' "+ 1/q+" bug shifts every coordinate; the mean must be 0 (per-coordinate
    # z-test with the sample std, Bonferroni over coordinates).
    d, n = 5, 20_000
    z = mech.generalized_gaussian_noise(np.random.default_rng(3), 1.0, 3.0, d, size=n)
    zscore = np.abs(z.mean(axis=0)) / (z.std(axis=0, ddof=1) / math.sqrt(n))
    assert np.all(zscore < stats.norm.ppf(1 - ALPHA / (2 * d)))


def test_generalized_gaussian_q2_is_isotropic_gaussian():
    sigma, d, n = 1.3, 5, 20_000
    z = mech.generalized_gaussian_noise(np.random.default_rng(5), sigma, 2.0, d, size=n)
    # Per-coordinate KS against N(0, sigma^2), Bonferroni over coordinates.
    for j in range(d):
        assert stats.kstest(z[:, j], stats.norm(scale=sigma).cdf).pvalue > ALPHA / d
    # Per-coordinate variance (known mean 0): n s^2 / sigma^2 ~ chi2(n).
    lo, hi = _var_bounds_known_mean(n, ALPHA / d)
    ratio = np.mean(z**2, axis=0) / sigma**2
    assert np.all((lo < ratio) & (ratio < hi))
    # Off-diagonal correlations ~ N(0, 1/n) under independence.
    corr = np.corrcoef(z, rowvar=False)
    pairs = d * (d - 1) // 2
    bound = stats.norm.ppf(1 - ALPHA / (2 * pairs)) / math.sqrt(n)
    assert np.max(np.abs(corr[np.triu_indices(d, 1)])) < bound


def test_generalized_gaussian_batched_shapes_and_edge_cases():
    rng = np.random.default_rng(0)
    assert mech.generalized_gaussian_noise(rng, 1.0, 2.5, 4).shape == (4,)
    assert mech.generalized_gaussian_noise(rng, 1.0, 2.5, 4, size=(3, 2)).shape == (3, 2, 4)
    assert np.all(mech.generalized_gaussian_noise(rng, 0.0, 2.5, 4, size=10) == 0.0)
    # Large q+: no underflow to 0/0.
    z = mech.generalized_gaussian_noise(rng, 1.0, 200.0, 3, size=10_000)
    assert np.all(np.isfinite(z))
    z1 = mech.generalized_gaussian_noise(rng, 1.0, 200.0, 1, size=10_000)
    assert np.all(np.isfinite(z1))


def test_generalized_gaussian_reproducible():
    a = mech.generalized_gaussian_noise(np.random.default_rng(9), 1.0, 1.5, 7, size=(4, 3))
    b = mech.generalized_gaussian_noise(np.random.default_rng(9), 1.0, 1.5, 7, size=(4, 3))
    assert np.array_equal(a, b)


# ------------------------------------------------------------------ Laplace / Gaussian
def test_laplace_scale_and_distribution():
    b, n = 0.6, 100_000
    x = mech.laplace_noise(np.random.default_rng(21), b, (n,))
    assert stats.kstest(x, stats.laplace(scale=b).cdf).pvalue > ALPHA
    # Sample variance (known mean 0) vs 2 b^2; Var(x^2) = mu4 - sigma^4 = 24 b^4 - 4 b^4.
    se = math.sqrt(20 * b**4 / n)
    assert abs(np.mean(x**2) - 2 * b**2) < stats.norm.ppf(1 - ALPHA / 2) * se


@pytest.mark.parametrize("size", [(1,), (7,), (3, 5), (200_003,)])
def test_standard_laplace_is_laplace_with_independent_fair_signs(size):
    """Sign times exponential: the law (KS at every size large enough), the signs fair
    (binomial two-sided test) and independent of the magnitudes (two-sample KS of |X| by
    sign), the shape as asked; the draw is reproducible."""
    x = mech.standard_laplace(np.random.default_rng(31), size)
    assert x.shape == size
    assert np.array_equal(x, mech.standard_laplace(np.random.default_rng(31), size))
    n = x.size
    if n < 1000:
        return
    assert stats.kstest(x, stats.laplace.cdf).pvalue > ALPHA
    neg = int((x < 0).sum())
    assert stats.binomtest(neg, n, 0.5).pvalue > ALPHA
    assert stats.ks_2samp(-x[x < 0], x[x > 0]).pvalue > ALPHA
    assert stats.kstest(np.abs(x), stats.expon.cdf).pvalue > ALPHA


def test_laplace_checks_have_power():
    """The same checks reject an unsigned exponential and a sign that depends on the
    magnitude (negative only above the median)."""
    rng = np.random.default_rng(32)
    e = rng.standard_exponential(200_000)
    assert stats.kstest(e, stats.laplace.cdf).pvalue < 1e-10
    bad = np.where(e > np.median(e), -e, e)
    assert stats.ks_2samp(-bad[bad < 0], bad[bad > 0]).pvalue < 1e-10


def test_gaussian_scale_and_distribution():
    s, n = 2.5, 100_000
    x = mech.gaussian_noise(np.random.default_rng(22), s, (100, n // 100))
    assert x.shape == (100, n // 100)
    assert stats.kstest(x.ravel(), stats.norm(scale=s).cdf).pvalue > ALPHA
    lo, hi = _var_bounds_known_mean(n, ALPHA)
    assert lo < np.mean(x**2) / s**2 < hi


def test_zero_scale_noise_is_zero():
    rng = np.random.default_rng(0)
    assert np.all(mech.laplace_noise(rng, 0.0, 5) == 0.0)
    assert np.all(mech.gaussian_noise(rng, 0.0, (2, 3)) == 0.0)


# ------------------------------------------------------------------ selection
def _chisq_pvalue(idx, probs):
    counts = np.bincount(idx, minlength=len(probs))
    return stats.chisquare(counts, probs * len(idx)).pvalue


def test_exact_report_noisy_argmax_two_candidates_closed_form():
    # For m = 2, P(pick the lower score) = exp(-g/b)(1 + g/(2b))/2 (difference of Laplaces).
    for g, b in [(0.0, 1.0), (0.8, 0.7), (3.0, 0.5)]:
        p = mech.report_noisy_argmax_probabilities([0.0, g], b)
        want = 0.5 * math.exp(-g / b) * (1 + g / (2 * b))
        assert p[0] == pytest.approx(want, abs=1e-10)
        assert p.sum() == pytest.approx(1.0, abs=1e-10)


def test_report_noisy_argmax_matches_exact_probabilities():
    scores, b, n = np.array([0.0, 0.5, 1.0, 1.2]), 0.7, 100_000
    probs = mech.report_noisy_argmax_probabilities(scores, b)
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    idx = mech.report_noisy_argmax(np.random.default_rng(31), np.tile(scores, (n, 1)), b)
    assert idx.shape == (n,) and idx.dtype == np.int64
    assert _chisq_pvalue(idx, probs) > ALPHA
    # The check has power: Laplace argmax is not the softmax of the same scale.
    soft = mech.exponential_mechanism_probabilities(scores, b)
    assert _chisq_pvalue(idx, soft) < 1e-6


def test_report_noisy_argmin_matches_exact_probabilities():
    scores, b, n = np.array([0.3, -0.2, 1.0]), 0.4, 100_000
    probs = mech.report_noisy_argmax_probabilities(-scores, b)
    idx = mech.report_noisy_argmin(np.random.default_rng(32), np.tile(scores, (n, 1)), b)
    assert _chisq_pvalue(idx, probs) > ALPHA


def test_exponential_mechanism_matches_softmax():
    scores, scale, n = np.array([0.0, 0.5, 1.0, 1.2, -1.0]), 0.7, 100_000
    probs = mech.exponential_mechanism_probabilities(scores, scale)
    idx = mech.exponential_mechanism(np.random.default_rng(33), np.tile(scores, (n, 1)), scale)
    assert _chisq_pvalue(idx, probs) > ALPHA


def test_selection_rows_are_independent_and_use_their_own_scores():
    # Row-specific scores: a huge gap makes each row's winner deterministic in practice.
    scores = np.array([[0.0, 100.0, 0.0], [100.0, 0.0, 0.0]])
    rng = np.random.default_rng(0)
    assert mech.report_noisy_argmax(rng, scores, 1.0).tolist() == [1, 0]
    assert mech.report_noisy_argmin(rng, -scores, 1.0).tolist() == [1, 0]
    assert mech.exponential_mechanism(rng, scores, 1.0).tolist() == [1, 0]
    assert mech.report_noisy_argmax(rng, scores, 0.0).tolist() == [1, 0]


# ------------------------------------------------------------------ calibration
@pytest.mark.parametrize(("eps", "sens"), [(0.5, 2.0), (3.0, 0.1)])
def test_laplace_scale_gives_privacy_loss_exactly_epsilon(eps, sens):
    """dp_accounting's PLD of the Laplace mechanism at that scale: delta(eps) = 0 (eps-DP)
    and delta(0.99 eps) > 0 (no smaller epsilon holds)."""
    pld = privacy_loss_distribution.from_laplace_mechanism(
        mech.laplace_scale(eps, sens), sensitivity=sens, value_discretization_interval=1e-4)
    assert pld.get_delta_for_epsilon(eps) < 1e-12
    assert pld.get_delta_for_epsilon(0.99 * eps) > 1e-4
    assert mech.laplace_scale(math.inf, 2.0) == 0.0


@pytest.mark.parametrize(("eps", "delta"), [(0.01, 1e-8), (0.1, 1e-5), (0.5, 1e-6), (0.9, 1e-3)])
def test_classical_gaussian_sigma_is_private_and_within_2x_of_the_optimum(eps, delta):
    """Dwork & Roth, Thm A.1: the classical sigma is (eps, delta)-DP (exact delta of the
    Gaussian mechanism, Balle & Wang) and, for eps < 1, at most twice the analytic sigma."""
    sigma = mech.gaussian_sigma_classical(eps, delta, 2.0)
    assert mech.gaussian_mechanism_delta(sigma, eps, 2.0) <= delta
    assert sigma < 2 * mech.gaussian_sigma_analytic(eps, delta, 2.0)


def test_classical_gaussian_sigma_needs_epsilon_below_one():
    for eps in [1.0, 2.0, math.inf]:
        with pytest.raises(ValueError, match="epsilon"):
            mech.gaussian_sigma_classical(eps, 1e-5, 1.0)


CASES = [(0.1, 1e-5), (0.5, 1e-6), (0.9, 1e-3), (1.0, 1e-5), (3.0, 1e-10), (10.0, 1e-3)]


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_analytic_gaussian_meets_delta_equation(eps, delta):
    sens = 1.7
    sigma = mech.gaussian_sigma_analytic(eps, delta, sens)
    # Plug back: certifies delta, and is (relatively) the smallest such sigma.
    assert mech.gaussian_mechanism_delta(sigma, eps, sens) <= delta
    assert mech.gaussian_mechanism_delta(sigma * (1 - 1e-6), eps, sens) > delta
    # Independent evaluation of the Balle-Wang formula with plain CDFs.
    a, b = sens / (2 * sigma), eps * sigma / sens
    direct = stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)
    assert direct == pytest.approx(delta, rel=1e-6)


@pytest.mark.parametrize(("eps", "delta"), [c for c in CASES if c[0] < 1])
def test_analytic_gaussian_beats_classical(eps, delta):
    assert mech.gaussian_sigma_analytic(eps, delta, 1.0) < mech.gaussian_sigma_classical(
        eps, delta, 1.0)


@pytest.mark.parametrize(("eps", "delta"), [(0.5, 1e-6), (1.0, 1e-5), (3.0, 1e-10)])
def test_analytic_gaussian_matches_dp_accounting(eps, delta):
    sens = 2.0
    sigma = mech.gaussian_sigma_analytic(eps, delta, sens)
    assert sigma == pytest.approx(dp_accounting.get_sigma_gaussian(eps, delta) * sens, rel=1e-2)
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        sigma, sensitivity=sens, value_discretization_interval=1e-4)
    assert pld.get_delta_for_epsilon(eps) == pytest.approx(delta, rel=1e-2)


def test_gaussian_degenerate_cases():
    assert mech.gaussian_sigma_analytic(1.0, 1e-5, 0.0) == 0.0
    assert mech.gaussian_sigma_analytic(math.inf, 1e-5, 1.0) == 0.0
    assert mech.gaussian_mechanism_delta(0.0, 1.0, 1.0) == 1.0
    assert mech.gaussian_mechanism_delta(1.0, 1.0, 0.0) == 0.0


# ------------------------------------------------------------------ bad input
RNG = np.random.default_rng(0)
GOOD = np.zeros((2, 3))


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: mech.laplace_noise(RNG, -1.0, 3), ValueError, "scale"),
        (lambda: mech.laplace_noise(RNG, float("nan"), 3), ValueError, "scale"),
        (lambda: mech.laplace_noise(RNG, 1.0, -3), ValueError, "size"),
        (lambda: mech.laplace_noise(RNG, 1.0, 2.5), TypeError, "size"),
        (lambda: mech.laplace_noise(0, 1.0, 3), TypeError, "rng"),
        (lambda: mech.gaussian_noise(RNG, -0.1, 3), ValueError, "sigma"),
        (lambda: mech.gaussian_noise(RNG, math.inf, 3), ValueError, "sigma"),
        (lambda: mech.generalized_gaussian_noise(RNG, 1.0, 0.5, 3), ValueError, "q_plus"),
        (lambda: mech.generalized_gaussian_noise(RNG, 1.0, math.inf, 3), ValueError, "q_plus"),
        (lambda: mech.generalized_gaussian_noise(RNG, 1.0, math.nan, 3), ValueError, "q_plus"),
        (lambda: mech.generalized_gaussian_noise(RNG, -1.0, 2.0, 3), ValueError, "sigma"),
        (lambda: mech.generalized_gaussian_noise(RNG, 1.0, 2.0, 0), ValueError, "d"),
        (lambda: mech.generalized_gaussian_noise(RNG, 1.0, 2.0, 2.0), TypeError, "d"),
        (lambda: mech.generalized_gaussian_noise(RNG, 1.0, 2.0, 3, size=(2, -1)), ValueError,
         "size"),
        (lambda: mech.report_noisy_argmax(RNG, np.zeros(3), 1.0), ValueError, "scores"),
        (lambda: mech.report_noisy_argmax(RNG, np.zeros((2, 2, 2)), 1.0), ValueError,
         "scores"),
        (lambda: mech.report_noisy_argmax(RNG, [[0.0, np.nan]], 1.0), ValueError, "scores"),
        (lambda: mech.report_noisy_argmax(RNG, [[0.0, np.inf]], 1.0), ValueError, "scores"),
        (lambda: mech.report_noisy_argmax(RNG, np.zeros((2, 0)), 1.0), ValueError, "scores"),
        (lambda: mech.report_noisy_argmax(RNG, GOOD, -1.0), ValueError, "scale"),
        (lambda: mech.report_noisy_argmin(RNG, [[0.0, np.nan]], 1.0), ValueError, "scores"),
        (lambda: mech.report_noisy_argmin(RNG, GOOD, -1.0), ValueError, "scale"),
        (lambda: mech.exponential_mechanism(RNG, np.zeros(3), 1.0), ValueError, "scores"),
        (lambda: mech.exponential_mechanism(RNG, GOOD, -1.0), ValueError, "scale"),
        (lambda: mech.exponential_mechanism(None, GOOD, 1.0), TypeError, "rng"),
        (lambda: mech.report_noisy_argmax_probabilities([0.0, 1.0], 0.0), ValueError, "scale"),
        (lambda: mech.report_noisy_argmax_probabilities([[0.0, 1.0]], 1.0), ValueError,
         "scores"),
        (lambda: mech.exponential_mechanism_probabilities([0.0, np.nan], 1.0), ValueError,
         "scores"),
        (lambda: mech.laplace_scale(0.0, 1.0), ValueError, "epsilon"),
        (lambda: mech.laplace_scale(-1.0, 1.0), ValueError, "epsilon"),
        (lambda: mech.laplace_scale(1.0, -1.0), ValueError, "sensitivity"),
        (lambda: mech.gaussian_sigma_classical(0.0, 1e-5, 1.0), ValueError, "epsilon"),
        (lambda: mech.gaussian_sigma_classical(0.5, 0.0, 1.0), ValueError, "delta"),
        (lambda: mech.gaussian_sigma_classical(0.5, 1.0, 1.0), ValueError, "delta"),
        (lambda: mech.gaussian_sigma_classical(0.5, 1e-5, -1.0), ValueError, "sensitivity"),
        (lambda: mech.gaussian_sigma_analytic(0.0, 1e-5, 1.0), ValueError, "epsilon"),
        (lambda: mech.gaussian_sigma_analytic(-2.0, 1e-5, 1.0), ValueError, "epsilon"),
        (lambda: mech.gaussian_sigma_analytic(1.0, 0.0, 1.0), ValueError, "delta"),
        (lambda: mech.gaussian_sigma_analytic(1.0, 1.5, 1.0), ValueError, "delta"),
        (lambda: mech.gaussian_sigma_analytic(1.0, -0.1, 1.0), ValueError, "delta"),
        (lambda: mech.gaussian_sigma_analytic(1.0, 1e-5, math.nan), ValueError, "sensitivity"),
        (lambda: mech.gaussian_sigma_analytic("1", 1e-5, 1.0), TypeError, "epsilon"),
        (lambda: mech.gaussian_mechanism_delta(-1.0, 1.0, 1.0), ValueError, "sigma"),
    ],
)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()

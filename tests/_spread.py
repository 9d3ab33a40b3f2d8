"""Shared checks of the noise-spread tests (``tests/test_noise_spread*.py``, issue 34 item 5).

``sum(z^2) / sigma^2`` over ``N`` standardized noise coordinates is chi-square with ``N``
degrees of freedom; the two-sided acceptance region at ``p = 1e-9`` (exact quantiles) is
about ``N (1 +/- 6.1 sqrt(2/N))``, +/- 6.1% at ``N = 20,000``, so a x0.8 cut of the noise
(-36% of the statistic) fails while a false alarm has probability 1e-9 (seeds are fixed)."""

from __future__ import annotations

import numpy as np
from scipy import stats

P_VALUE = 1e-9
MIN_N = 20_000


def assert_chi_square(name: str, standardized: np.ndarray) -> float:
    """``standardized``: the noise coordinates over their declared sd, N(0, 1) i.i.d.
    Returns the statistic over N (for the mutation tables)."""
    n = standardized.size
    assert n >= MIN_N, f"{name}: only {n} coordinates"
    stat = float(np.sum(standardized ** 2))
    lo, hi = stats.chi2.ppf(P_VALUE / 2, n), stats.chi2.isf(P_VALUE / 2, n)
    assert lo <= stat <= hi, (f"{name}: sum z^2/sigma^2 = {stat:.1f} over {n} coordinates "
                              f"(ratio {stat / n:.3f}), outside [{lo:.1f}, {hi:.1f}]")
    return stat / n


def symmetric_standardized(noise: np.ndarray, sigma_diag: float) -> np.ndarray:
    """The upper triangle of symmetric matrices (..., s, s) with ``N(0, sigma^2)`` on the
    diagonal and ``N(0, sigma^2/2)`` off it (the law of ``gram_noise``), standardized."""
    s = noise.shape[-1]
    iu, ju = np.triu_indices(s)
    sd = np.where(iu == ju, sigma_diag, sigma_diag / np.sqrt(2.0))
    return noise[..., iu, ju] / sd


def gdp_delta(mu: float, eps: float) -> float:
    """The exact delta at ``eps`` of a ``mu``-GDP mechanism (Dong, Roth and Su, Gaussian
    differential privacy, 2019/2022, Corollary 2.13)."""
    return float(stats.norm.cdf(-eps / mu + mu / 2)
                 - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))


def check_moment_screening(agent, scale_moment: float, scale_contrast: float,
                           n_screens: int) -> None:
    """dp-moment-ls's summed screening releases on zero data: the moment (symmetric law) and
    the contrasts (N(0, sigma^2 I) projected on the contrast subspace: for K = 2, one degree
    of freedom per coordinate, |c|^2 = 2 c_0^2); ``n`` releases sum to sd ``sigma sqrt(n)``."""
    assert_chi_square("moment", symmetric_standardized(
        agent._M_released, scale_moment * np.sqrt(n_screens)))
    check_contrasts("contrast", agent._c_released, scale_contrast, n_screens)


def check_contrasts(name: str, c: np.ndarray, scale: float, n_releases: int) -> None:
    """Summed contrast releases (R, K = 2, d) of ``n_releases`` releases at sd ``scale``."""
    assert np.allclose(c.sum(axis=1), 0.0, atol=1e-12 * scale)
    assert_chi_square(name, np.sqrt(2.0) * c[:, 0] / (scale * np.sqrt(n_releases)))


def check_fit_releases(agent, scale_gram: float, scale_target: float, n_fits: int) -> None:
    """The summed fitting releases on zero data: the Gram (symmetric law) and the targets."""
    assert_chi_square("gram", symmetric_standardized(
        agent._gram_released, scale_gram * np.sqrt(n_fits)))
    assert_chi_square("target", agent._b_released / (scale_target * np.sqrt(n_fits)))

"""Confidence intervals of off-policy estimates.

Every estimator here has the form ``V = mean_i c_i + R`` with either ``R = mean_i a_i`` or
the ratio ``R = sum_i a_i / sum_i b_i`` (self-normalized estimators), from per-round arrays
``c, a, b`` of shape (n,) (:class:`Parts`). Three interval methods, all two-sided at
``level = 1 - alpha``:

* ``"normal"`` -- the CLT interval ``V +- z_{1-alpha/2} se`` with ``se = sd(psi) / sqrt(n)``
  (``ddof = 1``) of the influence terms ``psi_i = c_i + a_i`` (mean form) or
  ``psi_i = c_i + (a_i - R b_i) / mean(b)`` (ratio form: the delta method). Asymptotic.
* ``"bootstrap"`` -- the percentile bootstrap (Efron & Tibshirani 1993, *An Introduction to the
  Bootstrap*): rounds resampled with replacement ``n_bootstrap`` times from an explicit
  numpy Generator, the estimator recomputed on each resample (ratios included), and the
  ``alpha/2`` and ``1 - alpha/2`` quantiles taken. Asymptotic too, but it follows the skew of
  sparse rewards that the normal interval misses.
* ``"bernstein"`` -- the empirical Bernstein bound (Maurer & Pontil 2009, *Empirical Bernstein
  bounds and sample variance penalization*, Theorem 4), a finite-sample interval valid for
  i.i.d. rounds whose terms ``z_i = c_i + a_i`` lie in a known range ``[A, B]`` (mean form
  only): with ``delta = alpha / 2`` per side,
  ``|V - E z| <= sqrt(2 V_n ln(2/delta) / n) + 7 (B - A) ln(2/delta) / (3 (n - 1))``
  with ``V_n`` the sample variance (``ddof = 1``). Conservative, never below the truth's
  coverage.

``reward_range=(lo, hi)`` (rewards known to lie in it, hence every policy value) intersects
the interval with ``[lo, hi]``: an interval for a value in [0, 1] never goes below 0. The
estimate records when that cut anything (``interval_clipped``); the point estimate itself is
never moved (IPS stays unbiased).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from dpbandits._validation import SeedLike, as_rng, check_choice, check_int, check_real

__all__ = ["INTERVALS", "Parts", "interval"]

INTERVALS = ("normal", "bootstrap", "bernstein")
#: resampled index entries held in memory at once by the bootstrap
_BOOT_CHUNK = 2_000_000


@dataclass(frozen=True)
class Parts:
    """Per-round arrays of an estimator (module docstring): ``V = mean(c) + mean(a)``, or
    ``mean(c) + sum(a) / sum(b)`` when ``b`` is given; ``c`` may be None (zero)."""

    a: np.ndarray
    b: np.ndarray | None = None
    c: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.a.shape[0])

    def value(self) -> float:
        base = 0.0 if self.c is None else float(self.c.mean())
        if self.b is None:
            return base + float(self.a.mean())
        return base + float(self.a.sum() / self.b.sum())

    def influence(self) -> np.ndarray:
        """``psi_i`` of the module docstring, shape (n,)."""
        base = np.zeros(self.n) if self.c is None else self.c
        if self.b is None:
            return base + self.a
        ratio = float(self.a.sum() / self.b.sum())
        return base + (self.a - ratio * self.b) / float(self.b.mean())

    def resampled(self, index: np.ndarray) -> np.ndarray:
        """The estimator on each row of resampled round indices (B, n), shape (B,)."""
        base = 0.0 if self.c is None else self.c[index].mean(axis=1)
        if self.b is None:
            return base + self.a[index].mean(axis=1)
        den = self.b[index].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return base + np.where(den > 0, self.a[index].sum(axis=1) / den, np.nan)


def _bootstrap(parts: Parts, alpha: float, rng: np.random.Generator, n_boot: int
               ) -> tuple[float, float, float]:
    n = parts.n
    chunk = max(1, _BOOT_CHUNK // n)
    stats = []
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        stats.append(parts.resampled(rng.integers(0, n, size=(size, n))))
    values = np.concatenate(stats)
    undefined = int(np.isnan(values).sum())
    if undefined:
        raise ValueError(f"bootstrap: {undefined} of {n_boot} resamples have no round with a "
                         "positive weight, so the self-normalized estimator is undefined on "
                         "them; use interval='normal' or an estimator without normalization")
    lo, hi = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi), float(values.std(ddof=1))


def interval(parts: Parts, *, method: str = "normal", level: float = 0.95,
             rng: SeedLike | None = None, n_bootstrap: int = 2000,
             term_range: tuple[float, float] | None = None,
             reward_range: tuple[float, float] | None = None
             ) -> tuple[float, float, float, str, bool]:
    """``(std_error, ci_low, ci_high, description, clipped)`` of ``parts`` by ``method``.

    ``rng`` (a Generator or seed) is required for the bootstrap, whose ``std_error`` is the
    standard deviation of the resampled estimates; ``term_range`` ``(A, B)`` bounds every term
    ``c_i + a_i`` (required by ``"bernstein"``); ``reward_range`` cuts the interval to the
    values a policy can have (``clipped`` says whether it cut anything)."""
    check_choice("interval", method, INTERVALS)
    lv = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    alpha, n, value = 1.0 - lv, parts.n, parts.value()
    if method == "normal":
        se = float(parts.influence().std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
        z = float(norm.ppf(1.0 - alpha / 2.0))
        lo, hi = value - z * se, value + z * se
        what = ("delta method (normal approximation)" if parts.b is not None
                else "CLT (normal approximation)")
    elif method == "bootstrap":
        if rng is None:
            raise ValueError("interval='bootstrap' needs rng (a numpy Generator or an int seed) "
                             "for its resamples, got None")
        n_boot = check_int("n_bootstrap", n_bootstrap, low=100)
        lo, hi, se = _bootstrap(parts, alpha, as_rng(rng, "rng"), n_boot)
        what = f"percentile bootstrap ({n_boot} resamples)"
    else:
        if parts.b is not None or term_range is None:
            raise ValueError("interval='bernstein' needs per-round terms in a known range: "
                             "available for ips on a uniform log and for clipped_ips (give "
                             "reward_range), not for self-normalized or model-based estimators")
        if n < 2:
            raise ValueError(f"interval='bernstein' needs at least 2 rounds, got {n}")
        terms = parts.influence()
        width = term_range[1] - term_range[0]
        log_term = math.log(4.0 / alpha)  # ln(2 / delta) with delta = alpha / 2 per side
        half = (math.sqrt(2.0 * terms.var(ddof=1) * log_term / n)
                + 7.0 * width * log_term / (3.0 * (n - 1)))
        se = float(terms.std(ddof=1) / math.sqrt(n))
        lo, hi = value - half, value + half
        what = f"empirical Bernstein (Maurer & Pontil 2009; terms in [{term_range[0]:.6g}, " \
               f"{term_range[1]:.6g}])"
    clipped = False
    if reward_range is not None:
        new_lo, new_hi = max(lo, reward_range[0]), min(hi, reward_range[1])
        clipped = (new_lo, new_hi) != (lo, hi)
        if clipped:
            what += f", cut to the reward range [{reward_range[0]:.6g}, {reward_range[1]:.6g}]"
        lo, hi = new_lo, min(max(new_hi, new_lo), reward_range[1])
    return se, float(lo), float(hi), what, clipped

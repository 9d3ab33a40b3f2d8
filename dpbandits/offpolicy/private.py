"""Differentially private off-policy estimates: IPS, SNIPS and DR with clipped weights and
rewards and calibrated Gaussian noise.

An off-policy estimate is a release of the users' logged data; the plain estimators of
:mod:`dpbandits.offpolicy.estimators` are not private. :class:`PrivateEstimator` releases one
estimate with an ``(epsilon, delta)``-DP guarantee.

Neighbouring logs: ``D`` and ``D'`` have the same public number of rounds ``n`` and differ in
one logged round ``(x_i, a_i, r_i, p_i)``, replaced by any other (``"replace-one"``). The target
policy ``pi``, the clipping constants and (for DR) the reward model are fixed before the log
is seen: ``pi(. | x)`` and ``q_hat(x, .)`` may depend on a round's own context only (a model fit
on this log would leak it; fit it on other data).

Each estimator clips, by definition, every weight to ``w~_i = min(w_i, M)`` (``M =
max_weight``) and every reward to ``r~_i`` in ``[lo, hi] = reward_range`` (DR also clips its
predictions ``q~`` to ``[lo, hi]``), and releases a query with l2 sensitivity ``Delta``:

* IPS: ``f = (1/n) sum_i w~_i r~_i``. A term ``w~ r~`` lies in ``[M min(lo, 0), M max(hi,
  0)]``, so replacing one round moves ``f`` by at most ``Delta = M (max(hi, 0) - min(lo, 0))
  / n``.
* DR: ``f = (1/n) sum_i [q~_i(pi) + w~_i (r~_i - q~_i(a_i))]``. The baseline ``q~_i(pi)`` lies
  in ``[lo, hi]`` and the correction in ``[-M (hi - lo), M (hi - lo)]``, so ``Delta = (hi -
  lo)(1 + 2 M) / n``.
* SNIPS: the pair of sums ``f = (sum_i w~_i r~_i, sum_i w~_i)``; a round's pair ``(w~ r~, w~)``
  lies in the triangle with corners ``(0, 0)``, ``(M lo, M)``, ``(M hi, M)``, whose diameter
  (longest side) bounds the change: ``Delta = M max(sqrt(1 + lo^2), sqrt(1 + hi^2), hi -
  lo)``. The estimate ``(S_r + z_1) / (S_w + z_2)`` is post-processing, cut to ``[lo, hi]``
  (where a ratio of clipped rewards lies); a normalizer ``S_w + z_2 <= 0`` raises.

The release is ``f + N(0, (k Delta)^2 I)`` with the noise multiplier ``k`` from
:func:`~dpbandits.privacy.accounting.calibrate`: the smallest for which the Gaussian event
``gaussian_event(k)`` (exactly ``1/k``-GDP) is ``(epsilon, delta)``-DP by the PLD accountant;
``ledger`` is that event. The counts of clipped weights, rewards and predictions are
reported for the data holder in ``clipped``: they are *not* covered by the guarantee.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import dp_accounting
import numpy as np
from scipy.stats import norm

from dpbandits._validation import (
    SeedLike,
    as_rng,
    check_choice,
    check_delta_open,
    check_positive,
    check_real,
)
from dpbandits.envs.logged import LoggedBandit
from dpbandits.offpolicy._inputs import (
    check_estimated_rewards,
    check_log,
    importance_weights,
    target_probabilities,
)
from dpbandits.privacy.accounting import calibrate, gaussian_event, gdp_mu
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise

__all__ = ["PRIVATE_ESTIMATORS", "PrivateEstimate", "PrivateEstimator"]

PRIVATE_ESTIMATORS = ("ips", "snips", "dr")


@dataclass(frozen=True)
class PrivateEstimate:
    """One private release and two intervals around it.

    ``[noise_low, noise_high]`` covers the privacy noise alone: it is where the clipped
    estimator computed on this log lies, with probability ``level``. It ignores the sampling
    error of the log. ``[total_low, total_high]`` covers both: it holds the expected value of
    the clipped estimator (the target policy's value ``V(pi)`` when no weight exceeds
    ``max_weight`` and every reward lies in ``reward_range``) with probability at least
    ``level``, for i.i.d. logged rounds. It is built by a union bound: ``alpha = 1 - level`` is
    split in halves, ``alpha/2`` for a sampling interval and ``alpha/2`` for the noise. The
    sampling interval is Hoeffding's inequality on the clipped terms, whose range is public
    (``n`` times the sensitivity for IPS and DR; ``[M min(lo, 0), M max(hi, 0)]`` and
    ``[0, M]`` for the two means of SNIPS, ``alpha/4`` each, whose ratio is then bounded and
    cut to ``[lo, hi]``), so it spends no privacy budget. It is conservative, and wide for
    small logs.

    Parameters
    ----------
    estimator : {"ips", "snips", "dr"}
        Which estimator was released.
    value : float
        The estimate.
    released : tuple of float
        The noisy query: the mean for IPS and DR, the two noisy sums for SNIPS.
    noise_std : float
        Standard deviation of the noise on ``value`` (for SNIPS its delta-method
        approximation from the released sums).
    noise_low, noise_high : float
        The ``level`` interval of the privacy noise alone (above).
    total_low, total_high : float
        The ``level`` interval of sampling and privacy noise together (above).
    level : float
        Coverage of the intervals, in (0, 1).
    n : int
        Number of logged rounds.
    privacy : PrivacyGuarantee
        The guarantee of the release.
    clipped : dict, default {}
        Counts of the clipped weights, rewards and predictions: NOT private, for the data
        holder only. Its ``"estimate"`` entry (SNIPS) says whether the ratio was cut to the
        reward range, which is post-processing of the release and public.
    """

    estimator: str
    value: float
    released: tuple[float, ...]
    noise_std: float
    noise_low: float
    noise_high: float
    total_low: float
    total_high: float
    level: float
    n: int
    privacy: PrivacyGuarantee
    clipped: dict[str, int] = field(default_factory=dict)

    @property
    def ci_low(self) -> float:
        """Deprecated name of :attr:`noise_low` (it covers the privacy noise only)."""
        warnings.warn("PrivateEstimate.ci_low is deprecated: it is noise_low, an interval of "
                      "the privacy noise alone; total_low also covers the sampling error",
                      DeprecationWarning, stacklevel=2)
        return self.noise_low

    @property
    def ci_high(self) -> float:
        """Deprecated name of :attr:`noise_high` (it covers the privacy noise only)."""
        warnings.warn("PrivateEstimate.ci_high is deprecated: it is noise_high, an interval of "
                      "the privacy noise alone; total_high also covers the sampling error",
                      DeprecationWarning, stacklevel=2)
        return self.noise_high


class PrivateEstimator:
    """An ``(epsilon, delta)``-DP off-policy estimator (module docstring).

    ``estimate(log, target, rng=..., estimated_rewards=...)`` releases one estimate.

    Parameters
    ----------
    estimator : {"ips", "snips", "dr"}, default "ips"
        The estimator released.
    epsilon : float
        Privacy budget epsilon > 0 of one release.
    delta : float
        Privacy parameter delta in (0, 1) of one release.
    max_weight : float
        Weight clip M > 0: every importance weight is cut to ``min(w, M)``.
    reward_range : (float, float), default (0.0, 1.0)
        Reward clip ``(lo, hi)`` with ``lo < hi``: rewards (and DR's predictions) are cut to
        it.

    Raises
    ------
    ValueError
        When a parameter is out of its range.
    """

    def __init__(self, estimator: str = "ips", *, epsilon: float, delta: float,
                 max_weight: float, reward_range: tuple[float, float] = (0.0, 1.0)):
        check_choice("estimator", estimator, PRIVATE_ESTIMATORS)
        self.estimator = estimator
        self.epsilon = check_positive("epsilon", epsilon)
        self.delta = check_delta_open(delta, why="for a private estimate")
        self.max_weight = check_positive("max_weight", max_weight)
        if not isinstance(reward_range, tuple | list) or len(reward_range) != 2:
            raise TypeError(f"reward_range must be a pair (low, high), got {reward_range!r}")
        lo = check_real("reward_range[0]", reward_range[0])
        hi = check_real("reward_range[1]", reward_range[1])
        if not lo < hi:
            raise ValueError(f"reward_range must have low < high, got ({lo}, {hi})")
        self.reward_range = (lo, hi)
        #: noise std / sensitivity, the smallest the accountant certifies
        self.multiplier = calibrate(gaussian_event, self.epsilon, self.delta,
                                    lower=1.0 / gdp_mu(self.epsilon, self.delta),
                                    growth=1.0 + 1e-4, rtol=math.inf)

    # -- privacy -------------------------------------------------------------------------
    @property
    def privacy(self) -> PrivacyGuarantee:
        """The guarantee of one release (replace-one neighbouring logs of public size)."""
        return PrivacyGuarantee(
            self.epsilon, self.delta, notion="DP", neighbouring="replace-one",
            basis=(f"Gaussian mechanism on the clipped {self.estimator.upper()} query "
                   f"(weights <= {self.max_weight:g}, rewards in [{self.reward_range[0]:g}, "
                   f"{self.reward_range[1]:g}]), l2 sensitivity of one replaced round "
                   "(dpbandits.offpolicy.private), noise multiplier from the dp_accounting PLD "
                   "accountant"))

    @property
    def ledger(self) -> dp_accounting.DpEvent:
        """The ``dp_accounting`` event of one release: one Gaussian mechanism."""
        return gaussian_event(self.multiplier)

    def sensitivity(self, n: int) -> float:
        """l2 sensitivity ``Delta`` of the released query on logs of ``n`` rounds."""
        lo, hi = self.reward_range
        m = self.max_weight
        if self.estimator == "ips":
            return m * (max(hi, 0.0) - min(lo, 0.0)) / n
        if self.estimator == "dr":
            return (hi - lo) * (1.0 + 2.0 * m) / n
        return m * max(math.hypot(1.0, lo), math.hypot(1.0, hi), hi - lo)

    # -- the query and its release -------------------------------------------------------
    def statistic(self, log: LoggedBandit, target: Any, estimated_rewards: Any = None
                  ) -> tuple[np.ndarray, dict[str, int]]:
        """The clipped query ``f(D)`` (shape (1,) for IPS/DR, (2,) for SNIPS) and the clip
        counts (not private)."""
        log = check_log(log)
        lo, hi = self.reward_range
        pi = target_probabilities(log, target)
        w = importance_weights(log, pi)
        wc = np.minimum(w, self.max_weight)
        r = np.clip(log.rewards, lo, hi)
        counts = {"weights": int((w > self.max_weight).sum()),
                  "rewards": int((r != log.rewards).sum())}
        if self.estimator == "ips":
            return np.array([float(np.mean(wc * r))]), counts
        if self.estimator == "snips":
            return np.array([float(np.sum(wc * r)), float(np.sum(wc))]), counts
        if estimated_rewards is None:
            raise ValueError("estimator='dr' needs estimated_rewards (n, K) from a reward model "
                             "fit without this log")
        q_raw = check_estimated_rewards(log, estimated_rewards)
        q = np.clip(q_raw, lo, hi)
        counts["predictions"] = int((q != q_raw).sum())
        terms = (pi * q).sum(axis=1) + wc * (r - q[np.arange(log.n_rounds), log.actions])
        return np.array([float(np.mean(terms))]), counts

    def release(self, statistic: np.ndarray, n: int, rng: np.random.Generator,
                size: int | None = None) -> np.ndarray:
        """``statistic + N(0, (multiplier * sensitivity(n))^2 I)``; ``size`` draws that many
        independent releases (shape (size, dim)) for audits."""
        sigma = self.multiplier * self.sensitivity(n)
        shape = statistic.shape if size is None else (size, *statistic.shape)
        return statistic + gaussian_noise(rng, sigma, shape)

    def estimate(self, log: LoggedBandit, target: Any, *, rng: SeedLike,
                 estimated_rewards: Any = None, level: float = 0.95) -> PrivateEstimate:
        """One private estimate of ``target``'s value on ``log`` (all noise from ``rng``; for
        a real release, a fresh ``numpy.random.default_rng()`` kept secret)."""
        lv = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
        stat, counts = self.statistic(log, target, estimated_rewards)
        n = check_log(log).n_rounds
        noisy = self.release(stat, n, as_rng(rng, "rng"))
        sigma = self.multiplier * self.sensitivity(n)
        z = float(norm.ppf(0.5 + lv / 2.0))
        lo, hi = self.reward_range
        if self.estimator == "snips":
            num, den = float(noisy[0]), float(noisy[1])
            if not den > 0.0:
                raise ValueError(f"private snips: the noisy sum of weights is {den:.4g} <= 0 "
                                 f"(noise std {sigma:.4g}): too few matched rounds for this "
                                 "epsilon; use estimator='ips'")
            ratio = num / den
            value = min(max(ratio, lo), hi)
            counts["estimate"] = int(value != ratio)
            std = sigma * math.hypot(1.0, value) / den
        else:
            value, std = float(noisy[0]), sigma
        total = self.total_interval(noisy, n, 1.0 - lv)
        return PrivateEstimate(self.estimator, value, tuple(float(v) for v in noisy), std,
                               value - z * std, value + z * std, *total, lv, n, self.privacy,
                               counts)

    def total_interval(self, released: np.ndarray, n: int, alpha: float
                       ) -> tuple[float, float]:
        """An interval holding the clipped estimator's expected value with probability at
        least ``1 - alpha`` over the log's i.i.d. rounds and the noise: ``alpha/2`` for
        Hoeffding's sampling interval, ``alpha/2`` for the Gaussian noise (union bound;
        :class:`PrivateEstimate`). Depends on the release and public constants only."""
        sigma = self.multiplier * self.sensitivity(n)
        lo, hi = self.reward_range
        m = self.max_weight
        if self.estimator != "snips":
            width = n * self.sensitivity(n)  # range of one clipped term
            half = (width * math.sqrt(math.log(4.0 / alpha) / (2.0 * n))
                    + float(norm.ppf(1.0 - alpha / 4.0)) * sigma)
            return float(released[0]) - half, float(released[0]) + half
        # two means, alpha/4 of sampling and alpha/4 of noise each
        root = math.sqrt(math.log(8.0 / alpha) / (2.0 * n))
        z = float(norm.ppf(1.0 - alpha / 8.0)) * sigma / n
        a, b = m * min(lo, 0.0), m * max(hi, 0.0)
        num = (float(released[0]) / n - z - (b - a) * root,
               float(released[0]) / n + z + (b - a) * root)
        den_low = float(released[1]) / n - z - m * root
        den_high = float(released[1]) / n + z + m * root
        if not den_low > 0.0:
            return lo, hi
        ratios = [x / y for x in num for y in (den_low, den_high)]
        return max(lo, min(ratios)), min(hi, max(ratios))

    def __repr__(self) -> str:
        return (f"PrivateEstimator({self.estimator!r}, epsilon={self.epsilon}, "
                f"delta={self.delta}, max_weight={self.max_weight}, "
                f"reward_range={self.reward_range})")

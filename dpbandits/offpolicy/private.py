"""Differentially private off-policy estimates: IPS, SNIPS and DR with clipped weights and
rewards and calibrated Gaussian noise.

An off-policy estimate is a release of the users' logged data; the plain estimators of
:mod:`dpbandits.offpolicy.estimators` are not private. :class:`PrivateEstimator` releases one
estimate with an ``(epsilon, delta)``-DP guarantee.

Neighbouring logs: ``D`` and ``D'`` have the same public number of rounds ``n`` and differ in
one logged round ``(x_i, a_i, r_i, p_i)``, replaced by any other (``"replace-one"``). The target
policy ``pi`` and the clipping constants are fixed before the log is seen: ``pi(. | x)`` may
depend on a round's own context only.

DR's reward model ``q_hat(x, .)`` either is fit on the log by the estimator, privately
(``reward_model="private"``, the default): a per-arm ridge regression on features ``z = [x / L,
1] / sqrt 2`` (contexts clipped to ``||x|| <= L``, so ``||z|| <= 1``) and centred clipped rewards
``|y| <= B = (hi - lo) / 2``, released as noisy sums ``sum z z^T`` and ``sum y z`` per arm
(one Gaussian mechanism, :meth:`PrivateEstimator.model_noise`); its predictions depend on that
release and a round's own context only, so the DR query below has the same sensitivity
given the released model, and the two Gaussian mechanisms compose (the ledger is their
composition, the budget split by ``model_share`` of ``mu^2``). Or it is given
(``reward_model="disjoint"``): the caller declares it was fit on data disjoint from the log
(a model fit on this log, not privately, breaks the sensitivity: one replaced round can move
the query far beyond ``Delta``).

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

The query is computed with correctly rounded sums, and the noise is calibrated to ``Delta``
plus a bound on the rounding of one replaced round's move (:meth:`PrivateEstimator.sensitivity`):
the guarantee holds for the floats computed, not only in exact arithmetic.

The release is ``f + N(0, (k Delta)^2 I)`` with the noise multiplier ``k`` from
:func:`~dpbandits.privacy.accounting.calibrate`: the smallest for which the Gaussian event
``gaussian_event(k)`` (exactly ``1/k``-GDP) is ``(epsilon, delta)``-DP by the PLD accountant;
``ledger`` is that event. The counts of clipped weights, rewards and predictions are
reported for the data holder in ``clipped``: they are *not* covered by the guarantee.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dp_accounting
import numpy as np
from scipy.stats import norm

from dpbandits._params import Parameterized
from dpbandits._validation import (
    BOUND_RANGE,
    SeedLike,
    as_rng,
    check_bound,
    check_choice,
    check_delta_open,
    check_positive,
    check_range,
    check_real,
)
from dpbandits.envs.logged import LoggedBandit
from dpbandits.errors import ClippingWarning
from dpbandits.geometry import clip_rows
from dpbandits.offpolicy._inputs import (
    check_estimated_rewards,
    check_log,
    importance_weights,
    target_probabilities,
)
from dpbandits.privacy.accounting import calibrate, compose, gaussian_event, gdp_mu
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, Planned, PlanView, Scales
from dpbandits.private_ridge import noisy_arm_sums, ridge_parts, unit_rows

__all__ = ["PRIVATE_ESTIMATORS", "REWARD_MODELS", "PrivateEstimate", "PrivateEstimator",
           "PrivateRewardModel", "private_estimator_plan"]

PRIVATE_ESTIMATORS = ("ips", "snips", "dr")
#: DR's reward model: fit privately by the estimator, or given, fit on data disjoint from the log
REWARD_MODELS = ("private", "disjoint")


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


@dataclass(frozen=True)
class PrivateRewardModel:
    """Private DR's released reward model: per-arm ridge coefficients ``theta`` (K, d + 1) on
    the features of :meth:`PrivateEstimator._features`, around the centre of the reward
    range. ``predict(contexts)`` (n, K) is ``centre + z(x)^T theta_k``: each row's
    predictions depend on the release and that row's own context only."""

    theta: np.ndarray
    centre: float
    features: Callable[[np.ndarray], np.ndarray]

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """``q(x_i, k)`` for the rows of ``contexts`` (n, d), shape (n, K)."""
        return self.centre + self.features(np.asarray(contexts, dtype=np.float64)) @ self.theta.T


def _rounding_allowance(estimator: str, n: int, m: float, lo: float, hi: float) -> float:
    """What floating point can add to one replaced round's move of the query, beyond
    ``Delta``. With ``u = 2^-53`` and ``T`` a bound on a round's term (IPS ``M R``, DR ``R + M
    (hi - lo)``, ``R = max(|lo|, |hi|)``): a term is off by at most ``4u T`` on each side
    (products, a difference, a sum), the correctly rounded sum ``fsum`` by ``u |S| <= u n T``
    and the division by ``n`` by ``u T``. Means (IPS, DR) move by at most ``Delta + 12 u T``
    (the sum's error divided by ``n``), SNIPS's pair of sums by ``Delta + 2 u (sqrt(2) n + 1)
    T'`` with ``T' = M max(R, 1)``; the allowance covers each with room for ``Delta``'s own
    few roundings. Without it, rewards far from 0 relative to their range
    (``reward_range = (1e75, 1e75 + 1e61)``) move the sum by an ulp of ``n T``, many times
    ``Delta``."""
    r = max(abs(lo), abs(hi))
    if estimator == "snips":
        return 2.0**-50 * (n + 4) * m * max(r, 1.0)
    term = m * r if estimator == "ips" else r + m * (hi - lo)
    return 2.0**-48 * term


def _up(x: float) -> float:
    """``x`` (a product of a few correctly rounded floats) raised by a few ulps: the noise
    scale drawn is never below the real value it stands for."""
    return math.nextafter(x * (1.0 + 2.0**-50), math.inf)


def private_estimator_plan(estimator: str, eps: float, delta: float, max_weight: float,
                           reward_range: tuple[float, float], reward_model: str | None,
                           model_share: float) -> NoisePlan:
    """The plan of :class:`PrivateEstimator` (module docstring), a pure function of its
    validated parameters. Scale ``multiplier``: the noise std of the query over its
    sensitivity. Private DR adds ``model``: the noise multiplier of its reward model's
    release (:meth:`PrivateEstimator.model_noise`); the two Gaussian mechanisms compose to
    ``mu``-GDP with ``mu^2 = 1/k_query^2 + 1/k_model^2`` and ``1/k_model^2 = model_share
    mu^2``, ``mu`` the largest for which the PLD accountant certifies the composed ledger
    at ``(epsilon, delta)``."""
    lo, hi = reward_range
    what = (f"the clipped {estimator.upper()} query (weights <= {max_weight:g}, rewards in "
            f"[{lo:g}, {hi:g}]), l2 sensitivity of one replaced round "
            "(dpbandits.offpolicy.private)")
    lower = 1.0 / gdp_mu(eps, delta)
    if reward_model == "private":
        share = model_share

        def event(k: float) -> dp_accounting.DpEvent:
            return compose([gaussian_event(k / math.sqrt(share)),
                            gaussian_event(k / math.sqrt(1.0 - share))])

        k = calibrate(event, eps, delta, lower=lower, growth=1.0 + 1e-4, rtol=math.inf)
        scales = {"multiplier": k / math.sqrt(1.0 - share), "model": k / math.sqrt(share)}
        ledger = compose([gaussian_event(scales["model"]), gaussian_event(scales["multiplier"])])
        basis = (f"two Gaussian mechanisms composed: the per-arm private ridge statistics of "
                 f"the reward model fit on the log (share {share:g} of mu^2), then {what}; "
                 "noise from the dp_accounting PLD accountant on the composed ledger")
        half = math.nextafter(hi / 2.0 - lo / 2.0, math.inf)
        sens = {"model_gram": math.sqrt(2.0), "model_target": 2.0 * half}
    else:
        k = calibrate(gaussian_event, eps, delta, lower=lower, growth=1.0 + 1e-4,
                      rtol=math.inf)
        scales = {"multiplier": k}
        ledger = gaussian_event(k)
        basis = (f"Gaussian mechanism on {what}"
                 + (", reward model declared fit on data disjoint from the log"
                    if reward_model == "disjoint" else "")
                 + ", noise multiplier from the dp_accounting PLD accountant")
        sens = {}
    guarantee = PrivacyGuarantee(eps, delta, notion="DP", neighbouring="replace-one",
                                 basis=basis)
    return NoisePlan("accountant", Scales(scales), guarantee, ledger, Scales(sens))


class PrivateEstimator(Planned, Parameterized):
    """An ``(epsilon, delta)``-DP off-policy estimator (module docstring).

    ``estimate(log, target, rng=...)`` releases one estimate.

    Parameters
    ----------
    estimator : {"ips", "snips", "dr"}, default "ips"
        The estimator released.
    epsilon : float
        Privacy budget epsilon > 0 of one release.
    delta : float
        Privacy parameter delta in (0, 1) of one release.
    max_weight : float
        Weight clip M in [1e-75, 1e75]: every importance weight is cut to ``min(w, M)``.
    reward_range : (float, float), default (0.0, 1.0)
        Reward clip ``(lo, hi)`` with ``hi - lo >= 1e-75`` and ``|lo|, |hi| <= 1e75``: rewards
        (and DR's predictions) are cut to it.
    reward_model : {"private", "disjoint"} or None, default None
        DR's reward model (DR only; None is ``"private"``). ``"private"``: a per-arm ridge
        model fit on the log itself, privately, from ``model_share`` of the budget; the
        guarantee and the ledger cover the model and the estimate. ``"disjoint"``: the
        caller passes ``estimated_rewards`` and declares they come from a model fit on data
        disjoint from the log; the whole budget goes to the estimate.
    model_share : float, default 0.5
        Share in (0, 1) of the budget (of ``mu^2`` in GDP terms:
        :func:`private_estimator_plan`) spent on the private reward model.
    context_bound : float or None, default None
        The private model's context clip ``||x||_2 <= L``, L in [1e-75, 1e75] (None:
        ``sqrt(d)``).
    model_ridge : float, default 1.0
        The private model's ridge penalty ``lambda > 0``.

    Parameters are read-only after construction (the noise is calibrated from them): use
    ``set_params`` or ``clone``. ``multiplier`` and ``model_multiplier`` are read from the
    noise plan (``plan``), from which ``privacy``, ``ledger`` and the noise all come.

    Raises
    ------
    ValueError
        When a parameter is out of its range.
    """

    def __init__(self, estimator: str = "ips", *, epsilon: float, delta: float,
                 max_weight: float, reward_range: tuple[float, float] = (0.0, 1.0),
                 reward_model: str | None = None, model_share: float = 0.5,
                 context_bound: float | None = None, model_ridge: float = 1.0):
        self.estimator = estimator
        self.epsilon = epsilon
        self.delta = delta
        self.max_weight = max_weight
        self.reward_range = reward_range
        self.reward_model = reward_model
        self.model_share = model_share
        self.context_bound = context_bound
        self.model_ridge = model_ridge
        check_choice("estimator", estimator, PRIVATE_ESTIMATORS)
        eps = check_positive("epsilon", epsilon)
        dlt = check_delta_open(delta, why="for a private estimate")
        # in BOUND_RANGE: the sensitivities m (hi - lo) / n and the noise calibrated from them
        # stay normal floats (no subnormal rounding, no overflow)
        self._m = check_bound("max_weight", max_weight)
        lo, hi = check_range("reward_range", reward_range)
        if not (BOUND_RANGE[0] <= hi - lo and max(abs(lo), abs(hi)) <= BOUND_RANGE[1]):
            raise ValueError(f"reward_range must have width at least {BOUND_RANGE[0]:g} and "
                             f"endpoints within +/-{BOUND_RANGE[1]:g} (outside, the "
                             f"sensitivity or the noise underflows or overflows), got "
                             f"({lo!r}, {hi!r})")
        self._range = (lo, hi)
        self._model: str | None
        if estimator == "dr":
            self._model = "private" if reward_model is None else check_choice(
                "reward_model", reward_model, REWARD_MODELS)
        elif reward_model is not None:
            raise ValueError(f"reward_model applies to estimator='dr' only, got "
                             f"reward_model={reward_model!r} with estimator={estimator!r}")
        else:
            self._model = None
        self._share = check_real("model_share", model_share, low=0.0, high=1.0, low_open=True,
                                 high_open=True)
        self._L = None if context_bound is None else check_bound("context_bound",
                                                                 context_bound)
        self._ridge = check_positive("model_ridge", model_ridge)
        self._plan = private_estimator_plan(estimator, eps, dlt, self._m, self._range,
                                            self._model, self._share)

    @PlanView
    def multiplier(self) -> float:
        """Noise std of the released query / its sensitivity (the plan's ``multiplier``)."""
        return self.plan.scales["multiplier"]

    @PlanView
    def model_multiplier(self) -> float | None:
        """Noise multiplier of private DR's reward-model release (None otherwise)."""
        return self.plan.scales.get("model")

    def sensitivity(self, n: int) -> float:
        """l2 sensitivity of the released query, as computed in floating point, on logs of
        ``n`` rounds: ``Delta`` (module docstring) plus a bound on the rounding of one
        replaced round's term, of the correctly rounded sums (``math.fsum``) and of the
        division by ``n`` (:func:`_rounding_allowance`)."""
        lo, hi = self._range
        m = self._m
        if self.estimator == "ips":
            exact = m * (max(hi, 0.0) - min(lo, 0.0)) / n
        elif self.estimator == "dr":
            exact = (hi - lo) * (1.0 + 2.0 * m) / n
        else:
            exact = m * max(math.hypot(1.0, lo), math.hypot(1.0, hi), hi - lo)
        return _up(exact + _rounding_allowance(self.estimator, n, m, lo, hi))

    # -- DR's private reward model --------------------------------------------------------
    def _features(self, contexts: np.ndarray) -> np.ndarray:
        """``z = [x / L, 1] / sqrt 2`` of every row (contexts clipped to ``||x||_2 <= L``,
        default ``L = sqrt(d)``), ``||z||_2 <= 1`` exactly for the floats returned."""
        L = math.sqrt(contexts.shape[1]) if self._L is None else self._L
        u = unit_rows(contexts, L)[0]
        z = np.hstack([u, np.ones((contexts.shape[0], 1))]) * math.sqrt(0.5)
        return clip_rows(z, 2.0, 1.0)[0]  # the product's rounding cannot leave a row over 1

    def _targets(self, rewards: np.ndarray) -> np.ndarray:
        """The rewards clipped to ``[lo, hi]`` and centred, then clipped to ``[-B, B]``
        (``B`` = half the plan's ``model_target`` sensitivity, at least ``(hi - lo) / 2``), so
        ``|y| <= B`` holds exactly whatever the rounding of the centring."""
        lo, hi = self._range
        half = self.plan.sensitivities["model_target"] / 2.0
        return np.clip(np.clip(rewards, lo, hi) - (lo / 2.0 + hi / 2.0), -half, half)

    def model_noise(self) -> tuple[float, float]:
        """``(sigma_gram, sigma_target)`` of private DR's reward-model release: the Gram sums
        get symmetric Gaussian noise of diagonal std ``sigma_gram`` (off-diagonal
        ``sigma_gram / sqrt 2``), the target sums ``N(0, sigma_target^2 I)``. One replaced
        round changes the Gram sums by at most ``sqrt 2`` in Frobenius norm and the target
        sums by ``2B`` in l2, so with ``sigma_gram = sqrt 2 c`` and ``sigma_target = 2B c``
        the release is one Gaussian mechanism of sensitivity ``sqrt 2 / c`` in its noise
        metric, i.e. of noise multiplier ``k = c / sqrt 2`` (``model_multiplier``)."""
        if self._model != "private":
            raise ValueError(f"model_noise: {self!r} fits no reward model (reward_model="
                             f"{self._model!r})")
        c = _up(math.sqrt(2.0) * self.plan.scales["model"])
        sens = self.plan.sensitivities
        return _up(sens["model_gram"] * c), _up(sens["model_target"] * c)

    def model_sums(self, log: LoggedBandit) -> tuple[np.ndarray, np.ndarray]:
        """The noiseless per-arm sums ``(sum z z^T (K, d+1, d+1), sum y z (K, d+1))`` that
        private DR's reward model releases: NOT private, for tests and audits."""
        log = check_log(log)
        self.model_noise()
        z, y = self._features(log.contexts), self._targets(log.rewards)
        onehot = np.eye(log.n_arms)[log.actions]
        return (np.einsum("ik,ij,il->kjl", onehot, z, z), np.einsum("ik,i,ij->kj", onehot, y, z))

    def private_reward_model(self, log: LoggedBandit, rng: SeedLike) -> PrivateRewardModel:
        """Private DR's reward model, released: the per-arm ridge fit ``theta_k = (G_k +
        lambda I)^-1 b_k`` (eigenvalues of ``G_k + lambda I`` raised to ``lambda =
        model_ridge``) from the noisy sums of :meth:`model_sums`
        (:func:`~dpbandits.private_ridge.noisy_arm_sums`, noise :meth:`model_noise` drawn
        from ``rng``): post-processing of one Gaussian mechanism, the first event of the
        ledger."""
        log = check_log(log)
        sigma_gram, sigma_target = self.model_noise()
        z, y = self._features(log.contexts), self._targets(log.rewards)
        gram, target = noisy_arm_sums(z, y, log.actions, log.n_arms, sigma_gram, sigma_target,
                                      as_rng(rng, "rng"))
        theta = ridge_parts(gram, target, self._ridge, self._ridge)[0]
        lo, hi = self._range
        return PrivateRewardModel(theta, lo / 2.0 + hi / 2.0, self._features)

    # -- the query and its release -------------------------------------------------------
    def statistic(self, log: LoggedBandit, target: Any, estimated_rewards: Any = None
                  ) -> tuple[np.ndarray, dict[str, int]]:
        """The clipped query ``f(D)`` (shape (1,) for IPS/DR, (2,) for SNIPS) and the clip
        counts (not private). DR's query is given the reward model's predictions
        ``estimated_rewards`` (n, K): for private DR those of :meth:`private_reward_model`
        (``.predict(log.contexts)``)."""
        log = check_log(log)
        lo, hi = self._range
        pi = target_probabilities(log, target)
        w = importance_weights(log, pi)
        wc = np.minimum(w, self._m)
        r = np.clip(log.rewards, lo, hi)
        counts = {"weights": int((w > self._m).sum()),
                  "rewards": int((r != log.rewards).sum())}
        n = log.n_rounds
        # correctly rounded sums: their rounding is bounded in sensitivity()
        if self.estimator == "ips":
            return np.array([math.fsum(wc * r) / n]), counts
        if self.estimator == "snips":
            return np.array([math.fsum(wc * r), math.fsum(wc)]), counts
        if estimated_rewards is None:
            raise ValueError("estimator='dr' needs estimated_rewards (n, K): the predictions "
                             "of private_reward_model, or of a model fit on data disjoint "
                             "from this log")
        q_raw = check_estimated_rewards(log, estimated_rewards)
        q = np.clip(q_raw, lo, hi)
        counts["predictions"] = int((q != q_raw).sum())
        # the baseline sum_k pi_k q_k is cut to [lo, hi] (the targets' rows sum to 1 only
        # within 1e-9, and its rounding is not otherwise bounded by the range)
        baseline = np.clip((pi * q).sum(axis=1), lo, hi)
        terms = baseline + wc * (r - q[np.arange(n), log.actions])
        return np.array([math.fsum(terms) / n]), counts

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
        a real release, a fresh ``numpy.random.default_rng()`` kept secret). Private DR
        first releases its reward model (:meth:`private_reward_model`) from the same
        ``rng``, and refuses ``estimated_rewards``; ``reward_model="disjoint"`` needs them."""
        lv = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
        if self._model == "private" and estimated_rewards is not None:
            raise ValueError(
                "PrivateEstimator('dr') fits its own reward model privately; estimated_rewards "
                "from a model fit on this log would break its guarantee: for a model fit on "
                "data disjoint from the log, build it with reward_model='disjoint'")
        gen = as_rng(rng, "rng")
        if self._model == "private":
            estimated_rewards = self.private_reward_model(log, gen).predict(
                check_log(log).contexts)
        stat, counts = self.statistic(log, target, estimated_rewards)
        n = check_log(log).n_rounds
        self._warn_if_most_clipped(log, counts["rewards"])
        noisy = self.release(stat, n, gen)
        sigma = self.multiplier * self.sensitivity(n)
        z = float(norm.ppf(0.5 + lv / 2.0))
        lo, hi = self._range
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

    def _warn_if_most_clipped(self, log: LoggedBandit, rewards_clipped: int) -> None:
        """One line (``ClippingWarning``) when more than half of the logged rewards lie
        outside ``reward_range``, or, for the private reward model, more than half of the
        contexts outside ``||x||_2 <= context_bound``: the bounds do not fit the data."""
        n = log.n_rounds
        what = []
        if 2 * rewards_clipped > n:
            what.append(f"{rewards_clipped} of {n} rewards to reward_range={self._range}")
        if self._model == "private":
            d = log.contexts.shape[1]
            L = math.sqrt(d) if self._L is None else self._L
            over = int((np.linalg.norm(log.contexts, axis=1) > L).sum())
            if 2 * over > n:
                what.append(f"{over} of {n} contexts to ||x||_2 <= {L:.4g} (context_bound)")
        if what:
            warnings.warn(ClippingWarning(
                f"PrivateEstimator({self.estimator!r}).estimate: clipping changed "
                f"{' and '.join(what)}; rescale the data to these bounds, or widen them"),
                stacklevel=3)

    def total_interval(self, released: np.ndarray, n: int, alpha: float
                       ) -> tuple[float, float]:
        """An interval holding the clipped estimator's expected value with probability at
        least ``1 - alpha`` over the log's i.i.d. rounds and the noise: ``alpha/2`` for
        Hoeffding's sampling interval, ``alpha/2`` for the Gaussian noise (union bound;
        :class:`PrivateEstimate`). Depends on the release and public constants only."""
        sigma = self.multiplier * self.sensitivity(n)
        lo, hi = self._range
        m = self._m
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
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()
                           if k != "estimator")
        return f"PrivateEstimator({self.estimator!r}, {params})"

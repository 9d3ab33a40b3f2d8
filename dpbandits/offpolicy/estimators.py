"""Off-policy estimators of a fixed target policy's value from a log.

The value of a target policy ``pi`` is ``V(pi) = E_x[sum_k pi(k | x) mu_k(x)]``. From logged
rounds ``(x_i, a_i, r_i, p_i)``, importance weights ``w_i = pi(a_i | x_i) / p_i`` and, for the
model-based estimators, reward-model predictions ``q_i(k) = q_hat(x_i, k)`` with
``q_i(pi) = sum_k pi(k | x_i) q_i(k)``:

========================  ==========================================================================
``ips``                   ``mean_i w_i r_i`` (Horvitz & Thompson 1952, *A generalization of
                          sampling without replacement from a finite universe*); unbiased when
                          ``p_i > 0`` wherever ``pi`` puts mass
``clipped_ips``           ``mean_i min(w_i, M) r_i`` (truncated importance sampling: Ionides 2008,
                          *Truncated importance sampling*); biased down, lower variance
``snips``                 ``sum_i w_i r_i / sum_i w_i`` (Swaminathan & Joachims 2015, *The
                          self-normalized estimator for counterfactual learning*)
``direct_method``         ``mean_i q_i(pi)`` (the regression estimate; Dudík, Langford & Li 2011)
``doubly_robust``         ``mean_i [q_i(pi) + w_i (r_i - q_i(a_i))]`` (Dudík, Langford & Li 2011,
                          *Doubly robust policy evaluation and learning*): unbiased if the
                          propensities are right, whatever the model
``self_normalized_dr``    ``mean_i q_i(pi) + sum_i w_i (r_i - q_i(a_i)) / sum_i w_i`` (the
                          self-normalized DR of obp; Kallus & Uehara 2019, *Intrinsically efficient,
                          stable, and bounded off-policy evaluation for reinforcement learning*)
``switch_dr``             ``mean_i [q_i(pi) + 1{w_i <= tau} w_i (r_i - q_i(a_i))]`` (Wang, Agarwal &
                          Dudík 2017, *Optimal and adaptive off-policy evaluation in contextual
                          bandits*: DR where the weight is at most ``tau``, the model alone above)
========================  ==========================================================================

Switch-DR as written is Wang et al.'s Switch estimator with DR in place of IPS: their
``sum_a pi(a|x) q(x, a) 1{rho(x, a) > tau}`` over the large-weight actions plus the DR term
``sum_a pi(a|x) q(x, a) 1{rho(x, a) <= tau} + rho (r - q(x, a_i)) 1{rho <= tau}`` on the
small-weight ones add up to ``q(pi) + 1{w_i <= tau} w_i (r_i - q_i(a_i))``, which needs only
the logged action's weight (obp's ``SwitchDoublyRobust`` computes the same).

Every estimator takes the target as arms (n,), probabilities (n, K) or an object with
``action_probabilities(contexts)`` (a fitted agent), and an interval method
(:mod:`dpbandits.offpolicy.intervals`). None of them is private: each estimate is computed
from the users' logged data as they are (see :mod:`dpbandits.offpolicy.private`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandits._validation import SeedLike, check_positive
from dpbandits.envs.logged import LoggedBandit
from dpbandits.offpolicy._inputs import (
    check_estimated_rewards,
    check_log,
    check_reward_range,
    importance_weights,
    target_probabilities,
)
from dpbandits.offpolicy.estimate import PolicyEstimate
from dpbandits.offpolicy.intervals import Parts, interval

__all__ = ["clipped_ips", "direct_method", "doubly_robust", "ips", "self_normalized_dr",
           "snips", "switch_dr"]


def _finish(name: str, log: LoggedBandit, parts: Parts, w: np.ndarray, opts: dict, *,
            n_clipped: int = 0, term_range: tuple[float, float] | None = None
            ) -> PolicyEstimate:
    reward_range = check_reward_range(log, opts.pop("reward_range"))
    method = opts.pop("interval")
    se, lo, hi, what, cut = interval(parts, method=method, reward_range=reward_range,
                                     term_range=term_range if reward_range else None, **opts)
    return PolicyEstimate(name, parts.value(), se, lo, hi, float(opts["level"]), what,
                          log.n_rounds, int((w > 0).sum()), n_clipped, cut)


def _ips_term_range(log: LoggedBandit, reward_range, max_weight: float | None
                    ) -> tuple[float, float] | None:
    """Bounds of ``w_i r_i`` known before seeing the data (Bernstein needs them)."""
    if reward_range is None:
        return None
    bound = max_weight if max_weight is not None else (log.n_arms if log.is_uniform else None)
    if bound is None:
        return None
    lo, hi = reward_range
    return bound * min(lo, 0.0), bound * max(hi, 0.0)


def _model_parts(log: LoggedBandit, target, estimated_rewards):
    pi = target_probabilities(log, target)
    q = check_estimated_rewards(log, estimated_rewards)
    w = importance_weights(log, pi)
    baseline = (pi * q).sum(axis=1)
    residual = log.rewards - q[np.arange(log.n_rounds), log.actions]
    return w, baseline, residual


def ips(log: LoggedBandit, target: Any, *, interval: str = "normal", level: float = 0.95,
        rng: SeedLike | None = None, n_bootstrap: int = 2000,
        reward_range: tuple[float, float] | None = None) -> PolicyEstimate:
    """Inverse-propensity estimate ``mean_i w_i r_i`` of ``target``'s value on ``log``.

    ``interval``: ``"normal"`` (CLT), ``"bootstrap"`` (needs ``rng``) or ``"bernstein"``
    (finite-sample; needs ``reward_range`` and a uniform log, where ``w_i <= K``);
    ``reward_range=(lo, hi)`` cuts the interval to it (:mod:`~dpbandits.offpolicy.intervals`).
    """
    log = check_log(log)
    w = importance_weights(log, target_probabilities(log, target))
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    term_range = _ips_term_range(log, check_reward_range(log, reward_range), None)
    if interval == "bernstein" and term_range is None:
        raise ValueError(_no_bernstein_for_ips(log, reward_range))
    return _finish("ips", log, Parts(w * log.rewards), w, opts, term_range=term_range)


def _no_bernstein_for_ips(log: LoggedBandit, reward_range) -> str:
    """Why IPS has no Bernstein interval on ``log``, and what to use instead."""
    need = ("interval='bernstein' needs per-round terms in a known range (every w_i r_i "
            "bounded before seeing the data)")
    if log.is_uniform:
        return need + "; give reward_range=(lo, hi), the range every reward lies in"
    p = log.propensities
    return (need + f": on a uniform log w_i <= n_arms bounds them, but log {log.name!r} is "
            f"not uniform (propensities from {p.min():.3g} to {p.max():.3g}), so the "
            f"weights w_i = pi(a_i | x_i) / p_i are bounded only by the data (up to "
            f"{1.0 / p.min():.3g} here); use clipped_ips(max_weight=M), whose weights are at "
            "most M, or interval='normal' or 'bootstrap'")


def clipped_ips(log: LoggedBandit, target: Any, *, max_weight: float,
                interval: str = "normal", level: float = 0.95, rng: SeedLike | None = None,
                n_bootstrap: int = 2000, reward_range: tuple[float, float] | None = None
                ) -> PolicyEstimate:
    """IPS with every weight above ``max_weight`` set to ``max_weight``: ``mean_i min(w_i, M)
    r_i`` (obp's ``InverseProbabilityWeighting(lambda_=M)``). ``n_clipped`` counts the clipped
    weights. Intervals as :func:`ips` (``"bernstein"`` on any log, with ``reward_range``)."""
    log = check_log(log)
    m = check_positive("max_weight", max_weight)
    w = importance_weights(log, target_probabilities(log, target))
    clipped = np.minimum(w, m)
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    term_range = _ips_term_range(log, check_reward_range(log, reward_range), m)
    return _finish("clipped_ips", log, Parts(clipped * log.rewards), w, opts,
                   n_clipped=int((w > m).sum()), term_range=term_range)


def _require_overlap(name: str, log: LoggedBandit, w: np.ndarray, remedy: str) -> None:
    """A self-normalized estimator divides by the weights' sum: ``ValueError`` (saying
    ``remedy``) when no weight is positive (the target never plays a logged action)."""
    if not w.sum() > 0.0:
        raise ValueError(f"{name}: the target policy never plays the logged action in any of "
                         f"the {log.n_rounds} rounds of log {log.name!r}; {remedy}")


def snips(log: LoggedBandit, target: Any, *, interval: str = "normal", level: float = 0.95,
          rng: SeedLike | None = None, n_bootstrap: int = 2000,
          reward_range: tuple[float, float] | None = None) -> PolicyEstimate:
    """Self-normalized IPS ``sum_i w_i r_i / sum_i w_i``; its normal interval is the delta
    method, its bootstrap recomputes the ratio on each resample.

    Raises ``ValueError`` when the target policy never plays a logged action (every weight is
    0: the log says nothing about it)."""
    log = check_log(log)
    w = importance_weights(log, target_probabilities(log, target))
    _require_overlap("snips", log, w, "its value cannot be estimated from this log")
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    return _finish("snips", log, Parts(w * log.rewards, b=w), w, opts)


def direct_method(log: LoggedBandit, target: Any, *, estimated_rewards: Any,
                  interval: str = "normal", level: float = 0.95, rng: SeedLike | None = None,
                  n_bootstrap: int = 2000, reward_range: tuple[float, float] | None = None
                  ) -> PolicyEstimate:
    """Direct Method ``mean_i sum_k pi(k | x_i) q_hat(x_i, k)`` from ``estimated_rewards``
    (n, K) (e.g. :func:`~dpbandits.offpolicy.fit_reward_model`). Its intervals hold the model
    fixed: they reflect the spread of the contexts, not the model's error."""
    log = check_log(log)
    w, baseline, _ = _model_parts(log, target, estimated_rewards)
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    return _finish("direct_method", log, Parts(baseline), w, opts)


def doubly_robust(log: LoggedBandit, target: Any, *, estimated_rewards: Any,
                  interval: str = "normal", level: float = 0.95, rng: SeedLike | None = None,
                  n_bootstrap: int = 2000, reward_range: tuple[float, float] | None = None
                  ) -> PolicyEstimate:
    """Doubly robust ``mean_i [q_i(pi) + w_i (r_i - q_i(a_i))]`` (module docstring)."""
    log = check_log(log)
    w, baseline, residual = _model_parts(log, target, estimated_rewards)
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    return _finish("doubly_robust", log, Parts(w * residual, c=baseline), w, opts)


def self_normalized_dr(log: LoggedBandit, target: Any, *, estimated_rewards: Any,
                       interval: str = "normal", level: float = 0.95,
                       rng: SeedLike | None = None, n_bootstrap: int = 2000,
                       reward_range: tuple[float, float] | None = None) -> PolicyEstimate:
    """Self-normalized DR ``mean_i q_i(pi) + sum_i w_i (r_i - q_i(a_i)) / sum_i w_i``; when no
    weight is positive the correction is undefined and ``ValueError`` says so."""
    log = check_log(log)
    w, baseline, residual = _model_parts(log, target, estimated_rewards)
    _require_overlap("self_normalized_dr", log, w, "use direct_method or doubly_robust")
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    return _finish("self_normalized_dr", log, Parts(w * residual, b=w, c=baseline), w, opts)


def switch_dr(log: LoggedBandit, target: Any, *, estimated_rewards: Any, threshold: float,
              interval: str = "normal", level: float = 0.95, rng: SeedLike | None = None,
              n_bootstrap: int = 2000, reward_range: tuple[float, float] | None = None
              ) -> PolicyEstimate:
    """Switch-DR ``mean_i [q_i(pi) + 1{w_i <= tau} w_i (r_i - q_i(a_i))]`` with ``tau =
    threshold`` (> 0; ``inf`` is DR). ``n_clipped`` counts the rounds switched to the model
    (``w_i > tau``)."""
    log = check_log(log)
    tau = check_positive("threshold", threshold, allow_inf=True)
    w, baseline, residual = _model_parts(log, target, estimated_rewards)
    keep = w <= tau
    opts = dict(interval=interval, level=level, rng=rng, n_bootstrap=n_bootstrap,
                reward_range=reward_range)
    return _finish("switch_dr", log, Parts(keep * w * residual, c=baseline), w, opts,
                   n_clipped=int((~keep).sum()))

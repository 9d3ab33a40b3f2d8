"""Audits of the private off-policy estimators (``dpbandits.offpolicy.private``): one release
of private IPS, SNIPS and DR on a 10-round log whose first round is replaced.

The canary round is the worst case of the sensitivity bound: a matched round with a weight
above the clip ``M = 10`` and the top reward against an unmatched round with reward 0 (IPS,
SNIPS: the bound is attained), and for DR a clipped weight with the residual flipped from
``+1`` to ``-1`` (20 of the bound's 21). The statistic is the release projected on the
difference of the two worlds' queries (Neyman-Pearson optimal for Gaussian noise), read from
what :meth:`~dpbandits.offpolicy.private.PrivateEstimator.estimate` -- the entry point a user
calls -- returns (its ``released`` query), one call per run, so a change of the noise anywhere
on the path of an estimate is audited. A SNIPS estimate whose noisy sum of weights is not
positive raises; that run's statistic is :data:`REFUSED` (below every projection: the refusal
is a function of the release, so the statistic stays post-processing). The broken variant
patches the instance's sensitivity to forget the weight clip (noise M times too small).
"""

from __future__ import annotations

import numpy as np

from dpbandits.audits._registry import AuditContext, register_variants
from dpbandits.audits._scaffold import shrink_output
from dpbandits.envs.logged import LoggedBandit
from dpbandits.offpolicy.private import PrivateEstimator
from dpbandits.privacy.audit import AuditResult

EPS, DELTA, M, N = 1.0, 1e-5, 10.0, 10
#: the statistic of a SNIPS run whose estimate was refused (noisy sum of weights <= 0)
REFUSED = -1e300


def canary(world: int, estimator: str) -> tuple[LoggedBandit, np.ndarray, np.ndarray | None]:
    """``(log, target probabilities, estimated rewards)`` of ``D`` (``world = 0``) or ``D'``:
    round 0 differs, rounds 1-9 are unmatched (arm 1 logged, target plays arm 0) with reward
    0. IPS/SNIPS: round 0 logs arm 0 with propensity 0.05 (weight 20, clipped to 10) and
    reward 1 on ``D``, arm 1 with reward 0 (weight 0) on ``D'``. DR: the target is uniform,
    round 0 logs arm 0 with propensity 0.01 (weight 50, clipped to 10) and predictions
    ``(0, 1)``, reward 1 on ``D``; predictions ``(1, 0)``, reward 0 on ``D'``."""
    x = np.zeros((N, 1))
    x[0, 0] = world
    actions = np.ones(N, dtype=np.int64)
    rewards = np.zeros(N)
    props = np.full(N, 0.5)
    if estimator == "dr":
        actions[0], props[0], rewards[0] = 0, 0.01, 1.0 - world
        pi = np.full((N, 2), 0.5)
        q = np.zeros((N, 2))
        q[0] = (world, 1 - world)
        return LoggedBandit(x, actions, rewards, props, 2, name=f"canary-{world}"), pi, q
    pi = np.tile([1.0, 0.0], (N, 1))
    if world == 0:
        actions[0], props[0], rewards[0] = 0, 0.05, 1.0
    return LoggedBandit(x, actions, rewards, props, 2, name=f"canary-{world}"), pi, None


def _audit_private_ope(ctx: AuditContext) -> AuditResult:
    estimator = ctx.name.removeprefix("dp-ope-")
    # DR's canary fixes the predictions: the model is declared fit on other data (the
    # private reward model is a separate Gaussian release of the composed ledger)
    model = {"reward_model": "disjoint"} if estimator == "dr" else {}
    probe = PrivateEstimator(estimator, epsilon=EPS, delta=DELTA, max_weight=M, **model)
    if ctx.broken:
        shrink_output(probe, "sensitivity", M)
    logs = [canary(w, estimator) for w in (0, 1)]
    stats = [probe.statistic(*c)[0] for c in logs]
    direction = (stats[1] - stats[0]) / np.linalg.norm(stats[1] - stats[0])

    def one(log, target, rewards, rng) -> float:
        try:
            released = probe.estimate(log, target, rng=rng, estimated_rewards=rewards).released
        except ValueError as err:  # SNIPS refuses a non-positive noisy sum of weights
            if estimator != "snips" or "noisy sum of weights" not in str(err):
                raise
            return REFUSED
        return float(np.asarray(released) @ direction)

    def sampler(world, n, rng):
        log, target, rewards = logs[world]
        return np.array([one(log, target, rewards, rng) for _ in range(n)])

    attained = float(np.linalg.norm(stats[1] - stats[0])) / PrivateEstimator(
        estimator, epsilon=EPS, delta=DELTA, max_weight=M, **model).sensitivity(N)
    return ctx.audit(
        sampler, epsilon=EPS, delta=DELTA, mu_claim=1.0 / probe.multiplier,
        basis=probe.privacy.basis,
        statistic="white-box: the release projected on the difference of the worlds' queries",
        canary=f"round 0 of {N} replaced; clip M = {M:g}, rewards in [0, 1]",
        extra={"multiplier": probe.multiplier, "sensitivity_attained": attained})


_add = register_variants(
    _audit_private_ope, fast_runs=4_000, thorough_runs=200_000,
    label="sensitivity without the weight clip (noise / M)",
    broken_variant="the sensitivity forgets the weight clip M = 10 (noise M times too small)",
    shows="the Gaussian noise hides one replaced logged round within the ledger's Gaussian "
          "event (mu = 1/k), on a canary at the sensitivity bound (DR: 20/21 of it)",
    cannot_show="whether the target policy or the reward model were fit on the same log "
                "(the guarantee assumes they were not); neighbouring logs of other sizes")
_add("dp-ope-ips", component="offpolicy.PrivateEstimator('ips'): one release of clipped IPS",
     canary="round 0 of 10: matched, weight 20 (clip 10), reward 1 vs unmatched, reward 0")
_add("dp-ope-snips",
     component="offpolicy.PrivateEstimator('snips'): the two noisy sums of clipped SNIPS",
     canary="round 0 of 10: matched, weight 20 (clip 10), reward 1 vs unmatched, reward 0; the "
            "pair of sums moves by the triangle's diameter M sqrt(2)")
_add("dp-ope-dr", component="offpolicy.PrivateEstimator('dr'): one release of clipped DR",
     canary="round 0 of 10, uniform target: weight 50 (clip 10), predictions (0, 1), reward 1 "
            "vs predictions (1, 0), reward 0 (20 of the bound's 21)")

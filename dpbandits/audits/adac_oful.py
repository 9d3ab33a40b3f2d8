"""Audits of AdaC-OFUL (``adac-oful``): the episode release, the private determinant trigger,
and the published reward-only release.

Every user is read by one episode: its trigger (AboveThreshold, ``eps_1``-DP) and its
Gaussian release of the episode's Gram and targets (``1/k``-GDP). Each audit puts one
canary user in one episode and keeps every other user's context at zero (a zero row adds
nothing to any statistic). The canary's own arm is drawn from equal indices (all releases
still zero), hence uniform whatever the world.

Broken variants are copies of the instance drawing from a shrunk noise plan, never the code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandits.agents.adac_oful import AdaCOFUL
from dpbandits.audits._registry import AuditContext, register
from dpbandits.audits._scaffold import first_user_round, shrink_plan
from dpbandits.privacy.audit import AuditResult, Sampler

EPS, DELTA = 1.0, 1e-5
REWARD = 10.0  # beyond the reward clip B = 1: the canary also checks that the clip holds

# K = 2, d = 2, L = B = 1 (u = x); doubling from 1: the first episode is user 1 alone,
# released after round 1
RELEASE_PARAMS: dict[str, Any] = dict(n_arms=2, dim=2, horizon=8, schedule="doubling",
                                      first_episode=1, context_bound=1.0, epsilon=EPS,
                                      delta=DELTA)
# K = 2, d = 1, L = 1; the trigger's threshold ln(det_factor) is set to 2 Delta (see below)
TRIGGER_ROUNDS = 20
TRIGGER_PARAMS: dict[str, Any] = dict(n_arms=2, dim=1, horizon=TRIGGER_ROUNDS + 1,
                                      context_bound=1.0, epsilon=EPS, delta=DELTA)


def worst_pair(s_gram: float, s_target: float, y_max: float) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows ``u0, u1`` (d = 2) at the angle where the joint sensitivity of a Gram (GOE
    noise ``s_gram``) and targets (noise ``s_target``, clip ``y_max``) release is attained:
    ``<u0, u1> = B/(2A)`` with ``A = 2/s_gram^2``, ``B = 2 y_max^2/s_target^2`` (capped at 1;
    :func:`~dpbandits.agents.screened_ls.fit_sensitivity`)."""
    c = min(1.0, (2.0 * y_max**2 / s_target**2) / (2.0 * 2.0 / s_gram**2))
    return np.array([1.0, 0.0]), np.array([c, math.sqrt(1.0 - c * c)])


def whitened_direction(u0: np.ndarray, u1: np.ndarray, y_max: float, s_gram: float,
                       s_target: float, off_diagonal_variance: float
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The likelihood-ratio direction of a release ``(Gram, targets) + noise`` between the
    canary ``(u0, -y_max)`` and ``(u1, +y_max)``: the upper triangle (diagonal included) of
    ``(u1 u1' - u0 u0') / var`` (``var`` = ``s_gram^2`` on the diagonal,
    ``off_diagonal_variance * s_gram^2`` off it) and ``y_max (u0 + u1) / s_target^2``."""
    d_gram = (np.outer(u1, u1) - np.outer(u0, u0)) / s_gram**2
    d_gram[~np.eye(u0.size, dtype=bool)] /= off_diagonal_variance
    return np.triu(d_gram), y_max * (u0 + u1) / s_target**2


def first_user_sampler(probe: Any, u0: np.ndarray, u1: np.ndarray,
                       project: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Sampler:
    """The sampler of a first-user canary: user 1 has context ``u0`` and reward ``-REWARD``
    (world 0) or ``u1`` and ``+REWARD`` (world 1); the statistic is ``project(gram,
    target)`` of its arm's blocks of the agent's summed statistics (``_gram``, ``_target``)
    after round 1."""

    def sampler(world, n, rng):
        agent, arm = first_user_round(probe, u0, u1, world, n, rng, REWARD)
        idx = np.arange(n)
        return project(agent._gram[idx, arm], agent._target[idx, arm])

    return sampler


def _release_audit(ctx: AuditContext, protect: str) -> AuditResult:
    probe = AdaCOFUL(**RELEASE_PARAMS, protect=protect)
    if ctx.broken:
        probe = shrink_plan(probe, 2.0, "gram", "target")
    ref = AdaCOFUL(**RELEASE_PARAMS)  # the certified noise scales fix the canary's angle
    u0, u1 = worst_pair(ref.sigmas["gram"], ref.sigmas["target"], 1.0)
    # GOE noise: variance s^2 on the diagonal, s^2/2 off it. The published release has no
    # Gram noise: its Gram alone (weighted as in the certified variant) tells the worlds apart
    published = protect == "reward"
    d_gram, d_b = whitened_direction(u0, u1, 1.0, ref.sigmas["gram"],
                                     probe.sigmas["target"], 0.5)
    if published:
        d_b = np.zeros_like(d_b)

    sampler = first_user_sampler(
        probe, u0, u1, lambda gram, b: np.einsum("rij,ij->r", gram, d_gram) + b @ d_b)
    return ctx.audit(
        sampler, epsilon=EPS, delta=DELTA, mu_claim=1.0 / probe.multiplier, notion="JDP",
        batch_size=50_000, basis=probe.privacy.basis,
        statistic=("white-box: released Gram of the canary's arm after its episode, "
                   "projected on the difference of the worlds" if published else
                   "white-box: released Gram and targets of the canary's arm after its "
                   "episode, projected on the whitened difference of the worlds"),
        canary="user 1 (alone in episode 1): u0, reward -10 vs u1, reward +10 (clip 1), "
               "<u0, u1> at the worst angle; K = 2, d = 2",
        notes=("the published release adds no noise to the Gram: a user's context is exposed"
               if published else ""),
        extra={"sigma_gram": probe.sigmas["gram"], "sigma_target": probe.sigmas["target"],
               "multiplier": probe.multiplier, "cos_u0_u1": float(u0 @ u1)})


@register("adac-oful", fast_runs=20_000, thorough_runs=200_000, label="release noise / 2")
def audit_adac_oful_release(ctx: AuditContext) -> AuditResult:
    """agents.adac_oful.AdaCOFUL (protect='user'): one episode's release (Gram and targets)

    Canary: user 1, alone in the first episode (doubling schedule, uniform arm): unit context
        u0 with reward -10 vs u1 with reward +10 (clipped to -+1), <u0, u1> at the angle where
        the joint sensitivity is attained; K = 2, d = 2, L = 1
    Broken variant: Gram and target noise standard deviations / 2
    Shows: the release after the canary's episode hides its context and reward as the ledger's
        Gaussian event claims (mu = 1/k, exact joint sensitivity, so the audit is tight)
    Cannot show: a canary that changes arm (bounded by the same-arm case in the analysis);
        the trigger is audited by adac-oful-trigger; the composition of trigger and release
        and the billboard lemma are the analysis, not audited
    """
    return _release_audit(ctx, "user")


@register("adac-oful-published", fast_runs=5_000, thorough_runs=50_000,
          broken_variant="(none: a violation of the published claim is expected)",
          expected="violation", has_broken=False)
def audit_adac_oful_published(ctx: AuditContext) -> AuditResult:
    """agents.adac_oful.AdaCOFUL (protect='reward', the published release, certified=False)

    Canary: as adac-oful: user 1 alone in the first episode, u0 and reward -10 vs u1 and
        reward +10; K = 2, d = 2, L = 1
    Shows: the published AdaC-OFUL release (noise on the targets only, the Gram exact) does not
        protect a user's context: the released Gram tells u0 from u1 with certainty, so
        (epsilon, delta)-JDP over users (x_t, r_t) fails
    Cannot show: the published guarantee for reward-only neighbours (contexts public), which
        the Gaussian noise on the targets does give
    """
    return _release_audit(ctx, "reward")


@register("adac-oful-trigger", fast_runs=20_000, thorough_runs=200_000,
          label="trigger noise / 10")
def audit_adac_oful_trigger(ctx: AuditContext) -> AuditResult:
    """agents.adac_oful.AdaCOFUL (protect='user'): the AboveThreshold determinant trigger

    Canary: user 1: context 0 vs unit context (d = 1, L = 1), every later user context 0, so
        the trigger's query is 0 vs its sensitivity Delta = ln(1 + 1/lambda_T) at every round
        (attained: the first episode's design is lambda_T I); threshold ln(det_factor) = 2 Delta;
        20 rounds
    Broken variant: both Laplace noise scales of the trigger / 10
    Shows: the first episode's end (the round the trigger fires) hides the canary within the
        trigger's pure eps_1 claim
    Cannot show: AboveThreshold's full eps_1 (one canary shifting every query by Delta reveals
        about eps_1/2 through the threshold noise); the release is audited by adac-oful
    """
    probe = AdaCOFUL(**TRIGGER_PARAMS)
    probe = AdaCOFUL(**TRIGGER_PARAMS, det_factor=math.exp(2.0 * probe.trigger_sensitivity))
    if ctx.broken:  # both Laplace scales / 10, as if the sensitivity were Delta / 10
        probe = shrink_plan(probe, 10.0, "trigger_threshold", "trigger_query")
    H = TRIGGER_ROUNDS

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        canary, zero, reward = np.full((n, 1), float(world)), np.zeros((n, 1)), np.zeros(n)
        first = np.full(n, H + 1)
        for t in range(H):
            x = canary if t == 0 else zero
            agent.update(x, agent.act(x), reward)
            first[(agent.n_releases_ > 0) & (first > H)] = t + 1
        return (H + 1 - first).astype(float)

    return ctx.audit(
        sampler, epsilon=probe.eps_trigger, delta=0.0, notion="DP", batch_size=50_000,
        basis="AboveThreshold (Dwork & Roth 2014, Thm 3.23): eps_1-DP per episode",
        statistic="white-box: rounds left when the first episode ends (0: never within 20)",
        canary="user 1: context 0 vs 1 (d = 1), later users context 0; threshold 2 Delta",
        extra={"eps_trigger": probe.eps_trigger, "sensitivity": probe.trigger_sensitivity})

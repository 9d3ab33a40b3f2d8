"""Audits of the screened private least-squares agent (``dp-screened-ls``).

The agent releases every user's data once: in a screening release (arm contrasts of
row-normalized targets) or in a fitting release (the screened Gram and targets, one Gaussian
mechanism with two noise scales). Each audit puts one canary user in one release, keeps
every other user's row at zero (a zero row contributes nothing), and reads the released
sums after that release -- what every later user's action post-processes (JDP = DP of the
releases + billboard lemma). The canary's own action is drawn before its data is used and,
with a zero estimate, is uniform whatever the world: it orients the statistic but carries
no information about the canary.

Broken variants patch the *instance* (its noise scales or its clip level), never the code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandits.agents.screened_ls import ScreenedLS
from dpbandits.audits._registry import AuditContext, register
from dpbandits.audits._scaffold import shrink_plan, signed
from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import AuditResult, Sampler

EPS, DELTA = 1.0, 1e-5
REWARD = 10.0  # far beyond every clip level: the canary also checks that clipping is enforced

# K = 2, d = 1, the first episode is user 1 alone; y_max = clip_screen / sqrt(d) = 1
SCREEN_PARAMS: dict[str, Any] = dict(n_arms=2, dim=1, horizon=8, first_episode=1,
                                     clip_screen=1.0, epsilon=EPS, delta=DELTA)
# K = 2, d = 2 = |S|; episodes end at 1, 3, 7, 15, 16: user 4 opens the first fitting
# episode (released after round 7); y_max = clip_fit / sqrt(|S|) = 1; a threshold no
# release can pass keeps the estimate at zero, so every action is uniform
FIT_PARAMS: dict[str, Any] = dict(n_arms=2, dim=2, horizon=16, first_episode=1, screen_size=2,
                                  clip_fit=math.sqrt(2.0), threshold=1e9, epsilon=EPS,
                                  delta=DELTA)
FIT_CANARY, FIT_RELEASE = 4, 7

# K = 3: the screening sensitivity 2 y_max sqrt((K-1)/K) (a change of reward on one arm) is
# above the different-arm value sqrt(2) y_max for every K >= 3 and equal to it at K = 2, so
# only an audit at K >= 3 can tell them apart. Noise sized for sqrt(2) y_max is smaller by
# sqrt(3/4) at K = 3: the true mu is sqrt(4/3) = 1.155 times the claim. At epsilon = 4
# (mu = 0.925) that is a gap of 0.143; the certified mu_lb of the split auditor at 0.999 sits
# about 9.0 / sqrt(n) below the estimate, which has a standard deviation of about
# 1.84 / sqrt(n) (normal approximation at the best threshold), so n = 20,000 runs per world
# miss the broken variant with probability below 1e-8 (6 standard deviations) while the
# correct agent's expected mu_lb stays 0.064 below its claim.
EPS_K3 = 4.0
SCREEN_K3_PARAMS: dict[str, Any] = dict(SCREEN_PARAMS, n_arms=3, epsilon=EPS_K3)


def _audit(ctx: AuditContext, sampler: Sampler, probe: ScreenedLS, eps: float = EPS,
           **labels: object) -> AuditResult:
    """Audit ``sampler`` against the agent's claim: (eps, DELTA)-JDP, read as Gaussian DP
    (every release is one Gaussian mechanism)."""
    return ctx.audit(sampler, epsilon=eps, delta=DELTA, mu_claim=gdp_mu(eps, DELTA),
                     notion="JDP", batch_size=50_000, basis=probe.privacy.basis, **labels)


@register("dp-screened-ls", fast_runs=20_000, thorough_runs=200_000,
          label="screening noise / 2")
def audit_screened_ls_screen(ctx: AuditContext) -> AuditResult:
    """agents.screened_ls.ScreenedLS: screening release (arm contrasts)

    Canary: user 1 (alone in the first episode, uniform arm a_1): x = 1, reward +10 vs -10
        (clipped to +-1); K = 2, d = 1
    Broken variant: screening noise standard deviation / 2
    Shows: the released contrasts after user 1 hide user 1's reward as claimed; the canary
        attains the contrast sensitivity sqrt(2) y_max (the audit is tight) and checks that the
        reward clip is enforced
    Cannot show: one screening release only (parallel composition over episodes and the
        billboard lemma are the analysis, not audited); the fitting release is audited by
        dp-screened-ls-fit
    """
    probe = ScreenedLS(**SCREEN_PARAMS)
    if ctx.broken:
        probe = shrink_plan(probe, 2.0, "screen")

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        x = np.ones((n, 1))
        a1 = agent.act(x)
        agent.update(x, a1, signed(world, n, REWARD))
        rel = agent._released[:, :, 0]
        idx = np.arange(n)
        return rel[idx, a1] - rel[idx, 1 - a1]

    return _audit(ctx, sampler, probe,
                  statistic="white-box: released contrast of arm a_1 minus the other arm's "
                            "after round 1",
                  canary="user 1: x = 1, reward +10 vs -10 (clip 1); K = 2, d = 1",
                  extra={"sigma_screen": probe.sigmas["screen"], "multiplier": probe.multiplier})


@register("dp-screened-ls-k3", fast_runs=20_000, thorough_runs=200_000,
          label="screening noise sized for a change of arm")
def audit_screened_ls_screen_k3(ctx: AuditContext) -> AuditResult:
    """agents.screened_ls.ScreenedLS: screening release (arm contrasts) at K = 3

    Canary: user 1 (alone in the first episode, uniform arm a_1 of 3): x = 1, reward +10 vs -10
        (clipped to +-1); K = 3, d = 1, epsilon = 4
    Broken variant: screening noise sized with the different-arm sensitivity sqrt(2) y_max
        instead of 2 y_max sqrt((K-1)/K) (the two agree at K = 2, so the K = 2 audit passes it)
    Shows: at K = 3 the released contrasts after user 1 hide user 1's reward as claimed; the
        canary (same arm, reward flipped) attains the contrast sensitivity 2 y_max sqrt(2/3),
        the largest of all replace-one pairs for K >= 3
    Cannot show: one screening release only, and one K; K >= 4 follows from the same formula
        (the sensitivity grows towards 2 y_max), not from an audit
    """
    probe = ScreenedLS(**SCREEN_K3_PARAMS)
    if ctx.broken:  # the different-arm sensitivity, right only at K = 2
        different_arm = math.sqrt(2.0) * probe._y_screen
        probe = probe.with_plan(probe.plan.replaced(screen=probe.multiplier * different_arm))

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        x = np.ones((n, 1))
        a1 = agent.act(x)
        agent.update(x, a1, signed(world, n, REWARD))
        # the contrasts sum to zero over arms: arm a_1's is the whole signal along the
        # canary's direction e_a1 - (1/K) 1 (the likelihood-ratio statistic)
        return agent._released[np.arange(n), a1, 0]

    return _audit(ctx, sampler, probe, eps=EPS_K3,
                  statistic="white-box: released contrast of arm a_1 after round 1",
                  canary="user 1: x = 1, reward +10 vs -10 (clip 1); K = 3, d = 1",
                  extra={"sigma_screen": probe.sigmas["screen"], "multiplier": probe.multiplier,
                         "n_arms": 3})


def fit_canary(agent: ScreenedLS) -> tuple[np.ndarray, np.ndarray, float]:
    """Unit rows ``u0, u1`` (d = 2) at the angle that attains the fitting release's
    sensitivity (``<u0, u1> = B / 2A``, capped at 1) and the clip level ``y_max``."""
    a = 2.0 / agent.sigmas["gram"] ** 2
    b = 2.0 * agent._y_fit ** 2 / agent.sigmas["target"] ** 2
    c = min(1.0, b / (2.0 * a))
    return np.array([1.0, 0.0]), np.array([c, math.sqrt(1.0 - c * c)]), agent._y_fit


@register("dp-screened-ls-fit", fast_runs=20_000, thorough_runs=200_000,
          label="fitting rewards not clipped")
def audit_screened_ls_fit(ctx: AuditContext) -> AuditResult:
    """agents.screened_ls.ScreenedLS: fitting release (screened Gram and targets)

    Canary: user 4 (first of the first fitting episode, uniform arm): unit context u0 with reward
        -10 vs u1 with reward +10 (clipped to -+1), <u0, u1> at the angle where the joint
        sensitivity is attained; K = 2, d = |S| = 2; every other user has context 0
    Broken variant: the fitting targets are not clipped (clip level set to infinity)
    Shows: the released Gram and targets after the canary's episode hide the canary's context
        and reward as claimed; the statistic is the likelihood-ratio direction of the two worlds
        (off-diagonal Gram entries weighted by their variance sigma_G^2 / 2), so the audit
        is tight for the exact joint sensitivity the calibration uses
    Cannot show: the case where the canary's context moves it to another arm (bounded by the
        same-arm case in the analysis) is not exercised: the estimate is held at zero so that
        the arm is independent of the world
    """
    probe = ScreenedLS(**FIT_PARAMS)
    if ctx.broken:
        probe._y_fit = math.inf
    u0, u1, y = fit_canary(ScreenedLS(**FIT_PARAMS))
    s_g, s_b = probe.sigmas["gram"], probe.sigmas["target"]
    # D' minus D of the canary's contribution, divided by the noise variances
    d_gram = (np.outer(u1, u1) - np.outer(u0, u0)) / s_g**2
    d_gram[~np.eye(2, dtype=bool)] *= 2.0  # off-diagonal noise variance is s_g^2 / 2
    d_gram = np.triu(d_gram)  # each off-diagonal entry counted once
    d_b = (y * u1 + y * u0) / s_b**2  # y: +y_max u1 in D', -y_max u0 in D

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        zero_x, zero_r = np.zeros((n, 2)), np.zeros(n)
        for t in range(1, FIT_RELEASE + 1):
            if t == FIT_CANARY:
                x = np.tile(u1 if world else u0, (n, 1))
                arm = agent.act(x)
                agent.update(x, arm, signed(world, n, REWARD))
            else:
                agent.update(zero_x, agent.act(zero_x), zero_r)
        idx = np.arange(n)
        gram, b = agent._gram_released[idx, arm], agent._b_released[idx, arm]
        return np.einsum("rij,ij->r", gram, d_gram) + b @ d_b

    return _audit(ctx, sampler, probe,
                  statistic="white-box: released Gram and targets of the canary's arm after its "
                            "episode, projected on the whitened difference of the worlds",
                  canary="user 4: u0, reward -10 vs u1, reward +10 (clip 1), <u0, u1> at the "
                         "worst angle; other users context 0; K = 2, d = 2",
                  extra={"sigma_gram": s_g, "sigma_target": s_b, "cos_u0_u1": float(u0 @ u1),
                         "multiplier": probe.multiplier})

"""Audits of the moment-debiased private least-squares agent (``dp-moment-ls``).

Its screening release is new: the arm-independent second moment ``M = sum u u^T`` of all the
episode's users released together with the arm contrasts of the targets, one Gaussian
mechanism whose joint sensitivity sets both noise scales (module doc of
:mod:`dpbandits.agents.moment_ls`). Each audit puts one canary user alone in the first
episode, reads the released moment and contrasts after that release (what every later
user's action post-processes: JDP = DP of the releases + billboard lemma) and projects them
on the likelihood-ratio direction of the two worlds, with the canary's rows at the angle
where the joint sensitivity is attained -- so the correct agent's lower bound comes close to
its claim. The canary's own action is drawn before its data is used and, with a zero
estimate, is uniform whatever the world. Run at K = 2 and K = 3 (the contrast sensitivity
depends on K). The fitting release is the mechanism of ``dp-screened-ls`` (audited as
``dp-screened-ls-fit``).

Broken variants are copies of the instance drawing from a changed noise plan (one scale
divided by a factor: :func:`~dpbandits.audits._scaffold.shrink_plan`), never changed code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandits.agents.moment_ls import MomentLS
from dpbandits.audits._registry import AuditContext, register
from dpbandits.audits._scaffold import first_user_round, shrink_plan
from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import AuditResult

EPS, DELTA = 1.0, 1e-5
REWARD = 10.0  # beyond the clip level: the canary also checks that clipping is enforced


def screen_params(n_arms: int) -> dict[str, Any]:
    """d = 2 = D (no intercept); the first episode is user 1 alone; ``y_max = 1``. (At these
    sizes ``dp-budget-ls``'s rule never fits: every episode is a screening release.)"""
    return dict(n_arms=n_arms, dim=2, horizon=8, first_episode=1, clip_screen=math.sqrt(2.0),
                epsilon=EPS, delta=DELTA)


def screen_canary(agent: MomentLS) -> tuple[np.ndarray, np.ndarray, float]:
    """Unit rows ``u0, u1`` at ``<u0, u1> = B / 2A`` (capped at 1), where the screening
    release's sensitivity is attained, and the clip level ``y_max``."""
    K = agent.n_arms
    a = 2.0 / agent.sigmas["moment"] ** 2
    b = 2.0 * agent._y_screen ** 2 * (K - 1) / K / agent.sigmas["contrast"] ** 2
    c = min(1.0, b / (2.0 * a))
    return np.array([1.0, 0.0]), np.array([c, math.sqrt(1.0 - c * c)]), agent._y_screen


def screen_audit(ctx: AuditContext, n_arms: int, broken_scale: str, factor: float,
                 cls: type[MomentLS] = MomentLS) -> AuditResult:
    """The first-user canary on the first screening release of ``cls`` (``MomentLS`` or a
    subclass with its releases, e.g. ``dp-budget-ls``) at :func:`screen_params`."""
    probe = cls(**screen_params(n_arms))
    if ctx.broken:
        probe = shrink_plan(probe, factor, broken_scale)
    u0, u1, y = screen_canary(cls(**screen_params(n_arms)))
    s_m, s_c = probe.sigmas["moment"], probe.sigmas["contrast"]
    d_m = (np.outer(u1, u1) - np.outer(u0, u0)) / s_m**2
    d_m[~np.eye(2, dtype=bool)] *= 2.0  # off-diagonal noise variance is s_m^2 / 2
    d_m = np.triu(d_m)  # each off-diagonal entry counted once
    w = y * (u1 + u0) / s_c**2  # target change on the canary's arm: +y u1 in D', -y u0 in D

    def sampler(world, n, rng):
        agent, arm = first_user_round(probe, u0, u1, world, n, rng, REWARD)
        idx = np.arange(n)
        # contrasts sum to zero over arms, so <dc, c> = <c_arm, w> (dc_k = (1{k=arm} - 1/K) w)
        return (np.einsum("rij,ij->r", agent._M_released, d_m)
                + agent._c_released[idx, arm] @ w)

    return ctx.audit(sampler, epsilon=EPS, delta=DELTA, mu_claim=gdp_mu(EPS, DELTA),
                     notion="JDP", batch_size=50_000, basis=probe.privacy.basis,
                     statistic="white-box: released moment and contrasts after round 1, "
                               "projected on the whitened difference of the worlds",
                     canary=f"user 1: u0, reward -10 vs u1, reward +10 (clip 1), <u0, u1> "
                            f"at the worst angle; K = {n_arms}, d = 2",
                     extra={"sigma_moment": s_m, "sigma_contrast": s_c,
                            "cos_u0_u1": float(u0 @ u1), "multiplier": probe.multiplier})


@register("dp-moment-ls", fast_runs=20_000, thorough_runs=200_000,
          label="moment noise / 3")
def audit_moment_ls_screen(ctx: AuditContext) -> AuditResult:
    """agents.moment_ls.MomentLS: screening release (arm-independent moment and contrasts), K = 2

    Canary: user 1 (alone in the first episode, uniform arm): unit context u0 with reward -10 vs
        u1 with reward +10 (clipped to -+1), <u0, u1> at the angle where the joint sensitivity
        is attained; K = 2, d = 2
    Broken variant: the moment's noise standard deviation divided by 3
    Shows: the released moment and contrasts after user 1 hide user 1's context and reward as
        claimed; the statistic is the likelihood-ratio direction of the two worlds, so the audit
        is tight for the exact joint sensitivity the calibration uses, and it checks the reward
        clip
    Cannot show: one screening release only (parallel composition over episodes and the
        billboard lemma are the analysis, not audited); the fitting release is dp-screened-ls's
        mechanism (audited by dp-screened-ls-fit)
    """
    return screen_audit(ctx, 2, "moment", 3.0)


@register("dp-moment-ls-K3", fast_runs=20_000, thorough_runs=200_000,
          label="contrast noise / 2")
def audit_moment_ls_screen_k3(ctx: AuditContext) -> AuditResult:
    """agents.moment_ls.MomentLS: screening release (arm-independent moment and contrasts), K = 3

    Canary: user 1 (alone in the first episode, uniform arm): unit context u0 with reward -10 vs
        u1 with reward +10 (clipped to -+1), <u0, u1> at the angle where the joint sensitivity
        is attained; K = 3, d = 2
    Broken variant: the contrasts' noise standard deviation divided by 2
    Shows: at K = 3, where the contrast sensitivity 2 y_max sqrt((K-1)/K) exceeds the
        different-arm value sqrt(2) y_max, the released moment and contrasts hide user 1 as
        claimed and the audit is tight
    Cannot show: one screening release only; the canary stays on one arm in both worlds (the
        arm is drawn before the data), so the different-arm case (bounded by the same-arm one
        in the analysis) is not exercised
    """
    return screen_audit(ctx, 3, "contrast", 2.0)

"""Audit of DP-GIBO (Sopa et al. 2025, ``dpbandits.bo.dp_gibo.DPGIBO``).

Canary: ``n = 4`` individuals in dimension 1; individual 1's loss is ``+1e6 theta`` (``D'``)
or ``-1e6 theta`` (``D``), whose GP posterior-mean gradient is huge and is clipped to exactly
``+-B``; the other individuals have zero loss. The clipped mean gradient is ``+-B/n`` at every
iterate and design, and each step adds ``N(0, (2B sqrt(T)/(n mu))^2)``: the trajectory is a
Gaussian mechanism with exactly the claimed ``mu`` (Theorem 3.1), so the statistic ``-theta_T``
(plain steps, no bounds: a sum of the noisy gradients) makes the audit tight. The two worlds
are symmetric about 0, so the single pre-set threshold 0 attains ``mu`` (no selection split).

DP-GIBO runs its replications in a Python loop (one GP per replication), so run counts are
small; the broken variant is still detected with a wide margin.
"""

from __future__ import annotations

import numpy as np

from dpbandits.audits._registry import AuditContext, register
from dpbandits.audits._scaffold import shrink_plan
from dpbandits.bo.acquisition import GradientDesigner
from dpbandits.bo.dp_gibo import DPGIBO
from dpbandits.bo.objectives import Objective
from dpbandits.privacy.audit import AuditResult

MU, N_IND, T_ITERS, CLIP = 1.0, 4, 2, 1.0


class _Canary(Objective):
    """Individual 0's loss is ``sign * 1e6 * theta_1``; the others are 0."""

    def __init__(self, sign: float):
        self.dim = 1
        self.n_individuals = N_IND
        self.sign = sign

    def _losses(self, thetas):
        out = np.zeros((thetas.shape[0], N_IND))
        out[:, 0] = self.sign * 1e6 * thetas[:, 0]
        return out


def _make(broken: bool) -> DPGIBO:
    # broken: the noise plan scaled down 10x (noise std / 10), audited against the correct
    # instance's claim
    opt = DPGIBO(mu=MU, n_iters=T_ITERS, clip_bound=CLIP, batch_size=1, step_size=0.1,
                 designer=GradientDesigner(n_candidates=4, n_restarts=0))
    return shrink_plan(opt, 10.0) if broken else opt


@register("dp-gibo", fast_runs=150, thorough_runs=2_000, label="noise / 10")
def audit_dp_gibo(ctx: AuditContext) -> AuditResult:
    """bo.dp_gibo.DPGIBO (Theorem 3.1, mu-GDP)

    Canary: individual 1 of n = 4: loss +1e6 theta vs -1e6 theta (clipped gradient +-B), the others
        zero; d = 1, T = 2, batch size 1
    Broken variant: noise std / 10 (the noise plan scaled on the instance)
    Shows: the whole trajectory of DP-GIBO is mu-GDP as claimed: the canary makes it a Gaussian
        mechanism of exactly mu, and the released iterate attains it
    Cannot show: the data-independence of the design (the acquisition is run but not probed: a
        design that used private losses would need another canary); AdaGrad steps, bounds
    """
    probe = _make(False)
    claim = probe.privacy
    opt = _make(ctx.broken)
    objectives = [_Canary(-1.0), _Canary(1.0)]

    def sampler(world, n, rng):
        return -opt.fit(objectives[world], rng, n_reps=n).theta[:, 0]

    return ctx.audit(sampler, epsilon=claim.epsilon, delta=claim.delta, mu_claim=claim.mu,
                     thresholds=[0.0], selection="bonferroni", notion="GDP",
                     statistic="-theta_T (sum of the T noisy clipped mean gradients)",
                     canary="individual 1: loss +-1e6 theta (clipped gradient +-B)",
                     basis=claim.basis, extra={"noise_std": probe.noise_std(N_IND)})

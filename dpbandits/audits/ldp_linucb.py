"""Audit of LDP-LinUCB (``ldp-linucb``): one user's message, which is all the server ever
learns about that user (local DP).

The canary is user 1; the statistic reads the server's sums after round 1, which are exactly
that user's message. Its arm is drawn from equal indices (the server holds nothing yet), so
it is uniform whatever the world. The broken variant halves the *instance*'s plan's noise scales.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandits.agents.ldp_linucb import LDPLinUCB
from dpbandits.audits._registry import AuditContext, register
from dpbandits.audits._scaffold import shrink_plan
from dpbandits.audits.adac_oful import first_user_sampler, whitened_direction
from dpbandits.privacy.audit import AuditResult

EPS, DELTA = 1.0, 1e-5  # the canary's reward is adac_oful.REWARD = 10, beyond the clip B = 1

PARAMS: dict[str, Any] = dict(n_arms=2, dim=2, horizon=4, context_bound=1.0, epsilon=EPS,
                              delta=DELTA)
# orthogonal unit contexts: the Gram's upper triangle changes by its full Frobenius norm
U0, U1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])


@register("ldp-linucb", fast_runs=20_000, thorough_runs=200_000, label="message noise / 2")
def audit_ldp_linucb(ctx: AuditContext) -> AuditResult:
    """agents.ldp_linucb.LDPLinUCB: one user's message (local randomizer)

    Canary: user 1 (uniform arm): context e1 with reward -10 vs e2 with reward +10 (clipped
        to -+1); K = 2, d = 2, L = 1
    Broken variant: Gram and target noise standard deviations / 2
    Shows: the message (noisy Gram blocks and targets of every arm) hides the user's context and
        reward within the ledger's Gaussian event (mu = 1/k); the canary attains 2/sqrt(4.5)
        = 94% of the sensitivity bound the calibration uses (the upper-triangle bound is not
        attained jointly with the targets' worst case)
    Cannot show: messages of users whose arm differs between the worlds (covered by the same
        bound); what the server does with the messages is post-processing
    """
    probe = LDPLinUCB(**PARAMS)
    if ctx.broken:
        probe = shrink_plan(probe, 2.0, "gram", "target")
    # Gaussian noise on every upper-triangle entry with the same variance
    d_gram, d_b = whitened_direction(U0, U1, 1.0, probe.sigmas["gram"],
                                     probe.sigmas["target"], 1.0)
    d_packed = d_gram[np.triu_indices(2)]

    sampler = first_user_sampler(probe, U0, U1, lambda gram, b: gram @ d_packed + b @ d_b)
    return ctx.audit(
        sampler, epsilon=EPS, delta=DELTA, mu_claim=1.0 / probe.multiplier, notion="LDP",
        batch_size=50_000, basis=probe.privacy.basis,
        statistic="white-box: the user's message (Gram block and targets of its arm), "
                  "projected on the whitened difference of the worlds",
        canary="user 1: e1, reward -10 vs e2, reward +10 (clip 1); K = 2, d = 2",
        extra={"sigma": probe.sigmas["gram"], "multiplier": probe.multiplier})

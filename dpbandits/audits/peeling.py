"""Audit of private top-``s`` selection by peeling (``dpbandits.privacy.peeling``).

Canary: ``s = 1`` of ``D = 2`` coordinates, ``v(D) = (0, lambda)`` versus ``v(D') = (lambda, 0)``
(each coordinate moves by the l_inf sensitivity ``lambda = 1``, in opposite directions: the
non-monotone case). Statistic: the released value of coordinate 1 (0 when it is not
selected), which carries both the selection and the Laplace release. Claim: the PLD
accountant on the ledger (one ``2/c``-DP report-noisy-max step and one Laplace mechanism of
scale ``c``), with ``c`` calibrated for ``(1, 1e-5)``. Broken variant: scale / 10.
"""

from __future__ import annotations

import numpy as np

from dpbandits.audits._registry import AuditContext, register
from dpbandits.privacy.audit import AuditResult
from dpbandits.privacy.peeling import peel, peeling_epsilon, peeling_noise_multiplier

EPS, DELTA, SENS = 1.0, 1e-5, 1.0


@register("peeling", fast_runs=20_000, thorough_runs=1_000_000, label="scale / 10")
def audit_peeling(ctx: AuditContext) -> AuditResult:
    """privacy.peeling.peel (s = 1, accountant calibration)

    Canary: v = (0, 1) vs (1, 0) (l_inf sensitivity 1, non-monotone), s = 1
    Broken variant: Laplace scale / 10
    Shows: one peeling call (noisy selection + noisy release) is not less private than its ledger
    Cannot show: s > 1 (the composition over steps is the accountant's, not probed); the l_inf
        sensitivity of a caller's query (FLIPHAT's N-IHT step) is the caller's responsibility
    """
    c = peeling_noise_multiplier(EPS, DELTA, 1)
    claim_eps = peeling_epsilon(c, 1, DELTA)
    scale = c * SENS / ctx.factor(10.0)
    rows = [np.array([0.0, SENS]), np.array([SENS, 0.0])]

    def sampler(world, n, rng):
        v = np.broadcast_to(rows[world], (n, 2))
        return peel(rng, v, 1, scale).values[:, 0]

    return ctx.audit(sampler, epsilon=claim_eps, delta=DELTA,
                     statistic="released value of coordinate 1 (0 if not selected)",
                     canary="v = (0, 1) vs (1, 0), s = 1",
                     basis="PLD accountant on peeling_event (Dwork, Su & Zhang 2018; "
                           "report-noisy-max 2/c + Laplace 1/c)", extra={"noise_multiplier": c})

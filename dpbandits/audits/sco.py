"""Audits of the DP-SCO baselines of Table 5.1 of Han et al. 2022
(``dpbandits.optim.sco_baselines``).

Canary (Dirac, at the clipping norm): squared loss with ``y = -/+ 1e6`` makes the clipped
gradient of the differing sample exactly ``+/- L0 e_1`` at every ``theta`` (clipping is part of
each algorithm, so this is the largest difference it allows); the other samples are
``x = 0, y = 0`` (zero gradient) unless said otherwise. ``D'`` has ``+L0 e_1``, ``D`` has
``-L0 e_1``. The data set is shared by all runs of a world (``X`` of shape ``(n, d)``,
``n_reps = runs``).

The claim audited is the one the optimizer reports (``privacy_for(n, d)``) for the correct
instance; broken variants run a copy of it whose noise plan is scaled down
(:func:`~dpbandits.audits._scaffold.shrink_plan`) against that claim.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandits.audits._registry import AuditContext, register, register_variants
from dpbandits.audits._scaffold import canary_pair, shrink_plan
from dpbandits.optim import LocalMD, NoisySFW, NoisySGD
from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import AuditResult

EPS, DELTA = 1.0, 1e-5
BIG = 1e6  # |y| large enough that the canary's gradient is always clipped to L0


def _canary_data(n: int, d: int, world: int, first_half_e2: int = 0):
    """Sample 0 is the canary (gradient +L0 e_1 in D', -L0 e_1 in D at any theta); samples
    1..first_half_e2-1 have clipped gradient L0 e_2; the rest have zero gradient."""
    X = np.zeros((n, d))
    y = np.zeros(n)
    X[0, 0] = 1.0
    y[0] = -BIG if world else BIG  # grad = (x.theta - y) x
    if first_half_e2:
        X[1:first_half_e2, 1] = 1.0
        y[1:first_half_e2] = -BIG
    return X, y


# --------------------------------------------------------------------------------------------
# NoisySFW
# --------------------------------------------------------------------------------------------

SFW_N, SFW_D = 16, 1


@register("noisy-sfw", fast_runs=20_000, thorough_runs=1_000_000, label="noise / 10")
def audit_noisy_sfw(ctx: AuditContext) -> AuditResult:
    """optim.NoisySFW (p = 2: Gaussian branch)

    Canary: sample 1 (in the first half B0): clipped gradient +-L0 e_1; all other samples zero
        gradient (n = 16, d = 1)
    Broken variant: noise of every aggregate / 10 (the noise plan scaled on the instance)
    Shows: the first noisy aggregate (the only one the sample enters) hides it as claimed; theta_1 =
        eta LMO(grad_0) reveals the sign of grad_0, and for a symmetric Gaussian shift the sign test
        alone attains mu (tight mu route)
    Cannot show: samples of the second half (smaller sensitivity, same mechanism); the
        generalized-Gaussian branch (p < 2) is only audited through DP-TOFW
    """
    probe = NoisySFW(p=2.0, radius=1.0, epsilon=EPS, delta=DELTA)
    claim = probe.privacy_for(SFW_N, SFW_D)

    def make():
        opt = NoisySFW(p=2.0, radius=1.0, epsilon=EPS, delta=DELTA)
        return shrink_plan(opt, 10.0) if ctx.broken else opt

    data = canary_pair(lambda w: _canary_data(SFW_N, SFW_D, w))

    def sampler(world, n, rng):
        X, y = data[world]
        res = make().fit("squared", X, y, rng, n_reps=n)
        return (res.history[:, 1, 0] < 0).astype(float)  # theta_1 = -eta r sign(grad_0)

    return ctx.audit(sampler, epsilon=claim.epsilon, delta=claim.delta,
                     mu_claim=gdp_mu(claim.epsilon, claim.delta), thresholds=[0.5],
                     selection="bonferroni",
                     statistic="[theta_1 < 0] = [grad_0 > 0] (released iterate 1)",
                     canary="B0 sample: clipped gradient +-L0 e_1", basis=claim.basis
                     + "; Gaussian mechanism, so mu_claim = gdp_mu(epsilon, delta)")


# --------------------------------------------------------------------------------------------
# NoisySGD
# --------------------------------------------------------------------------------------------

SGD_N = 16  # n^2 = 256 steps


def _noisy_sgd_audit(ctx: AuditContext):
    calibration = "theorem" if ctx.name == "noisy-sgd" else "accountant"
    kwargs: dict[str, Any] = dict(p=math.inf, radius=1.0, epsilon=EPS, delta=DELTA,
                                  calibration=calibration, backend="numpy")
    claim = NoisySGD(**kwargs).privacy_for(SGD_N)

    def make():
        opt = NoisySGD(**kwargs)
        return shrink_plan(opt, 10.0) if ctx.broken else opt

    data = canary_pair(lambda w: _canary_data(SGD_N, 1, w))

    def sampler(world, n, rng):
        X, y = data[world]
        res = make().fit("squared", X, y, rng, n_reps=n)
        # last iterate (released in the history): the sum of all steps, against the gradient
        return -res.extra["iterates"][:, -1, 0]

    return ctx.audit(sampler, epsilon=claim.epsilon, delta=claim.delta, batch_size=50_000,
                     statistic="-(last iterate)",
                     canary=f"one of n = {SGD_N} samples: clipped gradient +-L0 (d = 1, "
                            f"p = inf, {SGD_N**2} steps)", basis=claim.basis)


_sgd = register_variants(
    _noisy_sgd_audit, fast_runs=10_000, thorough_runs=100_000,
    canary=f"one of n = {SGD_N} samples with clipped gradient +-L0, the others zero "
           "(d = 1, p = inf, n^2 steps)",
    broken_variant="noise sigma / 10 (the noise plan scaled on the instance)",
    label="noise sigma / 10",
    shows="the last iterate after n^2 subsampled noisy steps hides the sample; the sum "
          "statistic carries almost all of the composed privacy loss (CLT), so the audit "
          "is within a few x of the RDP claim",
    cannot_show="the box projection makes the statistic non-linear when it binds; the "
                "claimed epsilon is the RDP accountant's (replace-one), itself an upper "
                "bound")
_sgd("noisy-sgd",
     component="optim.NoisySGD (paper's sigma; claim = RDP accountant)")
_sgd("noisy-sgd-accountant", component="optim.NoisySGD (accountant calibration)")


# --------------------------------------------------------------------------------------------
# LocalMD
# --------------------------------------------------------------------------------------------

LMD_N, LMD_D = 64, 2
LMD_BROKEN_C = 0.1


@register("local-md", fast_runs=2_000, thorough_runs=40_000, label=f"noise constant {LMD_BROKEN_C}")
def audit_local_md(ctx: AuditContext) -> AuditResult:
    """optim.LocalMD (p = 2, noise constant c = 100)

    Canary: sample 1 of phase 1: clipped gradient +-L0 e_1, the others zero (n = 64, d = 2)
    Broken variant: noise constant c = 0.1 instead of 100 (the noise plan scaled on the instance;
        the RDP claim for c = 100 has large slack)
    Shows: the phase-1 output of LocalMD hides a phase-1 sample at the level the RDP accountant
        certifies
    Cannot show: weak: c = 100 makes the noise enormous, so the correct LocalMD audits far below its
        claim; only gross under-noising is detectable
    """
    kwargs = dict(p=2.0, radius=1.0, epsilon=EPS, delta=DELTA)
    claim = LocalMD(**kwargs).privacy_for(LMD_N, LMD_D)
    opt = LocalMD(noise_constant=100.0, **kwargs)
    if ctx.broken:
        opt = shrink_plan(opt, 100.0 / LMD_BROKEN_C)
    data = canary_pair(lambda w: _canary_data(LMD_N, LMD_D, w))

    def sampler(world, n, rng):
        X, y = data[world]
        res = opt.fit("squared", X, y, rng, n_reps=n)
        return -res.history[:, 1, 0]  # phase-1 output, against the gradient

    return ctx.audit(sampler, epsilon=claim.epsilon, delta=claim.delta, batch_size=50_000,
                     statistic="-(phase-1 output)_1",
                     canary="phase-1 sample: clipped gradient +-L0 e_1", basis=claim.basis)

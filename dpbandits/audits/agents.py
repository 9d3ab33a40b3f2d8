"""Audits of the jointly differentially private bandit agents (DP-UCB, DP-HDB).

JDP (Kearns et al. 2014; Shariff & Sheffet 2018, Definition 1): changing user ``t``'s data
may change ``a_t`` arbitrarily, but not the distribution of everything the *other* users see.
So the canary changes only user ``t``'s data at maximal distance and every statistic is
read from rounds ``t+1..T`` only:

* white-box: the released noisy sums after round ``t`` (what the agent post-processes),
  projected on the differing direction;
* black-box: the later users' actions on crafted contexts, which reveal the sign of the
  estimate along ``x_t``.

Sanity check: a *plain*-DP audit whose statistic is ``a_t`` itself must report a large
epsilon for a correct JDP agent (``expected="violation"``) -- JDP is weaker than DP, and an
audit that cannot see that is not looking at the agent.

Broken variants are copies of the instance drawing from a changed noise plan (never the
library code).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits.agents import make_agent
from dpbandits.audits._registry import AuditContext, register, register_variants
from dpbandits.audits._scaffold import pofw_step_score, shrink_plan, signed, tree_read_rounds
from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import AuditResult
from dpbandits.privacy.tree import tree_levels

EPS, DELTA = 1.0, 1e-5


def _jdp_audit(ctx: AuditContext, sampler, probe, *, basis_note: str = "", **labels
               ) -> AuditResult:
    """Audit ``sampler`` against ``probe``'s (EPS, DELTA)-JDP claim (runs in batches of 50,000;
    the basis is the agent's, followed by ``basis_note``)."""
    return ctx.audit(sampler, epsilon=EPS, delta=DELTA, notion="JDP", batch_size=50_000,
                     basis=probe.privacy.basis + basis_note, **labels)

# --------------------------------------------------------------------------------------------
# DP-UCB (Shariff & Sheffet 2018)
# --------------------------------------------------------------------------------------------

# K = 2 arms, d = 1: the Gram matrix is 3 x 3. With context bound L = reward bound B = 1 the
# canary (x = 1, y = +B vs -B) has ||vv^T - v'v'^T||_F / sqrt(2) = 2 B L = L~^2, the largest
# effective sensitivity the accountant calibration allows: the white-box audit is tight.
UCB_PARAMS = dict(n_arms=2, dim=1, epsilon=EPS, delta=DELTA, context_bound=1.0,
                  reward_bound=1.0)
UCB_HORIZON = 16
_UCB_WHITEBOX = {
    # name: (calibration, broken variant, divisor of the node sigma; None = sqrt(levels))
    "dp-ucb": ("theorem", "node sigma / 100 (the theorem calibration has ~14x slack: / 10 "
                          "is still private)", 100.0),
    "dp-ucb-accountant": ("accountant", "node sigma without the sqrt(levels) factor", None),
}


def _dp_ucb(calibration: str, horizon: int, factor: float | None = None):
    """DP-UCB on the canary's parameters; ``factor`` divides its node sigma (broken)."""
    agent = make_agent("dp-ucb", horizon=horizon, calibration=calibration, **UCB_PARAMS)
    if factor is not None:  # a copy drawing its node noise from the shrunk plan
        agent = shrink_plan(agent, factor, "node_sigma")
    return agent


def _after_user_1(probe, world: int, n: int, rng):
    """``n`` fresh runs of ``probe`` after user 1 (context 1, reward -1 in D, +1 in D'):
    ``(agent, a_1)``; user 1's own action is never part of a statistic."""
    agent = probe.reset(n, rng)
    x1 = np.ones((n, 1))
    a1 = agent.act(x1)
    agent.update(x1, a1, signed(world, n))
    return agent, a1


def _ucb_claim_extra(agent) -> dict:
    return {"node_sigma": agent.constants["node_sigma"],
            "ledger_mu": math.sqrt(tree_levels(agent.horizon)) * agent.l_tilde**2
            / agent.constants["node_sigma"]}


def _dp_ucb_whitebox(ctx: AuditContext):
    T = UCB_HORIZON
    read_at = tree_read_rounds(T)
    calibration, _, divisor = _UCB_WHITEBOX[ctx.name]
    factor = (divisor or math.sqrt(tree_levels(T))) if ctx.broken else None
    probe = _dp_ucb(calibration, T, factor)  # calibrated once; reset() per batch

    def sampler(world, n, rng):
        agent, a1 = _after_user_1(probe, world, n, rng)
        idx = np.arange(n)
        stat = agent._u[idx, a1].copy()  # release after round 1 = node [1, 1]
        zeros = np.zeros((n, 1))
        arms = np.zeros(n, dtype=np.int64)
        for t in range(2, T + 1):
            # later users: context 0, reward 0, so their record v = 0 whatever the arm; the
            # statistic never depends on their actions, so act() is skipped for speed
            agent.update(zeros, arms, np.zeros(n))
            if t in read_at:
                stat += agent._u[idx, a1]  # released u~_t on user 1's block: node [1, t]
        return stat

    return _jdp_audit(ctx, sampler, probe, mu_claim=gdp_mu(EPS, DELTA),
                      statistic="white-box: released u~_t of user 1's arm, summed over "
                                "t = 1, 2, 4, ..., T (rounds >= 1 only, never a_1)",
                      canary="user 1: x = 1, reward +1 vs -1 (L = B = 1, d = 1, K = 2, T = 16); "
                             "users 2..T: x = 0, reward 0",
                      basis_note="; Gaussian tree is Gaussian-shaped, so "
                                 "mu_claim = gdp_mu(epsilon, delta)",
                      extra=_ucb_claim_extra(probe))


_ucb = register_variants(
    _dp_ucb_whitebox, fast_runs=10_000, thorough_runs=200_000,
    canary="user 1: context x = 1, reward +1 vs -1 (L = B = 1); later users context 0",
    shows="the released Gram/target sums (V_t, u~_t) after user 1 hide user 1's reward as "
          "claimed (Claim 7: JDP = DP of these sums + post-processing); with L = B the "
          "canary attains the accountant's worst-case sensitivity",
    cannot_show="the JDP conversion itself (that nothing else about user t leaks into later "
                "rounds) is only checked by the black-box audit; Wishart noise is audited by "
                "dp-ucb-wishart")
for _name, (_calibration, _broken, _) in _UCB_WHITEBOX.items():
    _ucb(_name, broken_variant=_broken,
         component=f"agents.dp_ucb.DPUCB (Gaussian tree, {_calibration} calibration)")


# Wishart nodes: every release at t = 2^j is v_1 v_1^T (the later users' records are 0) plus
# one node and a data-independent top-up, together Wishart_3(L~^2 I, m k). The statistic is
# the exact log-likelihood ratio of a release up to its positive factor (m k - 4)/2:
# log det(A - M_1) - log det(A - M_0), M_w the canary's Gram in world w (the trace terms
# cancel: x^2 and y^2 are the same in both worlds); a release that is not M_w + a positive
# definite matrix cannot come from world w (the Wishart mechanism's support moves with the
# data), which counts as +-1e6.
WISHART_HORIZON = 4


def _logdet_or_impossible(e: np.ndarray) -> np.ndarray:
    """``log det e`` of symmetric matrices (R, n, n), ``-inf`` where not positive definite."""
    ev = np.linalg.eigvalsh(e)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(ev > 0, ev, 1.0)).sum(axis=1)
    return np.where(ev[:, 0] > 0, logs, -np.inf)


@register("dp-ucb-wishart", fast_runs=20_000, thorough_runs=200_000,
          label="Wishart degrees of freedom k = D + 1")
def audit_dp_ucb_wishart(ctx: AuditContext) -> AuditResult:
    """agents.dp_ucb.DPUCB (Wishart nodes, Sheffet 2015 Thm 4.1 per node)

    Canary: user 1: context x = 1, reward +1 vs -1 (L = B = 1, d = 1, K = 2, T = 4); users 2..4:
        x = 0, reward 0
    Broken variant: Wishart degrees of freedom k = D + 1 (Sheffet's privacy term dropped: the
        smallest k of a full-rank node), a changed plan of the instance
    Shows: the released Gram matrices (V_t, u~_t and the reward entry) after user 1 hide user 1's
        reward as claimed, read with the exact likelihood ratio of each release (which also sees
        the data-dependent support of the Wishart mechanism)
    Cannot show: the claim (per-node Theorem 4.1, optimal composition) is far from tight:
        with k ~ 1e5 the correct agent audits at eps_lb = 0, so only gross errors in k are
        detectable; other canaries (a changed context moves the diagonal too)
    """
    T = WISHART_HORIZON
    read_at = tree_read_rounds(T)
    probe = make_agent("dp-ucb", horizon=T, noise="wishart", **UCB_PARAMS)
    if ctx.broken:  # a copy drawing its nodes and top-ups with k = D + 1 degrees of freedom
        probe = probe.with_plan(probe.plan.replaced(degrees=probe.feature_dim + 1))

    def sampler(world, n, rng):
        agent, a1 = _after_user_1(probe, world, n, rng)
        idx = np.arange(n)
        v = np.zeros((2, n, 3))  # the canary's record [phi; y] in D and D'
        v[:, idx, a1] = 1.0
        v[:, :, 2] = [[-1.0], [1.0]]
        gram = v[:, :, :, None] * v[:, :, None, :]
        zeros, arms = np.zeros((n, 1)), np.zeros(n, dtype=np.int64)
        stat = np.zeros(n)
        for t in range(1, T + 1):
            if t > 1:
                agent.update(zeros, arms, np.zeros(n))  # records 0: the statistic needs no act
            if t in read_at:
                top = agent._topup  # upper triangle, as the agent keeps it
                released = agent._release + (np.triu(top) + np.swapaxes(np.triu(top, 1), 1, 2)
                                             if agent._use_topup else 0.0)
                llr = (_logdet_or_impossible(released - gram[1])
                       - _logdet_or_impossible(released - gram[0]))
                stat += np.clip(np.nan_to_num(llr, nan=0.0), -1e6, 1e6)
        return stat

    return _jdp_audit(ctx, sampler, probe,
                      statistic="white-box: sum over t = 1, 2, 4 of the log-likelihood ratio of "
                                "the released (D+1)-square Gram matrix (rounds >= 1, never a_1)",
                      canary="user 1: x = 1, reward +1 vs -1 (L = B = 1, d = 1, K = 2, T = 4); "
                             "users 2..T: x = 0, reward 0",
                      extra={"k": probe.constants["k"], "m": probe.constants["m"]})


BB_HORIZON = 16


@register("dp-ucb-blackbox", fast_runs=2_000, thorough_runs=30_000)
def audit_dp_ucb_blackbox(ctx: AuditContext) -> AuditResult:
    """agents.dp_ucb.DPUCB (accountant calibration), black-box JDP

    Canary: user 1: x = 1, reward +1 vs -1; users 2..16: x = +1, -1, +1, ..., reward 0
    Broken variant: node sigma / 10
    Shows: the later users' actions (all they see) do not reveal user 1's reward beyond the claim --
        an end-to-end JDP check through act(); alternating +x/-x contexts cancel the (symmetric) UCB
        bonus and expose the sign of theta~ along x
    Cannot show: weak against the correct agent (mu_lb ~ 0): the UCB bonus and the later users' own
        records dilute the signal, so only gross leaks (noise / 10) are detectable
    """
    T = BB_HORIZON
    probe = _dp_ucb("accountant", T, 10.0 if ctx.broken else None)  # reset() per batch

    def sampler(world, n, rng):
        agent, a1 = _after_user_1(probe, world, n, rng)
        x = np.ones((n, 1))
        score = np.zeros(n)
        for t in range(2, T + 1):
            sign = 1.0 if t % 2 == 0 else -1.0
            a = agent.act(sign * x)
            score += sign * (a == a1)
            agent.update(sign * x, a, np.zeros(n))
        return score

    return _jdp_audit(ctx, sampler, probe, mu_claim=gdp_mu(EPS, DELTA), orientation="both",
                      statistic="sum over users 2..T of sign(x_t) * [a_t = a_1] (actions only)",
                      canary="user 1: x = 1, reward +1 vs -1; users 2..16: x = +-1 alternating, "
                             "reward 0",
                      basis_note="; actions post-process a Gaussian mechanism, so "
                                 "mu_claim = gdp_mu(epsilon, delta)",
                      extra=_ucb_claim_extra(probe))


SANITY_HORIZON = 256


@register("dp-ucb-plain-dp-sanity", fast_runs=1_000, thorough_runs=10_000,
          expected="violation", has_broken=False)
def audit_dp_ucb_plain_dp_sanity(ctx: AuditContext) -> AuditResult:
    """agents.dp_ucb.DPUCB (accountant): plain-DP audit including a_t

    Canary: users 1..255 teach theta_0 = +1, theta_1 = -1 (x = 1); user 256's own context
        is +1 vs -1
    Broken variant: (none: the sanity check itself expects a violation)
    Shows: the audit machinery sees the agent: a_t depends on user t's context, so a plain-DP audit
        including a_t reports epsilon far above the JDP claim, as it must (JDP is not DP)
    Cannot show: nothing about the JDP guarantee (it is a check of the audit)
    """
    T = SANITY_HORIZON
    probe = _dp_ucb("accountant", T)

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        x = np.ones((n, 1))
        for t in range(T - 1):
            arm = t % 2
            agent.update(x, np.full(n, arm), np.full(n, 1.0 if arm == 0 else -1.0))
        a_t = agent.act(x if world else -x)
        return (a_t == 0).astype(float)

    return _plain_dp_sanity(ctx, sampler, probe,
                            statistic="a_t itself (user t's own action)",
                            canary="user 256: x = +1 vs -1 after 255 teaching rounds")


def _plain_dp_sanity(ctx: AuditContext, sampler, probe, *, statistic: str, canary: str):
    """The plain-DP sanity check of a JDP agent: an indicator statistic that includes a_t,
    one pre-set threshold; a violation is expected."""
    return ctx.audit(sampler, epsilon=EPS, delta=DELTA, thresholds=[0.5],
                     selection="bonferroni", notion="DP (not claimed)", statistic=statistic,
                     variant="sanity check", canary=canary,
                     basis=probe.privacy.basis + " -- JDP, not DP: a violation is expected",
                     notes="a plain-DP audit that includes a_t must report a large epsilon")


# --------------------------------------------------------------------------------------------
# DP-HDB (Han et al. 2022, Algorithm 3)
# --------------------------------------------------------------------------------------------

# K = 2 arms, d = 1 (each arm's l_1 ball is an interval, vertices +-r), squared loss (identity
# link), small radius so that the canary reaches ~97% of DP-POFW's sensitivity bound.
HDB_PARAMS = dict(n_arms=2, dim=1, epsilon=EPS, delta=DELTA, radius=0.01, context_bound=1.0,
                  reward_bound=1.0)
HDB_T0, HDB_HORIZON = 16, 64
_HDB_REWARD = {
    # name: (calibration, DP-POFW selection, divisor of the per-arm selection noise (broken))
    "dp-hdb": ("theorem", "laplace", 50.0),
    "dp-hdb-accountant": ("accountant", "laplace", 50.0),
    # the exponential mechanism's zCDP schedule has ~1.8x less noise than the Laplace one
    "dp-hdb-gumbel": ("accountant", "gumbel", 10.0),
}


def _dp_hdb(calibration: str, broken_factor: float | None = None, horizon: int = HDB_HORIZON,
            selection: str = "laplace"):
    """DP-HDB on the canary's parameters; ``broken_factor`` divides every arm's selection
    noise (the broken variant)."""
    extra = {} if selection == "laplace" else {"optimizer_params": {"selection": selection}}
    agent = make_agent("dp-hdb", horizon=horizon, t0=HDB_T0, calibration=calibration,
                       **HDB_PARAMS, **extra)
    if broken_factor is not None:  # every arm's selection noise
        agent = shrink_plan(agent, broken_factor, "kappa")
    return agent


def _dp_hdb_reward_audit(ctx: AuditContext):
    calibration, selection, factor = _HDB_REWARD[ctx.name]
    probe = _dp_hdb(calibration, selection=selection)
    K, t0, T = HDB_PARAMS["n_arms"], HDB_T0, HDB_HORIZON

    def sampler(world, n, rng):
        agent = _dp_hdb(calibration, factor if ctx.broken else None, selection=selection)
        agent.reset(n, rng)
        x1 = np.ones((n, 1))
        zeros = np.zeros((n, 1))
        prev = np.zeros(n)  # arm 0's released iterate before its step
        s = 0  # arm 0's step counter
        stat = np.zeros(n)
        for t in range(1, T + 1):
            x = x1 if t == 1 else zeros
            a = agent.act(x)
            r = signed(world, n) if t == 1 else np.zeros(n)
            agent.update(x, a, r)
            if t0 < t <= K * t0:
                continue  # arm 1's forced phase: arm 0 does not step
            s += 1
            new = agent._theta[:, 0, 0]  # released estimate of arm 0
            stat += pofw_step_score(new, prev, s)
            prev = new.copy()
        return stat

    return _jdp_audit(ctx, sampler, probe,
                      statistic="white-box: arm 0's released estimates after round 1: "
                                "sum_s sqrt(s)/(s+1) sign(v_s) over its DP-POFW steps",
                      canary="user 1 (forced sampling, arm 0): x = 1, reward +1 vs -1; later "
                             "users x = 0, reward 0 (K = 2, d = 1, radius 0.01, t0 = 16, T = 64)",
                      extra={"arm_kappa": probe.arm_optimizers[0].kappa})


_hdb = register_variants(
    _dp_hdb_reward_audit, fast_runs=10_000, thorough_runs=200_000,
    canary="user 1 (arm 0's first forced sample): x = 1, reward +1 vs -1; later users "
           "context 0",
    shows="the released per-arm estimates after user 1 hide user 1's reward (Theorem 4.1 "
          "rests on their DP; actions post-process them)",
    cannot_show="one arm only (a reward change reaches one arm); the two-arm effect of a "
                "context change is audited by dp-hdb-context; DP-POFW's claim is loose, so "
                "only gross errors are detectable")
for _name, (_calibration, _selection, _factor) in _HDB_REWARD.items():
    _hdb(_name,
         component=(f"agents.dp_hdb.DPHDB (DP-POFW arms, {_calibration} calibration)"
                    if _selection == "laplace" else
                    "agents.dp_hdb.DPHDB (DP-POFW arms with exponential-mechanism (Gumbel) "
                    "selection, zCDP accountant calibration)"),
         broken_variant=f"per-arm DP-POFW selection noise / {_factor:g}" + (
             " (each arm runs at epsilon/2, whose schedule has ~2x the noise of the single "
             "optimizer)" if _selection == "laplace" else ""),
         label=f"per-arm selection noise / {_factor:g}",
         **({} if _selection == "laplace" else {
             "shows": "the released per-arm estimates after user 1 hide user 1's reward with "
                      "the exponential-mechanism selection and its zCDP schedule (~1.8x less "
                      "noise than the Laplace one; Theorem 4.1's JDP rests on their DP)"}))


def _no_synthetic_update(agent):
    """Instance-level monkeypatch: after forced sampling only the pulled arm's *released*
    estimate changes (the authors' code has no synthetic update). The optimizers still step
    every row (they are batched), but the non-pulled rows' estimates are restored."""
    original = agent._update

    def _update(contexts, arms, rewards):
        before = agent._theta.copy()
        original(contexts, arms, rewards)
        if agent.t_ >= agent.forced_steps:
            keep = np.arange(agent.n_arms)[None, :] != arms[:, None]
            agent._theta[keep] = before[keep]

    agent._update = _update
    return agent


HDB_CTX_HORIZON = 2 * HDB_T0 + 1  # the canary user is the first after forced sampling


@register("dp-hdb-context", fast_runs=4_000, thorough_runs=100_000, label="no synthetic update")
def audit_dp_hdb_context(ctx: AuditContext) -> AuditResult:
    """agents.dp_hdb.DPHDB: synthetic update (a_t must not leak)

    Canary: user 33 (first after forced sampling): context +1 vs -1, reward 0; all earlier users
        context 0
    Broken variant: no synthetic update (only the pulled arm's estimate changes)
    Shows: the released estimates after user t do not reveal a_t: every arm advances once per round
        (the synthetic update), so which arm moved is independent of user t's context
    Cannot show: a targeted structural check: for the correct agent the statistic is identically 0;
        the privacy of the moves themselves is audited by dp-hdb
    """
    T = HDB_CTX_HORIZON
    probe = _dp_hdb("theorem", horizon=T)

    def sampler(world, n, rng):
        agent = _dp_hdb("theorem", horizon=T)
        if ctx.broken:
            _no_synthetic_update(agent)
        agent.reset(n, rng)
        zeros = np.zeros((n, 1))
        for _ in range(T - 1):
            agent.update(zeros, agent.act(zeros), np.zeros(n))
        x_d, x_dp = -np.ones((n, 1)), np.ones((n, 1))
        # what user T would be shown in each world: computable from the released estimates
        a_d, a_dp = agent.act(x_d), agent.act(x_dp)
        before = agent._theta.copy()
        x = x_dp if world else x_d
        agent.update(x, agent.act(x), np.zeros(n))
        moved = np.any(agent._theta != before, axis=2)  # (n, K): which arms' estimates moved
        idx = np.arange(n)
        return moved[idx, a_dp].astype(float) - moved[idx, a_d].astype(float)

    return _jdp_audit(ctx, sampler, probe, orientation="both",
                      statistic="[arm a'_t moved] - [arm a_t moved] after round t, with a_t, "
                                "a'_t the arms user t would be shown in D, D' (from the "
                                "released estimates)",
                      canary="user 33: context +1 vs -1 (K = 2, d = 1, t0 = 16)")


@register("dp-hdb-plain-dp-sanity", fast_runs=2_000, thorough_runs=20_000,
          expected="violation", has_broken=False)
def audit_dp_hdb_plain_dp_sanity(ctx: AuditContext) -> AuditResult:
    """agents.dp_hdb.DPHDB: plain-DP audit including a_t

    Canary: user 33: context +1 vs -1 after 32 forced rounds with context 0
    Broken variant: (none: the sanity check itself expects a violation)
    Shows: a plain-DP audit that includes a_t reports epsilon far above the JDP claim, as it must
        for a greedy agent (JDP is not DP)
    Cannot show: nothing about the JDP guarantee (it is a check of the audit)
    """
    T = HDB_CTX_HORIZON
    probe = _dp_hdb("theorem", horizon=T)

    def sampler(world, n, rng):
        agent = _dp_hdb("theorem", horizon=T).reset(n, rng)
        zeros = np.zeros((n, 1))
        for _ in range(T - 1):
            agent.update(zeros, agent.act(zeros), np.zeros(n))
        a_d = agent.act(-np.ones((n, 1)))
        a_t = agent.act(np.ones((n, 1)) if world else -np.ones((n, 1)))
        return (a_t != a_d).astype(float)

    return _plain_dp_sanity(ctx, sampler, probe,
                            statistic="a_t itself (compared with the arm the D context would "
                                      "get)",
                            canary="user 33: x = +1 vs -1")

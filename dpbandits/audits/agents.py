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

Broken variants monkeypatch the noise scale on the *instance* (never the library code).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits.agents import make_agent
from dpbandits.audits._registry import CONFIDENCE, register
from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import audit
from dpbandits.privacy.tree import tree_levels

EPS, DELTA = 1.0, 1e-5

# --------------------------------------------------------------------------------------------
# DP-UCB (Shariff & Sheffet 2018)
# --------------------------------------------------------------------------------------------

# K = 2 arms, d = 1: the Gram matrix is 3 x 3. With context bound L = reward bound B = 1 the
# canary (x = 1, y = +B vs -B) has ||vv^T - v'v'^T||_F / sqrt(2) = 2 B L = L~^2, the largest
# effective sensitivity the accountant calibration allows: the white-box audit is tight.
UCB_PARAMS = dict(n_arms=2, dim=1, epsilon=EPS, delta=DELTA, context_bound=1.0,
                  reward_bound=1.0)
UCB_HORIZON = 16
_UCB_BROKEN = {
    "theorem": ("node sigma / 100 (the theorem calibration has ~14x slack: / 10 is still "
                "private)", 100.0),
    "accountant": ("node sigma without the sqrt(levels) factor", None),
}


def _dp_ucb(calibration: str, horizon: int, broken: bool):
    agent = make_agent("dp-ucb", horizon=horizon, calibration=calibration, **UCB_PARAMS)
    if broken:
        _, factor = _UCB_BROKEN[calibration]
        if factor is None:
            factor = math.sqrt(tree_levels(horizon))
        # instance-level monkeypatch: _reset draws node noise with constants["node_sigma"]
        agent.constants = {**agent.constants,
                           "node_sigma": agent.constants["node_sigma"] / factor}
    return agent


def _ucb_claim_extra(agent) -> dict:
    return {"node_sigma": agent.constants["node_sigma"],
            "ledger_mu": math.sqrt(tree_levels(agent.horizon)) * agent.l_tilde**2
            / agent.constants["node_sigma"]}


def _dp_ucb_whitebox(calibration: str, runs: int, seed: int, broken: bool):
    T = UCB_HORIZON
    levels = tree_levels(T)
    read_at = {2**j for j in range(levels)}
    probe = _dp_ucb(calibration, T, broken)  # calibrated once; reset() per batch

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        idx = np.arange(n)
        x1 = np.ones((n, 1))
        a1 = agent.act(x1)  # user 1's own action: never part of the statistic
        agent.update(x1, a1, np.full(n, 1.0 if world else -1.0))
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

    name = "dp-ucb" if calibration == "theorem" else "dp-ucb-accountant"
    label = _UCB_BROKEN[calibration][0]
    return audit(sampler, epsilon=EPS, delta=DELTA, runs=runs, seed=seed,
                 confidence=CONFIDENCE, mu_claim=gdp_mu(EPS, DELTA), notion="JDP",
                 batch_size=50_000, component=name,
                 statistic="white-box: released u~_t of user 1's arm, summed over "
                           "t = 1, 2, 4, ..., T (rounds >= 1 only, never a_1)",
                 variant=f"broken: {label}" if broken else "as implemented", broken=broken,
                 expected="violation" if broken else "consistent",
                 canary="user 1: x = 1, reward +1 vs -1 (L = B = 1, d = 1, K = 2, T = 16); "
                        "users 2..T: x = 0, reward 0",
                 basis=probe.privacy.basis + "; Gaussian tree is Gaussian-shaped, so "
                       "mu_claim = gdp_mu(epsilon, delta)",
                 extra=_ucb_claim_extra(probe))


_UCB_DOC = dict(
    canary="user 1: context x = 1, reward +1 vs -1 (L = B = 1); later users context 0",
    shows="the released Gram/target sums (V_t, u~_t) after user 1 hide user 1's reward as "
          "claimed (Claim 7: JDP = DP of these sums + post-processing); with L = B the "
          "canary attains the accountant's worst-case sensitivity",
    cannot_show="the JDP conversion itself (that nothing else about user t leaks into later "
                "rounds) is only checked by the black-box audit; Wishart noise is not "
                "audited",
)


@register("dp-ucb", fast_runs=10_000, thorough_runs=200_000,
          component="agents.dp_ucb.DPUCB (Gaussian tree, theorem calibration)",
          broken_variant=_UCB_BROKEN["theorem"][0], **_UCB_DOC)
def audit_dp_ucb(runs: int, seed: int = 0, broken: bool = False):
    return _dp_ucb_whitebox("theorem", runs, seed, broken)


@register("dp-ucb-accountant", fast_runs=10_000, thorough_runs=200_000,
          component="agents.dp_ucb.DPUCB (Gaussian tree, accountant calibration)",
          broken_variant=_UCB_BROKEN["accountant"][0], **_UCB_DOC)
def audit_dp_ucb_accountant(runs: int, seed: int = 0, broken: bool = False):
    return _dp_ucb_whitebox("accountant", runs, seed, broken)


BB_HORIZON = 16


@register("dp-ucb-blackbox", fast_runs=2_000, thorough_runs=30_000,
          component="agents.dp_ucb.DPUCB (accountant calibration), black-box JDP",
          canary="user 1: x = 1, reward +1 vs -1; users 2..16: x = +1, -1, +1, ..., "
                 "reward 0",
          broken_variant="node sigma / 10",
          shows="the later users' actions (all they see) do not reveal user 1's reward "
                "beyond the claim -- an end-to-end JDP check through act(); alternating "
                "+x/-x contexts cancel the (symmetric) UCB bonus and expose the sign of "
                "theta~ along x",
          cannot_show="weak against the correct agent (mu_lb ~ 0): the UCB bonus and the "
                      "later users' own records dilute the signal, so only gross leaks "
                      "(noise / 10) are detectable")
def audit_dp_ucb_blackbox(runs: int, seed: int = 0, broken: bool = False):
    T = BB_HORIZON

    def make():
        agent = make_agent("dp-ucb", horizon=T, calibration="accountant", **UCB_PARAMS)
        if broken:
            agent.constants = {**agent.constants,
                               "node_sigma": agent.constants["node_sigma"] / 10.0}
        return agent

    probe = make()  # calibrated once; reset() per batch

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        x = np.ones((n, 1))
        a1 = agent.act(x)
        agent.update(x, a1, np.full(n, 1.0 if world else -1.0))
        score = np.zeros(n)
        for t in range(2, T + 1):
            sign = 1.0 if t % 2 == 0 else -1.0
            a = agent.act(sign * x)
            score += sign * (a == a1)
            agent.update(sign * x, a, np.zeros(n))
        return score

    return audit(sampler, epsilon=EPS, delta=DELTA, runs=runs, seed=seed,
                 confidence=CONFIDENCE, mu_claim=gdp_mu(EPS, DELTA), notion="JDP",
                 orientation="both", batch_size=50_000, component="dp-ucb-blackbox",
                 statistic="sum over users 2..T of sign(x_t) * [a_t = a_1] (actions only)",
                 variant="broken: node sigma / 10" if broken else "as implemented",
                 broken=broken, expected="violation" if broken else "consistent",
                 canary="user 1: x = 1, reward +1 vs -1; users 2..16: x = +-1 alternating, "
                        "reward 0",
                 basis=probe.privacy.basis + "; actions post-process a Gaussian mechanism, "
                       "so mu_claim = gdp_mu(epsilon, delta)",
                 extra=_ucb_claim_extra(probe))


SANITY_HORIZON = 256


@register("dp-ucb-plain-dp-sanity", fast_runs=1_000, thorough_runs=10_000,
          component="agents.dp_ucb.DPUCB (accountant): plain-DP audit including a_t",
          canary="users 1..255 teach theta_0 = +1, theta_1 = -1 (x = 1); user 256's own "
                 "context is +1 vs -1",
          broken_variant="(none: the sanity check itself expects a violation)",
          shows="the audit machinery sees the agent: a_t depends on user t's context, so a "
                "plain-DP audit including a_t reports epsilon far above the JDP claim, as "
                "it must (JDP is not DP)",
          cannot_show="nothing about the JDP guarantee (it is a check of the audit)",
          expected="violation", has_broken=False)
def audit_dp_ucb_plain_dp_sanity(runs: int, seed: int = 0, broken: bool = False):
    T = SANITY_HORIZON
    probe = make_agent("dp-ucb", horizon=T, calibration="accountant", **UCB_PARAMS)

    def sampler(world, n, rng):
        agent = probe.reset(n, rng)
        x = np.ones((n, 1))
        for t in range(T - 1):
            arm = t % 2
            agent.update(x, np.full(n, arm), np.full(n, 1.0 if arm == 0 else -1.0))
        a_t = agent.act(x if world else -x)
        return (a_t == 0).astype(float)

    return audit(sampler, epsilon=EPS, delta=DELTA, runs=runs, seed=seed,
                 confidence=CONFIDENCE, thresholds=[0.5], selection="bonferroni",
                 notion="DP (not claimed)", component="dp-ucb-plain-dp-sanity",
                 statistic="a_t itself (user t's own action)", variant="sanity check",
                 expected="violation", canary="user 256: x = +1 vs -1 after 255 teaching "
                                              "rounds",
                 basis=probe.privacy.basis + " -- JDP, not DP: a violation is expected",
                 notes="a plain-DP audit that includes a_t must report a large epsilon")


# --------------------------------------------------------------------------------------------
# DP-HDB (seed 000, Algorithm 3)
# --------------------------------------------------------------------------------------------

# K = 2 arms, d = 1 (each arm's l_1 ball is an interval, vertices +-r), squared loss (identity
# link), small radius so that the canary reaches ~97% of DP-POFW's sensitivity bound.
HDB_PARAMS = dict(n_arms=2, dim=1, epsilon=EPS, delta=DELTA, radius=0.01, context_bound=1.0,
                  reward_bound=1.0)
HDB_T0, HDB_HORIZON = 16, 64
_HDB_BROKEN_FACTOR = 50.0


def _dp_hdb(calibration: str, broken_noise: bool = False, horizon: int = HDB_HORIZON):
    agent = make_agent("dp-hdb", horizon=horizon, t0=HDB_T0, calibration=calibration,
                       **HDB_PARAMS)
    if broken_noise:
        import dataclasses

        for opt in agent.arm_optimizers:  # instance-level monkeypatch of the selection noise
            cal = opt._calibrate()
            opt._cal = dataclasses.replace(cal, kappa=cal.kappa / _HDB_BROKEN_FACTOR)
    return agent


def _dp_hdb_reward_audit(name: str, calibration: str, runs: int, seed: int, broken: bool):
    probe = _dp_hdb(calibration)
    K, t0, T = HDB_PARAMS["n_arms"], HDB_T0, HDB_HORIZON

    def sampler(world, n, rng):
        agent = _dp_hdb(calibration, broken)
        agent.reset(n, rng)
        x1 = np.ones((n, 1))
        zeros = np.zeros((n, 1))
        prev = np.zeros(n)  # arm 0's released iterate before its step
        s = 0  # arm 0's step counter
        stat = np.zeros(n)
        for t in range(1, T + 1):
            x = x1 if t == 1 else zeros
            a = agent.act(x)
            r = np.full(n, 1.0 if world else -1.0) if t == 1 else np.zeros(n)
            agent.update(x, a, r)
            if t0 < t <= K * t0:
                continue  # arm 1's forced phase: arm 0 does not step
            s += 1
            new = agent._theta[:, 0, 0]  # released estimate of arm 0
            eta = min(1.0, 1.0 / (s + 1.0))
            v = (new - (1.0 - eta) * prev) / eta  # DP-POFW's selected vertex, +-r
            stat += math.sqrt(s) / (s + 1.0) * np.sign(v)
            prev = new.copy()
        return stat

    return audit(sampler, epsilon=EPS, delta=DELTA, runs=runs, seed=seed,
                 confidence=CONFIDENCE, notion="JDP", batch_size=50_000, component=name,
                 statistic="white-box: arm 0's released estimates after round 1: "
                           "sum_s sqrt(s)/(s+1) sign(v_s) over its DP-POFW steps",
                 variant=f"broken: per-arm selection noise / {_HDB_BROKEN_FACTOR:g}"
                 if broken else "as implemented", broken=broken,
                 expected="violation" if broken else "consistent",
                 canary="user 1 (forced sampling, arm 0): x = 1, reward +1 vs -1; later users "
                        "x = 0, reward 0 (K = 2, d = 1, radius 0.01, t0 = 16, T = 64)",
                 basis=probe.privacy.basis,
                 extra={"arm_kappa": probe.arm_optimizers[0].kappa})


_HDB_DOC = dict(
    canary="user 1 (arm 0's first forced sample): x = 1, reward +1 vs -1; later users "
           "context 0",
    broken_variant=f"per-arm DP-POFW selection noise / {_HDB_BROKEN_FACTOR:g} (each arm runs "
                   "at epsilon/2, whose schedule has ~2x the noise of the single optimizer)",
    shows="the released per-arm estimates after user 1 hide user 1's reward (Theorem 4.1 "
          "rests on their DP; actions post-process them)",
    cannot_show="one arm only (a reward change reaches one arm); the two-arm effect of a "
                "context change is audited by dp-hdb-context; DP-POFW's claim is loose, so "
                "only gross errors are detectable",
)


@register("dp-hdb", fast_runs=10_000, thorough_runs=200_000,
          component="agents.dp_hdb.DPHDB (DP-POFW arms, theorem calibration)", **_HDB_DOC)
def audit_dp_hdb(runs: int, seed: int = 0, broken: bool = False):
    return _dp_hdb_reward_audit("dp-hdb", "theorem", runs, seed, broken)


@register("dp-hdb-accountant", fast_runs=10_000, thorough_runs=200_000,
          component="agents.dp_hdb.DPHDB (DP-POFW arms, accountant calibration)", **_HDB_DOC)
def audit_dp_hdb_accountant(runs: int, seed: int = 0, broken: bool = False):
    return _dp_hdb_reward_audit("dp-hdb-accountant", "accountant", runs, seed, broken)


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


@register("dp-hdb-context", fast_runs=4_000, thorough_runs=100_000,
          component="agents.dp_hdb.DPHDB: synthetic update (a_t must not leak)",
          canary="user 33 (first after forced sampling): context +1 vs -1, reward 0; all "
                 "earlier users context 0",
          broken_variant="no synthetic update (only the pulled arm's estimate changes)",
          shows="the released estimates after user t do not reveal a_t: every arm advances "
                "once per round (the synthetic update), so which arm moved is independent of "
                "user t's context",
          cannot_show="a targeted structural check: for the correct agent the statistic is "
                      "identically 0; the privacy of the moves themselves is audited by "
                      "dp-hdb")
def audit_dp_hdb_context(runs: int, seed: int = 0, broken: bool = False):
    T = HDB_CTX_HORIZON
    probe = _dp_hdb("theorem", horizon=T)

    def sampler(world, n, rng):
        agent = _dp_hdb("theorem", horizon=T)
        if broken:
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

    return audit(sampler, epsilon=EPS, delta=DELTA, runs=runs, seed=seed,
                 confidence=CONFIDENCE, notion="JDP", orientation="both", batch_size=50_000,
                 component="dp-hdb-context",
                 statistic="[arm a'_t moved] - [arm a_t moved] after round t, with a_t, a'_t "
                           "the arms user t would be shown in D, D' (from the released "
                           "estimates)",
                 variant="broken: no synthetic update" if broken else "as implemented",
                 broken=broken, expected="violation" if broken else "consistent",
                 canary="user 33: context +1 vs -1 (K = 2, d = 1, t0 = 16)",
                 basis=probe.privacy.basis)


@register("dp-hdb-plain-dp-sanity", fast_runs=2_000, thorough_runs=20_000,
          component="agents.dp_hdb.DPHDB: plain-DP audit including a_t",
          canary="user 33: context +1 vs -1 after 32 forced rounds with context 0",
          broken_variant="(none: the sanity check itself expects a violation)",
          shows="a plain-DP audit that includes a_t reports epsilon far above the JDP claim, "
                "as it must for a greedy agent (JDP is not DP)",
          cannot_show="nothing about the JDP guarantee (it is a check of the audit)",
          expected="violation", has_broken=False)
def audit_dp_hdb_plain_dp_sanity(runs: int, seed: int = 0, broken: bool = False):
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

    return audit(sampler, epsilon=EPS, delta=DELTA, runs=runs, seed=seed,
                 confidence=CONFIDENCE, thresholds=[0.5], selection="bonferroni",
                 notion="DP (not claimed)", component="dp-hdb-plain-dp-sanity",
                 statistic="a_t itself (compared with the arm the D context would get)",
                 variant="sanity check", expected="violation",
                 canary="user 33: x = +1 vs -1", basis=probe.privacy.basis
                 + " -- JDP, not DP: a violation is expected",
                 notes="a plain-DP audit that includes a_t must report a large epsilon")

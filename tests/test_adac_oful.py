"""adac-oful: its privacy (the zCDP calibration and the ledger certify the claim, one user
changes only its own episode's release and the trigger's queries by at most what the
calibration assumes), the published reading is flagged, the determinant rule is the paper's,
clipping is counted, learning on a small instance, errors (same-seed reruns and seed dependence: the
contract checks, tests/test_contracts.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _learning import ratios_to_random

from dpbandits.agents import make_agent
from dpbandits.agents.adac_oful import AdaCOFUL
from dpbandits.audits.adac_oful import worst_pair
from dpbandits.harness.simulate import simulate
from dpbandits.privacy.accounting import epsilon_of, zcdp_epsilon, zcdp_rho

NAME = "adac-oful"


def agent(**kw) -> AdaCOFUL:
    params = dict(n_arms=2, dim=4, horizon=200)
    params.update(kw)
    return make_agent(NAME, **params)


def _run(a, xs, rs, seed=0):
    """Play a fixed stream (T, R, d), (T, R); return the agent and the arms it chose."""
    a.reset(xs.shape[1], np.random.default_rng(seed))
    arms = []
    for x, r in zip(xs, rs, strict=True):
        arms.append(a.act(x))
        a.update(x, arms[-1], r)
    return a, np.array(arms)


# -- privacy ----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta, schedule", [(1.0, None, "determinant"),
                                                  (0.3, 1e-6, "doubling"),
                                                  (10.0, 1e-3, "determinant")])
def test_zcdp_calibration_and_ledger_certify_the_claim(eps, delta, schedule):
    a = agent(dim=50, horizon=10_000, epsilon=eps, delta=delta, schedule=schedule)
    g = a.privacy
    assert g.notion == "JDP" and g.neighbouring == "replace-one" and g.certified
    # the paper's calibration: rho = zcdp_rho(eps, delta), split between trigger and release
    rho = zcdp_rho(eps, g.delta)
    assert a.rho == pytest.approx(rho, rel=1e-12)
    assert a.eps_trigger**2 / 2 == pytest.approx(
        (0.1 if schedule == "determinant" else 0.0) * rho, rel=1e-12)
    assert zcdp_epsilon(a.rho, g.delta) <= eps * (1 + 1e-9)
    # the ledger (the mechanisms themselves) is certified by the PLD accountant too
    assert epsilon_of(a.ledger, g.delta) <= eps


def test_pld_calibration_is_tight_and_uses_less_noise():
    zc, pld = agent(dim=50, horizon=10_000), agent(dim=50, horizon=10_000, calibration="pld")
    assert pld.eps_trigger == zc.eps_trigger
    certified = epsilon_of(pld.ledger, pld.privacy.delta)
    assert 0.99 < certified <= 1.0
    assert pld.multiplier < zc.multiplier


def test_non_private_twin_has_no_ledger_and_no_noise():
    a = agent(epsilon=math.inf)
    assert a.ledger is None and not a.privacy.is_private
    assert set(a.sigmas.values()) == {0.0} and a.eps_trigger == 0.0


def test_published_reading_is_flagged_not_certified():
    a = agent(protect="reward")
    g = a.privacy
    assert not g.certified and "contexts" in g.caveat
    assert a.sigmas["gram"] == 0.0 and a.eps_trigger == 0.0
    # the targets' noise is the paper's: sigma = 2B / sqrt(2 rho), rho = zcdp_rho(eps, delta)
    assert a.sigmas["target"] == pytest.approx(2.0 / math.sqrt(2.0 * zcdp_rho(1.0, 1 / 200)))


def _whitened(a, dg, db):
    """Norm of a release difference in the noise metric (GOE Gram, Gaussian targets)."""
    iu = np.triu_indices(dg.shape[-1])
    scale = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0))
    return math.sqrt(((dg[..., iu[0], iu[1]] * scale / a.sigmas["gram"]) ** 2).sum()
                     + ((db / a.sigmas["target"]) ** 2).sum())


@pytest.mark.parametrize("canary", [0, 2, 9])
def test_one_user_changes_only_its_own_release_by_at_most_the_sensitivity(canary):
    """Doubling episodes ending at 1, 3, 7, 15, 20; every user but one has context 0 (adds
    nothing). With the agent's randomness fixed, the released sums of the two worlds are
    equal before the canary's episode and differ after it by at most 1/k (whitened)."""
    T, d = 20, 3
    a = agent(dim=d, horizon=T, schedule="doubling", context_bound=1.0)
    xs, rs = np.zeros((T, 1, d)), np.zeros((T, 1))
    xs2, rs2 = xs.copy(), rs.copy()
    xs[canary, 0], rs[canary, 0] = [0.6, -0.8, 0.0], 5.0       # reward clipped to 1
    xs2[canary, 0], rs2[canary, 0] = [0.0, 3.0, 4.0], -5.0     # context clipped to norm 1
    ends = [1, 3, 7, 15]
    start = max([e for e in ends if e <= canary], default=0)
    end = min(e for e in ends if e > canary)
    before = [_run(a.clone(), x[:start], r[:start])[0] for x, r in ((xs, rs), (xs2, rs2))]
    if start:
        assert np.array_equal(before[0]._gram, before[1]._gram)
    w1, arms1 = _run(a.clone(), xs[:end], rs[:end])
    w2, arms2 = _run(a.clone(), xs2[:end], rs2[:end])
    assert np.array_equal(arms1[:canary], arms2[:canary])
    dist = _whitened(a, w1._gram - w2._gram, w1._target - w2._target)
    assert 0 < dist <= (1.0 / a.multiplier) * (1 + 1e-9)
    assert w1.n_clipped_rewards_[0] == 1 and w2.n_clipped_contexts_[0] == 1


def test_the_worst_pair_attains_the_release_sensitivity():
    """The audit's canary (unit rows at the angle of fit_sensitivity's extremum, rewards at
    -B and +B, same arm) moves the release by exactly 1/k: the calibration is exact."""
    a = agent(dim=2, horizon=8, schedule="doubling", context_bound=1.0)
    u0, u1 = worst_pair(a.sigmas["gram"], a.sigmas["target"], 1.0)
    worlds = []
    for u, r in ((u0, -1.0), (u1, 1.0)):
        b = a.clone().reset(1, np.random.default_rng(0))
        b.update(u[None], np.zeros(1, dtype=np.int64), np.array([r]))
        worlds.append(b)
    dist = _whitened(a, worlds[0]._gram - worlds[1]._gram,
                     worlds[0]._target - worlds[1]._target)
    assert dist == pytest.approx(1.0 / a.multiplier, rel=1e-9)


def test_trigger_design_is_floored_when_the_noisy_gram_is_indefinite():
    """The trigger's sensitivity rests on A_k >= lambda_T I: a released Gram far below zero
    (as noise can make it) leaves the matrix the trigger inverts at lambda_T, while the
    index's design is floored at rho_min = Upsilon_m (and the raise is counted)."""
    a = agent(dim=3).reset(2, np.random.default_rng(0))
    a._gram[0, 1] = -50.0 * a.trigger_floor * np.eye(3)
    a.n_releases_[:] = 1
    a._refit(np.arange(2))
    trig = np.linalg.eigvalsh(np.linalg.inv(a._m_inv))
    assert trig.min() == pytest.approx(a.trigger_floor, rel=1e-9)
    index = np.linalg.eigvalsh(np.linalg.inv(a._v_inv))
    assert index[0, 1].max() == pytest.approx(a.trigger_floor / 2, rel=1e-9)  # Upsilon_1
    assert a.n_raised_.tolist() == [1, 0]


def test_trigger_noise_has_the_scales_of_above_threshold():
    a = agent(dim=2, horizon=50)
    b = a.trigger_sensitivity / a.eps_trigger
    assert a.trigger_scales == (2 * b, 4 * b)
    assert a.trigger_sensitivity == math.log1p(1 / a.trigger_floor)
    n = 200_000
    draws = a.reset(n, np.random.default_rng(5))._threshold_noise
    # |Laplace(s)| is Exp(s): mean s, sd s; four standard errors
    assert abs(np.abs(draws).mean() / (2 * b) - 1) < 4 / math.sqrt(n)
    assert agent(schedule="doubling").trigger_scales == (0.0, 0.0)


def test_trigger_queries_move_by_at_most_the_sensitivity():
    """With a threshold no query reaches, the episode never ends: the trigger's query of the
    two worlds (one user replaced, adversarial unit contexts, random others) differs by at
    most Delta = ln(1 + 1/lambda_T) at every round."""
    rng = np.random.default_rng(3)
    T, d = 60, 3
    a = agent(dim=d, horizon=T, det_factor=1e9, context_bound=1.0)
    xs = rng.uniform(-1, 1, (T, 1, d)) / math.sqrt(d)
    rs = rng.uniform(-1, 1, (T, 1))
    worst = 0.0
    for s in (0, 5, 30):
        xs2 = xs.copy()
        xs2[s, 0] = 0.0
        xs[s, 0] = np.array([1.0, 0.0, 0.0])
        q = []
        for x in (xs, xs2):
            b = a.clone().reset(1, np.random.default_rng(0))
            trace = []
            for t in range(T):
                b.update(x[t], b.act(x[t]), rs[t])
                trace.append(b._q.copy())
            assert b.n_releases_[0] == 0
            q.append(np.array(trace))
        gap = np.abs(q[0] - q[1]).max()
        worst = max(worst, gap)
    assert worst <= a.trigger_sensitivity * (1 + 1e-9)
    assert worst > 0.99 * a.trigger_sensitivity  # a unit context on the first design attains it


def test_determinant_rule_is_the_papers_when_exact():
    """Non-private: an episode ends right after the round where ln det V_t exceeds
    ln det V_tau + ln 2 (V = reg I + sum u u' per arm, joint determinant), recomputed here
    from scratch."""
    rng = np.random.default_rng(1)
    T, d, K = 150, 3, 2
    a = agent(dim=d, horizon=T, epsilon=math.inf, context_bound=1.0)
    xs = rng.uniform(-1, 1, (T, 1, d)) / math.sqrt(d)
    rs = rng.uniform(-1, 1, (T, 1))
    a.reset(1, np.random.default_rng(0))
    gram = np.tile(np.eye(d), (K, 1, 1))
    logdet_tau = np.linalg.slogdet(gram)[1].sum()
    for t in range(T):
        arm = a.act(xs[t])
        before = a.n_releases_[0]
        a.update(xs[t], arm, rs[t])
        u = xs[t, 0]
        gram[arm[0]] += np.outer(u, u)
        logdet = np.linalg.slogdet(gram)[1].sum()
        ends = logdet - logdet_tau > math.log(2.0) and t + 1 < T
        assert (a.n_releases_[0] - before == 1) == ends, t
        if ends:
            logdet_tau = logdet
    assert a.n_releases_[0] >= 5


def test_clipping_is_enforced_and_counted():
    a = agent(dim=3, horizon=30, context_bound=1.0, reward_bound=0.5)
    xs = np.full((30, 2, 3), 2.0)
    rs = np.full((30, 2), 0.7)
    a, _ = _run(a, xs, rs)
    assert np.all(a.n_clipped_contexts_ == 30) and np.all(a.n_clipped_rewards_ == 30)


def test_replications_have_their_own_episodes():
    a = agent(dim=10, horizon=2000)
    res = simulate("dpbandits/GLMBandit-v0", a, n_reps=6, seed=4, env_params=SMALL)
    assert res.regret.shape == (6, 2000)
    assert a.n_releases_.shape == (6,) and np.all(a.n_releases_ >= 1)
    assert len(set(a.n_releases_.tolist())) > 1  # private triggers differ by replication


# -- parameters --------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, words", [
    (dict(protect="context"), "protect"), (dict(schedule="fixed"), "schedule"),
    (dict(det_factor=1.0), "det_factor"), (dict(first_episode=0), "first_episode"),
    (dict(calibration="rdp"), "calibration"), (dict(trigger_share=1.0), "trigger_share"),
    (dict(gram_share=0.0), "gram_share"), (dict(context_bound=0.0), "context_bound"),
    (dict(reward_bound=-1.0), "reward_bound"), (dict(alpha=1.0), "alpha"),
    (dict(reg=0.0), "reg"), (dict(delta=1.0), "delta"),
])
def test_bad_parameters_raise(kw, words):
    with pytest.raises((ValueError, TypeError), match=words):
        agent(**kw)


# -- learning ----------------------------------------------------------------------------------
SMALL = dict(n_arms=2, dim=10, sparsity=2, horizon=2000)


def test_learns_on_a_small_instance():
    """K = 2, d = 10, s = 2, T = 2000, 20 replications. Measured ratios to uniform-random's
    regret: 0.27 at epsilon = 10 (per-replication sd 0.04, so the standard error of the
    mean is ~0.01; the bound 0.4 is 13 of them above) and 0.018 for the non-private twin
    (sd 0.004); 0.73 at epsilon = 1."""
    ratio, res = ratios_to_random({"adac": (NAME, {"epsilon": 10.0}),
                                   "np": (NAME, {"epsilon": math.inf})}, SMALL)
    assert ratio["adac"] < 0.4 and ratio["np"] < 0.05
    assert res["adac"].certified["epsilon"] <= 10.0

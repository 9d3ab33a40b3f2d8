"""dp-moment-ls: its privacy (the ledger certifies the claim; the noiseless screening release
is exactly the moment and contrasts of the normalized rows; the joint sensitivity bound holds
on adversarial rows, including floats whose squares underflow, and is attained; unit rows
stay in the unit ball after rounding), its learning on a small instance, errors and reruns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.moment_ls import _unit_rows
from dpbandits.audits.moment_ls import screen_canary, screen_params
from dpbandits.harness.compare import compare
from dpbandits.privacy.accounting import epsilon_of, gdp_mu

NAME = "dp-moment-ls"


def agent(**kw):
    params = dict(n_arms=2, dim=6, horizon=200)
    params.update(kw)
    return make_agent(NAME, **params)


# -- privacy ----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta, K, d", [(1.0, None, 2, 50), (0.3, 1e-6, 4, 10),
                                              (3.0, 1e-3, 3, 20)])
def test_ledger_certifies_the_claim(eps, delta, K, d):
    a = agent(n_arms=K, dim=d, horizon=10_000, epsilon=eps, delta=delta)
    g = a.privacy
    assert g.notion == "JDP" and g.neighbouring == "replace-one" and g.certified
    assert g.delta == (1e-4 if delta is None else delta)
    certified = epsilon_of(a.ledger, g.delta)
    assert certified <= eps
    assert certified > 0.99 * eps
    assert a.multiplier <= 1.001 / gdp_mu(eps, g.delta)
    # both kinds of release are exactly 1/k-GDP at the noise scales actually used
    for kind in ("screen", "fit"):
        assert a.release_mu(kind) == pytest.approx(1.0 / a.multiplier, rel=1e-12)


def test_non_private_twin_has_no_ledger_and_no_noise():
    a = agent(epsilon=math.inf)
    assert a.ledger is None and not a.privacy.is_private
    assert set(a.sigmas.values()) == {0.0}


def test_halving_a_noise_scale_breaks_the_calibration():
    a = agent(n_arms=3)
    a.sigmas = {**a.sigmas, "moment": a.sigmas["moment"] / 2}
    assert a.release_mu("screen") > 1.2 / a.multiplier


def test_noiseless_screening_release_is_the_exact_moment_and_contrasts():
    K, d, n0 = 3, 5, 7
    a = agent(n_arms=K, dim=d, horizon=100, first_episode=n0, epsilon=math.inf, clip_screen=1e3)
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(n0, 2, d)) * rng.uniform(0.1, 10, size=(n0, 2, 1))
    rs = rng.normal(size=(n0, 2))
    a.reset(2, np.random.default_rng(0))
    arms = []
    for x, r in zip(xs, rs, strict=True):
        arm = a.act(x)
        a.update(x, arm, r)
        arms.append(arm)
    arms = np.array(arms)
    norms = np.linalg.norm(xs, axis=2, keepdims=True)
    u = xs / norms
    moment = np.einsum("tri,trj->rij", u, u)
    sums = np.zeros((2, K, d))
    for t in range(n0):
        for rep in range(2):
            sums[rep, arms[t, rep]] += rs[t, rep] / norms[t, rep, 0] * u[t, rep]
    contrasts = sums - sums.mean(axis=1, keepdims=True)
    assert np.allclose(a._M_released, moment, rtol=1e-10, atol=1e-12)
    assert np.allclose(a._c_released, contrasts, rtol=1e-10, atol=1e-12)


def _screen_contribution(a, x, r, arm):
    """The noiseless screening release of one user alone (moment, contrasts)."""
    twin = make_agent(NAME, **{**a.get_params(), "epsilon": math.inf})
    twin._y_screen = a._y_screen
    twin.reset(1, np.random.default_rng(0))
    twin._update(x[None, :], np.array([arm]), np.array([r]))
    z, y, _, zero = twin._rows(x[None, :], np.array([r]))
    y = np.where(zero, 0.0, y)
    s = np.zeros((a.n_arms, z.shape[1]))
    s[arm] = y[0] * z[0]
    return np.outer(z[0], z[0]), s - s.mean(axis=0)


def _whitened_screen_distance(a, one, two):
    (m1, c1), (m2, c2) = one, two
    dm, dc = m1 - m2, c1 - c2
    iu = np.triu_indices(dm.shape[0])
    scale = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0))
    return math.sqrt(((dm[iu] * scale / a.sigmas["moment"]) ** 2).sum()
                     + ((dc / a.sigmas["contrast"]) ** 2).sum())


TINY = 2.0**-537  # squares underflow to 0 (issue 25's counterexample scale)
ADVERSARIAL = [
    TINY * np.array([math.sqrt(1.4999), 0.7071, 0.7071, 0.7071]),
    np.array([5e-324, 0.0, 0.0, 0.0]),
    np.array([5e-324, -5e-324, 5e-324, 0.0]),
    np.array([1e308, -1e308, 1e308, 1e308]),
    np.array([1e308, 1e-300, 0.0, -0.0]),
    np.array([1.0, 1e-200, -1e-310, 3.0]),
    np.array([0.0, -0.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("x", ADVERSARIAL)
def test_unit_rows_stay_in_the_unit_ball_on_adversarial_floats(x):
    u, inv, scale = _unit_rows(x[None, :])
    assert np.isfinite(u).all() and np.isfinite(inv).all()
    assert float(np.sqrt((u**2).sum())) <= 1.0
    assert math.fsum(float(v) ** 2 for v in u[0]) <= 1.0
    if np.any(x != 0):
        # the direction is x's (compare after rescaling by the largest entry)
        ref = x / np.abs(x).max()
        assert np.allclose(u[0], ref / np.linalg.norm(ref), rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_screen_sensitivity_holds_on_adversarial_rows_and_is_attained(K):
    a = agent(n_arms=K, dim=4, clip_screen=0.5)
    bound = 1.0 / a.multiplier
    rng = np.random.default_rng(K)
    rows = list(ADVERSARIAL) + [rng.normal(size=4) * 10.0 ** rng.uniform(-300, 300)
                                for _ in range(40)]
    worst = 0.0
    for _ in range(1500):
        i, j = rng.integers(0, len(rows), 2)
        r, r2 = rng.choice([-1e300, -5.0, 0.0, 1e-310, 5.0, 1e300], 2)
        arm, arm2 = rng.integers(0, K, 2)
        one = _screen_contribution(a, rows[i], r, arm)
        two = _screen_contribution(a, rows[j], r2, arm2)
        worst = max(worst, _whitened_screen_distance(a, one, two))
    assert worst <= bound * (1 + 1e-9)
    # the analysis' extremal pair (the audit's canary) attains it
    probe = make_agent(NAME, **{**screen_params(K), "horizon": 8})
    u0, u1, y = screen_canary(probe)
    one = _screen_contribution(probe, u0, -10.0, 0)
    two = _screen_contribution(probe, u1, 10.0, 0)
    assert _whitened_screen_distance(probe, one, two) == pytest.approx(
        1.0 / probe.multiplier, rel=1e-9)


def test_fit_rows_stay_in_the_unit_ball_and_targets_are_clipped():
    a = agent(dim=4, horizon=40, first_episode=2, screen_size=3, n_factors=1, intercept=0.5)
    a.reset(1, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for _ in range(6):  # through the screening episodes (ends 2, 6)
        x = rng.normal(size=(1, 4))
        a.update(x, a.act(x), rng.normal(size=1))
    assert a.screened_ is not None
    for x in ADVERSARIAL:
        for r in (1e300, -1e-310, 3.0):
            z, y, _, zero = a._rows(x[None, :], np.array([r]))
            assert float(np.sqrt((z**2).sum())) <= 1.0
            assert abs(float(y[0])) <= a._y_fit or zero[0]


def test_clipping_and_zero_rows_are_counted():
    a = agent(dim=3, horizon=10)
    a.reset(1, np.random.default_rng(0))
    x = np.array([[1.0, 0.0, 0.0]])
    a.update(x, a.act(x), np.array([100.0]))
    a.update(np.zeros((1, 3)), np.array([0]), np.array([100.0]))
    assert a.n_clipped_rewards_.tolist() == [1] and a.n_zero_rows_.tolist() == [1]


# -- behaviour --------------------------------------------------------------------------------
def test_learns_on_a_small_instance():
    params = {"n_arms": 2, "dim": 10, "horizon": 2000, "sparsity": 2,
              "normalization": "linf"}
    _, _, res = compare({"random": "random", NAME: NAME}, "dpbandits/GLMBandit-v0",
                        n_reps=6, seed=7, env_params=params)
    final = {k: v.cum_regret[:, -1].mean() for k, v in res.items()}
    print(final[NAME] / final["random"])
    assert final[NAME] / final["random"] < 0.5
    assert res[NAME].certified["epsilon"] <= 1.0


def test_schedule_screening_and_bad_parameters():
    a = agent(horizon=1000, first_episode=50)
    assert a.episode_ends_ == [50, 150, 350, 750, 1000]
    with pytest.raises(ValueError, match="moment_share"):
        agent(moment_share=1.0)
    with pytest.raises(ValueError, match="screen_size"):
        agent(screen_size=7)
    with pytest.raises(ValueError, match="clip_fit"):
        agent(clip_fit=1e308)


def test_reruns_are_bit_identical():
    def run():
        _, _, res = compare({NAME: NAME}, "dpbandits/GLMBandit-v0", n_reps=3, seed=1,
                            env_params={"n_arms": 3, "dim": 8, "horizon": 300})
        return res[NAME].cum_regret
    assert np.array_equal(run(), run())

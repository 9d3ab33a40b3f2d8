"""dp-moment-ls: its privacy (the ledger certifies the claim; the noiseless screening release
is exactly the moment and contrasts of the normalized rows; the joint sensitivity bound holds
on adversarial rows, including floats whose squares underflow, and is attained; unit rows
stay in the unit ball after rounding), its learning on a small instance, errors and reruns."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.moment_ls import moment_ls_plan
from dpbandits.audits.moment_ls import screen_canary, screen_params
from dpbandits.geometry import normalize_rows
from dpbandits.harness.compare import compare
from dpbandits.privacy.accounting import epsilon_of

NAME = "dp-moment-ls"


def agent(**kw):
    params = dict(n_arms=2, dim=6, horizon=200)
    params.update(kw)
    return make_agent(NAME, **params)


# -- privacy ----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta, K, d", [(1.0, None, 2, 50), (0.3, 1e-6, 4, 10),
                                              (3.0, 1e-3, 3, 20)])
def test_both_releases_are_exactly_the_certified_gdp(eps, delta, K, d):
    """(The ledger certifies the claim: tests/test_screened_ls.py, for both screened agents.)
    """
    a = agent(n_arms=K, dim=d, horizon=10_000, epsilon=eps, delta=delta)
    # both kinds of release are exactly 1/k-GDP at the noise scales actually used
    for kind in ("screen", "fit"):
        assert a.release_mu(kind) == pytest.approx(1.0 / a.multiplier, rel=1e-12)


# Recorded at 9b7ed51, before the calibration became a NoisePlan (dp_accounting 0.6): the
# multiplier, the certified epsilon (float.hex) and the four noise scales. The plan must give
# them bit for bit (a new dp_accounting minor release may move the last bits: re-record then).
BEFORE_PLAN = [
    (dict(n_arms=2, dim=50, horizon=10000, epsilon=1.0),
     "0x1.97c53536bb66ep+1", "0x1.ffffe03879b74p-1",
     ("0x1.c888ab0fe4fffp+2", "0x1.0e81f639d924cp-4", "0x1.8c76af8054577p+2",
      "0x1.c9cbf7d2161f1p-1")),
    (dict(n_arms=4, dim=10, horizon=10000, epsilon=0.3, delta=1e-06),
     "0x1.9fc1b345b5eb8p+3", "0x1.33331f1f1e612p-2",
     ("0x1.d179a71b3e57bp+4", "0x1.79a99426cae9ep-1", "0x1.943a7ce8803eap+4",
      "0x1.2734ec86325b4p+2")),
    (dict(n_arms=3, dim=20, horizon=10000, epsilon=3.0, delta=0.001, intercept=0.5,
          n_factors=2, moment_share=0.5, gram_share=0.2, clip_screen=0.3, clip_fit=0.7,
          screen_size=5),
     "0x1.0989623ac608fp+0", "0x1.7fffeae61a607p+1",
     ("0x1.d5682c2705cecp+0", "0x1.1bdee1459c7e7p-3", "0x1.778689b8d1721p+1",
      "0x1.06de2d34929c9p-1")),
    (screen_params(2), "0x1.dd8572e001632p+1", "0x1.ffffe174e7c63p-1",
     ("0x1.0b502161cc51bp+3", "0x1.5dfeb0d2fec1dp+2", "0x1.d047ce3098c3dp+2",
      "0x1.7b155bd772754p+1")),
    (screen_params(3), "0x1.dd8572e001632p+1", "0x1.ffffe174e7c63p-1",
     ("0x1.0b502161cc51bp+3", "0x1.9423a80a9c87bp+2", "0x1.d047ce3098c3dp+2",
      "0x1.7b155bd772754p+1")),
]


@pytest.mark.parametrize("params, multiplier, epsilon, sigmas", BEFORE_PLAN)
def test_the_plan_keeps_the_former_calibration_bit_for_bit(params, multiplier, epsilon,
                                                             sigmas):
    a = make_agent(NAME, **params)
    assert a.plan.calibration == "accountant" and a.privacy.certified
    assert a.multiplier == float.fromhex(multiplier)
    assert a.plan.ledger.noise_multiplier == a.multiplier
    assert epsilon_of(a.ledger, a.privacy.delta) == float.fromhex(epsilon)
    assert a.sigmas == dict(zip(("moment", "contrast", "gram", "target"),
                                map(float.fromhex, sigmas), strict=True))
    # the plan is one pure function of the validated parameters
    plan = moment_ls_plan(a._eps, a._delta, n_arms=a.n_arms, y_screen=a._y_screen,
                          y_fit=a._y_fit, moment_share=a._mshare, gram_share=a._gshare)
    assert plan.scales == a.plan.scales and plan.sensitivities == a.plan.sensitivities


def test_noise_parameters_are_read_only_views_of_the_plan():
    a = agent()
    for name in ("multiplier", "sigmas", "sensitivities"):
        with pytest.raises(AttributeError, match="noise plan"):
            setattr(a, name, getattr(a, name))
    assert a.privacy is a.plan.guarantee and a.ledger is a.plan.ledger
    assert a.multiplier == a.plan.scales["multiplier"]
    assert a.sensitivities == dict(a.plan.sensitivities)


def test_non_private_twin_has_no_ledger_and_no_noise():
    a = agent(epsilon=math.inf)
    assert a.ledger is None and not a.privacy.is_private
    assert set(a.sigmas.values()) == {0.0} and a.multiplier == 0.0
    assert a.plan.calibration == "none"


def test_halving_a_noise_scale_breaks_the_calibration():
    a = agent(n_arms=3)
    with pytest.raises(AttributeError, match="noise plan"):
        a.sigmas = {**a.sigmas, "moment": a.sigmas["moment"] / 2}
    broken = a.with_plan(a.plan.scaled(2.0, "moment"))
    assert broken.sigmas["moment"] == a.sigmas["moment"] / 2
    assert broken.release_mu("screen") > 1.2 / a.multiplier
    assert broken.ledger is None and not broken.privacy.certified
    assert a.release_mu("screen") == pytest.approx(1.0 / a.multiplier, rel=1e-12)


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


def _exact_sq_norm(row) -> Fraction:
    return sum((Fraction(float(v)) ** 2 for v in row), Fraction(0))


@pytest.mark.parametrize("x", ADVERSARIAL)
@pytest.mark.parametrize("r", [3.0, -1e-300, 1e300, 0.0])
def test_unit_rows_stay_in_the_unit_ball_on_adversarial_floats(x, r):
    """The screening rows (``u``, targets ``clip(r/||x||)``): exact ``||u|| <= 1`` in
    rational arithmetic, the direction of ``x``, and the target of the exact norm (Python's
    ``math.hypot`` is correctly scaled), clipped when the quotient overflows."""
    a = agent(dim=4, clip_screen=1.0)  # y_max = 1 / sqrt(4)
    a.reset(1, np.random.default_rng(0))
    u, y, clipped, zero = a._rows(x[None, :], np.array([r]))
    assert np.isfinite(u).all() and np.isfinite(y).all()
    assert _exact_sq_norm(u[0]) <= 1
    assert np.array_equal(a._rows(x[None, :]), u)  # acting sees the same rows
    if not np.any(x != 0):
        assert zero[0] and not u.any()
        return
    assert not zero[0]
    # the direction is x's (compare after rescaling by the largest entry)
    ref = x / np.abs(x).max()
    assert np.allclose(u[0], ref / np.linalg.norm(ref), rtol=1e-9, atol=1e-300)
    assert _exact_sq_norm(u[0]) > Fraction(1) - Fraction(1, 10**12)
    with np.errstate(over="ignore"):
        y_ref = np.float64(r) / math.hypot(*x)
    expected = float(np.clip(y_ref, -0.5, 0.5))
    assert float(y[0]) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert bool(clipped[0]) == (abs(y_ref) > 0.5)


@pytest.mark.heavy
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
        for r in (1e300, -1e-310, 3.0, 0.01):
            z, y, clipped, zero = a._rows(x[None, :], np.array([r]))
            assert _exact_sq_norm(z[0]) <= 1
            assert abs(float(y[0])) <= a._y_fit
            if zero[0]:
                continue
            # y = clip(r / (||f|| ||g||)) for the augmented f and the features g of u
            f = np.append(x, a._kappa)
            g = a._features(normalize_rows(f[None, :], 2.0, 1.0)[0])[0]
            with np.errstate(over="ignore"):
                y_ref = np.float64(r) / math.hypot(*f) / math.hypot(*g)
            assert float(y[0]) == pytest.approx(float(np.clip(y_ref, -a._y_fit, a._y_fit)),
                                                rel=1e-9, abs=1e-300)
            assert bool(clipped[0]) == (abs(y_ref) > a._y_fit)


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


def test_the_adversarial_check_catches_a_naive_normalization(monkeypatch):
    """The ``_contributions`` hook sees what ``_update`` adds: with ``x / sqrt(sum x^2)``
    (squares that underflow) instead of the certified primitive, the contract check fails."""
    from dpbandits.agents import agent_class, moment_ls
    from dpbandits.testing import ContractError, check_adversarial_inputs, instance_for_checks

    check_adversarial_inputs(instance_for_checks(agent_class("dp-moment-ls")))

    def naive(x, q=2.0, bound=1.0):
        norms = np.sqrt(np.einsum("...j,...j->...", x, x))
        return x / np.where(norms > 0, norms, 1.0)[..., None], norms

    monkeypatch.setattr(moment_ls, "normalize_rows", naive)
    with pytest.raises(ContractError, match="underflowing squares"):
        check_adversarial_inputs(instance_for_checks(agent_class("dp-moment-ls")))


def test_default_screened_set_grows_with_the_number_of_arms():
    """``|S| = min(d, max(16, 4 K))``: the former ``min(d, 16)`` up to K = 4."""
    sizes = {(K, d): agent(n_arms=K, dim=d)._s
             for K, d in [(2, 50), (4, 30), (4, 10), (5, 50), (6, 40), (10, 64), (8, 20)]}
    assert sizes == {(2, 50): 16, (4, 30): 16, (4, 10): 10, (5, 50): 20, (6, 40): 24,
                     (10, 64): 40, (8, 20): 20}
    assert agent(n_arms=6, dim=40, screen_per_arm=1)._s == 16
    assert agent(n_arms=6, dim=40, screen_size=5)._s == 5
    with pytest.raises(ValueError, match="screen_per_arm"):
        agent(screen_per_arm=0)


def test_default_first_episode_grows_with_the_number_of_arms():
    """``n0 = ceil(T/20 max(1, K/4))``: the former ``ceil(T/20)`` up to K = 4."""
    ends = {K: agent(n_arms=K, dim=8, horizon=10_000).episode_ends_[0] for K in (2, 4, 6, 8)}
    assert ends == {2: 500, 4: 500, 6: 750, 8: 1000}
    assert agent(n_arms=10, dim=8, horizon=1800).episode_ends_ == [225, 675, 1575, 1800]
    assert agent(n_arms=8, dim=8, horizon=10_000, first_per_arms=0).episode_ends_[0] == 500
    assert agent(n_arms=8, dim=8, horizon=10_000, first_episode=7).episode_ends_[0] == 7

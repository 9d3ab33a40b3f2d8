"""The variants of dp-moment-ls measured in the certified-learning study's third to fifth
rounds and not kept (experiments/certified_learning/variants.py): each reproduces, stream for
stream, the agent that carried it as an option before it moved (golden digests recorded at
84eca81); each keeps the agent's noise plan and ledger; the agent no longer accepts them."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.agents.moment_ls import MomentLS
from dpbandits.harness.compare import compare
from dpbandits.privacy.accounting import epsilon_of
from experiments.certified_learning.variants import (
    OPTIONS,
    MomentLSVariants,
    build,
    lasso_path,
)

NAME = "dp-moment-ls"


def agent(**kw):
    return make_agent(NAME, **{"n_arms": 2, "dim": 6, "horizon": 200, **kw})


def variant(**kw):
    return MomentLSVariants(**{"n_arms": 2, "dim": 6, "horizon": 200, **kw})


# The sha256 (first 16 hex digits) of the cumulative regret (2 replications, seed 3,
# GLMBandit-v0 with K = 3, d = 12, T = 600) of dp-moment-ls with each option, computed with
# the agent of main commit 84eca81, where the options were the agent's own parameters.
ENV = {"n_arms": 3, "dim": 12, "horizon": 600}
GOLDEN_84ECA81 = {
    "default": ({}, "250f8e924141fafc"),
    "thompson": ({"thompson": 0.5}, "451f6e3034e0bd82"),
    "fit_first": ({"fit_first": 2}, "b036bc17dcc7918a"),
    "lasso": ({"lasso": 1.0}, "4de9610d36190e3a"),
    "marginal_below": ({"marginal_below": 3.0}, "daab48ea1910c39a"),
    "no_screen_below": ({"no_screen_below": 2}, "d86d9ba8b1801a34"),
    "no_screen_then_fit_first": ({"no_screen_below": 2, "fit_first": 2}, "663056be1c873324"),
    "no_screen_episodes": ({"no_screen_below": 2, "no_screen_episodes": 1}, "63fd95340e0a5ac5"),
    "play_top": ({"play_top": 4}, "16315c99b72e6a7b"),
}


def _digest(spec) -> str:
    _, _, res = compare({"a": spec}, "dpbandits/GLMBandit-v0", n_reps=2, seed=3,
                        env_params=ENV)
    return hashlib.sha256(np.ascontiguousarray(res["a"].cum_regret).tobytes()).hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(GOLDEN_84ECA81))
def test_each_variant_reproduces_the_former_option_stream(case):
    """The subclass with an option is the old agent with it, bit for bit (the study's
    numbers stand); with none it is the agent (whose stream must not have moved either)."""
    kw, golden = GOLDEN_84ECA81[case]
    assert _digest(MomentLSVariants(**ENV, **kw)) == golden
    assert _digest(build(NAME, kw, ENV)) == golden  # how the study's commands name it
    if not kw:
        assert _digest(NAME) == golden


def test_the_agent_keeps_only_what_its_defaults_use_or_a_user_tunes():
    """The seven options are the experiment's, not the package's (20 parameters: the sizes,
    the budget, the fourteen design choices and ``reward_range``, a fact about the problem)."""
    names = MomentLS._init_param_names()
    assert not set(OPTIONS) & set(names)
    assert len(names) == 20 and "reward_range" in names, names
    for option, value in (("thompson", 0.5), ("play_top", 4), ("no_screen_below", 2)):
        with pytest.raises((TypeError, ValueError), match=option):
            agent(**{option: value})
    v = variant(lasso=1.0, play_top=3)
    assert v.get_params()["lasso"] == 1.0 and v.get_params()["screen_size"] is None
    assert v.clone(play_top=2).get_params()["play_top"] == 2
    assert build(NAME, {}, ENV) == (NAME, {})  # no option: the package's own agent


# -- third-round options (off by default; post-processing or a fixed schedule) -------------
@pytest.mark.parametrize("kw", [{"thompson": 0.5}, {"lasso": 1.0}, {"fit_first": 2},
                                {"marginal_below": 1.0}])
def test_third_round_options_keep_the_plan_and_the_ledger(kw):
    """Each option post-processes the same releases (or moves the fixed episode ends): the
    noise plan, hence the scales drawn and the ledger certified, is the default agent's."""
    base, other = agent(n_arms=3, dim=12, horizon=2000), variant(n_arms=3, dim=12, horizon=2000,
                                                               **kw)
    assert other.sigmas == base.sigmas and other.multiplier == base.multiplier
    assert epsilon_of(other.ledger, other.privacy.delta) <= 1.0
    _, _, res = compare({NAME: variant(n_arms=3, dim=12, horizon=2000, **kw)},
                        "dpbandits/GLMBandit-v0", n_reps=2, seed=3,
                        env_params={"n_arms": 3, "dim": 12, "horizon": 2000})
    assert res[NAME].certified["epsilon"] <= 1.0
    assert np.isfinite(res[NAME].cum_regret).all()


def test_play_top_plays_the_top_coordinates_and_screens_as_the_default():
    """``play_top`` (fifth round) only post-processes the screening estimate it plays: the
    plan, the releases and the screened set are the default agent's, and the estimate played
    until the first fit keeps the ``play_top`` coordinates of largest ``max_k |theta_kj|``."""
    kw = dict(n_arms=3, dim=24, horizon=2000)  # |S| = 16: more than the 4 coordinates played
    base, top = agent(**kw), variant(**kw, play_top=4)
    assert top.sigmas == base.sigmas and repr(top.ledger) == repr(base.ledger)
    rng = np.random.default_rng(0)
    for a in (base, top):
        a.reset(2, np.random.default_rng(5))
    first_fit = base.episode_ends_[2]
    for t in range(first_fit - 1):
        x = rng.standard_normal((2, 24))
        arms, arms_top = base.act(x), top.act(x)
        if t < base.episode_ends_[0]:  # uniform play, the same tie-breaking stream
            np.testing.assert_array_equal(arms_top, arms)
        r = x[:, 0] * (arms == 0) - x[:, 1] * (arms == 1) + 0.1 * rng.standard_normal(2)
        base.update(x, arms, r)
        top.update(x, arms, r)
    np.testing.assert_array_equal(top.screened_, base.screened_)
    played, whole = top._theta_screen, base._theta_screen
    stat = np.abs(whole).max(axis=1)
    for rep in range(2):
        kept = np.flatnonzero(np.abs(played[rep]).max(axis=0))
        np.testing.assert_array_equal(kept, np.sort(np.argsort(-stat[rep], kind="stable")[:4]))
        np.testing.assert_array_equal(played[rep][:, kept], whole[rep][:, kept])
    assert top.screened_.shape == (2, 16)
    with pytest.raises(ValueError, match="play_top must be <= 24, got 25"):
        variant(**kw, play_top=25)


def test_fit_first_schedule_is_fixed_and_covers_the_horizon():
    a = variant(horizon=10_000, first_episode=500, fit_first=2)
    assert a.episode_ends_ == [500, 1500, 2500, 4500, 8500, 10_000]
    assert agent(horizon=10_000, first_episode=500).episode_ends_ == [500, 1500, 3500, 7500,
                                                                      10_000]


def test_lasso_solves_its_problem():

    rng = np.random.default_rng(0)
    b = rng.standard_normal((1, 6, 6))
    a = b @ b.transpose(0, 2, 1) + np.eye(6)
    c = 3.0 * rng.standard_normal((1, 2, 6))
    top = np.linalg.eigvalsh(a)[:, -1]
    assert np.allclose(lasso_path(a, c, 0.0, top, iters=3000)[0, 0], np.linalg.solve(a[0], c[0, 0]))
    t = lasso_path(a, c, 0.5, top, iters=3000)
    g = np.einsum("rij,rkj->rki", a, t) - c  # KKT: g = -alpha sign(t) on the support
    assert np.allclose(g[t != 0], -0.5 * np.sign(t[t != 0]), atol=1e-6)
    assert (np.abs(g[t == 0]) <= 0.5 + 1e-6).all()


# -- fourth round: no screening release when the screened set would be (nearly) everything --
def test_no_screen_rule_threshold():
    """``no_screen_below = c``: no screening release when ``d <= c |S|`` (``|S|`` the
    screened set's size without the rule), then ``S`` is every coordinate; off by default."""
    def skips(**kw):
        a = variant(horizon=10_000, **kw)
        return a._no_screen, a._s, a._n_screen
    assert skips(n_arms=4, dim=15) == (False, 15, 2)  # default: off, screening as before
    assert skips(n_arms=4, dim=15, no_screen_below=1) == (True, 15, 0)
    assert skips(n_arms=4, dim=20, no_screen_below=1) == (False, 16, 2)
    assert skips(n_arms=4, dim=20, no_screen_below=1.25) == (True, 20, 0)
    assert skips(n_arms=3, dim=30, no_screen_below=1.5) == (False, 16, 2)
    assert skips(n_arms=3, dim=30, no_screen_below=2) == (True, 30, 0)
    assert skips(n_arms=2, dim=50, no_screen_below=2) == (False, 16, 2)
    assert skips(n_arms=6, dim=40, no_screen_below=1.5) == (False, 24, 2)
    assert skips(n_arms=6, dim=40, no_screen_below=2) == (True, 40, 0)
    with pytest.raises(ValueError, match="no_screen_below"):
        variant(no_screen_below=-1.0)


@pytest.mark.heavy
def test_no_screen_schedule_releases_only_fits_under_the_same_plan_and_ledger():
    """Skipping the screening release removes a mechanism: every episode but the last is one
    fitting release on all d coordinates (each user in at most one), each exactly 1/k-GDP
    with the default plan's scales, and the ledger certifies the claim."""
    K, d, T = 3, 12, 2000
    base = agent(n_arms=K, dim=d, horizon=T)
    a = variant(n_arms=K, dim=d, horizon=T, no_screen_below=1)
    assert a.sigmas == base.sigmas and a.multiplier == base.multiplier
    assert a.plan.ledger.noise_multiplier == base.plan.ledger.noise_multiplier
    assert a.release_mu("fit") == pytest.approx(1.0 / a.multiplier, rel=1e-12)
    assert epsilon_of(a.ledger, a.privacy.delta) <= 1.0
    assert a.episode_ends_ == base.episode_ends_ == [100, 300, 700, 1500, 2000]
    rng = np.random.default_rng(4)
    a.reset(2, np.random.default_rng(0))
    assert np.array_equal(a.screened_, np.broadcast_to(np.arange(d), (2, d)))
    for _ in range(T):
        x = rng.normal(size=(2, d))
        arm = a.act(x)
        a.update(x, arm, x[:, 0] * (arm == 0) + 0.1 * rng.normal(size=2))
    assert [e["kind"] for e in a.episode_log_] == ["fit"] * 4
    assert [e["end"] for e in a.episode_log_] == [100, 300, 700, 1500]
    assert a._n_fits == 4 and a._n_screens == 0 and a.theta_.shape == (2, K, d)
    assert np.array_equal(a._M_released, np.zeros((2, d, d)))
    # its users' contributions are fitting ones, within the declared sensitivity
    from dpbandits.testing import check_adversarial_inputs
    check_adversarial_inputs(variant(n_arms=2, dim=6, horizon=200, no_screen_below=1))
    _, _, res = compare({NAME: variant(n_arms=K, dim=d, horizon=T, no_screen_below=1)},
                        "dpbandits/GLMBandit-v0",
                        n_reps=2, seed=3, env_params={"n_arms": K, "dim": d, "horizon": T})
    assert res[NAME].certified["epsilon"] <= 1.0
    assert np.isfinite(res[NAME].cum_regret).all()


def test_no_screen_rule_leaves_other_sizes_bit_identical():
    """Where ``d > c |S|`` the rule does not trigger and the stream is the default's."""
    def run(kw):
        spec = variant(n_arms=2, dim=40, horizon=600, **kw) if kw else NAME
        _, _, res = compare({NAME: spec}, "dpbandits/GLMBandit-v0", n_reps=2, seed=1,
                            env_params={"n_arms": 2, "dim": 40, "horizon": 600})
        return res[NAME].cum_regret
    assert np.array_equal(run({}), run({"no_screen_below": 2}))


def test_no_screen_episodes_keeps_screening_releases_for_play_only():
    """``no_screen_episodes = 1``: the first episode is still one screening release (played
    on in the second), the screened set is every coordinate, the later episodes are fitting
    releases; the plan and the ledger are the default's."""
    K, d, T = 3, 12, 2000
    a = variant(n_arms=K, dim=d, horizon=T, no_screen_below=1, no_screen_episodes=1)
    base = agent(n_arms=K, dim=d, horizon=T)
    assert a.sigmas == base.sigmas and a.multiplier == base.multiplier
    assert a._n_screen == 1 and variant(n_arms=K, dim=40, horizon=T, no_screen_below=1,
                                      no_screen_episodes=1)._n_screen == 2
    rng = np.random.default_rng(5)
    a.reset(2, np.random.default_rng(0))
    assert a.screened_ is None
    for _ in range(T):
        x = rng.normal(size=(2, d))
        arm = a.act(x)
        a.update(x, arm, x[:, 0] * (arm == 0) + 0.1 * rng.normal(size=2))
    assert [e["kind"] for e in a.episode_log_] == ["screen", "fit", "fit", "fit"]
    assert np.array_equal(a.screened_, np.broadcast_to(np.arange(d), (2, d)))
    assert epsilon_of(a.ledger, a.privacy.delta) <= 1.0
    with pytest.raises(ValueError, match="no_screen_episodes"):
        variant(no_screen_episodes=-1)


# -- dp-budget-ls's research options (issue 36): post-processing of the same releases ---------
@pytest.mark.parametrize("kw", [{"sure": "plan"}, {"sure": "mad"}, {"spike": True},
                                {"bulk": 1.0}, {"iso_fit": True}, {"first_bayes": True},
                                {"iso_from": 1}])
def test_budget_options_keep_the_plan_and_move_only_the_estimate(kw):
    """Each option keeps the agent's plan and ledger; off, the variant is the agent stream for
    stream; on, it changes the play (else it measured nothing) on an instance where the
    released moment looks isotropic (``sure``) or carries a mean (``spike``, ``bulk``)."""
    from experiments.certified_learning.variants import BudgetLSVariants

    size = {"n_arms": 2, "dim": 40, "horizon": 4000, "epsilon": 3.0}
    if "sure" in kw:  # it replaces the hard threshold: measured against that estimate
        size["iso_estimate"] = "threshold"
    base = make_agent("dp-budget-ls", **size)
    on = BudgetLSVariants(**size, **kw)
    assert on.plan.scales == base.plan.scales and on.ledger == base.ledger
    env = "dpbandits/GLMBandit-v0"
    params = {"n_arms": 2, "dim": 40, "horizon": 4000}
    _, _, res = compare({"agent": base, "off": BudgetLSVariants(**size), "on": on}, env,
                        n_reps=2, seed=3, env_params=params)
    assert np.array_equal(res["agent"].cum_regret, res["off"].cum_regret)
    assert not np.array_equal(res["agent"].cum_regret, res["on"].cum_regret)


def test_budget_options_name_their_bad_values():
    from experiments.certified_learning.variants import BudgetLSVariants

    with pytest.raises(ValueError, match="sure must be"):
        BudgetLSVariants(n_arms=2, dim=6, horizon=200, sure="stein")
    with pytest.raises(TypeError, match="spike must be a bool"):
        BudgetLSVariants(n_arms=2, dim=6, horizon=200, spike=1)
    with pytest.raises(TypeError, match="first_bayes must be a bool"):
        BudgetLSVariants(n_arms=2, dim=6, horizon=200, first_bayes="yes")
    with pytest.raises(ValueError, match="iso_from"):
        BudgetLSVariants(n_arms=2, dim=6, horizon=200, iso_from=0)


def test_an_instance_built_variant_sees_the_declared_reward_range():
    """As the harness does for the registry's agents: a variant built as an instance gets the
    environment's declared range unless its params set one (else a variant and its base
    agent would regress different targets on the logistic and data-set instances)."""
    got = build("dp-budget-ls", {"spike": True}, ENV, (0.0, 1.0))
    assert got.reward_range == (0.0, 1.0)
    mine = build("dp-budget-ls", {"spike": True, "reward_range": None}, ENV, (0.0, 1.0))
    assert mine.reward_range is None
    assert build(NAME, {"lasso": 1.0}, ENV, (0.0, 1.0)).reward_range == (0.0, 1.0)
    assert build(NAME, {}, ENV, (0.0, 1.0)) == (NAME, {})  # the harness passes it itself

"""dp-budget-ls: the budget rule (the first fitting episode is the first whose summed Gram
signal reaches the threshold against its noise, from public parameters only), the schedule it
gives at the study's sizes, that it is dp-moment-ls stream for stream where the rule keeps
dp-moment-ls's schedule, and that a schedule that never fits releases only screening
statistics under dp-moment-ls's plan and certified ledger."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.agents import agent_class, make_agent
from dpbandits.agents.budget_ls import fit_episode
from dpbandits.harness.compare import compare
from dpbandits.privacy.accounting import epsilon_of
from dpbandits.testing import check_adversarial_inputs, check_agent, instance_for_checks

NAME = "dp-budget-ls"
ENV = {"n_arms": 3, "dim": 12, "horizon": 600}


def snr(n: int, K: int, p: int, sigma: float) -> float:
    """The rule's ratio, written out: (n / p) / (2 sigma sqrt(K p))."""
    return (n / p) / (2.0 * sigma * math.sqrt(K * p))


def test_rule_picks_the_first_episode_whose_gram_signal_reaches_the_threshold():
    lengths = [10, 20, 40, 80, 500]  # the last episode is never released
    kw = dict(n_arms=2, p=4, sigma_gram=1.0, min_screen=2)
    ratios = [snr(n, 2, 4, 1.0) for n in lengths]  # 40 -> 1.77, 80 -> 3.54
    assert fit_episode(lengths, fit_snr=ratios[2], **kw) == 2  # reached exactly: fit
    assert fit_episode(lengths, fit_snr=math.nextafter(ratios[2], 9.0), **kw) == 3
    assert fit_episode(lengths, fit_snr=ratios[3], **kw) == 3
    # only the last (never released) episode would qualify: screen for the whole horizon
    assert fit_episode(lengths, fit_snr=math.nextafter(ratios[3], 9.0), **kw) == 5
    assert fit_episode(lengths, fit_snr=0.0, **kw) == 2  # dp-moment-ls's schedule
    assert fit_episode(lengths, fit_snr=0.0, **{**kw, "min_screen": 3}) == 3
    assert fit_episode(lengths, fit_snr=1.0, **{**kw, "sigma_gram": 0.0}) == 2  # no noise


@pytest.mark.parametrize("K, d, T, eps, first_fit", [
    (2, 50, 10_000, 0.3, 3),      # Figure 5.1 at 0.3: snr_2 = 0.61 < 0.75 <= snr_3 = 1.22
    (2, 50, 10_000, 1.0, 2),      # and at 1: snr_2 = 1.78 (dp-moment-ls's schedule)
    (2, 50, 10_000, math.inf, 2),
    (6, 40, 10_000, 0.3, 4),      # one fitting episode would be the last one: never fits
    (2, 30, 569, 3.0, 5),         # breast cancer's size: never fits even at epsilon 3
])
def test_schedule_at_the_study_sizes(K, d, T, eps, first_fit):
    a = make_agent(NAME, n_arms=K, dim=d, horizon=T, epsilon=eps)
    ends = a.episode_ends_
    lengths = np.diff([0, *ends]).tolist()
    assert a.screen_episodes_ == first_fit
    # the rule reads public quantities only: the plan's Gram noise, K, p and the schedule
    assert first_fit == fit_episode(lengths, n_arms=K, p=a._p, sigma_gram=a.sigmas["gram"],
                                    fit_snr=0.75, min_screen=2)


def test_it_is_dp_moment_ls_where_the_rule_keeps_its_schedule():
    """fit_snr = 0, and the no-noise twin, give dp-moment-ls's regret bit for bit; the plan
    and ledger are dp-moment-ls's at every setting."""
    for params in ({"fit_snr": 0.0}, {"epsilon": math.inf}):
        twin = {k: v for k, v in params.items() if k != "fit_snr"}
        _, _, res = compare({"b": (NAME, params), "m": ("dp-moment-ls", twin)},
                            "dpbandits/GLMBandit-v0", n_reps=2, seed=3, env_params=ENV)
        assert np.array_equal(res["b"].cum_regret, res["m"].cum_regret)
    b = make_agent(NAME, n_arms=2, dim=50, horizon=10_000, epsilon=0.3)
    m = make_agent("dp-moment-ls", n_arms=2, dim=50, horizon=10_000, epsilon=0.3)
    assert b.screen_episodes_ == 3 and m.screen_episodes == 2  # a different schedule...
    assert b.plan.scales == m.plan.scales and b.ledger == m.ledger  # ...the same noise


def test_a_schedule_that_never_fits_releases_only_screening_statistics():
    a = make_agent(NAME, n_arms=3, dim=12, horizon=600, epsilon=1.0)
    n_episodes = len(a.episode_ends_)
    assert a.screen_episodes_ == n_episodes  # snr far below 0.75 at this size
    _, _, res = compare({NAME: a}, "dpbandits/GLMBandit-v0", n_reps=2, seed=3,
                        env_params=ENV)
    fitted = res[NAME]
    assert a.screened_ is None  # S never chosen
    kinds = [row["kind"] for row in a.episode_log_]
    assert kinds == ["screen"] * (n_episodes - 1)  # every episode but the last released
    certified = epsilon_of(a.ledger, a.privacy.delta)
    assert certified <= 1.0 and fitted.certified["epsilon"] <= 1.0


def test_screening_to_the_end_passes_the_adversarial_floats_contract():
    """(tests/test_contracts.py runs every contract check on the default instance, whose
    schedule first fits at episode 3, 0-based.) Here every episode is a screening release."""
    a = instance_for_checks(agent_class(NAME)).clone(fit_snr=1e6)
    assert a.screen_episodes_ == len(a.episode_ends_)  # the late screening releases run
    check_adversarial_inputs(a)
    check_agent(a)  # every named agent check (fit/predict, clone, seeds...) on that schedule


def test_bad_parameters_name_themselves():
    with pytest.raises(ValueError, match="fit_snr"):
        make_agent(NAME, n_arms=2, dim=5, horizon=100, fit_snr=-0.1)
    with pytest.raises(ValueError, match="min_screen"):
        make_agent(NAME, n_arms=2, dim=5, horizon=100, min_screen=0)
    with pytest.raises(TypeError, match="screen_episodes"):  # the rule sets it
        make_agent(NAME, n_arms=2, dim=5, horizon=100, screen_episodes=3)

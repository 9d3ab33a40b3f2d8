"""Errors of the off-policy estimators say what to do (issue 35): obp-shaped arrays
``(n, K, 1)`` get the reshape, and a Bernstein interval IPS cannot give says why."""

import warnings

import numpy as np
import pytest

from dpbandits import offpolicy as ope
from dpbandits.envs import synthetic_log

N, K = 200, 3


def _log(logging="uniform"):
    log, mu = synthetic_log(N, n_arms=K, dim=4, seed=1, logging=logging)
    return log, mu


def test_an_obp_shaped_target_is_refused_with_the_reshape():
    log, mu = _log()
    pi = np.full((N, K, 1), 1.0 / K)  # obp's action_dist, len_list = 1
    with pytest.raises(ValueError, match=r"target\[\.\.\., 0\]") as err:
        ope.ips(log, pi)
    assert "len_list" in str(err.value) and "\n" not in str(err.value)
    assert ope.ips(log, pi[..., 0]).value == ope.ips(log, np.full((N, K), 1.0 / K)).value


def test_obp_shaped_reward_predictions_are_refused_with_the_reshape():
    log, mu = _log()
    pi = np.full((N, K), 1.0 / K)
    with pytest.raises(ValueError, match=r"estimated_rewards\[\.\.\., 0\]"):
        ope.direct_method(log, pi, estimated_rewards=mu[..., None])
    ope.direct_method(log, pi, estimated_rewards=mu[..., None][..., 0])  # the hint works


def test_a_several_position_obp_array_is_told_to_take_one_position():
    log, _ = _log()
    with pytest.raises(ValueError, match=r"len_list=2.*target\[\.\.\., j\]"):
        ope.ips(log, np.full((N, K, 2), 1.0 / K))


def test_a_shape_error_unrelated_to_obp_carries_no_obp_hint():
    log, _ = _log()
    with pytest.raises(ValueError) as err:
        ope.ips(log, np.full((N + 1, K, 1), 1.0 / K))
    assert "obp" not in str(err.value)


def test_bernstein_ips_on_a_non_uniform_log_says_why_and_what_instead():
    log, _ = _log("softmax")
    pi = np.full((N, K), 1.0 / K)
    with pytest.raises(ValueError) as err:
        ope.ips(log, pi, interval="bernstein", reward_range=(0.0, 1.0))
    text = str(err.value)
    assert "not uniform" in text and "clipped_ips" in text and "bounded before" in text
    ope.clipped_ips(log, pi, max_weight=10.0, interval="bernstein", reward_range=(0.0, 1.0))


def test_bernstein_ips_without_a_reward_range_asks_for_it():
    log, _ = _log()
    with pytest.raises(ValueError, match="give reward_range"):
        ope.ips(log, np.full((N, K), 1.0 / K), interval="bernstein")
    est = ope.ips(log, np.full((N, K), 1.0 / K), interval="bernstein", reward_range=(0, 1))
    assert "Bernstein" in est.interval


def _private(estimator="ips", **kw):
    return ope.PrivateEstimator(estimator, epsilon=1.0, delta=1e-5, max_weight=5.0, **kw)


def test_a_private_estimate_warns_once_when_most_rewards_are_clipped():
    from dpbandits.envs import LoggedBandit
    from dpbandits.errors import ClippingWarning

    log, _ = _log()
    pi = np.full((N, K), 1.0 / K)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        _private().estimate(log, pi, rng=0)  # Bernoulli rewards inside (0, 1): silent
    shifted = LoggedBandit(log.contexts, log.actions, log.rewards + 5.0, log.propensities, K)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _private().estimate(shifted, pi, rng=0)
    found = [w for w in caught if issubclass(w.category, ClippingWarning)]
    assert len(found) == 1
    assert f"{N} of {N} rewards" in str(found[0].message) and "\n" not in str(found[0].message)


def test_private_dr_warns_when_most_contexts_exceed_the_context_bound():
    from dpbandits.envs import LoggedBandit
    from dpbandits.errors import ClippingWarning

    log, _ = _log()  # contexts on the unit sphere: inside the default bound sqrt(d)
    pi = np.full((N, K), 1.0 / K)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        _private("dr", reward_model="private").estimate(log, pi, rng=0)
    big = LoggedBandit(10.0 * log.contexts, log.actions, log.rewards, log.propensities, K)
    with pytest.warns(ClippingWarning, match=f"{N} of {N} contexts"):
        _private("dr", reward_model="private").estimate(big, pi, rng=0)

"""Private IPS / SNIPS / DR: the sensitivity bound holds on random neighbouring logs and is
attained by the audit's canary, the noise has the calibrated scale, the guarantee is the one
the accountant certifies, the estimate is unbiased around the clipped estimator, and clipping
is counted."""

import math

import numpy as np
import pytest

from dpbandits import offpolicy as ope
from dpbandits.audits.offpolicy import M, N, canary
from dpbandits.envs import LoggedBandit, synthetic_log
from dpbandits.privacy.accounting import certify, epsilon_of, gaussian_event

RANGES = [(0.0, 1.0), (-1.0, 2.0)]


def _random_round(rng, K, lo, hi):
    """A round with an extreme or random context, arm, reward, propensity and predictions."""
    return (rng.choice([-1.0, 0.0, 1.0], 2), int(rng.integers(K)),
            float(rng.choice([lo - 1, lo, hi, hi + 1, rng.uniform(lo, hi)])),
            float(rng.choice([1e-3, 0.05, 0.5, 1.0])),
            rng.choice([lo - 1, lo, hi, hi + 2], K))


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr"])
@pytest.mark.parametrize("reward_range", RANGES)
def test_one_replaced_round_moves_the_query_by_at_most_the_sensitivity(estimator, reward_range):
    lo, hi = reward_range
    est = ope.PrivateEstimator(estimator, epsilon=1.0, delta=1e-6, max_weight=5.0,
                               reward_range=reward_range)
    rng = np.random.default_rng(1)
    n, K, worst = 6, 3, 0.0
    for _ in range(400):  # extreme values are drawn often: 400 pairs come near the bound
        rounds = [_random_round(rng, K, lo, hi) for _ in range(n + 1)]
        pis = rng.dirichlet(np.ones(K) * 0.3, n + 1)
        stats = []
        for swap in (0, n):  # D uses rounds 0..n-1, D' replaces round 0 by round n
            rows = [rounds[swap]] + rounds[1:n]
            pi = np.vstack([pis[swap]] + list(pis[1:n]))
            log = LoggedBandit(np.array([r[0] for r in rows]), [r[1] for r in rows],
                               [r[2] for r in rows], [r[3] for r in rows], K)
            q = np.array([r[4] for r in rows])
            stats.append(est.statistic(log, pi, q if estimator == "dr" else None)[0])
        worst = max(worst, float(np.linalg.norm(stats[1] - stats[0])))
    bound = est.sensitivity(n)
    assert worst <= bound * (1 + 1e-12)
    assert worst >= 0.5 * bound  # the random search comes near the bound (it is not loose)


@pytest.mark.parametrize("estimator, attained", [("ips", 1.0), ("snips", 1.0), ("dr", 20 / 21)])
def test_the_audit_canary_attains_the_bound(estimator, attained):
    est = ope.PrivateEstimator(estimator, epsilon=1.0, delta=1e-5, max_weight=M)
    s0, s1 = (est.statistic(*canary(w, estimator))[0] for w in (0, 1))
    assert np.linalg.norm(s1 - s0) == pytest.approx(attained * est.sensitivity(N), rel=1e-12)


def test_the_noise_is_calibrated_by_the_accountant_and_the_ledger_certifies_the_claim():
    est = ope.PrivateEstimator("ips", epsilon=0.5, delta=1e-6, max_weight=10.0)
    k = est.multiplier
    assert est.ledger == gaussian_event(k)
    cert = certify(est.ledger, est.privacy.delta)
    assert cert.epsilon <= 0.5 * (1 + 1e-9)
    assert epsilon_of(gaussian_event(0.99 * k), 1e-6) > 0.5  # the smallest such noise
    assert est.privacy.neighbouring == "replace-one" and est.privacy.is_private
    # the release's noise: std k * Delta, mean 0 (4,000 draws: the sample sd is within
    # 4 / sqrt(2 * 4000) = 4.5% of sigma, the mean within 4 sigma / sqrt(4000))
    sigma = k * est.sensitivity(100)
    draws = est.release(np.array([0.3]), 100, np.random.default_rng(0), size=4000)[:, 0]
    assert draws.std(ddof=1) == pytest.approx(sigma, rel=0.045)
    assert abs(draws.mean() - 0.3) <= 4 * sigma / math.sqrt(4000)


def test_private_estimates_centre_on_the_clipped_estimators():
    log, mu = synthetic_log(20_000, n_arms=3, seed=2, logging="softmax")
    pi = np.full((log.n_rounds, 3), 1 / 3)
    q = np.clip(mu + 0.1, 0, 1)
    w = pi[np.arange(log.n_rounds), log.actions] / log.propensities
    m = 4.0
    plain = {"ips": ope.clipped_ips(log, pi, max_weight=m).value,
             "snips": float(np.sum(np.minimum(w, m) * log.rewards) / np.sum(np.minimum(w, m))),
             "dr": float(np.mean((pi * q).sum(1) + np.minimum(w, m)
                                 * (log.rewards - q[np.arange(log.n_rounds), log.actions])))}
    for name, target in plain.items():
        est = ope.PrivateEstimator(name, epsilon=1.0, delta=1e-6, max_weight=m)
        values = [est.estimate(log, pi, rng=seed, estimated_rewards=q).value
                  for seed in range(200)]
        one = est.estimate(log, pi, rng=0, estimated_rewards=q)
        # 200 releases: their mean is within 4 noise sd / sqrt(200) of the clipped estimate
        assert abs(np.mean(values) - target) <= 4 * one.noise_std / math.sqrt(200) + 1e-12
        assert np.std(values) == pytest.approx(one.noise_std, rel=0.25)
        assert one.clipped["weights"] == int((w > m).sum()) > 0
        assert one.clipped["rewards"] == 0 and one.privacy == est.privacy
        assert one.noise_low < one.value < one.noise_high
    same = [ope.PrivateEstimator("ips", epsilon=1.0, delta=1e-6, max_weight=m).estimate(
        log, pi, rng=7).value for _ in range(2)]
    assert same[0] == same[1]  # all randomness from the given seed


def test_clipping_is_counted_and_errors_name_the_parameter():
    log = LoggedBandit(np.zeros((4, 1)), [0, 1, 0, 1], [2.0, -1.0, 0.5, 0.0],
                       [0.1, 0.5, 0.5, 0.5], 2)
    est = ope.PrivateEstimator("dr", epsilon=1.0, delta=1e-6, max_weight=3.0)
    q = np.array([[1.5, 0.0], [0.2, 0.2], [0.3, -0.2], [0.1, 0.1]])
    out = est.estimate(log, np.tile([1.0, 0.0], (4, 1)), rng=0, estimated_rewards=q)
    assert out.clipped == {"weights": 1, "rewards": 2, "predictions": 2}
    with pytest.raises(ValueError, match="estimator='dr' needs estimated_rewards"):
        est.estimate(log, np.tile([1.0, 0.0], (4, 1)), rng=0)
    with pytest.raises(ValueError, match="estimator must be one of"):
        ope.PrivateEstimator("switch", epsilon=1.0, delta=1e-6, max_weight=3.0)
    with pytest.raises(ValueError, match="max_weight must be > 0.0, got 0.0"):
        ope.PrivateEstimator("ips", epsilon=1.0, delta=1e-6, max_weight=0.0)
    with pytest.raises(ValueError, match="delta"):
        ope.PrivateEstimator("ips", epsilon=1.0, delta=0.0, max_weight=3.0)
    with pytest.raises(ValueError, match=r"reward_range must have low < high, got \(1.0, 1.0\)"):
        ope.PrivateEstimator("ips", epsilon=1.0, delta=1e-6, max_weight=3.0,
                             reward_range=(1, 1))
    never = ope.PrivateEstimator("snips", epsilon=0.1, delta=1e-6, max_weight=3.0)
    nothing = np.tile([0.0, 1.0], (4, 1))
    nothing[1], nothing[3] = (1.0, 0.0), (1.0, 0.0)  # never the logged arm: sum of weights 0
    seeds = [s for s in range(20) if never.release(np.zeros(2), 4, np.random.default_rng(s))[1]
             <= 0]
    with pytest.raises(ValueError, match=r"noisy sum of weights is .* <= 0"):
        never.estimate(log, nothing, rng=seeds[0])


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr"])
def test_the_total_interval_covers_the_value_and_the_noise_interval_does_not(estimator):
    """Uniform logging over 3 arms, target: always arm 0, whose value is 0.5 exactly
    (``synthetic_log``: mu_0(x) = 0.5 + 0.4 x'theta_0, x uniform on the sphere, mean 0).
    The weights (3) stay under M = 3, so the clipped estimators' expectation is the value.
    Little noise (epsilon = 8) on 200 rounds: the sampling error dominates."""
    level, trials, n = 0.9, 300, 200
    est = ope.PrivateEstimator(estimator, epsilon=8.0, delta=1e-6, max_weight=3.0)
    hits = {"total": 0, "noise": 0}
    for seed in range(trials):
        log, _ = synthetic_log(n, n_arms=3, seed=seed)
        q = np.full((n, 3), 0.5)  # a public reward model, fixed without the log
        out = est.estimate(log, np.zeros(n, dtype=int), rng=seed, level=level,
                           estimated_rewards=q if estimator == "dr" else None)
        assert out.total_low <= out.noise_low <= out.noise_high <= out.total_high
        hits["total"] += out.total_low <= 0.5 <= out.total_high
        hits["noise"] += out.noise_low <= 0.5 <= out.noise_high
    # the coverage of a valid interval is at least the level, up to 3 binomial standard
    # errors of 300 trials: 0.9 - 3 sqrt(0.9 * 0.1 / 300) = 0.848
    assert hits["total"] / trials >= level - 3 * math.sqrt(level * (1 - level) / trials)
    # the noise interval ignores the sampling error (sd ~ 0.08 against a noise sd ~ 0.01):
    # it covers the value far less often than its level
    assert hits["noise"] / trials < 0.5


def test_the_old_interval_names_warn_and_return_the_noise_interval():
    log, _ = synthetic_log(500, seed=0)
    out = ope.PrivateEstimator("ips", epsilon=1.0, delta=1e-6, max_weight=3.0).estimate(
        log, np.zeros(500, dtype=int), rng=0)
    with pytest.warns(DeprecationWarning, match="noise_low"):
        assert out.ci_low == out.noise_low
    with pytest.warns(DeprecationWarning, match="noise_high"):
        assert out.ci_high == out.noise_high

"""The off-policy estimators beyond IPS/SNIPS (clipped IPS, Direct Method, DR, self-normalized
DR, Switch-DR), their intervals (normal, bootstrap, empirical Bernstein, cut to a reward range)
and the per-arm reward model, against known values on synthetic logs (tolerances of 4 exact
standard deviations at the logged size) and exact cases."""

import numpy as np
import pytest

from dpbandits import offpolicy as ope
from dpbandits.envs import synthetic_log

N = 30_000


def _softmax_probs(log, mu, temperature=0.25):
    z = np.exp((mu - mu.max(axis=1, keepdims=True)) / temperature)
    return z / z.sum(axis=1, keepdims=True)


def _setup(logging="softmax", n=N, seed=5):
    """A log, its true means mu (n, K), the logging probabilities P (n, K), a stochastic
    target pi (n, K) favouring the arms the logging policy plays least, and V_n."""
    log, mu = synthetic_log(n, n_arms=3, dim=5, seed=seed, logging=logging)
    P = _softmax_probs(log, mu) if logging == "softmax" else np.full(mu.shape, 1 / 3)
    pi = 0.7 * np.eye(3)[np.argmin(mu, axis=1)] + 0.1
    return log, mu, P, pi, float((pi * mu).sum(axis=1).mean())


def _dr_sd(mu, P, pi, q, keep=None):
    """Exact sd (given the contexts) of mean_i [q_i(pi) + w_i (r_i - q_i(a_i))] (only where
    w <= tau when ``keep(w)`` is given): per round, the variance of w (r - q_a) over a ~ P
    and r ~ Bernoulli(mu_a)."""
    w = pi / P
    m2 = mu * (1 - mu) + (mu - q) ** 2  # E[(r - q_a)^2 | a]
    k = np.ones_like(w) if keep is None else keep(w)
    second = (P * (w * k) ** 2 * m2).sum(axis=1)
    first = (P * w * k * (mu - q)).sum(axis=1)
    return float(np.sqrt(np.sum(second - first ** 2)) / mu.shape[0])


def test_direct_method_with_the_true_model_is_the_true_value_exactly():
    log, mu, _, pi, value = _setup()
    est = ope.direct_method(log, pi, estimated_rewards=mu)
    assert est.value == pytest.approx(value, rel=1e-13)
    assert est.std_error == pytest.approx(np.std((pi * mu).sum(1), ddof=1) / np.sqrt(N))


@pytest.mark.parametrize("model", ["true", "constant", "zero"])
def test_doubly_robust_is_unbiased_with_any_model(model):
    log, mu, P, pi, value = _setup()
    q = {"true": mu, "constant": np.full_like(mu, 0.5), "zero": np.zeros_like(mu)}[model]
    sd = _dr_sd(mu, P, pi, q)
    est = ope.doubly_robust(log, pi, estimated_rewards=q)
    assert abs(est.value - value) <= 4 * sd, (est.value, value, sd)
    assert est.std_error == pytest.approx(sd, rel=0.1)  # n = 30,000
    # a good model lowers the variance below IPS's (the model "zero" is IPS itself)
    if model == "zero":
        assert est.value == pytest.approx(ope.ips(log, pi).value, rel=1e-12)
    if model == "true":
        assert sd < 0.9 * _dr_sd(mu, P, pi, np.zeros_like(mu))  # 0.0056 vs 0.0066


def test_self_normalized_dr_is_consistent_and_equals_snips_with_a_zero_model():
    log, mu, P, pi, value = _setup()
    q = np.full_like(mu, 0.5)
    est = ope.self_normalized_dr(log, pi, estimated_rewards=q)
    sd = _dr_sd(mu, P, pi, q)  # the ratio's delta-method sd is the DR sd to O(1/n)
    assert abs(est.value - value) <= 4 * sd
    assert est.std_error == pytest.approx(sd, rel=0.15)
    zero = ope.self_normalized_dr(log, pi, estimated_rewards=np.zeros_like(mu))
    assert zero.value == pytest.approx(ope.snips(log, pi).value, rel=1e-12)


@pytest.mark.parametrize("tau", [0.5, 2.0, np.inf])
def test_switch_dr_is_unbiased_with_the_true_model_and_counts_the_switched_rounds(tau):
    log, mu, P, pi, value = _setup()
    est = ope.switch_dr(log, pi, estimated_rewards=mu, threshold=tau)
    sd = _dr_sd(mu, P, pi, mu, keep=lambda w: w <= tau)
    assert abs(est.value - value) <= 4 * max(sd, 1e-12)
    w = pi[np.arange(N), log.actions] / log.propensities
    assert est.n_clipped == int((w > tau).sum())
    if tau == np.inf:
        assert est.value == pytest.approx(ope.doubly_robust(log, pi, estimated_rewards=mu).value,
                                          rel=1e-12)
    # a wrong model is no longer corrected where the weight is switched off: DM's bias
    wrong = np.full_like(mu, 0.5)
    manual = np.mean((pi * wrong).sum(1) + (w <= tau) * w * (log.rewards - 0.5))
    assert ope.switch_dr(log, pi, estimated_rewards=wrong, threshold=tau).value == \
        pytest.approx(manual, rel=1e-12)


def test_clipped_ips_clips_only_above_the_bound_and_says_how_often():
    log, mu, P, pi, value = _setup()
    w = pi[np.arange(N), log.actions] / log.propensities
    big = ope.clipped_ips(log, pi, max_weight=float(w.max()) + 1)
    assert big.value == pytest.approx(ope.ips(log, pi).value, rel=1e-14) and big.n_clipped == 0
    est = ope.clipped_ips(log, pi, max_weight=2.0)
    assert est.n_clipped == int((w > 2).sum()) > 0
    assert est.value == pytest.approx(np.mean(np.minimum(w, 2.0) * log.rewards), rel=1e-14)
    # the clip biases down by E[(w - 2)+ mu_a]: exact, and away from V by more than 4 sd
    bias = np.mean((P * np.maximum(pi / P - 2.0, 0) * mu).sum(1))
    sd = np.sqrt(np.sum((P * np.minimum(pi / P, 2) ** 2 * mu).sum(1)
                        - (P * np.minimum(pi / P, 2) * mu).sum(1) ** 2)) / N
    assert abs(est.value - (value - bias)) <= 4 * sd < bias


def test_the_reward_model_is_per_arm_ridge_and_can_be_cross_fit():
    log, mu, _, pi, value = _setup(logging="uniform")
    q = ope.fit_reward_model(log)
    for k in range(3):  # the ridge normal equations with an unpenalized intercept
        rows = log.actions == k
        X = np.hstack([np.ones((rows.sum(), 1)), log.contexts[rows]])
        A = X.T @ X + np.diag([0.0] + [1.0] * 5)
        beta = np.linalg.solve(A, X.T @ log.rewards[rows])
        np.testing.assert_allclose(q[:, k], beta[0] + log.contexts @ beta[1:], atol=1e-10)
    # the model is linear, so the per-arm fit is close: prediction error of ~1e4 rounds per
    # arm is at most 0.5 sqrt((d + 1) / 1e4) = 0.012 per context; 4 times that
    assert abs(ope.direct_method(log, pi, estimated_rewards=q).value - value) <= 0.05
    cross = ope.fit_reward_model(log, n_folds=2, rng=0)
    assert np.abs(cross - q).max() > 1e-6  # out-of-fold predictions differ ...
    assert np.abs(cross - mu).mean() < 0.05  # ... and are still good
    np.testing.assert_array_equal(cross, ope.fit_reward_model(log, n_folds=2, rng=0))
    with pytest.raises(ValueError, match="n_folds=2 draws the folds at random: pass rng"):
        ope.fit_reward_model(log, n_folds=2)


def test_any_scikit_learn_regressor_is_a_reward_model():
    linear_model = pytest.importorskip("sklearn.linear_model")
    log, *_ = _setup(n=3000)
    ours = ope.fit_reward_model(log, alpha=2.0)
    theirs = ope.fit_reward_model(log, linear_model.Ridge(alpha=2.0))
    np.testing.assert_allclose(ours, theirs, atol=1e-10)
    with pytest.raises(TypeError, match="model must be 'ridge' or a scikit-learn regressor"):
        ope.fit_reward_model(log, "lasso")


def test_bootstrap_intervals_are_seeded_and_agree_with_the_normal_ones():
    log, mu, P, pi, value = _setup(n=5000)
    for est in (ope.ips, ope.snips):
        a = est(log, pi, interval="bootstrap", rng=np.random.default_rng(3), n_bootstrap=2000)
        b = est(log, pi, interval="bootstrap", rng=3, n_bootstrap=2000)
        c = est(log, pi, interval="bootstrap", rng=4, n_bootstrap=2000)
        normal = est(log, pi)
        assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high) != (c.ci_low, c.ci_high)
        assert a.value == normal.value and a.interval.startswith("percentile bootstrap")
        # the bootstrap sd estimates the same standard error: 2000 resamples, within 10%
        assert a.std_error == pytest.approx(normal.std_error, rel=0.1)
        assert a.ci_low < a.value < a.ci_high
    with pytest.raises(ValueError, match="interval='bootstrap' needs rng"):
        ope.ips(log, pi, interval="bootstrap")


def test_interval_coverage_normal_bootstrap_and_bernstein():
    hits = {"normal": [], "bootstrap": [], "bernstein": []}
    widths = {k: [] for k in hits}
    for seed in range(100):
        log, mu = synthetic_log(1000, n_arms=3, dim=4, seed=200 + seed)
        pi = np.eye(3)[np.argmax(mu, axis=1)]
        truth = mu.max(axis=1).mean()
        for method in hits:
            est = ope.ips(log, pi, interval=method, rng=seed, n_bootstrap=400,
                          reward_range=(0.0, 1.0))
            hits[method].append(est.ci_low <= truth <= est.ci_high)
            widths[method].append(est.ci_high - est.ci_low)
    # Binomial(100, 0.95): 0.86 is 4 sd below; 0.995 excludes intervals far too wide
    assert 0.86 <= np.mean(hits["normal"]) <= 0.995
    assert 0.86 <= np.mean(hits["bootstrap"]) <= 0.995
    # Bernstein is a finite-sample bound: it covers at least 95% always (conservative here)
    assert np.mean(hits["bernstein"]) >= 0.97
    assert np.mean(widths["bernstein"]) > 1.5 * np.mean(widths["normal"])


def test_a_rare_reward_interval_respects_the_reward_range():
    """OBD-like: clicks at 0.4%, weights up to K = 40: the normal interval goes below 0."""
    rng = np.random.default_rng(0)
    n, K = 2000, 40
    actions = rng.integers(0, K, n)
    rewards = (rng.random(n) < 0.004).astype(float)
    from dpbandits.envs import LoggedBandit

    log = LoggedBandit(rng.standard_normal((n, 2)), actions, rewards, np.full(n, 1 / K), K)
    target = np.zeros(n, dtype=np.int64)  # always arm 0: weight K where matched
    raw = ope.ips(log, target)
    assert raw.ci_low < 0 and not raw.interval_clipped
    cut = ope.ips(log, target, reward_range=(0, 1))
    assert cut.ci_low == 0.0 and cut.ci_high == raw.ci_high and cut.interval_clipped
    assert cut.value == raw.value and "cut to the reward range [0, 1]" in cut.interval
    bern = ope.ips(log, target, interval="bernstein", reward_range=(0, 1))
    assert bern.ci_low == 0.0 and bern.ci_high > raw.ci_high
    assert "empirical Bernstein" in bern.interval and "terms in [0, 40]" in bern.interval
    with pytest.raises(ValueError, match=r"reward_range=\(0.0, 0.5\) but log .* has reward 1.0"):
        ope.ips(log, target, reward_range=(0, 0.5))


def test_errors_name_the_parameter_the_value_and_what_is_allowed():
    log, mu, _, pi, _ = _setup(n=200)
    with pytest.raises(ValueError, match="threshold must be > 0.0, got 0.0"):
        ope.switch_dr(log, pi, estimated_rewards=mu, threshold=0.0)
    with pytest.raises(ValueError, match="max_weight must be > 0.0, got -1.0"):
        ope.clipped_ips(log, pi, max_weight=-1.0)
    with pytest.raises(ValueError, match=r"estimated_rewards must be numeric of shape \(200, 3\)"):
        ope.doubly_robust(log, pi, estimated_rewards=mu[:, :2])
    bad = mu.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"estimated_rewards\[4, 1\] is nan"):
        ope.direct_method(log, pi, estimated_rewards=bad)
    with pytest.raises(ValueError, match="interval must be one of"):
        ope.ips(log, pi, interval="wilson")
    with pytest.raises(ValueError, match="interval='bernstein' needs per-round terms"):
        ope.snips(log, pi, interval="bernstein", reward_range=(0, 1))
    with pytest.raises(ValueError, match="interval='bernstein' needs per-round terms"):
        ope.ips(log, pi, interval="bernstein")  # softmax log, no weight bound known
    with pytest.raises(ValueError, match=r"reward_range must have low < high, got \(1.0, 0.0\)"):
        ope.ips(log, pi, reward_range=(1, 0))
    with pytest.raises(ValueError, match="n_bootstrap must be >= 100, got 10"):
        ope.ips(log, pi, interval="bootstrap", rng=0, n_bootstrap=10)
    never = np.zeros((200, 3))
    never[np.arange(200), (log.actions + 1) % 3] = 1.0
    with pytest.raises(ValueError, match="never plays the logged action"):
        ope.self_normalized_dr(log, never, estimated_rewards=mu)

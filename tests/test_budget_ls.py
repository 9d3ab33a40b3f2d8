"""dp-budget-ls: the budget rule (the first fitting episode is the first whose summed Gram
signal reaches the threshold against its noise, from public parameters only), the schedule it
gives at the study's sizes, that it is dp-moment-ls stream for stream where the rule keeps
dp-moment-ls's schedule, and that a schedule that never fits releases only screening
statistics under dp-moment-ls's plan and certified ledger."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpbandits.agents.budget_ls as budget
from dpbandits.agents import agent_class, make_agent
from dpbandits.agents.budget_ls import fit_episode, isotropy_rejected, isotropy_thresholds
from dpbandits.agents.screened_ls import gram_noise
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
    """fit_snr = 0 without the isotropy test, and the no-noise twin, give dp-moment-ls's
    regret bit for bit; the plan and ledger are dp-moment-ls's at every setting."""
    for params in ({"fit_snr": 0.0, "iso_test": False}, {"epsilon": math.inf}):
        twin = {k: v for k, v in params.items() if k not in ("fit_snr", "iso_test")}
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
    with pytest.raises(TypeError, match="iso_test must be a bool, got 'yes'"):
        make_agent(NAME, n_arms=2, dim=5, horizon=100, iso_test="yes")
    with pytest.raises(ValueError, match="iso_threshold"):
        make_agent(NAME, n_arms=2, dim=5, horizon=100, iso_threshold=-0.5)
    with pytest.raises(ValueError, match="iso_weights must be 'precision' or 'equal', got 'x'"):
        make_agent(NAME, n_arms=2, dim=5, horizon=100, iso_weights="x")
    with pytest.raises(ValueError, match="iso_estimate must be 'bayes' or 'threshold', got 1"):
        make_agent(NAME, n_arms=2, dim=5, horizon=100, iso_estimate=1)
    with pytest.raises(TypeError, match="screen_episodes"):  # the rule sets it
        make_agent(NAME, n_arms=2, dim=5, horizon=100, screen_episodes=3)


# -- the isotropy test (post-processing of the released moment) -------------------------------

def test_isotropy_thresholds_are_their_formula():
    for n, D, var in ((500, 50, 50.0), (1500, 20, 3.0), (7, 3, 0.25)):
        s2 = var / 2 + n / D**2
        m = D * (D + 1) / 2
        spread = n * (1 - 1 / D)
        spectral, frob = isotropy_thresholds(n, D, var)
        assert spectral == pytest.approx(2 * math.sqrt(D * s2) + 2.0234 * math.sqrt(s2)
                                         / D ** (1 / 6), rel=1e-14)
        sd = math.sqrt(2 * m * var**2 + 4 * var * spread + 4 * n**2 / D**2)
        assert frob == pytest.approx(var * m + spread + 2.3263 * sd, rel=1e-14)


def test_isotropy_rejected_flips_at_each_threshold():
    """A rank-one bump tests the top eigenvalue alone (its squared Frobenius norm is far
    below that threshold); a trace-free +-a diagonal tests the Frobenius norm alone (its top
    eigenvalue a is half the spectral threshold)."""
    n, D, var = 500, 20, 8.0
    spectral, frob = isotropy_thresholds(n, D, var)
    base = (n / D) * np.eye(D)
    e = np.zeros(D)
    e[3] = 1.0
    bumps = [base + t * np.outer(e, e) for t in (spectral * (1 - 1e-9), spectral * (1 + 1e-9))]
    assert spectral**2 < frob / 2
    assert isotropy_rejected(np.stack(bumps), n, var).tolist() == [False, True]
    signs = np.where(np.arange(D) % 2 == 0, 1.0, -1.0)
    a = math.sqrt(frob / D)
    assert a < spectral / 1.5
    flat = [base + np.diag(a * f * signs) for f in (1 - 1e-9, 1 + 1e-9)]
    assert isotropy_rejected(np.stack(flat), n, var).tolist() == [False, True]


def _sphere_moments(rng, R, n, D, sigma):
    u = rng.standard_normal((R, n, D))
    u /= np.linalg.norm(u, axis=2, keepdims=True)
    return np.einsum("rni,rnj->rij", u, u) + gram_noise(rng, (R, D, D), sigma)


def test_isotropy_level_and_power_on_simulated_releases():
    """Level: rows uniform on the sphere plus the plan's noise are rejected at about the
    nominal 2% (two 1% tests; 1,000 draws measured 0.015-0.023 at d = 15-80, n = 500-1500,
    sigma 2.4-21). With 200 draws a true rate of 0.03 exceeds 14 rejections (mean 6, sd
    2.4) with probability below 1e-3. Power: the same rows with a planted spike of three
    times the BBP detection scale ``s sqrt(D)`` (``s = sigma / sqrt 2``, the off-diagonal
    noise sd; the top eigenvalue then sits near ``3.33 s sqrt(D)`` against the threshold's
    ``2 s sqrt(D)`` plus Tracy-Widom units) are rejected in at least 95% of 50 draws."""
    rng = np.random.default_rng(20261128)
    n, D, sigma = 300, 30, 7.1
    null = isotropy_rejected(_sphere_moments(rng, 200, n, D, sigma), n, sigma**2)
    assert null.sum() <= 14
    spike = 3.0 * sigma * math.sqrt(D / 2)
    e = np.ones(D) / math.sqrt(D)
    alt = _sphere_moments(rng, 50, n, D, sigma) + spike * np.outer(e, e)
    assert isotropy_rejected(alt, n, sigma**2).mean() >= 0.95


#: sizes where the rule keeps dp-moment-ls's two screening releases (fit_snr = 0) and S is
#: a strict subset (|S| = 16 < d = 24); n0 = 100, so the test reads 300 users at release 2
ISO_ENV = {"n_arms": 2, "dim": 24, "horizon": 2000}


def _with_moment_ls(env_params: dict, reps: int = 6, **params):
    b = make_agent(NAME, n_arms=2, dim=24, horizon=2000, fit_snr=0.0, **params)
    _, _, res = compare({"b": b, "m": ("dp-moment-ls", {})}, "dpbandits/GLMBandit-v0",
                        n_reps=reps, seed=11, env_params=env_params)
    return b, res["b"].cum_regret, res["m"].cum_regret


def test_a_replication_whose_moment_is_not_isotropic_is_dp_moment_ls_bit_for_bit():
    """Equicorrelated (0.5) contexts with a mean: the released moment's top eigenvalue is
    far above its noise, every replication rejects, and the agent is dp-moment-ls (the test
    is post-processing: the same releases, the same noise stream)."""
    d = ISO_ENV["dim"]
    corr = {**ISO_ENV, "context_cov": 0.0025 * (0.5 * np.eye(d) + 0.5),
            "context_mean": np.full(d, 0.05)}
    b, regret_b, regret_m = _with_moment_ls(corr)
    assert not b.isotropic_.any()
    assert np.array_equal(regret_b, regret_m)


def test_an_isotropic_replication_plays_and_screens_on_the_marginal_contrasts():
    """Isotropic centred contexts, ``iso_weights = "equal"`` (the second round's agent): the
    replications that pass the test (most: level about 2%) screen on the summed released
    contrasts' ``max_k |c_kj|`` (dp-screened-ls's statistic), the others are dp-moment-ls's
    replications bit for bit."""
    b, regret_b, regret_m = _with_moment_ls(ISO_ENV, iso_weights="equal")
    iso = b.isotropic_
    assert iso.sum() >= 4  # P(3 or more of 6 rejections at level 0.03) < 1e-3
    top = np.argsort(-np.abs(b._c_released).max(axis=1), axis=1, kind="stable")[:, :16]
    assert np.array_equal(b.screened_[iso], np.sort(top, axis=1)[iso])
    assert np.array_equal(regret_b[~iso], regret_m[~iso])
    assert not np.array_equal(regret_b[iso], regret_m[iso])  # the choice changed the play


def _spied_releases(monkeypatch) -> list:
    """Each screening release's contrasts (R, K, D), in order, as the agent receives them."""
    releases = []
    real = agent_class(NAME)._after_screen_release

    def spy(self, *args):
        releases.append(self._c_last.copy())
        return real(self, *args)

    monkeypatch.setattr(agent_class(NAME), "_after_screen_release", spy)
    return releases


def _weights(sigma_c: float, K: int = 2, D: int = 24, clip: float = 0.1):
    """ISO_ENV's two releases (n0 = 100, then 200 users): their weights n / (n + n_star),
    n_star = K D^2 sigma_c^2 / clip^2, and variances per coordinate sigma_c^2 (K-1)/K + n
    (clip^2 / D) (K-1) / (K^2 D)."""
    n_star = K * D**2 * sigma_c**2 / clip**2
    lengths = (100, 200)
    a = [n / (n + n_star) for n in lengths]
    var = [sigma_c**2 * (K - 1) / K + n * clip**2 / D * (K - 1) / (K * K * D) for n in lengths]
    return lengths, a, var


@pytest.mark.parametrize("estimate", ["threshold", "bayes"])
def test_the_isotropic_branch_weighs_each_release_by_its_precision(monkeypatch, estimate):
    """Release e of n_e users enters the isotropic branch's contrasts with weight n_e / (n_e
    + K D^2 sigma_c^2 / clip_screen^2) (noise variance sigma_c^2 (K-1)/K against at most
    y_max^2 (K-1)/(K^2 D) per user, y_max = clip_screen / sqrt(D)). "threshold" keeps the
    coordinates above iso_threshold privacy-noise sds of the weighted sum; "bayes" (the
    default) plays the weighted sum's spike-and-slab posterior mean at its full variance.
    S reads the weighted sum; a rejected replication is dp-moment-ls's bit for bit."""
    releases = _spied_releases(monkeypatch)
    b, regret_b, regret_m = _with_moment_ls(ISO_ENV, iso_estimate=estimate)
    sigma_c = b.sigmas["contrast"]
    lengths, a, var = _weights(sigma_c)
    assert [b.release_weight(n) for n in lengths] == pytest.approx(a, rel=1e-12)
    assert [b.release_variance(n) for n in lengths] == pytest.approx(var, rel=1e-12)
    weighted = a[0] * releases[0] + a[1] * releases[1]
    assert np.allclose(b._c_weighted, weighted, rtol=1e-12, atol=0.0)
    strength = np.abs(weighted).max(axis=1)
    if estimate == "threshold":
        sd = sigma_c * math.sqrt((a[0] ** 2 + a[1] ** 2) / 2)
        played = weighted * (strength > 1.0 * sd)[:, None, :]
    else:
        total = a[0] ** 2 * var[0] + a[1] ** 2 * var[1]
        played = budget.spike_slab_mean(weighted.reshape(len(weighted), -1), total)
        played = played.reshape(weighted.shape)
    iso = b.isotropic_
    assert iso.sum() >= 4
    assert np.allclose(b._theta_screen[iso], played[iso], rtol=1e-12, atol=0.0)
    top = np.argsort(-strength, axis=1, kind="stable")[:, :16]
    assert np.array_equal(b.screened_[iso], np.sort(top, axis=1)[iso])
    assert np.array_equal(regret_b[~iso], regret_m[~iso])
    assert a[0] < a[1] < 1.0  # not the plain sum: the first release counts less


def _posterior_mean_by_hand(z: np.ndarray, var: float) -> np.ndarray:
    """The spike-and-slab posterior mean with the prior fitted by marginal likelihood on the
    grids, written out with normal densities (one row)."""
    def normal(x, v):
        return np.exp(-0.5 * x * x / v) / np.sqrt(2.0 * np.pi * v)

    scores = [(np.log((1 - p) * normal(z, var) + p * normal(z, var * (1 + r))).sum(), p, r)
              for p in budget.SLAB_PROBS for r in budget.SLAB_RATIOS]
    _, p, r = max(scores, key=lambda t: t[0])  # the first maximum, as the agent's
    tau2 = r * var
    slab = p * normal(z, var + tau2)
    return slab / (slab + (1 - p) * normal(z, var)) * tau2 / (var + tau2) * z


def test_spike_slab_mean_is_the_empirical_bayes_posterior_mean():
    rng = np.random.default_rng(4)
    theta = np.zeros((3, 40))
    theta[:, :5] = rng.normal(0.0, 4.0, (3, 5))
    z = theta + rng.normal(0.0, 1.5, theta.shape)
    got = budget.spike_slab_mean(z, 1.5**2)
    for row in range(3):
        assert np.allclose(got[row], _posterior_mean_by_hand(z[row], 1.5**2), rtol=1e-9,
                           atol=1e-12)
    # shrinks towards 0, never past it, and more for small entries than for large ones
    assert np.all(np.abs(got) <= np.abs(z)) and np.all(got * z >= 0)
    ratio = np.abs(got / z)
    small, large = np.abs(z) < 1.5, np.abs(z) > 6.0
    assert ratio[small].max() < ratio[large].min()


def test_spike_slab_mean_with_a_variance_per_entry():
    """An (R, n) variance: the slab variance is a grid multiple of the row's mean variance,
    each entry's likelihood and shrinkage at its own variance; a constant array is the
    scalar case."""
    rng = np.random.default_rng(8)
    var = rng.uniform(0.5, 4.0, (2, 30))
    theta = np.zeros((2, 30))
    theta[:, :4] = 6.0
    z = theta + rng.normal(size=theta.shape) * np.sqrt(var)
    got = budget.spike_slab_mean(z, var)

    def normal(x, v):
        return np.exp(-0.5 * x * x / v) / np.sqrt(2.0 * np.pi * v)

    for row in range(2):
        zr, vr, mean = z[row], var[row], var[row].mean()
        scores = [(np.log((1 - p) * normal(zr, vr) + p * normal(zr, vr + r * mean)).sum(),
                   p, r) for p in budget.SLAB_PROBS for r in budget.SLAB_RATIOS]
        _, p, r = max(scores, key=lambda t: t[0])
        slab = p * normal(zr, vr + r * mean)
        want = slab / (slab + (1 - p) * normal(zr, vr)) * r * mean / (vr + r * mean) * zr
        assert np.allclose(got[row], want, rtol=1e-9, atol=1e-12)
    flat = np.full(z.shape, 2.0)
    assert np.allclose(budget.spike_slab_mean(z, flat), budget.spike_slab_mean(z, 2.0),
                       rtol=1e-12, atol=0.0)


def test_spike_slab_mean_is_finite_for_extreme_floats():
    z = np.array([[0.0, 5e-324, -1e-300, 1e150, -1e200, 1.7e308, 3.0, -2.0]])
    for var in (5e-324, 1e-300, 1.0, 1e300):
        out = budget.spike_slab_mean(z, var)
        assert np.all(np.isfinite(out)) and np.all(np.abs(out) <= np.abs(z))
    assert budget.spike_slab_mean(np.zeros((2, 5)), 1.0).tolist() == [[0.0] * 5] * 2


def test_release_weights_are_one_without_noise_and_under_equal():
    for params in ({"epsilon": math.inf}, {"iso_weights": "equal"}):
        a = make_agent(NAME, n_arms=2, dim=50, horizon=10_000, **params)
        assert [a.release_weight(n) for n in (1, 500, 10**6)] == [1.0, 1.0, 1.0]
    a = make_agent(NAME, n_arms=2, dim=50, horizon=10_000, epsilon=0.3)
    e = make_agent(NAME, n_arms=2, dim=50, horizon=10_000, epsilon=0.3, iso_weights="equal")
    assert a.plan.scales == e.plan.scales and a.ledger == e.ledger  # post-processing only


def test_the_isotropy_test_reads_the_released_moment_with_the_plans_variance(monkeypatch):
    """At each screening release from the second on, the test gets the summed released
    moment (not the raw one), the users so far and ``sigma_M^2`` times the releases."""
    import dpbandits.agents.budget_ls as mod

    calls = []
    real = mod.isotropy_rejected

    def spy(moment, n, var):
        calls.append((moment.copy(), n, var))
        return real(moment, n, var)

    monkeypatch.setattr(mod, "isotropy_rejected", spy)
    a = make_agent(NAME, n_arms=2, dim=24, horizon=2000, fit_snr=0.0, min_screen=3)
    compare({"b": a}, "dpbandits/GLMBandit-v0", n_reps=2, seed=5, env_params=ISO_ENV)
    sigma2 = a.sigmas["moment"] ** 2
    assert a.screen_episodes_ == 3
    assert [(n, v) for _, n, v in calls] == [(300, 2 * sigma2), (700, 3 * sigma2)]
    assert np.array_equal(calls[-1][0], a._M_released)


def test_spike_slab_mean_in_blocks_is_the_mean_in_one():
    """Rows are independent: many rows (processed in blocks) give each row's own result."""
    rng = np.random.default_rng(2)
    n = 300
    step = 2**21 // (len(budget.SLAB_RATIOS) * n)
    z = rng.normal(0.0, 2.0, (2 * step + 3, n))
    var = rng.uniform(0.5, 2.0, z.shape)
    rows = [0, step - 1, step, 2 * step + 2]
    for v in (1.3, var):
        whole = budget.spike_slab_mean(z, v)
        for r in rows:
            alone = budget.spike_slab_mean(z[r:r + 1], v if np.ndim(v) == 0 else v[r:r + 1])
            assert np.array_equal(whole[r], alone[0])

"""DP-GIBO (Algorithm 1, Sopa et al. 2025): clipping, sensitivity, noise, privacy, determinism."""

import math
import warnings

import numpy as np
import pytest

from dpbandits.bo import DPGIBO, GIBO, RBF, GradientDesigner, NormalLocation, Polynomial
from dpbandits.bo._common import clip_and_average
from dpbandits.bo.gp import GPDesign
from dpbandits.privacy.accounting import epsilon_of, gdp_epsilon

FAST = GradientDesigner(n_candidates=32, n_restarts=1, maxiter=10)


def _normal_problem(n=50, d=5, seed=0):
    return NormalLocation(np.random.default_rng(seed).normal(1.0, 1.0, size=(n, d)))


# ------------------------------------------------------------------ clipping/sensitivity
def test_clipped_rows_have_norm_at_most_B_and_are_counted():
    rng = np.random.default_rng(0)
    G = rng.normal(size=(500, 7)) * rng.lognormal(0, 2, size=(500, 1))
    B = 1.3
    norms = np.linalg.norm(G, axis=1)
    clipped = G * np.minimum(1.0, B / norms)[:, None]
    mean, was = clip_and_average(G, B)
    np.testing.assert_array_equal(was, norms > B * (1 - 1e-14))
    assert 0 < was.sum() < G.shape[0]
    np.testing.assert_allclose(mean, clipped.mean(axis=0), rtol=1e-12)
    # the rows that enter the mean: recover them through single-row calls
    rows = np.array([clip_and_average(G[i: i + 1], B)[0] for i in range(G.shape[0])])
    assert np.all(np.linalg.norm(rows, axis=1) <= B)
    assert np.all(np.sqrt(np.sum(rows**2, axis=1)) <= B)
    np.testing.assert_array_equal(rows[~was], G[~was])


def _worst_sensitivity(B, n, d, trials, rng, clip=True):
    worst = 0.0
    for _ in range(trials):
        G = rng.normal(size=(n, d)) * rng.choice([0.1, 1.0, 1e3], size=(n, 1))
        G2 = G.copy()
        i = rng.integers(n)
        # adversarial replacement: huge vector pointing away from the original row
        G2[i] = -G[i] / max(np.linalg.norm(G[i]), 1e-12) * rng.choice([B, 10 * B, 1e6])
        if clip:
            a, _ = clip_and_average(G, B)
            b, _ = clip_and_average(G2, B)
        else:
            a, b = G.mean(axis=0), G2.mean(axis=0)
        worst = max(worst, np.linalg.norm(a - b))
    return worst


def test_replace_one_sensitivity_of_averaged_gradient_is_at_most_2B_over_n():
    rng = np.random.default_rng(1)
    B, n, d = 0.7, 20, 4
    worst = _worst_sensitivity(B, n, d, 300, rng)
    assert worst <= 2 * B / n * (1 + 1e-12)
    assert worst >= 0.99 * 2 * B / n  # attained by opposite vectors of norm >= B
    # the check is discriminative: without clipping the same inputs break the bound
    assert _worst_sensitivity(B, n, d, 50, np.random.default_rng(1), clip=False) > 2 * B / n


def test_dp_gibo_end_to_end_sensitivity_on_neighbouring_datasets():
    """First iteration (same design: data-independent) on neighbours differing in one far
    outlier: the clipped mean surrogate gradients differ by at most 2B/n."""
    X = np.random.default_rng(2).normal(1.0, 1.0, size=(30, 3))
    X2 = X.copy()
    X2[7] = [1e4, -1e4, 1e4]
    B = 0.5
    out = []
    for data in (X, X2):
        alg = DPGIBO(mu=1.0, n_iters=2, clip_bound=B, kernel=Polynomial(2), batch_size=6,
                     designer=FAST, record_diagnostics=True, jitter=1e-9)
        res = alg.fit(NormalLocation(data), np.random.default_rng(3))
        out.append(res)
    np.testing.assert_array_equal(out[0].extra["eval_points"][0][:6],
                                  out[1].extra["eval_points"][0][:6])
    g = [r.extra["nonprivate_clipped_mean_gradient"][0, 0] for r in out]
    assert np.linalg.norm(g[0] - g[1]) <= 2 * B / 30 * (1 + 1e-9)
    assert out[1].extra["n_clipped_per_iter"][0, 0] >= 1
    assert np.all(out[1].n_clipped == out[1].extra["n_clipped_per_iter"].sum(axis=1))


# ------------------------------------------------------------------------ noise
def test_applied_noise_is_the_noise_the_ledger_accounts_for():
    """The ledger is T Gaussian mechanisms with noise multiplier z on a release whose l_2
    sensitivity is 2B/n (tests above); the noise actually added must have std z 2B/n, and
    that is the std reported."""
    B, T, mu, n = 0.8, 40, 0.7, 25
    alg = DPGIBO(mu=mu, n_iters=T, clip_bound=B, kernel=Polynomial(2), batch_size=1,
                 designer=FAST, record_diagnostics=True, jitter=1e-9)
    assert alg.ledger.count == T
    sigma = alg.ledger.event.noise_multiplier * 2 * B / n
    assert alg.noise_std(n) == pytest.approx(sigma, rel=1e-12)
    res = alg.fit(_normal_problem(n=n, d=3), np.random.default_rng(4), n_reps=3)
    assert res.extra["noise_std"] == pytest.approx(sigma, rel=1e-12)
    w = res.extra["nonprivate_noise"].ravel()
    N = w.size  # 360 draws; sd of the sample std is about sigma / sqrt(2N)
    assert abs(w.std() / sigma - 1) < 5 / math.sqrt(2 * N)
    assert abs(w.mean()) < 5 * sigma / math.sqrt(N)
    # sgd without bounds: theta_{t+1} = theta_t - eta (clean + noise), exactly
    h = res.history
    step = res.extra["nonprivate_clipped_mean_gradient"] + res.extra["nonprivate_noise"]
    np.testing.assert_allclose(h[:, 1:], h[:, :-1] - 0.1 * step, atol=1e-12)


def test_privacy_is_gdp_with_conversion_and_ledger_agrees():
    alg = DPGIBO(mu=1.5, n_iters=30, clip_bound=1.0, tolerance=0.1, delta=1e-6)
    p = alg.privacy
    assert p.notion == "GDP" and p.mu == 1.5 and p.delta == 1e-6
    assert p.epsilon == pytest.approx(gdp_epsilon(1.5, 1e-6))
    assert p.basis == "Theorem 3.1 of Sopa et al. 2025"
    assert p.neighbouring == "replace-one" and p.is_private
    # the ledger (30 Gaussian mechanisms, multiplier sqrt(30)/1.5) re-accounted independently
    eps_pld = epsilon_of(alg.ledger, 1e-6)
    assert eps_pld == pytest.approx(p.epsilon, rel=0.02)
    assert not GIBO(n_iters=3, batch_size=1).privacy.is_private


# ------------------------------------------------------------------- convergence
def test_mu_inf_converges_to_mle_on_normal_location():
    """Appendix E.3 with mu = inf (non-private GIBO, polynomial kernel): the iterates
    converge to the MLE (sample mean)."""
    obj = _normal_problem()
    res = GIBO(n_iters=40, kernel=Polynomial(2), batch_size=3, step_size=0.5,
               designer=FAST, jitter=1e-9).fit(obj, np.random.default_rng(5))
    assert np.linalg.norm(res.theta[0] - obj.mle) < 1e-6
    assert np.linalg.norm(res.history[0, 0] - obj.mle) > 1.0
    assert res.privacy.notion == "none"


def test_mu_inf_rbf_adaptive_gets_close_to_mle():
    obj = _normal_problem(d=3)
    res = GIBO(n_iters=25, kernel=RBF(1.0), tolerance=0.05, step_size=0.5,
               designer=FAST).fit(obj, np.random.default_rng(6))
    assert np.linalg.norm(res.theta[0] - obj.mle) < 0.05
    bs = res.extra["batch_sizes"][0]
    assert np.all(bs >= 1) and bs[0] > bs[-5:].mean()  # the design is reused later
    assert np.all(res.extra["gradient_trace"][0] <= 0.05 + 1e-9)


def test_private_run_stays_near_mle_and_clipping_is_counted():
    obj = _normal_problem()
    res = DPGIBO(mu=2.0, n_iters=60, clip_bound=1.0, kernel=Polynomial(2), batch_size=3,
                 step_size=0.1, designer=FAST, jitter=1e-9).fit(obj, np.random.default_rng(7))
    assert np.linalg.norm(res.theta[0] - obj.mle) < 1.5
    assert np.linalg.norm(res.history[0, 0] - obj.mle) > 2.0
    assert res.n_clipped[0] > 0  # B = 1 binds on this problem (norms ~ sqrt(2 d))


# -------------------------------------------------------------------- determinism
def test_same_seed_bit_identical_and_reps_independent_of_n_reps():
    obj = _normal_problem(d=3)
    kw = dict(mu=1.0, n_iters=5, clip_bound=1.0, kernel=RBF(1.0), tolerance=0.3,
              designer=FAST, theta0="uniform", bounds=np.tile([-2.0, 3.0], (3, 1)))
    a = DPGIBO(**kw).fit(obj, np.random.default_rng(8), n_reps=2)
    b = DPGIBO(**kw).fit(obj, np.random.default_rng(8), n_reps=2)
    c = DPGIBO(**kw).fit(obj, np.random.default_rng(8), n_reps=1)
    d = DPGIBO(**kw).fit(obj, np.random.default_rng(9), n_reps=1)
    np.testing.assert_array_equal(a.history, b.history)
    np.testing.assert_array_equal(a.history[:1], c.history)
    assert not np.array_equal(a.history[0], a.history[1])
    assert not np.array_equal(c.history, d.history)
    assert np.all(a.history >= -2.0) and np.all(a.history <= 3.0)


def test_tolerance_not_met_warns_and_is_recorded():
    obj = _normal_problem(d=3)
    alg = DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, kernel=RBF(1.0), noise_var=1.0,
                 tolerance=1e-6, max_batch=2, designer=FAST)
    with pytest.warns(RuntimeWarning, match="tolerance"):
        res = alg.fit(obj, np.random.default_rng(0))
    assert not res.extra["tolerance_met"].any()
    assert np.all(res.extra["batch_sizes"] == 2)


def test_min_batch_zero_with_loose_tolerance_evaluates_nothing():
    obj = _normal_problem(d=3)
    res = DPGIBO(mu=1.0, n_iters=3, clip_bound=1.0, tolerance=100.0, min_batch=0,
                 designer=FAST, record_diagnostics=True).fit(obj, np.random.default_rng(0))
    assert res.extra["n_evals"][0] == 0
    np.testing.assert_array_equal(res.extra["nonprivate_clipped_mean_gradient"], 0.0)


def test_recorded_trace_matches_recomputation():
    obj = _normal_problem(d=3)
    res = DPGIBO(mu=1.0, n_iters=4, clip_bound=1.0, tolerance=0.2, noise_var=1e-3,
                 designer=FAST).fit(obj, np.random.default_rng(1))
    pts = res.extra["eval_points"][0]
    m = np.cumsum(res.extra["batch_sizes"][0])
    for t in range(4):
        design = GPDesign(RBF(1.0), noise_var=1e-3, jitter=1e-10)
        design.add(pts[: m[t]])
        tr = design.grad_trace(res.history[0, t])
        assert tr == pytest.approx(res.extra["gradient_trace"][0, t], rel=1e-6, abs=1e-9)


# ------------------------------------------------------------------------ errors
@pytest.mark.parametrize("kwargs, err, match", [
    (dict(mu=0.0), ValueError, "mu"),
    (dict(mu=-1.0), ValueError, "mu"),
    (dict(mu="1"), TypeError, "mu"),
    (dict(n_iters=0), ValueError, "n_iters"),
    (dict(n_iters=2.0), TypeError, "n_iters"),
    (dict(clip_bound=0.0), ValueError, "clip_bound"),
    (dict(clip_bound=math.inf), ValueError, "clip_bound must be finite"),
    (dict(batch_size=2), ValueError, "exactly one of tolerance"),
    (dict(tolerance=None), ValueError, "exactly one of tolerance"),
    (dict(tolerance=-1.0), ValueError, "tolerance"),
    (dict(step_rule="adam"), ValueError, "step_rule"),
    (dict(step_size=0.0), ValueError, "step_size"),
    (dict(bounds=[[1.0, 0.0]]), ValueError, "bounds"),
    (dict(delta=0.0), ValueError, "delta"),
    (dict(delta=1.0), ValueError, "delta"),
    (dict(kernel="rbf"), TypeError, "kernel"),
    (dict(noise_var=-0.1), ValueError, "noise_var"),
    (dict(max_batch=0), ValueError, "max_batch"),
    (dict(designer=object()), TypeError, "designer"),
])
def test_bad_hyperparameters_raise(kwargs, err, match):
    base = dict(mu=1.0, n_iters=3, clip_bound=1.0, tolerance=0.5)
    base.update(kwargs)
    with pytest.raises(err, match=match):
        DPGIBO(**base)


def test_bad_fit_inputs_raise():
    obj = _normal_problem(d=3)
    alg = DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1, designer=FAST)
    with pytest.raises(TypeError, match="Generator"):
        alg.fit(obj, 0)
    with pytest.raises(ValueError, match="n_reps"):
        alg.fit(obj, np.random.default_rng(0), n_reps=0)
    with pytest.raises(TypeError, match="objective"):
        alg.fit(42, np.random.default_rng(0))
    with pytest.raises(ValueError, match="theta0"):
        DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1,
               theta0=np.zeros(5)).fit(obj, np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs bounds"):
        DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1,
               theta0="uniform").fit(obj, np.random.default_rng(0))
    with pytest.raises(ValueError, match="bounds has 2 rows"):
        DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1,
               bounds=[[0, 1], [0, 1]]).fit(obj, np.random.default_rng(0))
    with pytest.raises(TypeError, match="GIBO is non-private"):
        GIBO(mu=1.0, n_iters=2, batch_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alg.fit(obj, np.random.default_rng(0))


def test_attributes_changed_after_init_are_revalidated():
    alg = DPGIBO(mu=1.0, n_iters=4, clip_bound=1.0, batch_size=1, designer=FAST)
    alg.mu = 2.0
    assert alg.privacy.mu == 2.0
    assert epsilon_of(alg.ledger, alg.delta) == pytest.approx(alg.privacy.epsilon, rel=0.02)
    assert alg.noise_std(10) == pytest.approx(alg.ledger.event.noise_multiplier * 2 / 10)
    alg.mu = -1.0
    with pytest.raises(ValueError, match="mu"):
        alg.fit(_normal_problem(d=3), np.random.default_rng(0))


def test_estimated_prior_mean_removes_constant_offset_bias():
    """A constant loss has zero gradient: with prior_mean='estimated' GIBO does not move; with
    the paper's zero prior mean the surrogate gradient is biased towards the design points."""
    from dpbandits.bo import CallableObjective

    obj = CallableObjective(lambda th: 0.5 + np.arange(5.0), dim=4, n_individuals=5)
    moved = {}
    for pm in (0.0, "estimated"):
        res = GIBO(n_iters=4, kernel=RBF(1.0), batch_size=5, step_size=0.1, prior_mean=pm,
                   designer=FAST).fit(obj, np.random.default_rng(0))
        moved[pm] = np.linalg.norm(res.theta[0] - res.history[0, 0])
    assert moved["estimated"] < 1e-10
    assert moved[0.0] > 1e-3


def test_estimated_prior_mean_is_shift_invariant_per_individual_and_keeps_sensitivity():
    X = np.random.default_rng(2).normal(1.0, 1.0, size=(30, 3))
    base = NormalLocation(X)
    shifts = np.random.default_rng(3).normal(0, 100, size=30)
    from dpbandits.bo import CallableObjective

    shifted = CallableObjective(lambda th: base.per_individual_losses(th) + shifts, dim=3,
                                n_individuals=30)
    kw = dict(mu=1.0, n_iters=3, clip_bound=0.5, kernel=Polynomial(2), batch_size=4,
              designer=FAST, record_diagnostics=True, jitter=1e-9, prior_mean="estimated")
    a = DPGIBO(**kw).fit(base, np.random.default_rng(4))
    b = DPGIBO(**kw).fit(shifted, np.random.default_rng(4))
    np.testing.assert_allclose(a.history, b.history, atol=1e-6)
    X2 = X.copy()
    X2[5] = [1e4, -1e4, 1e4]
    c = DPGIBO(**kw).fit(NormalLocation(X2), np.random.default_rng(4))
    g = [r.extra["nonprivate_clipped_mean_gradient"][0, 0] for r in (a, c)]
    assert np.linalg.norm(g[0] - g[1]) <= 2 * 0.5 / 30 * (1 + 1e-9)
    with pytest.raises(ValueError, match="prior_mean"):
        DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=1, prior_mean="zero")

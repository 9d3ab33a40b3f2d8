"""The noise each private component draws has the spread its plan declares, release by
release (issue 34 item 5), for the components not covered by ``test_noise_spread.py``.

Same method as there: on data for which the noise-free part of every release is exactly 0
(zero contexts, zero rewards, zero data), ``sum(z^2) / sigma^2`` over the ``N >= 20,000``
released coordinates of one release (independent across replications) is chi-square with
``N`` degrees of freedom; the two-sided acceptance region at ``p = 1e-9`` is about
``N (1 +/- 6.1 sqrt(2/N))`` (normal approximation: mean ``N``, sd ``sqrt(2N)``; 6.1 sd is the
1e-9 two-sided normal quantile), i.e. +/- 6.1% at ``N = 20,000``, while a cut of the noise by
0.8 moves the statistic by -36%. The exact chi-square quantiles are used. Seeds are fixed.

Non-Gaussian noise: Laplace values by ``sum |z| / b`` (Gamma(N, 1)); report-noisy-min
selections by the frequency of the worse vertex against its exact probability (binomial);
Wishart and generalized-Gaussian nodes by the chi-square laws of their diagonals and norms
(each test says why). Every test's x0.8 mutation of the noise at the draw, and the statistic
it produced, is in docs/mutation-report.md (layer 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _spread import (
    MIN_N,
    P_VALUE,
    assert_chi_square,
    check_contrasts,
    check_fit_releases,
    check_moment_screening,
    symmetric_standardized,
)
from scipy import stats

from dpbandits.agents.adac_oful import AdaCOFUL
from dpbandits.agents.budget_ls import BudgetLS
from dpbandits.agents.dp_hdb import DPHDB
from dpbandits.agents.dp_ucb import DPUCB
from dpbandits.agents.fliphat import FLIPHAT
from dpbandits.agents.screened_ls import ScreenedLS
from dpbandits.bo.dp_gibo import DPGIBO
from dpbandits.bo.objectives import as_objective
from dpbandits.envs.logged import LoggedBandit
from dpbandits.losses import SquaredLoss
from dpbandits.offpolicy.private import PrivateEstimator
from dpbandits.optim.batch.dp_gd import DPGD
from dpbandits.optim.batch.noisy_sgd import NoisySGD
from dpbandits.optim.streaming.dp_pofw import DPPOFW
from dpbandits.optim.streaming.dp_tofw import DPTOFW


def _assert_binomial(name: str, count: int, n: int, p: float) -> float:
    """``count`` ~ Binomial(n, p): inside its exact two-sided 1e-9 region. Returns the
    frequency (for the mutation table)."""
    lo, hi = stats.binom.ppf(P_VALUE / 2, n, p), stats.binom.isf(P_VALUE / 2, n, p)
    assert lo <= count <= hi, (f"{name}: frequency {count / n:.4f} over {n} draws, p = {p:.4f}, "
                               f"outside [{lo / n:.4f}, {hi / n:.4f}]")
    return count / n


def _assert_laplace_scale(name: str, values: np.ndarray, b: float) -> float:
    """``values`` i.i.d. Lap(b): |z|/b ~ Exp(1), so sum |z|/b over N values is Gamma(N, 1);
    exact two-sided 1e-9 quantiles, about N (1 +/- 6.1 / sqrt(N)) (+/- 4.3% at N = 20,000),
    while a cut of b by 0.8 moves the mean to 0.8. Returns the mean (for the mutation table)."""
    n = values.size
    assert n >= MIN_N, f"{name}: only {n} values"
    stat = float(np.sum(np.abs(values)) / b)
    lo, hi = stats.gamma.ppf(P_VALUE / 2, n), stats.gamma.isf(P_VALUE / 2, n)
    assert lo <= stat <= hi, (f"{name}: mean |z|/b = {stat / n:.4f} over {n} values, outside "
                              f"[{lo / n:.4f}, {hi / n:.4f}]")
    return stat / n


# -- dp-ucb: every release of the Gaussian tree ----------------------------------------------
def _upper_standardized(release: np.ndarray, s: float) -> np.ndarray:
    """The upper triangle of symmetric releases (R, n, n) whose nodes are ``(Z + Z^T)/sqrt 2``
    with ``Z_ij ~ N(0, s^2)``: sd ``s`` off the diagonal, ``s sqrt 2`` on it."""
    n = release.shape[-1]
    iu, ju = np.triu_indices(n)
    return release[:, iu, ju] / np.where(iu == ju, s * math.sqrt(2.0), s)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("auto", marks=pytest.mark.heavy)])
def test_dp_ucb_tree_releases_draw_the_plans_node_scale(backend):
    # zero contexts and rewards: the exact prefix Gram M_t is 0, so the release M_t + N_t
    # (``_release``, the tree's output before the agent post-processes it) is the sum of the
    # popcount(t) independent nodes at the set bits of t: sd s sqrt(popcount t) per entry
    n_arms, dim, horizon, reps = 2, 2, 7, 1400  # n = dK + 1 = 5: 15 coordinates x 1400
    agent = DPUCB(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=1.0, delta=1e-5,
                  backend=backend)
    s = agent._plan.scales["node_sigma"]
    agent.reset(reps, np.random.default_rng(20261129))
    x = np.zeros((reps, dim))
    for t in range(1, horizon + 1):
        agent.update(x, agent.act(x), np.zeros(reps))
        assert agent.t_ == t
        assert_chi_square(f"dp-ucb release t={t}",
                           _upper_standardized(agent._release, s * math.sqrt(t.bit_count())))


# -- DP-POFW (DP-HDB's per-arm optimizer): report-noisy-min with Laplace noise ---------------
@pytest.mark.heavy
@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_dp_pofw_selection_draws_the_plans_laplace_scale(backend):
    # Zero data would make every vertex score 0 and the selection uniform for any scale, so
    # the first step gets one known sample instead: dim 1 (vertices +r and -r), x = 1,
    # y = -1, theta_1 = 0, so the direction d_1 = grad/2 is exact (``last_direction``) and the
    # scores +r d_1, -r d_1 differ by gap = 2 r |d_1|. Report-noisy-min with Lap(b) noise
    # picks the worse vertex iff L_1 - L_2 > gap, whose tail (difference of two Laplace) is
    # (2 + gap/b) exp(-gap/b) / 4. The largest epsilon makes kappa smallest (about 0.34;
    # the schedule's floor), gap/b about 0.37: p = 0.4105, and a cut of b by 0.8 gives
    # p = 0.389; at n = 200,000 the 1e-9 region is p +/- 6.1 sqrt(p(1-p)/n) = +/- 0.0067.
    n = 200_000
    opt = DPPOFW("squared", dim=1, radius=1.0, horizon=2, epsilon=100.0, delta=0.1,
                 backend=backend)
    opt.reset(n_reps=n, rng=20261129)
    theta = opt.step(np.ones((n, 1)), -np.ones(n))
    direction = opt.last_direction
    assert np.all(direction == direction[0, 0]) and direction[0, 0] != 0.0
    ratio = 2.0 * opt.radius * abs(direction[0, 0]) / opt.noise_scale(1)
    p_worse = (2.0 + ratio) * math.exp(-ratio) / 4.0
    # the worse vertex is +r sign(d_1) e_1; theta_2 = eta_1 v_1 carries its sign
    worse = np.sign(theta[:, 0]) == np.sign(direction[:, 0])
    assert np.all(theta[:, 0] != 0.0)
    _assert_binomial(f"dp-pofw step 1 ({backend})", int(worse.sum()), n, p_worse)


# -- DP-GD: the noise of every full-gradient step --------------------------------------------
def test_dp_gd_steps_draw_the_plans_sigma():
    # Zero features: every per-sample gradient of the squared loss is psi * x = 0 at every
    # iterate, so x_t = x_{t-1} - eta z_{t-1} exactly up to rounding, and each recorded step's
    # increment over -eta is the step's noise, N(0, sigma^2 I) with sigma the plan's
    n, d, reps, steps, eta = 10, 20, 1000, 4, 1.0
    opt = DPGD(1.0, 1e-5, n_iters=steps, step_size=eta)
    sigma = opt.plan_for(n).scales["sigma"]
    res = opt.fit(SquaredLoss(), np.zeros((n, d)), np.zeros(n), np.random.default_rng(20261129),
                  n_reps=reps)
    assert res.extra["noise_std"] == sigma and list(res.history_steps) == list(range(steps + 1))
    increments = -np.diff(res.history, axis=1) / eta  # (R, T, d)
    for t in range(steps):
        assert_chi_square(f"dp-gd step {t + 1}", increments[:, t] / sigma)


# -- NoisySGD: the noise of every step, Python and compiled paths ----------------------------
@pytest.mark.parametrize("backend", ["numpy", pytest.param("numba", marks=pytest.mark.heavy)])
def test_noisy_sgd_steps_draw_the_plans_sigma(backend):
    # Zero features: every clipped gradient is 0, so theta_t = Proj(theta_{t-1} - eta sigma z);
    # lr_scale 1e-3 keeps every iterate deep inside the l_2 ball (|theta_t| is about
    # 1e-3 r sqrt(t), the projection is the identity there, checked below), so each step's
    # increment over -eta is its noise, N(0, sigma^2 I) with the plan's sigma
    n, d, reps = 2, 20, 1000
    opt = NoisySGD(p=2.0, radius=1.0, epsilon=1.0, delta=1e-5, lr_scale=1e-3,
                   n_history=n * n, backend=backend)
    sigma = 2.0 * opt.lipschitz * opt.plan_for(n).scales["multiplier"]
    res = opt.fit(SquaredLoss(), np.zeros((n, d)), np.zeros(n),
                  np.random.default_rng(20261129), n_reps=reps)
    assert res.extra["backend"] == backend and res.extra["sigma"] == sigma
    iterates = res.extra["iterates"]  # (R, T, d), every step
    assert list(res.history_steps) == list(range(1, n * n + 1))
    assert np.max(np.linalg.norm(iterates, axis=2)) < 0.5 * opt.radius
    increments = -np.diff(iterates, axis=1, prepend=0.0) / res.extra["eta"]
    for t in range(n * n):
        assert_chi_square(f"noisy-sgd step {t + 1} ({backend})", increments[:, t] / sigma)


# -- DP-TOFW (Gaussian branch): every release of the node tree -------------------------------
def test_dp_tofw_tree_releases_draw_the_plans_node_std():
    # Zero data: every gradient (and so every increment of the recursive gradient) is 0, so
    # the tree's noisy prefix sum at step t, (t + 1) d_t (``last_direction``), is the sum of
    # the popcount(t) independent nodes at the set bits of t: N(0, popcount(t) std^2 I)
    d, horizon, reps = 20, 7, 1000
    opt = DPTOFW("squared", dim=d, p=2.0, radius=1.0, horizon=horizon, epsilon=1.0,
                 delta=1e-5)
    assert opt.gaussian_branch
    std = opt.plan.scales["std"]
    opt.reset(n_reps=reps, rng=20261129)
    for t in range(1, horizon + 1):
        opt.step(np.zeros((reps, d)), np.zeros(reps))
        prefix = opt.last_direction * (t + 1.0)
        assert_chi_square(f"dp-tofw release t={t}", prefix / (std * math.sqrt(t.bit_count())))


# -- dp-screened-ls and dp-budget-ls: every release of both phases ---------------------------
def _run_on_zeros(agent, n_reps: int):
    """Zero contexts and rewards: every contrast, moment, Gram and target sum is exactly 0,
    so the released statistics are the sums of the noise of the releases made so far."""
    agent.reset(n_reps, np.random.default_rng(7))
    x = np.zeros((n_reps, agent.dim))
    r = np.zeros(n_reps)
    for _ in range(agent.horizon):
        agent.update(x, agent.act(x), r)
    return agent


@pytest.mark.heavy
def test_screened_ls_releases_draw_the_plans_scales():
    agent = _run_on_zeros(ScreenedLS(n_arms=2, dim=20, horizon=400, epsilon=1.0, delta=1e-5),
                          n_reps=1000)
    scales = agent._plan.scales
    n_scr, n_fit = agent._n_releases, agent._n_fits
    assert n_scr >= 1 and n_fit >= 1, (n_scr, n_fit)
    check_contrasts("screen", agent._released, scales["screen"], n_scr)
    check_fit_releases(agent, scales["gram"], scales["target"], n_fit)


@pytest.mark.heavy
def test_budget_ls_releases_draw_the_plans_scales():
    # dp-budget-ls makes dp-moment-ls's releases with its own plan; fit_snr = 0 keeps a fit
    # within the short horizon (its rule would otherwise wait for a larger summed Gram)
    agent = _run_on_zeros(BudgetLS(n_arms=2, dim=20, horizon=400, epsilon=1.0, delta=1e-5,
                                   fit_snr=0.0), n_reps=1000)
    scales = agent._plan.scales
    n_scr, n_fit = agent._n_screens, agent._n_fits
    assert n_scr >= 1 and n_fit >= 1, (n_scr, n_fit)
    check_moment_screening(agent, scales["moment"], scales["contrast"], n_scr)
    check_fit_releases(agent, scales["gram"], scales["target"], n_fit)


# -- adac-oful: the episode releases (Gram, targets) and the trigger's threshold noise -------
def test_adac_oful_releases_draw_the_plans_sigmas():
    # Zero contexts and rewards: the episode's Gram and target sums are exactly 0, so the
    # summed releases are the sums of the released noise (doubling schedule: the same number
    # of releases in every replication, fixed in advance)
    reps, dim = 2000, 5
    agent = AdaCOFUL(n_arms=2, dim=dim, horizon=16, epsilon=1.0, delta=1e-5,
                     schedule="doubling", first_episode=1)
    agent.reset(reps, np.random.default_rng(20261129))
    x, r = np.zeros((reps, dim)), np.zeros(reps)
    for _ in range(agent.horizon):
        agent.update(x, agent.act(x), r)
    m = agent.n_releases_
    assert np.all(m == m[0]) and m[0] >= 3, m[:3]
    sig = agent.sigmas
    assert_chi_square("adac-oful gram", symmetric_standardized(
        agent._gram, sig["gram"] * math.sqrt(m[0])))
    assert_chi_square("adac-oful target", agent._target / (sig["target"] * math.sqrt(m[0])))


def test_adac_oful_trigger_threshold_draws_the_plans_laplace_scale():
    # The AboveThreshold noise on the threshold, drawn at every refit (the first at reset),
    # is kept in ``_threshold_noise`` (the smallest hook: it is not released, and the
    # trigger's decisions show the scale only through the data-dependent query): one Lap(b)
    # per replication
    n = 20_000
    agent = AdaCOFUL(n_arms=2, dim=2, horizon=16, epsilon=1.0, delta=1e-5)
    agent.reset(n, np.random.default_rng(20261129))
    _assert_laplace_scale("adac-oful threshold", agent._threshold_noise,
                          agent.trigger_scales[0])


def test_adac_oful_trigger_query_draws_the_plans_laplace_scale():
    # AboveThreshold's query noise: with zero contexts the query's increment is 0, and with
    # the threshold noise set to ``b - log c`` one query fires iff ``b Lap(1) >= b``, i.e.
    # with probability ``e^{-1}/2`` when the query noise has the plan's scale ``b``
    # (``e^{-1.25}/2`` at 0.8 b, 15 standard errors away at R = 20,000); two-sided
    # binomial at p = 1e-9
    n = 20_000
    agent = AdaCOFUL(n_arms=2, dim=2, horizon=16, epsilon=1.0, delta=1e-5)
    agent.reset(n, np.random.default_rng(20261130))
    b = agent.trigger_scales[1]
    agent._threshold_noise[:] = b - agent._log_c
    fired = agent._trigger(np.arange(n), np.zeros(n, dtype=np.int64), np.zeros((n, 2)))
    p = math.exp(-1.0) / 2
    assert stats.binomtest(int(fired.sum()), n, p).pvalue > 1e-9


# -- fliphat: the Laplace noise of the released peeling values -------------------------------
@pytest.mark.parametrize("backend", ["numpy", pytest.param("auto", marks=pytest.mark.heavy)])
def test_fliphat_release_draws_the_plans_laplace_scale(backend):
    # Zero contexts and rewards, one IHT iteration and no projection (theta_bound = inf):
    # the first episode (one round) has v = 0 at theta^0 = 0, so the peeling selects s
    # coordinates whatever the scale and the released estimate is Lap(b) on them, 0 off them,
    # with b = c_1 lambda(0) = (the plan's multiplier) x (the sensitivity at theta = 0)
    reps, n_arms, dim = 2000, 2, 5  # D = 10 = s: 20,000 released values
    agent = FLIPHAT(n_arms=n_arms, dim=dim, horizon=3, epsilon=1.0, delta=1e-5, n_iter=1,
                    theta_bound=math.inf, reward_bound=1.0, backend=backend)
    agent.reset(reps, np.random.default_rng(20261129))
    x = np.zeros((reps, dim))
    agent.update(x, agent.act(x), np.zeros(reps))
    assert len(agent.episode_log_) == 1
    b = agent._plan.scales["M=1"] * agent.sensitivity(np.zeros((1, agent.feature_dim)), 1)[0]
    theta = agent.theta_
    assert np.all(np.count_nonzero(theta, axis=1) == agent._s)
    _assert_laplace_scale(f"fliphat episode 1 ({backend})", theta[theta != 0.0], b)


# -- DP-GIBO: the noise of every private gradient --------------------------------------------
@pytest.mark.heavy
def test_dp_gibo_gradients_draw_the_plans_scale():
    # Zero losses (prior mean 0): every per-individual gradient estimate is exactly 0, so the
    # released gradient of step t is its noise and the plain step theta - eta g (no bounds)
    # makes each step's increment over -eta that noise: N(0, sigma^2 I) with sigma the plan's
    # multiplier times the replace-one l2 sensitivity 2 B / n of the clipped mean gradient
    d, steps, reps, n, clip = 100, 2, 200, 5, 1.0
    obj = as_objective(lambda theta: np.zeros(n), dim=d, n_individuals=n)
    opt = DPGIBO(mu=1.0, n_iters=steps, clip_bound=clip, batch_size=1, step_size=1.0)
    sigma = opt.plan.scales["multiplier"] * 2.0 * clip / n
    assert opt.noise_std(n) == pytest.approx(sigma, rel=1e-12)
    res = opt.fit(obj, np.random.default_rng(20261129), n_reps=reps)
    increments = -np.diff(res.history, axis=1) / opt.step_size  # (R, T, d)
    for t in range(steps):
        assert_chi_square(f"dp-gibo step {t + 1}", increments[:, t] / sigma)


# -- private SNIPS: both released sums, through estimate() -----------------------------------
@pytest.mark.heavy
def test_snips_estimate_draws_the_declared_noise():
    # Zero rewards: the released numerator's noise-free part is exactly 0, the denominator's
    # is the known sum of clipped weights (``statistic``, exact); 1000 rounds of weight 2 keep
    # the noisy denominator far above 0 (estimate() refuses <= 0). Each estimate() releases
    # both sums with one sigma: 10,000 calls give N = 20,000 coordinates.
    n_rounds, calls = 1000, 10_000
    x = np.zeros((n_rounds, 1))
    log = LoggedBandit(x, np.ones(n_rounds, dtype=np.int64), np.zeros(n_rounds),
                       np.full(n_rounds, 0.5), 2, name="zero")
    pi = np.tile([0.0, 1.0], (n_rounds, 1))
    probe = PrivateEstimator("snips", epsilon=1.0, delta=1e-5, max_weight=10.0)
    stat = probe.statistic(log, pi)[0]
    assert stat[0] == 0.0 and stat[1] == 2.0 * n_rounds
    sigma = probe.multiplier * probe.sensitivity(n_rounds)
    assert 10.0 * sigma < stat[1]
    rng = np.random.default_rng(20261129)
    noise = np.array([probe.estimate(log, pi, rng=rng).released for _ in range(calls)])
    assert_chi_square("snips estimate()", (noise - stat) / sigma)


# -- dp-hdb: its arms' DP-POFW selections stepped together (ArmSteps) ------------------------
@pytest.mark.heavy
@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_dp_hdb_arm_selections_draw_the_plans_laplace_scale(backend):
    # dim 1, t0 = 1, two arms: rounds 1 and 2 are forced (arm 0, arm 1), round 3 steps both
    # arms' optimizers together (the fused kernel on the compiled path; arm 1 takes the
    # synthetic sample). After it, each arm's direction d (``last_direction``, exact) fixes
    # the gap 2 r |d| of its two vertex scores, so each selection picks the worse vertex
    # +r sign(d) with the known probability (2 + gap/b) exp(-gap/b) / 4, b = b_2 of the arm's
    # plan. The count of worse picks over the 2n selections has mean sum p and variance
    # sum p (1 - p) (independent selections); the 1e-9 region is 6.1 sd around the mean
    # (normal approximation of a sum of 400,000 bounded terms)
    n, r = 200_000, 1.0
    agent = DPHDB(n_arms=2, dim=1, horizon=3, epsilon=200.0, delta=0.2, t0=1, radius=r,
                  backend=backend)
    agent.reset(n, np.random.default_rng(20261129))
    x, y = np.ones((n, 1)), -np.ones(n)
    for arm in (0, 1):
        agent.update(x, np.full(n, arm), y)
    before = agent.estimates[:, :, 0].copy()
    agent.update(x, np.zeros(n, dtype=np.int64), y)
    after = agent.estimates[:, :, 0]
    p, worse = [], []
    for k, opt in enumerate(agent.arm_optimizers):
        d = opt.last_direction[:, 0]
        assert np.all(after[:, k] != before[:, k]) and np.all(d != 0.0)
        ratio = 2.0 * r * np.abs(d) / opt.noise_scale(2)
        p.append((2.0 + ratio) * np.exp(-ratio) / 4.0)
        # theta_3 = (1 - eta_2) theta_2 + eta_2 v: v's sign is that of theta_3 - (1-eta_2) theta_2
        v_sign = np.sign(after[:, k] - (1.0 - 1.0 / 3.0) * before[:, k])
        worse.append(v_sign == np.sign(d))
        # the two-arms split: each arm's optimizer runs at (epsilon/2, delta/2)
        assert opt.kappa == DPPOFW("squared", dim=1, radius=r, horizon=agent.arm_horizon,
                                   epsilon=100.0, delta=0.1).kappa
    p_all, w_all = np.concatenate(p), np.concatenate(worse)
    mean, sd = p_all.sum(), math.sqrt(float(np.sum(p_all * (1.0 - p_all))))
    z = stats.norm.isf(P_VALUE / 2)
    count = int(w_all.sum())
    assert abs(count - mean) <= z * sd, (f"dp-hdb ({backend}): {count} worse picks, expected "
                                         f"{mean:.0f} +/- {z * sd:.0f}")


@pytest.mark.heavy
def test_dp_tofw_generalized_gaussian_nodes_draw_the_plans_sigma_plus():
    # 1 < p < 2: the nodes are G_{||.||_q}(0, sigma_+^2), density proportional to
    # exp(-||z||_q^2 / (2 sigma_+^2)) with q = q_plus; by polar integration ||z||_q^2 /
    # sigma_+^2 ~ chi-square(d) (Han et al. 2022, Lemma 3.1; the sampler's docstring), so the
    # sum over R replications is chi-square(R d). Only the releases at t = 1, 2, 4 are a
    # single node (a sum of nodes is not of that law). Zero data: the prefix sum is the noise.
    d, horizon, reps = 20, 4, 1000
    opt = DPTOFW("squared", dim=d, p=1.5, radius=1.0, horizon=horizon, epsilon=1.0,
                 delta=1e-5)
    q = opt.noise_geometry.q_plus
    assert not opt.gaussian_branch and q != 2.0
    sigma_plus = opt.sigma_plus
    opt.reset(n_reps=reps, rng=20261129)
    for t in range(1, horizon + 1):
        opt.step(np.zeros((reps, d)), np.zeros(reps))
        if t.bit_count() != 1:
            continue
        prefix = opt.last_direction * (t + 1.0)
        norm_q = np.sum(np.abs(prefix) ** q, axis=1) ** (1.0 / q)
        stat = float(np.sum((norm_q / sigma_plus) ** 2))
        n = reps * d
        lo, hi = stats.chi2.ppf(P_VALUE / 2, n), stats.chi2.isf(P_VALUE / 2, n)
        assert lo <= stat <= hi, (f"dp-tofw (q = {q:.3f}) release t={t}: ratio {stat / n:.3f}, "
                                  f"outside [{lo / n:.3f}, {hi / n:.3f}]")


@pytest.mark.heavy
def test_dp_ucb_wishart_releases_draw_the_plans_degrees():
    # Wishart nodes: on zero data the release M_t + N_t plus its top-up is a sum of
    # independent Wishart_n(L~^2 I, .) matrices with m k degrees in all (popcount(t) nodes of
    # k, the top-up (m - popcount(t)) k; module docstring of dp_ucb). A diagonal entry over
    # L~^2 is then chi-square(m k), independent across entries (rows of the Bartlett
    # factor are disjoint) and replications: the sum over the R n diagonal entries is
    # chi-square(R n m k) (exact quantiles; a cut of the scale by 0.8 moves it by -20%)
    n_arms, dim, horizon, reps = 2, 2, 7, 4000
    agent = DPUCB(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=1.0, delta=1e-5,
                  noise="wishart", backend="numpy")
    k, m = agent.constants["k"], agent.constants["m"]
    assert k == agent._plan.scales["degrees"]
    scale = agent.l_tilde ** 2
    agent.reset(reps, np.random.default_rng(20261129))
    x = np.zeros((reps, dim))
    n = agent.feature_dim + 1
    df = reps * n * m * k
    lo, hi = stats.chi2.ppf(P_VALUE / 2, df), stats.chi2.isf(P_VALUE / 2, df)
    for t in range(1, horizon + 1):
        agent.update(x, agent.act(x), np.zeros(reps))
        diag = np.diagonal(agent._release, axis1=1, axis2=2)
        if agent._use_topup:
            diag = diag + np.diagonal(agent._topup, axis1=1, axis2=2)
        assert diag.size * m * k == df
        stat = float(np.sum(diag) / scale)
        assert lo <= stat <= hi, (f"dp-ucb wishart release t={t}: ratio {stat / df:.5f}, "
                                  f"outside [{lo / df:.5f}, {hi / df:.5f}]")

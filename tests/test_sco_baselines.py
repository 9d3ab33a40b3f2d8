"""Tests of the DP-SCO baselines of Table 5.1: NoisySFW, LocalMD, NoisySGD.

Expected values are recomputed here from the formulas of ``sco-baselines.md`` (not read back
from the module), so a wrong constant in the module makes these tests fail.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from dpbandits.geometry import gradient_rows, lp_norm
from dpbandits.losses import HuberLoss, LogisticLoss, SquaredLoss
from dpbandits.optim import LocalMD, NoisySFW, NoisySGD
from dpbandits.optim import gradients as optim_gradients  # where per-sample clipping lives
from dpbandits.optim.batch import _noisy_sgd_kernel as kernel
from dpbandits.optim.batch import local_md, noisy_sfw
from dpbandits.optim.batch import oracle as oracle_module
from dpbandits.privacy.accounting import SCO_BASELINE_ORDERS, GeneralizedGaussianDpEvent

LOSS = SquaredLoss()


def section_5_2_data(rng, n, d, p, n_reps=None, nu=0.05):
    """x ~ N(0, 0.05^2 I) normalized to unit l_q norm, theta ~ N(0, 0.05^2 I) normalized to
    unit l_p norm, y = <x, theta> + N(0, nu^2)."""
    q = 1.0 if math.isinf(p) else p / (p - 1.0)
    lead = () if n_reps is None else (n_reps,)
    X = rng.normal(0.0, 0.05, (*lead, n, d))
    X /= np.linalg.norm(X, q, axis=-1, keepdims=True)
    theta = rng.normal(0.0, 0.05, (*lead, d))
    theta /= np.linalg.norm(theta, p, axis=-1, keepdims=True)
    y = np.einsum("...nd,...d->...n", X, theta) + rng.normal(0.0, nu, (*lead, n))
    return X, y, theta


def rdp_replace_one(n, b, z, steps, delta):
    """Independent recomputation of a subsampled-Gaussian ledger (replace-one)."""
    acc = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = dp_accounting.SampledWithoutReplacementDpEvent(n, b, dp_accounting.GaussianDpEvent(z))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return acc.get_epsilon(delta)


# =============================================================================== NoisySFW
def test_noisy_sfw_noise_equals_formula_and_is_the_noise_drawn(monkeypatch):
    n, d, p, eps, L0, L1, lr, r = 1600, 20, 1.5, 1.0, 3.0, 1.0, 0.5, 2.0
    delta = 1.0 / n
    q = p / (p - 1)
    kappa = min(q - 1, math.e**2 * (math.log(d) - 1))  # = 2 here (log d > 2)
    M = 2 * r
    eta = lr * math.log(n) / (2 * math.sqrt(n))
    sigma0 = 4 * math.sqrt(2 * kappa) * L0 * math.sqrt(math.log(1 / delta)) / (n * eps)
    sigma = math.sqrt(32 * kappa * L1**2 * M**2 * eta**2 * math.log(1 / delta) / (n * eps**2))

    opt = NoisySFW(p=p, radius=r, epsilon=eps, delta=delta, lipschitz=L0, smoothness=L1,
                   lr_scale=lr)
    sch = opt.schedule(n, d)
    assert (sch.n_first, sch.batch_size, sch.n_rounds) == (800, 20, 39)
    assert sch.kappa == pytest.approx(kappa, rel=1e-12)
    assert sch.eta == pytest.approx(eta, rel=1e-12)
    assert sch.sigma0 == pytest.approx(sigma0, rel=1e-12)
    assert sch.sigma == pytest.approx(sigma, rel=1e-12)

    calls = []
    original = noisy_sfw.generalized_gaussian_noise

    def spy(rng, s, q_plus, dim, size=()):
        calls.append((s, q_plus, dim, size))
        return original(rng, s, q_plus, dim, size)

    monkeypatch.setattr(noisy_sfw, "generalized_gaussian_noise", spy)
    X, y, _ = section_5_2_data(np.random.default_rng(0), n, d, p)
    res = opt.fit(LOSS, X, y, np.random.default_rng(1), n_reps=3)
    assert [c[0] for c in calls] == pytest.approx([sigma0, sigma], rel=1e-12)
    assert all(c[1] == pytest.approx(q) and c[2] == d for c in calls)  # ||.||_+ = l_3
    assert calls[0][3] == (3,) and calls[1][3] == (39, 3)
    assert res.history.shape == (3, 41, d) and res.privacy.epsilon == eps
    assert res.n_gradient_evals == 800 + 2 * 20 * 39


def test_noisy_sfw_gaussian_branch_ledger_is_an_exact_gaussian():
    n, d, eps, delta = 400, 10, 1.0, 1e-3
    opt = NoisySFW(p=2.0, radius=1.0, epsilon=eps, delta=delta, lipschitz=1.0)
    event = opt.ledger_for(n, d)
    assert isinstance(event, dp_accounting.GaussianDpEvent)
    # p = 2: kappa = 1, sigma / s = sqrt(2 log(1/delta)) / eps, unless raised to the exact value
    z = math.sqrt(2 * math.log(1 / delta)) / eps
    assert event.noise_multiplier >= z * (1 - 1e-12)
    # the ledger certifies the target by the exact Gaussian formula (Balle & Wang 2018)
    from dpbandits.privacy.mechanisms import gaussian_mechanism_delta

    assert gaussian_mechanism_delta(event.noise_multiplier, eps, 1.0) <= delta
    # generalized-Gaussian branch: the custom (unsupported) event carries Lemma 2.1's ratio
    gg = NoisySFW(p=1.5, radius=1.0, epsilon=eps, delta=delta).ledger_for(n, 20)
    assert isinstance(gg, GeneralizedGaussianDpEvent)
    assert gg.sigma_over_sensitivity == pytest.approx(
        math.sqrt(2 * 2.0 * math.log(1 / delta)) / eps)


def test_noisy_sfw_lemma_2_1_not_trusted_above_epsilon_one():
    ok = NoisySFW(p=1.5, radius=1.0, epsilon=1.0, delta=1e-3).privacy_for(400, 20)
    assert ok.certified and ok.epsilon == 1.0 and ok.neighbouring == "replace-one"
    high = NoisySFW(p=1.5, radius=1.0, epsilon=4.0, delta=1e-3).privacy_for(400, 20)
    assert not high.certified and "Lemma 2.1" in high.caveat
    # the Gaussian branch is checked exactly instead, at any epsilon
    assert NoisySFW(p=2.0, radius=1.0, epsilon=4.0, delta=1e-3).privacy_for(400, 20).certified


def test_noisy_sfw_without_noise_converges():
    rng = np.random.default_rng(3)
    n, d, p = 10_000, 5, 1.5
    X, y, theta = section_5_2_data(rng, n, d, p)
    res = NoisySFW(p=p, radius=2.0, epsilon=math.inf, lipschitz=3.0, lr_scale=0.3).fit(
        LOSS, X, y, np.random.default_rng(0))
    assert res.privacy.notion == "none"

    def risk(th):
        return np.mean((X @ th.T - y[:, None]) ** 2, axis=0)

    gap = risk(res.history[0]) - risk(theta[None])
    assert gap[-1] < 0.05 * gap[0]  # SubOpt below 5% (about 0.5% in practice)
    assert np.all(res.n_clipped == 0)


# =============================================================================== LocalMD
def expected_local_md(n, d, p, r, eps, delta, L0, lr, c):
    q = p / (p - 1)
    D = 2 * r
    eta = lr * D / L0 * min(1 / math.sqrt((p - 1) * n),
                            eps / math.sqrt(d * math.log(1 / delta) * (1 + math.log(d))))
    out, start = [], 0
    for i in range(1, int(math.log2(n)) + 1):
        eps_i, n_i, eta_i = 2.0**-i * eps, int(2.0**-i * n), 2.0 ** (-4 * i) * eta
        b_i = int(max(math.sqrt(n_i / math.log(d)), math.sqrt(d / eps_i)))
        T_i = int(n_i**2 / b_i**2)
        if T_i <= 1:
            break
        sigma_i = c * L0 * math.sqrt(d ** (1 - 2 / q) * math.log(1 / delta)) / (b_i * eps_i)
        out.append(dict(n=n_i, start=start, b=b_i, T=T_i, eta=eta_i, sigma=sigma_i,
                        radius=2 * L0 * eta_i * n_i * (p - 1), eps=eps_i))
        start += n_i
    return eta, out


def test_local_md_phases_batches_radii_and_noise_follow_the_formulas():
    args = dict(n=4096, d=10, p=1.5, r=2.0, eps=1.0, delta=1 / 4096, L0=3.0, lr=100.0, c=100.0)
    eta, want = expected_local_md(**args)
    opt = LocalMD(p=1.5, radius=2.0, epsilon=1.0, delta=1 / 4096, lipschitz=3.0,
                  lr_scale=100.0, noise_constant=100.0)
    eta_got, got = opt.phases(4096, 10)
    assert eta_got == pytest.approx(eta, rel=1e-12)
    assert len(got) == len(want) >= 3
    for g, w in zip(got, want, strict=True):
        assert (g.n_samples, g.start, g.batch_size, g.n_steps) == (w["n"], w["start"], w["b"],
                                                                    w["T"])
        assert g.eta == pytest.approx(w["eta"], rel=1e-12)
        assert g.sigma == pytest.approx(w["sigma"], rel=1e-12)
        assert g.loc_radius == pytest.approx(w["radius"], rel=1e-12)
        assert g.epsilon == pytest.approx(w["eps"], rel=1e-12)
    # phases use disjoint consecutive blocks of the data
    assert got[-1].start + got[-1].n_samples <= 4096


def test_local_md_noise_scale_end_to_end():
    # Zero features => zero gradients: with p = 2 the mirror map is Euclidean, so phase 1's
    # output is the average of u_t = -eta_1 sigma_1 (xi_1 + ... + xi_t), whose per-coordinate
    # variance is eta^2 sigma^2 (T+1)(2T+1)/(6T).
    n, d, R = 64, 2, 4000
    opt = LocalMD(p=2.0, radius=1.0, epsilon=1.0, delta=0.01, lipschitz=1.0, lr_scale=1.0,
                  noise_constant=1.0)
    _, phases = opt.phases(n, d)
    ph = phases[0]
    assert (ph.batch_size, ph.n_steps) == (6, 28)
    sigma = 1.0 * 1.0 * math.sqrt(math.log(100)) / (6 * 0.5)
    assert ph.sigma == pytest.approx(sigma, rel=1e-12)
    res = opt.fit(LOSS, np.zeros((n, d)), np.zeros(n), np.random.default_rng(5), n_reps=R)
    T = ph.n_steps
    want = ph.eta * sigma * math.sqrt((T + 1) * (2 * T + 1) / (6 * T))
    x1 = res.history[:, 1]
    assert np.max(lp_norm(x1, 2.0)) < ph.loc_radius  # localization never active here
    assert np.std(x1) == pytest.approx(want, rel=0.04)


@pytest.mark.heavy
def test_local_md_stays_in_localization_balls_and_counts_clipping():
    rng = np.random.default_rng(2)
    X, y, _ = section_5_2_data(rng, 512, 5, 1.5)
    y = y * 40  # large responses: gradients exceed L0 and must be clipped
    opt = LocalMD(p=1.5, radius=2.0, epsilon=1.0, delta=1 / 512, lipschitz=1.0, lr_scale=1e3)
    res = opt.fit(LOSS, X, y, np.random.default_rng(0), n_reps=2)
    _, phases = opt.phases(512, 5)
    for k, ph in enumerate(phases, start=1):
        step = lp_norm(res.history[:, k] - res.history[:, k - 1], 1.5)
        assert np.all(step <= ph.loc_radius * (1 + 1e-9))
    assert np.all(res.n_clipped > 0)
    assert res.n_gradient_evals == sum(ph.batch_size * ph.n_steps for ph in phases)
    # privacy = what the replace-one RDP accountant certifies for the phases composed, each
    # a subsampled Gaussian with noise multiplier c sqrt(log(1/delta)) / (2 eps_i)
    events = [dp_accounting.SelfComposedDpEvent(dp_accounting.SampledWithoutReplacementDpEvent(
        ph.n_samples, ph.batch_size, dp_accounting.GaussianDpEvent(
            100.0 * math.sqrt(math.log(512)) / (2 * ph.epsilon))), ph.n_steps) for ph in phases]
    acc = rdp.RdpAccountant(orders=SCO_BASELINE_ORDERS,
                            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_accounting.ComposedDpEvent(events))
    assert res.privacy.epsilon == pytest.approx(acc.get_epsilon(1 / 512), rel=1e-9)
    assert res.privacy.epsilon < 1.0 and res.privacy.delta == 1 / 512


def test_sample_without_replacement_is_uniform_and_distinct():
    rng = np.random.default_rng(0)
    for n, b in [(10, 3), (6, 5)]:  # rejection path and key-sorting path
        idx = local_md.sample_without_replacement(rng, n, b, (20_000,))
        assert idx.shape == (20_000, b)
        assert all(len(set(row)) == b for row in idx[:500])
        freq = np.bincount(idx.ravel(), minlength=n) / idx.size
        assert np.allclose(freq, 1 / n, atol=0.01)


# =============================================================================== NoisySGD
def test_noisy_sgd_sigma_and_step_equal_the_paper_formulas():
    n, d, eps, delta, L0, r, lr = 200, 7, 1.0, 1 / 200, 3.0, 2.0, 0.8
    opt = NoisySGD(p=math.inf, radius=r, epsilon=eps, delta=delta, lipschitz=L0, lr_scale=lr)
    assert opt.sigma(n) == pytest.approx(math.sqrt(8 * L0**2 * math.log(1 / delta) / eps**2))
    eta = lr * r / (L0 * n * max(math.sqrt(n), math.sqrt(d * math.log(1 / delta)) / eps))
    assert opt.step_size(n, d) == pytest.approx(eta, rel=1e-12)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_noisy_sgd_noise_scale_end_to_end(backend):
    # Zero features and a huge box: theta_t = -eta sigma (xi_1 + ... + xi_t), and the output
    # (average of theta_1..theta_T) has per-coordinate variance eta^2 sigma^2 (T+1)(2T+1)/(6T).
    n, d, T, R = 10, 3, 20, 3000
    opt = NoisySGD(p=math.inf, radius=1e6, epsilon=1.0, delta=0.01, lipschitz=1.0,
                   lr_scale=1e-6, n_steps=T, backend=backend)
    res = opt.fit(LOSS, np.zeros((n, d)), np.zeros(n), np.random.default_rng(4), n_reps=R)
    assert np.max(np.abs(res.extra["iterates"])) < 1e6 / 100  # the box is never reached
    sigma = math.sqrt(8 * math.log(100))
    want = opt.step_size(n, d) * sigma * math.sqrt((T + 1) * (2 * T + 1) / (6 * T))
    assert np.std(res.theta) == pytest.approx(want, rel=0.04)


@pytest.mark.heavy
def test_noisy_sgd_privacy_is_the_replace_one_accountant_and_calibration_meets_target():
    n, delta = 50, 1 / 50
    theorem = NoisySGD(epsilon=1.0, delta=delta, lipschitz=2.0)
    z_th = math.sqrt(2 * math.log(1 / delta))
    assert theorem.noise_multiplier(n) == pytest.approx(z_th)
    assert theorem.privacy_for(n).epsilon == pytest.approx(
        rdp_replace_one(n, 1, z_th, n * n, delta), rel=0.02)
    assert theorem.privacy_for(n).epsilon > 1.0  # the paper's sigma does not give eps=1 here

    acc = NoisySGD(epsilon=1.0, delta=delta, lipschitz=2.0, calibration="accountant")
    z = acc.noise_multiplier(n)
    assert rdp_replace_one(n, 1, z, n * n, delta) <= 1.0
    assert rdp_replace_one(n, 1, 0.99 * z, n * n, delta) > 1.0
    assert acc.sigma(n) == pytest.approx(2 * 2.0 * z)
    assert acc.privacy_for(n).epsilon <= 1.0


def test_noisy_sgd_without_noise_converges_to_the_minimizer():
    # Easy problem: features are signed basis vectors (||x||_1 = 1), noiseless responses.
    rng = np.random.default_rng(0)
    n, d = 60, 3
    X = np.eye(d)[rng.integers(0, d, n)] * rng.choice([-1.0, 1.0], (n, 1))
    theta = np.array([0.5, -1.0, 0.25])
    y = X @ theta
    opt = NoisySGD(p=math.inf, radius=2.0, epsilon=math.inf, lipschitz=3.0, lr_scale=40.0,
                   n_history=10)
    res = opt.fit(LOSS, X, y, np.random.default_rng(1))
    err = np.linalg.norm(res.history[0] - theta, axis=-1)
    assert err[-1] < 0.05 and err[-1] < 0.2 * err[0]
    assert res.privacy.notion == "none"


@pytest.mark.parametrize("p, loss", [(math.inf, SquaredLoss()), (2.0, LogisticLoss()),
                                     (math.inf, HuberLoss(0.5))])
def test_numba_kernel_matches_numpy_path(p, loss):
    rng = np.random.default_rng(7)
    R, n, d = 3, 25, 4
    X, y, _ = section_5_2_data(rng, n, d, p, n_reps=R)
    y = 3 * y  # make clipping fire
    if isinstance(loss, LogisticLoss):
        y = (y > 0).astype(float)
    kw = dict(p=p, radius=0.5, epsilon=1.0, delta=0.01, lipschitz=0.05, lr_scale=20.0,
              n_history=7)
    a = NoisySGD(backend="numba", **kw).fit(loss, X, y, np.random.default_rng(11))
    b = NoisySGD(backend="numpy", **kw).fit(loss, X, y, np.random.default_rng(11))
    assert a.extra["backend"] == "numba" and b.extra["backend"] == "numpy"
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.history, b.history, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.extra["iterates"], b.extra["iterates"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(a.n_clipped, b.n_clipped)
    assert np.all(a.n_clipped > 0)


def test_kernel_python_reference_equals_compiled():
    if not kernel.HAVE_NUMBA:  # pragma: no cover
        pytest.skip("numba not installed")
    rng = np.random.default_rng(0)
    R, n, d, c = 2, 9, 3, 40
    X = rng.normal(size=(R, n, d))
    y = rng.normal(size=(R, n))
    g = gradient_rows(X, 1.0, 0.7)
    idx = rng.integers(0, n, (R, c))
    noise = rng.standard_normal((R, c, d))
    outs = []
    for fn in (kernel.sgd_chunk, kernel.sgd_chunk_python):
        th, acc, nc = np.zeros((R, d)), np.zeros((R, d)), np.zeros(R, dtype=np.int64)
        fn(th, acc, X, g.rows, y, g.norms, g.unclipped, g.clipped, idx, noise, True, 0.3,
           0.05, 0.7, g.limit, 1.0, kernel.PROJ_LINF, kernel.LOSS_SQUARED, 1.0, nc)
        outs.append((th, acc, nc))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_noisy_sgd_one_step_clips_gradient_to_l0_in_the_dual_norm(backend):
    # theta_0 = 0, one step without noise: theta_1 = -eta clip(grad) = eta y x (scaled).
    X = np.array([[0.5, -0.25, 0.25]])  # ||x||_1 = 1
    y = np.array([10.0])  # |psi| ||x||_1 = 10 > L0 = 2
    opt = NoisySGD(p=math.inf, radius=1e6, epsilon=math.inf, lipschitz=2.0, n_steps=1,
                   backend=backend)
    res = opt.fit(LOSS, X, y, np.random.default_rng(0))
    g = -res.theta[0] / opt.step_size(1, 3)
    assert lp_norm(g, 1.0) == pytest.approx(2.0, rel=1e-12)
    np.testing.assert_allclose(g, -2.0 * X[0] / 1.0, rtol=1e-12)
    assert res.n_clipped.tolist() == [1]


def test_clipped_gradients_never_exceed_l0_and_are_counted(monkeypatch):
    seen = []
    original = optim_gradients.clip_to_norm

    def spy(x, q, bound):
        out, was = original(x, q, bound)
        seen.append((lp_norm(out, q).max(), bound, int(np.sum(was))))
        return out, was

    monkeypatch.setattr(optim_gradients, "clip_to_norm", spy)
    rng = np.random.default_rng(1)
    X, y, _ = section_5_2_data(rng, 400, 5, 1.5)
    y = 20 * y
    res = NoisySFW(p=1.5, radius=2.0, epsilon=1.0, delta=1 / 400, lipschitz=0.5,
                   lr_scale=0.5).fit(LOSS, X, y, np.random.default_rng(0), n_reps=2)
    assert seen and all(m <= b * (1 + 1e-12) for m, b, _ in seen)
    assert res.n_clipped.sum() == sum(c for _, _, c in seen) > 0
    # NoisySGD's steps clip through the gradient oracle's coefficients (the exact bound on
    # every clipped gradient: test_gradient_clip_extremes.py); its count is theirs
    counted = []
    coefficients = oracle_module.clipped_coefficients

    def count(*args):
        coef, was = coefficients(*args)
        counted.append(int(was.sum()))
        return coef, was

    monkeypatch.setattr(oracle_module, "clipped_coefficients", count)
    res = NoisySGD(p=math.inf, radius=2.0, epsilon=1.0, delta=0.01, lipschitz=0.05,
                   n_steps=200, backend="numpy").fit(LOSS, X, y, np.random.default_rng(0))
    assert len(counted) == 200 and res.n_clipped.sum() == sum(counted) > 0


def test_noisy_sfw_difference_clipping_enforces_smoothness_bound():
    rng = np.random.default_rng(4)
    X, y, _ = section_5_2_data(rng, 400, 5, 1.5)
    # a smoothness constant far below the loss's true one (1): differences must be clipped
    res = NoisySFW(p=1.5, radius=2.0, epsilon=math.inf, lipschitz=3.0, smoothness=0.01).fit(
        LOSS, X, y, np.random.default_rng(0))
    assert res.extra["n_diff_clipped"].sum() > 0


# =============================================================================== shared
@pytest.mark.parametrize("make", [
    lambda: NoisySFW(p=1.5, radius=2.0, epsilon=1.0, delta=1e-3, lipschitz=3.0),
    lambda: LocalMD(p=1.5, radius=2.0, epsilon=1.0, delta=1e-3, lipschitz=3.0, lr_scale=1e3),
    lambda: NoisySGD(p=math.inf, radius=2.0, epsilon=1.0, delta=1e-3, lipschitz=3.0,
                     backend="numba"),
    lambda: NoisySGD(p=math.inf, radius=2.0, epsilon=1.0, delta=1e-3, lipschitz=3.0,
                     n_steps=300, backend="numpy"),
])
def test_same_seed_bit_identical_and_replications_independent(make):
    rng = np.random.default_rng(9)
    X, y, _ = section_5_2_data(rng, 100, 5, 1.5)
    a = make().fit(LOSS, X, y, np.random.default_rng(123), n_reps=2)
    b = make().fit(LOSS, X, y, np.random.default_rng(123), n_reps=2)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.history, b.history)
    np.testing.assert_array_equal(a.n_clipped, b.n_clipped)
    assert not np.array_equal(a.theta[0], a.theta[1])  # shared data, independent noise
    c = make().fit(LOSS, X, y, np.random.default_rng(124), n_reps=2)
    assert not np.array_equal(a.theta, c.theta)


def test_per_replication_data_axis():
    rng = np.random.default_rng(0)
    X, y, _ = section_5_2_data(rng, 64, 4, math.inf, n_reps=3)
    res = NoisySGD(radius=2.0, epsilon=1.0, delta=0.01, lipschitz=3.0).fit(
        LOSS, X, y, np.random.default_rng(0))
    assert res.theta.shape == (3, 4) and res.history.shape[0] == 3
    assert np.all(np.abs(res.theta) <= 2.0)


@pytest.mark.parametrize("make, match", [
    (lambda: NoisySFW(p=2.5, radius=1.0, delta=0.1), "p"),
    (lambda: NoisySFW(p=1.0, radius=1.0, delta=0.1), "p"),
    (lambda: LocalMD(p=3.0, radius=1.0, delta=0.1), "p"),
    (lambda: NoisySGD(p=1.5, radius=1.0, delta=0.1), "p"),
    (lambda: NoisySFW(radius=0.0, delta=0.1), "radius"),
    (lambda: NoisySGD(radius=-1.0, delta=0.1), "radius"),
    (lambda: LocalMD(epsilon=0.0, delta=0.1), "epsilon"),
    (lambda: NoisySFW(epsilon=1.0, delta=0.0), "delta"),
    (lambda: NoisySGD(epsilon=1.0, delta=1.5), "delta"),
    (lambda: NoisySFW(delta=0.1, lipschitz=0.0), "lipschitz"),
    (lambda: NoisySFW(delta=0.1, smoothness=-1.0), "smoothness"),
    (lambda: LocalMD(delta=0.1, lr_scale=0.0), "lr_scale"),
    (lambda: LocalMD(delta=0.1, noise_constant=0.0), "noise_constant"),
    (lambda: NoisySGD(delta=0.1, calibration="magic"), "calibration"),
    (lambda: NoisySGD(delta=0.1, backend="gpu"), "backend"),
    (lambda: NoisySGD(delta=0.1, n_steps=0), "n_steps"),
])
def test_invalid_configuration_raises_naming_the_parameter(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_invalid_data_raises_naming_the_parameter():
    opt = NoisySGD(radius=1.0, epsilon=1.0, delta=0.1, n_steps=5)
    X, y = np.ones((6, 2)) / 2, np.zeros(6)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="X"):
        opt.fit(LOSS, np.ones(6), y, rng)
    with pytest.raises(ValueError, match="y"):
        opt.fit(LOSS, X, np.zeros(5), rng)
    with pytest.raises(ValueError, match="n_reps"):
        opt.fit(LOSS, np.ones((2, 6, 2)), np.zeros((2, 6)), rng, n_reps=3)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        opt.fit(LOSS, bad, y, rng)
    with pytest.raises(TypeError, match="rng"):
        opt.fit(LOSS, X, y, 0)
    with pytest.raises(TypeError, match="loss"):
        opt.fit(42, X, y, rng)
    with pytest.raises(ValueError, match="lr_scale"):
        NoisySFW(radius=1.0, delta=0.1, lr_scale=100.0).fit(LOSS, X, y, rng)
    with pytest.raises(ValueError, match="d >= 2"):
        LocalMD(radius=1.0, delta=0.1).fit(LOSS, np.ones((16, 1)), np.zeros(16), rng)
    with pytest.raises(ValueError, match="backend"):
        NoisySGD(p=4.0, radius=1.0, delta=0.1, backend="numba").fit(LOSS, X, y, rng)
    with pytest.raises(RuntimeError, match="fit"):
        _ = NoisySGD(delta=0.1).privacy


@pytest.mark.parametrize("cls", [NoisySFW, LocalMD, NoisySGD])
def test_the_default_delta_is_one_over_n_squared_per_fit(cls):
    """``cls(epsilon=1)`` (delta left at its default None) fits: the target delta is
    ``1/n^2`` of the fit's size, the noise and the guarantee are those of that explicit
    delta, and a non-private run still needs none."""
    rng = np.random.default_rng(0)
    n, d = 40, 3
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    default = cls(epsilon=1.0, n_steps=50) if cls is NoisySGD else cls(epsilon=1.0)
    res = default.fit("squared", X, y, rng=np.random.default_rng(1))
    assert default.privacy.delta == 1.0 / n**2 and default.privacy_for(2 * n, d).delta == (
        1.0 / (2 * n) ** 2)
    explicit = default.clone(delta=1.0 / n**2)
    same = explicit.fit("squared", X, y, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(res.theta, same.theta)
    assert default.privacy.epsilon == explicit.privacy.epsilon
    assert cls(epsilon=math.inf).fit("squared", X, y, rng=np.random.default_rng(1)) is not None
    with pytest.raises(ValueError, match="delta"):
        cls(epsilon=1.0, delta=1.5)

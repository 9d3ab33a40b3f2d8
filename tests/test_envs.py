"""Gymnasium bandit environments: API conformance, seeding, vectorization, statistics."""

import warnings

import gymnasium
import numpy as np
import pytest
from _extras import skip_without_extra
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import dpbandits.envs as envs
from dpbandits.envs import (
    ClassificationBanditEnv,
    ClassificationBanditVectorEnv,
    GLMBanditEnv,
    GLMBanditVectorEnv,
)
from dpbandits.envs._iris import load_iris


def rollout(env, actions):
    """Step a single env through ``actions``; stack obs, rewards and info."""
    out = {"obs": [], "reward": [], "expected": [], "opt": [], "regret": [], "trunc": []}
    for a in actions:
        obs, r, term, trunc, info = env.step(int(a))
        assert term is False
        out["obs"].append(obs)
        out["reward"].append(r)
        out["expected"].append(info["expected_rewards"])
        out["opt"].append(info["optimal_arm"])
        out["regret"].append(info["pseudo_regret"])
        out["trunc"].append(trunc)
    return {k: np.array(v) for k, v in out.items()}


# --------------------------------------------------------------------------------------------
# Gymnasium conformance
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", envs.ENV_IDS)
def test_check_env_passes_for_every_registered_id(env_id):
    skip_without_extra(env_id)
    env = gymnasium.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings count as failures
        check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("kwargs", [
    {"normalization": "l1"},
    {"normalization": "l2", "link": "logistic", "noise": "bernoulli"},
    {"normalization": None, "context": "uniform", "context_low": -2.0, "context_high": 3.0},
    {"normalization": None},
    {"context_cov": np.diag(np.arange(1.0, 6.0)), "theta": "gaussian", "context_mean": 1.0},
    {"context": lambda rng, n: rng.laplace(size=(n, 5))},
    {"theta": np.eye(2, 5), "noise_std": 0.0},
    {"n_arms": 1, "dim": 1, "horizon": 2},  # the checker itself needs horizon > 1
])
def test_check_env_passes_for_configurations(kwargs):
    env = gymnasium.make("dpbandits/GLMBandit-v0", **{"n_arms": 2, "dim": 5, "horizon": 20,
                                                      **kwargs})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if kwargs.get("normalization", "linf") is None and "context" not in kwargs:
            # an unnormalized Gaussian context is unbounded: the Box is (-inf, inf) on purpose
            warnings.filterwarnings("ignore", message=".*infinity")
        check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", envs.ENV_IDS)
def test_make_vec_uses_the_native_vector_env(env_id):
    skip_without_extra(env_id)
    venv = gymnasium.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point")
    base = venv.unwrapped
    assert isinstance(base, GLMBanditVectorEnv | ClassificationBanditVectorEnv)
    K, d = base.single_action_space.n, base.single_observation_space.shape[0]
    assert venv.num_envs == 3
    assert venv.observation_space.shape == (3, d)
    assert venv.action_space.shape == (3,)
    assert base.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = venv.reset(seed=0)
    assert obs.shape == (3, d) and obs.dtype == np.float64 and obs in venv.observation_space
    arms = np.arange(3, dtype=np.int64) % K
    obs, rew, term, trunc, info = venv.step(arms)
    assert obs.shape == (3, d) and obs.dtype == np.float64
    assert rew.shape == (3,) and rew.dtype == np.float64
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_ and term.shape == trunc.shape == (3,)
    # the oracle the harness reads, per replication: (3, K) expected rewards, the best arm
    # and the regret of the arm played
    mu = info["expected_rewards"]
    assert info["optimal_arm"].dtype == np.int64
    np.testing.assert_array_equal(info["optimal_arm"], np.argmax(mu, axis=1))
    np.testing.assert_array_equal(info["pseudo_regret"], mu.max(axis=1) - mu[np.arange(3), arms])
    assert info["_pseudo_regret"].all()
    assert base.horizon >= 1  # the harness reads it


def test_make_accepts_keyword_overrides_and_defaults_are_the_papers():
    env = gymnasium.make("dpbandits/Figure5.1-v0").unwrapped
    cfg = env.config
    assert (env.n_arms, env.dim, env.horizon) == (2, 50, 10_000)
    assert (cfg.sparsity, cfg.normalization, cfg.link, cfg.noise) == (5, "linf", "identity",
                                                                      "gaussian")
    assert cfg.noise_std == 0.05 and cfg.context_std == 0.05
    assert gymnasium.make("dpbandits/Figure5.1-l1-v0").unwrapped.config.normalization == "l1"
    small = gymnasium.make("dpbandits/GLMBandit-v0", dim=7, horizon=9).unwrapped
    assert (small.dim, small.horizon) == (7, 9)
    assert small.observation_space.shape == (7,)


# --------------------------------------------------------------------------------------------
# determinism, vectorization, chunking, common random numbers
# --------------------------------------------------------------------------------------------
def test_same_seed_same_stream_different_seed_different_stream():
    acts = np.random.default_rng(0).integers(0, 2, 50)
    runs = []
    for seed in (3, 3, 4):
        env = GLMBanditEnv(dim=6, horizon=50)
        obs0, _ = env.reset(seed=seed)
        runs.append((obs0, env.theta, rollout(env, acts)))
    (o1, th1, r1), (o2, th2, r2), (o3, th3, r3) = runs
    assert np.array_equal(o1, o2) and np.array_equal(th1, th2)
    for k in r1:
        assert np.array_equal(r1[k], r2[k])
    assert not np.array_equal(o1, o3)
    assert not np.array_equal(r1["obs"], r3["obs"])
    assert not np.array_equal(r1["reward"], r3["reward"])


def test_unseeded_reset_after_seeded_reset_is_reproducible_and_new():
    env = GLMBanditEnv(dim=4, horizon=5)
    env.reset(seed=11)
    a, _ = env.reset()
    env.reset(seed=11)
    b, _ = env.reset()
    c, _ = env.reset()
    assert np.array_equal(a, b)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("env_id", ["dpbandits/Figure5.1-v0", "dpbandits/LogisticBandit-v0",
                                    "dpbandits/IrisBandit-v0"])
def test_vector_replication_r_equals_single_env_seeded_s_plus_r(env_id):
    R, s, T = 4, 20, 12
    venv = gymnasium.make_vec(env_id, num_envs=R, vectorization_mode="vector_entry_point",
                              horizon=T)
    K = venv.unwrapped.single_action_space.n
    acts = np.random.default_rng(1).integers(0, K, size=(2 * T + 1, R))
    obs0, _ = venv.reset(seed=s)
    v_obs, v_rew, v_reg, v_exp = [obs0], [], [], []
    for t in range(2 * T + 1):  # crosses a NEXT_STEP autoreset (unseeded reset of every rep)
        obs, rew, _, _, info = venv.step(acts[t])
        v_obs.append(obs)
        v_rew.append(rew)
        v_reg.append(info.get("pseudo_regret", np.full(R, np.nan)))
        v_exp.append(info.get("expected_rewards", np.full((R, K), np.nan)))
    for r in range(R):
        env = gymnasium.make(env_id, horizon=T).unwrapped
        obs, _ = env.reset(seed=s + r)
        assert np.array_equal(obs, v_obs[0][r])
        for t in range(2 * T + 1):
            if t == T:  # the vector env's autoreset step
                obs, _ = env.reset()
                assert np.array_equal(obs, v_obs[t + 1][r]) and v_rew[t][r] == 0.0
                continue
            obs, rew, _, _, info = env.step(int(acts[t, r]))
            assert np.array_equal(obs, v_obs[t + 1][r])
            assert rew == v_rew[t][r]
            assert info["pseudo_regret"] == v_reg[t][r]
            assert np.array_equal(info["expected_rewards"], v_exp[t][r])


def test_vector_env_matches_gymnasium_sync_vector_env_and_list_seeds():
    kw = {"num_envs": 3, "horizon": 8, "dim": 5}
    native = gymnasium.make_vec("dpbandits/GLMBandit-v0", vectorization_mode="vector_entry_point",
                                **kw)
    sync = gymnasium.make_vec("dpbandits/GLMBandit-v0", vectorization_mode="sync", **kw)
    o1, _ = native.reset(seed=[5, 9, 2])
    o2, _ = sync.reset(seed=[5, 9, 2])
    assert np.array_equal(o1, o2)
    for t in range(20):
        acts = np.array([t % 2, 1, 0])
        a, b = native.step(acts), sync.step(acts)
        for x, y in zip(a[:4], b[:4], strict=True):
            assert np.array_equal(x, y)
        for key in ("expected_rewards", "optimal_arm", "pseudo_regret", "t"):
            assert (key in a[4]) == (key in b[4])
            if key in a[4]:
                assert np.array_equal(a[4][key], b[4][key])


@pytest.mark.parametrize("cls,kwargs", [
    (GLMBanditVectorEnv, {"dim": 7, "horizon": 40}),
    (GLMBanditVectorEnv, {"dim": 7, "horizon": 40, "link": "logistic", "noise": "bernoulli",
                          "context_cov": np.diag(np.linspace(0.5, 2, 7)),
                          "normalization": "l2"}),
    (GLMBanditVectorEnv, {"dim": 7, "horizon": 40, "context": "uniform"}),
    (ClassificationBanditVectorEnv, {"horizon": 400, "noise_std": 0.3}),
])
def test_results_do_not_depend_on_chunk_size(cls, kwargs):
    outs = []
    T = kwargs["horizon"]
    for chunk in (1, 7, T + 1, None):
        venv = cls(num_envs=3, chunk_size=chunk, **kwargs)
        K = venv.single_action_space.n
        acts = np.random.default_rng(2).integers(0, K, size=(T, 3))
        obs, _ = venv.reset(seed=42)
        rec = [obs]
        for t in range(T):
            obs, rew, _, _, info = venv.step(acts[t])
            rec += [obs, rew, info["expected_rewards"], info["pseudo_regret"]]
        outs.append(rec)
    for other in outs[1:]:
        for x, y in zip(outs[0], other, strict=True):
            assert np.array_equal(x, y)


def test_common_random_numbers_contexts_instance_and_noise_independent_of_actions():
    T, R = 60, 4
    recs = []
    for policy in ("zeros", "ones", "random"):
        venv = GLMBanditVectorEnv(num_envs=R, dim=8, horizon=T)
        obs, _ = venv.reset(seed=123)
        theta = venv.theta
        rng = np.random.default_rng(7)
        ctx, resid = [obs], []
        for _ in range(T):
            acts = {"zeros": np.zeros(R, int), "ones": np.ones(R, int),
                    "random": rng.integers(0, 2, R)}[policy]
            obs, rew, _, _, info = venv.step(acts)
            ctx.append(obs)
            resid.append(rew - info["expected_rewards"][np.arange(R), acts])
        recs.append((theta, np.array(ctx), np.array(resid)))
    for theta, ctx, resid in recs[1:]:
        assert np.array_equal(theta, recs[0][0])
        assert np.array_equal(ctx, recs[0][1])
        np.testing.assert_allclose(resid, recs[0][2], rtol=0, atol=1e-15)
    # and different replications get different instances and streams
    assert not np.array_equal(recs[0][0][0], recs[0][0][1])
    assert not np.array_equal(recs[0][1][:, 0], recs[0][1][:, 1])


def test_streams_are_the_documented_seed_sequence_children():
    """E = SeedSequence(seed); E.spawn(3) -> instance, context, noise (module docstring)."""
    T, d, s = 25, 6, 31
    env = GLMBanditEnv(n_arms=3, dim=d, horizon=T, sparsity=2)
    obs, _ = env.reset(seed=s)
    inst, ctx, noise = (np.random.default_rng(c) for c in np.random.SeedSequence(s).spawn(3))
    theta = np.zeros((3, d))
    for k in range(3):
        theta[k, inst.choice(d, size=2, replace=False)] = 0.5
    raw = 0.05 * ctx.standard_normal((T + 1, d))
    x = raw / np.abs(raw).max(axis=1, keepdims=True)
    z = noise.standard_normal(T)
    assert np.array_equal(env.theta, theta)
    assert np.array_equal(obs, x[0])
    arms = np.arange(T) % 3
    out = rollout(env, arms)
    assert np.array_equal(out["obs"], x[1:])
    mu = out["expected"][np.arange(T), arms]
    np.testing.assert_allclose(mu, np.einsum("tj,tj->t", x[:T], theta[arms]), atol=1e-15)
    np.testing.assert_allclose(out["reward"], mu + 0.05 * z, rtol=0, atol=1e-15)


def test_context_and_noise_streams_do_not_depend_on_the_instance():
    T, s = 20, 4
    recs = []
    for kw in ({"theta": "sparse"}, {"theta": "gaussian"}, {"instance_seed": 5},
               {"theta": np.ones((2, 6))}, {"link": "logistic"}):
        env = GLMBanditEnv(dim=6, horizon=T, **kw)
        obs, _ = env.reset(seed=s)
        out = rollout(env, np.zeros(T, int))
        recs.append((np.vstack([obs, out["obs"]]), out["reward"] - out["expected"][:, 0]))
    for ctx, resid in recs[1:]:
        assert np.array_equal(ctx, recs[0][0])
        np.testing.assert_allclose(resid, recs[0][1], rtol=0, atol=1e-15)


def test_instance_seed_fixes_theta_across_seeds_and_replications_only():
    venv = GLMBanditVectorEnv(num_envs=3, dim=10, horizon=5, instance_seed=99)
    o1, _ = venv.reset(seed=0)
    th1 = venv.theta
    o2, _ = venv.reset(seed=1)
    assert np.array_equal(th1, venv.theta)
    assert np.array_equal(th1[0], th1[2])
    assert not np.array_equal(o1, o2)


def test_given_theta_is_used_everywhere():
    theta = np.array([[1.0, 0.0, -1.0], [0.0, 2.0, 0.5]])
    venv = GLMBanditVectorEnv(num_envs=2, n_arms=2, dim=3, horizon=3, theta=theta)
    venv.reset(seed=0)
    assert np.array_equal(venv.theta, np.stack([theta, theta]))


# --------------------------------------------------------------------------------------------
# horizon, truncation, autoreset
# --------------------------------------------------------------------------------------------
def test_truncated_exactly_at_horizon_and_stepping_past_raises():
    env = GLMBanditEnv(dim=3, horizon=4)
    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        env.step(0)
    env.reset(seed=0)
    truncs = [env.step(0)[3] for _ in range(4)]
    assert truncs == [False, False, False, True]
    assert env.t == 4
    with pytest.raises(gymnasium.error.ResetNeeded, match="horizon=4"):
        env.step(0)
    env.reset()
    assert env.step(1)[3] is False
    one = GLMBanditEnv(n_arms=1, dim=1, horizon=1)
    obs, _ = one.reset(seed=0)
    assert abs(obs[0]) == 1.0
    _, _, _, trunc, info = one.step(0)
    assert trunc is True and info["pseudo_regret"] == 0.0 and info["optimal_arm"] == 0


def test_vector_autoreset_modes():
    kw = {"num_envs": 2, "dim": 3, "horizon": 3}
    acts = np.array([0, 1])
    nxt = GLMBanditVectorEnv(**kw)
    nxt.reset(seed=0)
    for _ in range(2):
        assert not nxt.step(acts)[3].any()
    obs_T, _, _, trunc, _ = nxt.step(acts)
    assert trunc.all()
    obs, rew, term, trunc, info = nxt.step(acts)
    assert np.array_equal(rew, np.zeros(2)) and not term.any() and not trunc.any()
    assert info == {} and nxt.t == 0

    same = GLMBanditVectorEnv(autoreset_mode=AutoresetMode.SAME_STEP, **kw)
    same.reset(seed=0)
    for _ in range(2):
        same.step(acts)
    obs, rew, term, trunc, info = same.step(acts)
    assert trunc.all() and np.array_equal(info["final_obs"], obs_T)
    assert "pseudo_regret" in info["final_info"] and same.t == 0
    assert not np.array_equal(obs, obs_T)

    off = GLMBanditVectorEnv(autoreset_mode="Disabled", **kw)
    off.reset(seed=0)
    for _ in range(3):
        off.step(acts)
    with pytest.raises(gymnasium.error.ResetNeeded, match="horizon=3"):
        off.step(acts)


# --------------------------------------------------------------------------------------------
# statistics: contexts, instance, rewards, regret
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def figure51_draws():
    """2000 rounds x 20 replications of the Figure 5.1 instance, uniform random arms."""
    R, T = 20, 2000
    venv = gymnasium.make_vec("dpbandits/Figure5.1-v0", num_envs=R,
                              vectorization_mode="vector_entry_point", horizon=T)
    obs, _ = venv.reset(seed=2024)
    theta = venv.unwrapped.theta
    acts = np.random.default_rng(5).integers(0, 2, size=(T, R))
    ctx, rew, exp, opt, reg = [], [], [], [], []
    for t in range(T):
        ctx.append(obs)
        obs, r, _, _, info = venv.step(acts[t])
        rew.append(r)
        exp.append(info["expected_rewards"])
        opt.append(info["optimal_arm"])
        reg.append(info["pseudo_regret"])
    return {"theta": theta, "ctx": np.array(ctx), "acts": acts, "rew": np.array(rew),
            "exp": np.array(exp), "opt": np.array(opt), "reg": np.array(reg)}


def test_figure51_contexts_have_unit_linf_norm_and_zero_mean(figure51_draws):
    x = figure51_draws["ctx"].reshape(-1, 50)
    assert np.all(np.abs(x).max(axis=1) == 1.0)  # exactly, not approximately
    n = x.shape[0]
    se = x.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(x.mean(axis=0)) < 5 * se)
    # coordinates are exchangeable: each is the max-|.| one about 1/d of the time
    hits = (np.abs(x) == 1.0).mean(axis=0)
    assert np.all(np.abs(hits - 1 / 50) < 5 * np.sqrt((1 / 50) * (1 - 1 / 50) / n))


def test_figure51_theta_is_s_sparse_with_unit_l1_norm(figure51_draws):
    theta = figure51_draws["theta"]  # (R, K, d)
    assert theta.shape == (20, 2, 50)
    assert np.all((theta != 0).sum(axis=2) == 5)
    assert np.all(theta[theta != 0] == 0.2)
    np.testing.assert_allclose(np.abs(theta).sum(axis=2), 1.0, rtol=0, atol=1e-15)
    # the support is random: not the same for all arms / replications
    supports = {tuple(np.flatnonzero(row)) for row in theta.reshape(-1, 50)}
    assert len(supports) > 30


def test_figure51_expected_rewards_and_reward_noise(figure51_draws):
    d = figure51_draws
    # expected rewards are x' theta*_k (identity link), computed independently here
    mu = np.einsum("trj,rkj->trk", d["ctx"], d["theta"])
    np.testing.assert_allclose(d["exp"], mu, rtol=0, atol=1e-14)
    chosen = np.take_along_axis(d["exp"], d["acts"][..., None], axis=2)[..., 0]
    resid = (d["rew"] - chosen).ravel()
    n, sigma = resid.size, 0.05
    assert abs(resid.mean()) < 5 * sigma / np.sqrt(n)
    # sd of the sample sd is about sigma / sqrt(2n)
    assert abs(resid.std() - sigma) < 5 * sigma / np.sqrt(2 * n)


def test_pseudo_regret_matches_the_definition(figure51_draws):
    d = figure51_draws
    chosen = np.take_along_axis(d["exp"], d["acts"][..., None], axis=2)[..., 0]
    assert np.array_equal(d["reg"], d["exp"].max(axis=2) - chosen)
    assert np.all(d["reg"] >= 0)
    assert np.array_equal(d["opt"], d["exp"].argmax(axis=2))
    on_opt = d["acts"] == d["opt"]
    assert on_opt.any() and (~on_opt).any()
    assert np.all(d["reg"][on_opt] == 0.0)
    # the optimal arm maximizes x' theta* (the link is increasing)
    lin = np.einsum("trj,rkj->trk", d["ctx"], d["theta"])
    assert np.array_equal(d["opt"], lin.argmax(axis=2))


def test_pseudo_regret_zero_for_optimal_arm_single_env():
    """Two envs on one seed see the same contexts (CRN): play the arm the first reveals."""
    kw = {"n_arms": 4, "dim": 6, "horizon": 30, "link": "logistic", "noise": "bernoulli"}
    probe, player = GLMBanditEnv(**kw), GLMBanditEnv(**kw)
    probe.reset(seed=9)
    player.reset(seed=9)
    for _ in range(30):
        _, _, _, _, info = probe.step(0)
        mu = info["expected_rewards"]
        assert info["pseudo_regret"] == mu.max() - mu[0] >= 0
        _, _, _, _, info_opt = player.step(info["optimal_arm"])
        assert np.array_equal(info_opt["expected_rewards"], mu)
        assert info_opt["pseudo_regret"] == 0.0


def test_logistic_bernoulli_rewards_have_the_stated_mean():
    R, T = 50, 400
    venv = GLMBanditVectorEnv(num_envs=R, n_arms=3, dim=10, horizon=T, link="logistic",
                              noise="bernoulli", theta_scale=4.0)
    obs, _ = venv.reset(seed=8)
    theta = venv.theta
    acts = np.random.default_rng(1).integers(0, 3, size=(T, R))
    p, r = [], []
    for t in range(T):
        mu = 1 / (1 + np.exp(-np.einsum("rj,rkj->rk", obs, theta)))
        obs, rew, _, _, info = venv.step(acts[t])
        np.testing.assert_allclose(info["expected_rewards"], mu, rtol=1e-12, atol=0)
        p.append(mu[np.arange(R), acts[t]])
        r.append(rew)
    p, r = np.array(p).ravel(), np.array(r).ravel()
    assert set(np.unique(r)) <= {0.0, 1.0}
    se = np.sqrt(np.sum(p * (1 - p))) / p.size
    assert abs(r.mean() - p.mean()) < 5 * se
    # calibration: low- and high-probability rounds separately
    for sel in (p < 0.3, p > 0.7):
        assert sel.sum() > 500
        se = np.sqrt(np.sum(p[sel] * (1 - p[sel]))) / sel.sum()
        assert abs(r[sel].mean() - p[sel].mean()) < 5 * se


@pytest.mark.parametrize("norm,p", [("l1", 1), ("l2", 2), ("linf", np.inf)])
def test_normalizations_give_unit_norm(norm, p):
    venv = GLMBanditVectorEnv(num_envs=5, dim=9, horizon=50, normalization=norm)
    obs, _ = venv.reset(seed=0)
    xs = [obs] + [venv.step(np.zeros(5, int))[0] for _ in range(50)]
    x = np.concatenate(xs)
    np.testing.assert_allclose(np.linalg.norm(x, ord=p, axis=1), 1.0, rtol=1e-13)


def test_gaussian_contexts_with_covariance_have_the_stated_law():
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    venv = GLMBanditVectorEnv(num_envs=40, dim=3, horizon=500, normalization=None,
                              context_cov=cov, context_mean=mean)
    obs, _ = venv.reset(seed=1)
    x = np.concatenate([obs] + [venv.step(np.zeros(40, int))[0] for _ in range(500)])
    n = x.shape[0]
    assert np.all(np.abs(x.mean(axis=0) - mean) < 5 * np.sqrt(np.diag(cov) / n))
    # entries of the sample covariance have sd <= sqrt(2/n) * max variance
    assert np.abs(np.cov(x.T) - cov).max() < 5 * np.sqrt(2 / n) * 2.0


def test_uniform_contexts_stay_in_the_box_and_callable_sampler_is_used():
    venv = GLMBanditVectorEnv(num_envs=10, dim=4, horizon=200, context="uniform",
                              context_low=[0, 1, 2, 3], context_high=[1, 2, 3, 4],
                              normalization=None)
    obs, _ = venv.reset(seed=0)
    x = np.concatenate([obs] + [venv.step(np.zeros(10, int))[0] for _ in range(200)])
    lo, hi = np.arange(4.0), np.arange(4.0) + 1
    assert np.all((x >= lo) & (x <= hi))
    assert np.all(np.abs(x.mean(axis=0) - (lo + 0.5)) < 5 * np.sqrt(1 / 12 / x.shape[0]))

    env = GLMBanditEnv(dim=3, horizon=5, normalization=None,
                       context=lambda rng, n: np.tile([1.0, 2.0, 3.0], (n, 1)))
    obs, _ = env.reset(seed=0)
    assert np.array_equal(obs, [1.0, 2.0, 3.0])


# --------------------------------------------------------------------------------------------
# dataset bandit
# --------------------------------------------------------------------------------------------
def test_iris_bandit_rewards_labels_and_row_order():
    X, y = load_iris()
    assert X.shape == (150, 4) and np.array_equal(np.bincount(y), [50, 50, 50])
    env = gymnasium.make("dpbandits/IrisBandit-v0", horizon=300).unwrapped
    assert (env.n_arms, env.dim, env.horizon) == (3, 4, 300)
    table = env.config.X  # standardized, l_inf-normalized rows
    np.testing.assert_allclose(np.abs(table).max(axis=1), 1.0)
    obs, _ = env.reset(seed=0)
    label_of = {tuple(row): lab for row, lab in zip(table, y, strict=True)}  # duplicates agree
    seen = []
    for t in range(300):
        seen.append(obs)
        arm = t % 3
        label = label_of[tuple(obs)]
        obs, rew, _, _, info = env.step(arm)
        assert info["optimal_arm"] == label
        assert rew == float(arm == label) == 1.0 - info["pseudo_regret"]
        assert np.array_equal(info["expected_rewards"], np.eye(3)[label])
    # each pass over the data is a permutation of all rows, and the two passes differ
    seen = np.array(seen)

    def sort_rows(a):
        return a[np.lexsort(a.T[::-1])]

    assert np.array_equal(sort_rows(seen[:150]), sort_rows(table))
    assert np.array_equal(sort_rows(seen[150:]), sort_rows(table))
    assert not np.array_equal(seen[:150], seen[150:])


def test_classification_bandit_custom_data_and_noise():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 2.0]])
    y = np.array(["b", "a", "b", "c"])
    env = ClassificationBanditEnv(X=X, y=y, horizon=4000, noise_std=0.5, standardize=False,
                                  normalization=None)
    assert list(env.classes) == ["a", "b", "c"]
    env.reset(seed=0)
    resid = []
    for _ in range(4000):
        _, rew, _, _, info = env.step(1)
        resid.append(rew - info["expected_rewards"][1])
    resid = np.array(resid)
    assert abs(resid.mean()) < 5 * 0.5 / np.sqrt(4000)
    assert abs(resid.std() - 0.5) < 5 * 0.5 / np.sqrt(8000)


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,exc,match", [
    ({"n_arms": 0}, ValueError, "n_arms"),
    ({"n_arms": 2.0}, TypeError, "n_arms"),
    ({"dim": 0}, ValueError, "dim"),
    ({"horizon": 0}, ValueError, "horizon"),
    ({"link": "probit"}, ValueError, "link"),
    ({"noise": "cauchy"}, ValueError, "noise"),
    ({"noise": "bernoulli"}, ValueError, "link"),
    ({"noise_std": -0.1}, ValueError, "noise_std"),
    ({"noise_std": float("nan")}, ValueError, "noise_std"),
    ({"normalization": "l3"}, ValueError, "normalization"),
    ({"normalization": "none"}, ValueError, "normalization"),
    ({"context": "laplace"}, ValueError, "context"),
    ({"context": np.ones(3)}, TypeError, "context"),
    ({"context_cov": np.full((5, 5), np.nan)}, ValueError, "context_cov"),
    ({"context_cov": np.eye(4)}, ValueError, "context_cov"),
    ({"context_cov": -np.eye(5)}, ValueError, "context_cov"),
    ({"context_cov": np.eye(5), "context_std": 1.0}, ValueError, "context_std"),
    ({"context_std": 0.0}, ValueError, "context_std"),
    ({"context_low": 0.0}, ValueError, "context_low"),
    ({"context": "uniform", "context_low": 1.0, "context_high": 1.0}, ValueError,
     "context_high"),
    ({"sparsity": 6}, ValueError, "sparsity"),
    ({"sparsity": 0}, ValueError, "sparsity"),
    ({"theta": "gaussian", "sparsity": 2}, ValueError, "sparsity"),
    ({"theta": "dense"}, ValueError, "theta"),
    ({"theta": np.full((2, 5), np.nan)}, ValueError, "theta"),
    ({"theta": np.ones((3, 5))}, ValueError, "theta"),
    ({"theta": np.ones((2, 5)), "instance_seed": 1}, ValueError, "instance_seed"),
    ({"theta_scale": 0.0}, ValueError, "theta_scale"),
    ({"instance_seed": -1}, ValueError, "instance_seed"),
    ({"chunk_size": 0}, ValueError, "chunk_size"),
    ({"render_mode": "human"}, ValueError, "render_mode"),
])
def test_bad_glm_arguments_name_the_parameter(kwargs, exc, match):
    base = {"n_arms": 2, "dim": 5, "horizon": 10}
    with pytest.raises(exc, match=match):
        GLMBanditEnv(**{**base, **kwargs})


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"num_envs": 0}, ValueError, "num_envs"),
    ({"autoreset_mode": "sometimes"}, ValueError, "autoreset_mode"),
])
def test_bad_vector_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        GLMBanditVectorEnv(**{"dim": 3, "horizon": 5, **kwargs})


@pytest.mark.parametrize("action,exc,match", [
    (2, ValueError, r"action must be an arm index in \[0, 1\]"),
    (-1, ValueError, "action"),
    (1.0, TypeError, "action"),
    (True, TypeError, "action"),
    ("0", TypeError, "action"),
    (np.array([0, 1]), ValueError, "action"),
])
def test_bad_single_actions(action, exc, match):
    env = GLMBanditEnv(dim=3, horizon=5)
    env.reset(seed=0)
    with pytest.raises(exc, match=match):
        env.step(action)
    env.step(np.int64(1))  # numpy integers and 0-d arrays are fine
    env.step(np.array(0))


@pytest.mark.parametrize("actions,exc,match", [
    (np.array([0, 1]), ValueError, r"shape \(num_envs,\) = \(3,\)"),
    (np.zeros((3, 1), int), ValueError, "actions must have shape"),
    (np.array([0, 2, 1]), ValueError, r"arm indices in \[0, 1\].*got 2"),
    (np.array([0, -1, 1]), ValueError, "got -1"),
    (np.array([0.0, 1.0, 1.0]), TypeError, "integer"),
    (np.array([True, False, True]), TypeError, "integer"),
])
def test_bad_vector_actions(actions, exc, match):
    venv = GLMBanditVectorEnv(num_envs=3, dim=3, horizon=5)
    venv.reset(seed=0)
    with pytest.raises(exc, match=match):
        venv.step(actions)


def test_bad_seeds_and_reset_options():
    env = GLMBanditEnv(dim=3, horizon=5)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(TypeError, match="seed"):
        env.reset(seed=1.5)
    venv = GLMBanditVectorEnv(num_envs=2, dim=3, horizon=5)
    with pytest.raises(ValueError, match="num_envs=2"):
        venv.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match=r"seed\[1\]"):
        venv.reset(seed=[1, -2])
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(seed=0, options={"reset_mask": np.array([True, False])})
    venv.reset(seed=0, options={"reset_mask": np.array([True, True])})
    with pytest.raises(gymnasium.error.ResetNeeded):
        GLMBanditVectorEnv(num_envs=2, dim=3, horizon=5).step(np.zeros(2, int))


def test_bad_samplers_and_datasets():
    env = GLMBanditEnv(dim=3, horizon=5, context=lambda rng, n: np.ones((n, 2)))
    with pytest.raises(ValueError, match="context sampler output"):
        env.reset(seed=0)
    env = GLMBanditEnv(dim=3, horizon=5, context=lambda rng, n: np.zeros((n, 3)))
    with pytest.raises(ValueError, match="norm 0"):
        env.reset(seed=0)
    env = GLMBanditEnv(dim=3, horizon=5, context=lambda rng, n: np.full((n, 3), np.nan))
    with pytest.raises(ValueError, match="finite"):
        env.reset(seed=0)
    with pytest.raises(ValueError, match="dataset"):
        ClassificationBanditEnv(dataset="mnist")
    with pytest.raises(ValueError, match="y must have shape"):
        ClassificationBanditEnv(X=np.ones((3, 2)), y=np.array([0, 1]))
    with pytest.raises(ValueError, match="X and y"):
        ClassificationBanditEnv(X=np.ones((3, 2)))
    with pytest.raises(ValueError, match="X must contain only finite"):
        ClassificationBanditEnv(X=np.array([[np.nan, 1.0]]), y=[0])
    with pytest.raises(ValueError, match="horizon"):
        ClassificationBanditEnv(horizon=0)
    with pytest.raises(ValueError, match="noise_std"):
        ClassificationBanditEnv(noise_std=-1.0)
    with pytest.raises(TypeError, match="standardize"):
        ClassificationBanditEnv(standardize="yes")


def test_default_sparse_instance_has_distinct_arms_in_small_dimension():
    """s = d would put ones on every coordinate of every arm: zero regret for any policy."""
    from dpbandits.envs.glm import GLMBanditEnv

    env = GLMBanditEnv(n_arms=3, dim=4, horizon=10)
    assert env.config.sparsity == 3
    with pytest.raises(ValueError, match=r"sparsity \(s\) = dim \(d\) = 4 gives all 3 arms"):
        GLMBanditEnv(n_arms=3, dim=4, horizon=10, sparsity=4)
    GLMBanditEnv(n_arms=1, dim=4, horizon=10, sparsity=4)  # one arm: nothing to compare
    venv = gymnasium.make_vec("dpbandits/GLMBandit-v0", num_envs=50, n_arms=3, dim=4,
                              horizon=5)
    venv.reset(seed=0)
    _, _, _, _, info = venv.step(np.zeros(50, dtype=np.int64))
    assert (info["pseudo_regret"] > 0).mean() > 0.5


def _episode(venv, acts, seed=0):
    obs, _ = venv.reset(seed=seed)
    out = [obs]
    for a in acts:
        obs, rew, _, _, info = venv.step(a)
        out += [obs, rew, info["pseudo_regret"]]
    return out


def test_chunks_drawn_ahead_in_the_background_are_the_same_numbers(monkeypatch):
    """Prefetching the next chunk (default) gives exactly the numbers of drawing it when
    needed, whatever the chunk size; a reset while a chunk is being drawn ahead, and pickling
    mid-episode, do not change them either."""
    import pickle

    kw = {"num_envs": 3, "vectorization_mode": "vector_entry_point", "horizon": 50}
    acts = np.random.default_rng(0).integers(0, 2, size=(50, 3))
    ref = _episode(gymnasium.make_vec("dpbandits/Figure5.1-v0", chunk_size=51, **kw), acts)
    venv = gymnasium.make_vec("dpbandits/Figure5.1-v0", chunk_size=7, **kw)
    assert venv.unwrapped._core._pending is None
    venv.reset(seed=5)
    venv.step(acts[0])  # a chunk is being drawn ahead for the seed-5 episode
    got = _episode(venv, acts)
    monkeypatch.setenv("DPBANDITS_PREFETCH", "0")
    off = _episode(gymnasium.make_vec("dpbandits/Figure5.1-v0", chunk_size=7, **kw), acts)
    for a, b, c in zip(ref, got, off, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    monkeypatch.delenv("DPBANDITS_PREFETCH")
    venv.reset(seed=0)
    for a in acts[:20]:
        venv.step(a)
    assert venv.unwrapped._core._pending is not None
    twin = pickle.loads(pickle.dumps(venv.unwrapped))
    for a in acts[20:]:
        o1, r1, *_ = venv.step(a)
        o2, r2, *_ = twin.step(a)
        assert np.array_equal(o1, o2) and np.array_equal(r1, r2)


def test_a_pool_prefetches_only_when_its_threads_fit_on_the_cores():
    from dpbandits._background import prefetch_in_pool

    # each pooled process runs its simulation and a drawing thread (issue 37: two processes
    # with prefetch put four busy threads on two cores)
    assert not prefetch_in_pool(2, cores=2)
    assert prefetch_in_pool(2, cores=4)
    assert not prefetch_in_pool(3, cores=5)
    assert prefetch_in_pool(1, cores=1)  # no pool: the calling process may always prefetch

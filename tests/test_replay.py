"""The replay environment (Li, Chu, Langford & Wang 2011, Algorithm 3) and the harness on it:
Gymnasium semantics, unbiasedness on a uniform log, the refusal of non-uniform logs, the
harness's loop against a one-event-at-a-time reference, reruns, results without regret."""

import warnings

import gymnasium
import numpy as np
import pytest
from _agents import RandomArms
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from dpbandits.agents import make_agent
from dpbandits.cli import main
from dpbandits.datasets import write_logged
from dpbandits.envs import (
    LogExhaustedError,
    LoggedBandit,
    NonUniformLoggingWarning,
    ReplayBanditEnv,
    ReplayBanditVectorEnv,
    synthetic_log,
)
from dpbandits.envs.replay import default_replay_horizon
from dpbandits.harness.compare import compare
from dpbandits.harness.results import REPLAY_FRAME_COLUMNS
from dpbandits.harness.simulate import agent_rng, simulate
from dpbandits.privacy.streams import ChunkedDraws
from dpbandits.testing import check_env

ENV = "dpbandits/Replay-v0"


@pytest.fixture(scope="module")
def uniform():
    return synthetic_log(10_000, n_arms=3, dim=5, seed=7)


class FixedPolicy(RandomArms):
    """A policy that never learns: arm argmax_k x^T w_k."""

    def __init__(self, *, n_arms, dim, horizon, w=None):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.w = w

    def act(self, contexts):
        return np.argmax(contexts @ self.w.T, axis=1)


def _theta(log, mu):
    """theta_k of the synthetic model, recovered exactly from mu = 0.5 + 0.4 x^T theta_k."""
    return np.linalg.lstsq(log.contexts, (mu - 0.5) / 0.4, rcond=None)[0].T


# -- Gymnasium ----------------------------------------------------------------------------------
def test_registered_id_passes_gymnasium_and_the_dpbandits_env_checks():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gymnasium_check_env(gymnasium.make(ENV).unwrapped)
    check_env(ENV, n_reps=3)
    venv = gymnasium.make_vec(ENV, num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(venv.unwrapped, ReplayBanditVectorEnv)
    assert venv.unwrapped.reports_regret is False


def _indexed_log(n=60, K=3, seed=0):
    """A uniform log whose first context feature is the row index (to trace the passes)."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.arange(n, dtype=float), rng.standard_normal(n)])
    return LoggedBandit(x, rng.integers(0, K, n), rng.random(n), np.full(n, 1 / K), K)


def test_a_step_reveals_the_logged_reward_only_for_the_logged_action_and_a_pass_covers_the_log():
    log = _indexed_log()
    env = ReplayBanditEnv(log)
    obs, _ = env.reset(seed=3)
    seen, rng = [], np.random.default_rng(0)
    for t in range(log.n_rounds):
        i = int(obs[0])
        seen.append(i)
        arm = int(rng.integers(0, 3))
        obs, reward, term, trunc, info = env.step(arm)
        assert info["accepted"] == (arm == log.actions[i]) and info["logged_action"] == \
            log.actions[i]
        assert reward == (log.rewards[i] if info["accepted"] else 0.0)
        assert not term and trunc == (t == log.n_rounds - 1)
    assert sorted(seen) == list(range(log.n_rounds))  # one pass: every round exactly once
    assert seen != sorted(seen)  # in a random order
    with pytest.raises(gymnasium.error.ResetNeeded, match="pass over the log ended"):
        env.step(0)


def test_the_vector_env_after_its_pass_autoresets_or_stops_with_the_reason():
    log = _indexed_log(n=12)
    env = ReplayBanditVectorEnv(2, log, autoreset_mode="NextStep")
    first, _ = env.reset(seed=5)
    for _ in range(log.n_rounds):
        _, _, _, trunc, _ = env.step(np.zeros(2, dtype=np.int64))
    assert trunc.all()
    obs, rewards, term, trunc, info = env.step(np.zeros(2, dtype=np.int64))
    assert obs.shape == first.shape and not (term.any() or trunc.any()) and info == {}
    assert np.array_equal(rewards, np.zeros(2))  # the autoreset step reveals nothing
    off = ReplayBanditVectorEnv(2, log, autoreset_mode="Disabled")
    off.reset(seed=5)
    for _ in range(log.n_rounds):
        off.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(gymnasium.error.ResetNeeded, match="pass over the log ended"):
        off.step(np.zeros(2, dtype=np.int64))


def test_replication_r_is_the_single_env_with_seed_s_plus_r():
    log = _indexed_log()
    venv = ReplayBanditVectorEnv(3, log)
    obs, _ = venv.reset(seed=5)
    arms = np.random.default_rng(1).integers(0, 3, size=(20, 3))
    trace = [obs]
    for a in arms:
        obs, rew, _, _, info = venv.step(a)
        trace.append(np.column_stack([obs, rew, info["accepted"]]))
    for r in (0, 2):
        env = ReplayBanditEnv(log)
        o, _ = env.reset(seed=5 + r)
        np.testing.assert_array_equal(o, trace[0][r])
        for k, a in enumerate(arms[:, r]):
            o, rew, _, _, info = env.step(int(a))
            np.testing.assert_array_equal(np.r_[o, rew, info["accepted"]], trace[k + 1][r])
    assert not np.array_equal(trace[0][0], trace[0][1])  # each replication its own pass


# -- uniform logging only -------------------------------------------------------------------------
def test_a_non_uniform_log_is_refused_with_the_reason_or_replayed_with_a_warning():
    soft, _ = synthetic_log(3000, seed=0, logging="softmax")
    with pytest.raises(ValueError, match=r"unbiased only for a uniformly random logging "
                                         r"policy.*1/n_arms = 0\.333.*allow_nonuniform=True"):
        ReplayBanditVectorEnv(2, soft)
    with pytest.warns(NonUniformLoggingWarning, match="biased towards the arms"):
        env = ReplayBanditVectorEnv(2, soft, allow_nonuniform=True)
    assert env.horizon == default_replay_horizon(soft)
    with pytest.raises(ValueError, match="unbiased only"):
        simulate(ENV, "random", env_params={"log": soft})


# -- unbiasedness ----------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["best", "worst"])
def test_replay_reveals_the_true_value_of_a_fixed_policy(uniform, policy):
    log, mu = uniform
    theta = _theta(log, mu)
    w = theta if policy == "best" else -theta
    value = mu[np.arange(log.n_rounds), np.argmax(log.contexts @ w.T, axis=1)].mean()
    T = default_replay_horizon(log)  # about n/K - 4 sd accepted rounds of each pass
    agent = FixedPolicy(n_arms=3, dim=5, horizon=T, w=w)
    res = simulate(ENV, agent, n_reps=3, seed=11, env_params={"log": log})
    assert res.regret is None and res.rewards.shape == (3, T)
    # accepted rounds are iid draws of (x, pi(x), r) (Theorem 1): the mean reward of one
    # replication has standard deviation sqrt(V (1 - V) / T); the mean of 3 passes over the
    # same log at most that
    tol = 4 * np.sqrt(value * (1 - value) / T)
    assert abs(res.rewards.mean() - value) <= tol
    assert abs(value - log.mean_reward) > 3 * tol  # a biased replay would be caught
    # every accepted round is the logged action; about K logged rounds are read per accepted one
    events = res.log_events[:, -1]
    assert np.all(events <= log.n_rounds) and np.all(np.diff(res.log_events, axis=1) >= 1)
    sd = np.sqrt(T * (1 - 1 / 3)) * 3  # sd of the rounds read to accept T (negative binomial)
    assert np.all(np.abs(events - 3 * T) <= 4 * sd)


# -- the harness loop -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["linucb", "random"])
def test_the_harness_equals_algorithm_3_run_one_logged_round_at_a_time(name):
    log, _ = synthetic_log(3000, seed=2)
    T, seed = 300, 4
    res = simulate(ENV, name, n_reps=1, seed=seed, horizon=T, env_params={"log": log})
    agent = make_agent(name, n_arms=3, dim=5, horizon=T).reset(1, agent_rng(seed))
    env = ReplayBanditEnv(log)
    obs, _ = env.reset(seed=seed)
    arms, rewards, events = [], [], []
    while len(arms) < T:
        arm = agent.act(obs[None])
        nxt, reward, _, _, info = env.step(int(arm[0]))
        if info["accepted"]:
            agent.update(obs[None], arm, np.array([reward]))
            arms.append(int(arm[0]))
            rewards.append(reward)
            events.append(info["t"])
        obs = nxt
    np.testing.assert_array_equal(res.arms[0], arms)
    np.testing.assert_array_equal(res.rewards[0], rewards)
    np.testing.assert_array_equal(res.log_events[0], events)


def test_reruns_are_bit_identical_and_seeds_differ(uniform):
    log = uniform[0]
    runs = [simulate(ENV, "linucb", n_reps=3, seed=s, horizon=500, env_params={"log": log})
            for s in (1, 1, 2)]
    for key in ("arms", "rewards", "log_events"):
        np.testing.assert_array_equal(getattr(runs[0], key), getattr(runs[1], key))
    assert not np.array_equal(runs[0].log_events, runs[2].log_events)


def test_a_horizon_beyond_the_log_stops_with_the_reason():
    log, _ = synthetic_log(300, seed=0)
    with pytest.raises(LogExhaustedError, match=r"read all 300 logged rounds.*lower the horizon"):
        simulate(ENV, "random", n_reps=2, env_params={"log": log, "horizon": 150})
    with pytest.raises(ValueError, match="exceeds the environment's horizon 67"):
        simulate(ENV, "random", n_reps=2, horizon=150, env_params={"log": log})


class PerRoundStream(RandomArms):
    """Draws its arms from a stream of exactly `horizon` rounds (one act per update)."""

    def _reset(self, n_reps, rng):
        self.stream = ChunkedDraws(lambda s, n: (rng.integers(0, self.n_arms, (n, n_reps)),),
                                   self.horizon, n_reps)

    def act(self, contexts):
        return self.stream.next()[0]


def test_an_agent_that_cannot_act_more_often_than_it_updates_is_named():
    log, _ = synthetic_log(3000, seed=0)
    agent = PerRoundStream(n_arms=3, dim=5, horizon=200)
    with pytest.raises(ValueError, match="'PerRoundStream' cannot be replayed"):
        simulate(ENV, agent, n_reps=2, env_params={"log": log})


# -- results without regret -----------------------------------------------------------------------
def test_results_carry_reward_accepted_rounds_and_no_regret(uniform):
    log = uniform[0]
    frame, summary, results = compare({"random": "random", "linucb": "linucb"}, ENV,
                                      horizon=400, n_reps=3, seed=0,
                                      env_params={"log": log}, record_every=100)
    assert list(frame.columns) == REPLAY_FRAME_COLUMNS
    res = results["linucb"]
    last = frame[(frame["agent"] == "linucb") & (frame["t"] == 400)]
    np.testing.assert_allclose(last["cum_reward"], res.rewards.sum(axis=1))
    np.testing.assert_array_equal(last["log_events"], res.log_events[:, -1])
    row = summary.set_index("agent").loc["linucb"]
    assert row["accepted"] == 400 and row["n"] == 3
    assert row["mean"] == pytest.approx(res.rewards.sum(axis=1).mean())
    assert row["log_events"] == pytest.approx(res.log_events[:, -1].mean())
    assert res.reference_reward == pytest.approx(log.rewards.mean())
    with pytest.raises(ValueError, match="no regret"):
        _ = res.cum_regret


def test_cli_compare_on_a_log_file(tmp_path, capsys, uniform):
    path = write_logged(uniform[0], tmp_path / "log.parquet")
    code = main(["compare", "--env", ENV, "--env-param", f'log="{path}"', "--agent", "random",
                 "--agent", "linucb", "--reps", "2", "--horizon", "300", "--out",
                 str(tmp_path / "out"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "final cumulative reward over 300 accepted rounds" in out
    assert f"logged policy's mean reward {uniform[0].mean_reward:.4g}" in out
    assert (tmp_path / "out" / "reward.png").exists()
    assert (tmp_path / "out" / "final_reward.png").exists()

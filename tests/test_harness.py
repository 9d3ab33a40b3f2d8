import json

import numpy as np
import pandas as pd
import pytest

from dpbandits.agents import Agent
from dpbandits.harness.compare import compare
from dpbandits.harness.results import load_results, recorded_steps, save_results, summarize
from dpbandits.harness.simulate import simulate
from dpbandits.harness.sweep import SweepSpec, sweep

ENV = "dpbandits/GLMBandit-v0"
SMALL = {"n_arms": 3, "dim": 4, "horizon": 60}


class ContextRecorder(Agent):
    """Always pulls arm (t mod K) and records the contexts it is shown."""

    def __init__(self, *, n_arms, dim, horizon, offset=0):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.offset = offset

    def _reset(self, n_reps, rng):
        self.seen = []

    def act(self, contexts):
        x = self._check_contexts(contexts)
        self.seen.append(x.copy())
        return np.full(x.shape[0], (self.t_ + self.offset) % self.n_arms)

    def _update(self, contexts, arms, rewards):
        pass

    @property
    def privacy(self):
        return None


def test_simulate_shapes_regret_definition_and_frame():
    res = simulate(ENV, "linucb", n_reps=3, seed=5, env_params=SMALL)
    assert res.regret.shape == res.arms.shape == res.rewards.shape == (3, 60)
    assert np.all(res.regret >= 0)
    frame = res.to_frame(record_every=25)
    assert list(frame.columns) == ["agent", "rep", "t", "regret", "cum_regret", "epsilon",
                                   "delta", "certified_epsilon"]
    # a non-private agent: epsilon = inf, delta = 0, nothing to certify
    assert np.isinf(frame["epsilon"]).all() and (frame["delta"] == 0).all()
    assert frame["certified_epsilon"].isna().all()
    assert sorted(frame["t"].unique()) == [25, 50, 60]
    last = frame[frame["t"] == 60].sort_values("rep")["cum_regret"].to_numpy()
    np.testing.assert_allclose(last, res.regret.sum(1))
    assert recorded_steps(10, 3).tolist() == [3, 6, 9, 10]


def test_simulate_is_reproducible_and_seed_sensitive():
    a = simulate(ENV, "dp-ucb", n_reps=2, seed=1, env_params=SMALL)
    b = simulate(ENV, "dp-ucb", n_reps=2, seed=1, env_params=SMALL)
    c = simulate(ENV, "dp-ucb", n_reps=2, seed=2, env_params=SMALL)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.arms, b.arms)
    assert not np.array_equal(a.rewards, c.rewards)


def test_custom_agent_plugs_in_and_compare_uses_common_contexts():
    one, two = ContextRecorder(**SMALL), ContextRecorder(**SMALL, offset=1)
    r1 = simulate(ENV, one, n_reps=2, seed=3, env_params=SMALL)
    r2 = simulate(ENV, two, n_reps=2, seed=3, env_params=SMALL)
    assert not np.array_equal(r1.arms, r2.arms)
    np.testing.assert_array_equal(np.stack(one.seen), np.stack(two.seen))
    # dense theta*: arms are never interchangeable
    distinct_arms = {**SMALL, "theta": "gaussian"}
    frame, summary, results = compare({"rand": "random", "lin": ("linucb", {"reg": 2.0})},
                                      ENV, n_reps=2, seed=3, env_params=distinct_arms)
    assert set(frame["agent"]) == {"rand", "lin"}
    assert list(summary["agent"]) == ["rand", "lin"]
    assert {"mean", "std", "ci95_low", "ci95_high", "epsilon", "delta",
            "certified_epsilon"} <= set(summary.columns)
    # common random numbers: same instance, contexts and reward noise for every agent, so
    # wherever the two agents pull the same arm they see the same reward and regret, and
    # wherever they differ the regrets differ (the arms are not interchangeable)
    rand, lin = results["rand"], results["lin"]
    same = rand.arms == lin.arms
    assert 0 < same.mean() < 1
    np.testing.assert_array_equal(rand.rewards[same], lin.rewards[same])
    np.testing.assert_array_equal(rand.regret[same], lin.regret[same])
    assert (rand.regret[~same] != lin.regret[~same]).all()


def test_simulate_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown or invalid env"):
        simulate("dpbandits/Nope-v0", "random")
    with pytest.raises(ValueError, match="unknown agent"):
        simulate(ENV, "nope", env_params=SMALL)
    with pytest.raises(ValueError, match="horizon"):
        simulate(ENV, "random", horizon=61, env_params=SMALL)
    with pytest.raises(TypeError, match="Agent protocol"):
        simulate(ENV, object(), env_params=SMALL)


def test_save_and_load_round_trip(tmp_path):
    res = simulate(ENV, "random", n_reps=2, seed=0, env_params=SMALL)
    frame = res.to_frame(10)
    paths = save_results(frame, {"config": {"a": 1}}, tmp_path, csv=True)
    back, record = load_results(tmp_path)
    pd.testing.assert_frame_equal(back, frame)
    assert record["config"] == {"a": 1} and "numpy" in record["versions"]
    assert paths["csv"].exists()
    s = summarize(frame)
    assert s.loc[0, "n"] == 2


def _det(frame):
    """The deterministic part of a sweep frame (wall time differs between runs)."""
    return frame.drop(columns=["seconds"])


def _spec(seeds=(0, 1)):
    return SweepSpec(agents={"rand": {"name": "random"},
                             "ucb": {"name": "dp-ucb", "grid": {"epsilon": [1.0, 10.0]}}},
                     env=ENV, env_params={"n_arms": 2, "dim": 8, "horizon": 30}, horizon=30,
                     seeds=list(seeds), n_reps=2, record_every=10)


def test_sweep_resume_after_failure_equals_uninterrupted(tmp_path):
    spec = _spec()
    cells = spec.cells()
    assert len(cells) == (1 + 2) * 2
    full = sweep(spec, tmp_path / "full", progress=False)
    victim = cells[3].cell_id
    with pytest.raises(RuntimeError, match="injected"):
        sweep(spec, tmp_path / "resumed", progress=False, _fail_on=victim)
    done = {p.stem for p in (tmp_path / "resumed" / "cells").glob("*.parquet")}
    assert victim not in done and len(done) < len(cells)
    assert not list((tmp_path / "resumed" / "cells").glob("*.tmp"))
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "resumed" / "cells").iterdir()}
    resumed = sweep(spec, tmp_path / "resumed", progress=False)
    for p, m in mtimes.items():  # finished cells were not re-run
        assert p.stat().st_mtime_ns == m
    pd.testing.assert_frame_equal(_det(resumed), _det(full))
    # different seeds never share an instance
    ucb = full[(full["agent"] == "rand")]
    assert ucb.groupby("seed")["cum_regret"].sum().nunique() == 2


@pytest.mark.integration
def test_sweep_parallel_equals_serial(tmp_path):
    spec = _spec(seeds=(0,))
    serial = sweep(spec, tmp_path / "a", progress=False)
    parallel = sweep(spec, tmp_path / "b", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(_det(serial), _det(parallel))


@pytest.mark.integration
def test_sweep_on_dask_local_cluster_equals_local(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    spec = _spec(seeds=(0,))
    local = sweep(spec, tmp_path / "local", progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = sweep(spec, tmp_path / "dask", scheduler=client, progress=False)
    pd.testing.assert_frame_equal(_det(local), _det(remote))


def test_sweep_spec_errors():
    with pytest.raises(ValueError, match="name"):
        SweepSpec(agents={"x": {}}, env=ENV, horizon=5).cells()
    with pytest.raises(TypeError, match="list"):
        SweepSpec(agents={"x": {"name": "random", "grid": {"a": 1}}}, env=ENV,
                  horizon=5).cells()


def test_json_record_contains_recomputed_guarantee(tmp_path):
    frame, summary, results = compare({"ucb": ("dp-ucb", {"calibration": "accountant"})},
                                      ENV, n_reps=1, seed=0, env_params=SMALL)
    cert = results["ucb"].certified
    assert cert is not None and cert["epsilon"] <= 1.0 + 1e-3
    save_results(frame, {"certified": {"ucb": cert}}, tmp_path)
    rec = json.loads((tmp_path / "results.json").read_text())
    assert rec["certified"]["ucb"]["epsilon"] == pytest.approx(cert["epsilon"])


@pytest.mark.parametrize("agent, params", [("fliphat", {}), ("dp-ucb", {}), ("linucb", {}),
                                           ("dp-hdb", {}), ("random", {})])
def test_fast_loop_equals_the_gymnasium_loop(agent, params):
    """simulate on an env id plays rounds through the env core and the agent's trusted update;
    on an env instance through the public Gymnasium step and update: the same numbers."""
    import gymnasium

    kw = {"n_reps": 3, "seed": 4, "agent_params": params}
    fast = simulate("dpbandits/SparseLinearBandit-v0", agent, env_params={"horizon": 70},
                    **kw)
    venv = gymnasium.make_vec("dpbandits/SparseLinearBandit-v0", num_envs=3,
                              vectorization_mode="vector_entry_point", horizon=70)
    slow = simulate(venv, agent, **kw)
    for name in ("regret", "arms", "rewards"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.regret.flags.c_contiguous and fast.regret.shape == (3, 70)


def test_trusted_update_respects_an_overridden_update():
    class Counting(Agent):
        calls = 0

        def __init__(self, *, n_arms, dim, horizon):
            super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)

        def _reset(self, n_reps, rng):
            pass

        def act(self, contexts):
            return np.zeros(contexts.shape[0], dtype=np.int64)

        def update(self, contexts, arms, rewards):
            type(self).calls += 1
            super().update(contexts, arms, rewards)

        def _update(self, contexts, arms, rewards):
            pass

        @property
        def privacy(self):
            return None

    simulate("dpbandits/SparseLinearBandit-v0", Counting(n_arms=5, dim=20, horizon=30),
             n_reps=2, horizon=30)
    assert Counting.calls == 30


def test_trusted_act_still_checks_the_returned_arms():
    """simulate's trusted act skips only the context check: an agent returning an arm out of
    range is refused with the same error as through the public act (no silent wrap-around
    of a negative index into the environment's arrays)."""

    class Wrong(Agent):
        def __init__(self, *, n_arms, dim, horizon):
            super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)

        def _reset(self, n_reps, rng):
            pass

        def act(self, contexts):
            return np.full(contexts.shape[0], -1, dtype=np.int64)

        def _update(self, contexts, arms, rewards):
            pass

        @property
        def privacy(self):
            return None

    with pytest.raises(ValueError, match=r"returned arms must lie in \[0, 4\]"):
        simulate("dpbandits/SparseLinearBandit-v0", Wrong(n_arms=5, dim=20, horizon=30),
                 n_reps=2, horizon=30)


def test_certified_guarantee_names_the_check_that_recomputed_it():
    """A generalized-Gaussian ledger is recomputed by the closed-form check, not by
    dp_accounting, and the record's basis says which one was used."""
    from types import SimpleNamespace

    from dpbandits.privacy import PrivacyGuarantee
    from dpbandits.privacy.accounting import gaussian_event
    from dpbandits.privacy.accounting.certification import certified_guarantee
    from dpbandits.privacy.accounting.events import GeneralizedGaussianDpEvent

    def agent(ledger):
        return SimpleNamespace(ledger=ledger, privacy=PrivacyGuarantee(
            epsilon=1.0, delta=1e-3, notion="DP", basis="test"))

    lq = certified_guarantee(agent(GeneralizedGaussianDpEvent(6.0, 3.0, 1.0, 2.0, 1.0, 1e-3)))
    assert lq["basis"].startswith("closed form (Lemma 2.1")
    assert 0 < lq["epsilon"] < 1.0
    gauss = certified_guarantee(agent(gaussian_event(5.0)))
    assert gauss["basis"].startswith("dp_accounting PLD")

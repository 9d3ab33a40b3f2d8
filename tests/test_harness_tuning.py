"""The bandit-agent tuning objective: one held-out user per validation individual."""

import math

import numpy as np
import pytest

from dpbandits.bo import DPGIBO, RBF, GradientDesigner, HyperparameterSpace
from dpbandits.harness.simulate import simulate
from dpbandits.harness.tuning import AgentTuningObjective

ENV = "dpbandits/SparseLinearBandit-v0"  # 5 arms, d = 20
HDB_SPACE = HyperparameterSpace(["radius", "h_sub"], low=[0.1, 0.01], high=[10.0, 2.0],
                                log=True)


def hdb_objective(seeds, horizon=60):
    return AgentTuningObjective("dp-hdb", ENV, HDB_SPACE, user_seeds=seeds, horizon=horizon,
                                fixed_params={"epsilon": 1.0, "calibration": "accountant"})


def test_replacing_one_user_changes_only_that_users_loss():
    """The premise of Theorem 3.1 here: user i's loss depends on user i's problem only (and
    on the agent's data-independent noise), so a replaced user moves one loss."""
    theta = np.array([[0.3, 0.7], [0.8, 0.2]])
    a = hdb_objective([11, 12, 13, 14]).losses(theta)
    b = hdb_objective([11, 12, 99, 14]).losses(theta)
    keep = [0, 1, 3]
    np.testing.assert_array_equal(a[:, keep], b[:, keep])
    assert np.all(a[:, 2] != b[:, 2])


def test_losses_are_average_regret_of_each_users_own_problem():
    """With a deterministic agent, user i's loss equals a single run on seed user_seeds[i]."""
    space = HyperparameterSpace(["exploration_scale"], low=[0.01], high=[3.0], log=True)
    obj = AgentTuningObjective("linucb", ENV, space, user_seeds=[5, 40, 7], horizon=50)
    params = space.to_params([0.4])
    losses = obj.per_individual_losses([0.4])
    for i, s in enumerate([5, 40, 7]):
        single = simulate(ENV, "linucb", horizon=50, n_reps=1, seed=0, agent_params=params,
                          env_seeds=[s])
        assert losses[i] == pytest.approx(single.regret[0].mean(), rel=1e-12)
    # the agent's stream is shared by every evaluation: same params, same losses
    np.testing.assert_array_equal(obj.per_individual_losses([0.4]), losses)
    assert obj.value([0.4]) == pytest.approx(losses.mean())


def test_dp_gibo_runs_on_agent_objective_with_its_guarantee():
    obj = hdb_objective(range(20, 30), horizon=40)
    alg = DPGIBO(mu=1.0, n_iters=2, clip_bound=1.0, batch_size=3, kernel=RBF(0.3),
                 step_rule="adagrad", step_size=0.1, bounds=HDB_SPACE.bounds,
                 theta0=np.array([0.5, 0.5]),
                 designer=GradientDesigner(n_candidates=16, n_restarts=0))
    res = alg.fit(obj, np.random.default_rng(0))
    assert res.extra["n_evals"][0] == 6
    assert np.all((res.history >= 0) & (res.history <= 1))
    # the noise is calibrated to the n = 10 held-out users
    assert res.extra["noise_std"] == pytest.approx(2 * 1.0 * math.sqrt(2) / (10 * 1.0))
    assert res.privacy.notion == "GDP"


@pytest.mark.parametrize("kwargs, err, match", [
    ({"user_seeds": []}, ValueError, "user_seeds must be a non-empty"),
    ({"user_seeds": 3}, ValueError, "user_seeds must be a non-empty"),
    ({"user_seeds": [1, 1]}, ValueError, "distinct"),
    ({"user_seeds": [1, -2]}, ValueError, r"user_seeds\[1\] must be >= 0"),
    ({"user_seeds": [1, 2], "fixed_params": {"radius": 1.0}}, ValueError, "both set"),
    ({"user_seeds": [1, 2], "horizon": 0}, ValueError, "horizon must be >= 1"),
])
def test_bad_inputs_raise(kwargs, err, match):
    with pytest.raises(err, match=match):
        AgentTuningObjective("dp-hdb", ENV, HDB_SPACE, **kwargs)


def test_bad_agent_env_and_space_types_raise():
    with pytest.raises(TypeError, match="agent must be a registered agent name"):
        AgentTuningObjective(object(), ENV, HDB_SPACE, user_seeds=[1])
    with pytest.raises(TypeError, match="env must be a registered environment id"):
        AgentTuningObjective("dp-hdb", 3, HDB_SPACE, user_seeds=[1])
    with pytest.raises(TypeError, match="space must be a HyperparameterSpace"):
        AgentTuningObjective("dp-hdb", ENV, {"radius": (0, 1)}, user_seeds=[1])


def test_simulate_env_seeds_are_validated():
    with pytest.raises(ValueError, match="env_seeds must be a list of n_reps=2"):
        simulate(ENV, "random", horizon=5, n_reps=2, env_seeds=[1])
    with pytest.raises(TypeError, match=r"env_seeds\[0\] must be an integer"):
        simulate(ENV, "random", horizon=5, n_reps=1, env_seeds=[1.5])


def test_neighbouring_user_sets_move_the_clipped_gradient_by_at_most_2B_over_n():
    """End to end on the agent objective: same design and noise streams, one user replaced;
    the first clipped mean gradient (before noise) moves by at most 2B/n (Theorem 3.1)."""
    B, n = 0.05, 6
    grads = []
    for seeds in ([31, 32, 33, 34, 35, 36], [31, 32, 33, 34, 35, 77]):
        alg = DPGIBO(mu=1.0, n_iters=1, clip_bound=B, batch_size=3, kernel=RBF(0.3),
                     bounds=HDB_SPACE.bounds, theta0=np.array([0.5, 0.5]),
                     designer=GradientDesigner(n_candidates=16, n_restarts=0),
                     record_diagnostics=True)
        res = alg.fit(hdb_objective(seeds, horizon=40), np.random.default_rng(1))
        grads.append(res.extra["nonprivate_clipped_mean_gradient"][0, 0])
        assert res.n_clipped[0] >= 1  # B is small enough that clipping is active
    diff = np.linalg.norm(grads[0] - grads[1])
    assert 0 < diff <= 2 * B / n + 1e-12

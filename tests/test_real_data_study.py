"""experiments/real_data: the grid's cells and parameters, and the table's paired ratio."""

import math

import numpy as np
import pandas as pd

from experiments.real_data import study


def test_cells_cover_every_agent_dataset_and_epsilon_once():
    cells = study.cells(20)
    private = len(study.AGENTS) - len(study.NON_PRIVATE)
    assert len(cells) == len(study.ENVS) * (private * len(study.EPSILONS)
                                            + len(study.NON_PRIVATE))
    keys = [c.key for c in cells + study.tight_cells(20)]
    assert len(set(keys)) == len(keys)
    assert {"dp-hdb", "dp-ucb", "fliphat", "dp-screened-ls", "adac-oful",
            "ldp-linucb"} <= set(study.AGENTS)


def test_agent_params():
    assert study.agent_params("digits", "dp-ucb", 1.0) == {
        "calibration": "accountant", "block_diagonal": True, "epsilon": 1.0}
    assert "block_diagonal" not in study.agent_params("iris", "dp-ucb", 1.0)
    assert study.agent_params("iris", "adac-oful", 10.0) == {"protect": "user",
                                                             "epsilon": 10.0}
    assert study.agent_params("iris", "linucb", math.nan) == {}
    tight = study.agent_params("iris", "ldp-linucb" + study.TIGHT, 1.0)
    # iris rows are at unit l_inf norm: the largest l2 norm lies in [1, sqrt(4)]
    assert 1.0 <= tight["context_bound"] < 2.0
    assert tight["context_bound"] == study.max_l2("iris")


def test_table_ratio_is_paired_over_replications():
    rng = np.random.default_rng(0)
    rnd = rng.uniform(80, 120, 20)
    frames = []
    for agent, regret in (("random", rnd), ("half", rnd / 2), ("noisy", rnd * rng.uniform(
            0.5, 1.5, 20))):
        frames.append(pd.DataFrame({
            "data": "iris", "agent": agent, "epsilon": 1.0, "rep": np.arange(20),
            "horizon": 150, "regret": regret, "claimed": "-", "certified_epsilon": 1.0,
            "params": "{}", "clipped_contexts": 0.0, "seconds": 0.0, "commit": "x"}))
    tab = study.table(pd.concat(frames)).set_index("agent")
    assert tab.loc["random", ["ratio_to_random", "ci_low", "ci_high"]].tolist() == [1, 1, 1]
    # exactly half in every replication: the paired interval has no width
    np.testing.assert_allclose(tab.loc["half", ["ratio_to_random", "ci_low", "ci_high"]]
                               .astype(float), 0.5)
    lo, mid, hi = tab.loc["noisy", ["ci_low", "ratio_to_random", "ci_high"]]
    assert lo < mid < hi and hi - lo < 0.4

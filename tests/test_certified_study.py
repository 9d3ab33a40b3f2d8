"""Plumbing of the certified-learning study (experiments/certified_learning/compare.py): the
table builder's ratio, standard error and paired interval, the smallest-halving-epsilon
rule, the cell keys (DP-HDB's carry the package version) and one real cell's columns."""

import math

import numpy as np
import pandas as pd
import pytest

import dpbandits
from experiments.certified_learning import compare


def _frame(rows):
    out = []
    for agent, eps, regrets in rows:
        for rep, r in enumerate(regrets):
            out.append({"instance": "A", "horizon": 100, "agent": agent, "epsilon": eps,
                        "rep": rep, "final_regret": float(r), "certified_epsilon": eps})
    return pd.DataFrame(out)


def test_summarize_ratio_se_and_paired_interval():
    rnd = [10.0, 40.0, 20.0, 90.0, 30.0]
    half = [r / 2 for r in rnd]
    other = [1.0, 30.0, 2.0, 5.0, 60.0]
    frame = _frame([("random", math.nan, rnd), ("half", 1.0, half), ("other", 3.0, other)])
    frame = frame.sample(frac=1.0, random_state=0)  # row order must not matter: paired by rep
    table = compare.summarize(frame, n_boot=2000).set_index("agent")
    h = table.loc["half"]
    assert h.ratio_to_random == pytest.approx(0.5)
    # paired: every bootstrap resample has ratio exactly 0.5 (an unpaired one would not)
    assert h.ratio_ci_low == pytest.approx(0.5) and h.ratio_ci_high == pytest.approx(0.5)
    o = table.loc["other"]
    assert o.ratio_to_random == pytest.approx(np.mean(other) / np.mean(rnd))
    assert o.regret_se == pytest.approx(np.std(other, ddof=1) / math.sqrt(5))
    assert o.ratio_ci_low < o.ratio_to_random < o.ratio_ci_high
    assert table.loc["random"].ratio_to_random == pytest.approx(1.0)
    assert o.certified_epsilon == 3.0 and o.reps == 5


def test_summarize_refuses_unpaired_replications_and_missing_random():
    bad = _frame([("random", math.nan, [1, 2, 3]), ("x", 1.0, [1, 2])])
    with pytest.raises(ValueError, match="replications"):
        compare.summarize(bad)
    with pytest.raises(ValueError, match="random"):
        compare.summarize(_frame([("x", 1.0, [1, 2])]))


def _table(rows):
    return pd.DataFrame([{"instance": "A", "horizon": 100, "agent": a, "epsilon": e,
                          "ratio_to_random": r, "ratio_ci_high": hi}
                         for a, e, r, hi in rows])


def test_halving_epsilon_is_the_smallest_grid_epsilon_at_or_below_one_half():
    table = _table([
        ("a", 0.3, 0.90, 1.00), ("a", 1.0, 0.45, 0.60), ("a", 3.0, 0.30, 0.40),
        ("a", 10.0, 0.20, 0.25),
        ("b", 10.0, 0.50, 0.49), ("b", 3.0, 0.70, 0.80), ("b", 1.0, 0.40, 0.45),  # unsorted
        ("c", 0.3, 0.90, 1.0), ("c", 1.0, 0.60, 0.7),
        ("linucb", math.nan, 0.01, 0.02)])
    h = compare.halving_epsilon(table).set_index("agent")
    assert h.loc["a"].epsilon == 1.0 and not h.loc["a"].sure
    assert h.loc["b"].epsilon == 1.0 and h.loc["b"].sure
    assert math.isnan(h.loc["c"].epsilon) and h.loc["c"].best_ratio == pytest.approx(0.6)
    assert "linucb" not in h.index


def test_cell_keys_version_dp_hdb_only_and_non_private_epsilon():
    k = compare.cell("figure5.1", "dp-hdb (accountant)", 1.0, 10_000, 20).key
    assert k.endswith(f"__v{dpbandits.__version__}")
    assert compare.cell("figure5.1", "dp-hdb (accountant)", 1.0, 10_000, 20,
                        version="9.9").key != k
    assert "__v" not in compare.cell("figure5.1", "dp-screened-ls", 1.0, 10_000, 20).key
    lin = compare.cell("figure5.1", "linucb (not private)", 3.0, 10_000, 20)
    assert "epsna" in lin.key and math.isnan(lin["epsilon"])
    grid = compare.cells(["figure5.1"], ["random", "adac-oful"], (0.3, 1.0), 10_000)
    assert len(grid) == 3 and len({c.key for c in grid}) == 3


def test_one_cell_records_the_recomputed_epsilon_and_version():
    c = compare.cell("figure5.1", "dp-ucb (accountant, block-diag.)", 1.0, 64, 2)
    f = compare.run_cell(c)
    assert list(f.rep) == [0, 1] and (f.final_regret >= 0).all()
    assert 0.9 < f.certified_epsilon.iloc[0] <= 1.0 + 1e-9
    assert (f.version == dpbandits.__version__).all() and (f.horizon == 64).all()
    assert f.notion.iloc[0] == "JDP" and f.delta.iloc[0] == pytest.approx(1 / 64)


def test_moment_study_long_cells_run_at_t_1e5_with_their_own_keys():
    """The T = 1e5 rows of the issue-26 study: every agent on the two long instances, the
    private ones at epsilon = 1; keys are the T = 1e4 keys plus ``__T100000`` (so neither
    set of cells resumes the other's) at their own cells version (``LONG_CELLS_VERSION``: the
    version-2 cells stand, their K <= 4 streams being unchanged by version 3), and
    ``run_cell`` builds the agent and the environment at that horizon."""
    from experiments.certified_learning import moment

    long = moment.long_cells(reps=2)
    assert len(long) == len(moment.AGENTS) * len(moment.LONG_INSTANCES)
    short = {moment.cell(inst, label, 1.0, 2, moment.LONG_CELLS_VERSION).key
             for inst in moment.INSTANCES for label in moment.AGENTS}
    for c in long:
        assert c["horizon"] == moment.LONG and c.key.endswith("__T100000")
        assert c.key.removesuffix("__T100000") in short
        assert c["epsilon"] == 1.0 if c["label"] in moment.PRIVATE else math.isnan(c["epsilon"])
    tiny = [c for c in moment.long_cells(reps=1, labels=["random"])
            if c["instance"] == "ar5-K4-d30-s3"][0]
    tiny = type(tiny)({**tiny.params, "horizon": 30}, tiny.seed, tiny.key)
    frame = moment.run_cell(tiny)
    assert frame.horizon.tolist() == [30] and frame.agent.tolist() == ["random"]

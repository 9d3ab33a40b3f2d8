"""The benchmark runner (``python -m benchmarks``) and its driver of the authors' reference
implementation, checked against a stub checkout (the real one is not needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _waits import HANG_CAP

from benchmarks import __main__ as runner
from benchmarks import bench_simulate

ROOT = Path(__file__).resolve().parent.parent

STUB = {
    "utils.py": "class Logger:\n    def __init__(self):\n        self.dict = {}\n",
    "bandit_algo.py": (
        "class DPUCB:\n"
        "    def __init__(self, params):\n"
        "        self.T = params['env']['T']\n"
        "        self.k = params['env']['k']\n"
        "class OFW_peq1(DPUCB):\n"
        "    pass\n"),
    "env.py": (
        "import json\n"
        "class bandits_env:\n"
        "    def __init__(self, params):\n"
        "        self.params = params\n"
        "    def run(self):\n"
        "        p = self.params\n"
        "        with open('ran.json', 'w') as fh:\n"
        "            json.dump({'T': p['env']['T'], 'k': p['env']['k'],\n"
        "                       'multi': p['bandit']['multi'],\n"
        "                       'eps': p['prv']['eps'], 'delta': p['prv']['delta'],\n"
        "                       'algo': type(p['algo']['type']).__name__}, fh)\n"),
}


def test_reference_driver_runs_the_checkouts_own_modules(tmp_path):
    for name, text in STUB.items():
        (tmp_path / name).write_text(text)
    out = bench_simulate.run_reference(tmp_path, "DPUCB", T=40)
    assert "error" not in out, out
    assert out["seconds_per_replication"] >= 0 and out["peak_rss_mb"] > 0
    ran = json.loads((tmp_path / "ran.json").read_text())
    assert ran == {"T": 40, "k": 2, "multi": False, "eps": 1.0, "delta": 1 / 40,
                   "algo": "DPUCB"}
    out = bench_simulate.run_reference(tmp_path, "OFW_peq1", T=40)
    assert json.loads((tmp_path / "ran.json").read_text())["multi"] is True
    assert not (tmp_path / "__pycache__").exists()  # the checkout is left as it was
    broken = bench_simulate.run_reference(tmp_path, "NoSuchAlgo", T=40)
    assert "NoSuchAlgo" in broken["error"]


@pytest.mark.integration
def test_runner_parses_every_json_value_and_lists_the_suite():
    text = '{"a": 1}\n{"b": [2, 3]}\n  {\n  "c": null\n}\n'
    assert runner._json_objects(text) == [{"a": 1}, {"b": [2, 3]}, {"c": None}]
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=ROOT,
                         capture_output=True, text=True, timeout=HANG_CAP)
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in runner.SUITE)


@pytest.mark.integration
def test_runner_refuses_a_directory_that_is_not_the_reference(tmp_path):
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--reference", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=HANG_CAP)
    assert out.returncode == 2 and "bandit_algo.py" in out.stderr


# -- the scaling table (benchmarks/bench_scaling.py) ----------------------------------------

def _cell(agent="a", d=50, K=2, T=10_000, R=1, status="measured", s=None, basis="measured"):
    return {"agent": agent, "d": d, "K": K, "T": T, "R": R, "status": status,
            "seconds_per_replication": s, "basis": basis}


def test_scaling_prediction_is_linear_in_rounds_through_the_last_two_probes():
    from benchmarks import _scaling as S

    cost = lambda h: 0.25 + 3e-4 * h  # noqa: E731  (start-up plus a cost per round)
    probes = [[8, cost(8)], [32, cost(32)], [128, cost(128)]]
    assert abs(S.predict_seconds(probes, 100_000) - cost(100_000)) < 1e-9
    assert S.predict_seconds([[10, 2.0]], 1000) == 200.0  # one probe: proportional
    assert S.predict_seconds([[10, 2.0], [40, 1.0]], 400) == 10.0  # no increase: proportional
    # marking: a cell is run only when its prediction fits the budget
    assert S.mark(cost(100_000), budget=30.0) == S.EXTRAPOLATED
    assert S.mark(cost(10_000), budget=30.0) == S.MEASURED
    assert S.mark(30.0, budget=30.0) == S.MEASURED
    # the ladder: a cost per round not yet visible above the start-up cost does not stop it
    assert S.next_probe_seconds([[2, 0.3], [8, 0.29]], 32) == 0.3
    assert abs(S.next_probe_seconds([[2, 0.3], [8, 0.36]], 32) - 0.6) < 1e-12


def test_scaling_fit_recovers_exponents_and_ignores_cells_not_run():
    from benchmarks import _scaling as S
    from benchmarks import bench_scaling as B

    rows = []
    for d in (50, 500, 5000):
        for T in (10_000, 100_000):
            for K, R, c in ((2, 1, 3e-9), (10, 1, 2e-8), (2, 100, 4e-10)):
                rows.append(_cell("linucb", d, K, T, R, s=c * d**2 * T))
    # not run: predictions far off the law must not enter the fit
    rows += [_cell("linucb", 5000, 10, 100_000, 100, status=S.EXTRAPOLATED, s=1e6,
                   basis="probe: ..."),
             _cell("linucb", 7000, 2, 100_000, 1, status=S.EXTRAPOLATED, s=1e-6,
                   basis="probe: ...")]
    ex = B.exponents(rows, ["linucb"])["linucb"]
    assert abs(ex["measured"]["d"] - 2.0) < 1e-9 and abs(ex["measured"]["T"] - 1.0) < 1e-9
    assert ex["measured"]["n_cells"] == 18 and ex["measured"]["residual_sd"] < 1e-9
    assert ex["count_exponent_d"] == 2
    # one value of d measured: its exponent is not identified, T's still is
    one_d = S.fit_exponents([r for r in rows[:18] if r["d"] == 50])
    assert one_d["d"] is None and abs(one_d["T"] - 1.0) < 1e-9


def test_scaling_cells_not_started_are_scaled_by_the_count_and_marked():
    from benchmarks import _scaling as S
    from benchmarks import bench_scaling as B

    rows = [_cell("dp-ucb", 50, 2, 10_000, 1, s=0.7),
            _cell("dp-ucb", 500, 2, 10_000, 1, status=S.EXTRAPOLATED, s=900.0,
                  basis="probe: 1 s for the first 32 rounds"),
            _cell("dp-ucb", 50, 2, 10_000, 100, s=0.5),
            _cell("linucb", 5000, 2, 10_000, 1, s=10.0)]
    target = _cell("dp-ucb", 5000, 2, 100_000, 1, status=None, s=None, basis="")
    basis = S.nearest_basis(rows + [target], target)
    assert basis is rows[1]  # same agent, same R; nearest d among the timed cells
    count = B.COUNTS["dp-ucb"][2]
    want = 900.0 * count(5000, 2) / count(500, 2) * 10
    assert abs(S.scale_by_count(basis, target, count) / want - 1) < 1e-12
    # the state model puts the big DP-UCB and LinUCB cells over any sane memory limit
    assert B.state_mb("dp-ucb", 5000, 10, 100_000, 1) > 1e5
    assert B.state_mb("linucb", 5000, 10, 10_000, 100) > 1e4
    assert B.state_mb("dp-hdb", 5000, 10, 100_000, 100) < 1000
    # the table shows predictions in parentheses with their status, measurements bare
    report = {"date": "x", "dpbandits": "v", "commit": "c", "command": "cmd",
              "load_average": (1.0, 1.0, 1.0), "load_average_after": (1.0, 1.0, 1.0),
              "cpus": 2, "budget_seconds": 20, "memory_limit_mb": 3000, "exponents": {},
              "cells": [rows[0], rows[1]]}
    md = S.markdown(report)
    assert "| 0.7 |" in md and "| (900) |" in md
    assert "extrapolated, not run: probe: 1 s" in md


def test_scaling_child_measures_within_budget_and_only_predicts_beyond(capsys):
    from benchmarks import _scaling as S
    from benchmarks import bench_scaling as B

    cell = {"agent": "linucb", "d": 8, "K": 2, "T": 200, "R": 2}
    B._child([{**cell, "budget": 1e9, "probe_budget": 1e9},
              {**cell, "budget": 0.0, "probe_budget": 1e9}])
    run, not_run = (json.loads(x) for x in capsys.readouterr().out.splitlines())
    assert run["status"] == S.MEASURED and run["basis"] == "measured"
    assert run["seconds_per_replication"] == run["seconds"] / 2
    assert [p[0] for p in run["probes"]] == [2, 8, 32, 128]  # ladder below T
    assert not_run["status"] == S.EXTRAPOLATED and "seconds" not in not_run
    assert not_run["basis"].startswith("probe:")
    assert not_run["seconds_per_replication"] == not_run["predicted_seconds"] / 2
    assert not_run["predicted_seconds"] == S.predict_seconds(not_run["probes"], 200)


@pytest.mark.integration
def test_scaling_quick_prints_well_formed_json():
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_scaling", "--quick",
                          "--agent", "linucb"], cwd=ROOT, capture_output=True, text=True,
                         timeout=HANG_CAP)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    cells = report["cells"]
    assert len(cells) == 8 and {c["agent"] for c in cells} == {"linucb"}
    assert {(c["d"], c["T"], c["R"]) for c in cells} == {
        (d, T, R) for d in (8, 16) for T in (64, 256) for R in (1, 2)}
    for c in cells:
        assert c["status"] in ("measured", "extrapolated, not run"), c
        assert c["seconds_per_replication"] > 0 and c["peak_rss_mb"] > 0
        assert ("seconds" in c) == (c["status"] == "measured")
    assert set(report["exponents"]["linucb"]) >= {"count", "measured", "probes"}
    assert len(report["load_average"]) == 3 and report["quick"] is True
    assert "scaling" in runner.SUITE

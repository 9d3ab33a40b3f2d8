"""The benchmark runner (``python -m benchmarks``) and its driver of the authors' reference
implementation, checked against a stub checkout (the real one is not needed)."""

import json
import subprocess
import sys
from pathlib import Path

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


def test_runner_parses_every_json_value_and_lists_the_suite():
    text = '{"a": 1}\n{"b": [2, 3]}\n  {\n  "c": null\n}\n'
    assert runner._json_objects(text) == [{"a": 1}, {"b": [2, 3]}, {"c": None}]
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in runner.SUITE)


def test_runner_refuses_a_directory_that_is_not_the_reference(tmp_path):
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--reference", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "bandit_algo.py" in out.stderr

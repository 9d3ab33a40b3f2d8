"""experiments/ and benchmarks/ are packages run with ``python -m`` from the repository root:
every script imports without sys.path edits, and a grid experiment resumes."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _waits import HANG_CAP

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> list[str]:
    files = [*(ROOT / "experiments").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    return sorted(".".join(f.relative_to(ROOT).with_suffix("").parts) for f in files)


@pytest.mark.integration
def test_every_script_is_a_module_that_imports_without_path_edits():
    names = _modules()
    assert "experiments.dp_gibo.common" in names and "benchmarks.bench_batch" in names
    for name in names:
        path = ROOT / Path(*name.split(".")).with_suffix(".py")
        assert "sys.path" not in path.read_text(), f"{path} edits sys.path"
    code = "import importlib, sys\nfor n in sys.argv[1:]:\n    importlib.import_module(n)"
    run = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True,
                         text=True, timeout=HANG_CAP)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.integration
def test_an_experiment_runs_as_a_module_and_resumes_its_grid(tmp_path):
    cmd = [sys.executable, "-m", "experiments.dp_gibo.e41_gp_lengthscales.run", "--quick",
           "--only", "sigma", "--out", str(tmp_path)]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=HANG_CAP)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.count("sigma sweep, sigma=") == 2
    cells = sorted((tmp_path / "cells").glob("*.parquet"))
    assert len(cells) == 2
    results = pd.read_csv(tmp_path / "results_sigma.csv")
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=HANG_CAP)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "sigma sweep, sigma=" not in second.stdout  # both cells were found, none re-run
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "results_sigma.csv"), results)

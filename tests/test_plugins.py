"""A user's own agent, in a file or module, is usable from every entry point: --plugin,
``plugins = [...]`` in a config, the ``dpbandits.plugins`` entry-point group, and parallel
sweep workers; ``import dpbandits`` alone registers the environment ids."""

import json
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from _waits import HANG_CAP

from dpbandits.cli import main

PLUGIN = textwrap.dedent('''
    import numpy as np

    from dpbandits.agents import Agent, register_agent


    @register_agent("always-zero")
    class AlwaysZero(Agent):
        """Pulls arm 0 every round (a plugin test agent)."""

        def _reset(self, n_reps, rng):
            pass

        def act(self, contexts):
            return np.zeros(len(contexts), dtype=np.int64)

        def _update(self, contexts, arms, rewards):
            pass

        @property
        def privacy(self):
            return None
''')
ENV = ["--env", "dpbandits/GLMBandit-v0", "--env-param", "n_arms=2", "--env-param", "dim=4",
       "--env-param", "horizon=20"]


@pytest.fixture(scope="module")
def plugin_file(tmp_path_factory):
    """One plugin file for the module: registering one name from two files is an error."""
    path = tmp_path_factory.mktemp("plugin") / "my_agents.py"
    path.write_text(PLUGIN)
    return path


def _arms(out):
    frame = pd.read_parquet(out / "results.parquet")
    return frame


def test_plugin_file_on_run_and_compare(plugin_file, tmp_path):
    out = tmp_path / "o"
    assert main(["compare", *ENV, "--plugin", str(plugin_file), "--agent", "always-zero",
                 "--agent", "random", "--reps", "2", "--out", str(out), "--no-plot"]) == 0
    assert set(_arms(out)["agent"]) == {"always-zero", "random"}


@pytest.mark.integration
def test_plugins_key_in_a_sweep_config_with_two_worker_processes(plugin_file, tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'env = "dpbandits/GLMBandit-v0"\nplugins = ["{plugin_file}"]\n'
                   "horizon = 20\nn_reps = 2\nseeds = [0, 1, 2]\n"
                   "[env_params]\nn_arms = 2\ndim = 4\nhorizon = 20\n"
                   '[agents.zero]\nname = "always-zero"\n[agents.rand]\nname = "random"\n')
    out = tmp_path / "sw"
    assert main(["sweep", str(cfg), "--jobs", "2", "--out", str(out), "--quiet"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["agent"]) == {"zero", "rand"} and (summary["n"] == 6).all()


def test_plugin_module_name_and_unknown_plugin(plugin_file, tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin_file.parent))
    out = tmp_path / "o"
    assert main(["run", *ENV, "--plugin", "my_agents", "--agent", "always-zero", "--reps", "2",
                 "--out", str(out), "--no-plot"]) == 0
    assert main(["run", *ENV, "--plugin", "no_such_module_xyz", "--agent", "random"]) == 2
    err = capsys.readouterr().err
    assert "no_such_module_xyz" in err and len(err.strip().splitlines()) == 1


def test_registering_the_same_class_again_does_not_fail():
    code = compile(PLUGIN.replace("always-zero", "notebook-zero"), "notebook-cell", "exec")
    namespace: dict = {"__name__": "__main__"}
    exec(code, namespace)
    first = namespace["AlwaysZero"]
    exec(code, namespace)  # re-running the cell defines a new class object
    from dpbandits.agents import agent_class

    assert agent_class("notebook-zero") is namespace["AlwaysZero"] is not first


def _run_python(code: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=HANG_CAP, check=False)


@pytest.mark.integration
def test_import_dpbandits_registers_the_environment_ids():
    res = _run_python("import gymnasium, dpbandits\n"
                      "env = gymnasium.make('dpbandits/Figure5.1-v0')\n"
                      "venv = gymnasium.make_vec('dpbandits/Figure5.1-v0', num_envs=3, "
                      "vectorization_mode='vector_entry_point')\n"
                      "print(venv.reset(seed=0)[0].shape)")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "(3, 50)"


@pytest.mark.integration
def test_entry_point_plugins_are_loaded_on_import(tmp_path):
    site = tmp_path / "site"
    (site / "ep_agents").mkdir(parents=True)
    (site / "ep_agents" / "__init__.py").write_text(PLUGIN.replace("always-zero", "ep-zero"))
    dist = site / "ep_agents-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-agents\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[dpbandits.plugins]\nep = ep_agents\n")
    pythonpath = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    res = _run_python("import dpbandits\nfrom dpbandits.agents import available_agents\n"
                      "print('ep-zero' in available_agents())", {"PYTHONPATH": pythonpath})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"
    # a broken entry point warns, naming it, and does not break the import
    (site / "ep_agents" / "__init__.py").write_text("raise RuntimeError('broken plugin')")
    res = _run_python("import warnings\nwarnings.simplefilter('always')\nimport dpbandits\n"
                      "print('imported')", {"PYTHONPATH": pythonpath})
    assert res.returncode == 0 and res.stdout.strip() == "imported"
    assert "'ep'" in res.stderr and "broken plugin" in res.stderr


def test_reproduce_and_describe_accept_plugins(plugin_file, capsys):
    assert main(["describe", "always-zero", "--plugin", str(plugin_file)]) == 0
    assert "Pulls arm 0" in capsys.readouterr().out
    assert json.dumps is not None

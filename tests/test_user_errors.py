"""A user's mistake is reported as the user's: one line on stderr naming the culprit, exit
status 2, no traceback and no "this is a bug" (issue 24)."""

import sys
import textwrap

import numpy as np
import pytest
from _waits import HANG_CAP

from dpbandits.cli import EXIT_BUG, EXIT_USAGE, main

ENV = ["--env", "dpbandits/GLMBandit-v0", "--env-param", "n_arms=2", "--env-param", "dim=4",
       "--env-param", "horizon=20"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "this is a bug" not in err, err
    return err


def _plugin(tmp_path, name: str, body: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


# -- logged data ------------------------------------------------------------------------------
def test_a_log_with_only_a_header_row_is_one_line(tmp_path, capsys):
    log = tmp_path / "empty.csv"
    log.write_text("x0,x1,action,reward,propensity\n")
    code = main(["run", "--env", "dpbandits/Replay-v0", "--env-param", f'log="{log}"',
                 "--agent", "random", "--out", str(tmp_path / "o")])
    assert code == EXIT_USAGE
    err = _one_line(capsys)
    assert "empty.csv" in err and "no data rows" in err


def test_a_non_numeric_value_is_quoted_from_its_own_row(tmp_path):
    from dpbandits.datasets import read_logged

    log = tmp_path / "bad.csv"
    log.write_text("x0,action,reward,propensity\n0.5,0,1,0.5\n0.1,1,oops,0.5\n0.2,0,1,0.5\n")
    with pytest.raises(ValueError, match=r"'reward'.*row 1.*'oops'") as info:
        read_logged(log)
    assert "'1'" not in str(info.value)


# -- plugins ---------------------------------------------------------------------------------
def test_a_plugin_that_raises_on_import_is_named_with_its_error(tmp_path, capsys):
    path = _plugin(tmp_path, "broken_plugin.py", "x = 1\nraise RuntimeError('no licence')\n")
    assert main(["run", *ENV, "--plugin", str(path), "--agent", "random"]) == EXIT_USAGE
    err = _one_line(capsys)
    assert "broken_plugin.py" in err and "RuntimeError: no licence" in err and "line 2" in err


def test_a_plugin_module_that_raises_on_import_is_named(tmp_path, capsys, monkeypatch):
    _plugin(tmp_path, "broken_module_xyz.py", "import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", *ENV, "--plugin", "broken_module_xyz", "--agent", "random"]) == 2
    err = _one_line(capsys)
    assert "broken_module_xyz" in err and "no_such_dependency_xyz" in err


def test_a_plugin_file_can_import_its_neighbours(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    _plugin(folder, "helpers_for_neighbour_test.py", "ARM = 0\n")
    path = _plugin(folder, "neighbour_agents.py", """
        import numpy as np
        from helpers_for_neighbour_test import ARM

        from dpbandits.agents import Agent, register_agent


        @register_agent("neighbour-zero")
        class NeighbourZero(Agent):
            def _reset(self, n_reps, rng):
                pass

            def act(self, contexts):
                return np.full(len(contexts), ARM, dtype=np.int64)

            def _update(self, contexts, arms, rewards):
                pass

            @property
            def privacy(self):
                return None
        """)
    out = tmp_path / "o"
    assert main(["run", *ENV, "--plugin", str(path), "--agent", "neighbour-zero", "--reps",
                 "2", "--out", str(out), "--no-plot"]) == 0, capsys.readouterr().err


FAULTY = """
    import numpy as np

    from dpbandits.agents import Agent, register_agent


    @register_agent("{name}")
    class Faulty(Agent):
        def _reset(self, n_reps, rng):
            self.calls = 0

        def act(self, contexts):
            self.calls += 1
            arm = {arm}
            return np.full(len(contexts), arm, dtype=np.int64)

        def _update(self, contexts, arms, rewards):
            if self.t_ == {fail_at}:
                raise ZeroDivisionError("my own bug")

        @property
        def privacy(self):
            return None
    """


@pytest.mark.parametrize("arm,fail_at,needles", [
    ("0 if self.calls < 4 else 7", -1, ["act", "round 4", "[0, 1]", "7"]),
    ("0", 5, ["update", "round 6", "ZeroDivisionError: my own bug"]),
])
def test_a_plugin_agent_fault_names_the_agent_and_the_round(tmp_path, capsys, arm, fail_at,
                                                            needles):
    name = f"faulty-{abs(hash((arm, fail_at))) % 10**6}"
    path = _plugin(tmp_path, "faulty.py", FAULTY.format(name=name, arm=arm, fail_at=fail_at))
    code = main(["run", *ENV, "--plugin", str(path), "--agent", f"mine={name}", "--reps", "2",
                 "--out", str(tmp_path / "o"), "--no-plot"])
    assert code == EXIT_USAGE
    err = _one_line(capsys)
    assert "'mine'" in err and "faulty.py" in err, err
    for needle in needles:
        assert needle in err, (needle, err)


def test_a_plugin_agent_that_fails_to_build_is_named(tmp_path, capsys):
    path = _plugin(tmp_path, "unbuildable.py", FAULTY.format(
        name="unbuildable", arm="0", fail_at=-1).replace(
        "        def _reset(", "        def __init__(self, **kw):\n"
        "            raise KeyError('licence')\n\n        def _reset("))
    code = main(["run", *ENV, "--plugin", str(path), "--agent", "unbuildable"])
    assert code == EXIT_USAGE
    err = _one_line(capsys)
    assert "'unbuildable'" in err and "unbuildable.py" in err and "KeyError" in err


def test_a_fault_in_a_builtin_agent_is_still_a_bug(tmp_path, capsys, monkeypatch):
    from dpbandits.agents import agent_class

    def broken(self, contexts, arms, rewards):
        raise ZeroDivisionError("ours")

    monkeypatch.setattr(agent_class("random"), "_update", broken)
    code = main(["run", *ENV, "--agent", "random", "--reps", "2",
                 "--out", str(tmp_path / "o"), "--no-plot"])
    assert code == EXIT_BUG
    assert "bug in dpbandits" in capsys.readouterr().err


# -- optional extras -------------------------------------------------------------------------
def test_a_dataset_environment_without_the_extra_is_one_line(tmp_path, capsys, monkeypatch):
    from dpbandits.envs import _datasets

    _datasets._load.cache_clear()
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    try:
        code = main(["run", "--env", "dpbandits/WineBandit-v0", "--agent", "random",
                     "--horizon", "10", "--out", str(tmp_path / "o")])
    finally:
        _datasets._load.cache_clear()
    assert code == EXIT_USAGE
    err = _one_line(capsys)
    assert "dpbandits[datasets]" in err and "WineBandit" in err


# -- the bug line ------------------------------------------------------------------------------
def _break(monkeypatch, module: str, attr: str):
    import importlib

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(importlib.import_module(module), attr, broken)


def test_the_bug_line_names_results_only_when_some_were_written(tmp_path, capsys,
                                                                 monkeypatch):
    _break(monkeypatch, "dpbandits.harness.compare", "run_agents")  # the simulations
    out = tmp_path / "o"
    assert main(["run", *ENV, "--agent", "random", "--out", str(out)]) == EXIT_BUG
    err = capsys.readouterr().err
    assert "bug in dpbandits" in err and "written so far" not in err
    monkeypatch.undo()
    _break(monkeypatch, "dpbandits.cli", "_plot_compare")
    out = tmp_path / "o2"
    assert main(["run", *ENV, "--agent", "random", "--reps", "2", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"results written so far are in {out}" in err


def test_replay_accepts_n_arms_and_names_an_action_outside_them(tmp_path, capsys):
    rows = ["x0,action,reward,propensity"]
    rows += [f"{i / 10},{i % 3},1,{1 / 3!r}" for i in range(9)]
    rows[6] = "0.5,7,1,0.3333333333333333"
    log = tmp_path / "log.csv"
    log.write_text("\n".join(rows) + "\n")
    argv = ["run", "--env", "dpbandits/Replay-v0", "--env-param", f'log="{log}"', "--agent",
            "random", "--out", str(tmp_path / "o")]
    # inferred arm count: the propensities say 3 arms, the action 7 is named with its row
    assert main(argv) == EXIT_USAGE
    err = _one_line(capsys)
    assert "'action' row 5 is 7" in err and "n_arms" in err and "unbiased" not in err
    assert main([*argv, "--env-param", "n_arms=3"]) == EXIT_USAGE
    err = _one_line(capsys)
    assert "row 5 is 7" in err and "n_arms=3" in err


def test_replay_accepts_action_labels(tmp_path):
    from dpbandits.datasets import read_logged

    log = tmp_path / "labelled.csv"
    log.write_text("x0,action,reward,propensity\n0.1,news,1,0.5\n0.2,sport,0,0.5\n"
                   "0.3,news,0,0.5\n")
    got = read_logged(log, action_labels=["news", "sport"])
    assert got.n_arms == 2 and got.actions.tolist() == [0, 1, 0]
    log.write_text("x0,action,reward,propensity\n0.1,news,1,0.5\n0.2,weather,0,0.5\n")
    with pytest.raises(ValueError, match=r"row 1.*'weather'.*action_labels"):
        read_logged(log, action_labels=["news", "sport"])


def test_replay_env_takes_n_arms_and_action_labels(tmp_path):
    from dpbandits.harness.simulate import env_sizes, make_env

    log = tmp_path / "labelled.csv"
    log.write_text("x0,action,reward,propensity\n" + "".join(
        f"{i / 10},{'ab'[i % 2]},1,0.25\n" for i in range(40)))
    venv = make_env("dpbandits/Replay-v0", 1, {"log": str(log), "action_labels": list("abcd")})
    assert env_sizes(venv)[0] == 4
    venv = make_env("dpbandits/Replay-v0", 1, {"log": str(log), "n_arms": 4,
                                               "action_labels": {"a": 0, "b": 3}})
    assert env_sizes(venv)[0] == 4
    assert np.array_equal(np.unique(venv.unwrapped.config.log.actions), [0, 3])


# -- small ones ------------------------------------------------------------------------------
def test_a_gdp_guarantee_converted_to_epsilon_delta_is_labelled_dp():
    from dpbandits.harness.plots import privacy_label
    from dpbandits.privacy.audit import AuditResult, format_table
    from dpbandits.privacy.guarantee import PrivacyGuarantee

    g = PrivacyGuarantee(epsilon=4.377, delta=1e-5, notion="GDP", mu=1.0, basis="Thm 3.1")
    assert str(g).startswith("1-GDP => (4.377, 1e-05)-DP [")
    assert "DP ε=4.38, δ=1e-05 (of 1-GDP)" in privacy_label(g.to_dict(), None)
    res = AuditResult(component="dp-gibo", epsilon=4.377, delta=1e-5, eps_lb=0.5,
                      confidence=0.95, runs=10, verdict="consistent", notion="GDP",
                      mu_claim=1.0, mu_lb=0.5)
    assert "(4.377, 1e-05)-DP of 1-GDP" in format_table([res])
    assert "-GDP |" not in format_table([res]).replace("1-GDP", "")


def test_check_agent_reports_a_contract_breach_as_contract_error():
    from dpbandits.agents import Agent
    from dpbandits.testing import ContractError, check_agent

    class OutOfRange(Agent):
        def _reset(self, n_reps, rng):
            pass

        def act(self, contexts):
            return np.full(len(contexts), self.n_arms, dtype=np.int64)

        def _update(self, contexts, arms, rewards):
            pass

        @property
        def privacy(self):
            return None

    with pytest.raises(ContractError, match=r"OutOfRange.*returned arms must lie in \[0, 1\]"):
        check_agent(OutOfRange(n_arms=2, dim=3, horizon=5))


def test_make_agent_suggests_the_closest_parameter():
    from dpbandits.agents import make_agent

    with pytest.raises(TypeError, match=r"'epslion' \(did you mean 'epsilon'\?\)"):
        make_agent("dp-ucb", n_arms=2, dim=3, horizon=10, epslion=1.0)
    with pytest.raises(ValueError, match=r"'dp-ucbb' \(did you mean 'dp-ucb'\?\)"):
        make_agent("dp-ucbb", n_arms=2, dim=3, horizon=10)


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_are_refused(tmp_path, capsys, jobs):
    cfg = tmp_path / "s.toml"
    cfg.write_text('env = "dpbandits/GLMBandit-v0"\nhorizon = 5\n[agents.a]\nname = "random"\n')
    for argv in (["sweep", str(cfg)], ["reproduce", "fig5.1"]):
        with pytest.raises(SystemExit) as info:
            main([*argv, "--jobs", jobs, "--out", str(tmp_path / "o")])
        assert info.value.code == EXIT_USAGE
        assert f"--jobs: must be an integer >= 1, got {jobs}" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_seed_beside_seeds_is_refused(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text('env = "dpbandits/GLMBandit-v0"\nhorizon = 5\nseed = 3\nseeds = [0, 1]\n'
                   '[agents.a]\nname = "random"\n')
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == EXIT_USAGE
    err = _one_line(capsys)
    assert "'seed' = 3" in err and "'seeds' = [0, 1]" in err


def test_audit_list_applies_the_pattern(capsys):
    assert main(["audit", "--list", "dp-ucb*"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names and all(n.startswith("dp-ucb") for n in names)


def test_list_shows_plugin_agents(tmp_path, capsys):
    path = _plugin(tmp_path, "listed.py", FAULTY.format(name="listed-agent", arm="0",
                                                        fail_at=-1))
    assert main(["list", "--plugin", str(path)]) == 0
    assert "listed-agent" in capsys.readouterr().out


def test_plugin_paths_in_a_config_are_relative_to_its_folder(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    folder.mkdir()
    _plugin(folder, "beside.py", FAULTY.format(name="beside-agent", arm="0", fail_at=-1))
    cfg = folder / "run.toml"
    cfg.write_text('env = "dpbandits/GLMBandit-v0"\nplugins = ["beside.py"]\nn_reps = 2\n'
                   '[env_params]\nn_arms = 2\ndim = 4\nhorizon = 20\n'
                   '[agents.b]\nname = "beside-agent"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "o"), "--no-plot"]) == 0


def test_the_non_uniform_log_warning_is_one_line_once(tmp_path, capsys):
    from dpbandits.datasets import write_logged
    from dpbandits.envs import synthetic_log

    log = tmp_path / "softmax.csv"
    write_logged(synthetic_log(600, logging="softmax")[0], log)
    assert main(["run", "--env", "dpbandits/Replay-v0", "--env-param", f'log="{log}"',
                 "--env-param", "allow_nonuniform=true", "--agent", "random", "--reps", "2",
                 "--horizon", "20", "--out", str(tmp_path / "o"), "--no-plot"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "warning: replay is unbiased only" in err[0], err
    assert "NonUniformLoggingWarning" in err[0]


def test_dp_hdb_fit_on_a_log_without_forced_sampling_names_the_agent_and_a_way_out():
    from dpbandits.agents import make_agent

    agent = make_agent("dp-hdb", n_arms=2, dim=3, horizon=40, t0=4)
    x = np.random.default_rng(0).uniform(-1, 1, (10, 3))
    arms = np.array([0, 1] * 5)
    with pytest.raises(ValueError, match=r"DPHDB \(dp-hdb\): round 2 .*must pull arm 0.*"
                                         r"4 rows of each arm first"):
        agent.fit(x, arms, np.zeros(10), rng=0)


def test_an_interrupted_reproduce_says_what_is_recomputed(tmp_path, capsys, monkeypatch):
    import importlib

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module("dpbandits.harness.reproduce"), "panel_a",
                        interrupted)
    assert main(["reproduce", "fig5.1", "--size", "tiny", "--out", str(tmp_path / "o"),
                 "--quiet"]) == 130
    err = _one_line(capsys)
    assert "panel C's finished cells are kept" in err and "panels A and B are recomputed" in err


def test_a_long_caveat_is_kept_whole_on_indented_lines():
    import pandas as pd

    from dpbandits.harness.report import WIDTH, privacy_notes

    caveat = ("reconstruction of the authors' code: " + "a long explanation " * 12
              + "ends here")
    table = pd.DataFrame({"agent": ["claims"], "epsilon": [1.0],
                          "certified_epsilon": [float("nan")]})
    notes = privacy_notes(table, [{"agent": "claims", "caveat": caveat}])[2:]
    assert len(notes) > 1 and all(len(n) <= WIDTH for n in notes)
    assert notes[0].startswith("claims: claims epsilon=1, NOT certified: reconstruction")
    assert all(n.startswith("    ") for n in notes[1:])
    assert " ".join(n.strip() for n in notes).endswith("ends here")


def test_the_first_install_says_what_it_is_doing(tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "scripts").mkdir()
    shutil.copy(root / "scripts" / "_env.sh", tmp_path / "scripts")
    shutil.copy(root / "pyproject.toml", tmp_path)
    fake = tmp_path / ".venv" / "bin" / "python"  # stands in for the venv's python and pip
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    run = subprocess.run(["bash", "-c", "source scripts/_env.sh test"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=HANG_CAP, check=True)
    assert "installing dpbandits[test]" in run.stderr and "minutes" in run.stderr
    again = subprocess.run(["bash", "-c", "source scripts/_env.sh test"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=HANG_CAP, check=True)
    assert again.stderr == ""  # installed: nothing to say


def test_the_install_marker_records_every_extra_so_scripts_do_not_reinstall(tmp_path):
    """docs.sh then test.sh then either again: one install per new extra (the union, so the
    first stays), none after; a changed pyproject.toml installs afresh."""
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "scripts").mkdir()
    shutil.copy(root / "scripts" / "_env.sh", tmp_path / "scripts")
    shutil.copy(root / "pyproject.toml", tmp_path)
    fake = tmp_path / ".venv" / "bin" / "python"  # records each pip install it is asked for
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\ncase "$*" in *" -e "*) echo "$*" >> installs.txt;; esac\n')
    fake.chmod(0o755)

    def env(extra):
        subprocess.run(["bash", "-c", f"source scripts/_env.sh {extra}"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_CAP, check=True)
        log = tmp_path / "installs.txt"
        return log.read_text().splitlines() if log.exists() else []

    assert env("docs") == ["-m pip install -q -e .[docs]"]
    assert env("test")[1:] == ["-m pip install -q -e .[docs,test]"]
    assert len(env("docs")) == len(env("test")) == 2  # both recorded: nothing reinstalled
    with open(tmp_path / "pyproject.toml", "a") as fh:
        fh.write("\n# changed\n")
    assert env("test")[2:] == ["-m pip install -q -e .[test]"]


def test_a_closed_pipe_stops_quietly(capsys, monkeypatch):
    # `dpbandits list | head`: the reader closes the pipe; that is not a bug in dpbandits
    import io

    from dpbandits.cli import EXIT_BROKEN_PIPE

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    assert main(["list"]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""

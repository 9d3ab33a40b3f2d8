"""The researcher's path through the CLI and harness: summaries that aggregate every seed and
agent, privacy recorded for every command, early and clear failures, output directories that
never mix runs, strict JSON and readable tables."""

import json
import math
import os
import stat

import numpy as np
import pandas as pd
import pytest
from _waits import HANG_CAP

from dpbandits.cli import main
from dpbandits.harness.results import PRIVACY_RECORD_KEYS, RECORD_SCHEMA, summarize

SMALL_ENV = ("[env_params]\nn_arms = 2\ndim = 6\nhorizon = 30\n")
SWEEP = ('env = "dpbandits/GLMBandit-v0"\nhorizon = 30\nn_reps = 3\nseeds = [0, 1]\n'
         "record_every = 10\n" + SMALL_ENV +
         '[agents.ucb]\nname = "dp-ucb"\ngrid = { epsilon = [1.0, 5.0] }\n'
         '[agents.random]\nname = "random"\n')
FLAGS = ["--env", "dpbandits/GLMBandit-v0", "--env-param", "n_arms=2", "--env-param", "dim=6",
         "--env-param", "horizon=40"]


def _strict_json(path):
    def no_constants(name):
        raise AssertionError(f"{path} holds the non-JSON constant {name}")

    return json.loads(path.read_text(), parse_constant=no_constants)


@pytest.fixture
def swept(tmp_path, capsys):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP)
    out = tmp_path / "sw"
    assert main(["sweep", str(cfg), "--out", str(out), "--quiet"]) == 0
    (out.parent / "printed.txt").write_text(capsys.readouterr().out)
    return out


# -- summaries and privacy records ----------------------------------------------------------
def test_sweep_summary_aggregates_every_seed_and_agent(swept):
    frame = pd.read_parquet(swept / "results.parquet")
    summary = pd.read_csv(swept / "summary.csv")
    # an independent groupby: the final round of every (cell, rep) is one replication
    last = frame[frame["t"] == frame["t"].max()]
    expected = (last.groupby(["agent", "agent.epsilon"], dropna=False)["cum_regret"]
                .agg(["count", "mean", "std"]).reset_index())
    assert len(summary) == len(expected) == 3  # ucb x 2 epsilons + random
    merged = expected.merge(summary, on=["agent", "agent.epsilon"], how="outer")
    assert merged["n"].tolist() == [6, 6, 6] == merged["count"].tolist()  # 2 seeds x 3 reps
    np.testing.assert_allclose(merged["mean_x"], merged["mean_y"])
    np.testing.assert_allclose(merged["std_x"], merged["std_y"])
    half = 1.96 * merged["std_x"] / np.sqrt(6)
    np.testing.assert_allclose(merged["ci95_low"], merged["mean_x"] - half)
    assert {"epsilon", "delta", "certified_epsilon", "ci95_high"} <= set(summary.columns)
    rand = summary[summary["agent"] == "random"].iloc[0]
    assert math.isinf(rand["epsilon"]) and rand["delta"] == 0
    ucb = summary[summary["agent"] == "ucb"].sort_values("agent.epsilon")
    assert ucb["epsilon"].tolist() == [1.0, 5.0]
    assert (ucb["certified_epsilon"] <= ucb["epsilon"] * (1 + 1e-6)).all()
    printed = (swept.parent / "printed.txt").read_text()
    table = [ln for ln in printed.splitlines() if not ln.startswith("results written")]
    assert "random" in printed and max(len(ln) for ln in table) <= 100


def test_sweep_records_privacy_per_cell(swept):
    record = _strict_json(swept / "results.json")
    assert record["schema"] == RECORD_SCHEMA
    entries = record["privacy"]
    assert len(entries) == 6  # 3 agent configurations x 2 seeds
    for e in entries:
        assert set(PRIVACY_RECORD_KEYS) <= set(e) and {"cell", "seed", "params"} <= set(e)
    ucb = [e for e in entries if e["agent"] == "ucb"]
    assert sorted(e["params"]["agent.epsilon"] for e in ucb) == [1.0, 1.0, 5.0, 5.0]
    assert all(e["certified"] and e["certified_epsilon"] <= e["epsilon"] for e in ucb)
    rand = [e for e in entries if e["agent"] == "random"]
    assert all(not e["private"] and e["epsilon"] == "inf" for e in rand)  # the frame's inf


def test_compare_outputs_are_strict_json_measured_and_readable(tmp_path):
    out = tmp_path / "cmp"
    assert main(["compare", *FLAGS, "--agent", "random", "--agent", "dp-hdb", "--reps", "3",
                 "--out", str(out), "--quiet"]) == 0
    record = _strict_json(out / "results.json")
    assert [e["agent"] for e in record["privacy"]] == ["random", "dp-hdb"]
    frame = pd.read_parquet(out / "results.parquet")
    for e in record["privacy"]:  # the record's epsilon is the frame's (inf when not private)
        assert (frame.loc[frame["agent"] == e["agent"], "epsilon"] == float(e["epsilon"])).all()
    assert record["privacy"][0]["epsilon"] == "inf"
    assert record["config"]["n_reps"] == 3
    summary = pd.read_csv(out / "summary.csv")
    assert summary["peak_memory_mb"].notna().all() and (summary["peak_memory_mb"] > 10).all()
    mask = os.umask(0o022)
    os.umask(mask)
    for name in ["results.json", "results.parquet", "summary.csv", "regret.png"]:
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o666 & ~mask, name


def test_default_reps_give_a_confidence_band(tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FLAGS, "--agent", "random", "--out", str(out), "--no-plot"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert summary["n"].iloc[0] >= 10 and summary["ci95_high"].iloc[0] > summary["mean"].iloc[0]


def test_summarize_counts_seeds_and_keeps_agents_without_the_swept_column():
    rows = []
    for seed in (0, 1):
        for rep in (0, 1):
            rows.append({"agent": "a", "seed": seed, "rep": rep, "t": 5, "cum_regret": 1.0 + seed,
                         "agent.epsilon": 1.0})
            rows.append({"agent": "r", "seed": seed, "rep": rep, "t": 5, "cum_regret": 3.0,
                         "agent.epsilon": np.nan})
    s = summarize(pd.DataFrame(rows))
    assert s.set_index("agent")["n"].to_dict() == {"a": 4, "r": 4}
    assert s.set_index("agent")["mean"].to_dict() == {"a": 1.5, "r": 3.0}


# -- failing early ---------------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["--param", "epsilom=1"], "did you mean 'epsilon'"),
    (["--param", "dp-hdb.epsilon=-1"], "epsilon"),
    (["--param", "dp-hbd.epsilon=1"], "did you mean 'dp-hdb'"),
])
def test_agent_parameters_are_checked_before_any_simulation(tmp_path, capsys, argv, needle):
    out = tmp_path / "x"
    assert main(["compare", *FLAGS, "--agent", "dp-hdb", "--agent", "random", *argv,
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not out.exists()


def test_sweep_grid_values_are_checked_before_any_cell_runs(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(SWEEP.replace("[1.0, 5.0]", "[1.0, -5.0]"))
    out = tmp_path / "sw"
    assert main(["sweep", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "ucb" in err and "-5.0" in err and len(err.splitlines()) == 1
    assert not (out / "cells").exists()


def test_empty_seeds_are_named(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(SWEEP.replace("seeds = [0, 1]", "seeds = []"))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "'seeds'" in capsys.readouterr().err


def test_non_empty_out_is_refused_then_overwritten(tmp_path, capsys):
    out = tmp_path / "cmp"
    args = ["run", *FLAGS, "--agent", "random", "--reps", "2", "--out", str(out), "--no-plot"]
    assert main(args) == 0
    (out / "stale.txt").write_text("from an older run")
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--overwrite"]) == 0
    assert not (out / "stale.txt").exists() and (out / "results.parquet").exists()


def test_foreign_directory_is_never_deleted(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    assert main(["run", *FLAGS, "--agent", "random", "--out", str(out), "--overwrite"]) == 2
    assert (out / "thesis.tex").read_text() == "precious"
    assert "refusing" in capsys.readouterr().err


def test_unwritable_out_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["run", *FLAGS, "--agent", "random", "--out", str(blocker / "sub")]) == 2
    err = capsys.readouterr().err.strip()
    assert "not writable" in err and len(err.splitlines()) == 1


def test_sweep_resumes_same_config_and_refuses_another(swept, tmp_path, capsys):
    cells = {p: p.stat().st_mtime_ns for p in (swept / "cells").glob("*.parquet")}
    cfg = tmp_path / "sweep.toml"
    assert main(["sweep", str(cfg), "--out", str(swept), "--quiet"]) == 0
    assert {p: p.stat().st_mtime_ns for p in (swept / "cells").glob("*.parquet")} == cells
    cfg.write_text(SWEEP.replace("n_reps = 3", "n_reps = 2"))
    capsys.readouterr()
    assert main(["sweep", str(cfg), "--out", str(swept), "--quiet"]) == 2
    assert "different configuration" in capsys.readouterr().err


def test_rerunning_a_finished_run_names_it_the_same_configuration(tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["run", *FLAGS, "--agent", "random", "--out", str(out), "--no-plot"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 2  # run does not resume: an identical re-run is refused, and says so
    err = capsys.readouterr().err
    assert "this same configuration" in err and "--overwrite" in err
    assert main([*argv[:-3], "--reps", "1", "--out", str(out), "--no-plot"]) == 2
    assert "different configuration" in capsys.readouterr().err


def test_flags_override_the_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('env = "dpbandits/GLMBandit-v0"\nhorizon = 30\nn_reps = 2\n' + SMALL_ENV +
                   '[agents.ucb]\nname = "dp-ucb"\nparams = { epsilon = 1.0 }\n')
    out = tmp_path / "o"
    assert main(["run", "--config", str(cfg), "--horizon", "20", "--reps", "3",
                 "--param", "ucb.epsilon=4.0", "--out", str(out), "--no-plot"]) == 0
    record = json.loads((out / "results.json").read_text())
    assert record["config"]["horizon"] == 20 and record["config"]["n_reps"] == 3
    assert record["privacy"][0]["epsilon"] == 4.0
    frame = pd.read_parquet(out / "results.parquet")
    assert frame["t"].max() == 20 and frame["rep"].nunique() == 3


def test_agent_flag_with_config_and_duplicate_agents_are_refused(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text('env = "dpbandits/GLMBandit-v0"\n[agents.r]\nname = "random"\n')
    assert main(["run", "--config", str(cfg), "--agent", "linucb"]) == 2
    assert "--agent cannot be combined with --config" in capsys.readouterr().err
    assert main(["compare", *FLAGS, "--agent", "dp-hdb", "--agent", "dp-hdb"]) == 2
    assert "LABEL=NAME" in capsys.readouterr().err


def test_labelled_agents_get_their_own_parameters(tmp_path):
    out = tmp_path / "o"
    assert main(["compare", *FLAGS, "--agent", "lo=dp-hdb", "--agent", "hi=dp-hdb",
                 "--param", "lo.epsilon=0.5", "--param", "hi.epsilon=8", "--reps", "2",
                 "--out", str(out), "--no-plot"]) == 0
    privacy = {e["agent"]: e["epsilon"] for e in json.loads(
        (out / "results.json").read_text())["privacy"]}
    assert privacy == {"lo": 0.5, "hi": 8.0}


# -- errors after validation are bugs; Ctrl-C ----------------------------------------------
def test_an_error_after_validation_shows_a_traceback_and_says_bug(tmp_path, capsys,
                                                                   monkeypatch):
    import importlib

    # the module, not the function dpbandits.harness exports under the same name
    compare_mod = importlib.import_module("dpbandits.harness.compare")

    def broken(*args, **kwargs):
        raise ValueError("boom inside the simulation")

    monkeypatch.setattr(compare_mod, "run_agents", broken)  # the simulations of run/compare
    assert main(["run", *FLAGS, "--agent", "random", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "boom inside the simulation" in err and "bug" in err


def test_ctrl_c_is_one_line(tmp_path, capsys, monkeypatch):
    import importlib

    sweep_mod = importlib.import_module("dpbandits.harness.sweep")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_mod, "sweep", interrupted)
    cfg = tmp_path / "s.toml"
    cfg.write_text(SWEEP)
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "interrupted" in err and "resumes" in err


# -- readable output -------------------------------------------------------------------------
def test_list_shows_sizes_links_and_privacy_notions(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "K=2" in out and "d=50" in out and "T=10000" in out and "logistic" in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("dp-ucb "))
    assert "JDP" in line
    assert max(len(ln) for ln in out.splitlines()) <= 100


@pytest.mark.heavy
def test_describe_shows_parameters_defaults_and_guarantee(capsys):
    assert main(["describe", "dp-hdb"]) == 0
    out = capsys.readouterr().out
    assert "epsilon" in out and "1.0" in out and "JDP" in out and "certified epsilon" in out


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert "(default: AB)" in capsys.readouterr().out


# -- progress ----------------------------------------------------------------------------------
def test_simulate_progress_bar_counts_every_round(capsys):
    from dpbandits.harness.simulate import simulate

    simulate("dpbandits/GLMBandit-v0", "random", horizon=333, n_reps=2,
             env_params={"n_arms": 2, "dim": 3, "horizon": 333}, progress={"leave": True})
    err = capsys.readouterr().err
    assert "333/333" in err and "round" in err


def _run_on_a_terminal(argv: list[str]) -> str:
    """Run the CLI with stderr on a pseudo-terminal; return what it wrote there."""
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    # a real terminal has a size; tqdm draws nothing on a 0-column one
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "dpbandits.cli", *argv],
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=HANG_CAP)
    os.close(master)
    assert proc.returncode == 0
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.integration
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")
def test_progress_shows_on_a_terminal_and_not_with_quiet(tmp_path):
    args = ["compare", *FLAGS, "--agent", "random", "--agent", "linucb", "--reps", "2",
            "--no-plot"]
    shown = _run_on_a_terminal([*args, "--out", str(tmp_path / "a")])
    assert "[2/2] linucb" in shown and "round" in shown
    quiet = _run_on_a_terminal([*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert "round" not in quiet


def test_progress_is_quiet_when_not_a_terminal(tmp_path, capsys):
    assert main(["run", *FLAGS, "--agent", "random", "--reps", "2", "--no-plot",
                 "--out", str(tmp_path / "o")]) == 0
    assert "round" not in capsys.readouterr().err


def test_privacy_notes_explain_each_gap_in_one_whole_line():
    from dpbandits.harness.report import WIDTH, privacy_notes

    table = pd.DataFrame({
        "agent": ["hdb", "ucb", "broken", "claims", "random"],
        "agent.calibration": ["accountant", None, None, None, None],
        "agent.epsilon": [0.3, None, None, None, None],
        "epsilon": [0.3, 1.0, 1.0, 1.0, math.inf],
        "certified_epsilon": [0.2002, 1.0, 1.7, math.nan, math.nan]})
    notes = privacy_notes(table, [{"agent": "claims", "caveat": "the paper's Lemma 3 fails"}])
    assert notes[0].startswith("certified_epsilon: dp_accounting's epsilon")
    assert "looser bound" in notes[1]
    assert all(len(line) <= WIDTH and not line.endswith("...") for line in notes)
    # one line per agent whose certified epsilon differs; none for an exact or non-private one
    assert [n.split(":")[0] for n in notes[2:]] == [
        "hdb calibration=accountant epsilon=0.3", "broken", "claims"]
    assert "more private than claimed" in notes[2] and "0.2002 < claimed 0.3" in notes[2]
    assert "1.7 > claimed 1" in notes[3] and "NOT certified" in notes[3]
    assert "NOT certified: the paper's Lemma 3 fails" in notes[4]

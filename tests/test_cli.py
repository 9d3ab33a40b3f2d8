import json

import pandas as pd
import pytest

from dpbandits.cli import main

SMALL = ["--env-param", "n_arms=2", "--env-param", "dim=6", "--env-param", "horizon=40"]


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "dpbandits/Figure5.1-v0" in out and "dp-hdb" in out and "dp-ucb" in out


def test_compare_with_flags_writes_results(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", "--env", "dpbandits/GLMBandit-v0", "--agent", "random",
                 "--agent", "dp-ucb", "--param", "dp-ucb.epsilon=2.0", "--reps", "2",
                 "--out", str(out), *SMALL])
    assert code == 0
    frame = pd.read_parquet(out / "results.parquet")
    assert set(frame["agent"]) == {"random", "dp-ucb"}
    record = json.loads((out / "results.json").read_text())
    privacy = {e["agent"]: e for e in record["privacy"]}
    assert privacy["dp-ucb"]["epsilon"] == 2.0 and privacy["random"]["private"] is False
    assert (out / "regret.png").exists() and (out / "summary.csv").exists()
    assert "dp-ucb" in capsys.readouterr().out
    assert "env_reward_range" not in record  # the identity link declares no range


def test_compare_records_the_declared_reward_range(tmp_path):
    """On an environment that declares the range of its expected rewards, the record says
    so: the agents that take a reward_range were given it."""
    out = tmp_path / "cmp"
    assert main(["compare", "--env", "dpbandits/LogisticBandit-v0", "--agent", "dp-budget-ls",
                 "--horizon", "60", "--reps", "1", "--no-plot", "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["env_reward_range"] == [0.0, 1.0]


def test_tiny_sweep_via_config(tmp_path):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(
        'env = "dpbandits/GLMBandit-v0"\nhorizon = 30\nn_reps = 2\nseeds = [0, 1]\n'
        "record_every = 10\n[env_params]\nn_arms = 2\ndim = 6\nhorizon = 30\n"
        '[agents.ucb]\nname = "dp-ucb"\ngrid = { epsilon = [1.0, 5.0] }\n'
        '[agents.rand]\nname = "random"\n')
    out = tmp_path / "sw"
    assert main(["sweep", str(cfg), "--out", str(out), "--quiet"]) == 0
    assert len(list((out / "cells").glob("*.parquet"))) == 2 * 2 + 2
    frame = pd.read_parquet(out / "results.parquet")
    assert sorted(frame["agent.epsilon"].dropna().unique()) == [1.0, 5.0]


@pytest.mark.heavy
def test_tiny_reproduce(tmp_path, capsys):
    out = tmp_path / "fig"
    assert main(["reproduce", "fig5.1", "--size", "tiny", "--panels", "AB", "--horizon", "150",
                 "--reps", "2", "--out", str(out), "--quiet"]) == 0
    for name in ["panel_a.parquet", "panel_a.png", "panel_b.parquet", "panel_b.png",
                 "panel_b_summary.csv", "panel_b.json"]:
        assert (out / name).exists(), name
    summary = pd.read_csv(out / "panel_b_summary.csv")
    assert "uniform random" in set(summary["agent"])
    text = capsys.readouterr().out
    assert "NOT certified" in text


@pytest.mark.integration
@pytest.mark.parametrize("panels", ["B", "AB"])
def test_panels_in_two_processes_give_the_same_numbers(tmp_path, panels):
    # scripts/demo.sh runs panels A and B with --jobs 2: every agent in its own process of one
    # pool (both panels' simulations together), same seeds, the same frames and summaries
    # (but for the time and memory each run took)
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        assert main(["reproduce", "fig5.1", "--size", "tiny", "--panels", panels,
                     "--horizon", "120", "--reps", "2", "--jobs", jobs, "--out", str(out),
                     "--quiet", "--no-plot"]) == 0
        outs.append(out)
    for panel in panels.lower():
        frames = [pd.read_parquet(out / f"panel_{panel}.parquet") for out in outs]
        pd.testing.assert_frame_equal(frames[0], frames[1])
        assert frames[0]["agent"].nunique() > (2 if panel == "b" else 3)
        summaries = [pd.read_csv(out / f"panel_{panel}_summary.csv") for out in outs]
        pd.testing.assert_frame_equal(summaries[0].drop(columns=["seconds", "peak_memory_mb"]),
                                      summaries[1].drop(columns=["seconds", "peak_memory_mb"]))


@pytest.mark.parametrize("toml,needle", [
    ('horizon = 5\n[agents.a]\nname = "random"\n', "'env'"),
    ('env = "dpbandits/Nope-v0"\n[agents.a]\nname = "random"\n', "'env'"),
    ('env = "dpbandits/GLMBandit-v0"\n[agents.a]\nname = "nope"\n', "agents.a.name"),
    ('env = "dpbandits/GLMBandit-v0"\n[agents.a]\nparams = {}\n', "agents.a.name"),
    ('env = "dpbandits/GLMBandit-v0"\nhorizon = "ten"\n[agents.a]\nname = "random"\n',
     "'horizon'"),
    ('env = "dpbandits/GLMBandit-v0"\nbogus = 1\n[agents.a]\nname = "random"\n', "'bogus'"),
    ('env = "dpbandits/GLMBandit-v0"\n', "'agents'"),
])
def test_bad_configs_give_one_clear_line(tmp_path, capsys, toml, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    assert main(["run", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err


def test_bad_agent_parameter_is_one_line(capsys):
    assert main(["run", "--env", "dpbandits/GLMBandit-v0", "--agent", "dp-hdb",
                 "--param", "epsilon=-1", *SMALL]) == 2
    err = capsys.readouterr().err
    assert "epsilon" in err and len(err.strip().splitlines()) == 1


def test_unknown_reproduction(capsys):
    assert main(["reproduce", "fig9.9"]) == 2
    assert "fig5.1" in capsys.readouterr().err


def test_audit_command_json(capsys):
    assert main(["audit", "laplace", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["component"] == "laplace"
    assert {"epsilon", "delta", "eps_lb", "confidence", "runs", "verdict"} <= set(out[0])
    assert out[0]["verdict"] == "consistent"


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["sweep", "--help"]])
def test_help_loads_neither_the_harness_nor_the_accountant(argv):
    import subprocess
    import sys

    from _waits import HANG_CAP

    # ``dp_accounting`` itself is in sys.modules from ``import dpbandits`` on, as the lazy
    # package whose __init__ has not run (dpbandits._lazy_accounting): none of its modules
    heavy = ("dp_accounting.dp_event", "dp_accounting.pld", "dp_accounting.rdp",
             "dpbandits.harness", "dpbandits.agents", "numba", "pandas", "matplotlib", "scipy",
             "numpy", "gymnasium")
    code = ("import sys\nfrom dpbandits.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_CAP, check=True).stdout
    assert "usage:" in out and out.strip().endswith("LOADED []"), out[-300:]


SWEEP_TOML = (
    'env = "dpbandits/GLMBandit-v0"\nhorizon = 30\nn_reps = 2\nseeds = [0, 1]\n'
    "record_every = 10\n[env_params]\nn_arms = 2\ndim = 6\nhorizon = 30\n"
    '[agents.ucb]\nname = "dp-ucb"\ngrid = { epsilon = [1.0, 5.0] }\n'
    '[agents.rand]\nname = "random"\n')


def test_sweep_on_a_non_terminal_reports_each_cell_and_says_it_resumes(tmp_path, capsys):
    # pytest's captured stderr is not a terminal: no bar, so one line per finished cell
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP_TOML)
    out = tmp_path / "sw"
    assert main(["sweep", str(cfg), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    done = [line for line in err.splitlines() if " done: " in line]
    assert [line.split(" done")[0] for line in done] == [
        f"dpbandits sweep: cell {i} of 6" for i in range(1, 7)]
    assert "resuming" not in err
    next(iter(sorted((out / "cells").glob("*.parquet")))).unlink()  # as if interrupted
    assert main(["sweep", str(cfg), "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"dpbandits sweep: resuming: 5 of 6 cells done in {out}"
    assert [line.split(" done")[0] for line in err[1:]] == ["dpbandits sweep: cell 6 of 6"]


@pytest.mark.parametrize("argv,needles", [
    (["run", "--hoizon", "5"], ["'--hoizon'", "did you mean '--horizon'?"]),
    (["compare", "--sed=3"], ["'--sed'", "did you mean '--seed'?"]),
    (["rn"], ["invalid choice: 'rn'", "did you mean 'run'?"]),
    (["run", "--band", "boot"], ["--band", "'boot'", "'se', 'bootstrap', 'none'",
                                 "did you mean 'bootstrap'?"]),
    (["sweep", "x.toml", "--jobs", "0"], ["--jobs", "must be an integer >= 1, got 0"]),
    (["compare", "--reps", "x"], ["--reps", "invalid int value: 'x'"]),
    (["list", "extra"], ["'extra'"]),
])
def test_usage_errors_are_one_line_naming_the_flag(capsys, argv, needles):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "usage:" not in err, err
    assert err.startswith("dpbandits") and "error:" in err
    for needle in needles:
        assert needle in err, (needle, err)


def test_help_says_run_takes_one_agent():
    from dpbandits.cli import build_parser

    commands = next(a for a in build_parser()._actions if hasattr(a, "choices")
                    and isinstance(a.choices, dict)).choices
    for name in ("run", "compare"):
        agent = next(a for a in commands[name]._actions if "--agent" in a.option_strings)
        assert "repeat for several" not in agent.help
        assert "run takes one" in agent.help


@pytest.fixture
def drawn(monkeypatch):
    """The figures the harness saves, kept open: [(path, figure)]."""
    from dpbandits.harness import plots

    figures, close = [], plots.plt.close
    original = plots._save

    def keep(fig, path, svg):
        written = original(fig, path, svg)
        figures.append((path, fig))
        return written

    monkeypatch.setattr(plots, "_save", keep)
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: None)
    yield figures
    for _, fig in figures:
        close(fig)


def test_compare_plots_name_environment_horizon_and_replications(tmp_path, drawn):
    assert main(["compare", "--env", "dpbandits/GLMBandit-v0", "--agent", "random",
                 "--agent", "dp-ucb", "--reps", "3", "--out", str(tmp_path / "c"), "--quiet",
                 *SMALL]) == 0
    titles = {path.name: fig.axes[0].get_title() for path, fig in drawn}
    assert set(titles) == {"regret", "final_regret"}
    for title in titles.values():
        assert "dpbandits/GLMBandit-v0" in title and "T = 40" in title
        assert "3 replications" in title
    box = dict((path.name, fig) for path, fig in drawn)["final_regret"].axes[0]
    texts = [t.get_text() for t in box.get_legend().get_texts()]
    assert texts == ["mean", "median"]
    # the entry shows the mean marker the boxes carry (matplotlib's meanprops: a triangle)
    marker = box.get_legend().legend_handles[0].get_marker()
    assert marker == "^" and sum(line.get_marker() == "^" for line in box.lines) == 2


def test_demo_summary_is_readable_text():
    from dpbandits.harness.reproduce import format_timings

    assert format_timings({"A+B": 61.04, "C": 3.25}) == "time per panel: A+B 61.0 s, C 3.2 s"

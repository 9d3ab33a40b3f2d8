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

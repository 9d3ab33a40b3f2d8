"""``dpbandits run``/``compare`` write their files in a background thread while the plots are
drawn (``harness.pipeline``, issue 28): the files are those written one step after the
other, the frame is the one ``pd.concat`` of the per-agent frames gives, an error of the
background thread is the command's, and an interruption leaves whole files only. The tests
wait on events, never on time."""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pytest
from _waits import HANG_CAP

import dpbandits.cli as cli
from dpbandits.cli import EXIT_BUG, EXIT_INTERRUPTED, main
from dpbandits.harness import pipeline, plots
from dpbandits.harness import results as results_mod
from dpbandits.harness.compare import compare
from dpbandits.harness.outdir import MARKER
from dpbandits.harness.results import (
    FrameBuilder,
    SimulationResult,
    privacy_level,
    recorded_steps,
    tidy_frame,
)

ENV_ID = "dpbandits/GLMBandit-v0"
#: 450 rounds: more than the plots draw (MAX_POINTS = 400), so they are thinned
ENV_PARAMS = {"n_arms": 2, "dim": 4, "horizon": 450}
ENV = ["--env", ENV_ID, *(f for k, v in ENV_PARAMS.items() for f in ("--env-param", f"{k}={v}"))]
AGENTS = {"linucb": "linucb", "random": "random"}


def _compare(out, *flags) -> int:
    agents = [f for name in AGENTS for f in ("--agent", name)]
    return main(["compare", *ENV, *agents, "--reps", "3", "--out", str(out), "--quiet", *flags])


def _files(out) -> list[str]:
    return sorted(p.name for p in out.iterdir())


def _no_output_thread() -> bool:
    return not any(t.name.startswith("dpbandits-output") for t in threading.enumerate())


@pytest.fixture(scope="module")
def results() -> list[SimulationResult]:
    _, _, res = compare(AGENTS, ENV_ID, n_reps=3, env_params=ENV_PARAMS)
    return list(res.values())


# -- the same files ----------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [[], ["--log", "--csv"]])
def test_the_files_are_those_written_one_step_after_the_other(tmp_path, monkeypatch, flags):
    outs = {}
    for background in (False, True):
        monkeypatch.setattr(pipeline, "BACKGROUND", background)
        outs[background] = tmp_path / f"background-{background}"
        assert _compare(outs[background], *flags) == 0
    seq, bg = outs[False], outs[True]
    assert _files(seq) == _files(bg)  # no plots' folder left behind
    assert {"results.parquet", "regret.png", "final_regret.png"} <= set(_files(bg))
    for name in _files(seq):
        if name.endswith((".parquet", ".png")) or name == "results.csv":
            assert (seq / name).read_bytes() == (bg / name).read_bytes(), name
    measured = ["seconds", "peak_memory_mb"]  # wall time and memory of each run
    pd.testing.assert_frame_equal(pd.read_csv(seq / "summary.csv").drop(columns=measured),
                                  pd.read_csv(bg / "summary.csv").drop(columns=measured))
    records = [json.loads((d / "results.json").read_text()) for d in (seq, bg)]
    for record in records:
        record["config"].pop("out")
    assert records[0] == records[1]
    frame, _, _ = compare(AGENTS, ENV_ID, n_reps=3, env_params=ENV_PARAMS)
    pd.testing.assert_frame_equal(pd.read_parquet(bg / "results.parquet"), frame)
    assert _no_output_thread()


def _concatenated(results: list[SimulationResult], record_every: int) -> pd.DataFrame:
    """The frame as it was built before FrameBuilder: one frame per result, concatenated."""
    frames = []
    for r in results:
        steps = recorded_steps(r.horizon, record_every)
        n = r.n_reps * len(steps)
        level = privacy_level(r.privacy, r.certified)
        if r.regret is None:
            values = {"reward": r.rewards[:, steps - 1].ravel(),
                      "cum_reward": np.cumsum(r.rewards, axis=1)[:, steps - 1].ravel(),
                      "log_events": r.log_events[:, steps - 1].ravel()}
        else:
            values = {"regret": r.regret[:, steps - 1].ravel(),
                      "cum_regret": np.cumsum(r.regret, axis=1)[:, steps - 1].ravel()}
        frames.append(pd.DataFrame({
            "agent": pd.array([r.agent] * n, dtype=pd.StringDtype()),
            "rep": np.repeat(np.arange(r.n_reps), len(steps)), "t": np.tile(steps, r.n_reps),
            **values, **{k: np.full(n, level[k]) for k in ("epsilon", "delta",
                                                           "certified_epsilon")}}))
    return pd.concat(frames, ignore_index=True)


def _result(agent: str, n_reps: int, horizon: int, seed: int, replay: bool = False,
            ) -> SimulationResult:
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(n_reps, horizon))
    return SimulationResult(
        agent=agent, regret=None if replay else rng.exponential(size=(n_reps, horizon)),
        arms=rng.integers(0, 2, (n_reps, horizon), dtype=np.int32), rewards=rewards,
        seconds=0.0, privacy={"epsilon": 1.0, "delta": 1e-5, "notion": "JDP"},
        log_events=np.cumsum(rng.integers(1, 4, (n_reps, horizon)), axis=1) if replay
        else None)


@pytest.mark.parametrize("record_every", [1, 7, 20, 50])
def test_the_frame_is_the_concatenation_of_the_agents_frames(record_every):
    same = [_result("a", 3, 20, 0), _result("b", 3, 20, 1), _result("c", 3, 20, 2)]
    mixed = [_result("sim", 2, 20, 3), _result("replay", 2, 20, 4, replay=True),
             _result("longer", 2, 30, 5)]
    for results in (same, mixed, same[:1]):
        expected = _concatenated(results, record_every)
        frame = tidy_frame(results, record_every)
        pd.testing.assert_frame_equal(frame, expected, check_exact=True)
        assert list(frame.dtypes) == list(expected.dtypes)


def test_a_frame_builder_takes_its_results_one_at_a_time():
    results = [_result("a", 2, 10, 0), _result("b", 2, 10, 1)]
    builder = FrameBuilder(2, 3)
    builder.add(results[0])
    pd.testing.assert_frame_equal(builder.frame(), _concatenated(results[:1], 3))
    builder.add(results[1])
    pd.testing.assert_frame_equal(builder.frame(), _concatenated(results, 3))
    with pytest.raises(ValueError, match="all 2 results"):
        builder.add(results[0])


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("record_every", [1, 3])  # 450 recorded rounds thinned, 150 kept
def test_the_plots_read_the_rows_thin_rounds_keeps_and_draw_the_same_png(tmp_path, results,
                                                                         log, record_every):
    thinned = plots.thin_rounds(tidy_frame(results, record_every), log=log)
    frame = plots.thinned_frame(results, record_every, log=log)
    pd.testing.assert_frame_equal(frame, thinned.reset_index(drop=True), check_exact=True)
    for name, data in (("whole", thinned), ("arrays", frame)):
        plots.plot_regret_curves(data, tmp_path / name / "regret", log=log, floor="random")
        plots.plot_final_regret_distribution(data, tmp_path / name / "final")
    for png in ("regret.png", "final.png"):
        assert (tmp_path / "whole" / png).read_bytes() == (tmp_path / "arrays" / png).read_bytes()


# -- errors ------------------------------------------------------------------------------------
def test_a_failed_write_fails_the_command_with_the_line_it_gave_in_sequence(tmp_path, capsys,
                                                                           monkeypatch):
    threads = []

    def disk_full(frame, path):
        threads.append(threading.current_thread().name)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results_mod, "write_frame_atomic", disk_full)
    lines = {}
    for background in (False, True):
        monkeypatch.setattr(pipeline, "BACKGROUND", background)
        out = tmp_path / f"background-{background}"
        assert _compare(out) == EXIT_BUG
        err = capsys.readouterr().err
        assert "OSError: [Errno 28] No space left on device" in err
        lines[background] = err.strip().splitlines()[-1].replace(str(out), "OUT")
        assert _files(out) == [MARKER]  # the plots drawn meanwhile are dropped
    assert lines[True] == lines[False]
    assert "internal error (OSError)" in lines[True] and "written so far" not in lines[True]
    assert threads[0] == "MainThread" and threads[1].startswith("dpbandits-output")
    assert _no_output_thread()


def test_a_failure_while_an_agent_s_rows_are_written_fails_the_command(tmp_path, capsys,
                                                                       monkeypatch):
    def broken(self, result):
        raise RuntimeError("rows went wrong")

    monkeypatch.setattr(FrameBuilder, "add", broken)
    out = tmp_path / "o"
    assert _compare(out) == EXIT_BUG
    err = capsys.readouterr().err
    assert "RuntimeError: rows went wrong" in err and "written so far" not in err
    assert _files(out) == [MARKER]
    assert _no_output_thread()


def test_an_error_of_the_plots_comes_after_the_files_are_written(tmp_path, capsys,
                                                                 monkeypatch):
    def broken(*args):
        raise RuntimeError("plot went wrong")

    monkeypatch.setattr(cli, "_plot_compare", broken)
    out = tmp_path / "o"
    assert _compare(out) == EXIT_BUG
    assert f"results written so far are in {out}" in capsys.readouterr().err
    assert _files(out) == sorted([MARKER, "results.json", "results.parquet", "summary.csv"])


# -- interruptions -----------------------------------------------------------------------------
def test_an_interruption_while_writing_leaves_whole_files_only(tmp_path, capsys, monkeypatch):
    writing, interrupted = threading.Event(), threading.Event()
    write = results_mod.write_frame_atomic
    plot = cli._plot_compare

    def held(frame, path):  # the Parquet file is being written when Ctrl-C comes
        writing.set()
        assert interrupted.wait(HANG_CAP)
        write(frame, path)

    def plot_then_interrupt(*args):
        plot(*args)
        assert writing.wait(HANG_CAP)
        interrupted.set()
        raise KeyboardInterrupt

    monkeypatch.setattr(results_mod, "write_frame_atomic", held)
    monkeypatch.setattr(cli, "_plot_compare", plot_then_interrupt)
    out = tmp_path / "o"
    assert _compare(out) == EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err
    # the write under way finished whole (renamed into place), the plots were dropped
    assert _files(out) == sorted([MARKER, "results.json", "results.parquet", "summary.csv"])
    assert len(pd.read_parquet(out / "results.parquet")) == 2 * 3 * 450
    assert _no_output_thread()


def test_an_interruption_during_the_simulations_writes_nothing(tmp_path, capsys, monkeypatch):
    import importlib

    compare_mod = importlib.import_module("dpbandits.harness.compare")
    simulate = compare_mod.simulate
    calls = []

    def second_interrupted(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return simulate(*args, **kwargs)

    monkeypatch.setattr(compare_mod, "simulate", second_interrupted)
    out = tmp_path / "o"
    assert _compare(out) == EXIT_INTERRUPTED
    assert f"nothing complete was written to {out}" in capsys.readouterr().err
    assert _files(out) == [MARKER]
    assert _no_output_thread()

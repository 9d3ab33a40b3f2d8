"""--overwrite replaces earlier results only when the new run completes (issue 35): a run that
fails on the user's mistake or is interrupted leaves them byte for byte."""

import importlib

import pytest

from dpbandits.cli import main
from dpbandits.harness.outdir import MARKER, claim_out_dir

FLAGS = ["--env", "dpbandits/GLMBandit-v0", "--env-param", "n_arms=2", "--env-param", "dim=6",
         "--env-param", "horizon=60", "--reps", "2", "--no-plot"]

PLUGIN = '''
import numpy as np
from dpbandits.agents import register_agent
from dpbandits.agents.base import Agent


@register_agent("{name}")
class Faulty(Agent):
    def __init__(self, *, n_arms, dim, horizon, fail_at=50, mode="raise"):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.fail_at = fail_at
        self.mode = mode

    def _reset(self, n_reps, rng):
        pass

    def act(self, contexts):
        if self.t_ + 1 >= self.fail_at:
            if self.mode == "raise":
                raise RuntimeError("the plugin's own bug at round 50")
            return np.full(contexts.shape[0], self.n_arms + 3)  # arm out of range
        return np.zeros(contexts.shape[0], dtype=np.int64)

    def _update(self, contexts, arms, rewards):
        pass

    @property
    def privacy(self):
        return None
'''


def _snapshot(path):
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def earlier(tmp_path):
    out = tmp_path / "o"
    assert main(["run", *FLAGS, "--agent", "random", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("mode", ["raise", "arm"])
def test_a_failing_plugin_agent_keeps_the_earlier_results(earlier, tmp_path, capsys, mode):
    plugin = tmp_path / f"faulty_{mode}.py"
    plugin.write_text(PLUGIN.format(name=f"faulty-{mode}"))
    before = _snapshot(earlier)
    capsys.readouterr()
    code = main(["run", *FLAGS, "--plugin", str(plugin), "--agent", f"faulty-{mode}",
                 "--param", f'mode="{mode}"', "--out", str(earlier), "--overwrite"])
    assert code != 0
    assert _snapshot(earlier) == before  # byte-identical, nothing added or removed
    assert f"the earlier results in {earlier} were kept" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["o", plugin.name, *(["__pycache__"] if (tmp_path / "__pycache__").exists() else [])])


def test_ctrl_c_keeps_the_earlier_results(earlier, capsys, monkeypatch):
    compare_mod = importlib.import_module("dpbandits.harness.compare")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(compare_mod, "run_agents", interrupted)
    before = _snapshot(earlier)
    capsys.readouterr()
    assert main(["compare", *FLAGS, "--agent", "random", "--agent", "dp-ucb",
                 "--out", str(earlier), "--overwrite"]) == 130
    err = capsys.readouterr().err
    assert _snapshot(earlier) == before and "were kept" in err and len(err.splitlines()) == 1
    assert [p.name for p in earlier.parent.iterdir()] == ["o"]  # the new run was dropped


def test_a_completed_overwrite_replaces_the_earlier_results(earlier):
    (earlier / "stale.txt").write_text("old")
    assert main(["run", *FLAGS, "--agent", "dp-ucb", "--out", str(earlier),
                 "--overwrite"]) == 0
    assert not (earlier / "stale.txt").exists() and (earlier / "results.parquet").exists()
    assert [p.name for p in earlier.parent.iterdir()] == ["o"]


@pytest.mark.parametrize("error", [ValueError("arm 5 out of range"), KeyboardInterrupt()])
def test_the_python_claim_keeps_the_earlier_results(tmp_path, error):
    out = tmp_path / "mine"
    with claim_out_dir(out, command="mine", fingerprint="a") as claim:
        (claim.path / "r.txt").write_text("earlier")
    before = _snapshot(out)
    with pytest.raises(type(error)):
        with claim_out_dir(out, command="mine", fingerprint="b", overwrite=True) as claim:
            assert claim.path != out and claim.replacing
            (claim.path / "r.txt").write_text("new, unfinished")
            raise error
    assert _snapshot(out) == before and [p.name for p in tmp_path.iterdir()] == ["mine"]
    with claim_out_dir(out, command="mine", fingerprint="b", overwrite=True) as claim:
        (claim.path / "r.txt").write_text("new")
    assert (out / "r.txt").read_text() == "new" and (out / MARKER).exists()


def test_an_interrupted_resumable_overwrite_resumes_beside_the_earlier_results(tmp_path):
    out = tmp_path / "sw"
    with claim_out_dir(out, command="sweep", fingerprint="a", resumable=True) as claim:
        (claim.path / "cell1").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with claim_out_dir(out, command="sweep", fingerprint="b", overwrite=True,
                           resumable=True) as claim:
            (claim.path / "cell1").write_text("new")
            raise KeyboardInterrupt
    assert (out / "cell1").read_text() == "old"
    again = claim_out_dir(out, command="sweep", fingerprint="b", overwrite=True,
                          resumable=True)
    assert (again.path / "cell1").read_text() == "new"  # finished work of the new run kept
    again.commit()
    assert (out / "cell1").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["sw"]


@pytest.mark.parametrize("finished", [True, False])
def test_a_commit_cut_between_its_renames_is_finished_by_the_next_claim(tmp_path, finished):
    """A SIGKILL between ``out -> .out.dpbandits-old`` and ``.out.dpbandits-new -> out``: the
    next claim puts the finished run in place (the earlier results deleted, as the commit
    would have), or, with no finished run, the earlier results back; nothing is orphaned."""
    import os

    out = tmp_path / "out"
    first = claim_out_dir(out, command="run", fingerprint="a")
    (out / "old.txt").write_text("earlier")
    first.commit()
    replacing = claim_out_dir(out, command="run", fingerprint="b", overwrite=True)
    (replacing.path / "new.txt").write_text("finished")
    os.rename(out, tmp_path / ".out.dpbandits-old")  # the commit's first rename, then the cut
    if not finished:
        import shutil

        shutil.rmtree(replacing.path)
    again = claim_out_dir(out, command="run", fingerprint="b", overwrite=True)
    kept = "new.txt" if finished else "old.txt"
    assert (out / kept).exists() and not (tmp_path / ".out.dpbandits-old").exists()
    again.abandon()

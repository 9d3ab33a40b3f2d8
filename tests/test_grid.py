"""The resumable grid runner behind sweep and the experiments (dpbandits.harness.grid)."""

import numpy as np
import pandas as pd
import pytest

from dpbandits.harness.grid import (
    CellFiles,
    CsvTable,
    GridCell,
    cell_digest,
    grid_cells,
    product,
    run_grid,
)


def _compute(cell):
    """A cell's frame: a draw from the cell's own stream (so a wrong seed shows)."""
    rng = np.random.default_rng([cell["a"], cell.seed])
    return pd.DataFrame({"a": cell["a"], "b": cell["b"], "seed": cell.seed,
                         "x": rng.standard_normal(3)})


class _Counting:
    def __init__(self, stop_at=None, skip=()):
        self.calls, self.stop_at, self.skip = [], stop_at, set(skip)

    def __call__(self, cell):
        if len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append(cell.key)
        if cell["a"] in self.skip:
            return None
        return _compute(cell), {"a": cell["a"], "seed": cell.seed}


def _cells():
    return grid_cells({"b": ["u", "v"], "a": [1, 2]}, seeds=[0, 5])


def test_product_and_cells_order_and_checks():
    assert product({"b": [1, 2], "a": ["x"]}) == [{"a": "x", "b": 1}, {"a": "x", "b": 2}]
    assert product({}) == [{}]
    with pytest.raises(TypeError, match="'a'.*list"):
        product({"a": "abc"})
    with pytest.raises(ValueError, match="'a' is an empty list"):
        product({"a": []})
    cells = _cells()
    assert [(c["a"], c["b"], c.seed) for c in cells[:3]] == [(1, "u", 0), (1, "u", 5),
                                                           (1, "v", 0)]
    assert len({c.key for c in cells}) == 8
    # the key is the digest of parameters and seed, independent of dict order
    assert GridCell({"a": 1, "b": 2}, 3).key == GridCell({"b": 2, "a": 1}, 3).key
    assert GridCell({"a": 1}, 3).key == cell_digest({"seed": 3, "a": 1}) != GridCell({"a": 1}).key
    named = grid_cells([{"a": 1}], seeds=[7], name=lambda p, s: f"a{p['a']}_s{s}")
    assert named[0].key == "a1_s7"


def test_run_grid_stores_each_cell_and_resumes_without_recomputing(tmp_path):
    store = CellFiles(tmp_path / "cells")
    first = _Counting()
    frames = run_grid(_cells(), first, store)
    assert len(first.calls) == 8
    expected = [_compute(c) for c in _cells()]
    for got, want in zip(frames, expected, strict=True):
        pd.testing.assert_frame_equal(got, want)
    assert store.record(_cells()[1].key) == {"a": 1, "seed": 5}
    mtimes = {p: p.stat().st_mtime_ns for p in store.directory.iterdir()}
    again = _Counting()
    frames2 = run_grid(_cells(), again, store)
    assert again.calls == []
    assert {p: p.stat().st_mtime_ns for p in store.directory.iterdir()} == mtimes
    pd.testing.assert_frame_equal(pd.concat(frames2), pd.concat(frames))


def test_ctrl_c_keeps_finished_cells_and_the_rerun_computes_only_the_rest(tmp_path):
    store = CellFiles(tmp_path / "cells", suffix=".csv")
    cells = _cells()
    with pytest.raises(KeyboardInterrupt):
        run_grid(cells, _Counting(stop_at=3), store)
    assert [store.done(c.key) for c in cells] == [True] * 3 + [False] * 5
    assert not list(store.directory.glob("*.tmp")) and not list(store.directory.glob(".*"))
    rest = _Counting()
    frames = run_grid(cells, rest, store)
    assert rest.calls == [c.key for c in cells[3:]]
    uninterrupted = run_grid(cells, _Counting(), CellFiles(tmp_path / "full", suffix=".csv"))
    pd.testing.assert_frame_equal(pd.concat(frames), pd.concat(uninterrupted))


def test_a_skipped_cell_is_not_stored_and_is_tried_again(tmp_path):
    store = CellFiles(tmp_path)
    frames = run_grid(_cells(), _Counting(skip={2}), store)
    assert [f is None for f in frames] == [False] * 4 + [True] * 4
    again = _Counting(skip={2})
    run_grid(_cells(), again, store)
    assert again.calls == [c.key for c in _cells()[4:]]


@pytest.mark.integration
def test_parallel_workers_equal_serial(tmp_path):
    serial = run_grid(_cells(), _compute, CellFiles(tmp_path / "a"))
    parallel = run_grid(_cells(), _compute, CellFiles(tmp_path / "b"), n_jobs=2)
    pd.testing.assert_frame_equal(pd.concat(parallel), pd.concat(serial))


def test_csv_table_resumes_from_rows_keyed_by_columns(tmp_path):
    path = tmp_path / "raw.csv"
    cells = grid_cells({"a": [1, 2], "b": [0.5, 2.0]}, seeds=[0],
                       name=lambda p, s: f"{p['a']}|{float(p['b'])}")
    run_grid(cells[:2], _compute, CsvTable(path, ["a", "b"]))
    before = path.read_bytes()
    calls = _Counting()
    table = CsvTable(path, ["a", "b"])  # a new run reads the finished cells back
    assert [table.done(c.key) for c in cells] == [True, True, False, False]
    frames = run_grid(cells, calls, table)
    assert calls.calls == [c.key for c in cells[2:]]
    assert path.read_bytes().startswith(before)
    pd.testing.assert_frame_equal(pd.read_csv(path), pd.concat(frames, ignore_index=True))
    with pytest.raises(ValueError, match="one writer"):
        run_grid(cells, _compute, table, n_jobs=2)


def test_a_pool_draws_noise_in_a_second_thread_only_when_the_threads_fit(monkeypatch):
    """Processes x 2 threads (main + noise drawing) must fit on the cores: on 2 cores a pool
    of 2 busy workers draws synchronously, 1 busy worker (or 4 cores) prefetches."""
    from dpbandits import _background
    from dpbandits.harness.grid import pool_prefetch

    monkeypatch.setattr(_background, "available_cores", lambda: 2)
    assert not pool_prefetch(2, 10)
    assert pool_prefetch(1, 10) and pool_prefetch(2, 1)  # one busy worker
    monkeypatch.setattr(_background, "available_cores", lambda: 4)
    assert pool_prefetch(2, 10) and not pool_prefetch(3, 10)


def test_a_worker_told_not_to_prefetch_creates_synchronous_streams(tmp_path, monkeypatch):
    """The flag a pool passes with each task reaches the streams its cell creates, and the
    worker's environment is as before once the task is done."""
    import os

    from dpbandits.harness.grid import _compute_and_store
    from dpbandits.privacy.streams import ChunkedDraws

    def compute(cell):
        seen.append(ChunkedDraws(lambda start, n: (np.zeros(n),), 10, 1, chunk=2,
                                 prefetch=True).prefetch)
        return None

    monkeypatch.delenv("DPBANDITS_PREFETCH", raising=False)
    seen: list[bool] = []
    for flag in (False, True, None):
        _compute_and_store(_cells()[0], compute, CellFiles(tmp_path), None, None, flag)
        assert "DPBANDITS_PREFETCH" not in os.environ
    assert seen == [False, True, True]

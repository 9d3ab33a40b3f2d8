"""Parallel, resumable sweeps over agents x agent params x env params x seeds.

Each cell of the grid is one ``simulate`` call. A finished cell is written atomically to
``<out_dir>/cells/<cell_id>.parquet`` (temporary file + rename), so a killed sweep never
leaves a partial file that reads as complete, and a re-run skips the cells already on disk.
Cells run on local processes through joblib, or on a Dask cluster through joblib's dask
backend when ``scheduler`` (an address or a ``dask.distributed.Client``) is given. Beside each
cell's Parquet file, ``<cell_id>.json`` holds the cell's privacy record entry (written first:
the Parquet file marks the cell finished). Workers import the sweep's ``plugins`` before their
first cell, so agents registered by a user's module or file run in parallel sweeps too, and a
local worker exits by itself within a second of its parent process dying.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpbandits._validation import check_int
from dpbandits.harness.results import (
    atomic_write_bytes,
    dumps_json,
    save_results,
    summarize,
    write_csv_atomic,
    write_frame_atomic,
)


@dataclass(frozen=True)
class Cell:
    """One unit of work: an agent (registry name + params) on an env (id + params), one seed."""

    label: str
    agent: str
    agent_params: tuple
    env: str
    env_params: tuple
    seed: int
    n_reps: int
    horizon: int
    record_every: int

    def spec(self) -> dict:
        return {
            "label": self.label, "agent": self.agent, "agent_params": dict(self.agent_params),
            "env": self.env, "env_params": dict(self.env_params), "seed": self.seed,
            "n_reps": self.n_reps, "horizon": self.horizon, "record_every": self.record_every,
        }

    @property
    def cell_id(self) -> str:
        blob = json.dumps(self.spec(), sort_keys=True, default=str).encode()
        return hashlib.sha1(blob).hexdigest()[:16]


def _grid(params: Mapping[str, Sequence] | None) -> list[tuple]:
    """Cartesian product of ``{name: [values...]}`` as sorted (name, value) tuples."""
    if not params:
        return [()]
    names = sorted(params)
    for name in names:
        if isinstance(params[name], (str, bytes)) or not isinstance(params[name], Sequence):
            raise TypeError(f"sweep grid entry {name!r} must be a list of values, "
                            f"got {params[name]!r}")
        if len(params[name]) == 0:
            raise ValueError(f"sweep grid entry {name!r} is an empty list")
    return [tuple(zip(names, combo, strict=True))
            for combo in itertools.product(*(params[n] for n in names))]


@dataclass
class SweepSpec:
    """What to sweep.

    ``agents`` maps a label to ``{"name": registry name, "params": {fixed params},
    "grid": {param: [values]}}``; ``env`` is a registered env id with fixed ``env_params``
    and swept ``env_grid``; every cell runs ``n_reps`` replications for each seed.
    """

    agents: Mapping[str, Mapping]
    env: str
    horizon: int
    seeds: Sequence[int] = (0,)
    n_reps: int = 1
    env_params: Mapping = field(default_factory=dict)
    env_grid: Mapping[str, Sequence] = field(default_factory=dict)
    record_every: int = 1

    def cells(self) -> list[Cell]:
        check_int("horizon", self.horizon, low=1)
        check_int("n_reps", self.n_reps, low=1)
        check_int("record_every", self.record_every, low=1)
        if not self.agents:
            raise ValueError("agents must name at least one agent")
        out = []
        for label, entry in self.agents.items():
            if "name" not in entry:
                raise ValueError(f"agents.{label} is missing the required key 'name'")
            fixed = dict(entry.get("params", {}))
            for agent_combo in _grid(entry.get("grid")):
                params = tuple(sorted({**fixed, **dict(agent_combo)}.items()))
                for env_combo in _grid(self.env_grid):
                    env_params = tuple(sorted({**self.env_params, **dict(env_combo)}.items()))
                    for seed in self.seeds:
                        out.append(Cell(label, entry["name"], params, self.env, env_params,
                                        check_int("seed", seed, low=0), self.n_reps,
                                        self.horizon, self.record_every))
        return out


def run_cell(cell: Cell, *, with_record: bool = False):
    """Simulate one cell and return its tidy frame with the cell's parameters as columns
    (and, with ``with_record``, the cell's privacy record entry as well)."""
    from dpbandits.harness.simulate import simulate

    # Replication r of a vector env reset with seed s is the single env with seed s + r, so
    # seeds are spaced by n_reps: different sweep seeds never share a problem instance.
    res = simulate(cell.env, cell.agent, horizon=cell.horizon, n_reps=cell.n_reps,
                   seed=cell.seed * cell.n_reps, agent_params=dict(cell.agent_params),
                   env_params=dict(cell.env_params), label=cell.label)
    frame = res.to_frame(cell.record_every)
    frame["seed"] = cell.seed
    frame["cell"] = cell.cell_id
    frame["seconds"] = res.seconds
    for key, value in cell.agent_params:
        frame[f"agent.{key}"] = value
    for key, value in cell.env_params:
        frame[f"env.{key}"] = value
    if not with_record:
        return frame
    entry = {**res.privacy_entry(), "cell": cell.cell_id, "seed": cell.seed,
             "params": {**{f"agent.{k}": v for k, v in cell.agent_params},
                        **{f"env.{k}": v for k, v in cell.env_params}}}
    return frame, entry


def _run_and_store(cell: Cell, cells_dir: str, fail_on: str | None = None,
                   plugins: tuple = (), local_worker: bool = False) -> str:
    _worker_setup(plugins, local_worker)
    if fail_on is not None and cell.cell_id == fail_on:  # test hook: simulate a crash
        raise RuntimeError(f"injected failure in cell {cell.cell_id}")
    frame, entry = run_cell(cell, with_record=True)
    atomic_write_bytes(Path(cells_dir) / f"{cell.cell_id}.json", dumps_json(entry))
    write_frame_atomic(frame, Path(cells_dir) / f"{cell.cell_id}.parquet")
    return cell.cell_id


_PARENT_PID: int | None = None


def _worker_setup(plugins: tuple, local_worker: bool) -> None:
    """Import the sweep's plugins; in a local worker process, start the orphan watchdog once
    (not in Dask workers, which belong to a cluster that outlives any one client)."""
    global _PARENT_PID
    from dpbandits.plugins import load_plugins

    load_plugins(plugins)
    if local_worker and _PARENT_PID is None:
        _PARENT_PID = os.getppid()
        threading.Thread(target=_exit_when_orphaned, args=(_PARENT_PID,), daemon=True,
                         name="dpbandits-orphan-watchdog").start()


def _exit_when_orphaned(parent: int, interval: float = 0.5) -> None:
    """Exit this worker as soon as its parent process is gone (a killed sweep must not
    leave workers simulating for minutes): the parent pid changes when it dies."""
    import time

    while os.getppid() == parent:
        time.sleep(interval)
    os._exit(1)


def sweep(spec: SweepSpec, out_dir, *, n_jobs: int = 1, scheduler=None, progress: bool = True,
          plugins: Sequence[str] = (), _fail_on: str | None = None) -> pd.DataFrame:
    """Run every missing cell of ``spec`` and return the frame of all cells.

    ``n_jobs`` local processes (joblib/loky) unless ``scheduler`` is a Dask scheduler address
    or ``dask.distributed.Client``. Cells already present in ``out_dir/cells`` are skipped,
    so an interrupted sweep resumes where it stopped. The returned frame is ordered by cell
    (grid order), so it does not depend on which cells ran in which session. ``plugins``
    (module names or ``.py`` paths) are imported by every worker before its first cell.
    """
    from joblib import Parallel, delayed, parallel_config

    cells = spec.cells()
    cells_dir = Path(out_dir) / "cells"
    cells_dir.mkdir(parents=True, exist_ok=True)
    todo = [c for c in cells if not (cells_dir / f"{c.cell_id}.parquet").exists()]
    (Path(out_dir) / "sweep.json").write_text(json.dumps(
        {"cells": [c.spec() | {"cell_id": c.cell_id} for c in cells]}, indent=2, default=str))

    if todo:
        plugins = tuple(str(p) for p in plugins)
        from joblib import effective_n_jobs

        local = scheduler is None and effective_n_jobs(n_jobs) != 1
        jobs = (delayed(_run_and_store)(c, str(cells_dir), _fail_on, plugins, local)
                for c in todo)
        if scheduler is not None:
            client = _dask_client(scheduler)
            with parallel_config(backend="dask", wait_for_workers_timeout=60):
                results = Parallel(return_as="generator_unordered")(jobs)
                _consume(results, len(todo), progress)
            if isinstance(scheduler, str):
                client.close()
        else:
            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)
            _consume(results, len(todo), progress)

    frames = [pd.read_parquet(cells_dir / f"{c.cell_id}.parquet") for c in cells]
    return pd.concat(frames, ignore_index=True)


def cell_privacy_records(spec: SweepSpec, out_dir) -> list[dict]:
    """The privacy record entry of every cell of ``spec`` (read from ``cells/<id>.json``)."""
    cells_dir = Path(out_dir) / "cells"
    out = []
    for c in spec.cells():
        path = cells_dir / f"{c.cell_id}.json"
        if not path.exists():
            raise FileNotFoundError(f"cell {c.cell_id} has no privacy record {path}; "
                                    "re-run the sweep into a fresh --out")
        out.append(json.loads(path.read_text()))
    return out


def write_sweep_results(spec: SweepSpec, frame: pd.DataFrame, out_dir, record: Mapping, *,
                        csv: bool = False) -> pd.DataFrame:
    """Write ``results.parquet``, ``results.json`` (``record`` + the per-cell privacy record)
    and ``summary.csv`` (one row per agent label and swept value, over every seed) to
    ``out_dir``; return the summary."""
    out = Path(out_dir)
    record = {**record, "privacy": cell_privacy_records(spec, out)}
    save_results(frame, record, out, csv=csv)
    summary = summarize(frame)
    write_csv_atomic(summary, out / "summary.csv")
    return summary


def _consume(results, total: int, progress: bool) -> None:
    from tqdm.auto import tqdm

    for _ in tqdm(results, total=total, disable=not progress, desc="sweep cells"):
        pass


def _dask_client(scheduler):
    try:
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("a Dask scheduler needs the 'dist' extra: "
                          "pip install 'dpbandits[dist]'") from exc
    if isinstance(scheduler, Client):
        return scheduler
    if not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string or a dask Client, "
                        f"got {type(scheduler).__name__}")
    return Client(scheduler)

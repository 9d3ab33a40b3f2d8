"""Parallel, resumable sweeps over agents x agent params x env params x seeds.

Each cell of the grid is one ``simulate`` call, run by :func:`dpbandits.harness.grid.run_grid`
into ``<out_dir>/cells/``: ``<cell_id>.parquet`` (the cell's frame; it marks the cell finished)
and ``<cell_id>.json`` (its privacy record entry, written first), each written atomically, so
a re-run skips the cells already on disk. Cells run on local processes through joblib, or on
a Dask cluster when ``scheduler`` (an address or a ``dask.distributed.Client``) is given.
Workers import the sweep's ``plugins`` before their first cell, so agents registered by a
user's module or file run in parallel sweeps too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpbandits._validation import check_int
from dpbandits.harness.grid import CellFiles, cell_digest, product, run_grid
from dpbandits.harness.results import save_results, summarize, write_csv_atomic

if TYPE_CHECKING:
    import pandas as pd
    from dask.distributed import Client


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
        return cell_digest(self.spec())

    @property
    def key(self) -> str:  # the name run_grid stores the cell under
        return self.cell_id


def _grid(params: Mapping[str, Sequence] | None) -> list[tuple]:
    """Cartesian product of ``{name: [values...]}`` as sorted (name, value) tuples."""
    return [tuple(combo.items()) for combo in product(params)]


@dataclass
class SweepSpec:
    """What to sweep: every cell runs ``n_reps`` replications for each seed.

    Parameters
    ----------
    agents : mapping
        Label -> ``{"name": registry name, "params": {fixed params}, "grid": {param:
        [values]}}``; at least one agent.
    env : str
        Registered environment id.
    horizon : int
        Rounds of every run, >= 1.
    seeds : sequence of int, default (0,)
        Seeds of the runs; each cell is run once per seed.
    n_reps : int, default 1
        Replications per cell and seed, >= 1.
    env_params : mapping, default {}
        Fixed keyword arguments of the environment.
    env_grid : mapping, default {}
        Environment parameter -> list of values swept.
    record_every : int, default 1
        Record the curves every k >= 1 rounds.
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


def run_cell(cell: Cell, *, with_record: bool = False
             ) -> pd.DataFrame | tuple[pd.DataFrame, dict[str, Any]]:
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


def _run_cell_stored(cell: Cell, fail_on: str | None = None):
    if fail_on is not None and cell.cell_id == fail_on:  # test hook: simulate a crash
        raise RuntimeError(f"injected failure in cell {cell.cell_id}")
    return run_cell(cell, with_record=True)


def _load_plugins(plugins: tuple) -> None:
    from dpbandits.plugins import load_plugins

    load_plugins(plugins)


def sweep(spec: SweepSpec, out_dir: str | os.PathLike[str], *, n_jobs: int = 1,
          scheduler: str | Client | None = None, progress: bool = True,
          plugins: Sequence[str] = (), _fail_on: str | None = None,
          on_done: Callable[[Cell], None] | None = None) -> pd.DataFrame:
    """Run every missing cell of ``spec`` and return the frame of all cells.

    Cells already present in ``out_dir/cells`` are skipped, so an interrupted sweep resumes
    where it stopped.

    Parameters
    ----------
    spec : SweepSpec
        What to sweep.
    out_dir : str or path
        Folder of the results; its ``cells`` subfolder holds one file per finished cell.
    n_jobs : int, default 1
        Local worker processes (joblib/loky), >= 1; ignored when ``scheduler`` is given.
    scheduler : str, dask.distributed.Client or None, default None
        A Dask scheduler address (``tcp://host:port``) or client to run the cells on.
    progress : bool, default True
        A progress bar over cells.
    plugins : sequence of str, default ()
        Module names or ``.py`` paths every worker imports before its first cell.
    on_done : callable or None, default None
        Called with each cell computed now, in this process, as it is stored.

    Returns
    -------
    pandas.DataFrame
        The frame of all cells, in grid order (so it does not depend on which cells ran in
        which session).

    Raises
    ------
    ValueError
        An invalid ``spec`` (see :meth:`SweepSpec.cells`).
    """
    cells = spec.cells()
    store = CellFiles(Path(out_dir) / "cells")
    store.directory.mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "sweep.json").write_text(json.dumps(
        {"cells": [c.spec() | {"cell_id": c.cell_id} for c in cells]}, indent=2, default=str))
    frames = run_grid(cells, partial(_run_cell_stored, fail_on=_fail_on), store,
                      n_jobs=n_jobs, scheduler=scheduler,
                      setup=partial(_load_plugins, tuple(str(p) for p in plugins)),
                      progress=progress, desc="sweep cells",
                      on_done=None if on_done is None else
                      (lambda key: on_done(next(c for c in cells if c.cell_id == key))))
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def cells_done(spec: SweepSpec, out_dir: str | os.PathLike[str]) -> int:
    """How many cells of ``spec`` are already stored in ``out_dir`` (a re-run skips them)."""
    store = CellFiles(Path(out_dir) / "cells")
    return sum(store.done(c.key) for c in spec.cells())


def cell_privacy_records(spec: SweepSpec, out_dir: str | os.PathLike[str]) -> list[dict]:
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


def write_sweep_results(spec: SweepSpec, frame: pd.DataFrame, out_dir: str | os.PathLike[str],
                        record: Mapping, *, csv: bool = False) -> pd.DataFrame:
    """Write ``results.parquet``, ``results.json`` (``record`` + the per-cell privacy record)
    and ``summary.csv`` (one row per agent label and swept value, over every seed) to
    ``out_dir``; return the summary."""
    out = Path(out_dir)
    record = {**record, "privacy": cell_privacy_records(spec, out)}
    save_results(frame, record, out, csv=csv)
    summary = summarize(frame)
    write_csv_atomic(summary, out / "summary.csv")
    return summary

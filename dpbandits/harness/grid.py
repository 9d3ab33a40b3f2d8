"""One resumable grid runner: cells (parameter dicts) x seeds, each finished cell stored alone.

``run_grid(cells, compute, store)`` calls ``compute(cell)`` for every cell whose result is not
in ``store`` yet and stores the result as soon as the cell is done, so an interrupted run
(Ctrl-C, a crash, a killed worker) keeps every finished cell and a re-run computes only the
missing ones. Cells run in this process, on local worker processes (joblib/loky) or on a Dask
cluster (joblib's dask backend). ``sweep`` and the scripts under ``experiments/`` use it.

A cell is any picklable object with a string ``key`` (the name of its stored result);
:class:`GridCell` is a dict of parameters and a seed, keyed by a digest of both unless named.
``compute`` returns a ``pandas.DataFrame``, a ``(frame, record)`` pair (the JSON-able record
is stored beside the frame) or ``None`` (the cell is skipped: nothing is stored).
Stores: :class:`CellFiles` (one Parquet or CSV file per cell) and :class:`CsvTable` (the rows
of every cell in one CSV, keyed by columns; one writer only).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd
    from dask.distributed import Client

from dpbandits.harness.results import (
    atomic_write_bytes,
    dumps_json,
    write_csv_atomic,
    write_frame_atomic,
)


def cell_digest(spec: Mapping) -> str:
    """16 hex digits of the SHA-1 of ``spec`` as sorted JSON: the same spec, the same key."""
    blob = json.dumps(dict(spec), sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()[:16]


def product(grid: Mapping[str, Sequence] | None) -> list[dict]:
    """Cartesian product of ``{name: [values, ...]}``: one dict per combination, names sorted,
    the last name varying fastest. An empty or missing grid is one empty combination."""
    if not grid:
        return [{}]
    names = sorted(grid)
    for name in names:
        values = grid[name]
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(f"grid entry {name!r} must be a list of values, got {values!r}")
        if len(values) == 0:
            raise ValueError(f"grid entry {name!r} is an empty list")
    return [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(grid[n] for n in names))]


@dataclass(frozen=True)
class GridCell:
    """One cell of a grid.

    Parameters
    ----------
    params : mapping, default {}
        The cell's parameters.
    seed : int, default 0
        The cell's seed.
    name : str or None, default None
        Key the cell is stored under; None means the digest of ``{**params, "seed": seed}``.
    """

    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    name: str | None = None

    def __getitem__(self, item: str) -> Any:
        return self.params[item]

    def spec(self) -> dict:
        return {**self.params, "seed": self.seed}

    @property
    def key(self) -> str:
        return self.name if self.name is not None else cell_digest(self.spec())


def grid_cells(params: Mapping[str, Sequence] | Iterable[Mapping], seeds: Sequence[int] = (0,),
               name: Callable[[dict, int], str] | None = None) -> list[GridCell]:
    """Cells for every parameter combination x every seed (seeds vary fastest).

    ``params`` is a grid ``{name: [values]}`` (see :func:`product`) or a list of parameter
    dicts; ``name(params, seed)``, if given, names each cell's stored result.
    """
    combos = product(params) if isinstance(params, Mapping) else [dict(p) for p in params]
    if len(seeds) == 0:
        raise ValueError("seeds is an empty list; give at least one seed")
    return [GridCell(combo, seed, None if name is None else name(combo, seed))
            for combo in combos for seed in seeds]


class Store(Protocol):
    """Where finished cells live: ``done(key)``, ``save(key, result)``, ``load(key)``."""

    def done(self, key: str) -> bool: ...

    def save(self, key: str, result: Any) -> None: ...

    def load(self, key: str) -> pd.DataFrame: ...


def _split(result: Any) -> tuple[pd.DataFrame, dict | None]:
    if isinstance(result, tuple):
        frame, record = result
        return frame, record
    return result, None


class CellFiles:
    """One file per finished cell in ``directory``: ``<key><suffix>`` (``.parquet`` or
    ``.csv``) holds the cell's frame and marks the cell finished; ``<key>.json``, written
    first, its record if ``compute`` returned one. Every file is written atomically
    (temporary file + rename), so a killed run never leaves a partial file that reads as
    finished; workers on other processes (or machines sharing the directory) write directly.

    Parameters
    ----------
    directory : str or Path
        Folder of the cells' files.
    suffix : {".parquet", ".csv"}, default ".parquet"
        Format of the frames.
    """

    def __init__(self, directory: str | os.PathLike[str], suffix: str = ".parquet") -> None:
        if suffix not in (".parquet", ".csv"):
            raise ValueError(f"suffix must be '.parquet' or '.csv', got {suffix!r}")
        self.directory = Path(directory)
        self.suffix = suffix

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{self.suffix}"

    def done(self, key: str) -> bool:
        return self.path(key).exists()

    def save(self, key: str, result: Any) -> None:
        frame, record = _split(result)
        if record is not None:
            atomic_write_bytes(self.directory / f"{key}.json", dumps_json(record))
        if self.suffix == ".csv":
            write_csv_atomic(frame, self.path(key))
        else:
            write_frame_atomic(frame, self.path(key))

    def load(self, key: str) -> pd.DataFrame:
        import pandas as pd  # pandas loads with the first stored cell, not with the harness

        path = self.path(key)
        return pd.read_csv(path) if self.suffix == ".csv" else pd.read_parquet(path)

    def record(self, key: str) -> dict:
        """The record stored beside cell ``key`` (``FileNotFoundError`` if there is none)."""
        return json.loads((self.directory / f"{key}.json").read_text())


class CsvTable:
    """The rows of every finished cell in one CSV file (``path``, rewritten atomically after
    each cell). A cell's key is its values of ``key_columns`` joined by ``|``, each as
    ``str`` gives it for the values pandas reads back; a cell is finished when rows with its
    key exist. Only the process running the grid writes: use it with ``n_jobs=1``.

    Parameters
    ----------
    path : str or Path
        The CSV file (read if it exists).
    key_columns : sequence of str
        The columns whose values identify a cell.
    """

    single_writer = True

    def __init__(self, path: str | os.PathLike[str], key_columns: Sequence[str]) -> None:
        self.path = Path(path)
        self.key_columns = list(key_columns)
        import pandas as pd

        self.frame = pd.read_csv(self.path) if self.path.exists() else pd.DataFrame()
        self._keys = self._row_keys(self.frame)

    def _row_keys(self, frame: pd.DataFrame) -> pd.Series:
        import pandas as pd

        if frame.empty:
            return pd.Series([], dtype=object)
        return frame[self.key_columns].astype(str).agg("|".join, axis=1)

    def done(self, key: str) -> bool:
        return bool((self._keys == key).any())

    def save(self, key: str, result: Any) -> None:
        import pandas as pd

        rows, _ = _split(result)
        self.frame = pd.concat([self.frame, rows], ignore_index=True)
        self._keys = pd.concat([self._keys, pd.Series([key] * len(rows), dtype=object)],
                               ignore_index=True)
        write_csv_atomic(self.frame, self.path)

    def load(self, key: str) -> pd.DataFrame:
        return self.frame[(self._keys == key).to_numpy()].reset_index(drop=True)


def run_grid(cells: Sequence, compute: Callable[[Any], Any], store: Store, *, n_jobs: int = 1,
             scheduler: str | Client | None = None, setup: Callable[[], None] | None = None,
             progress: bool = False, desc: str = "cells",
             on_done: Callable[[str], None] | None = None) -> list[pd.DataFrame | None]:
    """Compute every cell of ``cells`` whose ``key`` is not done in ``store``; return every
    cell's stored frame in grid order (``None`` for a cell ``compute`` skipped).

    ``n_jobs`` local processes (joblib/loky; 1 runs the cells here, in order) unless
    ``scheduler`` is a Dask scheduler address or ``dask.distributed.Client``. ``setup()``
    runs in each worker before each cell (it must be cheap when repeated, e.g. importing
    plugins); ``compute`` and ``setup`` must be picklable to run on workers. A local worker
    dies with its parent process: at once on Linux (the kernel's parent-death signal), within
    half a second elsewhere, and a worker orphaned while it was still starting up exits
    before it computes anything (see :func:`follow_parent`). ``on_done(key)``, if given, is
    called in this process as each cell is stored (e.g. a progress line where no bar shows).
    """
    if getattr(store, "single_writer", False) and (scheduler is not None or n_jobs != 1):
        raise ValueError(f"{type(store).__name__} takes one writer: run with n_jobs=1 and "
                         f"no scheduler, got n_jobs={n_jobs!r}, scheduler={scheduler!r}")
    todo = [c for c in cells if not store.done(c.key)]
    if todo:
        from joblib import effective_n_jobs

        if scheduler is not None or effective_n_jobs(n_jobs) != 1:
            _run_parallel(todo, compute, store, setup, n_jobs, scheduler, progress, desc,
                          on_done)
        else:
            from tqdm.auto import tqdm

            for cell in tqdm(todo, disable=not progress, desc=desc):
                key = _compute_and_store(cell, compute, store, setup, None)
                if on_done is not None:
                    on_done(key)
    return [store.load(c.key) if store.done(c.key) else None for c in cells]


def _compute_and_store(cell, compute, store, setup, parent_pid: int | None,
                       prefetch: bool | None = None) -> str:
    """Run one cell and store its result. ``parent_pid`` is the pid of the process that runs
    the grid when this is a local worker (the worker then dies with it), else ``None``.
    ``prefetch=False`` turns prefetching off for this task (``DPBANDITS_PREFETCH=0``, restored
    after it); ``None`` or ``True`` leave it to the environment."""
    if parent_pid is not None:
        follow_parent(parent_pid)
    if prefetch is False:
        from dpbandits._background import prefetch_off

        with prefetch_off():  # in this worker process, for this task
            return _compute_and_store(cell, compute, store, setup, None, None)
    if setup is not None:
        setup()
    result = compute(cell)
    if result is not None:
        store.save(cell.key, result)
    return cell.key


def _run_parallel(todo, compute, store, setup, n_jobs, scheduler, progress, desc,
                  on_done=None) -> None:
    from joblib import Parallel, delayed, parallel_config
    from tqdm.auto import tqdm

    # Every task names the grid's own process: a worker that sees another parent (it was
    # orphaned while starting up, before any task reached it) exits instead of computing.
    parent = os.getpid() if scheduler is None else None
    prefetch = pool_prefetch(n_jobs, len(todo)) if scheduler is None else None
    jobs = (delayed(_compute_and_store)(c, compute, store, setup, parent, prefetch)
            for c in todo)

    def consume(results) -> None:
        for key in tqdm(results, total=len(todo), disable=not progress, desc=desc):
            if on_done is not None:
                on_done(key)

    if parent is not None:
        # Each loky worker follows this process from its start (the initializer), not from
        # its first task: a worker that the parent spawned but never fed would otherwise wait
        # for tasks until loky's idle timeout.
        with parallel_config(backend="loky", initializer=follow_parent, initargs=(parent,)):
            consume(Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs))
        return
    client = _dask_client(scheduler)
    try:
        with parallel_config(backend="dask", wait_for_workers_timeout=60):
            consume(Parallel(return_as="generator_unordered")(jobs))
    finally:
        if isinstance(scheduler, str):
            client.close()


def pool_prefetch(n_jobs: int, n_tasks: int) -> bool:
    """Whether the local workers of a pool of ``n_jobs`` processes (joblib's count: ``-1``
    is every core) running ``n_tasks`` tasks may each draw noise in a second thread: only
    when the busy processes times two threads fit on the cores
    (:func:`~dpbandits._background.prefetch_in_pool`)."""
    from joblib import effective_n_jobs

    from dpbandits._background import prefetch_in_pool

    return prefetch_in_pool(min(effective_n_jobs(n_jobs), max(1, n_tasks)))


_FOLLOWED_PARENT: int | None = None


def follow_parent(parent_pid: int) -> None:
    """Make this local worker process die with ``parent_pid``, whatever the timing.

    Local workers call it twice: as loky's worker initializer, once the worker has started
    (so a worker the parent spawned but never fed follows it too), and with every task.

    - Already orphaned (the parent died while this worker was starting up): exit now.
    - On Linux, ask the kernel for SIGKILL when the parent dies (``PR_SET_PDEATHSIG``): it
      arrives even while this process holds the GIL (numba compiling a kernel). The kernel
      ties the signal to the parent *thread* that started the worker; loky starts workers from
      the thread that runs the grid or from its executor's manager thread, both of which live
      as long as the workers are used.
    - Everywhere, a watchdog thread polls the parent's pid (needs the GIL between polls).
    Called again with the same pid, it does nothing.
    """
    global _FOLLOWED_PARENT
    if _FOLLOWED_PARENT == parent_pid:
        return
    _set_parent_death_signal()
    if os.getppid() != parent_pid:
        os._exit(1)
    first = _FOLLOWED_PARENT is None
    _FOLLOWED_PARENT = parent_pid
    if first:
        threading.Thread(target=_exit_when_orphaned, daemon=True,
                         name="dpbandits-orphan-watchdog").start()


def _set_parent_death_signal() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux; ``False`` where it is not available."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _exit_when_orphaned(interval: float = 0.5) -> None:
    """Exit this worker once its parent is no longer the process it follows (the parent pid
    changes when it dies). Each check needs the GIL; the death signal does not."""
    import time

    while os.getppid() == _FOLLOWED_PARENT:
        time.sleep(interval)
    os._exit(1)


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

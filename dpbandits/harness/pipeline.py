"""The outputs of ``dpbandits run`` and ``compare``, written beside the plots.

``CompareOutputs`` gives the writing to one background thread, whose tasks run one at a
time in the order they were given:

1. while the first agent simulates, it imports what writing needs (pandas, pyarrow, and
   matplotlib for the plots);
2. after the last agent, it writes every agent's rows into the frame's columns
   (``results.FrameBuilder``), wraps them and writes ``results.parquet``, ``results.json``
   (``results.csv``) and ``summary.csv``, while the main thread draws the plots from the
   results' arrays (``CompareOutputs.draw``) into a hidden folder of the output directory;
   they are moved beside the results once these are written.

The rows are written after the simulations, not while the next agent simulates: the
simulations keep both cores busy (the environment draws its contexts in a thread of its
own), and rows written beside them slowed them as much as they saved (measured in
benchmarks/README.md), and each agent's ``peak_memory_mb`` would have counted the frame.

The files are those written one step after the other (``BACKGROUND = False`` runs every
task in the calling thread, in the same order: the tests compare both): rows are placed by
the order of the agents, never by timing. A task's exception is raised again in the main
thread, the same exception object (at ``wait`` or at the end of the ``with`` block at the
latest; a failed write takes precedence over an error of the plots, which came after it
when the steps ran in sequence, and the plots are then dropped: the directory holds what it
held when the steps ran in sequence, and the error line says the same). Nothing is left
half-written: every result file is written whole to a temporary file and renamed
(``results.atomic_write_bytes``), the plots are moved in whole, and leaving the ``with``
block waits for the running task; an interruption (``KeyboardInterrupt``) cancels the tasks
not yet started and drops the plots.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpbandits._validation import check_int
from dpbandits.harness.results import FrameBuilder, SimulationResult

if TYPE_CHECKING:
    import pandas as pd

#: internal switch: False runs every task in the calling thread when it is given
BACKGROUND = True


class _InCallingThread:
    """The part of ``ThreadPoolExecutor`` used here, running each task when it is given (its
    exception is raised there, as when the steps ran in sequence)."""

    def submit(self, fn: Callable, /, *args: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def _warm_up(plots: bool) -> None:
    """Import the modules the writing (and the plots) need, off the main thread. A module
    that fails to import here is imported again, and fails, where it is used."""
    import importlib

    names = ["pandas", "pyarrow", "pyarrow.parquet"]
    for name in names + (["dpbandits.harness.plots"] if plots else []):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - only a head start (module docstring)
            continue


class CompareOutputs:
    """The background writer of one ``run``/``compare`` (module docstring); a context
    manager: leaving the block waits for the background thread and raises its error.

    ``write(results, record)`` after the simulations; ``draw(plot)`` for the plots;
    ``wait()`` returns the summary table written to ``summary.csv``.
    """

    def __init__(self, out: str | os.PathLike[str], record_every: int = 1, *,
                 csv: bool = False, plots: bool = True) -> None:
        self.out = Path(out)
        self.record_every = check_int("record_every", record_every, low=1)
        self.csv = csv
        self._futures: list[Future] = []
        self._stage: Path | None = None  # the plots' folder until they are moved into out
        self._writing = False  # whether write was called
        self._pool: ThreadPoolExecutor | _InCallingThread = (
            ThreadPoolExecutor(1, thread_name_prefix="dpbandits-output") if BACKGROUND
            else _InCallingThread())
        self._submit(_warm_up, plots)

    def __enter__(self) -> CompareOutputs:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        # An error before the results were handed to ``write`` (a simulation's) stands, and
        # the warm-up, if still queued, is dropped, as everything queued is on an
        # interruption. After it (an error of the plots) the writing finishes first, and its
        # own error, if any, stands instead: in sequence, the plots came after the files.
        cancel = exc is not None and (not self._writing or isinstance(exc, KeyboardInterrupt))
        try:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            if exc is None or (self._writing and isinstance(exc, Exception)):
                error = self._failed()
                if error is None:
                    self._publish()  # the plots finished before an error of the plots
                elif error is not exc:
                    raise error
        finally:
            self._drop_stage()

    def _submit(self, fn: Callable, *args: Any) -> Future:
        self._raise_failed()
        future = self._pool.submit(fn, *args)
        self._futures.append(future)
        return future

    def _failed(self) -> BaseException | None:
        """The exception of the first finished task that failed, if one did."""
        for future in self._futures:
            if future.done() and not future.cancelled() and future.exception() is not None:
                return future.exception()
        return None

    def _raise_failed(self) -> None:
        error = self._failed()
        if error is not None:
            raise error

    def write(self, results: Mapping[str, SimulationResult], record: dict) -> None:
        """Write the frame of ``results`` (in their order), the JSON record and the summary
        (in the background thread)."""
        self._writing = True
        self._submit(self._write, dict(results), record)

    def _write(self, results: dict[str, SimulationResult], record: dict) -> pd.DataFrame:
        from dpbandits.harness.compare import summary_table
        from dpbandits.harness.results import save_results, write_csv_atomic

        builder = FrameBuilder(len(results), self.record_every)
        for result in results.values():
            builder.add(result)
        save_results(builder.frame(), record, self.out, csv=self.csv)
        summary = summary_table(results)
        write_csv_atomic(summary, self.out / "summary.csv")
        return summary

    def draw(self, plot: Callable[[Path], object]) -> None:
        """Call ``plot(folder)`` in this thread while the background thread writes: the files
        it writes into ``folder`` (hidden, in the output directory) are moved into the output
        directory by :meth:`wait` once the results are written, and dropped if writing them
        failed or the command was interrupted."""
        self._raise_failed()
        self._stage = Path(tempfile.mkdtemp(prefix=".plots-", dir=self.out))
        plot(self._stage)

    def wait(self) -> pd.DataFrame:
        """Wait for every task, move the plots in; return the summary table (raises the
        exception of a task that failed)."""
        for future in self._futures:
            future.result()
        self._publish()
        return self._futures[-1].result()

    def _publish(self) -> None:
        if self._stage is None:
            return
        for path in sorted(self._stage.iterdir()):
            os.replace(path, self.out / path.name)
        self._drop_stage()

    def _drop_stage(self) -> None:
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
            self._stage = None

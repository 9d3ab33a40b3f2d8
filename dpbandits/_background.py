"""One background thread for drawing random numbers ahead of their use.

numpy's samplers release the GIL while they fill an array, so drawing the next chunk of a
stream in a second thread while the main thread computes puts a second core to work. Every
user (:mod:`dpbandits.privacy.streams`, the environments' chunked streams) submits to the same
single worker, first in first out: the chunks of one stream are drawn in order, so prefetching
never changes the numbers, provided each stream's generators are its own. Setting the
environment variable ``DPBANDITS_PREFETCH=0`` turns it off (e.g. when every core already runs
a worker process).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

__all__ = ["PicklesPending", "available_cores", "executor", "prefetch_enabled",
           "prefetch_in_pool", "prefetch_off"]

_EXECUTOR: ThreadPoolExecutor | None = None


def prefetch_enabled() -> bool:
    """False when the environment variable ``DPBANDITS_PREFETCH`` is ``"0"``."""
    return os.environ.get("DPBANDITS_PREFETCH", "1") != "0"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def prefetch_in_pool(n_processes: int, cores: int | None = None) -> bool:
    """Whether the worker processes of a pool of ``n_processes`` should prefetch: each one
    then runs two busy threads (its work and its drawing thread), so only when they fit on
    the ``cores`` (default: :func:`available_cores`); one process (no pool) always may."""
    cores = available_cores() if cores is None else cores
    return n_processes <= 1 or 2 * n_processes <= cores


@contextmanager
def prefetch_off(off: bool = True) -> Iterator[None]:
    """Within the block, prefetching is off in this process (``DPBANDITS_PREFETCH=0``) when
    ``off``; the variable is restored afterwards (a pool worker runs many tasks)."""
    if not off:
        yield
        return
    before = os.environ.get("DPBANDITS_PREFETCH")
    os.environ["DPBANDITS_PREFETCH"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("DPBANDITS_PREFETCH", None)
        else:
            os.environ["DPBANDITS_PREFETCH"] = before


def executor() -> ThreadPoolExecutor:
    """The shared single-worker executor (created on first use)."""
    global _EXECUTOR
    if _EXECUTOR is None:
        _EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpbandits-draws")
        atexit.register(_EXECUTOR.shutdown, wait=False, cancel_futures=True)
    return _EXECUTOR


def _forget_after_fork() -> None:
    """A forked child has no copy of the worker thread: it starts its own on first use."""
    global _EXECUTOR
    _EXECUTOR = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


class PicklesPending:
    """Mixin: pickling waits for the attribute ``_pending`` (a Future of a chunk being drawn
    ahead, or None) and stores its result; unpickling turns it back into a done Future."""

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        pending = state.pop("_pending", None)
        state["_pending_result"] = None if pending is None else pending.result()
        return state

    def __setstate__(self, state: dict) -> None:
        result = state.pop("_pending_result")
        self.__dict__.update(state)
        self._pending: Future | None = None
        if result is not None:
            self._pending = Future()
            self._pending.set_result(result)

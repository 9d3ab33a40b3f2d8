"""One background thread for drawing random numbers ahead of their use.

numpy's samplers release the GIL while they fill an array, so drawing the next chunk of a
stream in a second thread while the main thread computes puts a second core to work. Every
user (:mod:`dpbandits.privacy.streams`, the environments' chunked streams) submits to the same
single worker, first in first out: the chunks of one stream are drawn in order, so prefetching
never changes the numbers, provided each stream's generators are its own. Setting the
environment variable ``DPBANDITS_PREFETCH=0`` turns it off (e.g. when every core already runs
a worker process). A pool of worker processes decides per process with
:func:`set_prefetch` and :func:`prefetch_fits`: processes times threads must not exceed the
cores, or the drawing threads only take turns with the workers' main threads.
"""

from __future__ import annotations

import atexit
import os
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["PicklesPending", "executor", "prefetch_enabled", "prefetch_fits", "set_prefetch",
           "usable_cores"]

_EXECUTOR: ThreadPoolExecutor | None = None
#: this process's setting (:func:`set_prefetch`); ``None`` leaves it to the environment
_PROCESS_SETTING: bool | None = None


def prefetch_enabled() -> bool:
    """False when the environment variable ``DPBANDITS_PREFETCH`` is ``"0"`` or this process
    turned prefetching off (:func:`set_prefetch`)."""
    return os.environ.get("DPBANDITS_PREFETCH", "1") != "0" and _PROCESS_SETTING is not False


def set_prefetch(enabled: bool | None) -> None:
    """Turn prefetching off (``False``) in this process, or leave it to the environment
    variable (``True`` or ``None``). Streams created afterwards follow it; the numbers drawn
    are the same either way."""
    global _PROCESS_SETTING
    _PROCESS_SETTING = None if enabled is None else bool(enabled)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        return os.cpu_count() or 1


def prefetch_fits(n_processes: int) -> bool:
    """Whether ``n_processes`` busy worker processes, each a main thread plus the drawing
    thread, fit on :func:`usable_cores` (two threads per process)."""
    return 2 * max(1, int(n_processes)) <= usable_cores()


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

"""Serial and parallel numba builds of the agents' per-round kernels.

A kernel is written once in plain Python with ``prange`` over replications (``range`` when
numba is absent) and compiled twice: serially, and with ``parallel=True``. Replications are
independent, so both builds give the same numbers whatever the thread count. The parallel
build synchronizes its threads once per call, i.e. once per round; that pays off only when a
round holds enough work (:func:`use_parallel`), otherwise the serial build runs and the
background thread that draws the noise (:mod:`dpbandits._background`) is the second core's
work.
"""

from __future__ import annotations

import types
from collections.abc import Callable

try:  # numba is a declared dependency; every kernel has a numpy twin for when it is missing
    import numba
    from numba import prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    numba = None
    prange = range
    HAVE_NUMBA = False

__all__ = ["HAVE_NUMBA", "PARALLEL_WORK", "KernelSet", "prange", "use_parallel"]

#: floating-point operations per round from which the parallel build is used
PARALLEL_WORK = 2**26


def use_parallel(n_reps: int, work_per_rep: float) -> bool:
    """Whether a round of ``n_reps`` replications of ``work_per_rep`` operations each is
    worth the parallel build's per-round synchronization."""
    return n_reps > 1 and n_reps * work_per_rep >= PARALLEL_WORK


def _renamed(f: Callable, suffix: str) -> Callable:
    """A copy of ``f`` under another qualified name: numba's disk cache is keyed by the
    function's name, not by its compile options, so the two builds must not share it."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + suffix, f.__defaults__)
    g.__qualname__ = f.__qualname__ + suffix
    return g


class KernelSet:
    """Serial and parallel builds (compiled on first call, cached on disk) of ``funcs``
    (name -> plain Python function)."""

    def __init__(self, funcs: dict[str, Callable]):
        self._serial = {k: numba.njit(cache=True, nogil=True)(f) for k, f in funcs.items()}
        self._parallel = {k: numba.njit(cache=True, nogil=True, parallel=True)(
            _renamed(f, "_parallel")) for k, f in funcs.items()}

    def get(self, name: str, parallel: bool) -> Callable:
        return (self._parallel if parallel else self._serial)[name]

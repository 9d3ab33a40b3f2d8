"""Serial and parallel numba builds of the agents' per-round kernels.

A kernel is written once in plain Python with ``prange`` over replications and compiled
twice: serially, and with ``parallel=True``. Replications are independent, so both builds
give the same numbers whatever the thread count. The parallel build synchronizes its threads
once per call, i.e. once per round; that pays off only when a round holds enough work
(:func:`dpbandits._backends.use_parallel`), otherwise the serial build runs and the
background thread that draws the noise (:mod:`dpbandits._background`) is the second core's
work.

This module imports numba: only kernel modules import it, and they are loaded on first use
(:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numba
from numba import prange

from dpbandits._backends import PARALLEL_WORK, use_parallel  # noqa: F401 - kernel modules' names

__all__ = ["HAVE_NUMBA", "KernelSet", "prange", "rebound"]

HAVE_NUMBA = True  # this module imported numba


def _renamed(f: Callable, suffix: str) -> Callable:
    """A copy of ``f`` under another qualified name: numba's disk cache is keyed by the
    function's name, not by its compile options, so the two builds must not share it."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + suffix, f.__defaults__)
    g.__qualname__ = f.__qualname__ + suffix
    return g


def rebound(f: Callable, **names: object) -> Callable:
    """A copy of ``f`` whose global ``names`` are replaced (e.g. plain-Python helpers by their
    compiled forms), so a function written for numpy modules can be compiled unchanged."""
    g = types.FunctionType(f.__code__, {**f.__globals__, **names}, f.__name__, f.__defaults__)
    g.__qualname__ = f.__qualname__
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

"""Which backend runs a per-round kernel: compiled (numba) or numpy — decided without
importing numba.

numba and its compiler runtime cost about 125 MB of resident memory once loaded (measured:
65 MB at import, 60 MB more at the first compiled call). The modules that hold numba kernels
(``dpbandits._numba``, ``dpbandits._lapack`` and the ``_*_kernels`` modules) are therefore
imported only when a compiled kernel is first needed (:func:`kernels`); a run on the numpy
backend never loads numba.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from dpbandits._validation import check_choice

__all__ = ["BACKENDS", "HAVE_NUMBA", "PARALLEL_WORK", "compiled", "kernels", "use_parallel"]

#: whether numba can be imported (checked without importing it)
HAVE_NUMBA = importlib.util.find_spec("numba") is not None

#: the ``backend`` parameter's values: ``"auto"`` (numba when installed), ``"numba"``,
#: ``"numpy"``
BACKENDS = frozenset({"auto", "numba", "numpy"})

#: floating-point operations per round from which the parallel build is used
PARALLEL_WORK = 2**26


def compiled(backend: str) -> bool:
    """Whether ``backend`` runs the numba kernels; ``"numba"`` without numba is an error."""
    check_choice("backend", backend, BACKENDS)
    if backend == "numba" and not HAVE_NUMBA:  # pragma: no cover - numba is a dependency
        raise ValueError("backend='numba' requested but numba is not installed; "
                         "use backend='numpy' or 'auto'")
    return backend != "numpy" and HAVE_NUMBA


def use_parallel(n_reps: int, work_per_rep: float) -> bool:
    """Whether a round of ``n_reps`` replications of ``work_per_rep`` operations each is
    worth the parallel build's per-round synchronization."""
    return n_reps > 1 and n_reps * work_per_rep >= PARALLEL_WORK


def kernels(module: str) -> ModuleType:
    """The kernel module ``dpbandits.<module>`` (imported, and numba with it, on first use)."""
    return importlib.import_module("dpbandits." + module)

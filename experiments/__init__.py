"""Reproductions and studies run with dpbandits.

Run each script as a module from the repository root, e.g.
``python -m experiments.dp_gibo.e3_normal_location.run --quick`` (each folder's README lists
its commands). Grids of runs go through :func:`dpbandits.harness.grid.run_grid`, so an
interrupted run resumes where it stopped.
"""

import os


def single_thread_blas() -> None:
    """Use one BLAS/OpenMP thread unless the caller set otherwise. The experiments run many
    small linear-algebra calls, for which threaded BLAS spin-waiting is slower, and the
    machine is shared. Takes effect only before numpy is imported: call it from a package's
    ``__init__``, which ``python -m`` runs before the script."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")

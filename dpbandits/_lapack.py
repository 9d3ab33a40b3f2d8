"""LAPACK routines callable from numba-compiled kernels, without Python in between.

The kernels of the agents factor one small symmetric matrix per replication per round; going
through ``scipy.linalg.lapack`` from Python costs a few microseconds per call in argument
conversion alone. Here scipy's own LAPACK (``scipy.linalg.cython_lapack``, the library scipy
links) is declared to LLVM under a private symbol name once at import, so compiled code calls
it directly and the kernels stay cacheable on disk.

Layout convention: matrices are C-ordered numpy arrays of which only the **upper triangle**
(``a[i, j]``, ``i <= j``) is read and written; LAPACK, which is column-major, sees the
transpose, i.e. the lower triangle, so every call passes ``uplo = 'L'``. Right-hand sides are
rows: ``b`` of shape ``(nrhs, n)`` is LAPACK's column-major ``n x nrhs`` matrix.

This module imports numba; it is loaded only with the kernel modules that use it
(:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import llvmlite.binding as _ll
import numba
import numpy as np
from numba import types as _types
from numba.extending import get_cython_function_address

_ROUTINES = ("dpotrf", "dpotrs", "dlauum", "dsysv")
for _name in _ROUTINES:
    _ll.add_symbol(f"dpbandits_{_name}",
                   get_cython_function_address("scipy.linalg.cython_lapack", _name))

__all__ = ["chol_upper", "chol_solve_upper", "lauum_upper", "sym_solve_upper"]

_L = ord("L")

_vp = _types.voidptr
_potrf = _types.ExternalFunction("dpbandits_dpotrf", _types.void(_vp, _vp, _vp, _vp, _vp))
_potrs = _types.ExternalFunction(
    "dpbandits_dpotrs", _types.void(_vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp))
_lauum = _types.ExternalFunction("dpbandits_dlauum", _types.void(_vp, _vp, _vp, _vp, _vp))
_sysv = _types.ExternalFunction(
    "dpbandits_dsysv", _types.void(_vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp))


@numba.njit(cache=True, nogil=True)
def _ints(*values):  # pragma: no cover - compiled
    out = np.empty(len(values), dtype=np.int32)
    for i, v in enumerate(values):
        out[i] = v
    return out


@numba.njit(cache=True, nogil=True)
def chol_upper(a) -> int:  # pragma: no cover - compiled
    """Cholesky factor in place: on entry the upper triangle of ``a`` (n, n) holds a
    symmetric matrix ``V``; on exit it holds ``R`` upper triangular with ``V = R^T R``.
    Returns LAPACK's ``info`` (0: success; k > 0: the leading k x k minor is not
    positive definite)."""
    uplo = np.array([_L], dtype=np.uint8)
    nn = _ints(a.shape[0], 0)
    _potrf(uplo.ctypes, nn.ctypes, a.ctypes, nn.ctypes, nn[1:].ctypes)
    return nn[1]


@numba.njit(cache=True, nogil=True)
def chol_solve_upper(r, b) -> int:  # pragma: no cover - compiled
    """Overwrite each row ``b[k]`` of ``b`` (nrhs, n) with ``V^{-1} b[k]``, given the
    factor of :func:`chol_upper` in ``r``. Returns ``info``."""
    uplo = np.array([_L], dtype=np.uint8)
    nn = _ints(r.shape[0], b.shape[0], 0)
    _potrs(uplo.ctypes, nn.ctypes, nn[1:].ctypes, r.ctypes, nn.ctypes, b.ctypes,
           nn.ctypes, nn[2:].ctypes)
    return nn[2]


@numba.njit(cache=True, nogil=True)
def lauum_upper(a) -> int:  # pragma: no cover - compiled
    """In place: on entry the upper triangle of ``a`` holds ``U`` upper triangular, on
    exit the upper triangle of ``U U^T`` (n^3/3 flops). Returns ``info``."""
    uplo = np.array([_L], dtype=np.uint8)
    nn = _ints(a.shape[0], 0)
    _lauum(uplo.ctypes, nn.ctypes, a.ctypes, nn.ctypes, nn[1:].ctypes)
    return nn[1]


@numba.njit(cache=True, nogil=True)
def sym_solve_upper(a, b, ipiv, work) -> int:  # pragma: no cover - compiled
    """Symmetric indefinite solve (Bunch-Kaufman, ``dsysv``): the upper triangle of ``a``
    holds ``V`` (destroyed); each row of ``b`` (nrhs, n) becomes ``V^{-1} b[k]``.
    ``ipiv`` int32 (n,), ``work`` float64 of length >= n (64 n is plenty). Returns
    ``info`` (k > 0: ``V`` is exactly singular)."""
    uplo = np.array([_L], dtype=np.uint8)
    nn = _ints(a.shape[0], b.shape[0], work.shape[0], 0)
    _sysv(uplo.ctypes, nn.ctypes, nn[1:].ctypes, a.ctypes, nn.ctypes, ipiv.ctypes,
          b.ctypes, nn.ctypes, work.ctypes, nn[2:].ctypes, nn[3:].ctypes)
    return nn[3]

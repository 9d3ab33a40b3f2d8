"""Per-round arithmetic of DP-UCB and of the authors'-code DP-UCB, compiled and in numpy.

Every function exists twice with the same arguments: a numba kernel in
:mod:`dpbandits.agents._ucb_kernels` (loops, LAPACK through :mod:`dpbandits._lapack`,
``prange`` over replications in the parallel build) and its numpy twin here (vectorized;
scipy's LAPACK per replication on the *same memory layout*, so both call the same LAPACK
routine on the same numbers). Replications are independent, so the kernels' results do not
depend on the number of threads. All randomness is drawn by the caller with numpy Generators
and passed in as standard variates.

Matrices are ``(n, n)`` C-ordered with only the upper triangle meaningful (see
:mod:`dpbandits._lapack`); ``n = D + 1`` for the Gram matrix of ``[phi; y]``, ``phi`` the
disjoint-model feature (the context in block ``a`` of ``R^{dK}``, ``D = dK``).

Node noise from variates (the exactness arguments are in
:func:`dpbandits.privacy.mechanisms.symmetric_gaussian` and
:func:`~dpbandits.privacy.mechanisms.wishart_matrix`, whose deterministic halves
:func:`~dpbandits.privacy.mechanisms.symmetric_from_normals` and
:func:`~dpbandits.privacy.mechanisms.bartlett_factor` the numpy twins call): a symmetric
Gaussian node is its packed upper triangle (row-major over ``i <= j``) of standard normals
times ``s`` off the diagonal and ``s sqrt 2`` on it; a Wishart node is ``scale U U^T`` with
``U`` upper triangular, its strict upper triangle packed standard normals and ``U_ii =
sqrt(chi2)``. The kernels scale the same variates in their loops; tests compare their nodes
with the samplers'.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.linalg.lapack import dlauum as _sp_lauum
from scipy.linalg.lapack import dpotrf as _sp_potrf
from scipy.linalg.lapack import dpotrs as _sp_potrs
from scipy.linalg.lapack import dsysv as _sp_sysv

from dpbandits._backends import BACKENDS, compiled, kernels, use_parallel
from dpbandits.geometry import clip_rows
from dpbandits.privacy.mechanisms import bartlett_factor, symmetric_from_normals

__all__ = ["BACKENDS", "np_terms", "symmetric_nodes", "ucb_ops"]


# --------------------------------------------------------------------------------------------
# numpy twins
# --------------------------------------------------------------------------------------------
def _np_wishart_into(out, z, chi, scale):
    out[:] = bartlett_factor(z, chi, out.shape[1])
    for r in range(out.shape[0]):
        # the transposed (Fortran) view is the memory LAPACK sees in the kernel
        w, _ = _sp_lauum(out[r].T, lower=1)
        out[r] = np.triu(w.T) * scale


def _np_clip_rows(x, bound):
    """Contexts clipped to ``||x||_2 <= bound`` by :func:`dpbandits.geometry.clip_rows` (the
    kernels' twin is :func:`dpbandits.geometry.clip_row_l2_into`), and the rows over it."""
    clipped, nrm = clip_rows(x, 2.0, bound)
    return clipped, nrm > bound


@functools.cache
def _upper_mask(n: int) -> np.ndarray:
    """The 0/1 mask of the upper triangle of ``n x n`` matrices."""
    return np.triu(np.ones((n, n)))


def symmetric_nodes(z: np.ndarray, n: int, scales: np.ndarray) -> np.ndarray:
    """Upper triangles ``(..., n, n)`` of symmetric Gaussian nodes from packed standard
    normals ``z`` (``..., n(n+1)/2``), the kernel's step 3 of :func:`_np_ucb_update`:
    :func:`~dpbandits.privacy.mechanisms.symmetric_from_normals` with ``scales = (s, s sqrt
    2)``, the law of ``(Z + Z^T)/sqrt 2`` that DP-UCB's node calibration assumes (module
    docstring of :mod:`dpbandits.agents.dp_ucb`: sensitivity ``L~^2`` of the
    half-vectorization whose off-diagonals are scaled by ``sqrt 2``)."""
    return symmetric_from_normals(z, n, scales[0], scales[1], "upper")


def _np_gram_update(M, x, arms, y):
    R, n = M.shape[0], M.shape[1]
    D, d = n - 1, x.shape[1]
    outer = x[:, :, None] * x[:, None, :] * _upper_mask(d)
    for k in range(D // d):  # a loop over arms (blocks), not replications
        o = k * d
        rows = np.flatnonzero(arms == k)
        if rows.size == R:
            M[:, o:o + d, o:o + d] += outer
            M[:, o:o + d, D] += x * y[:, None]
        elif rows.size:
            M[rows, o:o + d, o:o + d] += outer[rows]
            M[rows, o:o + d, D] += x[rows] * y[rows, None]
    M[:, D, D] += y * y


def _np_ucb_update(M, x, arms, y, bounds, counts, stack, push, hi, z, scales, node, topup,
                   use_topup, shift, F, u, logdet, ok):
    R, n = M.shape[0], M.shape[1]
    D = n - 1
    x, over = _np_clip_rows(x, bounds[0])
    counts[:, 0] += over
    counts[:, 1] += np.abs(y) > bounds[1]
    _np_gram_update(M, x, arms, np.clip(y, -bounds[1], bounds[1]))
    terms = [M]
    if push >= 0:
        if z.shape[1] > 0:
            node = symmetric_nodes(z, n, scales)
        if hi >= 0:
            np.add(node, stack[hi], out=stack[push])
        else:
            stack[push] = node
        terms.append(stack[push])
    if use_topup:
        terms.append(topup)
    u[:] = terms[0][:, :D, D]
    for t in terms[1:]:
        u += t[:, :D, D]
    nb, bs = F.shape[1], F.shape[2]
    ok[:] = True
    logdet[:] = 0.0
    for blk in range(nb):  # only the upper triangles are read (and written by dpotrf)
        o = blk * bs
        Fb = F[:, blk]
        Fb[:] = terms[0][:, o:o + bs, o:o + bs]
        for t in terms[1:]:
            Fb += t[:, o:o + bs, o:o + bs]
        Fb.reshape(R, bs * bs)[:, ::bs + 1] += shift
        for r in range(R):  # LAPACK factors one matrix per call
            c, info = _sp_potrf(F[r, blk].T, lower=1, clean=0, overwrite_a=1)
            ok[r] &= info == 0
            if info == 0:
                logdet[r] += 2.0 * np.log(np.diagonal(c)).sum()
    logdet[~ok] = 0.0
    counts[:, 2] += ~ok


def _np_ucb_act(F, ok, u, logdet, x, bound, beta_c, rhs, beta, idx):
    R, d = x.shape
    nb, per, bs = rhs.shape[1], rhs.shape[2] - 1, rhs.shape[3]
    x, _ = _np_clip_rows(x, bound)
    rows = np.arange(R)
    rhs[:] = 0.0
    rhs[:, :, 0] = u.reshape(R, nb, bs)
    for k in range(per):
        rhs[rows, :, 1 + k, k * d:(k + 1) * d] = x[:, None]
    for r in np.flatnonzero(ok):
        for blk in range(nb):
            _sp_potrs(F[r, blk].T, rhs[r, blk].T, lower=1, overwrite_b=1)
    inner = beta_c[0] + logdet - beta_c[1]
    b = beta_c[2] * np.sqrt(np.maximum(inner, 0.0)) + beta_c[3] + beta_c[4]
    beta[ok] = b[ok]
    mean, quad = np.empty((R, nb * per)), np.empty((R, nb * per))
    if nb == 1:
        np_terms(rhs[:, 0], x, ok, mean, quad)
    else:  # one arm per block: row 0 is theta~_k, row 1 is V_kk^-1 x
        mean[ok] = np.einsum("rkd,rd->rk", rhs[:, :, 0], x)[ok]
        quad[ok] = np.einsum("rkd,rd->rk", rhs[:, :, 1], x)[ok]
    idx[ok] = (mean + b[:, None] * np.sqrt(np.maximum(quad, 0.0)))[ok]


def np_terms(rhs, x, ok, mean, quad):
    """``mean[r, k] = <theta~, phi_k>`` and ``quad[r, k] = phi_k^T V^-1 phi_k`` from solved
    right-hand sides ``rhs`` (R, 1 + K, D) (rows where ``ok``)."""
    R, d = x.shape
    K = rhs.shape[1] - 1
    blocks = np.arange(K)
    theta = rhs[:, 0].reshape(R, K, d)
    wq = rhs[:, 1:].reshape(R, K, K, d)[:, blocks, blocks]  # (R, K, d): block k of column k
    mean[ok] = np.einsum("rkd,rd->rk", theta, x)[ok]
    quad[ok] = np.einsum("rkd,rd->rk", wq, x)[ok]


def _np_authors_terms(M, z, zu, sigma, x, A, rhs, ipiv, work, mean, quad, ok):
    R, d = x.shape
    D = M.shape[1] - 1
    K = rhs.shape[1] - 1
    iu, ju = np.triu_indices(D)
    if sigma > 0:
        # the code's symmetrized noise: the law of (Z + Z^T)/sqrt 2, Z_ij ~ N(0, sigma^2)
        A[:, iu, ju] = M[:, iu, ju] + symmetric_from_normals(z, D, sigma, sigma * math.sqrt(2.0),
                                                             "packed")
    else:
        A[:, iu, ju] = M[:, iu, ju] + (iu == ju)
    rows = np.arange(R)
    rhs[:] = 0.0
    rhs[:, 0] = M[:, :D, D] + sigma * zu if sigma > 0 else M[:, :D, D]
    for k in range(K):
        rhs[rows, 1 + k, k * d:(k + 1) * d] = x
    for r in range(R):
        # lwork as in the kernel, so both take LAPACK's same (blocked) path
        _, _, w, info = _sp_sysv(A[r].T, rhs[r].T, lwork=work.shape[1], lower=1)
        ok[r] = info == 0
        rhs[r] = w.T
    np_terms(rhs, x, ok, mean, quad)


NUMPY = {"wishart_into": _np_wishart_into, "ucb_update": _np_ucb_update,
         "ucb_act": _np_ucb_act, "authors_terms": _np_authors_terms,
         "gram_update": _np_gram_update}


class UcbOps:
    """The functions of one backend by name (``ops["ucb_update"]``). Pickles by its
    arguments, so agents holding one pickle mid-run."""

    def __init__(self, backend: str, n_reps: int, n: int):
        self.args = (backend, n_reps, n)
        self.parallel = False
        if not compiled(backend):
            self.backend, self._ops = "numpy", NUMPY
            return
        self.parallel = use_parallel(n_reps, n**3 + 2000)
        self.backend = "numba"
        built = kernels("agents._ucb_kernels").KERNELS
        self._ops = {name: built.get(name, self.parallel) for name in NUMPY}

    def __getitem__(self, name: str):
        return self._ops[name]

    def __reduce__(self):
        return (UcbOps, self.args)


def ucb_ops(backend: str, n_reps: int, n: int) -> UcbOps:
    """The functions of ``backend`` (``"auto"``, ``"numba"`` or ``"numpy"``) for ``n_reps``
    replications of ``n x n`` matrices: the parallel kernels when the work per round is
    worth it (:func:`dpbandits._backends.use_parallel`; results are the same either way)."""
    return UcbOps(backend, n_reps, n)

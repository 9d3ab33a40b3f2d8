"""LinUCB's rounds as numba kernels, on packed symmetric inverses.

State per replication and arm: the upper triangle of ``V^{-1}`` packed row-major
(``d(d+1)/2`` floats, half the memory traffic of the full matrix), ``theta = V^{-1} b`` and
``ln det V``. The index step computes ``u_k = V_k^{-1} x`` for every arm (kept for the update of
the same context); the update is Sherman-Morrison on the pulled arm,
``V^{-1} <- V^{-1} - u u^T / (1 + x'u)``, with the recursive least-squares form of the
estimate, ``theta <- theta + u (y - x'theta) / (1 + x'u)`` (equal to ``V^{-1} b`` after the
update), and ``ln det V += ln(1 + x'u)``: ``(K + 1) d^2`` multiply-adds per round. The numpy
path of :class:`dpbandits.agents.references.LinUCB` (full matrices, ``theta`` recomputed)
gives the same numbers up to rounding; the tests compare them. For one logged stream,
:func:`_replay` plays all rows' updates (``fit``) in one call through the per-row routine of a
round (:func:`_update_one`), and :func:`_rows_indices` answers all rows of ``predict`` in one
call with the per-row index's sums in the same order: both give the row-by-row numbers bit
for bit. Importing this module imports numba: it is loaded on the first compiled round
(:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from dpbandits._backends import use_parallel
from dpbandits._numba import KernelSet, prange

__all__ = ["LinUCBState"]


def _symv(p, x, out):
    """``out = V^{-1} x`` for the packed upper triangle ``p`` of a symmetric matrix.

    The order of every sum is fixed (:func:`_rows_indices` repeats it, bit for bit):
    ``out[j]`` starts at 0 and adds ``p_ij x_i`` for ``i = 0, 1, .., j-1`` in turn, then
    ``acc_j = p_jj x_j + p_j,j+1 x_j+1 + ..`` summed left to right. Rows of the triangle go
    four at a time (their corner first, then one pass over the columns right of it: four
    independent sums ``acc``), the last ``d mod 4`` one at a time; the order per entry is the
    one-row-at-a-time order."""
    d = x.shape[0]
    for i in range(d):
        out[i] = 0.0
    i = 0
    q = 0  # start of row i of the triangle: p[q : q + d - i] = V^-1[i, i:]
    while i + 3 < d:
        w = d - i
        r0 = p[q:q + w]
        r1 = p[q + w:q + 2 * w - 1]
        r2 = p[q + 2 * w - 1:q + 3 * w - 3]
        r3 = p[q + 3 * w - 3:q + 4 * w - 6]
        x0, x1, x2, x3 = x[i], x[i + 1], x[i + 2], x[i + 3]
        a0 = r0[0] * x0  # the corner, row by row
        a0 += r0[1] * x1
        out[i + 1] += r0[1] * x0
        a0 += r0[2] * x2
        out[i + 2] += r0[2] * x0
        a0 += r0[3] * x3
        out[i + 3] += r0[3] * x0
        a1 = r1[0] * x1
        a1 += r1[1] * x2
        out[i + 2] += r1[1] * x1
        a1 += r1[2] * x3
        out[i + 3] += r1[2] * x1
        a2 = r2[0] * x2
        a2 += r2[1] * x3
        out[i + 3] += r2[1] * x2
        a3 = r3[0] * x3
        for j in range(4, w):
            xj = x[i + j]
            a0 += r0[j] * xj
            a1 += r1[j - 1] * xj
            a2 += r2[j - 2] * xj
            a3 += r3[j - 3] * xj
        for j in range(4, w):
            out[i + j] = (((out[i + j] + r0[j] * x0) + r1[j - 1] * x1) + r2[j - 2] * x2
                          ) + r3[j - 3] * x3
        out[i] += a0
        out[i + 1] += a1
        out[i + 2] += a2
        out[i + 3] += a3
        q += 4 * w - 6
        i += 4
    while i < d:
        w = d - i
        row = p[q:q + w]
        xi = x[i]
        acc = row[0] * xi
        for j in range(1, w):
            acc += row[j] * x[i + j]
        for j in range(1, w):
            out[i + j] += row[j] * xi
        out[i] += acc
        q += w
        i += 1


_symv = numba.njit(cache=True, nogil=True)(_symv)


def _index_one(p, th, logdet_k, xr, u, consts):
    """One arm's index for context ``xr`` (:func:`_indices`), with ``u = V_k^-1 x`` computed
    into ``u``: the per-row routine of :func:`_indices` and of :func:`_rows_indices`' last
    rows."""
    _symv(p, xr, u)
    quad = 0.0
    mean = 0.0
    for j in range(xr.shape[0]):
        quad += xr[j] * u[j]
        mean += th[j] * xr[j]
    beta = consts[1] * math.sqrt(max(consts[0] + logdet_k, 0.0)) + consts[2]
    return mean + consts[3] * beta * math.sqrt(max(quad, 0.0))


_index_one = numba.njit(cache=True, nogil=True)(_index_one)


def _indices(P, theta, logdet, x, U, consts, idx):
    """``idx[r, k] = <theta_k, x> + s beta_k sqrt(x' V_k^-1 x)`` with ``beta_k = sigma
    sqrt(max(c + ln det V_k, 0)) + c_S`` (``consts = (c, sigma, c_S, s)``); ``U[r, k] =
    V_k^-1 x`` is kept for the update."""
    R, K = theta.shape[0], theta.shape[1]
    for r in prange(R):
        for k in range(K):
            idx[r, k] = _index_one(P[r, k], theta[r, k], logdet[r, k], x[r], U[r, k], consts)


def _update_one(p, theta, logdet, a, xr, y, u, xu):
    """One replication's round: Sherman-Morrison and recursive least squares on arm ``a``
    (packed inverse ``p``, estimates ``theta`` (K, d), ``logdet`` (K,)) for context ``xr`` and
    reward ``y``; ``u = V_a^-1 x`` is reused when ``xu`` (the context it was computed for)
    equals ``xr``, and marked stale after the update. The one routine of :func:`_update` (a
    round of every replication) and :func:`_replay` (a logged stream, row after row)."""
    d = xr.shape[0]
    same = True
    for j in range(d):
        if xu[j] != xr[j]:
            same = False
            break
    if not same:
        _symv(p, xr, u)
    th = theta[a]
    xtu = 0.0
    xth = 0.0
    for j in range(d):
        xtu += xr[j] * u[j]
        xth += xr[j] * th[j]
    denom = 1.0 + xtu
    g = (y - xth) / denom
    q = 0
    for i in range(d):
        ui = u[i] / denom
        w = d - i
        row = p[q:q + w]
        ut = u[i:]
        for j in range(w):
            row[j] -= ui * ut[j]
        q += w
    for i in range(d):
        th[i] += u[i] * g
    logdet[a] += math.log(denom)
    xu[0] = math.nan  # u is stale now


_update_one = numba.njit(cache=True, nogil=True)(_update_one)


def _update(P, theta, logdet, x, arms, y, U, xu):
    """Sherman-Morrison and recursive least squares on the pulled arm of every replication
    (:func:`_update_one`); ``U[r, a]`` is reused when ``xu[r]`` equals ``x[r]``."""
    R = theta.shape[0]
    for r in prange(R):
        a = arms[r]
        _update_one(P[r, a], theta[r], logdet[r], a, x[r], y[r], U[r, a], xu[r])


def _replay(P, theta, logdet, x, arms, y, U, xu):
    """Replication 0 learns the rows of a logged stream (``x`` (n, d), ``arms`` and ``y``
    (n,)) in order: the rounds ``n`` calls of :func:`_update` on one row each would play,
    through the same :func:`_update_one`, so the state is the same bit for bit."""
    for t in range(x.shape[0]):
        a = arms[t]
        _update_one(P[0, a], theta[0], logdet[0], a, x[t], y[t], U[0, a], xu[0])


_replay = numba.njit(cache=True, nogil=True)(_replay)


#: rows per block of :func:`_rows_indices` (its innermost loops run over a block's rows)
_BLOCK = 64


def _rows_indices(P, theta, logdet, x, consts, idx):
    """:func:`_indices` of one replication's state (``P`` (K, m), ``theta`` (K, d), ``logdet``
    (K,)) for each row of ``x`` (n, d): ``idx[i, k]`` is, bit for bit, what :func:`_indices`
    gives for the context ``x[i]`` alone. Rows go in blocks of ``_BLOCK`` whose contexts are
    transposed, so the innermost loops run over the block's rows (vectorized) while every
    row's sums are :func:`_symv`'s, in its order; the last ``n mod _BLOCK`` rows go one at a
    time through :func:`_index_one` (a single row costs what ``act`` costs). Serial only: on
    two cores a parallel build measured no faster (a ``predict`` of the 1,797 digits rows
    took 8 ms either way) and took 8 s to compile against 3 s."""
    n, d = x.shape
    K = theta.shape[0]
    full = n // _BLOCK
    u = np.empty(d)
    for i in range(full * _BLOCK, n):
        for k in range(K):
            idx[i, k] = _index_one(P[k], theta[k], logdet[k], x[i], u, consts)
    for blk in range(full):
        s = blk * _BLOCK
        xt = np.empty((d, _BLOCK))  # the block's contexts, one column per row
        for b in range(_BLOCK):
            for j in range(d):
                xt[j, b] = x[s + b, j]
        out = np.empty((d, _BLOCK))  # V_k^-1 x per row: _symv's out
        acc = np.empty((4, _BLOCK))  # _symv's acc of four rows of the triangle
        quad = np.empty(_BLOCK)
        mean = np.empty(_BLOCK)
        for k in range(K):
            p = P[k]
            for j in range(d):
                for b in range(_BLOCK):
                    out[j, b] = 0.0
            i = 0
            q = 0
            while i + 3 < d:  # four rows of the triangle: the corner, then the columns
                wd = d - i
                for r in range(4):
                    start = q + r * wd - (r * (r - 1)) // 2
                    xr = xt[i + r]
                    a = acc[r]
                    for b in range(_BLOCK):
                        a[b] = p[start] * xr[b]
                    for c in range(1, 4 - r):
                        pc = p[start + c]
                        xc = xt[i + r + c]
                        o = out[i + r + c]
                        for b in range(_BLOCK):
                            a[b] += pc * xc[b]
                            o[b] += pc * xr[b]
                r0 = p[q:q + wd]
                r1 = p[q + wd:q + 2 * wd - 1]
                r2 = p[q + 2 * wd - 1:q + 3 * wd - 3]
                r3 = p[q + 3 * wd - 3:q + 4 * wd - 6]
                x0, x1, x2, x3 = xt[i], xt[i + 1], xt[i + 2], xt[i + 3]
                a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
                for j in range(4, wd):
                    p0, p1, p2, p3 = r0[j], r1[j - 1], r2[j - 2], r3[j - 3]
                    xj = xt[i + j]
                    o = out[i + j]
                    for b in range(_BLOCK):
                        a0[b] += p0 * xj[b]
                        a1[b] += p1 * xj[b]
                        a2[b] += p2 * xj[b]
                        a3[b] += p3 * xj[b]
                        o[b] = (((o[b] + p0 * x0[b]) + p1 * x1[b]) + p2 * x2[b]) + p3 * x3[b]
                for r in range(4):
                    o = out[i + r]
                    a = acc[r]
                    for b in range(_BLOCK):
                        o[b] += a[b]
                q += 4 * wd - 6
                i += 4
            while i < d:  # the last d mod 4 rows, one at a time
                wd = d - i
                xi = xt[i]
                a = acc[0]
                for b in range(_BLOCK):
                    a[b] = p[q] * xi[b]
                for j in range(1, wd):
                    pq = p[q + j]
                    xj = xt[i + j]
                    o = out[i + j]
                    for b in range(_BLOCK):
                        a[b] += pq * xj[b]
                        o[b] += pq * xi[b]
                o = out[i]
                for b in range(_BLOCK):
                    o[b] += a[b]
                q += wd
                i += 1
            for b in range(_BLOCK):
                quad[b] = 0.0
                mean[b] = 0.0
            for j in range(d):
                xj = xt[j]
                o = out[j]
                tj = theta[k, j]
                for b in range(_BLOCK):
                    quad[b] += xj[b] * o[b]
                    mean[b] += tj * xj[b]
            beta = consts[1] * math.sqrt(max(consts[0] + logdet[k], 0.0)) + consts[2]
            for b in range(_BLOCK):
                idx[s + b, k] = mean[b] + consts[3] * beta * math.sqrt(max(quad[b], 0.0))


_rows_indices = numba.njit(cache=True, nogil=True)(_rows_indices)

_KERNELS = KernelSet({"indices": _indices, "update": _update})


class LinUCBState:
    """Packed ridge statistics of ``n_reps`` replications and ``n_arms`` arms (module
    docstring), regularizer ``lam``."""

    def __init__(self, n_reps: int, n_arms: int, dim: int, lam: float):
        iu, ju = np.triu_indices(dim)
        self.P = np.zeros((n_reps, n_arms, iu.size))
        self.P[:, :, iu == ju] = 1.0 / lam
        self.theta = np.zeros((n_reps, n_arms, dim))
        self.logdet = np.full((n_reps, n_arms), dim * math.log(lam))
        self.U = np.zeros((n_reps, n_arms, dim))
        self.xu = np.full((n_reps, dim), np.nan)  # the context U was computed for
        parallel = use_parallel(n_reps, 2.0 * (n_arms + 1) * dim * dim)
        self._indices = _KERNELS.get("indices", parallel)
        self._update = _KERNELS.get("update", parallel)

    def indices(self, x: np.ndarray, consts: np.ndarray) -> np.ndarray:
        idx = np.empty(self.logdet.shape)
        self._indices(self.P, self.theta, self.logdet, x, self.U, consts, idx)
        self.xu[:] = x
        return idx

    def row_indices(self, x: np.ndarray, consts: np.ndarray) -> np.ndarray:
        """Replication 0's indices (n, K) for each row of ``x`` (n, d): row ``i`` is, bit for
        bit, what ``indices`` gives for ``x[i]`` alone. Reads the state only."""
        idx = np.empty((x.shape[0], self.theta.shape[1]))
        _rows_indices(self.P[0], self.theta[0], self.logdet[0], np.ascontiguousarray(x), consts,
                      idx)
        return idx

    def add(self, x: np.ndarray, arms: np.ndarray, y: np.ndarray) -> None:
        self._update(self.P, self.theta, self.logdet, x, arms, y, self.U, self.xu)

    def replay(self, x: np.ndarray, arms: np.ndarray, y: np.ndarray) -> None:
        """Replication 0 learns the rows of ``x`` (n, d), ``arms`` and ``y`` (n,) in order,
        in one call: the same state, bit for bit, as ``add`` on each row in turn (for a
        one-replication state)."""
        _replay(self.P, self.theta, self.logdet, x, arms, y, self.U, self.xu)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_indices", "_update")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        R, K, d = self.theta.shape
        parallel = use_parallel(R, 2.0 * (K + 1) * d * d)
        self._indices = _KERNELS.get("indices", parallel)
        self._update = _KERNELS.get("update", parallel)

"""LinUCB's rounds as numba kernels, on packed symmetric inverses.

State per replication and arm: the upper triangle of ``V^{-1}`` packed row-major
(``d(d+1)/2`` floats, half the memory traffic of the full matrix), ``theta = V^{-1} b`` and
``ln det V``. The index step computes ``u_k = V_k^{-1} x`` for every arm (kept for the update of
the same context); the update is Sherman-Morrison on the pulled arm,
``V^{-1} <- V^{-1} - u u^T / (1 + x'u)``, with the recursive least-squares form of the
estimate, ``theta <- theta + u (y - x'theta) / (1 + x'u)`` (equal to ``V^{-1} b`` after the
update), and ``ln det V += ln(1 + x'u)``: ``(K + 1) d^2`` multiply-adds per round. The numpy
path of :class:`dpbandits.agents.references.LinUCB` (full matrices, ``theta`` recomputed)
gives the same numbers up to rounding; the tests compare them. Importing this module imports
numba: it is loaded on the first compiled round (:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from dpbandits._backends import use_parallel
from dpbandits._numba import KernelSet, prange

__all__ = ["LinUCBState"]


def _symv(p, x, out):
    """``out = V^{-1} x`` for the packed upper triangle ``p`` of a symmetric matrix."""
    d = x.shape[0]
    for i in range(d):
        out[i] = 0.0
    q = 0
    for i in range(d):
        xi = x[i]
        acc = p[q] * xi
        q += 1
        for j in range(i + 1, d):
            acc += p[q] * x[j]
            out[j] += p[q] * xi
            q += 1
        out[i] += acc


_symv = numba.njit(cache=True, nogil=True)(_symv)


def _indices(P, theta, logdet, x, U, consts, idx):
    """``idx[r, k] = <theta_k, x> + s beta_k sqrt(x' V_k^-1 x)`` with ``beta_k = sigma
    sqrt(max(c + ln det V_k, 0)) + c_S`` (``consts = (c, sigma, c_S, s)``); ``U[r, k] =
    V_k^-1 x`` is kept for the update."""
    R, K = theta.shape[0], theta.shape[1]
    d = x.shape[1]
    for r in prange(R):
        xr = x[r]
        for k in range(K):
            u = U[r, k]
            _symv(P[r, k], xr, u)
            quad = 0.0
            mean = 0.0
            for j in range(d):
                quad += xr[j] * u[j]
                mean += theta[r, k, j] * xr[j]
            beta = consts[1] * math.sqrt(max(consts[0] + logdet[r, k], 0.0)) + consts[2]
            idx[r, k] = mean + consts[3] * beta * math.sqrt(max(quad, 0.0))


def _update(P, theta, logdet, x, arms, y, U, xu):
    """Sherman-Morrison and recursive least squares on the pulled arm of every replication;
    ``U[r, a]`` is reused when ``xu[r]`` (the context it was computed for) equals ``x[r]``,
    and marked stale after the update."""
    R = theta.shape[0]
    d = x.shape[1]
    for r in prange(R):
        a = arms[r]
        xr = x[r]
        u = U[r, a]
        same = True
        for j in range(d):
            if xu[r, j] != xr[j]:
                same = False
                break
        if not same:
            _symv(P[r, a], xr, u)
        xtu = 0.0
        xth = 0.0
        for j in range(d):
            xtu += xr[j] * u[j]
            xth += xr[j] * theta[r, a, j]
        denom = 1.0 + xtu
        g = (y[r] - xth) / denom
        p = P[r, a]
        q = 0
        for i in range(d):
            ui = u[i] / denom
            for j in range(i, d):
                p[q] -= ui * u[j]
                q += 1
            theta[r, a, i] += u[i] * g
        logdet[r, a] += math.log(denom)
        xu[r, 0] = math.nan  # U[r, a] is stale now


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

    def broadcast(self, n: int) -> LinUCBState:
        """Replication 0's statistics seen by ``n`` replications: read-only views of ``P``,
        ``theta`` and ``logdet`` (no copy), fresh scratch for ``U``; for indices only."""
        view = object.__new__(LinUCBState)
        for name in ("P", "theta", "logdet"):
            arr = getattr(self, name)
            setattr(view, name, np.broadcast_to(arr[:1], (n, *arr.shape[1:])))
        view.U = np.empty((n, *self.U.shape[1:]))
        view.xu = np.full((n, self.xu.shape[1]), np.nan)
        K, d = self.theta.shape[1:]
        view._indices = _KERNELS.get("indices", use_parallel(n, 2.0 * (K + 1) * d * d))
        return view

    def add(self, x: np.ndarray, arms: np.ndarray, y: np.ndarray) -> None:
        self._update(self.P, self.theta, self.logdet, x, arms, y, self.U, self.xu)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_indices", "_update")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        R, K, d = self.theta.shape
        parallel = use_parallel(R, 2.0 * (K + 1) * d * d)
        self._indices = _KERNELS.get("indices", parallel)
        self._update = _KERNELS.get("update", parallel)

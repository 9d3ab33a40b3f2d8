"""DP-UCB's and the authors'-code DP-UCB's per-round kernels, compiled with numba (their
numpy twins, the argument contract and the backend choice are in
:mod:`dpbandits.agents._ucb_ops`). Importing this module imports numba; it is loaded on the
first compiled round (:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from dpbandits import geometry
from dpbandits._lapack import chol_solve_upper, chol_upper, lauum_upper, sym_solve_upper
from dpbandits._numba import KernelSet, prange

__all__ = ["KERNELS"]

#: the clipping primitive's compiled twin (:func:`dpbandits.geometry.clip_row_l2_into`, the
#: same rule as :func:`dpbandits.geometry.clip_rows`; tests compare them) and its thresholds
_jit = numba.njit(cache=True, nogil=True, inline="always")
_clip_row = _jit(geometry.clip_row_l2_into)
_limits = _jit(geometry._limits)


# --------------------------------------------------------------------------------------------
# the kernels (plain Python here; compiled below, serially and with prange)
# --------------------------------------------------------------------------------------------
def _wishart_into(out, z, chi, scale):
    """``out[r]`` (upper) = ``scale U U^T``, ``U`` upper triangular with ``U_ii =
    sqrt(chi[r, i])`` and strict upper triangle ``z[r]`` (packed)."""
    R, n = out.shape[0], out.shape[1]
    for r in prange(R):
        a = out[r]
        p = 0
        for i in range(n):
            a[i, i] = math.sqrt(chi[r, i])
            for j in range(i + 1, n):
                a[i, j] = z[r, p]
                p += 1
        lauum_upper(a)
        for i in range(n):
            for j in range(i, n):
                a[i, j] *= scale


def _ucb_update(M, x, arms, y, bounds, counts, stack, push, hi, z, scales, node, topup,
                use_topup, shift, F, u, logdet, ok):
    """One DP-UCB update for every replication ``r``.

    1. clip ``x[r]`` to ``||x||_2 <= bounds[0]`` and ``y[r]`` to ``|y| <= bounds[1]``,
       counting each in ``counts[r, 0]``, ``counts[r, 1]``;
    2. ``M[r] += v v^T``, ``v = [phi_{arms[r]}(x); y]``;
    3. if ``push >= 0``: the node completed now enters the noise stack,
       ``stack[push] = node + stack[hi]`` (``hi < 0``: nothing above), the node being the
       symmetric Gaussian of packed normals ``z[r]`` times ``scales = (s_off, s_diag)``
       when ``z`` has columns, else ``node[r]``;
    4. the release ``M + stack[push] (+ topup)``: ``u[r]`` its ``[:D, D]`` column; ``F[r, b]``
       (``F`` of shape ``(R, nb, bs, bs)``, ``nb bs = D``) the Cholesky factor of diagonal
       block ``b`` of ``V = release[:D, :D] + shift I`` (``nb = 1``: all of ``V``; ``nb = K``:
       the per-arm blocks, the cross-arm blocks dropped), ``logdet[r]`` the sum of the
       blocks' ``ln det``, ``ok[r]`` whether every block is positive definite
       (``counts[r, 2]`` counts when not).
    """
    R, n = M.shape[0], M.shape[1]
    D = n - 1
    d = x.shape[1]
    gauss = z.shape[1] > 0
    limit, target = _limits(bounds[0], 2.0, d)
    for r in prange(R):
        xc = np.empty(d)
        if _clip_row(x[r], bounds[0], limit, target, xc) > bounds[0]:
            counts[r, 0] += 1
        yr = y[r]
        if abs(yr) > bounds[1]:
            counts[r, 1] += 1
            yr = bounds[1] if yr > 0 else -bounds[1]
        base = arms[r] * d
        m = M[r]
        for a in range(d):
            xa = xc[a]
            for b in range(a, d):
                m[base + a, base + b] += xa * xc[b]
            m[base + a, D] += xa * yr
        m[D, D] += yr * yr
        if push >= 0:
            p = 0
            for i in range(n):
                for j in range(i, n):
                    if gauss:
                        v = z[r, p] * (scales[1] if i == j else scales[0])
                        p += 1
                    else:
                        v = node[r, i, j]
                    stack[push, r, i, j] = v + stack[hi, r, i, j] if hi >= 0 else v
        for i in range(D):
            v = m[i, D]
            if push >= 0:
                v = v + stack[push, r, i, D]
            if use_topup:
                v = v + topup[r, i, D]
            u[r, i] = v
        bs = F.shape[2]
        good = True
        s = 0.0
        for blk in range(F.shape[1]):
            o = blk * bs
            fr = F[r, blk]
            for i in range(bs):
                for j in range(i, bs):
                    v = m[o + i, o + j]
                    if push >= 0:
                        v = v + stack[push, r, o + i, o + j]
                    if use_topup:
                        v = v + topup[r, o + i, o + j]
                    fr[i, j] = v + shift if i == j else v
            info = chol_upper(fr)
            if info == 0:
                for i in range(bs):
                    s += math.log(fr[i, i])
            else:
                good = False
        ok[r] = good
        if not good:
            counts[r, 2] += 1
            s = 0.0
        logdet[r] = 2.0 * s


def _ucb_act(F, ok, u, logdet, x, bound, beta_c, rhs, beta, idx):
    """UCB indices ``idx[r, k] = <theta~, phi_k> + beta sqrt(phi_k^T V^-1 phi_k)`` from the
    block factors of :func:`_ucb_update` (replications with ``ok[r]`` False are skipped;
    ``rhs`` of shape ``(R, nb, 1 + K / nb, bs)``: block ``b`` holds arms ``b K / nb ..``).
    ``x`` is clipped to ``||x||_2 <= bound``; ``beta[r] = c_sig sqrt(max(c_a + logdet - c_b,
    0)) + c_s + c_g`` with ``beta_c = (c_a, c_b, c_sig, c_s, c_g)`` (Proposition 4)."""
    R, d = x.shape
    nb, per, bs = rhs.shape[1], rhs.shape[2] - 1, rhs.shape[3]
    limit, target = _limits(bound, 2.0, d)
    for r in prange(R):
        if not ok[r]:
            continue
        xc = np.empty(d)
        _clip_row(x[r], bound, limit, target, xc)
        inner = beta_c[0] + logdet[r] - beta_c[1]
        br = beta_c[2] * math.sqrt(max(inner, 0.0)) + beta_c[3] + beta_c[4]
        beta[r] = br
        for blk in range(nb):
            b = rhs[r, blk]
            b[:] = 0.0
            for i in range(bs):
                b[0, i] = u[r, blk * bs + i]
            for k in range(per):
                for a in range(d):
                    b[1 + k, k * d + a] = xc[a]
            chol_solve_upper(F[r, blk], b)
            for k in range(per):
                m = 0.0
                q = 0.0
                for a in range(d):
                    m += xc[a] * b[0, k * d + a]
                    q += xc[a] * b[1 + k, k * d + a]
                idx[r, blk * per + k] = m + br * math.sqrt(max(q, 0.0))


def _authors_terms(M, z, zu, sigma, x, A, rhs, ipiv, work, mean, quad, ok):
    """The authors'-code round: ``V = G + Z`` with ``G = M[:D, :D]`` (``Z`` symmetric
    Gaussian: packed standard normals ``z`` times ``sigma`` off the diagonal, ``sigma sqrt 2``
    on it) and ``u = M[:D, D] + sigma zu``; solve ``V w = [u, phi_1 .. phi_K]`` (symmetric
    indefinite, Bunch-Kaufman) and return ``mean[r, k] = <theta~, phi_k>``, ``quad[r, k] =
    phi_k^T V^-1 phi_k``. ``sigma = 0`` (no noise): ``V = G + I``, ``u = M[:D, D]``."""
    R, d = x.shape
    D = M.shape[1] - 1
    K = rhs.shape[1] - 1
    s_diag = sigma * math.sqrt(2.0)
    for r in prange(R):
        a = A[r]
        p = 0
        for i in range(D):
            for j in range(i, D):
                if sigma > 0:
                    a[i, j] = M[r, i, j] + z[r, p] * (s_diag if i == j else sigma)
                else:
                    a[i, j] = M[r, i, j] + (1.0 if i == j else 0.0)
                p += 1
        b = rhs[r]
        b[:] = 0.0
        for i in range(D):
            b[0, i] = M[r, i, D] + sigma * zu[r, i] if sigma > 0 else M[r, i, D]
        for k in range(K):
            for c in range(d):
                b[1 + k, k * d + c] = x[r, c]
        info = sym_solve_upper(a, b, ipiv[r], work[r])
        ok[r] = info == 0
        for k in range(K):
            m = 0.0
            q = 0.0
            for c in range(d):
                m += x[r, c] * b[0, k * d + c]
                q += x[r, c] * b[1 + k, k * d + c]
            mean[r, k] = m
            quad[r, k] = q


def _gram_update(M, x, arms, y):
    """``M[r] += v v^T`` (upper triangle), ``v = [phi_{arms[r]}(x[r]); y[r]]``."""
    R = M.shape[0]
    D = M.shape[1] - 1
    d = x.shape[1]
    for r in prange(R):
        base = arms[r] * d
        yr = y[r]
        for a in range(d):
            xa = x[r, a]
            for b in range(a, d):
                M[r, base + a, base + b] += xa * x[r, b]
            M[r, base + a, D] += xa * yr
        M[r, D, D] += yr * yr


_PY = {"wishart_into": _wishart_into, "ucb_update": _ucb_update, "ucb_act": _ucb_act,
       "authors_terms": _authors_terms, "gram_update": _gram_update}


KERNELS = KernelSet(_PY)

"""DP-POFW's step (Han et al. 2022, Algorithm 2) as numba kernels, for GLM losses (identity and
logistic links) with Laplace report-noisy-min.

One call of :func:`step` advances every row: clip ``x`` to ``||x||_inf <= x_bound`` and ``y``
to ``[-y_bound, y_bound]`` (the rule of :func:`dpbandits.geometry.clip_rows`, counted as the
numpy path counts), the increment ``g_t = ((t+1) psi(<theta_t, x>) - t psi(<theta_{t-1},
x>)) x`` added to the running sum, the vertex chosen by
:func:`dpbandits.privacy.vertex_rnm.select_row` from the row's words of the round,
and the Frank-Wolfe step. Rows whose ``mask`` is False take the synthetic sample
``(0, y_synth)`` of DP-HDB, whose increment is exactly zero. The direction ``d_t = sum / (t+1)``
is not stored: its entries are formed when needed and ``max_j |sum_j|`` is kept per row
(``max_j |d_j|`` is that times ``1/(t+1)``, rounding being monotone).

A row whose selection needs more words than the round's fixed ones is left with index -1
and no new iterate; :func:`finish` then serves those rows in order from the spill (serially,
so the numbers never depend on the thread count). The numpy path of
:class:`dpbandits.optim.streaming.dp_pofw.DPPOFW` computes the same numbers up to the
rounding of the dot products (the tests compare them).

This module imports numba; it is loaded on the first compiled step
(:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from dpbandits import geometry
from dpbandits._numba import KernelSet, prange, rebound
from dpbandits.privacy import vertex_rnm as _vertex_rnm
from dpbandits.privacy.vertex_rnm import EMPTY

__all__ = ["KERNELS", "dot2", "finish", "select_row_compiled"]

_EPS = float(np.finfo(np.float64).eps)
_COUNT_RTOL = 1e-9
_TINY_NORMAL = 2.0**-1022


def _clip_into(xr, nrm, x_bound, out):
    """``xr`` (with ``nrm = max|xr_j| > x_bound``) scaled into ``||.||_inf <= x_bound`` in
    ``out``, the rule of :func:`dpbandits.geometry.clip_rows` for ``q = inf``: times
    ``x_bound / nrm`` (from ``xr / nrm`` when that factor is subnormal), then each entry
    clipped at ``x_bound``, so the bound holds exactly; returns ``out``."""
    d = xr.shape[0]
    f = x_bound / nrm
    if f < _TINY_NORMAL:
        for j in range(d):
            out[j] = xr[j] / nrm * x_bound
    else:
        for j in range(d):
            out[j] = xr[j] * f
    for j in range(d):
        v = out[j]
        if v > x_bound:
            out[j] = x_bound
        elif v < -x_bound:
            out[j] = -x_bound
    return out


def _dot2(a, b, x):
    """``(<a, x>, <b, x>)`` in one pass over ``x``, each with four partial sums (independent
    additions pipeline)."""
    n = x.shape[0]
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    j = 0
    while j + 4 <= n:
        a0 += a[j] * x[j]
        a1 += a[j + 1] * x[j + 1]
        a2 += a[j + 2] * x[j + 2]
        a3 += a[j + 3] * x[j + 3]
        b0 += b[j] * x[j]
        b1 += b[j + 1] * x[j + 1]
        b2 += b[j + 2] * x[j + 2]
        b3 += b[j + 3] * x[j + 3]
        j += 4
    while j < n:
        a0 += a[j] * x[j]
        b0 += b[j] * x[j]
        j += 1
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


def _psi(z, y, link):
    if link == 0:
        return z - y
    return 1.0 / (1.0 + math.exp(-z)) - y


def _vertex_step(theta, out, eta, radius, k):
    """``out = theta + eta (v - theta)`` for vertex ``k`` (``j``: ``+r e_j``, ``d + j``:
    ``-r e_j``), as the numpy path: ``theta (1 - eta)`` then ``± eta r`` added."""
    d = theta.shape[0]
    f = 1.0 - eta
    for j in range(d):
        out[j] = theta[j] * f
    if k < d:
        out[k] += eta * radius
    else:
        out[k - d] += -eta * radius


def _row_sample(x, y, x_bound, y_bound, scratch):
    """Row ``x`` clipped to ``||.||_inf <= x_bound`` (in ``scratch`` when it must change) and
    ``y`` truncated to ``[-y_bound, y_bound]``; returns ``(x, y, clipped)``, ``clipped`` as
    :func:`dpbandits.geometry.clip_rows` counts it."""
    clipped = False
    nrm = _row_max(x)
    if nrm > x_bound:
        x = _clip_into(x, nrm, x_bound, scratch)
        clipped = nrm > x_bound * (1.0 + _COUNT_RTOL)
    if abs(y) > y_bound:
        y = y_bound if y > 0.0 else -y_bound
        clipped = True
    return x, y, clipped


def _row_step(xv, yr, real, t, inv, eta, beta, radius, link, th, prev, s, r, smax, words,
              cand):
    """One row's step after the clip: if ``real``, the increment of ``(xv, yr)`` into the
    running sum ``s`` (else the synthetic sample, whose increment is zero), then the vertex
    from the row's words and the Frank-Wolfe step into ``prev``; returns the vertex (-1:
    the words ran out, nothing written)."""
    if real:
        z_cur, z_prev = _dot2(th, prev, xv)
        coef = (t + 1.0) * _psi(z_cur, yr, link) - float(t) * _psi(z_prev, yr, link)
        m = 0.0
        for j in range(s.shape[0]):
            v = s[j] + coef * xv[j]
            s[j] = v
            v = abs(v)
            if v > m:
                m = v
        smax[r] = m
    k, _ = select_row_compiled(s, inv, smax[r] * inv, beta, words, EMPTY, 0, cand)
    if k >= 0:
        _vertex_step(th, prev, eta, radius, k)
    return k


def _step(x, y, mask, y_synth, t, eta, beta, radius, x_bound, y_bound, link, thetas, cur,
          sums, smax, n_clipped, words, cand, xbuf, idx):
    """One step of every row (module docstring); returns how many rows still need words
    from the spill (their ``idx`` is -1)."""
    R = x.shape[0]
    inv = 1.0 / (t + 1.0)
    synth_clipped = abs(y_synth) > y_bound
    missing = 0
    for r in prange(R):
        if mask[r]:
            xv, yr, clipped = _row_sample(x[r], y[r], x_bound, y_bound, xbuf[r])
        else:
            xv, yr, clipped = x[r], y_synth, synth_clipped
        if clipped:
            n_clipped[r] += 1
        k = _row_step(xv, yr, mask[r], t, inv, eta, beta, radius, link, thetas[cur, r],
                      thetas[1 - cur, r], sums[r], r, smax, words[r], cand[r])
        idx[r] = k
        if k < 0:
            missing += 1
    return missing


def _step_arms(x, y, arms, y_synth, t, eta, beta, radius, x_bound, y_bound, link, thetas,
               cur, sums, smax, n_clipped, words, cand, xbuf, idx, missing, out):
    """:func:`_step` of K optimizers at once (tuples of their arrays, one per optimizer):
    row ``r``'s sample goes to optimizer ``arms[r]``, the synthetic one to the others
    (DP-HDB's update); the same numbers as K calls of :func:`_step`. ``missing`` (K,) gets
    each optimizer's count of rows left for the spill; ``out[r, k]`` (R, K, d) the new
    iterate of row ``r`` of optimizer ``k`` (rows left for the spill: written by
    :func:`_finish`)."""
    R = x.shape[0]
    K = len(thetas)
    inv = 1.0 / (t + 1.0)
    synth_clipped = abs(y_synth) > y_bound
    for r in prange(R):
        a = arms[r]
        xv, yr, clipped = _row_sample(x[r], y[r], x_bound, y_bound, xbuf[r])
        for k in range(K):
            real = k == a
            if (clipped if real else synth_clipped):
                n_clipped[k][r] += 1
            v = _row_step(xv, yr if real else y_synth, real, t, inv, eta, beta, radius, link,
                          thetas[k][cur, r], thetas[k][1 - cur, r], sums[k][r], r, smax[k],
                          words[k][r], cand[k][r])
            idx[k][r] = v
            if v >= 0:  # an explicit loop: a slice assignment may copy through a temporary
                new = thetas[k][1 - cur, r]
                for j in range(new.shape[0]):
                    out[r, k, j] = new[j]
    for k in range(K):  # after the rows (a count inside prange would race)
        missing[k] = 0
        for r in range(R):
            if idx[k][r] < 0:
                missing[k] += 1


def _finish(t, eta, beta, radius, thetas, cur, sums, smax, words, spill, s0, cand, idx,
            start, out):
    """Serve the rows with ``idx == -1`` from ``start`` on, in order, from ``spill[s0:]``,
    copying each new iterate into ``out[r]`` (unless ``out`` is empty); returns
    ``(row, s0)``: the row that ran out of spill (``R`` when all were served)."""
    R = idx.shape[0]
    inv = 1.0 / (t + 1.0)
    F = words.shape[1]
    for r in range(start, R):
        if idx[r] >= 0:
            continue
        k, used = select_row_compiled(sums[r], inv, smax[r] * inv, beta, words[r], spill, s0,
                                      cand[r])
        if k < 0:
            return r, s0
        s0 += max(0, used - F)
        idx[r] = k
        _vertex_step(thetas[cur, r], thetas[1 - cur, r], eta, radius, k)
        if out.shape[0] > 0:
            new = thetas[1 - cur, r]
            for j in range(new.shape[0]):
                out[r, j] = new[j]
    return R, s0


_jit = numba.njit(cache=True, nogil=True, inline="always")
#: the scalar selection of :mod:`dpbandits.privacy.vertex_rnm`, compiled with its bit helpers
select_row_compiled = numba.njit(cache=True, nogil=True)(rebound(
    _vertex_rnm.select_row, _popcount=_jit(_vertex_rnm._popcount_swar),
    _lowest_bit=_jit(_vertex_rnm._lowest_bit), _uniform_field=_jit(rebound(
        _vertex_rnm._uniform_field, _bit_length=_jit(_vertex_rnm._bit_length)))))
#: ``max_j |x_j|``: the geometry primitive (the numpy path's ``np.abs(x).max()``, bit for bit)
_row_max = _jit(geometry.row_max)
_dot2, _clip_into, _psi, _vertex_step, _row_sample, _row_step = (
    _jit(f) for f in (_dot2, _clip_into, _psi, _vertex_step, _row_sample, _row_step))
#: ``(<a, x>, <b, x>)`` of float vectors in one pass, for other kernel modules
dot2 = _dot2
KERNELS = KernelSet({"step": _step, "step_arms": _step_arms})
finish = numba.njit(cache=True, nogil=True)(_finish)

"""FLIPHAT's per-round bookkeeping as numba kernels (the numpy versions are in
:mod:`dpbandits.agents._niht` and :mod:`dpbandits.agents.fliphat`).

Both kernels do exactly the floating-point operations of their numpy twins (comparisons,
one product and one clip per entry), so results are bit-identical; the tests compare them.
Importing this module imports numba: it is loaded on the first compiled round
(:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import numba

__all__ = ["add_rows", "tie_break"]


def _tie_break(scores, u, out):
    """``out[r]`` = among the arms with the top score, the one with the largest ``u[r, k]``
    (first on ties): ``argmax(where(scores >= max, u, -1))`` with ``u`` in [0, 1)."""
    R, K = scores.shape
    for r in range(R):
        top = scores[r, 0]
        for k in range(1, K):
            if scores[r, k] > top:
                top = scores[r, k]
        best, bu = 0, -2.0
        for k in range(K):
            v = u[r, k] if scores[r, k] >= top else -1.0
            if v > bu:
                best, bu = k, v
        out[r] = best


def _add_rows(buf_x, buf_y, buf_a, i, phi, y, arms, x_max, r_max, n_clipped, n_truncated):
    """Row ``i`` of the episode buffers: ``phi[r]`` rescaled to ``||.||_inf <= x_max`` then
    clipped to ``[-x_max, x_max]`` (as :func:`dpbandits.agents._niht.clip_features`), ``y[r]``
    truncated to ``[-r_max, r_max]``, ``arms[r]`` (if ``arms`` has entries); counts both."""
    R, d = phi.shape
    for r in range(R):
        m = 0.0
        for j in range(d):
            a = abs(phi[r, j])
            if a > m:
                m = a
        if m > x_max:
            n_clipped[r] += 1
            f = x_max / m
            for j in range(d):
                v = phi[r, j] * f
                buf_x[r, i, j] = min(max(v, -x_max), x_max)
        else:
            for j in range(d):
                buf_x[r, i, j] = phi[r, j]
        yr = y[r]
        if abs(yr) > r_max:
            n_truncated[r] += 1
            yr = min(max(yr, -r_max), r_max)
        buf_y[r, i] = yr
        if arms.shape[0]:
            buf_a[r, i] = arms[r]


tie_break = numba.njit(cache=True, nogil=True)(_tie_break)
add_rows = numba.njit(cache=True, nogil=True)(_add_rows)


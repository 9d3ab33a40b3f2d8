"""The exact ``l_q`` row clip of :func:`dpbandits.geometry.clip_rows` compiled (numba), for
the streaming optimizers' inputs: every row of ``x`` into ``||x||_q <= bound`` for ``1 < q
< inf``, ``q != 2``, rows of at most 128 entries and bounds of at least ``2^-800``
(:func:`dpbandits.geometry.clip_row_lq_into`, bit for bit the numpy path). DP-TOFW's step
spent about 40% of its time in the numpy form.

This module imports numba; it is loaded on first use (:func:`dpbandits._backends.kernels`).
"""

from __future__ import annotations

import numba
import numpy as np

from dpbandits import geometry
from dpbandits._numba import rebound

__all__ = ["MAX_D", "clip_rows_lq"]

#: the longest row the compiled twin takes (numpy's pairwise summation changes form above)
MAX_D = 128

_jit = numba.njit(cache=True, nogil=True)
_sum = _jit(geometry.pairwise_sum)
_max = _jit(geometry.row_max)
_unit = _jit(rebound(geometry.unit_lq_norm, pairwise_sum=_sum))
_norm = _jit(rebound(geometry.row_lq_norm, row_max=_max, unit_lq_norm=_unit))
_row = _jit(rebound(geometry.clip_row_lq_into, row_max=_max, unit_lq_norm=_unit,
                    row_lq_norm=_norm))


@_jit
def clip_rows_lq(x, q, limit, target, shrink, out, norms):  # pragma: no cover - compiled
    """Every row of ``x`` (R, d) clipped into ``out`` with its computed norm in ``norms``
    (R,); returns how many rows moved (computed norm above ``limit``)."""
    work = np.empty(x.shape[1])
    moved = 0
    for r in range(x.shape[0]):
        norms[r] = _row(x[r], q, limit, target, shrink, out[r], work)
        if norms[r] > limit:
            moved += 1
    return moved

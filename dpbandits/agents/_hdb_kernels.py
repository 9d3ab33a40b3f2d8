"""DP-HDB's greedy choice (Han et al. 2022, Algorithm 3, lines 11-15) as a numba kernel.

Importing this module imports numba: it is loaded on the first compiled round
(:func:`dpbandits._backends.kernels`). The numpy path is
:func:`dpbandits.agents.dp_hdb.preselected_greedy`; the tests compare the two.
"""

from __future__ import annotations

import math

from dpbandits._numba import KernelSet, prange
from dpbandits.optim.streaming._pofw_kernels import dot2

__all__ = ["KERNELS"]


def _greedy(x, theta_fs, theta, half_gap, link, fs, cur, arms):
    """Among the arms with ``zeta(<x, theta_fs_k>)`` above the best minus ``half_gap``, the
    first with the largest ``zeta(<x, theta_k>)``; ``link`` 1 is the logistic mean, else the
    identity. ``fs`` and ``cur`` (R, K) are scratch, ``arms`` (R,) the output."""
    R, K = fs.shape
    for r in prange(R):
        xr = x[r]
        top = -math.inf
        for k in range(K):  # both inner products of an arm in one pass over x
            a, b = dot2(theta_fs[r, k], theta[r, k], xr)
            if link == 1:
                a = 0.5 * (1.0 + math.tanh(0.5 * a))
                b = 0.5 * (1.0 + math.tanh(0.5 * b))
            fs[r, k] = a
            cur[r, k] = b
            if a > top:
                top = a
        best = -math.inf
        arm = 0
        for k in range(K):
            if fs[r, k] > top - half_gap and cur[r, k] > best:
                best = cur[r, k]
                arm = k
        arms[r] = arm


KERNELS = KernelSet({"greedy": _greedy})

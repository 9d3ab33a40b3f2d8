"""DP-HDB's greedy choice (seed 000, Algorithm 3, lines 11-15) as a numba kernel.

Importing this module imports numba: it is loaded on the first compiled round
(:func:`dpbandits._backends.kernels`). The numpy path is
:func:`dpbandits.agents.dp_hdb.preselected_greedy`; the tests compare the two.
"""

from __future__ import annotations

import math

from dpbandits._numba import KernelSet, prange
from dpbandits.optim.streaming._pofw_kernels import dot

__all__ = ["KERNELS"]


def _greedy(x, theta_fs, theta, half_gap, link, fs, arms):
    """Among the arms with ``zeta(<x, theta_fs_k>)`` above the best minus ``half_gap``, the
    first with the largest ``zeta(<x, theta_k>)``; ``link`` 1 is the logistic mean, else the
    identity. ``fs`` (R, K) is scratch, ``arms`` (R,) the output."""
    R, K = fs.shape
    for r in prange(R):
        xr = x[r]
        top = -math.inf
        for k in range(K):
            z = dot(xr, theta_fs[r, k])
            if link == 1:
                z = 0.5 * (1.0 + math.tanh(0.5 * z))
            fs[r, k] = z
            if z > top:
                top = z
        best = -math.inf
        arm = 0
        for k in range(K):
            if fs[r, k] > top - half_gap:
                z = dot(xr, theta[r, k])
                if link == 1:
                    z = 0.5 * (1.0 + math.tanh(0.5 * z))
                if z > best:
                    best = z
                    arm = k
        arms[r] = arm


KERNELS = KernelSet({"greedy": _greedy})

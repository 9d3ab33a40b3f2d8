"""Compiled inner loop of :class:`~dpbandits.optim.batch.noisy_sgd.NoisySGD`.

NoisySGD takes ``n^2`` strictly sequential steps, which numpy cannot vectorize over time. This
module runs one *chunk* of steps for every replication in a numba-compiled loop. All the
randomness (sample indices and Gaussian noise) is drawn by the caller from its
``numpy.random.Generator`` and passed in, so the compiled path and the plain-numpy path of
``NoisySGD`` consume exactly the same stream and produce the same iterates (up to
floating-point summation order; the tests compare them).

Only losses of a linear predictor whose derivative ``psi(z, y)`` is known here are compiled
(squared/identity GLM, logistic GLM, Huber), and only the Euclidean projections onto the l_2
ball and the l_inf box. Everything else runs on the numpy path.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpbandits._backends import HAVE_NUMBA

__all__ = [
    "HAVE_NUMBA",
    "LOSS_HUBER",
    "LOSS_LOGISTIC",
    "LOSS_SQUARED",
    "PROJ_L2",
    "PROJ_LINF",
    "sgd_chunk",  # noqa: F822 - built on first access (module __getattr__)
    "sgd_chunk_python",
]

LOSS_SQUARED = 0  # psi = z - y              (0.5 (z - y)^2)
LOSS_LOGISTIC = 1  # psi = sigmoid(z) - y     (log(1 + e^z) - y z)
LOSS_HUBER = 2  # psi = clip(z - y, -h, h)

PROJ_L2 = 0  # Euclidean projection onto {||v||_2 <= radius}
PROJ_LINF = 1  # Euclidean projection onto {||v||_inf <= radius} (coordinate clipping)


def sgd_chunk_python(theta, acc, X, y, xnorm, idx, noise, use_noise, noise_scale, eta,
                     clip_bound, clip_limit, clip_target, radius, proj_code, loss_code,
                     huber_delta, n_clipped):
    """Run ``idx.shape[1]`` NoisySGD steps for each of the ``R = theta.shape[0]`` rows.

    In-place on ``theta`` (R, d) (current iterate), ``acc`` (R, d) (running sum of iterates)
    and ``n_clipped`` (R,) int64. ``X`` (Rx, n, d), ``y`` (Rx, n) and ``xnorm`` (Rx, n)
    (``||x_i||_q``) with ``Rx`` 1 (shared data) or R. ``idx`` (R, c) sample indices, ``noise``
    (R, c, d) standard normals (used, times ``noise_scale``, only if ``use_noise``).

    One step: ``g = psi(<theta, x_i>, y_i) x_i`` clipped to ``||g||_q <= clip_bound``
    (``||g||_q = |psi| ||x_i||_q``, ``xnorm`` computed by :func:`dpbandits.geometry.lp_norm`):
    the compiled twin of :func:`dpbandits.geometry.clip_factors` with ``(clip_limit,
    clip_target) = clip_limits(clip_bound, q, d)``, so the exact norm of ``(psi f) x_i`` is
    ``<= clip_bound``; counted when ``|psi| ||x_i||_q > clip_bound``),
    ``theta <- Proj(theta - eta (g + noise))``,
    ``acc += theta``. Written in plain Python so numba can compile it; slow uncompiled.
    """
    R, c = idx.shape
    d = theta.shape[1]
    shared = X.shape[0] == 1
    for r in range(R):
        rx = 0 if shared else r
        for k in range(c):
            i = idx[r, k]
            z = 0.0
            for j in range(d):
                z += theta[r, j] * X[rx, i, j]
            if loss_code == LOSS_SQUARED:
                psi = z - y[rx, i]
            elif loss_code == LOSS_LOGISTIC:
                psi = 1.0 / (1.0 + math.exp(-z)) - y[rx, i]
            else:
                psi = z - y[rx, i]
                if psi > huber_delta:
                    psi = huber_delta
                elif psi < -huber_delta:
                    psi = -huber_delta
            gnorm = abs(psi) * xnorm[rx, i]
            if gnorm > clip_limit:
                psi = psi * (clip_target / gnorm)
            if gnorm > clip_bound:
                n_clipped[r] += 1
            if proj_code == PROJ_LINF:
                for j in range(d):
                    step = psi * X[rx, i, j]
                    if use_noise:
                        step += noise_scale * noise[r, k, j]
                    v = theta[r, j] - eta * step
                    if v > radius:
                        v = radius
                    elif v < -radius:
                        v = -radius
                    theta[r, j] = v
                    acc[r, j] += v
            else:
                ss = 0.0
                for j in range(d):
                    step = psi * X[rx, i, j]
                    if use_noise:
                        step += noise_scale * noise[r, k, j]
                    v = theta[r, j] - eta * step
                    theta[r, j] = v
                    ss += v * v
                nrm = math.sqrt(ss)
                if nrm > radius:
                    f = radius / nrm
                    for j in range(d):
                        theta[r, j] *= f
                for j in range(d):
                    acc[r, j] += theta[r, j]


@functools.cache
def _compiled():
    """The compiled kernel (None without numba), built on first use so that importing this
    module does not import numba (about 65 MB, see :mod:`dpbandits._backends`)."""
    if not HAVE_NUMBA:  # pragma: no cover
        return None
    import numba

    return numba.njit(cache=True, nogil=True)(sgd_chunk_python)


def __getattr__(name: str):
    """``sgd_chunk``: the compiled kernel (:func:`_compiled`)."""
    if name == "sgd_chunk":
        return _compiled()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def warm_up() -> None:
    """Compile the kernel (first call costs ~1 s; cached on disk afterwards)."""
    sgd_chunk = _compiled()
    if sgd_chunk is None:  # pragma: no cover
        return
    theta = np.zeros((1, 2))
    acc = np.zeros((1, 2))
    X = np.ones((1, 3, 2))
    y = np.zeros((1, 3))
    xn = np.ones((1, 3))
    idx = np.zeros((1, 2), dtype=np.int64)
    noise = np.zeros((1, 2, 2))
    nc = np.zeros(1, dtype=np.int64)
    sgd_chunk(theta, acc, X, y, xn, idx, noise, True, 1.0, 0.1, 1.0, 0.9, 0.8, 1.0,
              PROJ_LINF, LOSS_SQUARED, 1.0, nc)

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
    "clipped_coefficient",
    "clipped_gradients",  # noqa: F822 - built on first access (module __getattr__)
    "clipped_gradients_python",
    "predictor_psi",
    "sgd_chunk_python",
]

LOSS_SQUARED = 0  # psi = z - y              (0.5 (z - y)^2)
LOSS_LOGISTIC = 1  # psi = sigmoid(z) - y     (log(1 + e^z) - y z)
LOSS_HUBER = 2  # psi = clip(z - y, -h, h)

PROJ_L2 = 0  # Euclidean projection onto {||v||_2 <= radius}
PROJ_LINF = 1  # Euclidean projection onto {||v||_inf <= radius} (coordinate clipping)


def clipped_coefficient(psi, xnorm, unclipped, clipped, clip_limit):
    """The compiled twin of :func:`dpbandits.geometry.clipped_coefficients` for one
    gradient ``psi x`` (``xnorm``, ``unclipped``, ``clipped``: the row's entries of
    :class:`~dpbandits.geometry.GradientRows`): ``psi * unclipped`` if ``|psi| xnorm <=
    clip_limit``, ``sign(psi) clipped`` if above, ``0`` if not a number."""
    size = abs(psi) * xnorm
    if size <= clip_limit:
        return psi * unclipped
    if size > clip_limit:
        return math.copysign(clipped, psi)
    return 0.0


def predictor_psi(theta_r, xr, yi, loss_code, huber_delta):
    """``psi(<theta_r, x>, y)`` of the compiled losses (``inf`` or NaN on extreme rows:
    :func:`clipped_coefficient` gives those a bounded coefficient)."""
    z = 0.0
    for j in range(xr.shape[0]):
        z += theta_r[j] * xr[j]
    if loss_code == LOSS_SQUARED:
        return z - yi
    if loss_code == LOSS_LOGISTIC:
        return 1.0 / (1.0 + math.exp(-z)) - yi
    psi = z - yi
    if psi > huber_delta:
        return huber_delta
    if psi < -huber_delta:
        return -huber_delta
    return psi


def sgd_chunk_python(theta, acc, X, rows, y, xnorm, unclipped, clipped, idx, noise, use_noise,
                     noise_scale, eta, clip_bound, clip_limit, radius, proj_code, loss_code,
                     huber_delta, n_clipped):
    """Run ``idx.shape[1]`` NoisySGD steps for each of the ``R = theta.shape[0]`` rows.

    In-place on ``theta`` (R, d) (current iterate), ``acc`` (R, d) (running sum of iterates)
    and ``n_clipped`` (R,) int64. ``X`` (Rx, n, d), ``y`` (Rx, n) with ``Rx`` 1 (shared data)
    or R; ``rows``, ``xnorm``, ``unclipped``, ``clipped``: the
    :class:`~dpbandits.geometry.GradientRows` of ``X`` for ``(clip_bound, q)`` (same leading
    shapes), ``clip_limit`` its limit. ``idx`` (R, c) sample indices, ``noise`` (R, c, d)
    standard normals (used, times ``noise_scale``, only if ``use_noise``).

    One step: ``g = psi(<theta, x_i>, y_i) x_i`` clipped to ``||g||_q <= clip_bound`` as
    ``coef * rows_i`` (:func:`clipped_coefficient`: exact norm ``<= clip_bound``; counted
    when ``|psi| ||x_i||_q`` is above ``clip_bound`` or not a number),
    ``theta <- Proj(theta - eta (g + noise))``, ``acc += theta``. Written in plain Python so
    numba can compile it; slow uncompiled.
    """
    R, c = idx.shape
    d = theta.shape[1]
    shared = X.shape[0] == 1
    for r in range(R):
        rx = 0 if shared else r
        for k in range(c):
            i = idx[r, k]
            psi = predictor_psi(theta[r], X[rx, i], y[rx, i], loss_code, huber_delta)
            if not abs(psi) * xnorm[rx, i] <= clip_bound:
                n_clipped[r] += 1
            psi = clipped_coefficient(psi, xnorm[rx, i], unclipped[rx, i], clipped[rx, i],
                                      clip_limit)
            if proj_code == PROJ_LINF:
                for j in range(d):
                    step = psi * rows[rx, i, j]
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
                    step = psi * rows[rx, i, j]
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


def clipped_gradients_python(theta, X, rows, y, xnorm, unclipped, clipped, clip_limit,
                             loss_code, huber_delta, out):
    """The clipped gradient of every sample ``i`` at ``theta[i]`` into ``out[i]`` (all
    ``(n, d)``; ``y``, ``xnorm``, ``unclipped``, ``clipped`` ``(n,)``), by the very helpers a
    step of :func:`sgd_chunk_python` uses: what the privacy checks read as the kernel's
    per-sample contributions."""
    for i in range(X.shape[0]):
        psi = predictor_psi(theta[i], X[i], y[i], loss_code, huber_delta)
        coef = clipped_coefficient(psi, xnorm[i], unclipped[i], clipped[i], clip_limit)
        for j in range(X.shape[1]):
            out[i, j] = coef * rows[i, j]


@functools.cache
def _compiled() -> dict | None:
    """The compiled kernels (None without numba), built on first use so that importing this
    module does not import numba (about 65 MB, see :mod:`dpbandits._backends`)."""
    if not HAVE_NUMBA:  # pragma: no cover
        return None
    import numba

    from dpbandits._numba import rebound

    jit = numba.njit(cache=True, nogil=True)
    helpers = {"clipped_coefficient": jit(clipped_coefficient),
               "predictor_psi": jit(predictor_psi)}
    return {"sgd_chunk": jit(rebound(sgd_chunk_python, **helpers)),
            "clipped_gradients": jit(rebound(clipped_gradients_python, **helpers))}


def __getattr__(name: str):
    """``sgd_chunk``, ``clipped_gradients``: the compiled kernels (:func:`_compiled`)."""
    if name in ("sgd_chunk", "clipped_gradients"):
        kernels = _compiled()
        return None if kernels is None else kernels[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def warm_up() -> None:
    """Compile the kernel (first call costs ~1 s; cached on disk afterwards)."""
    kernels = _compiled()
    if kernels is None:  # pragma: no cover
        return
    sgd_chunk = kernels["sgd_chunk"]
    theta = np.zeros((1, 2))
    acc = np.zeros((1, 2))
    X = np.ones((1, 3, 2))
    y = np.zeros((1, 3))
    xn = np.ones((1, 3))
    idx = np.zeros((1, 2), dtype=np.int64)
    noise = np.zeros((1, 2, 2))
    nc = np.zeros(1, dtype=np.int64)
    sgd_chunk(theta, acc, X, X, y, xn, xn, xn, idx, noise, True, 1.0, 0.1, 1.0, 0.9, 1.0,
              PROJ_LINF, LOSS_SQUARED, 1.0, nc)

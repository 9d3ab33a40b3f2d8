"""Losses resolved and per-sample gradients clipped: what the optimizers' interfaces
(:mod:`dpbandits.optim.base`) and the batch methods' data and gradient oracle share. Below
both, so that neither imports the other to get them (re-exported by ``optim.base``)."""

from __future__ import annotations

from typing import cast

import numpy as np

from dpbandits.geometry import clip_to_norm
from dpbandits.losses import LossLike, make_loss

__all__ = ["CHUNK_ENTRIES", "clipped_gradient_sum", "clipped_gradients", "resolve_loss"]

# Max float64 entries of a temporary per-sample gradient block (R, chunk, d).
CHUNK_ENTRIES = 1 << 21


def resolve_loss(loss: str | LossLike, *, names: bool = True) -> LossLike:
    """A loss object with ``value`` and ``gradient`` methods (:mod:`dpbandits.losses`); with
    ``names`` a loss name (``"squared"``, ``"logistic"``, ``"huber"``) is also accepted."""
    if names and isinstance(loss, str):
        return make_loss(loss)
    if callable(getattr(loss, "gradient", None)) and callable(getattr(loss, "value", None)):
        return cast(LossLike, loss)  # it has both methods (a str has neither)
    raise TypeError(
        "loss must " + ("be a loss name ('squared', 'logistic', 'huber') or " if names else "")
        + "provide value(theta, X, y) and gradient(theta, X, y) methods (see "
        f"dpbandits.losses), got {type(loss).__name__}"
    )


def clipped_gradients(loss: LossLike, theta: np.ndarray, X: np.ndarray, y: np.ndarray, q: float,
                      bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample gradients ``loss.gradient(theta, X, y)`` (broadcast shape ``(..., d)``)
    clipped to ``||g||_q <= bound`` (:func:`dpbandits.geometry.clip_to_norm`), and the mask
    of the clipped ones. Every generic per-sample gradient of the batch methods goes through
    here; :class:`~dpbandits.optim.batch.oracle.GradientOracle` has a fast path for
    linear-predictor losses. A gradient that is not finite (finite data near the float
    maximum) contributes zero and is counted as clipped: raising would make the run's outcome
    depend on one sample."""
    with np.errstate(over="ignore", invalid="ignore"):
        g = loss.gradient(theta, X, y)
    lost = ~np.isfinite(g).all(axis=-1)  # finite data whose gradient overflows (~1e308)
    if np.any(lost):  # no gradient to clip: zero is within the bound, and it is counted
        g = np.where(lost[..., None], 0.0, g)
    clipped, was = clip_to_norm(g, q, bound)
    return clipped, was | lost


def clipped_gradient_sum(loss: LossLike, theta: np.ndarray, X: np.ndarray, y: np.ndarray, q: float,
                         bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Sum over the samples (axis -2 of ``X``) of clipped per-sample gradients at ``theta
    (R, d)``, in blocks of at most ``CHUNK_ENTRIES`` values: ``(R, d)`` and the clip counts
    ``(R,)``. ``X`` is ``(k, d)`` or ``(Rx, k, d)`` (``Rx`` 1 or ``R``), ``y`` likewise."""
    R, d = theta.shape
    k = X.shape[-2]
    step = max(1, CHUNK_ENTRIES // max(1, R * d))
    total = np.zeros((R, d))
    counts = np.zeros(R, dtype=np.int64)
    for s in range(0, k, step):
        g, was = clipped_gradients(loss, theta[:, None, :], X[..., s:s + step, :],
                                   y[..., s:s + step], q, bound)
        total += g.sum(axis=1)
        counts += was.sum(axis=1)
    return total, counts

"""Data of the batch optimizers: validation of ``X``/``y``/``n_reps`` (:func:`prepare_data`),
of the initial point, and the checked start of every ``fit`` (:func:`start_fit`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_array, check_int, check_rng
from dpbandits.losses import LossLike
from dpbandits.optim.gradients import resolve_loss

__all__ = ["Data", "check_theta0", "prepare_data", "start_fit"]


@dataclass(frozen=True)
class Data:
    """Validated data: ``X`` is ``(n, d)`` (shared) or ``(R, n, d)``; ``y`` ``(n,)``/``(R, n)``.

    ``Xs``/``ys`` are the same data stacked with a leading replication axis of size 1 (shared)
    or ``R``, C-contiguous: ``(Rx, n, d)`` and ``(Rx, n)``.
    """

    X: np.ndarray
    y: np.ndarray
    n_reps: int
    n: int
    d: int
    shared: bool
    Xs: np.ndarray
    ys: np.ndarray

    def rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``idx[r, ...]`` of replication ``r``'s data (``idx`` of shape ``(R,)`` or
        ``(R, k)``): ``(*idx.shape, d)`` and ``idx.shape``."""
        if self.shared:
            return self.X[idx], self.y[idx]
        r = np.arange(self.n_reps).reshape((-1,) + (1,) * (np.ndim(idx) - 1))
        return self.X[r, idx], self.y[r, idx]

    def row_at(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Row ``t`` of every replication, broadcast to ``(R, d)`` and ``(R,)``."""
        if self.shared:
            return (np.broadcast_to(self.X[t], (self.n_reps, self.d)),
                    np.broadcast_to(self.y[t], (self.n_reps,)))
        return self.X[:, t], self.y[:, t]

    def block(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Samples ``start:stop`` of every replication: ``(Rx, k, d)``, ``(Rx, k)``."""
        return self.Xs[:, start:stop], self.ys[:, start:stop]


def prepare_data(X: ArrayLike, y: ArrayLike | None, n_reps: int | None, *, min_n: int = 1,
                 y_required: bool = True) -> Data:
    """Validate ``X``, ``y`` and ``n_reps`` (see :class:`~dpbandits.optim.base.BatchOptimizer`).

    ``X (n, d)`` with ``n_reps=None`` means one replication. ``X (R, n, d)`` requires
    ``n_reps`` to be ``None`` or ``R``. ``y=None`` is allowed only when ``y_required`` is
    False (losses that ignore labels) and is replaced by zeros.
    """
    X = check_array("X", X)
    if X.ndim not in (2, 3):
        raise ValueError(f"X must have shape (n, d) or (R, n, d), got shape {X.shape}")
    shared = X.ndim == 2
    if n_reps is not None:
        n_reps = check_int("n_reps", n_reps, low=1)
    if shared:
        R = 1 if n_reps is None else n_reps
        n, d = X.shape
    else:
        R, n, d = X.shape
        if n_reps is not None and n_reps != R:
            raise ValueError(f"n_reps={n_reps} does not match X with {R} replications "
                             f"(shape {X.shape}); pass n_reps=None or {R}")
    if d < 1:
        raise ValueError(f"X must have at least one feature, got shape {X.shape}")
    if n < min_n:
        raise ValueError(f"X must have at least {min_n} rows (samples), got n={n}")
    if y is None:
        if y_required:
            raise TypeError("y is required for this loss (got None)")
        y = np.zeros(X.shape[:-1])
    y = check_array("y", y)
    if y.shape != X.shape[:-1]:
        raise ValueError(f"y must have shape {X.shape[:-1]} to match X {X.shape}, got {y.shape}")
    Xs = np.ascontiguousarray(X[None] if shared else X)
    ys = np.ascontiguousarray(y[None] if shared else y)
    return Data(X=X, y=y, n_reps=int(R), n=int(n), d=int(d), shared=shared, Xs=Xs, ys=ys)


def check_theta0(theta0: ArrayLike | None, n_reps: int, d: int) -> np.ndarray:
    """Initial point: ``None`` (zeros), ``(d,)`` or ``(R, d)``; returned as a fresh ``(R, d)``."""
    if theta0 is None:
        return np.zeros((n_reps, d))
    t = check_array("theta0", theta0)
    if t.shape == (d,):
        return np.tile(t, (n_reps, 1))
    if t.shape == (n_reps, d):
        return t.copy()
    raise ValueError(f"theta0 must have shape ({d},) or ({n_reps}, {d}), got {t.shape}")


def start_fit(loss: str | LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
              n_reps: int | None, *, loss_names: bool = True, min_n: int = 1,
              y_required: bool = True) -> tuple[LossLike, np.random.Generator, Data]:
    """What every batch ``fit`` starts from, checked in this order: ``(loss, rng, data)``
    (:func:`~dpbandits.optim.base.resolve_loss`, a numpy Generator, :func:`prepare_data`)."""
    loss = resolve_loss(loss, names=loss_names)
    rng = check_rng(rng)
    return loss, rng, prepare_data(X, y, n_reps, min_n=min_n, y_required=y_required)

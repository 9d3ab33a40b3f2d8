"""Shared machinery of the batch private optimizers of seeds 001/002/004.

* :func:`prepare_data` — validate ``X``/``y`` and resolve the replication axis ``R``;
* :class:`GradientOracle` — per-sample gradients **clipped** to a norm bound (the Lipschitz
  constant the privacy proofs assume), their mean over the data set, and the clip counts;
* :class:`Regularizer` — the simple regularizer ``r`` of seed 001 (none, ``l2``, ``l1``) with
  its value and proximal operator.

Clipping is part of every algorithm here: a per-sample gradient ``g`` with ``||g||_q > G`` is
rescaled to norm ``G`` and counted, so the sensitivity used by the noise calibration holds
for any data, whatever the loss or the features. With bounded features (e.g. logistic loss
and ``||x||_2 <= G``) nothing is ever clipped and the algorithms are exactly the papers'.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpbandits._validation import (
    check_array,
    check_choice,
    check_int,
    check_nonnegative,
)
from dpbandits.geometry import clip_to_norm, lp_norm
from dpbandits.losses import Loss

_EPS = np.finfo(np.float64).eps
# Max number of float64 entries of a temporary per-sample gradient block (R, chunk, d).
_CHUNK_ENTRIES = 1 << 21


@dataclass(frozen=True)
class Data:
    """Validated data: ``X`` is ``(n, d)`` (shared) or ``(R, n, d)``; ``y`` ``(n,)``/``(R, n)``."""

    X: np.ndarray
    y: np.ndarray
    n_reps: int
    n: int
    d: int
    shared: bool

    def rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``idx`` (shape ``(R,)``) of each replication's data: ``(R, d)``, ``(R,)``."""
        if self.shared:
            return self.X[idx], self.y[idx]
        r = np.arange(self.n_reps)
        return self.X[r, idx], self.y[r, idx]

    def row_at(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Row ``t`` of every replication, broadcast to ``(R, d)`` and ``(R,)``."""
        if self.shared:
            return (np.broadcast_to(self.X[t], (self.n_reps, self.d)),
                    np.broadcast_to(self.y[t], (self.n_reps,)))
        return self.X[:, t], self.y[:, t]


def prepare_data(X, y, n_reps, *, min_n: int = 1, y_required: bool = True) -> Data:
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
    return Data(X=X, y=y, n_reps=R, n=n, d=d, shared=shared)


def check_loss(loss) -> None:
    """A loss object with ``value`` and ``gradient`` methods."""
    if not (callable(getattr(loss, "gradient", None)) and callable(getattr(loss, "value", None))):
        raise TypeError(
            f"loss must provide value(theta, X, y) and gradient(theta, X, y), got "
            f"{type(loss).__name__}; see dpbandits.losses"
        )


def check_theta0(theta0, n_reps: int, d: int) -> np.ndarray:
    """Initial point: ``None`` (zeros), ``(d,)`` or ``(R, d)``; returned as a fresh ``(R, d)``."""
    if theta0 is None:
        return np.zeros((n_reps, d))
    t = check_array("theta0", theta0)
    if t.shape == (d,):
        return np.tile(t, (n_reps, 1))
    if t.shape == (n_reps, d):
        return t.copy()
    raise ValueError(f"theta0 must have shape ({d},) or ({n_reps}, {d}), got {t.shape}")


class GradientOracle:
    """Clipped per-sample gradients of ``loss`` on the data ``data``.

    ``clip`` is the bound ``G`` on ``||grad f||_q`` (``q = 2`` unless given). For losses of
    the linear-predictor form ``phi(<x, theta>, y)`` (subclasses of
    :class:`dpbandits.losses.Loss`) the per-sample gradient is ``psi_i x_i`` and its norm
    ``|psi_i| ||x_i||_q``, so the clipped mean is computed without materialising the
    ``(R, n, d)`` array; other losses are handled in chunks.
    """

    def __init__(self, loss, data: Data, clip: float, q: float = 2.0):
        self.loss = loss
        self.data = data
        self.clip = float(clip)
        self.q = float(q)
        self.linear = isinstance(loss, Loss)
        self._hook = None
        if self.linear:
            self._xnorm = lp_norm(data.X, self.q)  # (n,) or (R, n)
            hook = getattr(loss, "_psi", None)
            self._hook = hook if callable(hook) else None
            # The hook skips the loss's own input checks (e.g. hinge labels in {-1, +1}):
            # run them once on every label through the public gradient.
            y_all = np.asarray(data.y, dtype=float)
            loss.gradient(np.zeros(y_all.shape + (1,)), np.ones(y_all.shape + (1,)), y_all)

    # ------------------------------------------------------------------ helpers
    def _psi(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Derivative ``d phi / d z``: the ``Loss`` subclass hook ``_psi`` (inputs were
        validated once by :func:`prepare_data`), else the public gradient with a 1-d unit
        feature (``grad_theta phi(theta * 1, y) = psi``)."""
        if self._hook is not None:
            return self._hook(z, y if np.shape(y) == z.shape else np.broadcast_to(y, z.shape))
        return self.loss.gradient(z[..., None], np.ones(z.shape + (1,)), y)[..., 0]

    def _scale(self, norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        was = norms > self.clip
        scale = np.where(was, self.clip / np.where(was, norms, 1.0) * (1.0 - 4.0 * _EPS), 1.0)
        return scale, was

    # ------------------------------------------------------------------ full gradient
    def mean(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean clipped gradient over the data set at ``theta (R, d)``: ``(R, d)`` and the
        number of clipped per-sample gradients per replication ``(R,)``."""
        D = self.data
        if self.linear:
            if D.shared:
                z = theta @ D.X.T  # (R, n)
                psi = self._psi(z, np.broadcast_to(D.y, z.shape))
                scale, was = self._scale(np.abs(psi) * self._xnorm)
                g = (psi * scale) @ D.X / D.n
            else:
                z = np.einsum("rnd,rd->rn", D.X, theta)
                psi = self._psi(z, D.y)
                scale, was = self._scale(np.abs(psi) * self._xnorm)
                g = np.einsum("rn,rnd->rd", psi * scale, D.X) / D.n
            return g, was.sum(axis=-1)
        R = theta.shape[0]
        total = np.zeros((R, D.d))
        count = np.zeros(R, dtype=np.int64)
        chunk = max(1, _CHUNK_ENTRIES // max(1, R * D.d))
        for start in range(0, D.n, chunk):
            sl = slice(start, min(D.n, start + chunk))
            Xc = D.X[sl] if D.shared else D.X[:, sl]
            yc = D.y[sl] if D.shared else D.y[:, sl]
            g = self.loss.gradient(theta[:, None, :], Xc, yc)
            g, was = clip_to_norm(g, self.q, self.clip)
            total += g.sum(axis=1)
            count += was.sum(axis=1)
        return total / D.n, count

    # ------------------------------------------------------------------ single samples
    def at(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
        """Clipped gradient of one sample per replication: ``theta, x (R, d)``, ``y (R,)`` ->
        ``(R, d)`` and the clipped mask ``(R,)``."""
        g = self.loss.gradient(theta, x, y)
        return clip_to_norm(g, self.q, self.clip)

    def at_index(self, theta: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clipped gradient of sample ``idx[r]`` of replication ``r`` at ``theta[r]``."""
        x, y = self.data.rows(idx)
        if not self.linear:
            return self.at(theta, x, y)
        z = np.einsum("rd,rd->r", theta, x)
        psi = self._psi(z, y)
        xn = self._xnorm[idx] if self.data.shared else self._xnorm[np.arange(len(idx)), idx]
        scale, was = self._scale(np.abs(psi) * xn)
        return (psi * scale)[:, None] * x, was

    def snapshot(self, theta: np.ndarray) -> Snapshot:
        """Full clipped gradient at ``theta`` plus what is needed to re-evaluate single
        clipped gradients there cheaply (the SVRG snapshot)."""
        if not self.linear:
            mean, count = self.mean(theta)
            return Snapshot(self, theta.copy(), mean, count, None, None)
        D = self.data
        z = theta @ D.X.T if D.shared else np.einsum("rnd,rd->rn", D.X, theta)
        psi = self._psi(z, np.broadcast_to(D.y, z.shape))
        scale, was = self._scale(np.abs(psi) * self._xnorm)
        coef = psi * scale
        mean = (coef @ D.X if D.shared else np.einsum("rn,rnd->rd", coef, D.X)) / D.n
        return Snapshot(self, theta.copy(), mean, was.sum(axis=-1), coef, was)


@dataclass
class Snapshot:
    """Full clipped gradient ``mean (R, d)`` at ``theta`` (``n_clipped (R,)`` clips)."""

    oracle: GradientOracle
    theta: np.ndarray
    mean: np.ndarray
    n_clipped: np.ndarray
    coef: np.ndarray | None
    was: np.ndarray | None

    def at_index(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clipped gradient of sample ``idx[r]`` at the snapshot point."""
        if self.coef is None:
            return self.oracle.at_index(self.theta, idx)
        r = np.arange(len(idx))
        x, _ = self.oracle.data.rows(idx)
        return self.coef[r, idx][:, None] * x, self.was[r, idx]


class Regularizer:
    """``r(theta)``: ``None`` (zero), ``"l2"`` (``strength/2 ||theta||_2^2``) or ``"l1"``
    (``strength ||theta||_1``), with ``prox(v, step) = argmin_u r(u) + ||u - v||^2/(2 step)``.
    Data-independent, so it never affects privacy."""

    KINDS = frozenset({"l2", "l1"})

    def __init__(self, kind, strength):
        if kind is not None:
            check_choice("reg", kind, self.KINDS)
        self.kind = kind
        self.strength = check_nonnegative("reg_strength", strength)
        if kind is None and self.strength != 0.0:
            raise ValueError(f"reg_strength={strength} given but reg=None; pass reg='l2' or "
                             "reg='l1'")

    @property
    def strong_convexity(self) -> float:
        return self.strength if self.kind == "l2" else 0.0

    def value(self, theta: np.ndarray) -> np.ndarray:
        if self.kind is None or self.strength == 0.0:
            return np.zeros(theta.shape[:-1])
        if self.kind == "l2":
            return 0.5 * self.strength * np.einsum("...i,...i->...", theta, theta)
        return self.strength * np.abs(theta).sum(axis=-1)

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Gradient (``l2``) — the ``l1`` regularizer is handled by its prox only."""
        if self.kind == "l2":
            return self.strength * theta
        return np.zeros_like(theta)

    def prox(self, v: np.ndarray, step: float) -> np.ndarray:
        if self.kind is None or self.strength == 0.0:
            return v
        if self.kind == "l2":
            return v / (1.0 + step * self.strength)
        t = step * self.strength
        return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def objective(loss, theta, X, y, reg: Regularizer | None = None) -> np.ndarray:
    """``F^r(theta) = mean_i f(theta; x_i, y_i) + r(theta)`` (un-clipped loss) for ``theta``
    of shape ``(..., d)`` and shared data ``X (n, d)``; for evaluation, not for training."""
    theta = check_array("theta", theta)
    X = check_array("X", X, ndim=2)
    lead = theta.shape[:-1]
    flat = theta.reshape(-1, theta.shape[-1])
    if isinstance(loss, Loss):
        z = flat @ X.T
        val = loss.value(z[..., None], np.ones(z.shape + (1,)), np.broadcast_to(y, z.shape))
    else:
        val = loss.value(flat[:, None, :], X, y)
    out = val.mean(axis=-1)
    if reg is not None:
        out = out + reg.value(flat)
    return out.reshape(lead)


def check_clip(value, name: str = "clip_norm") -> float:
    """The clipping bound ``G`` (> 0, finite)."""
    v = check_nonnegative(name, value)
    if v == 0.0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return v

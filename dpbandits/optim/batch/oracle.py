"""Gradients and regularizers of the batch optimizers of Wang, Ye & Xu 2017 and Arora,
Marinov & Ullah 2020.

* :class:`GradientOracle` — per-sample gradients **clipped** to a norm bound (the Lipschitz
  constant the privacy proofs assume), their mean over the data set, and the clip counts;
* :class:`Regularizer` — the simple regularizer ``r`` of Wang, Ye & Xu 2017 (none, ``l2``,
  ``l1``) with its value and proximal operator; :func:`objective` the regularized empirical risk.

Clipping is part of every algorithm here: a per-sample gradient ``g`` with ``||g||_q > G`` is
rescaled to norm ``G`` and counted, so the sensitivity used by the noise calibration holds
for any data, whatever the loss or the features. With bounded features (e.g. logistic loss
and ``||x||_2 <= G``) nothing is ever clipped and the algorithms are exactly the papers'.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_array, check_choice, check_nonnegative
from dpbandits.geometry import clipped_coefficients, gradient_rows
from dpbandits.losses import Loss, LossLike
from dpbandits.optim.batch.data import Data
from dpbandits.optim.gradients import clipped_gradient_sum, clipped_gradients

__all__ = ["GradientOracle", "Regularizer", "Snapshot", "objective"]



class GradientOracle:
    """Clipped per-sample gradients of ``loss`` on the data ``data``.

    ``clip`` is the bound ``G`` on ``||grad f||_q`` (``q = 2`` unless given). For losses of
    the linear-predictor form ``phi(<x, theta>, y)`` (subclasses of
    :class:`dpbandits.losses.Loss`) the per-sample gradient is ``psi_i x_i`` and its norm
    ``|psi_i| ||x_i||_q``, so the clipped mean is computed without materialising the
    ``(R, n, d)`` array; other losses are handled in chunks.
    """

    def __init__(self, loss: LossLike, data: Data, clip: float, q: float = 2.0) -> None:
        self.loss = loss
        self.data = data
        self.clip = float(clip)
        self.q = float(q)
        self.linear = isinstance(loss, Loss)
        self._hook = None
        if self.linear:
            # rows, norms and clip coefficients (n,) or (R, n): geometry.gradient_rows
            self._rows = gradient_rows(np.asarray(data.X, dtype=np.float64), self.q, self.clip)
            hook = getattr(loss, "_psi", None)
            self._hook = hook if callable(hook) else None
            # The hook skips the loss's own input checks (e.g. hinge labels in {-1, +1}):
            # run them once on every label through the public gradient.
            y_all = np.asarray(data.y, dtype=float)
            loss.gradient(np.zeros(y_all.shape + (1,)), np.ones(y_all.shape + (1,)), y_all)

    # ------------------------------------------------------------------ helpers
    def _psi(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Derivative ``d phi / d z``: the ``Loss`` subclass hook ``_psi`` (inputs were
        validated once by the constructor), else the public gradient with a 1-d unit
        feature (``grad_theta phi(theta * 1, y) = psi``)."""
        with np.errstate(over="ignore", invalid="ignore"):  # extreme rows: see _coef
            if self._hook is not None:
                return self._hook(z, y if np.shape(y) == z.shape
                                  else np.broadcast_to(y, z.shape))
            return self.loss.gradient(z[..., None], np.ones(z.shape + (1,)), y)[..., 0]

    def _coef(self, psi: np.ndarray, index: tuple | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """Coefficients of the clipped gradients ``psi x`` on the prepared rows (all rows, or
        those at ``index``) and the mask of the clipped ones
        (:func:`dpbandits.geometry.clipped_coefficients`: exact norm ``<= clip``)."""
        g = self._rows
        parts = (g.norms, g.unclipped, g.clipped)
        if index is not None:
            parts = tuple(a[index] for a in parts)
        return clipped_coefficients(psi, *parts, g.limit, g.bound)

    def _linear_z(self, theta: np.ndarray) -> np.ndarray:
        """Predictors ``<theta_r, x_i>`` ``(R, n)`` (they may overflow on extreme rows:
        :meth:`_coef` gives those a bounded coefficient)."""
        D = self.data
        with np.errstate(over="ignore", invalid="ignore"):
            return theta @ D.X.T if D.shared else np.einsum("rnd,rd->rn", D.X, theta)

    # ------------------------------------------------------------------ full gradient
    def mean(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean clipped gradient over the data set at ``theta (R, d)``: ``(R, d)`` and the
        number of clipped per-sample gradients per replication ``(R,)``."""
        D = self.data
        if self.linear:
            z = self._linear_z(theta)
            psi = self._psi(z, np.broadcast_to(D.y, z.shape))
            coef, was = self._coef(psi)
            rows = self._rows.rows
            g = (coef @ rows if D.shared else np.einsum("rn,rnd->rd", coef, rows)) / D.n
            return g, was.sum(axis=-1)
        total, count = clipped_gradient_sum(self.loss, theta, D.X, D.y, self.q, self.clip)
        return total / D.n, count

    # ------------------------------------------------------------------ single samples
    def at(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
        """Clipped gradient of one sample per replication: ``theta, x (R, d)``, ``y (R,)`` ->
        ``(R, d)`` and the clipped mask ``(R,)``."""
        return clipped_gradients(self.loss, theta, x, y, self.q, self.clip)

    def at_index(self, theta: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clipped gradient of sample ``idx[r]`` of replication ``r`` at ``theta[r]``."""
        x, y = self.data.rows(idx)
        if not self.linear:
            return self.at(theta, x, y)
        with np.errstate(over="ignore", invalid="ignore"):
            z = np.einsum("rd,rd->r", theta, x)
        psi = self._psi(z, y)
        index = idx if self.data.shared else (np.arange(len(idx)), idx)
        coef, was = self._coef(psi, index)
        return coef[:, None] * self._rows.rows[index], was

    def snapshot(self, theta: np.ndarray) -> Snapshot:
        """Full clipped gradient at ``theta`` plus what is needed to re-evaluate single
        clipped gradients there cheaply (the SVRG snapshot)."""
        if not self.linear:
            mean, count = self.mean(theta)
            return Snapshot(self, theta.copy(), mean, count, None, None)
        D = self.data
        z = self._linear_z(theta)
        psi = self._psi(z, np.broadcast_to(D.y, z.shape))
        coef, was = self._coef(psi)
        rows = self._rows.rows
        mean = (coef @ rows if D.shared else np.einsum("rn,rnd->rd", coef, rows)) / D.n
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
        rows = self.oracle._rows.rows
        x = rows[idx] if self.oracle.data.shared else rows[r, idx]
        return self.coef[r, idx][:, None] * x, self.was[r, idx]


class Regularizer:
    """``r(theta)``: ``None`` (zero), ``"l2"`` (``strength/2 ||theta||_2^2``) or ``"l1"``
    (``strength ||theta||_1``), with ``prox(v, step) = argmin_u r(u) + ||u - v||^2/(2 step)``.
    Data-independent, so it never affects privacy."""

    KINDS = frozenset({"l2", "l1"})

    def __init__(self, kind: str | None, strength: float) -> None:
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


def objective(loss: LossLike, theta: ArrayLike, X: ArrayLike, y: ArrayLike,
              reg: Regularizer | None = None) -> np.ndarray:
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

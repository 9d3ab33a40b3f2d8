"""Non-smooth convex losses used by the DP-SCO algorithms of seeds 002/004 (and their tests).

:mod:`dpbandits.losses` holds the smooth GLM losses; the seeds 002/004 experiments need
non-smooth Lipschitz ones. They follow the same interface (``value``/``gradient`` broadcasting
over leading axes, ``lipschitz``/``smoothness`` bounds):

* :class:`AbsoluteLoss` — least-absolute-deviation regression ``|<x, theta> - y|``;
* :class:`HingeLoss` — SVM hinge ``max(0, 1 - y <x, theta>)`` with labels ``y in {-1, +1}``;
* :class:`GeometricMedianLoss` — ``||theta - x||_2`` (``y`` ignored), whose population
  minimizer for a centrally symmetric distribution of ``x`` is its centre.

The first two are linear-predictor losses ``phi(<x, theta>, y)`` and subclass
:class:`dpbandits.losses.Loss`; the optimizers use that structure for fast per-sample
gradient norms. ``gradient`` returns a subgradient (``sign(0) = 0``).
"""

from __future__ import annotations

import numpy as np

from dpbandits._validation import check_array, check_nonnegative, check_p
from dpbandits.geometry import lp_norm
from dpbandits.losses import Loss

__all__ = ["AbsoluteLoss", "GeometricMedianLoss", "HingeLoss"]


class AbsoluteLoss(Loss):
    """``|<x, theta> - y|``: least absolute deviations; subgradient ``sign(z - y) x``.

    With ``||x||_q <= x_bound`` every subgradient has ``||.||_q <= x_bound`` (``L = x_bound``
    whatever ``theta_bound``/``y_bound``). Not smooth: :meth:`smoothness` raises.
    """

    name = "absolute"

    def _phi(self, z, y):
        return np.abs(z - y)

    def _psi(self, z, y):
        return np.sign(z - y)

    def lipschitz(self, p, x_bound, theta_bound=None, y_bound=None) -> float:
        check_p("p", p)
        return check_nonnegative("x_bound", x_bound)

    def smoothness(self, p, x_bound) -> float:
        raise ValueError("AbsoluteLoss is not smooth (its derivative jumps at z = y)")


class HingeLoss(Loss):
    """``max(0, 1 - y <x, theta>)`` for labels ``y in {-1, +1}``; subgradient
    ``-y x 1[y z < 1]``. ``L = x_bound`` (labels of modulus 1). Not smooth."""

    name = "hinge"

    def _phi(self, z, y):
        return np.maximum(0.0, 1.0 - y * z)

    def _psi(self, z, y):
        return np.where(y * z < 1.0, -y, 0.0)

    def value(self, theta, X, y):
        self._check_labels(y)
        return super().value(theta, X, y)

    def gradient(self, theta, X, y):
        self._check_labels(y)
        return super().gradient(theta, X, y)

    @staticmethod
    def _check_labels(y):
        arr = check_array("y", y)
        if arr.size and not np.all(np.abs(arr) == 1.0):
            bad = arr[np.abs(arr) != 1.0].ravel()[0]
            raise ValueError(f"y must contain labels -1 or +1 for the hinge loss, got {bad!r}")

    def lipschitz(self, p, x_bound, theta_bound=None, y_bound=None) -> float:
        check_p("p", p)
        return check_nonnegative("x_bound", x_bound)

    def smoothness(self, p, x_bound) -> float:
        raise ValueError("HingeLoss is not smooth (its derivative jumps at y z = 1)")


class GeometricMedianLoss:
    """``f(theta; x) = ||theta - x||_2`` (``y`` ignored): the geometric-median problem.

    Subgradient ``(theta - x) / ||theta - x||_2`` (``0`` at ``theta = x``), so ``L = 1`` in
    l_2 for every data set (no feature bound needed). Not a linear-predictor loss.
    """

    name = "geometric-median"

    def _prepare(self, theta, X):
        theta = check_array("theta", theta)
        X = check_array("X", X)
        if theta.ndim < 1 or X.ndim < 1 or theta.shape[-1] != X.shape[-1]:
            raise ValueError(
                f"theta and X must have shape (..., d) with the same d, got {theta.shape} "
                f"and {X.shape}"
            )
        return theta - X

    def value(self, theta, X, y=None) -> np.ndarray:
        return lp_norm(self._prepare(theta, X), 2.0)

    def gradient(self, theta, X, y=None) -> np.ndarray:
        diff = self._prepare(theta, X)
        nrm = np.sqrt(np.einsum("...i,...i->...", diff, diff))
        return diff / np.where(nrm > 0, nrm, 1.0)[..., None]

    def lipschitz(self, p=2.0, x_bound=None, theta_bound=None, y_bound=None) -> float:
        p = check_p("p", p)
        if p != 2.0:
            raise ValueError(f"GeometricMedianLoss bounds are stated in l_2 only, got p={p}")
        return 1.0

    def smoothness(self, p, x_bound) -> float:
        raise ValueError("GeometricMedianLoss is not smooth at theta = x")

    def __repr__(self) -> str:
        return "GeometricMedianLoss()"

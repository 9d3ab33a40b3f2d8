"""Losses of linear predictors ``z = <x, theta>``: GLM negative log-likelihoods (identity and
logistic links), squared loss and Huber loss, with gradients and the Lipschitz/smoothness
constants the private optimizers calibrate their noise with.

Shapes
------
``theta (..., d)``, ``X (..., d)``, ``y (...)`` broadcast against each other over the leading
axes (e.g. ``theta (R, 1, d)`` with ``X (R, n, d)`` and ``y (R, n)``); ``value`` returns the
broadcast leading shape and ``gradient`` that shape plus ``(d,)``. All inputs are validated
(finite, matching last axis, broadcastable) and raise ``ValueError``/``TypeError`` naming the
argument.

Constants
---------
Every loss here has the form ``f(theta; x, y) = phi(<x, theta>, y)``, so
``grad f = psi(z, y) x`` with ``psi = d phi / d z``. With ``||x||_q <= x_bound``,
``||theta||_p <= theta_bound`` (``q`` dual to ``p``) and ``|y| <= y_bound``:

* Hölder: ``|z| <= x_bound * theta_bound``;
* Lipschitz: ``||grad f||_q = |psi| ||x||_q <= sup|psi| * x_bound``;
* smoothness: ``||grad f(a) - grad f(b)||_q = |psi(x'a) - psi(x'b)| ||x||_q
  <= sup|psi'| |<x, a - b>| x_bound <= sup|psi'| x_bound^2 ||a - b||_p``.

Because the bounds are stated in the dual pair (``x`` in l_q, ``theta`` in l_p), the formulas
are the same for every ``p``; ``p`` only fixes which norms the bounds refer to.

Non-smooth Lipschitz losses (the DP-SCO experiments of Arora, Marinov & Ullah 2020):
:class:`AbsoluteLoss` (least absolute deviations), :class:`HingeLoss` (labels in {-1, +1}) and
:class:`GeometricMedianLoss` (``||theta - x||_2``, not a linear predictor); their
``gradient`` is a subgradient (``sign(0) = 0``) and ``smoothness`` raises.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from dpbandits._validation import (
    check_array,
    check_choice,
    check_nonnegative,
    check_p,
    check_positive,
)
from dpbandits.geometry import lp_norm

__all__ = [
    "AbsoluteLoss",
    "GLMLoss",
    "GeometricMedianLoss",
    "HingeLoss",
    "HuberLoss",
    "LINKS",
    "LogisticLoss",
    "Loss",
    "LossLike",
    "SquaredLoss",
    "make_loss",
]

LINKS = frozenset({"identity", "logistic"})


class LossLike(Protocol):
    """What an optimizer needs of a loss (duck-typed, checked by
    :func:`dpbandits.optim.base.resolve_loss`): per-sample values and gradients in ``theta``.
    Every loss of this module has them; so may a user's own loss object."""

    def value(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray: ...

    def gradient(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray: ...


def _prepare(theta, X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate and return ``theta, X, y`` and ``z = <X, theta>`` (broadcast leading shape)."""
    theta = check_array("theta", theta)
    X = check_array("X", X)
    y = check_array("y", y)
    if theta.ndim < 1 or X.ndim < 1:
        raise ValueError(
            "theta and X must have shape (..., d) with the vector on the last axis, got "
            f"theta {theta.shape} and X {X.shape}"
        )
    if theta.shape[-1] != X.shape[-1]:
        raise ValueError(
            f"theta and X must have the same last axis d, got theta {theta.shape} and X {X.shape}"
        )
    try:
        lead = np.broadcast_shapes(theta.shape[:-1], X.shape[:-1])
    except ValueError:
        raise ValueError(
            f"theta {theta.shape} and X {X.shape} leading axes do not broadcast"
        ) from None
    try:
        np.broadcast_shapes(lead, y.shape)
    except ValueError:
        raise ValueError(
            f"y must broadcast against the leading axes {lead} of theta/X, got y {y.shape}"
        ) from None
    z = np.einsum("...i,...i->...", theta, X)
    return theta, X, y, z


def _check_bounds(p, x_bound, theta_bound=None, y_bound=None):
    p = check_p("p", p)
    x_bound = check_nonnegative("x_bound", x_bound)
    if theta_bound is not None:
        theta_bound = check_nonnegative("theta_bound", theta_bound)
    if y_bound is not None:
        y_bound = check_nonnegative("y_bound", y_bound)
    return p, x_bound, theta_bound, y_bound


class Loss:
    """Base class: ``f(theta; x, y) = phi(<x, theta>, y)``.

    Subclasses implement ``_phi(z, y)``, ``_psi(z, y) = d phi / d z``, ``link`` and the
    constants. ``value``/``gradient`` handle validation and broadcasting.
    """

    @property
    def name(self) -> str:
        """Short name of the loss (e.g. ``"squared"``)."""
        return "loss"

    def value(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        """Loss per sample, shape = broadcast of ``theta[..., 0]``, ``X[..., 0]`` and ``y``."""
        _, _, y, z = _prepare(theta, X, y)
        return self._phi(z, y)

    def gradient(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        """Gradient in ``theta`` per sample: ``psi(<x, theta>, y) x``, shape ``(..., d)``."""
        _, X, y, z = _prepare(theta, X, y)
        psi = self._psi(z, y)
        return psi[..., None] * X

    # link (mean function) of the model the loss belongs to
    def link(self, z: ArrayLike) -> np.ndarray:
        """Mean function ``zeta(z)`` of the model (identity unless stated)."""
        return check_array("z", z).copy()

    def lipschitz(self, p: float, x_bound: float, theta_bound: float,
                  y_bound: float) -> float:  # pragma: no cover
        raise NotImplementedError

    def smoothness(self, p: float, x_bound: float) -> float:  # pragma: no cover
        raise NotImplementedError

    def _phi(self, z, y):  # pragma: no cover
        raise NotImplementedError

    def _psi(self, z, y):  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class GLMLoss(Loss):
    """Negative log-likelihood of a canonical GLM, ``f = b(z) - y z`` with ``b' = zeta``.

    * ``link="identity"``: ``zeta(z) = z``; Gaussian NLL up to constants, i.e. the squared loss
      ``0.5 (z - y)^2`` (gradient ``(z - y) x``).
    * ``link="logistic"``: ``zeta(z) = 1 / (1 + e^{-z})``, ``f = log(1 + e^z) - y z``
      computed as ``logaddexp(0, z) - y z`` (no overflow); gradient ``(zeta(z) - y) x``.
    """

    def __init__(self, link: str = "identity") -> None:
        self.link_name = check_choice("link", link, LINKS)

    @property
    def name(self) -> str:
        return "squared" if self.link_name == "identity" else "logistic"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(link={self.link_name!r})"

    def link(self, z: ArrayLike) -> np.ndarray:
        z = check_array("z", z)
        return z.copy() if self.link_name == "identity" else expit(z)

    def _phi(self, z, y):
        if self.link_name == "identity":
            return 0.5 * (z - y) ** 2
        return np.logaddexp(0.0, z) - y * z

    def _psi(self, z, y):
        if self.link_name == "identity":
            return z - y
        return expit(z) - y

    def lipschitz(self, p: float, x_bound: float, theta_bound: float, y_bound: float) -> float:
        """``L`` with ``||grad f||_q <= L`` when ``||x||_q <= x_bound``,
        ``||theta||_p <= theta_bound``, ``|y| <= y_bound``.

        Identity: ``|z - y| <= x_bound theta_bound + y_bound`` (Hölder), so
        ``L = (x_bound theta_bound + y_bound) x_bound`` (attained: ``x`` aligned with
        ``theta``, ``y = -y_bound``).
        Logistic: ``zeta`` is increasing with values in (0, 1), so
        ``|zeta(z) - y| <= zeta(x_bound theta_bound) + y_bound`` and
        ``L = (zeta(x_bound theta_bound) + y_bound) x_bound`` (for labels in [0, 1] pass
        ``y_bound = 1``; the bound is then at most ``2 x_bound``).
        """
        p, xb, tb, yb = _check_bounds(p, x_bound, theta_bound, y_bound)
        if self.link_name == "identity":
            return (xb * tb + yb) * xb
        return (float(expit(xb * tb)) + yb) * xb

    def smoothness(self, p: float, x_bound: float) -> float:
        """``beta`` with ``||grad f(a) - grad f(b)||_q <= beta ||a - b||_p``.

        ``beta = sup zeta' * x_bound^2`` (see the module docstring): ``x_bound^2`` for the
        identity link, ``x_bound^2 / 4`` for the logistic link (``zeta' <= 1/4``).
        """
        p, xb, _, _ = _check_bounds(p, x_bound)
        return xb**2 if self.link_name == "identity" else 0.25 * xb**2


class SquaredLoss(GLMLoss):
    """``0.5 (<x, theta> - y)^2`` — the identity-link GLM loss."""

    def __init__(self) -> None:
        super().__init__(link="identity")

    def __repr__(self) -> str:
        return "SquaredLoss()"


class LogisticLoss(GLMLoss):
    """``log(1 + exp(<x, theta>)) - y <x, theta>`` — the logistic-link GLM loss."""

    def __init__(self) -> None:
        super().__init__(link="logistic")

    def __repr__(self) -> str:
        return "LogisticLoss()"


class HuberLoss(Loss):
    """Huber loss of the residual ``u = <x, theta> - y`` (linear model, identity link):
    ``u^2 / 2`` for ``|u| <= huber_delta``, else ``huber_delta (|u| - huber_delta / 2)``.
    Gradient ``psi(u) x`` with ``psi(u) = clip(u, -huber_delta, huber_delta)``.
    """

    name = "huber"

    def __init__(self, huber_delta: float = 1.0) -> None:
        self.huber_delta = check_positive("huber_delta", huber_delta)

    def __repr__(self) -> str:
        return f"HuberLoss(huber_delta={self.huber_delta!r})"

    def _phi(self, z, y):
        u = np.abs(z - y)
        dlt = self.huber_delta
        return np.where(u <= dlt, 0.5 * u**2, dlt * (u - 0.5 * dlt))

    def _psi(self, z, y):
        return np.clip(z - y, -self.huber_delta, self.huber_delta)

    def lipschitz(self, p: float, x_bound: float, theta_bound: float, y_bound: float) -> float:
        """``|psi| <= min(huber_delta, x_bound theta_bound + y_bound)``, so
        ``L = min(huber_delta, x_bound theta_bound + y_bound) * x_bound``."""
        p, xb, tb, yb = _check_bounds(p, x_bound, theta_bound, y_bound)
        return min(self.huber_delta, xb * tb + yb) * xb

    def smoothness(self, p: float, x_bound: float) -> float:
        """``psi`` is 1-Lipschitz, so ``beta = x_bound^2``."""
        p, xb, _, _ = _check_bounds(p, x_bound)
        return xb**2


# --------------------------------------------------------------------------- non-smooth
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

    def lipschitz(self, p: float, x_bound: float, theta_bound: float | None = None,
                  y_bound: float | None = None) -> float:
        check_p("p", p)
        return check_nonnegative("x_bound", x_bound)

    def smoothness(self, p: float, x_bound: float) -> float:
        raise ValueError("AbsoluteLoss is not smooth (its derivative jumps at z = y)")


class HingeLoss(Loss):
    """``max(0, 1 - y <x, theta>)`` for labels ``y in {-1, +1}``; subgradient
    ``-y x 1[y z < 1]``. ``L = x_bound`` (labels of modulus 1). Not smooth."""

    name = "hinge"

    def _phi(self, z, y):
        return np.maximum(0.0, 1.0 - y * z)

    def _psi(self, z, y):
        return np.where(y * z < 1.0, -y, 0.0)

    def value(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        self._check_labels(y)
        return super().value(theta, X, y)

    def gradient(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        self._check_labels(y)
        return super().gradient(theta, X, y)

    @staticmethod
    def _check_labels(y):
        arr = check_array("y", y)
        if arr.size and not np.all(np.abs(arr) == 1.0):
            bad = arr[np.abs(arr) != 1.0].ravel()[0]
            raise ValueError(f"y must contain labels -1 or +1 for the hinge loss, got {bad!r}")

    def lipschitz(self, p: float, x_bound: float, theta_bound: float | None = None,
                  y_bound: float | None = None) -> float:
        check_p("p", p)
        return check_nonnegative("x_bound", x_bound)

    def smoothness(self, p: float, x_bound: float) -> float:
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

    def value(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike | None = None) -> np.ndarray:
        return lp_norm(self._prepare(theta, X), 2.0)

    def gradient(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike | None = None) -> np.ndarray:
        diff = self._prepare(theta, X)
        nrm = np.sqrt(np.einsum("...i,...i->...", diff, diff))
        return diff / np.where(nrm > 0, nrm, 1.0)[..., None]

    def lipschitz(self, p: float = 2.0, x_bound: float | None = None,
                  theta_bound: float | None = None, y_bound: float | None = None) -> float:
        p = check_p("p", p)
        if p != 2.0:
            raise ValueError(f"GeometricMedianLoss bounds are stated in l_2 only, got p={p}")
        return 1.0

    def smoothness(self, p: float, x_bound: float) -> float:
        raise ValueError("GeometricMedianLoss is not smooth at theta = x")

    def __repr__(self) -> str:
        return "GeometricMedianLoss()"


def make_loss(name: str, **params: float) -> Loss:
    """Loss by name: ``"squared"``/``"identity"``, ``"logistic"``, ``"huber"`` (takes
    ``huber_delta``)."""
    check_choice("name", name, {"squared", "identity", "logistic", "huber"})
    if name == "huber":
        return HuberLoss(**params)
    if params:
        raise TypeError(f"loss {name!r} takes no parameters, got {sorted(params)}")
    return SquaredLoss() if name in ("squared", "identity") else LogisticLoss()


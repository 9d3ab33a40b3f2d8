"""Private black-box objectives ``f_x(theta) = (1/n) sum_i L(theta, x_i)`` (Sopa et al. 2025,
Sec. 2.4).

An :class:`Objective` returns, for a batch of parameter vectors, the loss of **every**
validation individual separately — the per-individual decomposition DP-GIBO clips. One call
to :meth:`Objective.losses` with ``b`` points is ``b`` "function evaluations" (``b`` training
runs in hyper-parameter tuning), each returning ``n`` per-individual losses.

Concrete objectives used by the experiments of Sopa et al. 2025:

* :class:`NormalLocation` — Appendix E.3, ``L = ||x_i - theta||^2 / 2``;
* :class:`HuberRegression` — Appendix E.4, weighted Huber loss of a linear model;
* :class:`GPRegressionObjective` — Example 4.1 / E.1: squared validation error of a GP
  regression (equivalently kernel ridge regression) as a function of its log-lengthscales
  (and optionally its log noise variance);

plus two wrappers: :class:`NoisyObjective` (the noisy oracle ``y_i = L(theta, x_i) +
N(0, sigma^2)``) and :class:`CallableObjective` (any ``per_individual_losses(theta) -> (n,)``
callable, e.g. the hyper-parameter adapter in :mod:`dpbandits.bo.adapter`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import (
    check_array,
    check_int,
    check_nonnegative,
    check_positive,
    check_rng,
)
from dpbandits.bo.kernels import RBF

__all__ = [
    "Objective",
    "CallableObjective",
    "NoisyObjective",
    "NormalLocation",
    "HuberRegression",
    "GPRegressionObjective",
    "as_objective",
    "sample_gp_regression_data",
]


class Objective(ABC):
    """Per-individual losses ``L(theta, x_i)``, ``i = 1..n``, of ``theta`` in ``R^dim``.

    Subclasses set ``dim`` and ``n_individuals`` and implement :meth:`_losses`; those with
    closed-form gradients also implement :meth:`_per_individual_gradients` (used only by the
    DP-GD baseline and by diagnostics, never by DP-GIBO itself).
    """

    dim: int
    n_individuals: int

    @abstractmethod
    def _losses(self, thetas: np.ndarray) -> np.ndarray:
        """``(b, dim)`` -> ``(b, n)``; inputs already validated."""

    def _per_individual_gradients(self, theta: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} has no closed-form gradients")

    @property
    def has_gradients(self) -> bool:
        return type(self)._per_individual_gradients is not Objective._per_individual_gradients

    def _check_thetas(self, thetas) -> np.ndarray:
        T = check_array("thetas", thetas)
        if T.ndim == 1:
            T = T[None, :]
        if T.ndim != 2 or T.shape[1] != self.dim:
            raise ValueError(f"thetas must have shape (b, {self.dim}) or ({self.dim},), "
                             f"got {np.shape(thetas)}")
        return T

    def losses(self, thetas: ArrayLike) -> np.ndarray:
        """Per-individual losses at each row of ``thetas``: ``(b, dim)`` -> ``(b, n)``."""
        T = self._check_thetas(thetas)
        out = np.asarray(self._losses(T), dtype=float)
        if out.shape != (T.shape[0], self.n_individuals):
            raise ValueError(f"{type(self).__name__} returned losses of shape {out.shape}, "
                             f"expected {(T.shape[0], self.n_individuals)}")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"{type(self).__name__} returned non-finite losses")
        return out

    def per_individual_losses(self, theta: ArrayLike) -> np.ndarray:
        """Losses of all ``n`` individuals at one ``theta`` (shape ``(n,)``)."""
        return self.losses(check_array("theta", theta, ndim=1))[0]

    def values(self, thetas: ArrayLike) -> np.ndarray:
        """Objective ``f_x`` (mean loss, no evaluation noise) at each row: ``(b,)``."""
        return self.losses(thetas).mean(axis=1)

    def value(self, theta: ArrayLike) -> float:
        return float(self.values(check_array("theta", theta, ndim=1))[0])

    def per_individual_gradients(self, theta: ArrayLike) -> np.ndarray:
        """``grad_theta L(theta, x_i)`` for every individual, shape ``(n, dim)``."""
        th = check_array("theta", theta, shape=(self.dim,))
        return self._per_individual_gradients(th)

    def gradient(self, theta: ArrayLike) -> np.ndarray:
        """Gradient of ``f_x`` (mean of the per-individual gradients), shape ``(dim,)``."""
        return self.per_individual_gradients(theta).mean(axis=0)


class CallableObjective(Objective):
    """Wrap ``per_individual_losses(theta) -> (n,)`` (and optionally
    ``per_individual_gradients(theta) -> (n, dim)``) as an :class:`Objective`.

    A black-box callable is evaluated point by point (each call is one training run); write
    an :class:`Objective` subclass when the losses of many points can be computed together.
    """

    def __init__(self, per_individual_losses: Callable[[np.ndarray], ArrayLike], dim: int,
                 n_individuals: int,
                 per_individual_gradients: Callable[[np.ndarray], ArrayLike] | None = None
                 ) -> None:
        if not callable(per_individual_losses):
            raise TypeError(f"per_individual_losses must be callable, got "
                            f"{type(per_individual_losses).__name__}")
        if per_individual_gradients is not None and not callable(per_individual_gradients):
            raise TypeError("per_individual_gradients must be callable or None")
        self.fn = per_individual_losses
        self.grad_fn = per_individual_gradients
        self.dim = check_int("dim", dim, low=1)
        self.n_individuals = check_int("n_individuals", n_individuals, low=1)

    def _losses(self, thetas):
        return np.stack([np.asarray(self.fn(th.copy()), dtype=float) for th in thetas])

    @property
    def has_gradients(self) -> bool:
        return self.grad_fn is not None

    def _per_individual_gradients(self, theta):
        if self.grad_fn is None:
            return super()._per_individual_gradients(theta)
        g = np.asarray(self.grad_fn(theta.copy()), dtype=float)
        if g.shape != (self.n_individuals, self.dim):
            raise ValueError(f"per_individual_gradients returned shape {g.shape}, expected "
                             f"{(self.n_individuals, self.dim)}")
        return g


class HasPerIndividualLosses(Protocol):
    """What :func:`as_objective` reads from an object that is not an :class:`Objective`:
    ``per_individual_losses(theta) -> (n,)`` (``dim``/``n_individuals`` attributes too,
    unless given)."""

    def per_individual_losses(self, theta: np.ndarray) -> ArrayLike: ...


#: What :func:`as_objective` (and so every ``fit`` of :mod:`dpbandits.bo`) accepts.
ObjectiveLike = Objective | HasPerIndividualLosses | Callable[[np.ndarray], ArrayLike]


def as_objective(objective: ObjectiveLike, dim: int | None = None,
                 n_individuals: int | None = None) -> Objective:
    """An :class:`Objective` from an Objective, or from any object/callable exposing
    ``per_individual_losses(theta) -> (n,)`` (then ``dim`` and ``n_individuals`` are taken
    from its attributes of those names, or must be given)."""
    if isinstance(objective, Objective):
        return objective
    fn = getattr(objective, "per_individual_losses", None)
    if fn is None and callable(objective):
        fn = objective
    if fn is None:
        raise TypeError("objective must be an Objective, a callable theta -> (n,) losses, or "
                        f"expose per_individual_losses; got {type(objective).__name__}")
    dim = dim if dim is not None else getattr(objective, "dim", None)
    n = n_individuals if n_individuals is not None else getattr(objective, "n_individuals",
                                                                None)
    if dim is None or n is None:
        raise ValueError("dim and n_individuals must be given for a plain callable objective")
    grad = getattr(objective, "per_individual_gradients", None)
    return CallableObjective(fn, dim, n, per_individual_gradients=grad)


class NoisyObjective(Objective):
    """The noisy oracle of Sopa et al. 2025: ``y_i = L(theta, x_i) + N(0, noise_std^2)``
    i.i.d. per individual and evaluation. :meth:`values`/:meth:`value` report the noiseless
    objective.

    ``rng`` drives the evaluation noise only (it models, e.g., DP training), separate from the
    optimizer's generator.
    """

    def __init__(self, base: Objective, noise_std: float, rng: np.random.Generator) -> None:
        if not isinstance(base, Objective):
            raise TypeError(f"base must be an Objective, got {type(base).__name__}")
        self.base = base
        self.noise_std = check_nonnegative("noise_std", noise_std)
        self.rng = check_rng(rng)
        self.dim = base.dim
        self.n_individuals = base.n_individuals

    def _losses(self, thetas):
        clean = self.base._losses(thetas)
        if self.noise_std == 0:
            return clean
        return clean + self.noise_std * self.rng.standard_normal(clean.shape)

    def values(self, thetas: ArrayLike) -> np.ndarray:
        return self.base.values(thetas)

    @property
    def has_gradients(self) -> bool:
        return self.base.has_gradients

    def _per_individual_gradients(self, theta):
        return self.base._per_individual_gradients(theta)


class NormalLocation(Objective):
    """Appendix E.3: ``L(theta, x_i) = ||x_i - theta||^2 / 2``; minimizer (MLE) = sample mean.

    ``X`` of shape ``(n, d)``.
    """

    def __init__(self, X: ArrayLike) -> None:
        self.X = check_array("X", X, ndim=2)
        self.n_individuals, self.dim = self.X.shape
        self._sq = np.einsum("nd,nd->n", self.X, self.X)

    @property
    def mle(self) -> np.ndarray:
        return self.X.mean(axis=0)

    def _losses(self, thetas):
        tt = np.einsum("bd,bd->b", thetas, thetas)
        return 0.5 * (tt[:, None] - 2.0 * thetas @ self.X.T + self._sq[None, :])

    def _per_individual_gradients(self, theta):
        return theta[None, :] - self.X


class HuberRegression(Objective):
    """Appendix E.4: ``L = rho_c(y_i - x_i^T theta) * min(1, 2 / ||x_i||^2)``.

    ``rho_c`` is the Huber loss (quadratic for ``|r| <= c``, linear beyond). The weight makes
    the per-individual gradient bounded: ``||grad L|| <= c * sup_x min(||x||, 2/||x||) =
    sqrt(2) c`` (the paper calls ``B = 1`` "the true value" for ``c = 1``; the supremum is
    ``sqrt(2)``, so clipping at ``B = 1`` can bind — it is counted).
    """

    def __init__(self, X: ArrayLike, y: ArrayLike, c: float = 1.0) -> None:
        self.X = check_array("X", X, ndim=2)
        self.y = check_array("y", y, shape=(self.X.shape[0],))
        self.c = check_positive("c", c)
        self.n_individuals, self.dim = self.X.shape
        sq = np.einsum("nd,nd->n", self.X, self.X)
        self.weights = np.minimum(1.0, 2.0 / np.maximum(sq, 1e-300))

    @property
    def gradient_bound(self) -> float:
        """``sup_i ||grad L(theta, x_i)||`` over all theta: ``c max_i w_i ||x_i||``."""
        return float(self.c * np.max(self.weights * np.linalg.norm(self.X, axis=1)))

    def _rho(self, r):
        a = np.abs(r)
        return np.where(a <= self.c, 0.5 * r**2, self.c * (a - 0.5 * self.c))

    def _losses(self, thetas):
        r = self.y[None, :] - thetas @ self.X.T
        return self._rho(r) * self.weights[None, :]

    def _per_individual_gradients(self, theta):
        r = self.y - self.X @ theta
        psi = np.clip(r, -self.c, self.c)
        return -(psi * self.weights)[:, None] * self.X


class GPRegressionObjective(Objective):
    """Squared validation error of GP regression with an ARD RBF kernel (Example 4.1 / E.1).

    The model is fit on ``(X_train, y_train)``; the loss of validation individual ``i`` is
    ``(y_val_i - m(x_val_i))^2`` with ``m`` the posterior mean (the kernel ridge regression
    predictor). ``theta`` holds the ``p`` log-lengthscales (``p = X_train.shape[1]``) and, when
    ``tune_noise``, a last coordinate ``log(noise_var)`` (the ridge penalty). ``outputscale``
    and (unless tuned) ``noise_var`` are fixed. Batches of points are solved ``chunk`` at a
    time with stacked linear algebra.
    """

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_val: ArrayLike,
                 y_val: ArrayLike, *, outputscale: float = 1.0, noise_var: float = 0.01,
                 tune_noise: bool = False, chunk: int = 8) -> None:
        self.X_train = check_array("X_train", X_train, ndim=2)
        self.y_train = check_array("y_train", y_train, shape=(self.X_train.shape[0],))
        p = self.X_train.shape[1]
        self.X_val = check_array("X_val", X_val, shape=(None, p))
        self.y_val = check_array("y_val", y_val, shape=(self.X_val.shape[0],))
        self.outputscale = check_positive("outputscale", outputscale)
        self.noise_var = check_positive("noise_var", noise_var)
        if not isinstance(tune_noise, bool):
            raise TypeError(f"tune_noise must be a bool, got {tune_noise!r}")
        self.tune_noise = tune_noise
        self.chunk = check_int("chunk", chunk, low=1)
        self.n_features = p
        self.dim = p + int(tune_noise)
        self.n_individuals = self.X_val.shape[0]

    def _losses(self, thetas):
        out = np.empty((thetas.shape[0], self.n_individuals))
        p = self.n_features
        ntr = self.X_train.shape[0]
        for s in range(0, thetas.shape[0], self.chunk):
            th = thetas[s: s + self.chunk]
            inv_ell = np.exp(-th[:, :p])  # (c, p)
            noise = np.exp(th[:, p]) if self.tune_noise else np.full(th.shape[0],
                                                                      self.noise_var)
            A = self.X_train[None, :, :] * inv_ell[:, None, :]  # (c, ntr, p)
            V = self.X_val[None, :, :] * inv_ell[:, None, :]  # (c, nval, p)
            a2 = np.einsum("cnp,cnp->cn", A, A)
            v2 = np.einsum("cnp,cnp->cn", V, V)
            D_tt = a2[:, :, None] + a2[:, None, :] - 2.0 * A @ A.transpose(0, 2, 1)
            D_vt = v2[:, :, None] + a2[:, None, :] - 2.0 * V @ A.transpose(0, 2, 1)
            K = self.outputscale * np.exp(-0.5 * np.maximum(D_tt, 0.0))
            K[:, np.arange(ntr), np.arange(ntr)] += noise[:, None]
            Kv = self.outputscale * np.exp(-0.5 * np.maximum(D_vt, 0.0))
            rhs = np.broadcast_to(self.y_train[None, :, None], (th.shape[0], ntr, 1))
            alpha = np.linalg.solve(K, rhs)[..., 0]
            pred = np.einsum("cvt,ct->cv", Kv, alpha)
            out[s: s + th.shape[0]] = (self.y_val[None, :] - pred) ** 2
        return out


def sample_gp_regression_data(rng: np.random.Generator, n: int, lengthscales: ArrayLike, *,
                              outputscale: float = 1.0, noise_std: float = 0.1
                              ) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``X ~ U[0, 1]^p`` and outputs from a GP with ARD RBF kernel plus Gaussian
    noise (the data of Example 4.1): returns ``(X, y)`` with ``X`` ``(n, p)``."""
    rng = check_rng(rng)
    n = check_int("n", n, low=1)
    ell = check_array("lengthscales", lengthscales, ndim=1)
    noise_std = check_nonnegative("noise_std", noise_std)
    X = rng.random((n, ell.size))
    K = RBF(ell, outputscale)(X, X) + 1e-8 * outputscale * np.eye(n)
    f = np.linalg.cholesky(K) @ rng.standard_normal(n)
    return X, f + noise_std * rng.standard_normal(n)

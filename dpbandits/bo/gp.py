"""Exact Gaussian-process regression with zero (or constant) prior mean, in numpy/scipy.

Two classes share one incrementally extended Cholesky factor of ``K(D, D) + (sigma^2 +
jitter) I``:

* :class:`GPDesign` — the evaluation set ``D`` alone. Posterior *covariances* do not depend
  on the observed values, so everything DP-GIBO's acquisition needs (the posterior covariance
  of the gradient, Sopa et al. 2025, Section 2.3) lives here and never touches data.
* :class:`ExactGP` — a design plus observations ``Y`` of shape ``(m,)`` or ``(m, n)``
  (``n`` outputs sharing the kernel matrix: one column per validation individual in DP-GIBO).
  Adds the posterior mean and the gradient of the posterior mean.

Formulas (``Kt = K(D, D) + (sigma^2 + jitter) I``, ``m0`` the prior mean):

* mean ``m(x) = m0 + k(x, D) Kt^{-1} (Y - m0)``, covariance ``k(x, x') - k(x, D) Kt^{-1} k(D, x')``
* gradient of the mean ``grad m(x) = grad_x k(x, D) Kt^{-1} (Y - m0)``
* gradient covariance ``grad k(x,x) grad^T - grad_x k(x, D) Kt^{-1} k(D, x) grad^T``

``jitter`` is relative to the mean prior variance of the first points added and is fixed from
then on; if a factorization fails it is multiplied by 10 (up to ``max_jitter``) and the whole
matrix refactorized. The jitter depends on the kernel and the design only, never on data.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular

from dpbandits._validation import check_array, check_nonnegative, check_real
from dpbandits.bo.kernels import Kernel

__all__ = ["GPDesign", "ExactGP"]


class GPDesign:
    """Evaluation set ``D`` and the Cholesky factor of its noisy kernel matrix.

    Parameters
    ----------
    kernel : Kernel
    noise_var : float
        Observation noise variance ``sigma^2 >= 0`` added to the diagonal.
    jitter : float
        Relative diagonal jitter (``>= 0``) for numerical positive definiteness.
    max_jitter : float
        Largest relative jitter tried before giving up with ``LinAlgError``.
    """

    def __init__(self, kernel: Kernel, noise_var: float = 0.0, jitter: float = 1e-10,
                 max_jitter: float = 1e-4):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a dpbandits.bo.kernels.Kernel, got "
                            f"{type(kernel).__name__}")
        self.kernel = kernel
        self.noise_var = check_nonnegative("noise_var", noise_var)
        self.jitter = check_nonnegative("jitter", jitter)
        self.max_jitter = check_real("max_jitter", max_jitter, low=self.jitter)
        self._X = None
        self._L = None  # capacity-doubling buffer, valid block [:m, :m]
        self._m = 0
        self._scale = None  # mean prior variance used to make the jitter absolute
        self._rel_jitter = self.jitter

    # ------------------------------------------------------------------ basics
    @property
    def m(self) -> int:
        """Number of points in the design."""
        return self._m

    @property
    def X(self) -> np.ndarray:
        """The design points, shape ``(m, d)`` (a view; do not modify)."""
        if self._X is None:
            return np.empty((0, 0))
        return self._X[: self._m]

    @property
    def dim(self) -> int | None:
        return None if self._X is None else self._X.shape[1]

    @property
    def L(self) -> np.ndarray:
        """Lower Cholesky factor of ``Kt``, shape ``(m, m)``."""
        if self._L is None:
            return np.empty((0, 0))
        return self._L[: self._m, : self._m]

    @property
    def diag_add(self) -> float:
        """What is added to the diagonal: ``sigma^2 + jitter * scale``."""
        scale = 1.0 if self._scale is None else self._scale
        return self.noise_var + self._rel_jitter * scale

    @property
    def relative_jitter(self) -> float:
        """The relative jitter in use (after any escalation)."""
        return self._rel_jitter

    def _check_points(self, name, Z) -> np.ndarray:
        Z = check_array(name, Z)
        if Z.ndim == 1:
            Z = Z[None, :]
        if Z.ndim != 2:
            raise ValueError(f"{name} must have shape (b, d), got {Z.shape}")
        if self.dim is not None and Z.shape[1] != self.dim:
            raise ValueError(f"{name} must have d={self.dim} columns, got {Z.shape[1]}")
        self.kernel._check_dim(Z.shape[1])
        return Z

    # --------------------------------------------------------- factorization
    def _refactor(self) -> None:
        X = self.X
        K = self.kernel._k(X, X)
        while True:
            try:
                Lm = cholesky(K + self.diag_add * np.eye(self._m), lower=True,
                              check_finite=False)
                break
            except LinAlgError:
                self._escalate()
        self._L[: self._m, : self._m] = Lm

    def _escalate(self) -> None:
        new = max(self._rel_jitter * 10.0, 1e-12)
        if new > self.max_jitter:
            raise LinAlgError(
                f"kernel matrix is not positive definite even with relative jitter "
                f"{self._rel_jitter:g} (max_jitter={self.max_jitter:g}); increase noise_var "
                "or max_jitter, or avoid duplicate design points"
            )
        self._rel_jitter = new

    def _grow(self, b: int, d: int) -> None:
        need = self._m + b
        if self._X is None:
            cap = max(16, need)
            self._X = np.empty((cap, d))
            self._L = np.zeros((cap, cap))
        elif need > self._X.shape[0]:
            cap = max(need, 2 * self._X.shape[0])
            X = np.empty((cap, d))
            X[: self._m] = self._X[: self._m]
            L = np.zeros((cap, cap))
            L[: self._m, : self._m] = self._L[: self._m, : self._m]
            self._X, self._L = X, L

    def add(self, Z: ArrayLike) -> None:
        """Append points ``Z`` (shape ``(b, d)``) and extend the Cholesky factor in
        ``O(m^2 b)``."""
        Z = self._check_points("Z", Z)
        b, d = Z.shape
        if b == 0:
            return
        self._grow(b, d)
        m = self._m
        if self._scale is None:
            self._scale = float(np.mean(self.kernel._diag(Z)))
            if not self._scale > 0:
                self._scale = 1.0
        self._X[m: m + b] = Z
        Kzz = self.kernel._k(Z, Z) + self.diag_add * np.eye(b)
        if m == 0:
            S = Kzz
            Bm = np.empty((0, b))
        else:
            Bm = solve_triangular(self.L, self.kernel._k(self.X, Z), lower=True,
                                  check_finite=False)
            S = Kzz - Bm.T @ Bm
        try:
            Lc = cholesky(S, lower=True, check_finite=False)
        except LinAlgError:
            self._m = m + b
            self._escalate()
            self._refactor()
            return
        self._L[m: m + b, :m] = Bm.T
        self._L[m: m + b, m: m + b] = Lc
        self._m = m + b

    def solve(self, rhs: ArrayLike) -> np.ndarray:
        """``Kt^{-1} rhs`` for ``rhs`` of shape ``(m,)`` or ``(m, k)``."""
        if self._m == 0:
            return np.zeros_like(np.asarray(rhs, dtype=float))
        return cho_solve((self.L, True), rhs, check_finite=False)

    def half_solve(self, rhs: ArrayLike) -> np.ndarray:
        """``L^{-1} rhs`` (so that ``||L^{-1} v||^2 = v^T Kt^{-1} v``)."""
        if self._m == 0:
            return np.zeros_like(np.asarray(rhs, dtype=float))
        return solve_triangular(self.L, rhs, lower=True, check_finite=False)

    # --------------------------------------------------- posterior covariances
    def var(self, Xs: ArrayLike) -> np.ndarray:
        """Posterior variance of ``f`` at the rows of ``Xs`` (noise-free), shape ``(p,)``."""
        Xs = self._check_points("Xs", Xs)
        prior = self.kernel._diag(Xs)
        if self._m == 0:
            return prior
        V = self.half_solve(self.kernel._k(self.X, Xs))
        return np.maximum(prior - np.einsum("mp,mp->p", V, V), 0.0)

    def cov(self, Xs: ArrayLike) -> np.ndarray:
        """Posterior covariance of ``f`` at the rows of ``Xs``, shape ``(p, p)``."""
        Xs = self._check_points("Xs", Xs)
        prior = self.kernel._k(Xs, Xs)
        if self._m == 0:
            return prior
        V = self.half_solve(self.kernel._k(self.X, Xs))
        return prior - V.T @ V

    def grad_cross(self, x: ArrayLike) -> np.ndarray:
        """``grad_x k(x, D)`` arranged as ``(m, d)`` (row j is ``d k(x, D_j) / d x``)."""
        x = check_array("x", x, ndim=1)
        if self.dim is not None and x.shape[0] != self.dim:
            raise ValueError(f"x must have length d={self.dim}, got {x.shape[0]}")
        if self._m == 0:
            return np.zeros((0, x.shape[0]))
        return self.kernel._g1(x[None, :], self.X)[0]

    def grad_cov(self, x: ArrayLike) -> np.ndarray:
        """Posterior covariance of ``grad f(x)`` given ``D``, shape ``(d, d)``."""
        x = check_array("x", x, ndim=1)
        prior = self.kernel.grad_cov(x)
        if self._m == 0:
            return prior
        A = self.half_solve(self.grad_cross(x))
        return prior - A.T @ A

    def grad_trace(self, x: ArrayLike) -> float:
        """``Tr`` of the posterior gradient covariance: the quantity Sopa et al. 2025's tolerance
        ``epsilon`` bounds (Lemmas A.2-A.4)."""
        return float(np.trace(self.grad_cov(x)))


class ExactGP(GPDesign):
    """GP regression with ``n`` outputs sharing one kernel (``Y`` of shape ``(m, n)``).

    Parameters
    ----------
    kernel, noise_var, jitter, max_jitter : see :class:`GPDesign`.
    prior_mean : float
        Constant prior mean ``m0`` (Sopa et al. 2025 use 0). Must not depend on data if the GP is
        used inside a private algorithm.
    """

    def __init__(self, kernel: Kernel, noise_var: float = 0.0, jitter: float = 1e-10,
                 max_jitter: float = 1e-4, prior_mean: float = 0.0):
        super().__init__(kernel, noise_var=noise_var, jitter=jitter, max_jitter=max_jitter)
        self.prior_mean = check_real("prior_mean", prior_mean)
        self._Y: np.ndarray | None = None
        self._single = True
        self._alpha: np.ndarray | None = None

    def _check_targets(self, Y, b) -> np.ndarray:
        Y = check_array("Y", Y)
        if Y.ndim not in (1, 2) or Y.shape[0] != b:
            raise ValueError(f"Y must have shape ({b},) or ({b}, n), got {Y.shape}")
        return Y

    def fit(self, X: ArrayLike, Y: ArrayLike) -> ExactGP:
        """Replace the data by ``X`` (``(m, d)``) and ``Y`` (``(m,)`` or ``(m, n)``)."""
        X = check_array("X", X, ndim=2)
        Y = self._check_targets(Y, X.shape[0])
        self._X = self._L = self._Y = self._alpha = self._scale = None
        self._m = 0
        self._rel_jitter = self.jitter
        self.add(X, Y)
        return self

    def add(self, X: ArrayLike, Y: ArrayLike | None = None) -> None:
        """Append points ``X`` (``(b, d)``) with observations ``Y`` (``(b,)``/``(b, n)``)."""
        X = self._check_points("X", X)
        if Y is None:
            raise ValueError("Y must be given: an ExactGP holds observations for every point")
        Y = self._check_targets(Y, X.shape[0])
        if self._Y is not None:
            if (Y.ndim == 1) != self._single or (Y.ndim == 2 and Y.shape[1] != self._Y.shape[1]):
                raise ValueError(f"Y must match the earlier targets' trailing shape "
                                 f"{self._Y.shape[1:] if not self._single else ()}, got "
                                 f"{Y.shape[1:]}")
        Y2 = Y[:, None] if Y.ndim == 1 else Y
        super().add(X)
        self._single = Y.ndim == 1
        self._Y = Y2 if self._Y is None else np.vstack([self._Y, Y2])
        self._alpha = None

    def set_targets(self, Y: ArrayLike) -> None:
        """Replace the observations (same design, e.g. after re-standardizing)."""
        Y = self._check_targets(Y, self._m)
        self._single = Y.ndim == 1
        self._Y = Y[:, None] if Y.ndim == 1 else Y.copy()
        self._alpha = None

    @property
    def Y(self) -> np.ndarray:
        if self._Y is None:
            return np.empty((0,))
        return self._Y[:, 0] if self._single else self._Y

    @property
    def alpha(self) -> np.ndarray:
        """``Kt^{-1} (Y - m0)``, shape ``(m, n)``."""
        if self._alpha is None:
            if self._Y is None:
                raise RuntimeError("the GP has no data; call fit first")
            self._alpha = self.solve(self._Y - self.prior_mean)
        return self._alpha

    def _out(self, arr):
        return arr[..., 0] if self._single else arr

    def mean(self, Xs: ArrayLike) -> np.ndarray:
        """Posterior mean at the rows of ``Xs``: ``(p,)`` or ``(p, n)``."""
        Xs = self._check_points("Xs", Xs)
        if self._m == 0:
            return np.full(Xs.shape[0], self.prior_mean)
        return self._out(self.prior_mean + self.kernel._k(Xs, self.X) @ self.alpha)

    def grad_mean(self, x: ArrayLike) -> np.ndarray:
        """Gradient of the posterior mean at ``x``: ``(d,)`` or ``(d, n)``
        (line 7 of Algorithm 1, Sopa et al. 2025, for all ``n`` outputs at once)."""
        x = check_array("x", x, ndim=1)
        if self._m == 0:
            return np.zeros(x.shape[0]) if self._single else np.zeros((x.shape[0], 0))
        return self._out(self.grad_cross(x).T @ self.alpha)

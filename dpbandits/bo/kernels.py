"""Covariance functions for the exact GP layer, with the input derivatives DP-GIBO needs.

Every kernel ``k(a, b)`` provides, batched over the rows of ``A`` (shape ``(p, d)``) and
``B`` (shape ``(m, d)``):

======================= ==================== ===============================================
``__call__(A, B)``      ``(p, m)``           the Gram matrix ``k(a_i, b_j)``
``diag(A)``             ``(p,)``             ``k(a_i, a_i)``
``grad_first(A, B)``    ``(p, m, d)``        ``d k(a, b) / d a``
``grad_second(A, B)``   ``(p, m, d)``        ``d k(a, b) / d b``
``cross_hessian(A, B)`` ``(p, m, d, d)``     ``[s, t]`` entry ``d^2 k(a, b) / d a_s d b_t``
``grad_cov(x)``         ``(d, d)``           prior covariance of ``grad f(x)``, i.e.
                                             ``cross_hessian(x, x)`` (Sopa et al. 2025, Sec. 2.3)
``grad_diag(A)``        ``(p, d)``           ``d k(a, a) / d a`` (zero for stationary kernels)
======================= ==================== ===============================================

For a GP ``f ~ GP(0, k)`` the covariance between ``grad f(a)`` and ``f(b)`` is
``grad_first(a, b)`` and between ``grad f(a)`` and ``grad f(b)`` is ``cross_hessian(a, b)``,
which is everything the posterior of the gradient needs. Kernels are immutable once built;
hyper-parameters are fixed by the user (Sopa et al. 2025 never learn them, Appendix E).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_array, check_int, check_positive, check_real

__all__ = ["Kernel", "RBF", "Matern52", "Polynomial", "make_kernel"]


def _lengthscale(value) -> np.ndarray:
    """Scalar or per-dimension (ARD) lengthscale, all entries finite and > 0."""
    arr = check_array("lengthscale", value)
    if arr.ndim > 1:
        raise ValueError(f"lengthscale must be a scalar or a 1-d array, got shape {arr.shape}")
    if arr.size == 0 or np.any(arr <= 0):
        raise ValueError(f"lengthscale must be > 0 in every entry, got {value!r}")
    return arr


class Kernel(ABC):
    """Base class: input checks shared by every kernel."""

    #: True when ``k(a, b)`` depends on ``a - b`` only (Assumption 3.5 of Sopa et al. 2025).
    stationary: bool = True

    def _pair(self, A, B):
        A = check_array("A", A)
        B = check_array("B", B)
        if A.ndim == 1:
            A = A[None, :]
        if B.ndim == 1:
            B = B[None, :]
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
            raise ValueError(
                f"A and B must be (p, d) and (m, d) arrays with the same d, got {A.shape} "
                f"and {B.shape}"
            )
        self._check_dim(A.shape[1])
        return A, B

    def _check_dim(self, d: int) -> None:
        """Hook for kernels whose parameters fix the input dimension (ARD)."""
        return None

    # Subclasses implement the unchecked ``_k, _diag, _g1, _g2, _ch`` on 2-d float arrays
    # (used directly by the GP layer's hot paths); the public methods validate first.
    @abstractmethod
    def _k(self, A, B) -> np.ndarray: ...

    @abstractmethod
    def _diag(self, A) -> np.ndarray: ...

    @abstractmethod
    def _g1(self, A, B) -> np.ndarray: ...

    @abstractmethod
    def _g2(self, A, B) -> np.ndarray: ...

    @abstractmethod
    def _ch(self, A, B) -> np.ndarray: ...

    def _k_g2(self, A, B):
        """``(_k(A, B), _g2(A, B))`` together (fused in stationary kernels)."""
        return self._k(A, B), self._g2(A, B)

    def _g1_ch(self, A, B):
        """``(_g1(A, B), _ch(A, B))`` together (fused in stationary kernels)."""
        return self._g1(A, B), self._ch(A, B)

    def __call__(self, A, B) -> np.ndarray:
        """Gram matrix ``k(a_i, b_j)``, shape ``(p, m)``."""
        return self._k(*self._pair(A, B))

    def diag(self, A: ArrayLike) -> np.ndarray:
        """``k(a_i, a_i)``, shape ``(p,)``."""
        A, _ = self._pair(A, A)
        return self._diag(A)

    def grad_first(self, A: ArrayLike, B: ArrayLike) -> np.ndarray:
        """``d k(a, b) / d a``, shape ``(p, m, d)``."""
        return self._g1(*self._pair(A, B))

    def grad_second(self, A: ArrayLike, B: ArrayLike) -> np.ndarray:
        """``d k(a, b) / d b``, shape ``(p, m, d)``."""
        return self._g2(*self._pair(A, B))

    def cross_hessian(self, A: ArrayLike, B: ArrayLike) -> np.ndarray:
        """``d^2 k(a, b) / d a_s d b_t``, shape ``(p, m, d, d)``."""
        return self._ch(*self._pair(A, B))

    def grad_cov(self, x: ArrayLike) -> np.ndarray:
        """Prior covariance ``grad k(x, x) grad^T`` of the gradient at ``x``, shape ``(d, d)``."""
        x = check_array("x", x, ndim=1)
        self._check_dim(x.shape[0])
        return self._ch(x[None, :], x[None, :])[0, 0]

    def grad_diag(self, A: ArrayLike) -> np.ndarray:
        """``d k(a, a) / d a`` for each row of ``A``, shape ``(p, d)``."""
        A, _ = self._pair(A, A)
        return self._gdiag(A)

    def _gdiag(self, A) -> np.ndarray:
        if self.stationary:
            return np.zeros_like(A)
        idx = np.arange(A.shape[0])
        return self._g1(A, A)[idx, idx] + self._g2(A, A)[idx, idx]


class _Stationary(Kernel):
    """``k(a, b) = s^2 phi(||(a - b) / l||)`` with scalar or ARD lengthscale ``l``."""

    stationary = True

    def __init__(self, lengthscale: ArrayLike = 1.0, outputscale: float = 1.0) -> None:
        self.lengthscale = lengthscale
        self.outputscale = outputscale
        self._ell = _lengthscale(lengthscale)
        self._s2 = check_positive("outputscale", outputscale)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(lengthscale={self.lengthscale!r}, "
                f"outputscale={self.outputscale!r})")

    def _check_dim(self, d: int) -> None:
        if self._ell.ndim == 1 and self._ell.size != d:
            raise ValueError(
                f"lengthscale has {self._ell.size} entries but the inputs have d={d}"
            )

    def _ell2(self, d: int) -> np.ndarray:
        cached = getattr(self, "_ell2_cache", None)
        if cached is None or cached.shape[0] != d:
            cached = np.broadcast_to(self._ell**2, (d,)).copy()
            self._ell2_cache = cached
        return cached

    def _diff(self, A, B):
        """``u = (a - b) / l^2`` (p, m, d) and the scaled distance ``r`` (p, m)."""
        ell2 = self._ell2(A.shape[1])
        diff = A[:, None, :] - B[None, :, :]
        u = diff / ell2
        r2 = np.einsum("pmd,pmd->pm", diff, u)
        return u, np.sqrt(np.maximum(r2, 0.0)), ell2

    def _diag(self, A) -> np.ndarray:
        return np.full(A.shape[0], self._s2)

    def _g2(self, A, B) -> np.ndarray:
        return -self._g1(A, B)

    # Radial profile: k = s2 * phi(r); dk/da = -g(r) u; cross-Hessian = g(r) I / l^2 - h(r) u u'
    # (u = (a - b) / l^2). Subclasses give phi, g and h; the fused methods share one _diff.
    def _profile(self, r):
        raise NotImplementedError

    def _k(self, A, B) -> np.ndarray:
        _, r, _ = self._diff(A, B)
        return self._profile(r)[0]

    def _g1(self, A, B) -> np.ndarray:
        u, r, _ = self._diff(A, B)
        return -u * self._profile(r)[1][..., None]

    def _ch(self, A, B) -> np.ndarray:
        u, r, ell2 = self._diff(A, B)
        _, g, h = self._profile(r)
        return (g[..., None, None] * np.diag(1.0 / ell2)
                - h[..., None, None] * (u[..., :, None] * u[..., None, :]))

    def _k_g2(self, A, B):
        u, r, _ = self._diff(A, B)
        k, g, _ = self._profile(r)
        return k, u * g[..., None]

    def _g1_ch(self, A, B):
        u, r, ell2 = self._diff(A, B)
        _, g, h = self._profile(r)
        ch = (g[..., None, None] * np.diag(1.0 / ell2)
              - h[..., None, None] * (u[..., :, None] * u[..., None, :]))
        return -u * g[..., None], ch


class RBF(_Stationary):
    """Squared-exponential kernel ``s^2 exp(-||(a - b) / l||^2 / 2)``.

    ``lengthscale`` is a scalar or a length-``d`` array (ARD); ``outputscale`` is ``s^2``.
    Infinitely differentiable, so Assumption 3.5 of Sopa et al. 2025 holds.
    """

    def _profile(self, r):
        # k = s2 exp(-r^2/2); g = k (so dk/da = -u k); h = k (cross-Hessian k (I/l^2 - u u'))
        k = self._s2 * np.exp(-0.5 * r**2)
        return k, k, k


class Matern52(_Stationary):
    """Matern-5/2 kernel ``s^2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)``, ``r = ||(a-b)/l||``.

    Twice differentiable, so the gradient GP exists; it is *not* four times differentiable,
    so Assumption 3.5 of Sopa et al. 2025 (needed by the convergence theorems, not by
    privacy) fails.
    """

    _SQ5 = math.sqrt(5.0)

    def _profile(self, r):
        # k = s2 (1 + sqrt5 r + 5 r^2/3) e^{-sqrt5 r}; dk/da = -g u with
        # g = (5/3) s2 (1 + sqrt5 r) e^{-sqrt5 r};
        # cross-Hessian g I/l^2 - (25/3) s2 e^{-sqrt5 r} u u'
        e = np.exp(-self._SQ5 * r)
        k = self._s2 * (1.0 + self._SQ5 * r + 5.0 * r**2 / 3.0) * e
        g = (5.0 / 3.0) * self._s2 * (1.0 + self._SQ5 * r) * e
        return k, g, (25.0 / 3.0) * self._s2 * e


class Polynomial(Kernel):
    """Polynomial kernel ``s^2 (a^T b + c)^p`` (Sopa et al. 2025, Appendix E.3 uses ``p=2, c=1``).

    Not stationary; its RKHS is the polynomials of degree ``<= p``, so for ``p = 2`` it holds
    the quadratic negative log-likelihood of the Normal location model exactly.
    """

    stationary = False

    def __init__(self, degree: int = 2, offset: float = 1.0, outputscale: float = 1.0):
        self.degree = degree
        self.offset = offset
        self.outputscale = outputscale
        self._p = check_int("degree", degree, low=1)
        self._c = check_real("offset", offset, low=0.0)
        self._s2 = check_positive("outputscale", outputscale)

    def __repr__(self) -> str:
        return (f"Polynomial(degree={self.degree!r}, offset={self.offset!r}, "
                f"outputscale={self.outputscale!r})")

    def _t(self, A, B) -> np.ndarray:
        return A @ B.T + self._c

    def _k(self, A, B) -> np.ndarray:
        return self._s2 * self._t(A, B) ** self._p

    def _diag(self, A) -> np.ndarray:
        return self._s2 * (np.einsum("pd,pd->p", A, A) + self._c) ** self._p

    def _g1(self, A, B) -> np.ndarray:
        coef = self._s2 * self._p * self._t(A, B) ** (self._p - 1)
        return coef[..., None] * B[None, :, :]

    def _g2(self, A, B) -> np.ndarray:
        coef = self._s2 * self._p * self._t(A, B) ** (self._p - 1)
        return coef[..., None] * A[:, None, :]

    def _ch(self, A, B) -> np.ndarray:
        # d/db_t [s^2 p t^(p-1) b_s] = s^2 p [(p-1) t^(p-2) a_t b_s + t^(p-1) delta_st]
        t = self._t(A, B)
        d = A.shape[1]
        p = self._p
        lin = self._s2 * p * t ** (p - 1)
        out = lin[..., None, None] * np.eye(d)
        if p >= 2:
            quad = self._s2 * p * (p - 1) * t ** (p - 2)
            out = out + quad[..., None, None] * (B[None, :, :, None] * A[:, None, None, :])
        return out


_KERNELS = {"rbf": RBF, "matern52": Matern52, "polynomial": Polynomial}


def make_kernel(name: str, **params: Any) -> Kernel:
    """Kernel by name: ``"rbf"``, ``"matern52"`` or ``"polynomial"``."""
    if name not in _KERNELS:
        raise ValueError(f"kernel must be one of {sorted(_KERNELS)}, got {name!r}")
    return _KERNELS[name](**params)

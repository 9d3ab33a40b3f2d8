"""l_p geometry: norms, dual exponents, linear-minimization oracles, projections, clipping,
and the regularity constants behind the generalized Gaussian mechanism.

Conventions
-----------
* Vectors live on the **last** axis; every function is batched over any leading axes
  (``(..., d)``) with numpy calls only — no Python loop over rows or coordinates.
* ``p`` is the exponent of the parameter norm, ``q = p / (p - 1)`` its dual
  (``1 <-> inf``, ``2 <-> 2``). ``p = numpy.inf`` is accepted everywhere.
* Inputs are validated with :mod:`dpbandits._validation`: NaN/inf entries, bad exponents,
  non-positive radii and negative bounds raise ``ValueError``/``TypeError`` naming the
  parameter.
* Row norms are computed as ``m ||x / m||_q`` with ``m = max_i |x_i|``: squares of tiny
  entries cannot underflow to zero and powers of huge entries cannot overflow.

Rows with a certified norm bound (the one clipping / normalizing primitive)
---------------------------------------------------------------------------
:func:`clip_rows` (rows scaled into ``||x||_q <= c``) and :func:`normalize_rows` (every
non-zero row scaled onto norm ``c``, from inside) are the package's only ways to bound a row's
norm; their validated forms are :func:`clip_to_norm` and :func:`normalize_to_norm`, and
:func:`clip_limits` gives the two thresholds to kernels that scale a row by one factor. The
promise is about the floats returned: the **exact** (real-number) ``l_q`` norm of every
output row is ``<= c``. A computed norm is accurate to a relative ``eta = (2d + 16) u``
(:func:`norm_error_bound`, ``u = 2^-53``), so a row is kept when its computed norm is at
most ``limit = c (1 - eta - 4u)`` and otherwise scaled to ``target = c (1 - 3 eta - 12 u)``,
then re-checked (a row that fails is shrunk again, and set to zero as the last resort: only
reachable for bounds below ``2^-800``, checked on an exactly rescaled copy). Rows between
``limit`` and ``c`` therefore move by at most ``3 eta + 12 u`` relative; callers count a
row as clipped by their own rule (normally ``norm > c``). ``q = inf`` is exact: no margin, the
scaled row is clipped coordinate-wise at ``c``. This bounds each row; sums of rows round as
well (Casacuberta, Shoemate, Vadhan & Wagaman 2022), which is outside this promise.

Regularity (Han et al. 2022, Definition 2.2, Lemmas 3.2 and 3.3)
----------------------------------------------------------------
A norm ``||.||`` (here the dual norm ``l_q`` in which gradient sensitivities are measured) is
*kappa-regular* with smooth norm ``||.||_+`` if there is ``1 <= kappa_+ <= kappa`` such that
``||.||_+`` is ``kappa_+``-smooth and ``||x||^2 <= ||x||_+^2 <= (kappa / kappa_+) ||x||^2``.
The generalized Gaussian mechanism (Lemma 2.1) with density ``exp(-||z||_+^2 / (2 sigma^2))``
and ``sigma^2 = 2 kappa log(1/delta) s^2 / eps^2`` is then (eps, delta)-DP for l_q-sensitivity
``s``. :func:`noise_geometry` returns the ``kappa`` and the smooth norm
``||z||_+ = scale * ||z||_{q_plus}`` to plug in; see :func:`q_plus` for how the paper's
Lemma 3.2 is read so that the pair is consistent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import (
    as_float64,
    check_array,
    check_int,
    check_nonnegative,
    check_p,
    check_positive,
    check_real,
)

__all__ = [
    "NoiseGeometry",
    "GradientRows",
    "clip_limits",
    "clipped_coefficients",
    "clip_row_l2_into",
    "clip_rows",
    "clip_to_norm",
    "dual_exponent",
    "gradient_rows",
    "kappa_q",
    "lmo_lp_ball",
    "lp_norm",
    "noise_geometry",
    "norm_error_bound",
    "normalize_rows",
    "normalize_to_norm",
    "plus_norm",
    "project_l1_ball",
    "project_l2_ball",
    "project_linf_ball",
    "project_lp_ball",
    "q_plus",
]

_EPS = np.finfo(np.float64).eps
_U = 2.0**-53  # unit roundoff of float64
#: below this bound computed norms lose their relative precision (subnormal range): the
#: certificate is then checked on rows multiplied by ``_UP`` (a power of two: exact)
_TINY_BOUND = 2.0**-800
_UP = 2.0**600
_TINY_NORMAL = 2.0**-1022  # smallest normal float64


# --------------------------------------------------------------------------- helpers
def _check_vectors(name: str, x: ArrayLike) -> np.ndarray:
    """A finite float array with at least one axis and a non-empty last axis; the error for
    a NaN or infinite entry names the parameter, the first such entry and its value."""
    arr = check_array(name, x, finite=False)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(
            f"{name} must contain only finite values (found NaN or inf): "
            f"{name}[{', '.join(map(str, bad))}] = {arr[bad]!r}; every finite float is allowed"
        )
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(
            f"{name} must have shape (..., d) with d >= 1 (vectors on the last axis), "
            f"got shape {arr.shape}"
        )
    return arr


def _lp_norm_lastaxis(x: np.ndarray, p: float) -> np.ndarray:
    """l_p norm over the last axis, unvalidated, scaled by the max entry: no square of a tiny
    entry underflows to zero and no power of a large one overflows; the result is ``inf``
    only when the norm itself exceeds the largest float. Relative error at most
    :func:`norm_error_bound` (for results above ``2^-900``)."""
    a = np.abs(x)
    if p == 1.0:
        with np.errstate(over="ignore"):
            s = a.sum(axis=-1)
        if np.all(np.isfinite(s)):
            return s
    m = a.max(axis=-1)
    if math.isinf(p):
        return m
    u = a / np.where(m > 0, m, 1.0)[..., None]  # entries in [0, 1]
    with np.errstate(over="ignore"):  # only a norm above the largest float overflows
        if p == 1.0:  # the plain sum overflowed somewhere: the scaled sum there
            return np.where(np.isfinite(s), s, m * u.sum(axis=-1))
        return m * _unit_norm(u, p)


def _unit_norm(u: np.ndarray, p: float) -> np.ndarray:
    """``||u||_p`` over the last axis of non-negative rows scaled to ``max u = 1`` (or zero
    rows), ``1 <= p < inf``: the factor that multiplies ``m`` in :func:`_lp_norm_lastaxis`."""
    if p == 1.0:
        return u.sum(axis=-1)
    if p == 2.0:
        return np.sqrt(np.einsum("...i,...i->...", u, u))
    return np.sum(u**p, axis=-1) ** (1.0 / p)


# --------------------------------------------------------------------------- norms
def dual_exponent(p: float) -> float:
    """Hölder conjugate ``q`` of ``p`` in ``[1, inf]``: ``1/p + 1/q = 1``.

    ``dual_exponent(1) == inf``, ``dual_exponent(inf) == 1``, ``dual_exponent(2) == 2``.
    """
    p = check_p("p", p)
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_norm(x: ArrayLike, p: float, axis: int = -1) -> np.ndarray:
    """``||x||_p`` along ``axis`` (default: the last axis), for ``p`` in ``[1, inf]``.

    Computed as ``m * ||x / m||_p`` with ``m = max |x_i|`` so large ``p`` cannot overflow.
    Returns an array with ``axis`` removed (a numpy scalar for a single vector).
    """
    p = check_p("p", p)
    arr = check_array("x", x)
    if arr.ndim < 1:
        raise ValueError(f"x must have at least one axis, got shape {arr.shape}")
    axis = check_int("axis", axis, low=-arr.ndim, high=arr.ndim - 1)
    return _lp_norm_lastaxis(np.moveaxis(arr, axis, -1), p)


# --------------------------------------------------------------------------- LMO
def lmo_lp_ball(grad: ArrayLike, p: float, radius: float) -> np.ndarray:
    """Linear-minimization oracle ``argmin_{||v||_p <= radius} <grad, v>`` (closed form).

    * ``p = 1``: ``-radius * sign(g_j) e_j`` with ``j = argmax_i |g_i|`` (first maximizer);
    * ``p = inf``: ``-radius * sign(g)``;
    * ``1 < p < inf``: ``-radius * sign(g) |g|^{q-1} / ||g||_q^{q-1}`` (``q`` dual to ``p``).

    In every case ``<g, v> = -radius ||g||_q`` (Hölder equality). A zero gradient row gives the
    zero vector. ``grad`` has shape ``(..., d)``; the result has the same shape.
    """
    p = check_p("p", p)
    radius = check_positive("radius", radius)
    g = _check_vectors("grad", grad)
    if p == 1.0:
        flat = g.reshape(-1, g.shape[-1])
        j = np.argmax(np.abs(flat), axis=-1)
        rows = np.arange(flat.shape[0])
        v = np.zeros_like(flat)
        v[rows, j] = -radius * np.sign(flat[rows, j])
        return v.reshape(g.shape)
    if math.isinf(p):
        return -radius * np.sign(g)
    q = p / (p - 1.0)
    a = np.abs(g)
    m = a.max(axis=-1, keepdims=True)
    u = a / np.where(m > 0, m, 1.0)  # entries in [0, 1]: no overflow for large q
    w = u ** (q - 1.0)
    nq = np.sum(u**q, axis=-1, keepdims=True) ** ((q - 1.0) / q)  # ||u||_q^{q-1} >= 1 if m>0
    return -radius * np.sign(g) * w / np.where(m > 0, nq, 1.0)


# --------------------------------------------------------------------------- projections
def project_l2_ball(x: ArrayLike, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{||v||_2 <= radius}``: rows outside are rescaled."""
    radius = check_positive("radius", radius)
    x = _check_vectors("x", x)
    n = _lp_norm_lastaxis(x, 2.0)
    scale = np.where(n > radius, radius / np.where(n > 0, n, 1.0), 1.0)
    return x * scale[..., None]


def project_linf_ball(x: ArrayLike, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{||v||_inf <= radius}``: coordinate-wise clipping."""
    radius = check_positive("radius", radius)
    x = _check_vectors("x", x)
    return np.clip(x, -radius, radius)


def project_l1_ball(x: ArrayLike, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{||v||_1 <= radius}`` (sort-based, Duchi et al. 2008).

    For a row outside the ball, with ``u`` the absolute values sorted decreasingly,
    ``rho = max{j : u_j - (sum_{i<=j} u_i - radius)/j > 0}`` and
    ``theta = (sum_{i<=rho} u_i - radius)/rho``, the projection is
    ``sign(x) * max(|x| - theta, 0)``. Vectorized over all rows at once; O(d log d) per row.
    """
    radius = check_positive("radius", radius)
    x = _check_vectors("x", x)
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    a = np.abs(flat)
    out = flat.copy()
    outside = a.sum(axis=-1) > radius
    if np.any(outside):
        ao = a[outside]
        u = -np.sort(-ao, axis=-1)
        css = np.cumsum(u, axis=-1)
        k = np.arange(1, d + 1, dtype=np.float64)
        cond = u - (css - radius) / k > 0  # column 0 is always True
        rho = d - np.argmax(cond[:, ::-1], axis=-1)  # 1-based index of the last True
        theta = (css[np.arange(ao.shape[0]), rho - 1] - radius) / rho
        out[outside] = np.sign(flat[outside]) * np.maximum(ao - theta[:, None], 0.0)
    return out.reshape(x.shape)


def _lp_ball_kkt(a: np.ndarray, p: float, tol: float, max_iter: int = 100) -> np.ndarray:
    """Projection of non-negative rows ``a`` (N, d), all with ``||a||_p > 1``, onto the unit
    l_p ball, for ``1 < p < inf``. Returns ``y`` (N, d), ``y >= 0``, ``||y||_p = 1``.

    KKT: ``y_i + lam * y_i^{p-1} = a_i`` and ``sum_i y_i^p = 1``. For fixed ``lam`` each
    ``y_i(lam)`` is the unique root in ``[0, a_i]`` of an increasing function (inner
    safeguarded Newton); ``F(lam) = sum_i y_i(lam)^p - 1`` is decreasing, and the outer loop
    runs safeguarded Newton on ``lam`` with the bracket

    * ``lam >= max(max_i a_i - 1, 0)``: at the solution ``y_i <= 1`` and ``y_i^{p-1} <= 1``,
      so ``lam >= a_i - y_i >= a_i - 1``; for such ``lam`` every ``y_i(lam) <= 1`` (so the
      powers never overflow);
    * ``lam <= ||a||_q``: since ``y_i <= (a_i/lam)^{1/(p-1)}``, ``sum y^p <= ||a||_q^q/lam^q``.
    """
    n_rows = a.shape[0]
    pm1 = p - 1.0
    amax = a.max(axis=-1, keepdims=True)
    lo_l = np.maximum(amax - 1.0, 0.0)
    hi_l = _lp_norm_lastaxis(a, p / pm1)[:, None]
    atol = 1e-3 * _EPS  # absolute inner tolerance (solution coordinates are <= 1)

    def inner(lam: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
            log_ratio = np.log(a) - np.log(lam)
            hi = np.minimum(np.minimum(a, 1.0), np.exp(log_ratio / pm1))
            hi = np.where(lam > 0, hi, a)
            lo = np.zeros_like(a)
            y = hi.copy()
            for _ in range(max_iter):
                ypm1 = y**pm1
                h = y + lam * ypm1 - a
                hi = np.where(h > 0, y, hi)
                lo = np.where(h < 0, y, lo)
                dh = 1.0 + lam * pm1 * ypm1 / y  # = 1 + lam (p-1) y^{p-2}
                y_new = y - h / dh
                # closed bracket: a converged Newton step may round onto an end point
                bad = ~((y_new >= lo) & (y_new <= hi))
                y_new = np.where(h == 0, y, np.where(bad, 0.5 * (lo + hi), y_new))
                # converged once the step is at the rounding level of h (~ eps * a) / h'
                done = (np.abs(y_new - y) <= 4.0 * _EPS * (y_new + a / dh) + atol) | (
                    hi - lo <= 4.0 * _EPS * hi + atol
                )
                y = y_new
                if np.all(done):
                    break
        return np.where(lam > 0, y, a)

    lam = lo_l.copy()
    lo, hi = lo_l.copy(), hi_l.copy()
    active = np.ones((n_rows, 1), dtype=bool)
    y = inner(lam)
    for _ in range(max_iter):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            yp = y**p
            f = yp.sum(axis=-1, keepdims=True) - 1.0
            # dF/dlam = -p sum y^p / (y^{2-p} + lam (p-1))   (implicit differentiation)
            den = np.where(y > 0, y ** (2.0 - p) + lam * pm1, np.inf)
            df = -p * np.sum(np.where(y > 0, yp / den, 0.0), axis=-1, keepdims=True)
            lo = np.where(f > 0, lam, lo)
            hi = np.where(f < 0, lam, hi)
            active = active & (np.abs(f) > tol) & (hi - lo > 4.0 * _EPS * hi)
            if not np.any(active):
                break
            cand = lam - f / df
            ok = np.isfinite(cand) & (cand >= lo) & (cand <= hi)
            mid = np.where(lo > 0, np.sqrt(lo * hi), 0.5 * hi)
            new = np.where(ok, cand, mid)
            active = active & (new != lam)  # stalled at rounding level: converged
            if not np.any(active):
                break
            lam = np.where(active, new, lam)
        y = np.where(active, inner(lam), y)
    norm = _lp_norm_lastaxis(y, p)[:, None]
    return y / norm


def project_lp_ball(x: ArrayLike, p: float, radius: float, tol: float = 1e-10) -> np.ndarray:
    """Euclidean projection onto ``{||v||_p <= radius}`` for any ``p`` in ``[1, inf]``.

    ``p = 1, 2, inf`` use the exact special-case projections. For ``1 < p < inf`` (``p != 2``)
    the KKT system ``|v_i| + lam |v_i|^{p-1} = |x_i|``, ``||v||_p = radius`` is solved by
    safeguarded Newton/bisection on the multiplier ``lam`` (outer) and on each coordinate
    (inner), vectorized over rows.

    Tolerance: the multiplier loop stops when ``| ||v/radius||_p^p - 1 | <= tol`` (or the
    bracket on ``lam`` is at machine precision); coordinates are solved to machine precision.
    The returned rows are then rescaled onto the sphere ``||v||_p = radius`` (exactly, up to
    rounding), so they are feasible to ``radius * (1 + O(eps))`` and within ``O(tol)``
    (relative) of the exact projection. Rows already inside the ball are returned unchanged.
    """
    p = check_p("p", p)
    radius = check_positive("radius", radius)
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1e-2)
    x = _check_vectors("x", x)
    if p == 1.0:
        return project_l1_ball(x, radius)
    if p == 2.0:
        return project_l2_ball(x, radius)
    if math.isinf(p):
        return project_linf_ball(x, radius)
    return _project_lp_general(x, p, radius, tol)


def _project_lp_general(x: np.ndarray, p: float, radius: float, tol: float) -> np.ndarray:
    """The KKT route of :func:`project_lp_ball` (also valid for p = 2; used in tests)."""
    d = x.shape[-1]
    flat = x.reshape(-1, d)
    out = flat.copy()
    outside = _lp_norm_lastaxis(flat, p) > radius
    if np.any(outside):
        xo = flat[outside]
        y = _lp_ball_kkt(np.abs(xo) / radius, p, tol)
        out[outside] = np.sign(xo) * y * radius
    return out.reshape(x.shape)


# --------------------------------------------------------------------------- clipping
def norm_error_bound(q: float, d: int) -> float:
    """``eta``: a bound on the relative error of a computed ``l_q`` norm of a ``d``-vector
    (this module's scaled norm, the kernels' twins, any summation order), for norms above
    ``2^-900``: ``0`` for ``q = inf`` (a maximum is exact), else ``(2d + 16) u``.

    Derivation (``u = 2^-53``): ``m`` is exact; each ``|x_i| / m`` has relative error ``u``
    (absolute ``2^-1075`` if subnormal, negligible against the entry 1); its ``q``-th power
    ``(q + 1) u`` (``pow`` within one ulp); a sum of ``d`` non-negative terms in any order
    ``(d - 1) u / (1 - (d - 1) u)``; the ``1/q``-th power divides all that by ``q`` and adds
    ``u``; the product with ``m`` adds ``u``: in all at most ``(d + 5) u`` for ``q >= 1``,
    doubled for second-order terms and the kernels' extra rounding of ``x_i / m``.
    """
    if math.isinf(q):
        return 0.0
    return (2.0 * d + 16.0) * _U


def _limits(bound: float, q: float, d: int) -> tuple[float, float]:
    """``(limit, target)`` of :func:`clip_limits`, unvalidated; self-contained plain Python
    so that compiled kernels use the very same constants (they compile this function)."""
    if math.isinf(q) or math.isinf(bound):
        return bound, bound
    eta = (2.0 * d + 16.0) * 2.0**-53  # norm_error_bound(q, d)
    # 1 - k u is exact for k < 2^52; the products round by at most u (within the slack)
    return bound * (1.0 - eta - 4.0 * _U), bound * (1.0 - 3.0 * eta - 12.0 * _U)


def clip_limits(bound: float, q: float, d: int) -> tuple[float, float]:
    """``(limit, target)`` for scaling ``d``-dimensional rows into ``||.||_q <= bound``.

    * a row whose computed norm is ``<= limit`` has exact norm ``<= bound``;
    * a row scaled by ``target / n`` (``n`` its computed norm, one rounding per entry, or
      two: a factor times ``x_i / m``) has exact norm ``<= bound``; the check of
      :func:`clip_rows` confirms it, and :func:`gradient_rows` relies on it.

    ``bound`` must be ``0``, ``inf`` or at least ``2^-800`` (about ``1.5e-241``): below
    that, computed norms have no relative precision left and one factor cannot be certified.
    """
    q = check_p("q", q)
    bound = check_nonnegative("bound", bound, allow_inf=True)
    d = check_int("d", d, low=1)
    if 0.0 < bound < _TINY_BOUND:
        raise ValueError(
            f"bound must be 0, inf or at least 2^-800 ({_TINY_BOUND:.3g}) to be certified by "
            f"one scale factor, got {bound!r}"
        )
    return _limits(bound, q, d)


@dataclass(frozen=True)
class GradientRows:
    """A design's rows prepared for clipping per-sample gradients ``g_i = psi_i x_i`` to
    ``||g_i||_q <= bound`` with one coefficient per row (:func:`gradient_rows`).

    The clipped gradient is ``coef_i * rows_i`` with ``coef_i`` from
    :func:`clipped_coefficients`. For an ordinary row ``rows_i = x_i``, ``unclipped_i = 1``
    and ``clipped_i = target / ||x_i||_q``, so an unclipped gradient is ``psi_i x_i`` bit for
    bit and a clipped one ``sign(psi_i) (target / ||x_i||) x_i``. The factor is formed from
    the row alone, never as ``target / (|psi| ||x||)``: that quotient is subnormal for a huge
    ``psi`` and keeps too few bits to hold the bound. A row whose norm is outside the range
    where ``target / ||x||`` is a normal float with full precision (norms below ``2^-890``,
    above ``target 2^1000`` or infinite) is replaced by its certified unit row
    (:func:`normalize_rows`), with ``unclipped_i = ||x_i||`` and ``clipped_i = target``.

    Arrays have the rows' leading shape (``norms``, ``unclipped``, ``clipped``: ``(n,)`` or
    ``(R, n)``; ``rows`` that shape plus ``d``). ``limit``, ``target``: :func:`clip_limits`.
    """

    rows: np.ndarray
    norms: np.ndarray
    unclipped: np.ndarray
    clipped: np.ndarray
    bound: float
    limit: float
    target: float


def gradient_rows(x: np.ndarray, q: float, bound: float) -> GradientRows:
    """:class:`GradientRows` of the float rows ``x`` (``(..., d)``, finite) for the clip
    bound ``bound`` in ``l_q`` (``0``, ``inf`` or at least ``2^-800``, :func:`clip_limits`).

    Every coefficient :func:`clipped_coefficients` returns, times its row with one rounding
    per entry, has exact norm ``<= bound``, for every finite ``psi`` and row: ordinary rows by
    the margins of :func:`clip_limits` (for ``q = inf``, where there is no margin, the
    clipped factor is rounded down until ``factor * ||x||_inf <= target`` after rounding,
    which bounds every entry by monotonicity); replaced rows because their exact norm is at
    most 1 and the coefficient at most ``limit`` or ``target`` in magnitude."""
    limit, target = clip_limits(bound, q, x.shape[-1])
    norms = _lp_norm_lastaxis(x, q)
    ones = np.ones_like(norms)
    if bound == 0.0 or math.isinf(bound):  # nothing is scaled: zero or no clipping
        return GradientRows(x, norms, ones, np.zeros_like(norms), bound, limit, target)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        factor = target / norms
        ordinary = ((norms >= 2.0**-890) & np.isfinite(norms)
                    & (factor >= 2.0**-1000) & (factor <= 2.0**1000))
        zero = norms == 0.0  # never scaled: |psi| * 0 is never above the limit
        factor = np.where(zero, 0.0, factor)
        ordinary |= zero
        if math.isinf(q):
            for _ in range(4):  # the rounded product must not exceed target
                over = ordinary & (factor * norms > target)
                if not over.any():
                    break
                factor = np.where(over, np.nextafter(factor, 0.0), factor)
    if ordinary.all():
        return GradientRows(x, norms, ones, factor, bound, limit, target)
    rows = np.array(x, dtype=np.float64, copy=True)
    rows[~ordinary] = normalize_rows(x[~ordinary], q, 1.0)[0]
    return GradientRows(rows, norms, np.where(ordinary, 1.0, norms),
                        np.where(ordinary, factor, target), bound, limit, target)


def clipped_coefficients(psi: np.ndarray, norms: np.ndarray, unclipped: np.ndarray,
                         clipped: np.ndarray, limit: float, bound: float
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of the clipped gradients ``psi_i x_i`` on :class:`GradientRows` (the
    arrays of one set of rows, broadcast with ``psi``) and the mask of the clipped ones
    (computed norm ``|psi| ||x||`` above ``bound``, or not a number).

    ``coef = psi * unclipped`` where ``|psi| ||x|| <= limit``; ``sign(psi) * clipped`` where
    it is above (an infinite ``psi`` included); ``0`` where it is NaN (a NaN ``psi``, or
    ``0 * inf``): no gradient can be formed there and zero is within every bound.
    Unvalidated (hot loops)."""
    with np.errstate(over="ignore", invalid="ignore"):
        size = np.abs(psi) * norms
        coef = np.where(size <= limit, psi * unclipped,
                        np.where(size > limit, np.copysign(clipped, psi), 0.0))
    return coef, ~(size <= bound)


def clip_row_l2_into(xr: np.ndarray, bound: float, limit: float, target: float,
                     out: np.ndarray) -> float:  # pragma: no cover - compiled twin
    """The compiled kernels' twin of :func:`clip_rows` for one row and ``q = 2``, in plain
    Python that numba compiles (``xr``, ``out`` 1-d float arrays; ``(limit, target)`` from
    :func:`clip_limits` with ``bound >= 2^-800``). Writes the row into ``out`` (unchanged
    when its computed norm is ``<= limit``, else ``(x_i / m) (target / r)`` with ``m`` the
    largest ``|x_i|`` and ``r = ||x / m||_2``) and returns the computed norm ``m r`` (count
    ``norm > bound``). The exact norm of ``out`` is ``<= bound`` (by the error bound of
    :func:`norm_error_bound`, which covers this summation order and rounding; the tests
    compare it with :func:`clip_rows` on adversarial floats)."""
    d = xr.shape[0]
    m = 0.0
    for j in range(d):
        v = abs(xr[j])
        if v > m:
            m = v
    if m == 0.0:
        for j in range(d):
            out[j] = xr[j]
        return 0.0
    ss = 0.0
    for j in range(d):
        v = xr[j] / m
        ss += v * v
    r = math.sqrt(ss)
    nrm = m * r
    if nrm <= limit:
        for j in range(d):
            out[j] = xr[j]
    else:
        f = target / r
        for j in range(d):
            out[j] = (xr[j] / m) * f
    return nrm


def pairwise_sum(a: np.ndarray, n: int) -> float:  # pragma: no cover - compiled twin
    """``a[0] + ... + a[n-1]`` in numpy's order for a contiguous reduction of at most 128
    values (eight running sums, then the rest in turn), so a compiled kernel's norm is the
    numpy path's bit for bit. Plain Python that numba compiles."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - (n % 8):
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[i]
        i += 1
    return res


def row_max(xr: np.ndarray) -> float:  # pragma: no cover - compiled twin
    """``max_i |x_i|`` of a finite row."""
    m = 0.0
    for j in range(xr.shape[0]):
        v = abs(xr[j])
        if v > m:
            m = v
    return m


def unit_lq_norm(xr: np.ndarray, q: float, m: float, work: np.ndarray
                 ) -> float:  # pragma: no cover - compiled twin
    """``(sum_i (|x_i| / m)^q)^(1/q)`` (:func:`_unit_norm` of the row scaled by its largest
    entry ``m > 0``) with numpy's operations and summation order; ``work`` a buffer of the
    row's length."""
    d = xr.shape[0]
    for j in range(d):
        work[j] = (abs(xr[j]) / m) ** q
    return pairwise_sum(work, d) ** (1.0 / q)


def row_lq_norm(xr: np.ndarray, q: float, work: np.ndarray) -> float:  # pragma: no cover
    """The compiled twin of :func:`_lp_norm_lastaxis` for one row of at most 128 entries
    and ``1 < q < inf``, ``q != 2``: ``m`` times :func:`unit_lq_norm`."""
    m = row_max(xr)
    if m == 0.0:
        return 0.0
    return m * unit_lq_norm(xr, q, m, work)


def clip_row_lq_into(xr: np.ndarray, q: float, limit: float, target: float, shrink: float,
                     out: np.ndarray, work: np.ndarray) -> float:  # pragma: no cover
    """The compiled twin of :func:`clip_rows` for one row (at most 128 entries), ``1 < q <
    inf``, ``q != 2`` and bounds of at least ``2^-800`` (``(limit, target)`` from
    :func:`clip_limits`, ``shrink = 1 - 2 eta - 12 u`` as in :func:`_onto`): the same
    operations in the same order (numpy's summation included), so the row written to
    ``out`` is the numpy path's bit for bit and its exact norm is within the bound. Returns
    the row's computed norm."""
    d = xr.shape[0]
    m = row_max(xr)
    nrm = 0.0 if m == 0.0 else m * unit_lq_norm(xr, q, m, work)
    if nrm <= limit:
        for j in range(d):
            out[j] = xr[j]
        return nrm
    f = target / unit_lq_norm(xr, q, m, work)
    for j in range(d):
        out[j] = (xr[j] / m) * f
    for _ in range(3):
        if row_lq_norm(out, q, work) <= limit:
            return nrm
        for j in range(d):
            out[j] *= shrink
    if not row_lq_norm(out, q, work) <= limit:
        for j in range(d):
            out[j] = 0.0
    return nrm


def _certified(x: np.ndarray, q: float, bound: float, norms: np.ndarray) -> np.ndarray:
    """Rows whose exact ``l_q`` norm is provably ``<= bound`` (``norms``: their computed
    norms; ``0 < bound < inf``). For tiny bounds the check runs on the rows times ``2^600``
    (exact), where computed norms have their full relative precision."""
    d = x.shape[-1]
    if math.isinf(q):
        return norms <= bound
    if bound >= _TINY_BOUND:
        return norms <= _limits(bound, q, d)[0]
    small = np.abs(x).max(axis=-1) <= bound  # a larger entry alone breaks the bound
    up = np.where(small[..., None], x, 0.0) * _UP
    return small & (_lp_norm_lastaxis(up, q) <= _limits(bound * _UP, q, d)[0])


def _onto(x: np.ndarray, q: float, bound: float) -> np.ndarray:
    """Every row of ``x`` (2-d) scaled to computed norm ``target`` (zero rows stay zero),
    from the scaled rows ``x / m`` so that nothing overflows or underflows to zero; then
    certified: rows that still fail :func:`_certified` are shrunk again, and set to zero
    after three attempts (reachable only for bounds below ``2^-800``)."""
    d = x.shape[-1]
    m = np.abs(x).max(axis=-1)
    safe = np.where(m > 0, m, 1.0)
    xs = x / safe[:, None]
    if math.isinf(q):
        return np.clip(xs * np.where(m > 0, bound, 0.0)[:, None], -bound, bound)
    target = _limits(bound, q, d)[1]
    r = _unit_norm(np.abs(xs), q)
    out = xs * np.where(m > 0, target / np.where(m > 0, r, 1.0), 0.0)[:, None]
    shrink = 1.0 - 2.0 * norm_error_bound(q, d) - 12.0 * _U
    for _ in range(3):
        bad = ~_certified(out, q, bound, _lp_norm_lastaxis(out, q))
        if not bad.any():
            return out
        out[bad] *= shrink
    bad = ~_certified(out, q, bound, _lp_norm_lastaxis(out, q))
    out[bad] = 0.0
    return out


def clip_to_norm(x: ArrayLike, q: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Scale every row with ``||x||_q > bound`` down into the ball; validated
    :func:`clip_rows`.

    Returns ``(clipped, was_clipped)`` where ``was_clipped`` (shape ``x.shape[:-1]``) marks
    the rows whose computed norm exceeds ``bound``, so callers can count clipping (nothing
    is clipped silently). Every row of ``clipped`` has exact norm ``<= bound`` (module
    docstring: rows within rounding distance of the bound are pulled inside by a relative
    ``3 eta + 12 u`` at most). ``bound = inf`` clips nothing; ``bound = 0`` maps every
    non-zero row to zero. NaN or infinite entries raise ``ValueError`` naming the entry.
    """
    q = check_p("q", q)
    bound = check_nonnegative("bound", bound, allow_inf=True)
    x = _check_vectors("x", x)
    clipped, norms = clip_rows(x, q, bound)
    return (clipped.copy() if clipped is x else clipped), norms > bound


def clip_rows(x: np.ndarray, q: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """The unvalidated core of :func:`clip_to_norm` for hot loops: ``(clipped, norms)``,
    ``norms`` the computed row norms before clipping (count ``norms > bound``); ``clipped``
    is ``x`` itself when no row needs to move (``x`` a finite float array, ``q`` in
    ``[1, inf]``, ``bound >= 0``). Every row of ``clipped`` has exact norm ``<= bound``.

    Rows whose computed norm is at most ``limit`` (:func:`clip_limits`) are returned
    unchanged, bit for bit. ``q = inf``: over-bound rows are ``x * (bound / max|x|)``,
    clipped coordinate-wise at ``bound`` (exact, no margin). Other ``q``: rows are scaled
    to ``target`` from ``x / max|x|`` and certified (:func:`_onto`). A ``x`` of another
    dtype is converted exactly or refused (:func:`dpbandits._validation.as_float64`).
    """
    if x.dtype != np.float64:
        x = as_float64("x", x)
    norms = _lp_norm_lastaxis(x, q)
    if math.isinf(bound):
        return x, norms
    if bound == 0.0:
        zero = norms > 0.0
        return (np.where(zero[..., None], 0.0, x) if zero.any() else x), norms
    if math.isinf(q):
        was = norms > bound
        if not np.any(was):
            return x, norms
        f = np.where(was, bound / np.where(was, norms, 1.0), 1.0)
        scaled = x * f[..., None]
        lost = was & (f < _TINY_NORMAL)  # a subnormal factor has no relative precision:
        if np.any(lost):  # scale by the max entry first there
            scaled[lost] = x[lost] / norms[lost][:, None] * bound
        return np.clip(scaled, -bound, bound), norms
    move = ~_certified(x, q, bound, norms)
    if not np.any(move):
        return x, norms
    clipped = np.array(x, dtype=np.float64, copy=True)
    clipped[move] = _onto(x[move], q, bound)
    return clipped, norms


def normalize_rows(x: np.ndarray, q: float = 2.0, bound: float = 1.0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Every non-zero row scaled onto norm ``bound`` from inside (``u = bound x / ||x||_q``
    up to a relative ``3 eta + 12 u``, :func:`norm_error_bound`), zero rows (also ``-0.0``) to
    zero; the unvalidated core of :func:`normalize_to_norm`. Returns ``(u, norms)`` with
    ``norms`` the computed norms of ``x`` (``inf`` when a norm exceeds the largest float;
    ``u`` is still the right direction). Every row of ``u`` has exact norm ``<= bound``,
    for every finite input: tiny rows (squares that underflow) and huge ones (squares that
    overflow) included. ``0 < bound < inf``; ``x`` of another dtype than float64 is converted
    exactly or refused (:func:`dpbandits._validation.as_float64`)."""
    if x.dtype != np.float64:
        x = as_float64("x", x)
    norms = _lp_norm_lastaxis(x, q)
    flat = x.reshape(-1, x.shape[-1])
    return _onto(flat, q, bound).reshape(x.shape), norms


def normalize_to_norm(x: ArrayLike, q: float = 2.0, bound: float = 1.0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Validated :func:`normalize_rows`: ``(u, zero)`` with ``zero`` marking the all-zero
    rows (mapped to zero). ``bound`` positive and finite; NaN or infinite entries of ``x``
    raise ``ValueError`` naming the entry."""
    q = check_p("q", q)
    bound = check_positive("bound", bound)
    x = _check_vectors("x", x)
    u, norms = normalize_rows(x, q, bound)
    return u, norms == 0.0


# --------------------------------------------------------------------------- regularity
@dataclass(frozen=True)
class NoiseGeometry:
    """Smooth norm and regularity constant for the dual space ``l_q`` (Han et al. 2022, Sec. 3).

    ``||z||_+ = scale * ||z||_{q_plus}``; ``||.||_+`` is ``kappa_plus``-smooth with
    ``kappa_plus = q_plus - 1`` (>= 1), and
    ``||z||_q^2 <= ||z||_+^2 <= (kappa / kappa_plus) ||z||_q^2`` for every ``z``.
    """

    kappa: float
    q_plus: float
    scale: float = 1.0

    @property
    def kappa_plus(self) -> float:
        """Smoothness constant of ``||.||_+``: ``q_plus - 1`` (l_r is (r-1)-smooth, r >= 2)."""
        return self.q_plus - 1.0


def _q_plus_unchecked(q: float, d: int) -> float:
    if q < 2.0:
        return 2.0  # Lemma 3.3: ||.||_+ is a rescaled l_2 norm
    log_d = math.log(d)
    if q - 1.0 <= math.e**2 * (log_d - 1.0):
        return q  # first branch of Lemma 3.2: ||.||_+ = ||.||_q, kappa = q - 1
    # Second branch, guarded: the smooth norm must be l_r with r >= 2 (l_r is (r-1)-smooth
    # only for r >= 2, and Definition 2.2 needs kappa_+ = r - 1 >= 1). r <= q always holds
    # here: if log d >= 2 then q - 1 > e^2 (log d - 1) >= log d - 1.
    return max(2.0, log_d)


def _kappa_exact(q: float, r: float, d: int) -> float:
    """Smallest kappa making l_q kappa-regular with ||.||_+ = ||.||_r (2 <= r <= q):
    kappa_+ * sup_x ||x||_r^2 / ||x||_q^2 = (r - 1) d^{2/r - 2/q} (sup at the all-ones x)."""
    inv_q = 0.0 if math.isinf(q) else 1.0 / q
    return (r - 1.0) * float(d) ** (2.0 / r - 2.0 * inv_q)


def q_plus(q: float, d: int) -> float:
    """Exponent ``r`` of the smooth norm ``||.||_+ = scale * ||.||_r`` for the dual norm l_q.

    * ``1 <= q < 2`` (``p > 2``, Lemma 3.3): ``r = 2``.
    * ``q >= 2`` (``1 <= p <= 2``, Lemma 3.2): ``r = q`` when ``q - 1 <= e^2 (log d - 1)``,
      otherwise ``r = max(2, log d)``.

    Reading of Lemma 3.2. The paper writes ``q+ = min{q - 1, log d - 1}`` and uses it as the
    exponent of ``||.||_+`` (Algorithm 4). Taken literally that cannot be right: for ``q = 2``
    (p = 2) it gives the l_1 norm, which is not smooth at all. The formula is the *smoothness
    constant* ``kappa_+ = r - 1`` of ``||.||_r`` with ``r = min{q, log d}`` (Bassily et al.
    2021b; ``||.||_r`` is ``(r-1)``-smooth for ``r >= 2``), and the accompanying
    ``kappa_q = min{q - 1, e^2 (log d - 1)}`` is exactly ``(r - 1) d^{2/r - 2/q}`` bounded with
    ``d^{2/log d} = e^2``. So this function returns the exponent ``r = kappa_+ + 1``, switched
    where the paper's ``kappa_q`` switches, and guarded to ``r >= 2`` (the paper's formula
    needs ``log d >= 2``, i.e. ``d >= e^2 ~ 7.4``; for smaller ``d`` we use ``||.||_2``).
    :func:`kappa_q` is then made consistent with whatever ``r`` is returned here.
    """
    q = check_p("q", q)
    d = check_int("d", d, low=1)
    return _q_plus_unchecked(q, d)


def kappa_q(q: float, d: int) -> float:
    """Regularity constant ``kappa_q`` of ``(R^d, ||.||_q)`` for the smooth norm of
    :func:`q_plus` (Han et al. 2022, Lemmas 3.2 and 3.3).

    * ``1 <= q < 2`` (Lemma 3.3): ``kappa = d^{2/q - 1} = d^{1 - 2/p}``.
    * ``q >= 2`` (Lemma 3.2): the paper's ``min{q - 1, e^2 (log d - 1)}``, raised where needed
      to the value the chosen smooth norm ``||.||_r`` actually requires,
      ``max(paper, (r - 1) d^{2/r - 2/q})``. The maximum equals the paper's value whenever
      ``log d >= 2``; it differs only for ``d < e^2`` where the paper's value is too small
      (even negative for ``d <= 2``) and ``r`` is guarded to 2, giving ``d^{1 - 2/q}``.
      Keeping ``kappa >= (r - 1) sup ||x||_r^2 / ||x||_q^2`` is what Lemma 2.1's privacy
      proof needs, so the guard errs towards more noise, never less.
    """
    q = check_p("q", q)
    d = check_int("d", d, low=1)
    return _kappa_unchecked(q, d)


def _kappa_unchecked(q: float, d: int) -> float:
    if q < 2.0:
        return float(d) ** (2.0 / q - 1.0)
    r = _q_plus_unchecked(q, d)
    paper = min(q - 1.0, math.e**2 * (math.log(d) - 1.0))
    return max(paper, _kappa_exact(q, r, d))


def noise_geometry(p: float, d: int) -> NoiseGeometry:
    """Smooth norm and regularity constant for gradients measured in l_q, ``q`` dual to ``p``.

    * ``1 <= p <= 2`` (``q >= 2``, Lemma 3.2): ``kappa = kappa_q(q, d)``,
      ``||.||_+ = ||.||_{q_plus}`` (``scale = 1``).
    * ``p > 2`` (``1 <= q < 2``, Lemma 3.3): ``kappa = d^{1 - 2/p}``, ``q_plus = 2`` and
      ``||.||_+ = d^{1/2 - 1/p} ||.||_2`` (``scale = d^{1/2 - 1/p}``; ``sqrt(d)`` for p = inf).
    """
    p = check_p("p", p)
    d = check_int("d", d, low=1)
    q = dual_exponent(p)
    kappa = _kappa_unchecked(q, d)
    r = _q_plus_unchecked(q, d)
    if q >= 2.0:
        return NoiseGeometry(kappa=kappa, q_plus=r, scale=1.0)
    inv_p = 0.0 if math.isinf(p) else 1.0 / p
    return NoiseGeometry(kappa=kappa, q_plus=2.0, scale=float(d) ** (0.5 - inv_p))


def plus_norm(z: ArrayLike, geometry: NoiseGeometry) -> np.ndarray:
    """``||z||_+ = geometry.scale * ||z||_{geometry.q_plus}`` over the last axis."""
    if not isinstance(geometry, NoiseGeometry):
        raise TypeError(
            f"geometry must be a NoiseGeometry (see noise_geometry), got {type(geometry).__name__}"
        )
    z = _check_vectors("z", z)
    return geometry.scale * _lp_norm_lastaxis(z, geometry.q_plus)

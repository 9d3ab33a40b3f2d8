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

Regularity (seed 000, Definition 2.2, Lemmas 3.2 and 3.3)
---------------------------------------------------------
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
    check_array,
    check_int,
    check_nonnegative,
    check_p,
    check_positive,
    check_real,
)

__all__ = [
    "NoiseGeometry",
    "clip_rows",
    "clip_to_norm",
    "dual_exponent",
    "kappa_q",
    "lmo_lp_ball",
    "lp_norm",
    "noise_geometry",
    "plus_norm",
    "project_l1_ball",
    "project_l2_ball",
    "project_linf_ball",
    "project_lp_ball",
    "q_plus",
]

_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------- helpers
def _check_vectors(name: str, x: ArrayLike) -> np.ndarray:
    """A finite float array with at least one axis and a non-empty last axis."""
    arr = check_array(name, x)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(
            f"{name} must have shape (..., d) with d >= 1 (vectors on the last axis), "
            f"got shape {arr.shape}"
        )
    return arr


def _lp_norm_lastaxis(x: np.ndarray, p: float) -> np.ndarray:
    """l_p norm over the last axis, unvalidated, overflow-safe (scaled by the max entry)."""
    a = np.abs(x)
    if p == 1.0:
        return a.sum(axis=-1)
    m = a.max(axis=-1)
    if math.isinf(p):
        return m
    safe = np.where(m > 0, m, 1.0)
    u = a / safe[..., None]  # entries in [0, 1]: neither overflow nor underflow to 0
    if p == 2.0:
        return m * np.sqrt(np.einsum("...i,...i->...", u, u))
    return m * np.sum(u**p, axis=-1) ** (1.0 / p)


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
def clip_to_norm(x: ArrayLike, q: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Scale every row with ``||x||_q > bound`` down to norm ``bound``.

    Returns ``(clipped, was_clipped)`` where ``was_clipped`` (shape ``x.shape[:-1]``) marks
    the rows that were rescaled, so callers can count clipping (nothing is clipped silently).
    The clipped rows satisfy ``||clipped||_q <= bound`` as computed by :func:`lp_norm` (a final
    ulp-level correction guards against rounding; for a subnormal ``bound`` a row that still
    rounds above it is set to zero). ``bound = inf`` clips nothing; ``bound = 0``
    maps every non-zero row to zero.
    """
    q = check_p("q", q)
    bound = check_nonnegative("bound", bound, allow_inf=True)
    x = _check_vectors("x", x)
    clipped, norms = clip_rows(x, q, bound)
    return (clipped.copy() if clipped is x else clipped), norms > bound


def clip_rows(x: np.ndarray, q: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """The unvalidated core of :func:`clip_to_norm` for hot loops: ``(clipped, norms)`` with
    the row norms before clipping; ``clipped`` is ``x`` itself when no row is over ``bound``
    (``x`` a float array, ``q`` in [1, inf], ``bound >= 0``)."""
    norms = _lp_norm_lastaxis(x, q)
    was = norms > bound
    if not np.any(was):
        return x, norms
    clipped = x * np.where(was, bound / np.where(was, norms, 1.0), 1.0)[..., None]
    if bound > 0:
        again = _lp_norm_lastaxis(clipped, q)
        over = again > bound
        if np.any(over):
            fix = np.where(over, bound / np.where(over, again, 1.0) * (1.0 - 4.0 * _EPS), 1.0)
            clipped = clipped * fix[..., None]
            # only reachable for subnormal bounds (no relative precision left): the zero
            # vector is the one representable point guaranteed to respect the bound
            still = _lp_norm_lastaxis(clipped, q) > bound
            clipped = np.where(still[..., None], 0.0, clipped)
    return clipped, norms


# --------------------------------------------------------------------------- regularity
@dataclass(frozen=True)
class NoiseGeometry:
    """Smooth norm and regularity constant for the dual space ``l_q`` (seed 000, Sec. 3).

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
    :func:`q_plus` (seed 000, Lemmas 3.2 and 3.3).

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

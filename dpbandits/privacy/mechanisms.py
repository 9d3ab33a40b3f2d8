"""Noise samplers, private selection and noise calibration.

Every sampler takes a ``numpy.random.Generator`` first and a ``size`` (leading shape), so one
call serves ``R`` replications (CONTRIBUTING.md, "Rules every change keeps").

Contents
--------
Noise
    :func:`laplace_noise` (from :func:`standard_laplace`: sign times exponential, or by
    inversion), the Gaussian vector :func:`gaussian_noise`,
    :func:`generalized_gaussian_noise`
    (the l_{q+} "generalized Gaussian" of Han et al. 2022, Algorithm 4, Lemma 2.1/3.1).
Random matrices
    :func:`symmetric_gaussian` (independent diagonal and off-diagonal standard deviations,
    mirrored: the law of ``(Z + Z^T)/sqrt 2`` or an i.i.d. triangle) with its deterministic
    half :func:`symmetric_from_normals`, and :func:`wishart_matrix` (Bartlett) with
    :func:`bartlett_factor`, each from the fewest variates its law needs.
Private selection (batched, scores of shape ``(R, m)`` -> indices ``(R,)``)
    :func:`report_noisy_argmax`, :func:`report_noisy_argmin` (Laplace noise; a scale per row
    and excluded candidates allowed, as peeling needs), :func:`gaussian_report_noisy_argmax`,
    :func:`gaussian_report_noisy_argmin` (Gaussian noise) and
    :func:`exponential_mechanism` (``P(i) ∝ exp(score_i / scale)``, by Gumbel-max or by
    inversion, :func:`exponential_mechanism_from_uniforms`), with their
    exact selection probabilities :func:`report_noisy_argmax_probabilities` (numerical
    integration, small ``m``) and :func:`exponential_mechanism_probabilities` (softmax).
Calibration (scale for a target ``(epsilon, delta)`` and a sensitivity)
    :func:`laplace_scale`, :func:`gaussian_sigma_classical` (Dwork & Roth Thm A.1, ε < 1),
    :func:`gaussian_sigma_analytic` (Balle & Wang 2018, Thm 8) and the exact δ of the
    Gaussian mechanism, :func:`gaussian_mechanism_delta`.

Privacy statements (all for neighbouring inputs whose query values differ by at most the
stated sensitivity, in the norm named):

* Laplace noise of scale ``b`` on a query with l_1 sensitivity ``Δ`` is ``(Δ/b)``-DP.
* Gaussian noise ``N(0, σ² I)`` on a query with l_2 sensitivity ``Δ`` is ``(ε, δ)``-DP iff
  ``δ >= gaussian_mechanism_delta(σ, ε, Δ)`` (Balle & Wang 2018, Theorem 8).
* Report-noisy-argmax with Laplace(b) noise on scores each of sensitivity ``Δ`` is
  ``(2Δ/b)``-DP in general and ``(Δ/b)``-DP for monotone scores (Dwork & Roth, Claim 3.9).
* Report-noisy-argmax/argmin with ``N(0, σ²)`` noise is the Gaussian mechanism on the score
  vector (l_2 sensitivity ``Δ₂``), post-processed: ``(Δ₂/σ)``-GDP (Dong, Roth & Su 2022).
* The exponential mechanism with ``scale`` on scores each of sensitivity ``Δ`` is
  ``ε = 2Δ/scale``-DP and ε-bounded-range (``Δ/scale`` for monotone scores in both), hence
  ``ε²/8``-zCDP (Cesar & Rogers 2021).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import special

from dpbandits._validation import (
    check_array,
    check_delta_open,
    check_epsilon,
    check_int,
    check_nonnegative,
    check_real,
    check_rng,
)

__all__ = [
    "LAPLACE_METHODS",
    "standard_laplace",
    "laplace_noise",
    "gaussian_noise",
    "generalized_gaussian_noise",
    "SYMMETRIC_FORMS",
    "symmetric_gaussian",
    "symmetric_from_normals",
    "bartlett_factor",
    "wishart_matrix",
    "report_noisy_argmax",
    "report_noisy_argmin",
    "gaussian_report_noisy_argmax",
    "gaussian_report_noisy_argmin",
    "EXPONENTIAL_METHODS",
    "exponential_mechanism",
    "exponential_mechanism_from_uniforms",
    "report_noisy_argmax_probabilities",
    "exponential_mechanism_probabilities",
    "laplace_scale",
    "gaussian_sigma_classical",
    "gaussian_sigma_analytic",
    "gaussian_mechanism_delta",
]


# ----------------------------------------------------------------------------- helpers
def _check_size(size, name: str = "size") -> tuple[int, ...]:
    """A leading shape: a non-negative int or a tuple of non-negative ints."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return (check_int(name, size, low=0),)
    if isinstance(size, tuple | list):
        return tuple(check_int(f"{name}[{i}]", s, low=0) for i, s in enumerate(size))
    raise TypeError(f"{name} must be an int or a tuple of ints, got {size!r}")


def _check_scores(scores, name: str = "scores") -> np.ndarray:
    arr = check_array(name, scores, ndim=2)
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column (candidate), got {arr.shape}")
    return arr


# ----------------------------------------------------------------------------- noise
#: the two exact ways :func:`standard_laplace` turns random bits into Laplace variates
LAPLACE_METHODS = ("exponential", "inversion")


def standard_laplace(rng: np.random.Generator, size, *, method: str = "exponential"
                     ) -> np.ndarray:
    """I.i.d. Laplace(0, 1) variates of shape ``size`` (density ``exp(-|x|)/2``).

    ``method="exponential"`` (default, no logarithm per draw) is exact: ``X = S E`` with
    ``E ~ Exp(1)`` and ``S`` a fair random sign independent of ``E`` has ``P(X in A) =
    (P(E in A) + P(-E in A))/2 = int_A exp(-|x|)/2 dx``, the Laplace law. ``E`` comes from
    numpy's ``standard_exponential`` (a ziggurat: one 64-bit draw and a table lookup almost
    always, exact rejection otherwise) and the signs from the bits of uniform random bytes
    (``integers(0, 256, uint8)``, eight signs per byte, flipped into the sign bit). Draw
    order: the ``n`` exponentials, then ``ceil(n / 8)`` bytes. About twice as fast as
    ``"inversion"``.

    ``method="inversion"``: numpy's ``Generator.laplace(0, 1, size)`` (one uniform and one
    logarithm per draw), the stream peeling, report-noisy-argmax/min and the authors'-code
    DP-HDB have always used (kept so their runs reproduce). Same law, other variates.
    """
    rng = check_rng(rng)
    shape = _check_size(size)
    if method == "inversion":
        return rng.laplace(0.0, 1.0, shape)
    if method != "exponential":
        raise ValueError(f"method must be one of {LAPLACE_METHODS}, got {method!r}")
    n = math.prod(shape)
    e = rng.standard_exponential(n)
    bits = np.unpackbits(rng.integers(0, 256, -(-n // 8), dtype=np.uint8), count=n)
    u = e.view(np.uint64)
    np.bitwise_xor(u, bits.astype(np.uint64) << np.uint64(63), out=u)
    return e.reshape(shape)


def laplace_noise(rng: np.random.Generator, scale, size, *, method: str = "exponential"
                  ) -> np.ndarray:
    """I.i.d. Laplace(0, ``scale``) noise of shape ``size`` (density ``exp(-|x|/b)/(2b)``):
    ``scale`` times :func:`standard_laplace` with ``method`` (exact; see there).

    Variance ``2 scale²``. ``scale = 0`` gives zeros.
    """
    rng = check_rng(rng)
    b = check_nonnegative("scale", scale)
    return b * standard_laplace(rng, size, method=method)


def gaussian_noise(rng: np.random.Generator, sigma, size, *, out: np.ndarray | None = None
                   ) -> np.ndarray:
    """I.i.d. ``N(0, sigma²)`` noise of shape ``size``. ``sigma = 0`` gives zeros (the
    variates are drawn all the same, so the stream does not depend on ``sigma``).

    The variates are numpy's ``Generator.normal(0.0, sigma, size)``: one ziggurat standard
    normal ``z`` per entry, returned as ``0.0 + sigma z``.

    ``out``: a C-contiguous float64 array of shape ``size`` to fill in place and return (no
    allocation, for loops that reuse one buffer, e.g. NoisySGD's chunks). It is filled by
    ``standard_normal(out=out)`` (the same ``z``, in the same order) and scaled by ``sigma``
    unless ``sigma = 1``, so it holds the same numbers as without ``out`` (up to the sign of
    an exact zero).
    """
    rng = check_rng(rng)
    s = check_nonnegative("sigma", sigma)
    shape = _check_size(size)
    if out is None:
        return rng.normal(0.0, s, shape)
    if (not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != shape
            or not out.flags.c_contiguous or not out.flags.writeable):
        got = (f"{out.dtype} array of shape {out.shape}" if isinstance(out, np.ndarray)
               else type(out).__name__)
        raise ValueError(f"out must be a writeable C-contiguous float64 array of shape "
                         f"size = {shape}, got {got}")
    rng.standard_normal(out=out)
    if s == 0.0:
        out.fill(0.0)
    elif s != 1.0:
        out *= s
    return out


def generalized_gaussian_noise(rng: np.random.Generator, sigma, q_plus, d, size=()) -> np.ndarray:
    """Sample ``Z ~ G_{||.||_{q+}}(0, sigma²)`` in ``R^d``, ``size`` draws at once.

    The density is proportional to ``exp(-||z||_{q+}² / (2 sigma²))`` (Han et al. 2022, Lemma 2.1).
    Returns an array of shape ``(*size, d)``. Algorithm 4 of Han et al. 2022, with two corrections:

    1. radius: ``r² ~ Gamma(shape d/2, scale 2 sigma²)``. The paper prints scale ``2 sigma``,
       a typo: its proof of Lemma 3.1 (polar integration of the density) gives ``2 sigma²``,
       and only that makes ``q+ = 2`` the Gaussian ``N(0, sigma² I)``.
    2. direction: ``x_i = s_i eps_i`` with ``s_i`` i.i.d. random signs and ``eps_i >= 0``
       with ``eps_i^{q+} ~ Gamma(1/q+, 1)`` (the generalized normal with shape ``q+``);
       nothing is added to the draws (the authors' code adds ``1/q+``, which breaks the
       symmetry of the distribution). Output ``r x / ||x||_{q+}``; by Schechtman & Zinn /
       Calafiore et al. (1998), ``x/||x||_{q+}`` is the cone measure on the l_{q+} sphere,
       independent of the radius.

    ``eps_i`` is sampled as ``G_i^{1/q+} U_i`` with ``G_i ~ Gamma(1 + 1/q+, 1)`` and
    ``U_i ~ U(0, 1]`` (the identity ``Gamma(a) = Gamma(a+1) U^{1/a}`` in law), which never
    underflows to 0 for large ``q+`` the way ``Gamma(1/q+)^{1/q+}`` does. The norm is
    computed after dividing by the largest coordinate, so it cannot overflow.

    Parameters
    ----------
    sigma : float >= 0
    q_plus : float, finite and >= 1 (the exponent of the norm ``||.||+``)
    d : int >= 1, dimension
    size : int or tuple of ints, leading shape (e.g. ``(R,)`` for ``R`` replications)
    """
    rng = check_rng(rng)
    s = check_nonnegative("sigma", sigma)
    q = check_real("q_plus", q_plus, low=1.0)
    d = check_int("d", d, low=1)
    lead = _check_size(size)

    # Fixed draw order (radius, magnitudes, uniforms, signs) => reproducible streams.
    g_radius = rng.standard_gamma(d / 2.0, lead)
    r = s * np.sqrt(2.0 * g_radius)  # r² ~ Gamma(d/2, scale 2 sigma²)
    g = rng.standard_gamma(1.0 + 1.0 / q, (*lead, d))
    u = 1.0 - rng.random((*lead, d))  # uniform on (0, 1]
    signs = 2.0 * rng.integers(0, 2, (*lead, d)) - 1.0
    mag = g ** (1.0 / q) * u  # |eps_i|, |eps_i|^q ~ Gamma(1/q, 1)

    top = mag.max(axis=-1, keepdims=True)
    top = np.where(top > 0.0, top, 1.0)  # all-zero rows have probability 0; avoid 0/0
    scaled = mag / top
    norm = top[..., 0] * np.sum(scaled**q, axis=-1) ** (1.0 / q)
    norm = np.where(norm > 0.0, norm, 1.0)
    return (r / norm)[..., None] * (signs * mag)


#: the output forms of :func:`symmetric_gaussian`
SYMMETRIC_FORMS = ("full", "upper", "packed")


def _check_form(form: str) -> str:
    if form not in SYMMETRIC_FORMS:
        raise ValueError(f"form must be one of {SYMMETRIC_FORMS}, got {form!r}")
    return form


def symmetric_from_normals(z: np.ndarray, n: int, sigma_off: float, sigma_diag: float,
                           form: str = "full") -> np.ndarray:
    """Symmetric Gaussian noise from standard normals ``z`` (``..., n(n+1)/2``), the packed
    upper triangle row-major over ``i <= j``: ``z * sigma_diag`` on the diagonal and
    ``z * sigma_off`` off it. The deterministic half of :func:`symmetric_gaussian`, for
    callers that draw their variates ahead (DP-UCB's chunks) and the compiled twins that
    scale the same variates (tests compare them).

    ``form``: ``"full"`` (``..., n, n``, the lower triangle the mirror image), ``"upper"``
    (``..., n, n``, zeros below the diagonal: the layout LAPACK reads) or ``"packed"``
    (``..., n(n+1)/2``, the order of ``z``). The scales are not validated here.
    """
    _check_form(form)
    iu, ju = np.triu_indices(n)
    if z.shape[-1] != iu.size:
        raise ValueError(f"z must have n(n+1)/2 = {iu.size} entries in its last axis for "
                         f"n = {n}, got shape {z.shape}")
    packed = z * np.where(iu == ju, sigma_diag, sigma_off)
    if form == "packed":
        return packed
    out = np.zeros((*z.shape[:-1], n, n)) if form == "upper" else np.empty((*z.shape[:-1], n, n))
    out[..., iu, ju] = packed
    if form == "full":
        out[..., ju, iu] = packed
    return out


def symmetric_gaussian(rng: np.random.Generator, n, *, sigma_off, sigma_diag, size=(),
                       form: str = "full", draws: str = "packed") -> np.ndarray:
    """Symmetric Gaussian noise: ``n x n`` matrices with independent ``N(0, sigma_diag²)``
    diagonal entries and ``N(0, sigma_off²)`` entries above the diagonal, mirrored below.

    The law is the pair of standard deviations; the components use two shapes of it:

    * ``sigma_diag = sigma_off sqrt 2``: the law of ``(Z + Z^T)/sqrt 2``, ``Z_ij ~ N(0,
      sigma_off²)`` i.i.d. (the Gaussian orthogonal ensemble; Shariff & Sheffet 2018, Section
      4.2): the half-vectorization with off-diagonals times ``sqrt 2`` (whose l_2 norm is
      the Frobenius norm) gets ``N(0, 2 sigma_off² I)``, so a change of Frobenius norm
      ``Delta`` is a Gaussian mechanism of sensitivity ``Delta / sqrt 2`` at standard
      deviation ``sigma_off`` (DP-UCB's nodes, the screened Gram and moment releases);
    * ``sigma_diag = sigma_off``: the upper triangle, diagonal included, i.i.d. (LDP-LinUCB's
      randomizer, Zheng et al. 2020), whose sensitivity is that of the packed triangle.

    Exact, from ``n(n+1)/2`` normals per matrix with ``draws="packed"`` (default):
    ``standard_normal((*size, n(n+1)/2))``, the upper triangle row-major over ``i <= j``,
    then :func:`symmetric_from_normals`. ``draws="square"`` spends ``n² + n`` normals per
    matrix, in the order dp-screened-ls, dp-moment-ls and adac-oful have always drawn them
    (kept so their runs reproduce): ``standard_normal((*size, n, n))`` of which the strict
    upper triangle is used, then ``standard_normal((*size, n))`` for the diagonal.

    ``form`` as in :func:`symmetric_from_normals`. Returns float64 of shape
    ``(*size, n, n)`` (``(*size, n(n+1)/2)`` packed).
    """
    rng = check_rng(rng)
    n = check_int("n", n, low=1)
    s_off = check_nonnegative("sigma_off", sigma_off)
    s_diag = check_nonnegative("sigma_diag", sigma_diag)
    lead = _check_size(size)
    _check_form(form)
    if draws == "packed":
        z = rng.standard_normal((*lead, n * (n + 1) // 2))
    elif draws == "square":
        iu, ju = np.triu_indices(n)
        z = np.empty((*lead, iu.size))
        square = rng.standard_normal((*lead, n, n))
        off = iu != ju
        z[..., off] = square[..., iu[off], ju[off]]
        z[..., ~off] = rng.standard_normal((*lead, n))
    else:
        raise ValueError(f"draws must be 'packed' or 'square', got {draws!r}")
    return symmetric_from_normals(z, n, s_off, s_diag, form)


def bartlett_factor(z: np.ndarray, chi: np.ndarray, n: int) -> np.ndarray:
    """The upper triangular Bartlett factor ``U`` (``..., n, n``) of :func:`wishart_matrix`
    from its variates: the strict upper triangle row-major from ``z`` (``..., n(n-1)/2``
    standard normals) and ``U_ii = sqrt(chi_i)`` from ``chi`` (``..., n``, ``chi_i ~
    chi²(df - n + 1 + i)``). The deterministic half of :func:`wishart_matrix`, shared with
    DP-UCB's numpy path (which draws its variates ahead and forms ``U U^T`` with LAPACK, as
    its compiled twin does; tests compare both with :func:`wishart_matrix`)."""
    iu, ju = np.triu_indices(n, 1)
    u = np.zeros((*chi.shape[:-1], n, n))
    u[..., iu, ju] = z
    u[..., np.arange(n), np.arange(n)] = np.sqrt(chi)
    return u


def wishart_matrix(rng: np.random.Generator, n, df, scale=1.0, size=()) -> np.ndarray:
    """``Wishart_n(scale I, df)`` draws of shape ``(*size, n, n)``, ``df >= n`` (Bartlett).

    Exact: Bartlett's decomposition gives ``W = L L^T ~ Wishart_n(I, df)`` for ``L`` lower
    triangular with ``L_ii² ~ chi²(df - i)`` (0-based ``i``) and ``L_ij ~ N(0, 1)`` below
    the diagonal, all independent. With ``P`` the reversal permutation, ``P W P`` has the same
    law (``P I P = I``) and equals ``U U^T`` with ``U = P L P`` upper triangular,
    ``U_ii² ~ chi²(df - n + 1 + i)``. ``U U^T`` is what LAPACK's ``dlauum`` computes in
    ``n³/3`` flops; this function uses the same ``U`` (:func:`bartlett_factor`: strict upper
    triangle row-major from ``standard_normal``, then the ``n`` chi-squares from
    ``chisquare``) and ``matmul``.
    """
    rng = check_rng(rng)
    n = check_int("n", n, low=1)
    df = check_real("df", df, low=n)
    c = check_nonnegative("scale", scale)
    lead = _check_size(size)
    z = rng.standard_normal((*lead, n * (n - 1) // 2))
    u = bartlett_factor(z, rng.chisquare(df - n + 1 + np.arange(n), size=(*lead, n)), n)
    return c * (u @ np.swapaxes(u, -1, -2))


# ----------------------------------------------------------------------------- selection
def _row_scales(scale, n_rows: int, name: str = "scale") -> float | np.ndarray:
    """A scalar ``scale >= 0`` (returned as a float) or one per row, ``(R,)`` (returned as
    ``(R, 1)``, to broadcast over the candidates)."""
    if np.ndim(scale) == 0:
        return check_nonnegative(name, scale)
    b = check_array(name, scale, shape=(n_rows,))
    if np.any(b < 0.0):
        raise ValueError(f"{name} must be >= 0 in every row, got min {b.min()}")
    return b[:, None]


def _noisy_choice(noisy: np.ndarray, exclude, largest: bool) -> np.ndarray:
    """argmax (``largest``) or argmin per row of ``noisy`` (R, m), over the candidates not
    in ``exclude`` ((R, m) bool, or None); first index on ties; int64 (R,)."""
    if exclude is not None:
        ex = np.asarray(exclude)
        if ex.dtype != np.bool_ or ex.shape != noisy.shape:
            raise ValueError(f"exclude must be a bool array of the scores' shape "
                             f"{noisy.shape}, got {ex.dtype} of shape {ex.shape}")
        if np.any(ex.all(axis=1)):
            raise ValueError("exclude must leave at least one candidate in every row, got a "
                             f"row with all {noisy.shape[1]} excluded")
        noisy[ex] = -np.inf if largest else np.inf
    pick = np.argmax(noisy, axis=1) if largest else np.argmin(noisy, axis=1)
    return pick.astype(np.int64)


def _laplace_noisy_scores(rng, scores, scale) -> np.ndarray:
    """Checked ``scores`` (R, m) plus independent Laplace(``scale``) noise on every entry
    (``scale`` scalar or per row), by inversion: ``scores + scale * standard_laplace``."""
    rng = check_rng(rng)
    s = _check_scores(scores)
    b = _row_scales(scale, s.shape[0])
    return s + b * standard_laplace(rng, s.shape, method="inversion")


def report_noisy_argmax(rng: np.random.Generator, scores, scale, *, exclude=None
                        ) -> np.ndarray:
    """Index of the largest ``score + Laplace(scale)`` per row.

    ``scores`` has shape ``(R, m)`` (finite); returns ``(R,)`` int64. Independent noise for
    every entry (``R m`` variates, drawn whatever ``exclude``). ``scale``: a float ``>= 0``
    or one per row, ``(R,)``; ``0`` is the non-private argmax (first index on ties).
    ``exclude`` ((R, m) bool, optional): candidates that cannot be chosen (e.g. those chosen
    by earlier steps, as in :func:`dpbandits.privacy.peeling.peel`); every row must keep one.

    Privacy: with scores each of sensitivity ``Δ``, ``(2Δ/scale)``-DP, ``(Δ/scale)``-DP for
    monotone scores (Dwork & Roth 2014, Claim 3.9); a public (or previously released)
    ``exclude`` does not change this.
    """
    noisy = _laplace_noisy_scores(rng, scores, scale)
    return _noisy_choice(noisy, exclude, largest=True)


def report_noisy_argmin(rng: np.random.Generator, scores, scale, *, exclude=None
                        ) -> np.ndarray:
    """Index of the smallest ``score + Laplace(scale)`` per row, ``(R, m)`` -> ``(R,)``.

    Same law as ``report_noisy_argmax(rng, -scores, scale)`` (Laplace noise is symmetric);
    ``scale`` and ``exclude`` as there.
    """
    noisy = _laplace_noisy_scores(rng, scores, scale)
    return _noisy_choice(noisy, exclude, largest=False)


def _gaussian_noisy_scores(rng, scores, sigma) -> np.ndarray:
    """Checked ``scores`` (R, m) plus :func:`gaussian_noise` ``N(0, sigma²)`` on every entry."""
    rng = check_rng(rng)
    s = _check_scores(scores)
    return s + gaussian_noise(rng, sigma, s.shape)


def gaussian_report_noisy_argmax(rng: np.random.Generator, scores, sigma, *, exclude=None
                                 ) -> np.ndarray:
    """Index of the largest ``score + N(0, sigma²)`` per row, ``(R, m)`` -> ``(R,)`` int64.

    The noise is :func:`gaussian_noise` of shape ``(R, m)`` (``R m`` variates, in row-major
    order, drawn whatever ``exclude``); ``sigma = 0`` is the non-private argmax (first index
    on ties). ``exclude`` as in :func:`report_noisy_argmax`.

    Privacy: adding ``N(0, sigma² I_m)`` to the score vector is a Gaussian mechanism on it,
    and the index is a post-processing of the noisy vector. If the score vector has l_2
    sensitivity ``Δ₂`` (e.g. ``Δ sqrt(m)`` for ``m`` scores each of sensitivity ``Δ``), the
    index is ``(Δ₂/sigma)``-GDP (Dong, Roth & Su 2022) and ``(ε, δ)``-DP for every
    ``δ >= gaussian_mechanism_delta(sigma, ε, Δ₂)`` (Balle & Wang 2018, Theorem 8). This is
    the guarantee of the whole noisy vector; no selection-specific tightening is claimed.
    """
    noisy = _gaussian_noisy_scores(rng, scores, sigma)
    return _noisy_choice(noisy, exclude, largest=True)


def gaussian_report_noisy_argmin(rng: np.random.Generator, scores, sigma, *, exclude=None
                                 ) -> np.ndarray:
    """Index of the smallest ``score + N(0, sigma²)`` per row, ``(R, m)`` -> ``(R,)`` int64:
    the same draws and the same privacy as :func:`gaussian_report_noisy_argmax` (a Gaussian
    mechanism on the score vector, post-processed); same law as
    ``gaussian_report_noisy_argmax(rng, -scores, sigma)`` (Gaussian noise is symmetric)."""
    noisy = _gaussian_noisy_scores(rng, scores, sigma)
    return _noisy_choice(noisy, exclude, largest=False)


#: the two exact ways :func:`exponential_mechanism` samples the softmax law
EXPONENTIAL_METHODS = ("gumbel", "inversion")


def exponential_mechanism(rng: np.random.Generator, scores, scale, *, method: str = "gumbel"
                          ) -> np.ndarray:
    """Exponential mechanism: index ``i`` of each row with ``P(i) ∝ exp(scores_i / scale)``.

    ``scores`` ``(R, m)`` -> ``(R,)`` int64; ``scale = 0`` is the plain argmax (first index
    on ties). To select a minimum, pass ``-scores``. ``method="gumbel"`` (default):
    ``argmax(scores + scale * Gumbel)``, ``m`` Gumbel variates per row (the Gumbel-max
    trick, exact). ``method="inversion"``: one uniform per row (``rng.random(R)``) through
    :func:`exponential_mechanism_from_uniforms` (exact inversion of the CDF).
    """
    rng = check_rng(rng)
    s = _check_scores(scores)
    b = check_nonnegative("scale", scale)
    if method == "inversion":
        return exponential_mechanism_from_uniforms(s, b, rng.random((s.shape[0],)))
    if method != "gumbel":
        raise ValueError(f"method must be one of {EXPONENTIAL_METHODS}, got {method!r}")
    noisy = s + b * rng.gumbel(0.0, 1.0, s.shape)
    return np.argmax(noisy, axis=1).astype(np.int64)


def exponential_mechanism_from_uniforms(scores: np.ndarray, scale: float, u: np.ndarray
                                        ) -> np.ndarray:
    """The exponential mechanism's index per row from one uniform ``u`` (R,) in ``[0, 1)``
    per row, by inverting the CDF: with ``w = cumsum(exp(scores/scale - max))``, the index
    is ``#{k : w_k <= u w_m}``, so ``P(i) = exp(scores_i/scale) / sum_k exp(scores_k/scale)``
    exactly (up to the rounding of ``w``). The deterministic half of
    :func:`exponential_mechanism`'s ``"inversion"`` method, for callers that draw their
    uniforms ahead (DP-POFW's Gumbel selection). ``scores`` (R, m) finite, unchecked;
    ``scale >= 0`` (0: the plain argmax). Returns int64 indices in ``[0, m)``."""
    if scale == 0.0:
        return np.argmax(scores, axis=1).astype(np.int64)
    w = scores * (1.0 / scale)
    w -= w.max(axis=1, keepdims=True)
    np.exp(w, out=w)
    np.cumsum(w, axis=1, out=w)
    idx = (w <= (u * w[:, -1])[:, None]).sum(axis=1)
    return np.minimum(idx, scores.shape[1] - 1).astype(np.int64)


def _laplace_cdf(x: np.ndarray, b: float) -> np.ndarray:
    return np.where(x < 0.0, 0.5 * np.exp(np.minimum(x, 0.0) / b),
                    1.0 - 0.5 * np.exp(-np.maximum(x, 0.0) / b))


def report_noisy_argmax_probabilities(scores, scale) -> np.ndarray:
    """Exact selection probabilities of :func:`report_noisy_argmax` for one score vector.

    ``P(i) = ∫ f_b(x - s_i) Π_{j≠i} F_b(x - s_j) dx`` with ``f_b, F_b`` the Laplace(b)
    density and CDF, integrated numerically (scipy ``quad``, break points at the scores,
    tails beyond 60 b ignored: mass < 1e-26). Meant for small ``m`` (tests, audits).
    ``scores`` has shape ``(m,)``; ``scale > 0``.
    """
    from scipy import integrate  # with scipy.optimize: 20 MB, loaded on first use

    s = check_array("scores", scores, ndim=1)
    if s.size < 1:
        raise ValueError("scores must contain at least one score")
    b = check_real("scale", scale, low=0.0, low_open=True)
    m = s.size
    lo, hi = float(s.min() - 60.0 * b), float(s.max() + 60.0 * b)
    points = np.unique(s)
    probs = np.empty(m)
    for i in range(m):  # small m by contract; one 1-D integral per candidate
        others = np.delete(s, i)

        def integrand(x, si=s[i], others=others):
            dens = math.exp(-abs(x - si) / b) / (2.0 * b)
            return dens * float(np.prod(_laplace_cdf(x - others, b)))

        total = 0.0
        edges = np.concatenate(([lo], points, [hi]))
        for a, c in zip(edges[:-1], edges[1:], strict=True):
            if c > a:
                val, _ = integrate.quad(integrand, a, c, epsabs=1e-14, epsrel=1e-12, limit=200)
                total += val
        probs[i] = total
    return probs


def exponential_mechanism_probabilities(scores, scale) -> np.ndarray:
    """Softmax ``exp(scores / scale) / Σ exp(scores / scale)``, ``scores`` of shape ``(m,)``."""
    s = check_array("scores", scores, ndim=1)
    if s.size < 1:
        raise ValueError("scores must contain at least one score")
    b = check_real("scale", scale, low=0.0, low_open=True)
    return special.softmax(s / b)


# ----------------------------------------------------------------------------- calibration
def laplace_scale(epsilon, sensitivity) -> float:
    """Laplace scale ``b = Δ / ε`` making a query of l_1 sensitivity ``Δ`` ε-DP.

    ``epsilon = inf`` (no privacy) gives 0.
    """
    eps = check_epsilon(epsilon)
    delta_f = check_nonnegative("sensitivity", sensitivity)
    return 0.0 if math.isinf(eps) else delta_f / eps


def gaussian_sigma_classical(epsilon, delta, sensitivity) -> float:
    """Classical Gaussian mechanism ``σ = sqrt(2 ln(1.25/δ)) Δ / ε`` (Dwork & Roth, Thm A.1).

    Valid only for ``0 < epsilon < 1`` (raises otherwise); ``delta`` in (0, 1); ``Δ`` is the
    l_2 sensitivity.
    """
    eps = check_epsilon(epsilon)
    if eps >= 1.0:
        raise ValueError(
            f"epsilon must be < 1 for the classical Gaussian mechanism (Dwork & Roth, "
            f"Theorem A.1), got {eps}; use gaussian_sigma_analytic"
        )
    dlt = check_delta_open(delta, why="for the Gaussian mechanism")
    delta_f = check_nonnegative("sensitivity", sensitivity)
    return math.sqrt(2.0 * math.log(1.25 / dlt)) * delta_f / eps


def _log_delta_unit(s: float, eps: float) -> float:
    """log δ(ε) of the Gaussian mechanism with ``σ/Δ = s`` (Balle & Wang 2018, Thm 8).

    ``δ = Φ(1/(2s) - εs) - e^ε Φ(-1/(2s) - εs)``, evaluated as
    ``log Φ(A) + log(1 - exp(ε + log Φ(B) - log Φ(A)))`` so that neither term underflows.
    Returns ``-inf`` where δ is numerically 0.
    """
    a = 1.0 / (2.0 * s) - eps * s
    b = -1.0 / (2.0 * s) - eps * s
    la = float(special.log_ndtr(a))
    lb = float(special.log_ndtr(b))
    x = eps + lb - la
    if x >= 0.0:
        return -math.inf
    return la + math.log(-math.expm1(x))


def gaussian_mechanism_delta(sigma, epsilon, sensitivity) -> float:
    """Exact (tight) δ at ``epsilon`` of the Gaussian mechanism ``N(0, σ² I)`` on a query of
    l_2 sensitivity ``Δ`` (Balle & Wang 2018, Theorem 8):
    ``δ = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ)``.
    """
    sig = check_nonnegative("sigma", sigma)
    eps = check_real("epsilon", epsilon, low=0.0)
    delta_f = check_nonnegative("sensitivity", sensitivity)
    if delta_f == 0.0:
        return 0.0
    if sig == 0.0:
        return 1.0
    return math.exp(_log_delta_unit(sig / delta_f, eps))


def gaussian_sigma_analytic(epsilon, delta, sensitivity) -> float:
    """Smallest σ for which the Gaussian mechanism is ``(ε, δ)``-DP (analytic Gaussian
    mechanism, Balle & Wang 2018, Theorem 8 / Algorithm 1).

    Solves ``Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ) = δ`` for σ (the left side decreases
    in σ) by bracketing and Brent's method on ``log σ``, in log space; the returned σ is
    nudged upward if needed so that the plugged-back δ is ``<= delta``. Valid for every
    ``epsilon > 0`` (no ``ε < 1`` restriction); ``epsilon = inf`` gives 0.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta_open(delta, why="for the Gaussian mechanism")
    delta_f = check_nonnegative("sensitivity", sensitivity)
    if delta_f == 0.0 or math.isinf(eps):
        return 0.0
    log_target = math.log(dlt)

    def f(log_s: float) -> float:
        # -inf (δ numerically 0) is replaced by a large finite value to keep Brent stable.
        return max(_log_delta_unit(math.exp(log_s), eps), -1e6) - log_target

    lo = hi = 0.0  # log(σ/Δ) = 0
    if f(0.0) > 0.0:
        for _ in range(2000):
            hi += 1.0
            if f(hi) <= 0.0:
                break
            lo = hi
        else:  # pragma: no cover - δ(s) -> 0 as s -> inf
            raise RuntimeError("gaussian_sigma_analytic: failed to bracket the root")
    else:
        for _ in range(2000):
            lo -= 1.0
            if f(lo) > 0.0:
                break
            hi = lo
        else:  # pragma: no cover - δ(s) -> 1 as s -> 0
            raise RuntimeError("gaussian_sigma_analytic: failed to bracket the root")
    from scipy.optimize import brentq

    root = brentq(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    # Make sure the answer certifies delta (never return a sigma slightly too small).
    for _ in range(100):
        if f(root) <= 0.0:
            break
        root += 1e-13 + 1e-13 * abs(root)
    return math.exp(root) * delta_f

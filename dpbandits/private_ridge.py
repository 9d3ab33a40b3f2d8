"""The pure math of a private ridge regression from noisy per-arm sums, shared by the private
ridge agents (``adac-oful``, ``ldp-linucb`` and the screened/moment agents' sensitivity hooks)
and the private doubly robust estimator's reward model (:mod:`dpbandits.offpolicy.private`).

Each user contributes ``u u^T`` and ``y u`` to its arm's block, with ``||u||_2 <= 1`` and
``|y| <= B`` holding exactly for the floats used (:func:`unit_rows`); the release adds
symmetric Gaussian noise to the Gram sums and Gaussian noise to the target sums
(:func:`noisy_arm_sums`), and the ridge estimate is post-processing of the release
(:func:`ridge_parts`). Layer: beside ``geometry`` (numpy and ``privacy`` only), below the
agents and ``offpolicy``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandits.geometry import clip_rows
from dpbandits.privacy.mechanisms import gaussian_noise, symmetric_gaussian

__all__ = ["noisy_arm_sums", "normalized_rows", "ridge_parts", "unit_rows", "whitened_terms"]


def unit_rows(x: np.ndarray, context_bound: float) -> tuple[np.ndarray, np.ndarray]:
    """``(u, clipped)``: rows clipped to ``||x||_2 <= L`` and scaled by ``1/L``, and the
    boolean (R,) marks of the rows over ``L``. ``||u||_2 <= 1`` holds exactly for the floats
    returned (:func:`dpbandits.geometry.clip_rows` on ``x``, and once more on ``x / L``, whose
    rounding could otherwise leave a row an ulp above 1; rows inside are untouched)."""
    clipped, norms = clip_rows(x, 2.0, context_bound)
    return clip_rows(clipped / context_bound, 2.0, 1.0)[0], norms > context_bound


def normalized_rows(x: np.ndarray, r: np.ndarray, context_bound: float, reward_bound: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(u, y, x_clipped, r_clipped)``: :func:`unit_rows` and the rewards clipped to
    ``[-B, B]``; the last two are boolean (R,) marks of what was clipped (callers count
    them: nothing is clipped silently)."""
    u, cx = unit_rows(x, context_bound)
    y = np.clip(r, -reward_bound, reward_bound)
    return u, y, cx, y != r


def whitened_terms(u: np.ndarray, y: np.ndarray, arms: np.ndarray, n_arms: int,
                   off_diagonal: float, sigma_gram: float, sigma_target: float) -> np.ndarray:
    """Each user's ``u u^T`` (upper triangle, off-diagonal entries times ``off_diagonal``)
    and ``y u`` in its arm's block, divided by the noise standard deviations: rows
    (n, K (d(d+1)/2 + d)) in the noise metric of a release with those two noise scales (the
    ``_contributions`` hooks, :mod:`dpbandits.privacy.contributions`)."""
    n, d = u.shape
    iu, ju = np.triu_indices(d)
    rows = np.arange(n)
    weight = np.where(iu == ju, 1.0, off_diagonal) / sigma_gram
    out = np.zeros((n, n_arms, iu.size + d))
    out[rows, arms, :iu.size] = u[:, iu] * u[:, ju] * weight
    out[rows, arms, iu.size:] = y[:, None] * u / sigma_target
    return out.reshape(n, -1)


def noisy_arm_sums(u: np.ndarray, y: np.ndarray, arms: np.ndarray, n_arms: int,
                   sigma_gram: float, sigma_target: float, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(gram, target)``: per arm ``k`` the sums ``sum_{a_i = k} u_i u_i^T`` (K, d, d) and
    ``sum_{a_i = k} y_i u_i`` (K, d), plus symmetric Gaussian noise with diagonal standard
    deviation ``sigma_gram`` and off-diagonal ``sigma_gram / sqrt 2`` (so the
    half-vectorization with off-diagonals times ``sqrt 2``, whose l2 norm is the Frobenius
    norm, gets ``N(0, sigma_gram^2 I)``: :func:`whitened_terms` with ``off_diagonal =
    sqrt 2``) and ``N(0, sigma_target^2 I)``. The Gram noise is drawn first, then the
    target noise, both from ``rng``."""
    d = u.shape[1]
    onehot = np.zeros((u.shape[0], n_arms))
    onehot[np.arange(u.shape[0]), arms] = 1.0
    gram = np.einsum("ik,ij,il->kjl", onehot, u, u)
    target = np.einsum("ik,i,ij->kj", onehot, y, u)
    gram += symmetric_gaussian(rng, d, sigma_off=sigma_gram / math.sqrt(2.0),
                               sigma_diag=sigma_gram, size=(n_arms,))
    target += gaussian_noise(rng, sigma_target, (n_arms, d))
    return gram, target


def ridge_parts(gram: np.ndarray, target: np.ndarray, shift: float | np.ndarray,
                floor: float | np.ndarray, extra_floor: float | np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any, np.ndarray | None]:
    """Per-arm ridge pieces of ``V = gram + shift I`` (``gram`` (..., K, d, d) symmetric,
    ``target`` (..., K, d), ``shift``/``floor`` scalars or (...) arrays): eigenvalues below
    ``floor`` are raised to it (``V`` is then the nearest matrix with spectrum >= floor).

    Returns ``(theta, v_inv, logdet, raised, extra_inv)``: ``V^-1 target`` (..., K, d),
    ``V^-1`` (..., K, d, d), ``sum_k ln det V_k`` (...), whether any eigenvalue was raised
    (...), and the inverse of ``V`` with its spectrum raised to ``max(floor, extra_floor)``
    (None without ``extra_floor``).
    """
    d = gram.shape[-1]
    shift = np.asarray(shift, dtype=float)[..., None, None, None]
    floor = np.asarray(floor, dtype=float)[..., None, None]
    w, q = np.linalg.eigh(gram + shift * np.eye(d))
    raised = (w < floor).any(axis=(-1, -2))
    w = np.maximum(w, floor)
    v_inv = np.einsum("...ij,...j,...kj->...ik", q, 1.0 / w, q)
    theta = np.einsum("...ij,...j->...i", v_inv, target)
    extra = None
    if extra_floor is not None:
        extra = np.einsum("...ij,...j,...kj->...ik", q, 1.0 / np.maximum(w, extra_floor), q)
    return theta, v_inv, np.log(w).sum(axis=(-1, -2)), raised, extra

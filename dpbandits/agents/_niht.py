"""Noisy iterative hard thresholding (N-IHT) on one episode's data, batched over replications.

The private sparse-regression oracle of FLIPHAT (Chakraborty, Roy & Basu, AISTATS 2025),
after Cai, Wang & Zhang (2021, Algorithm 2). Everything here works on the *sufficient
statistics* of an episode, ``A = sum_i phi_i phi_i^T`` and ``b = sum_i phi_i y~_i`` over its
``n`` rounds, so an episode of any length costs O(D^2) memory per replication.

Feature models (``D`` = parameter dimension)
--------------------------------------------
``blocks = K`` (disjoint / block-embedded model): round ``i``'s feature is the context
``x_i in R^d`` placed in block ``a_i`` of ``R^{Kd}`` (``D = Kd``). ``A`` is block diagonal and
stored as ``(R, K, d, d)``; ``b`` as ``(R, K, d)``; ``theta`` is handled flat ``(R, K*d)``
with block ``k`` at ``theta[:, k*d:(k+1)*d]``. ``blocks = None`` (shared-parameter,
per-arm feature model): the chosen arm's feature ``phi_i in R^D`` itself, ``A`` ``(R, D, D)``.

Preprocessing (enforced, counted): every feature row is clipped to ``||phi||_inf <= x_max``
(rescaled, :func:`dpbandits.geometry.clip_to_norm` with ``q = inf``) and every response
truncated to ``[-R, R]``.

Gradient step and its sensitivity (derivation)
-----------------------------------------------
With the normalized squared loss ``L(theta) = (1/2n) sum_i (phi_i^T theta - y~_i)^2`` the
step is ``v = theta - (eta/n) (A theta - b) = theta - (eta/n) sum_i phi_i r_i`` with residual
``r_i = phi_i^T theta - y~_i``. Replace one round ``(phi, y)`` by ``(phi', y')`` (same ``n``:
episode lengths are fixed): ``v - v' = -(eta/n) (phi r - phi' r')``. By Hoelder,
``|phi^T theta| <= ||phi||_inf ||theta||_1`` and, in the block model, ``phi^T theta =
x^T theta_a`` so ``|phi^T theta| <= x_max nu(theta)`` with
``nu(theta) = max_k ||theta_k||_1`` (block model) or ``||theta||_1`` (shared model).
Hence ``|r| <= x_max nu(theta) + R`` and for every coordinate
``|v_j - v'_j| <= (eta/n)(|phi_j| |r| + |phi'_j| |r'|)``, i.e.

    lambda(theta) = 2 eta x_max (x_max nu(theta) + R) / n.

The bound is attained (``D >= 2``): ``theta = nu e_k``, ``phi = x_max (e_j + e_k)``,
``phi' = x_max (-e_j + e_k)``, ``y = y' = -R`` give ``|v_j - v'_j| = lambda(theta)``
(``tests/test_fliphat.py::test_sensitivity_bound_is_attained`` checks it). ``theta`` is
the current iterate, itself the output of the previous private steps (or ``0``), so scaling
the noise of a step with ``lambda(theta)`` keeps the ratio noise/sensitivity fixed for every
value of the public input: adaptive composition applies unchanged. After the l_1
projection ``nu(theta) <= C``, and ``nu(theta^0) = 0``.

The authors' code used ``lambda_authors = (eta/2n)(x_max C + R)`` (their ``eta_l * B`` with
``eta = 2 eta_0 / n`` in this normalization) without clipping contexts: ``4 x_max`` times too
little noise (FLIPHAT note, section 5a/5b). :func:`sensitivity_authors` reproduces it for the
labelled-uncertified reproduction only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits._backends import HAVE_NUMBA, kernels
from dpbandits.geometry import clip_rows, project_l1_ball
from dpbandits.privacy.peeling import peel

#: rows buffered before they are folded into the Gram matrix with one matrix product
BUFFER_ROWS = 256
_NO_ARMS = np.zeros(0, dtype=np.int64)


def clip_features(phi: np.ndarray, x_max: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows rescaled to ``||phi||_inf <= x_max``; returns ``(clipped, was_clipped)``:
    :func:`dpbandits.geometry.clip_rows` with ``q = inf`` (scale by ``x_max / max|phi|``,
    then clip each entry at ``x_max``: the bound holds exactly), inputs already validated."""
    if math.isinf(x_max):
        return phi, np.zeros(phi.shape[:-1], dtype=bool)
    clipped, norms = clip_rows(phi, math.inf, x_max)
    return clipped, norms > x_max


def truncate_responses(y: np.ndarray, r_max: float) -> tuple[np.ndarray, np.ndarray]:
    """``y`` truncated to ``[-R, R]``; returns ``(truncated, was_truncated)``."""
    over = np.abs(y) > r_max
    return np.clip(y, -r_max, r_max), over


class EpisodeStats:
    """Clipped, truncated sufficient statistics of one episode for ``R`` replications.

    ``add(phi, y)`` takes the rows of one round: ``phi`` (R, d) contexts with ``arms`` (R,)
    in the block model, or (R, D) chosen-arm features in the shared model. Rows are buffered
    and folded into ``A``/``b`` by a matrix product every ``BUFFER_ROWS`` rounds.
    ``compiled``: clip, truncate and buffer each round in one numba kernel
    (:mod:`dpbandits.agents._fliphat_kernels`, bit-identical to the numpy path).
    """

    def __init__(self, n_reps: int, feature_dim: int, blocks: int | None, x_max: float,
                 r_max: float, compiled: bool = False):
        self.n_reps, self.feature_dim, self.blocks = n_reps, feature_dim, blocks
        self.x_max, self.r_max = x_max, r_max
        self.compiled = compiled and HAVE_NUMBA
        if blocks is None:
            self.A = np.zeros((n_reps, feature_dim, feature_dim))
            self.b = np.zeros((n_reps, feature_dim))
            width = feature_dim
        else:
            d = feature_dim // blocks
            self.A = np.zeros((n_reps, blocks, d, d))
            self.b = np.zeros((n_reps, blocks, d))
            width = d
        self._buf_x = np.zeros((n_reps, BUFFER_ROWS, width))
        self._buf_y = np.zeros((n_reps, BUFFER_ROWS))
        self._buf_a = np.zeros((n_reps, BUFFER_ROWS), dtype=np.int64)
        self._fill = 0
        self.n_rows = 0
        self.n_clipped = np.zeros(n_reps, dtype=np.int64)
        self.n_truncated = np.zeros(n_reps, dtype=np.int64)

    def add(self, phi: np.ndarray, y: np.ndarray, arms: np.ndarray | None = None) -> None:
        if self.compiled:
            add_rows = kernels("agents._fliphat_kernels").add_rows
            add_rows(self._buf_x, self._buf_y, self._buf_a, self._fill, phi, y,
                     _NO_ARMS if arms is None else arms, self.x_max, self.r_max,
                     self.n_clipped, self.n_truncated)
            self._fill += 1
            self.n_rows += 1
            if self._fill == BUFFER_ROWS:
                self.flush()
            return
        x, was = clip_features(phi, self.x_max)
        yt, over = truncate_responses(y, self.r_max)
        self.n_clipped += was
        self.n_truncated += over
        i = self._fill
        self._buf_x[:, i] = x
        self._buf_y[:, i] = yt
        if self.blocks is not None:
            self._buf_a[:, i] = arms
        self._fill += 1
        self.n_rows += 1
        if self._fill == BUFFER_ROWS:
            self.flush()

    def flush(self) -> None:
        m = self._fill
        if m == 0:
            return
        x, y = self._buf_x[:, :m], self._buf_y[:, :m]
        if self.blocks is None:
            self.A += np.swapaxes(x, 1, 2) @ x
            self.b += np.einsum("rmi,rm->ri", x, y)
        else:
            onehot = (self._buf_a[:, :m, None] == np.arange(self.blocks)).astype(float)
            # (R, K, m, d): the rows of block k, zero elsewhere
            xb = onehot.transpose(0, 2, 1)[..., None] * x[:, None]
            self.A += np.swapaxes(xb, 2, 3) @ xb
            self.b += np.einsum("rkmi,rm->rki", xb, y)
        self._fill = 0

    # -- the quantities N-IHT needs ---------------------------------------------------------
    def matvec(self, theta: np.ndarray) -> np.ndarray:
        """``A theta`` for flat ``theta`` (R, D)."""
        self.flush()
        if self.blocks is None:
            return np.einsum("rij,rj->ri", self.A, theta)
        R, K = theta.shape[0], self.blocks
        th = theta.reshape(R, K, -1)
        return np.einsum("rkij,rkj->rki", self.A, th).reshape(R, -1)

    def rhs(self) -> np.ndarray:
        self.flush()
        return self.b.reshape(self.n_reps, -1).copy()


def theta_l1(theta: np.ndarray, blocks: int | None) -> np.ndarray:
    """``nu(theta)``: ``max_k ||theta_k||_1`` (block model) or ``||theta||_1``, shape (R,)."""
    if blocks is None:
        return np.abs(theta).sum(axis=1)
    return np.abs(theta.reshape(theta.shape[0], blocks, -1)).sum(axis=2).max(axis=1)


def project(theta: np.ndarray, radius: float, blocks: int | None) -> np.ndarray:
    """Euclidean projection on ``{nu(theta) <= radius}`` (per block in the block model)."""
    if math.isinf(radius):
        return theta
    if blocks is None:
        return project_l1_ball(theta, radius)
    R = theta.shape[0]
    return project_l1_ball(theta.reshape(R, blocks, -1), radius).reshape(R, -1)


def sensitivity(theta: np.ndarray, n: int, *, step: float, x_max: float, r_max: float,
                blocks: int | None) -> np.ndarray:
    """Worst-case replace-one l_inf sensitivity ``lambda(theta)`` of the gradient step
    (module docstring), shape (R,)."""
    return 2.0 * step * x_max * (x_max * theta_l1(theta, blocks) + r_max) / n


def sensitivity_authors(n: int, *, step: float, x_max: float, r_max: float,
                        radius: float) -> float:
    """The authors' (under-calibrated) ``eta_l B`` in this normalization:
    ``(eta / 2n)(x_max C + R)``. Not a sensitivity bound (FLIPHAT note, section 5a)."""
    return step * (x_max * radius + r_max) / (2.0 * n)


def gradient_step(stats: EpisodeStats, theta: np.ndarray, n: int, step: float) -> np.ndarray:
    """``v = theta - (eta/n)(A theta - b)`` (R, D)."""
    return theta - (step / n) * (stats.matvec(theta) - stats.rhs())


@dataclass
class NIHTResult:
    """``theta`` (R, D) the final iterate; ``scales`` (M, R) the Laplace scale of every
    peeling call; ``supports`` (M, R, s); ``first_step_max`` (R,) ``max_j |v_j|`` of the first
    gradient step (for the noise-to-signal diagnostic)."""

    theta: np.ndarray
    scales: np.ndarray
    supports: np.ndarray
    first_step_max: np.ndarray


def niht(rng: np.random.Generator, stats: EpisodeStats, n: int, *, sparsity: int, n_iter: int,
         step: float, radius: float, noise_multiplier: float,
         sensitivity_mode: str = "worst-case") -> NIHTResult:
    """N-IHT from ``theta^0 = 0`` with ``n_iter >= 1`` iterations:

    ``v = theta^m - (eta/n)(A theta^m - b)``; ``theta~ = Peel(v; s, b_m)`` with
    ``b_m = noise_multiplier * lambda(theta^m)``; ``theta^{m+1} = Proj_C(theta~)``.

    ``noise_multiplier = 0`` is exact IHT (hard thresholding instead of peeling).
    ``sensitivity_mode="authors"`` uses :func:`sensitivity_authors` (uncertified).
    """
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1 (at least one IHT iteration), got {n_iter}")
    R, D = stats.n_reps, stats.feature_dim
    theta = np.zeros((R, D))
    scales = np.empty((n_iter, R))
    supports = np.empty((n_iter, R, sparsity), dtype=np.int64)
    first = None
    for m in range(n_iter):
        v = gradient_step(stats, theta, n, step)
        if first is None:
            first = np.abs(v).max(axis=1)
        if noise_multiplier == 0.0:
            lam = np.zeros(R)  # exact IHT (also when x_max or R is infinite)
        elif sensitivity_mode == "authors":
            lam = np.full(R, sensitivity_authors(n, step=step, x_max=stats.x_max,
                                                 r_max=stats.r_max, radius=radius))
        else:
            lam = sensitivity(theta, n, step=step, x_max=stats.x_max, r_max=stats.r_max,
                              blocks=stats.blocks)
        out = peel(rng, v, sparsity, noise_multiplier * lam)
        theta = project(out.values, radius, stats.blocks)
        scales[m] = out.scale
        supports[m] = out.support
    return NIHTResult(theta=theta, scales=scales, supports=supports, first_step_max=first)

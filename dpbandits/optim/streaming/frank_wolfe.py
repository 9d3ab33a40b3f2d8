"""Shared machinery of the streaming private Frank-Wolfe optimizers of Han et al. 2022.

:class:`~dpbandits.optim.streaming.dp_tofw.DPTOFW` (Algorithm 1, ``1 < p <= inf``) and
:class:`~dpbandits.optim.streaming.dp_pofw.DPPOFW` (Algorithm 2, ``p = 1``) share everything
except how the search direction is privatized; this module holds the common part:

* the recursive gradient of Xie et al. (2020) in its *sum form* (Han et al. 2022, eq. 3.1)::

      d_t = (1/(t+1)) sum_{i<=t} g_i,
      g_i = (i+1) grad f(theta_i, x_i) - i grad f(theta_{i-1}, x_i)

  with ``theta_0 = theta_1 = 0``. It equals the recursion (eq. A.1)
  ``d_t = grad f(theta_t, x_t) + (1 - rho_t)(d_{t-1} - grad f(theta_{t-1}, x_t))``,
  ``rho_t = 1/(t+1)``, when the recursion is started from ``d_0 = 0`` (then
  ``d_1 = g_1 / 2 = grad f(theta_1, x_1) / 2``), for any ``theta_0``
  (:func:`recursive_gradient` and :func:`recursive_gradient_sum_form` are the reference
  implementations the tests compare).

  *Paper inconsistency.* Algorithm 2 (and the text after eq. 3.1) initializes
  ``d_1 = grad f(theta_1, x_1)``; the recursion from that start equals the sum form plus
  ``grad f(theta_1, x_1) / (t+1)``, i.e. sample 1 enters with weight 2. The privacy proofs
  (A.1, A.6) bound the sensitivity through the sum form, and with the literal start the
  sensitivity of sample 1 is ``4L/(t+1)``, above the proofs' ``2(beta D + L)/(t+1)`` whenever
  ``L > beta D``. Both optimizers therefore use the sum form (Algorithm 1 uses it anyway);
  the tests pin the difference (``recursive_gradient(..., first="gradient")``);
* input clipping, which makes the Lipschitz and smoothness constants hold *by construction*:
  every ``x`` is scaled to ``||x||_q <= x_bound`` (``q`` dual to ``p``) and every ``y``
  clipped to ``[-y_bound, y_bound]`` before it is used. Clipping is part of the algorithm; it
  is counted per replication (``n_clipped``). The iterates stay in the l_p ball of radius
  ``radius`` (convex combinations of ``0`` and points of the ball), so ``theta_bound =
  radius`` also holds by construction, and ``L = loss.lipschitz(p, x_bound, radius,
  y_bound)``, ``beta = loss.smoothness(p, x_bound)``;
* the Frank-Wolfe step ``theta_{t+1} = theta_t + eta_t (v_t - theta_t)`` with
  ``eta_t = min(1, lr_scale / (t + 1))`` (the paper's ``1/(t+1)`` for ``lr_scale = 1``);
* the replace-one sensitivity of one increment ``g_i`` (:func:`increment_sensitivity`).

Sensitivity (Han et al. 2022, proofs A.1 and A.6)
-------------------------------------------------
Condition on the released past, so ``theta_1..theta_t`` are the same on neighbouring streams
that differ in sample ``i``; only ``g_i`` changes. Writing ``a = grad f(theta_i, x_i)``,
``b = grad f(theta_{i-1}, x_i)`` and primes for ``x_i'``::

    g_i - g_i' = i [(a - b) - (a' - b')] + (a - a')
    ||g_i - g_i'||_q <= 2 i beta ||theta_i - theta_{i-1}||_p + 2 L.

``i ||theta_i - theta_{i-1}||_p = i eta_{i-1} ||v_{i-1} - theta_{i-1}||_p <= min(i, lr_scale) D``
for ``i >= 2`` (and 0 for ``i = 1`` since ``theta_0 = theta_1``), with ``D = 2 radius``. Hence
``||g_i - g_i'||_q <= 2 (beta D s + L)`` with the *step factor* ``s = min(lr_scale, n)``;
``s = 1`` for the paper's steps, which gives the paper's ``2 (beta D + L)``. The "theorem"
calibrations keep the paper's constant ``beta D + L`` whenever ``lr_scale <= 1`` (valid, as
``s <= 1``) and use ``s = lr_scale`` otherwise; the "accountant" calibrations use the exact
``s``. The tests check the bound on adversarial streams.

Batching
--------
All state carries a leading batch axis of size ``n_reps`` and one ``step`` advances every
row with a handful of numpy calls (no Python loop over rows or coordinates). Rows are fully
independent (own data, own noise), so the batch axis can hold anything that should run in
lock-step: ``R`` replications, or ``K`` arms x ``R`` replications of a bandit agent stacked
as ``n_reps = R * K`` (row ``r * K + k`` = replication ``r``, arm ``k``; reshape the
``(R * K, d)`` iterate to ``(R, K, d)``). An agent that runs one DP-POFW per arm (DP-HDB)
can hold all arms in one optimizer this way: one calibration, one ``step`` per round for all
arms and replications (unselected arms get their synthetic sample in the same call). Separate
objects per arm also work; the accountant calibrations are cached per ``(n, eps, delta)``.
The privacy guarantee (``privacy``) is per row: it holds for each row's own stream.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._backends import HAVE_NUMBA, kernels
from dpbandits._validation import (
    SeedLike,
    as_rng,
    check_array,
    check_bound,
    check_int,
    check_nonnegative,
    check_positive,
)
from dpbandits.geometry import clip_limits, clip_rows, dual_exponent, norm_error_bound
from dpbandits.losses import Loss, LossLike
from dpbandits.optim.base import StreamingOptimizer, check_privacy_target, resolve_loss
from dpbandits.privacy.plan import Planned, check_calibration

__all__ = [
    "CALIBRATIONS",
    "StreamingFrankWolfe",
    "frank_wolfe_step_size",
    "gradient_increment",
    "increment_sensitivity",
    "recursive_gradient",
    "recursive_gradient_sum_form",
    "step_factor",
]

CALIBRATIONS = frozenset({"theorem", "accountant"})

# Noise is drawn in chunks of steps (fewer, larger RNG calls); at most this many float64
# values per chunk so memory stays bounded for large batches.
_CHUNK_VALUES = 1 << 19
_MAX_CHUNK_STEPS = 256


# --------------------------------------------------------------------------- reference maths
def frank_wolfe_step_size(t: int, lr_scale: float = 1.0) -> float:
    """``eta_t = min(1, lr_scale / (t + 1))`` (Han et al. 2022: ``1/(t+1)`` for
    ``lr_scale = 1``)."""
    return min(1.0, lr_scale / (t + 1.0))


def gradient_increment(grad_cur: ArrayLike, grad_prev: ArrayLike, t: int) -> np.ndarray:
    """``g_t = (t+1) grad f(theta_t, x_t) - t grad f(theta_{t-1}, x_t)`` (eq. 3.1)."""
    return (t + 1.0) * np.asarray(grad_cur, dtype=np.float64) - t * np.asarray(
        grad_prev, dtype=np.float64
    )


def recursive_gradient(grads_cur: ArrayLike, grads_prev: ArrayLike, first: str = "zero"
                       ) -> np.ndarray:
    """Recursive form (eq. A.1): ``d_t = grad_cur[t] + (1 - 1/(t+1)) (d_{t-1} - grad_prev[t])``.

    ``grads_cur[t-1] = grad f(theta_t, x_t)`` and ``grads_prev[t-1] = grad f(theta_{t-1}, x_t)``,
    shape ``(n, ..., d)``; returns all ``d_t``, same shape. ``first="zero"`` starts from
    ``d_0 = 0`` (equal to the sum form, eq. 3.1); ``first="gradient"`` uses Algorithm 2's
    literal ``d_1 = grad f(theta_1, x_1)`` (module docstring). Reference implementation (loop
    over time) for tests; the optimizers use the sum form.
    """
    if first not in ("zero", "gradient"):
        raise ValueError(f"first must be 'zero' or 'gradient', got {first!r}")
    gc = np.asarray(grads_cur, dtype=np.float64)
    gp = np.asarray(grads_prev, dtype=np.float64)
    out = np.empty_like(gc)
    prev = np.zeros_like(gc[0])
    for k in range(gc.shape[0]):
        t = k + 1
        if k == 0 and first == "gradient":
            out[0] = gc[0]
        else:
            out[k] = gc[k] + (1.0 - 1.0 / (t + 1.0)) * (prev - gp[k])
        prev = out[k]
    return out


def recursive_gradient_sum_form(grads_cur: ArrayLike, grads_prev: ArrayLike) -> np.ndarray:
    """Sum form (eq. 3.1): ``d_t = (1/(t+1)) sum_{i<=t} g_i``; same arguments and shape as
    :func:`recursive_gradient`, and equal to it (with ``first="zero"``)."""
    gc = np.asarray(grads_cur, dtype=np.float64)
    gp = np.asarray(grads_prev, dtype=np.float64)
    t = np.arange(1, gc.shape[0] + 1, dtype=np.float64).reshape((-1,) + (1,) * (gc.ndim - 1))
    g = (t + 1.0) * gc - t * gp
    return np.cumsum(g, axis=0) / (t + 1.0)


def step_factor(lr_scale: float, horizon: int) -> float:
    """``s = min(lr_scale, horizon)``: bound on ``i ||theta_i - theta_{i-1}||_p / D``."""
    return min(float(lr_scale), float(horizon))


def increment_sensitivity(lipschitz: float, smoothness: float, diameter: float,
                          factor: float = 1.0) -> float:
    """Replace-one l_q sensitivity of one increment: ``2 (beta D s + L)`` (module docstring)."""
    return 2.0 * (smoothness * diameter * factor + lipschitz)


_COUNT_RTOL = 1e-9


def _clip_rows(x: np.ndarray, q: float, bound: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of ``x`` scaled to ``||row||_q <= bound`` by :func:`dpbandits.geometry.clip_rows`
    (the rule of ``clip_to_norm``); returns the clipped array and the rows counted as clipped
    (norm > bound (1 + 1e-9)), or ``None`` when no row is over the bound."""
    if _compiled_clip(x, q, bound):
        kernel, limit, target, shrink = _clip_constants(q, bound, x.shape[-1])
        out = np.empty_like(x)
        norms = np.empty(x.shape[0])
        moved = kernel(x, q, limit, target, shrink, out, norms)
        clipped = x if moved == 0 else out
    else:
        clipped, norms = clip_rows(x, q, bound)
    if clipped is x:
        return x, None
    return clipped, norms > bound * (1.0 + _COUNT_RTOL)


@functools.lru_cache(maxsize=32)
def _clip_constants(q: float, bound: float, d: int) -> tuple[Callable, float, float, float]:
    """The compiled clip and its ``(limit, target, shrink)`` (:func:`clip_limits`, the
    shrink factor of ``geometry._onto``) for rows of length ``d``."""
    limit, target = clip_limits(bound, q, d)
    shrink = 1.0 - 2.0 * norm_error_bound(q, d) - 12.0 * 2.0**-53
    return kernels("optim.streaming._clip_kernels").clip_rows_lq, limit, target, shrink


def _compiled_clip(x: np.ndarray, q: float, bound: float) -> bool:
    """Whether the compiled twin of ``clip_rows`` takes these rows (bit for bit the same)."""
    return (HAVE_NUMBA and x.ndim == 2 and 1.0 < q < math.inf and q != 2.0
            and 2.0**-800 <= bound < math.inf and x.shape[-1] <= 128
            and x.dtype == np.float64 and x.flags.c_contiguous)


def _chunk_steps(values_per_step: int, remaining: int) -> int:
    per = max(1, int(values_per_step))
    return max(1, min(remaining, _MAX_CHUNK_STEPS, _CHUNK_VALUES // per))


class _ChunkedDraws:
    """Pre-draws per-step noise in chunks of steps: ``draw(rng, k)`` returns ``k`` steps'
    worth (leading axis ``k``); ``next(rng)`` hands them out one step at a time.

    Chunk sizes depend only on the horizon and the per-step size, so the stream of draws is
    reproducible from the seed. Exactly the steps up to the horizon are drawn.
    """

    def __init__(self, draw: Callable[[np.random.Generator, int], np.ndarray],
                 values_per_step: int, horizon: int) -> None:
        self._draw = draw
        self._per = values_per_step
        self._left = horizon
        self._buf: np.ndarray | None = None
        self._i = 0

    def next(self, rng: np.random.Generator) -> np.ndarray:
        if self._buf is None or self._i >= self._buf.shape[0]:
            if self._left <= 0:
                raise RuntimeError("noise requested beyond the horizon")  # pragma: no cover
            k = _chunk_steps(self._per, self._left)
            self._buf = self._draw(rng, k)
            self._left -= k
            self._i = 0
        out = self._buf[self._i]
        self._i += 1
        return out

    def __call__(self, rng, shape=None):
        """Node-noise callable for :class:`dpbandits.privacy.tree.TreeAggregator`."""
        return self.next(rng)


# --------------------------------------------------------------------------- base class
class StreamingFrankWolfe(Planned, StreamingOptimizer):
    """Common part of DP-TOFW and DP-POFW (see the module docstring).

    Parameters
    ----------
    loss : :class:`dpbandits.losses.Loss` or str
        A loss of a linear predictor (``"squared"``, ``"logistic"``, ``"huber"`` or an
        instance); its ``lipschitz``/``smoothness`` give ``L`` and ``beta``.
    dim : int >= 1
        Dimension ``d`` of ``x`` and ``theta`` (the noise calibration of DP-TOFW depends on it).
    p : float
        Exponent of the l_p-ball constraint set ``{||theta||_p <= radius}``.
    radius : float > 0
        Radius of the ball; diameter ``D = 2 radius``.
    horizon : int >= 1
        Number of samples ``n``; the noise is calibrated for (and ``step`` refuses more than)
        ``n`` steps.
    epsilon : float
        Target epsilon > 0 (or inf) of the whole released sequence; ``inf`` turns the noise off.
    delta : float or None
        Target delta in (0, 1) (ignored, and may be 0, when ``epsilon = inf``).
    calibration : {"theorem", "accountant"}, default "theorem"
        How the noise is calibrated for ``(epsilon, delta)`` (see each optimizer).
    x_bound : float, default 1.0
        Bound > 0: inputs are clipped to ``||x||_q <= x_bound`` (``q`` dual to ``p``). May
        be ``inf`` only when ``epsilon = inf``.
    y_bound : float, default 1.0
        Bound >= 0: responses are clipped to ``|y| <= y_bound``. May be ``inf`` only when
        ``epsilon = inf``.
    lr_scale : float, default 1.0
        Scale > 0 of the step ``eta_t = min(1, lr_scale / (t + 1))`` (1: the paper's steps).
        Steps larger than the paper's raise the sensitivity (module docstring) and hence the
        noise.

    After ``reset(n_reps, rng)``, ``step(x, y)`` with ``x`` of shape ``(n_reps, dim)`` and
    ``y`` of shape ``(n_reps,)`` returns ``theta_{t+1}``, shape ``(n_reps, dim)`` (a copy).
    """

    _algorithm = "streaming Frank-Wolfe"

    def __init__(self, loss: str | LossLike, *, dim: int, p: float, radius: float,
                 horizon: int, epsilon: float, delta: float | None,
                 calibration: str = "theorem", x_bound: float = 1.0, y_bound: float = 1.0,
                 lr_scale: float = 1.0) -> None:
        # scikit-learn style: parameters stored unchanged, validated copies kept privately.
        self._store_params(locals())
        # duck-typed beyond LossLike: lipschitz/smoothness are checked next, _psi is used for
        # Loss instances only (self._linear)
        self._loss = cast(Any, resolve_loss(loss))
        if not (callable(getattr(self._loss, "lipschitz", None))
                and callable(getattr(self._loss, "smoothness", None))):
            raise TypeError(
                "loss must provide lipschitz and smoothness bounds (see dpbandits.losses): the "
                f"noise is calibrated with them, got {type(loss).__name__}")
        self._linear = isinstance(self._loss, Loss)
        self._d = check_int("dim", dim, low=1)
        self._p = self._check_p(p)
        self._q = dual_exponent(self._p)
        self._radius = check_positive("radius", radius)
        self._n = check_int("horizon", horizon, low=1)
        self._eps, self._delta, self._private = check_privacy_target(
            epsilon, delta, type(self).__name__)
        self._calibration = check_calibration(calibration, sorted(CALIBRATIONS),
                                              type(self).__name__)
        allow_inf = not self._private
        self._x_bound = check_positive("x_bound", x_bound, allow_inf=allow_inf)
        self._y_bound = check_nonnegative("y_bound", y_bound, allow_inf=allow_inf)
        if self._private:
            # the sensitivity multiplies up to three of these: in BOUND_RANGE none of its
            # terms (e.g. smoothness = x_bound**2) underflows or overflows
            check_bound("radius", self._radius)
            check_bound("x_bound", self._x_bound)
            if self._y_bound:
                check_bound("y_bound", self._y_bound)
        self._lr = check_positive("lr_scale", lr_scale)

        self._D = 2.0 * self._radius
        if math.isfinite(self._x_bound) and math.isfinite(self._y_bound):
            self._L = float(self._loss.lipschitz(self._p, self._x_bound, self._radius,
                                                 self._y_bound))
            self._beta = float(self._loss.smoothness(self._p, self._x_bound))
        else:
            self._L = self._beta = math.inf
        self._s_exact = step_factor(self._lr, self._n)
        self._s_theorem = max(1.0, self._s_exact)

        self._state: dict[str, Any] | None = None

    # ------------------------------------------------------------------ subclass hooks
    @staticmethod
    @abstractmethod
    def _check_p(p) -> float:
        """Validated ``p`` for the algorithm."""

    @abstractmethod
    def _reset_private_state(self, n_reps: int, rng: np.random.Generator) -> None:
        """Per-reset state of the direction / selection (tree, noise buffers, sums)."""

    @abstractmethod
    def _advance(self, g: np.ndarray, t: int, theta: np.ndarray, eta: float,
                 out: np.ndarray) -> None:
        """Consume the increment ``g_t`` (R, d), choose ``v_t`` and write the new iterate
        ``theta + eta (v_t - theta)`` into ``out`` (distinct memory; ``theta`` must not be
        modified). Must set ``state["direction"]`` to the ``d_t`` that entered the LMO."""

    # ------------------------------------------------------------------ calibration
    # ``_make_plan`` (each algorithm's) computes the NoisePlan on first use: ``privacy`` and
    # ``ledger`` (of the whole released sequence theta_2, ..., theta_{n+1} per row) are the
    # plan's, and ``reset`` draws the noise from its scales.
    @property
    def calibration_used(self) -> str:
        """``"theorem"``/``"accountant"``: whose noise is in force (``"none"`` if not private;
        the plan's calibration)."""
        return self.plan.calibration

    # ------------------------------------------------------------------ constants
    @property
    def lipschitz(self) -> float:
        """``L``: bound on ``||grad f||_q`` for clipped inputs and iterates in the ball."""
        return self._L

    @property
    def smoothness(self) -> float:
        """``beta``: ``||grad f(a) - grad f(b)||_q <= beta ||a - b||_p`` for clipped inputs."""
        return self._beta

    @property
    def diameter(self) -> float:
        """``D = 2 radius``, the l_p diameter of the constraint set."""
        return self._D

    @property
    def dual_exponent(self) -> float:
        """``q`` with ``1/p + 1/q = 1``: the norm of ``x_bound`` and of the sensitivities."""
        return self._q

    @property
    def sensitivity(self) -> float:
        """Replace-one l_q sensitivity of one increment ``g_i`` used by the calibration in
        force: ``2 (beta D s + L)`` (module docstring; ``s`` depends on the calibration)."""
        s = self._s_theorem if self._calibration == "theorem" else self._s_exact
        return increment_sensitivity(self._L, self._beta, self._D, s)

    # ------------------------------------------------------------------ state
    def _require_state(self) -> dict[str, Any]:
        if self._state is None:
            raise RuntimeError(
                f"{type(self).__name__}: call reset(n_reps, rng) before step / state access"
            )
        return self._state

    @property
    def n_reps(self) -> int:
        """Rows of the batch axis (replications, or replications x arms)."""
        return self._require_state()["R"]

    @property
    def t(self) -> int:
        """Samples consumed since the last reset."""
        return self._require_state()["t"]

    @property
    def theta(self) -> np.ndarray:
        """Current iterate ``theta_{t+1}`` (``(R, d)`` copy; zeros before the first step)."""
        st = self._require_state()
        return st["thetas"][st["cur"]].copy()

    @property
    def last_direction(self) -> np.ndarray:
        """The search direction ``d_t`` of the last step as it entered the LMO: noisy
        (``tilde G_t / (t+1)``) for DP-TOFW, exact for DP-POFW (whose noise is in the
        selection). ``(R, d)`` copy."""
        st = self._require_state()
        if st["direction"] is None:
            raise RuntimeError("no step taken yet")
        return st["direction"].copy()

    @property
    def n_clipped(self) -> np.ndarray:
        """Per row, how many samples had ``x`` or ``y`` clipped (``(R,)`` int64 copy)."""
        return self._require_state()["n_clipped"].copy()

    def reset(self, n_reps: int, rng: SeedLike) -> StreamingFrankWolfe:
        """Fresh state for ``n_reps`` rows; all noise drawn from ``rng`` (a Generator, or a
        seed passed to ``numpy.random.default_rng``)."""
        R = check_int("n_reps", n_reps, low=1)
        rng = as_rng(rng, "rng")
        d = self._d
        self._state = {
            "R": R,
            "t": 0,
            "rng": rng,
            # slot cur holds theta_t, the other slot theta_{t-1} (theta_0 = theta_1 = 0); the
            # new iterate overwrites theta_{t-1}, then the roles swap.
            "thetas": np.zeros((2, R, d)),
            "cur": 0,
            "n_clipped": np.zeros(R, dtype=np.int64),
            "direction": None,
            "ones": np.ones((2, R, 1)),
        }
        self._reset_private_state(R, rng)
        return self

    def _clip(self, x: np.ndarray, y: np.ndarray, st) -> tuple[np.ndarray, np.ndarray]:
        """Clip ``x`` to ``||x||_q <= x_bound`` and ``y`` to ``[-y_bound, y_bound]``; count.

        Rows over the bound are rescaled by :func:`dpbandits.geometry.clip_rows` (the
        exact norm of every row returned is at most the bound; the tests check it agrees
        with ``clip_to_norm``). A row counts as
        clipped when its norm exceeds the bound by more than a relative ``1e-9``: data the
        caller normalised to the bound is rescaled by at most an ulp, which is not counted.
        A ``y`` counts when ``|y| > y_bound``.
        """
        clipped = None
        if math.isfinite(self._x_bound):
            x, clipped = _clip_rows(x, self._q, self._x_bound)
        if math.isfinite(self._y_bound):
            over_y = np.abs(y) > self._y_bound
            if over_y.any():
                y = np.clip(y, -self._y_bound, self._y_bound)
                clipped = over_y if clipped is None else (clipped | over_y)
        if clipped is not None:
            st["n_clipped"] += clipped
        return x, y

    def _increment(self, x: np.ndarray, y: np.ndarray, t: int, st) -> np.ndarray:
        """``g_t`` for all rows, from one evaluation at ``theta_t`` and ``theta_{t-1}``."""
        thetas, cur = st["thetas"], st["cur"]
        if self._linear:
            # Every dpbandits.losses.Loss is f = phi(<x, theta>, y), grad = psi(z, y) x, so
            # g_t = [(t+1) psi(z_t) - t psi(z_{t-1})] x. psi is the documented subclass hook
            # Loss._psi (the public gradient with a unit feature would give the same).
            z = np.einsum("krd,rd->kr", thetas, x)
            psi = self._loss._psi(z, y)
            return ((t + 1.0) * psi[cur] - t * psi[1 - cur])[:, None] * x
        grads = self._loss.gradient(thetas, x, y)  # (2, R, d)
        return (t + 1.0) * grads[cur] - t * grads[1 - cur]

    def _contributions(self, x: np.ndarray, y: np.ndarray):
        """Each sample's increment ``g_{t+1}`` at row 0's current iterates, after the input
        clip, noiseless (:mod:`dpbandits.privacy.contributions`): what one step adds to the
        sum the noise protects, with the l_q sensitivity the calibration uses
        (:attr:`sensitivity`). Nothing is counted or advanced."""
        from dpbandits.privacy.contributions import Contribution

        st = self._require_state()
        n = x.shape[0]
        xc, yc = self._clip(x, y, {"n_clipped": np.zeros(n, dtype=np.int64)})
        row0 = {"thetas": np.repeat(st["thetas"][:, :1], n, axis=1), "cur": st["cur"]}
        g = self._increment(xc, yc, st["t"] + 1, row0)
        return [Contribution("increment", g, self.sensitivity, self._q)]

    def _check_horizon(self, st) -> None:
        if st["t"] >= self._n:
            raise ValueError(
                f"{type(self).__name__}: step {st['t'] + 1} exceeds horizon={self._n} "
                "(the noise was calibrated for horizon steps; reset or build a longer horizon)"
            )

    def step(self, x: ArrayLike, y: ArrayLike) -> np.ndarray:
        """Consume one sample per row (``x`` (R, d), ``y`` (R,)); return ``theta_{t+1}``."""
        st = self._require_state()
        R, d = st["R"], self._d
        self._check_horizon(st)
        x = check_array("x", x, shape=(R, d))
        y = check_array("y", y, shape=(R,))
        self._step_core(x, y, None, 0.0)
        return st["thetas"][st["cur"]].copy()

    def _step_rows(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray,
                   y_synth: float) -> None:
        """``step`` without the input checks, for agents: rows where ``mask`` (R,) bool is
        False take the synthetic sample ``(0, y_synth)`` instead of ``(x, y)`` (DP-HDB's
        unselected arms). Read the new iterate with :meth:`_current`."""
        st = self._require_state()
        self._check_horizon(st)
        self._step_core(x, y, mask, y_synth)

    def _current(self) -> np.ndarray:
        """The current iterate, a view (R, d): read it before the next step."""
        st = self._state
        return st["thetas"][st["cur"]]

    def _step_core(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray | None,
                   y_synth: float) -> None:
        st = self._state
        if mask is not None:
            x = np.where(mask[:, None], x, 0.0)
            y = np.where(mask, y, y_synth)
        x, y = self._clip(x, y, st)
        t = st["t"] + 1
        g = self._increment(x, y, t, st)
        cur = st["cur"]
        thetas = st["thetas"]
        self._advance(g, t, thetas[cur], frank_wolfe_step_size(t, self._lr), thetas[1 - cur])
        st["cur"] = 1 - cur
        st["t"] = t

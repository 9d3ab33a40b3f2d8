"""The two agents of Figure 5.1 *as the authors' code runs them* — NOT certified.

These exist only to reproduce panel A of the Figure 5.1 reproduction ("as published"): the
published curves come from code that departs from both papers (the departures are listed
below; ``experiments/fig5_1/README.md`` measures them). They are reconstructed from written
descriptions of the code, not from the code itself. Their ``privacy`` is marked not
certified, with the reason; :func:`authors_dphdb_per_step_epsilons` and
:func:`authors_dpucb_noise_multiplier` give what their noise actually supports, for the
accountant.

* ``dp-hdb-authors-code``: one recursive-gradient vector shared by all arms, only the pulled
  arm's estimate is updated (no synthetic update), the global round index drives step sizes
  and noise, and the LMO adds Laplace noise of scale
  ``4 sqrt(log T log(1/delta)) / (epsilon sqrt(t+1))`` to the ``|d_t|`` coordinates — without
  Algorithm 2's ``D (beta D + L)`` factor. The warm-up alternates arms (round ``t``, 0-based,
  pulls ``t mod K`` for ``t <= K t0``: ``K t0 + 1`` rounds, not Algorithm 3's ``t0`` rounds
  per arm in blocks) and the forced-sampling estimates are every arm's estimate when the
  warm-up ends. Meant for l_1-normalized contexts.
* ``dp-ucb-authors-code``: fresh symmetrized Gaussian noise every round (no tree), no PSD
  shift, ``L = sqrt(dK)`` with no reward term in the scale, the upper-bound form of beta_t
  with the per-arm ``d``, and the squared-norm bonus ``beta x^T V^-1 x``. The code inverts
  ``V``; this solves ``V w = [u~, phi_1 .. phi_K]`` (symmetric indefinite LDL^T, the same
  numbers up to rounding). The symmetrized noise is drawn from its ``D(D+1)/2`` independent
  entries (:func:`dpbandits.privacy.mechanisms.symmetric_gaussian`), then the ``D``
  normals of the target, per round, a chunk of rounds at a time.

Their plans (calibration ``"authors"``, no ledger) hold the code's noise: ``laplace_c`` of
``dp-hdb-authors-code`` (the Laplace scale of round ``t`` is ``laplace_c / (epsilon
sqrt(t+1))``, ``laplace_c = 4 sqrt(log T log(1/delta))``, in units of the gradient
coordinates) and ``sigma`` of ``dp-ucb-authors-code`` (the per-round standard deviation of
:func:`authors_dpucb_sigma`, in units of the Gram entries).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from dpbandits._validation import check_choice, check_positive
from dpbandits.agents._ucb_ops import BACKENDS, ucb_ops
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.agents.dp_hdb import preselected_greedy, resolve_t0
from dpbandits.agents.dp_ucb import _normals, gaussian_bounds, tree_depth
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import laplace_noise
from dpbandits.privacy.plan import NoisePlan
from dpbandits.privacy.streams import ChunkedDraws

__all__ = ["DPHDBAuthorsCode", "DPUCBAuthorsCode"]  # the agents; the rest supports them


def authors_dphdb_numerator(horizon: int, delta: float) -> float:
    """``4 sqrt(log T log(1/delta))``, the numerator of the code's Laplace scale."""
    return 4.0 * math.sqrt(math.log(horizon) * math.log(1 / delta))


def authors_dphdb_scale(horizon: int, epsilon: float, delta: float, t) -> np.ndarray:
    """The code's Laplace scale ``4 sqrt(log T log(1/delta)) / (epsilon sqrt(t+1))``."""
    return _dphdb_scale(authors_dphdb_numerator(horizon, delta), epsilon, t)


def _dphdb_scale(numerator: float, epsilon: float, t) -> np.ndarray:
    return numerator / (epsilon * np.sqrt(np.asarray(t, dtype=float) + 1.0))


def authors_dphdb_per_step_epsilons(horizon, epsilon, delta, *, radius=1.0, x_bound=1.0,
                                    y_bound=1.0) -> np.ndarray:
    """Per-step epsilon the code's selection really has, for one arm's stream.

    As in Algorithm 2's analysis (proof A.6; :mod:`dpbandits.optim.streaming.dp_pofw`):
    replacing one sample moves ``d_t`` by at most ``2 (beta D + L)/(t+1)`` in l_inf and each
    score ``|d_{t,j}|`` by as much, so report-noisy-max with scale ``b_t`` is
    ``2 * 2 (beta D + L) / ((t+1) b_t)``-DP. Squared loss: ``L = (x r + y) x``,
    ``beta = x^2`` with ``x = x_bound`` (l_inf), ``r = radius``, ``D = 2 r``.
    """
    t = np.arange(1, horizon + 1, dtype=float)
    L = (x_bound * radius + y_bound) * x_bound
    beta = x_bound**2
    C = beta * 2 * radius + L
    return 4.0 * C / ((t + 1.0) * authors_dphdb_scale(horizon, epsilon, delta, t))


def authors_dpucb_sigma(horizon, n_arms, dim, epsilon, delta) -> float:
    """The code's per-round noise std ``sqrt(16 m) L^2 ln(4/delta)/epsilon`` with
    ``L = sqrt(dK)`` (no reward term)."""
    return math.sqrt(16 * tree_depth(horizon)) * (dim * n_arms) * math.log(4 / delta) / epsilon


def authors_dpucb_noise_multiplier(horizon, n_arms, dim, epsilon, delta) -> float:
    """Noise multiplier (std / l_2 sensitivity) of one round's release in the code's DP-UCB.

    Per round ``sigma`` of :func:`authors_dpucb_sigma`; a datum of ``||[x; y]|| <= L~``
    moves the Gram matrix by ``L~^2`` (effective, symmetrized noise). With
    ``L~^2 = dK + 1`` (rewards up to 1), fresh noise every round means every later round's
    release is another Gaussian mechanism on the same datum: ``T`` compositions.
    """
    return authors_dpucb_sigma(horizon, n_arms, dim, epsilon, delta) / (dim * n_arms + 1.0)


_CAVEAT_HDB = ("reconstruction of the authors' code: Laplace scale without Algorithm 2's "
               "D(beta D + L) factor, one gradient shared across arms, no synthetic update")
_CAVEAT_UCB = ("reconstruction of the authors' code: fresh noise every round (each datum "
               "enters T releases, not m tree nodes), no PSD shift")


#: contract checks the reconstructions are expected to fail (dpbandits.testing)
_NOT_CERTIFIED = {"check_adversarial_inputs": (
    "a reconstruction of the authors' code, reported NOT CERTIFIED: its noise is not "
    "calibrated to a sensitivity of what it releases, so there is no declared bound to "
    "hold its per-user terms to (no _contributions hook)")}


@register_agent("dp-hdb-authors-code")
class DPHDBAuthorsCode(PrivateAgent):
    """DP-HDB as the authors' code runs it (module docstring). Not certified.

    Parameters
    ----------
    t0 : int or None, default None
        Forced pulls per arm, >= 1; None uses
        :func:`~dpbandits.agents.dp_hdb.default_t0`. ``n_arms * t0 + 1`` must be below the
        horizon.
    h_sub : float, default 1.0
        Pre-selection gap of the greedy choice (as in :class:`~dpbandits.agents.dp_hdb.DPHDB`).
    radius : float, default 1.0
        Radius r > 0 of the l_1 ball of each arm's parameter.
    """

    _xfail_checks = _NOT_CERTIFIED
    supported_links = ("identity",)

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, t0: int | None = None, h_sub: float = 1.0,
                 radius: float = 1.0):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.t0 = t0
        self.h_sub = h_sub
        self.radius = radius
        self._t0 = resolve_t0(t0, dim, horizon, self._eps, n_arms)
        #: rounds of the alternating warm-up: the code's ``t <= k t0`` with 0-based t
        self.warmup_rounds = n_arms * self._t0 + 1
        if self.warmup_rounds >= horizon:
            raise ValueError(f"t0 * n_arms + 1 must be < horizon={horizon}, got t0={self._t0} "
                             f"and n_arms={n_arms}")
        check_positive("radius", radius)
        c = authors_dphdb_numerator(horizon, self._delta) if self._private else 0.0
        self._plan = NoisePlan("authors", {"laplace_c": c}, PrivacyGuarantee(
            self._eps, self._delta, notion="JDP", certified=False,
            basis="authors' code of Han et al. 2022", caveat=_CAVEAT_HDB))

    def _reset(self, n_reps, rng):
        self._rng = rng
        self._theta = np.zeros((n_reps, self.n_arms, self.dim))
        self._prev = np.zeros((n_reps, self.n_arms, self.dim))
        self._theta_fs = np.zeros((n_reps, self.n_arms, self.dim))
        self._d = np.zeros((n_reps, self.dim))

    def act(self, contexts):
        if self.t_ < self.warmup_rounds:
            # the code's decide(): round t (0-based) <= k t0 pulls arm t % k, alternating
            return np.full(contexts.shape[0], self.t_ % self.n_arms, dtype=np.int64)
        return preselected_greedy(contexts, self._theta_fs, self._theta, self.h_sub)

    def _update(self, contexts, arms, rewards):
        t = self.t_ + 1  # global round index
        R = contexts.shape[0]
        rows = np.arange(R)
        th, prev = self._theta[rows, arms], self._prev[rows, arms]
        g = (np.einsum("rd,rd->r", contexts, th) - rewards)[:, None] * contexts
        g_prev = (np.einsum("rd,rd->r", contexts, prev) - rewards)[:, None] * contexts
        self._d = g + (1.0 - 1.0 / (t + 1)) * (self._d - g_prev) if t > 1 else g
        if self._private:
            b = _dphdb_scale(self._plan.scales["laplace_c"], self._eps, t)
            # the code's Laplace(b) noise on |d| (numpy's inversion stream, as it always drew)
            noisy = np.abs(self._d) + laplace_noise(self._rng, b, self._d.shape,
                                                    method="inversion")
        else:
            noisy = np.abs(self._d)
        j = noisy.argmax(axis=1)
        v = np.zeros_like(th)
        v[rows, j] = -self.radius * np.sign(self._d[rows, j])
        eta = 1.0 / (t + 1)
        self._prev[rows, arms] = th
        self._theta[rows, arms] = th + eta * (v - th)
        if t == self.warmup_rounds:
            # the code snapshots every arm's estimate when round k t0 + 1 (0-based) begins
            self._theta_fs[:] = self._theta


@register_agent("dp-ucb-authors-code")
class DPUCBAuthorsCode(PrivateAgent):
    """DP-UCB as the authors' code of Han et al. 2022 runs it (module docstring). Not certified.

    Parameters
    ----------
    noise_std : float, default 0.05
        Sub-Gaussian parameter sigma of the reward noise (sets the confidence radius).
    theta_bound : float, default 1.0
        Bound S on the parameters' norm (sets the confidence radius).
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``/``"numba"``: compiled kernels; ``"numpy"``: numpy only, same streams.
    """

    _xfail_checks = _NOT_CERTIFIED
    supported_links = ("identity",)

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, noise_std: float = 0.05, theta_bound: float = 1.0,
                 backend: str = "auto"):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.noise_std = noise_std
        self.theta_bound = theta_bound
        self.backend = backend
        check_choice("backend", backend, BACKENDS)
        alpha = 1.0 / horizon
        sigma = (authors_dpucb_sigma(horizon, n_arms, dim, self._eps, self._delta)
                 if self._private else 0.0)
        self._plan = NoisePlan("authors", {"sigma": sigma}, PrivacyGuarantee(
            self._eps, self._delta, notion="JDP", certified=False,
            basis="authors' code of Han et al. 2022", caveat=_CAVEAT_UCB))
        self._ups, self._gamma = 0.0, 0.0
        if self._private:  # Proposition 11's constants for the code's sigma
            bounds = gaussian_bounds(horizon, dim * n_arms, sigma, alpha)
            self._ups, self._gamma = bounds["upsilon"], bounds["gamma"]
        self._alpha = alpha

    def _reset(self, n_reps, rng):
        D = self.dim * self.n_arms
        self._rng = rng
        self._ops = ucb_ops(self.backend, n_reps, D)
        self._M = np.zeros((n_reps, D + 1, D + 1))  # [G, u; u^T, .] (upper triangle)
        self._A = np.zeros((n_reps, D, D))
        self._rhs = np.zeros((n_reps, self.n_arms + 1, D))
        self._ipiv = np.zeros((n_reps, D), dtype=np.int32)
        self._work = np.zeros((n_reps, 64 * D))
        P = D * (D + 1) // 2
        self._noise = None
        self._no_z = np.zeros((n_reps, 0))
        if self._plan.scales["sigma"] > 0:  # round t: P normals (the symmetric Z), then D
            self._noise = ChunkedDraws(partial(_normals, rng.spawn(1)[0], (n_reps, P + D)),
                                       self.horizon, n_reps * (P + D), prefetch=True)

    def act(self, contexts):
        x = contexts
        R, d, K = x.shape[0], self.dim, self.n_arms
        D = d * K
        if self._plan.scales["sigma"] > 0:
            zz = self._noise.next()[0]
            z, zu = zz[:, :-D], zz[:, -D:]
            rho_min, rho_max = self._ups, 3 * self._ups
        else:
            z = zu = self._no_z
            rho_min = rho_max = 1.0
        mean, quad, ok = np.empty((R, K)), np.empty((R, K)), np.empty(R, dtype=np.bool_)
        self._ops["authors_terms"](self._M, z, zu, self._plan.scales["sigma"], x, self._A,
                                   self._rhs, self._ipiv, self._work, mean, quad, ok)
        if not ok.all():
            raise np.linalg.LinAlgError("dp-ucb-authors-code: the noisy Gram matrix is "
                                        "exactly singular")
        t = self.t_ + 1
        Lsq = float(D)
        beta = (self.noise_std * math.sqrt(2 * math.log(2 / self._alpha) + d * math.log(
            rho_max / rho_min + t * Lsq / (d * rho_min)))
            + self.theta_bound * math.sqrt(rho_max) + self._gamma)
        return np.argmax(mean + beta * quad, axis=1)  # squared-norm bonus, as in the code

    def _update(self, contexts, arms, rewards):
        self._ops["gram_update"](self._M, contexts, arms, rewards)

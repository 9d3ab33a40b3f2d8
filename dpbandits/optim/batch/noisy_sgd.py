"""NoisySGD: projected noisy SGD with ``n^2`` steps (Bassily, Feldman, Guzmán & Talwar,
"Stability of stochastic gradient descent on nonsmooth convex losses", NeurIPS 2020,
Algorithm 2), one of the DP-SCO baselines of Han et al. 2022's Table 5.1 (shared conventions:
:mod:`dpbandits.optim.batch.lp_ball`).

Privacy: ``n^2`` steps, one index per step, Gaussian noise ``sigma`` per coordinate; the
replace-one l_2 sensitivity of one clipped gradient is ``2 L0`` (``q <= 2`` so ``||g||_2 <=
||g||_q``). The paper's ``sigma = sqrt(8 L0^2 log(1/delta)) / epsilon``
(``calibration="theorem"``) rests on the moments accountant of Abadi et al. (add/remove
neighbours, Poisson sampling); the replace-one RDP accountant certifies about 1.7 for it at a
target of ``epsilon = 1``, ``delta = 1/n`` (the add/remove reasoning does not carry over to
replace-one), and that is the reported ``privacy``. ``calibration="accountant"`` instead finds
the smallest sigma the accountant certifies for the target (about 1.6x the paper's).

The steps run in a numba-compiled kernel (:mod:`dpbandits.optim.batch._noisy_sgd_kernel`)
when the loss and constraint allow it, else in numpy; both consume the same random stream.
"""

from __future__ import annotations

import math
import time

import numpy as np
from dp_accounting import dp_event as _ev
from numpy.typing import ArrayLike

from dpbandits._backends import HAVE_NUMBA
from dpbandits._validation import (
    check_choice,
    check_delta_open,
    check_epsilon,
    check_int,
)
from dpbandits.geometry import gradient_rows, project_l2_ball, project_lp_ball
from dpbandits.losses import GLMLoss, HuberLoss, LogisticLoss, LossLike, SquaredLoss
from dpbandits.optim.base import CHUNK_ENTRIES, BatchResult, elapsed
from dpbandits.optim.batch import _noisy_sgd_kernel as _kernel
from dpbandits.optim.batch.data import start_fit
from dpbandits.optim.batch.lp_ball import LpBallOptimizer
from dpbandits.optim.batch.oracle import GradientOracle
from dpbandits.privacy import accounting
from dpbandits.privacy.accounting import SCO_BASELINE_ORDERS
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, PlanMethod, check_calibration

__all__ = ["BACKENDS", "NoisySGD", "noisy_sgd_noise_multiplier", "noisy_sgd_step_size"]


def noisy_sgd_step_size(n: int, d: int, *, radius: float, lipschitz: float, epsilon: float,
                        delta: float, lr_scale: float = 1.0) -> float:
    """``eta = lr_scale r / (L0 n max{sqrt(n), sqrt(d log(1/delta)) / eps})`` (constant)."""
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=1)
    eps = check_epsilon(epsilon)
    term = math.sqrt(d * math.log(1.0 / delta)) / eps if math.isfinite(eps) else 0.0
    return lr_scale * radius / (lipschitz * n * max(math.sqrt(n), term))


def noisy_sgd_noise_multiplier(n: int, n_steps: int, *, epsilon: float, delta: float,
                               calibration: str = "theorem") -> float:
    """Noise std of NoisySGD relative to the replace-one l_2 sensitivity ``2 L0``.

    ``"theorem"``: the paper's ``sigma = sqrt(8 L0^2 log(1/delta)) / eps``, i.e.
    ``sqrt(2 log(1/delta)) / eps``. ``"accountant"``: the smallest value (within 0.1%) for
    which the RDP accountant certifies ``(eps, delta)`` for ``n_steps`` steps sampling one of
    ``n`` indices (replace-one). ``inf`` when ``epsilon = inf`` (no noise).
    """
    n = check_int("n", n, low=1)
    n_steps = check_int("n_steps", n_steps, low=1)
    eps = check_epsilon(epsilon)
    calibration = check_calibration(calibration, CALIBRATIONS, "NoisySGD")
    if not math.isfinite(eps):
        return math.inf
    delta = check_delta_open(delta, why="for a private NoisySGD")
    theorem = math.sqrt(2.0 * math.log(1.0 / delta)) / eps
    if calibration == "theorem":
        return theorem
    return accounting.wor_gaussian_multiplier(n, 1, n_steps, eps, delta,
                                              orders=SCO_BASELINE_ORDERS, start=theorem,
                                              lower=None, growth=1.5, rtol=1e-3)


def _loss_code(loss) -> tuple[int, float] | None:
    """Compiled-kernel code of ``loss`` (exact built-in types only), else None."""
    if type(loss) in (GLMLoss, SquaredLoss, LogisticLoss):
        return (_kernel.LOSS_SQUARED if loss.link_name == "identity" else _kernel.LOSS_LOGISTIC,
                0.0)
    if type(loss) is HuberLoss:
        return _kernel.LOSS_HUBER, float(loss.huber_delta)
    return None


BACKENDS = frozenset({"auto", "numba", "numpy"})
#: the calibrations of NoisySGD (:mod:`dpbandits.privacy.plan`)
CALIBRATIONS = ("theorem", "accountant")


class NoisySGD(LpBallOptimizer):
    """Projected noisy SGD with ``n^2`` steps (Bassily et al. 2020, Alg. 2); for ``p >= 2``.

    Each step samples one index uniformly (with replacement across steps), clips its gradient
    to ``||g||_q <= L0``, adds ``N(0, sigma^2 I)`` and takes
    ``theta <- Proj_C(theta - eta (g + noise))`` (Euclidean projection onto the l_p ball; the
    l_inf box for ``p = inf``), with the constant step of :func:`noisy_sgd_step_size`. Output:
    the average of the iterates ``theta_1 .. theta_T``.

    Parameters
    ----------
    p : float, default inf
        Exponent in [2, inf] of the l_p-ball constraint (``q <= 2``, so the l_2 sensitivity of
        a clipped gradient is at most ``2 L0``).
    calibration : {"theorem", "accountant"}, default "theorem"
        ``"theorem"``: the paper's sigma (alias ``"paper"``); ``"accountant"``: the smallest
        sigma the replace-one RDP accountant certifies for the target (alias ``"pld"``); see
        the module docstring. The plan (:meth:`plan_for`) has one scale, ``multiplier``
        (``sigma / (2 L0)``, relative to the sensitivity ``2 L0``).
    n_steps : int or None, default None
        Number of steps ``T``; ``None`` means the paper's ``n^2``. The ledger counts the
        steps actually taken.
    n_history : int, default 100
        Number (>= 1) of evenly spaced checkpoints kept in the history (running averages;
        ``extra["iterates"]`` holds the raw iterates at the same steps).
    backend : {"auto", "numba", "numpy"}, default "auto"
        ``"auto"``: the numba kernel when the loss and constraint allow it; ``"numpy"``: numpy
        (vectorized over replications, a Python loop over steps). Both consume
        the same random stream and agree to rounding.
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3)
    _test_problem = "squared"

    p_range = (2.0, False, math.inf)

    def __init__(self, *, p: float = math.inf, radius: float = 1.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, lr_scale: float = 1.0,
                 calibration: str = "theorem", n_steps: int | None = None,
                 n_history: int = 100, backend: str = "auto") -> None:
        self._store_params(locals())
        self._check_ball()
        self._calibration = check_calibration(calibration, CALIBRATIONS, "NoisySGD")
        if n_steps is not None:
            check_int("n_steps", n_steps, low=1)
        check_int("n_history", n_history, low=1)
        check_choice("backend", backend, BACKENDS)
        if backend == "numba" and not HAVE_NUMBA:  # pragma: no cover
            raise ValueError("backend='numba' requested but numba is not installed")

    def _steps(self, n: int) -> int:
        return n * n if self.n_steps is None else int(self.n_steps)

    def step_size(self, n: int, d: int) -> float:
        """The constant step ``eta`` for ``n`` samples in dimension ``d``."""
        return noisy_sgd_step_size(n, d, radius=self._radius, lipschitz=self._L0,
                                   epsilon=self._eps, delta=self.delta_for(n),
                                   lr_scale=self._lr)

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """``T`` steps of a Gaussian on one index sampled from ``n`` (replace-one), and what
        the RDP accountant certifies for them."""
        if not self._private:
            return NoisePlan.non_private("NoisySGD without noise (epsilon = inf)",
                                         {"multiplier": 0.0},
                                         events=_ev.NonPrivateDpEvent())
        z = noisy_sgd_noise_multiplier(n, self._steps(n), epsilon=self._eps,
                                       delta=self.delta_for(n), calibration=self._calibration)
        ledger = accounting.wor_gaussian_event(n, 1, z, self._steps(n))
        if self._calibration == "theorem":
            basis = ("Bassily, Feldman, Guzman & Talwar 2020 Alg. 2 (NoisySGD), paper's noise "
                     "sigma^2 = 8 L0^2 log(1/delta)/eps^2 (argued with the add/remove moments "
                     "accountant)")
        else:
            basis = ("Bassily, Feldman, Guzman & Talwar 2020 Alg. 2 (NoisySGD), noise "
                     "calibrated by the replace-one RDP accountant")
        return NoisePlan(self._calibration, {"multiplier": z},
                         self._accountant_guarantee(ledger, basis, n), ledger,
                         {"multiplier": 2.0 * self._L0})

    @PlanMethod
    def noise_multiplier(self, n: int) -> float:
        """``sigma / (2 L0)`` for ``n`` samples, from the plan (``inf`` when not private;
        see :func:`noisy_sgd_noise_multiplier`)."""
        return self.plan_for(n).scales["multiplier"] if self._private else math.inf

    @PlanMethod
    def sigma(self, n: int) -> float:
        """Per-coordinate noise std ``sigma`` for ``n`` samples, from the plan (0 when not
        private)."""
        return 2.0 * self._L0 * self.plan_for(n).scales["multiplier"] if self._private else 0.0

    def _resolve_backend(self, loss) -> str:
        compiled_ok = (HAVE_NUMBA and _loss_code(loss) is not None
                       and (self._p == 2.0 or math.isinf(self._p)))
        if self.backend == "numba" and not compiled_ok:
            raise ValueError(
                "backend='numba' supports the squared, logistic and Huber losses with p = 2 "
                f"or p = inf; got loss {loss!r} with p={self._p} (use backend='numpy')"
            )
        if self.backend == "numpy" or not compiled_ok:
            return "numpy"
        return "numba"

    def _project(self, theta: np.ndarray) -> np.ndarray:
        if math.isinf(self._p):
            return np.clip(theta, -self._radius, self._radius)
        if self._p == 2.0:
            return project_l2_ball(theta, self._radius)
        return project_lp_ball(theta, self._p, self._radius)

    def fit(self, loss: str | LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        """Run NoisySGD on ``X`` ``(n, d)`` / ``(R, n, d)`` and ``y``; all draws from ``rng``.

        Per chunk of steps the sample indices ``(R, c)`` are drawn first, then standard
        normals ``(R, c, d)`` (scaled by sigma when used); chunk boundaries depend only on
        ``(R, d, T, n_history)``.
        """
        t0 = time.perf_counter()
        loss, rng, data = start_fit(loss, X, y, rng, n_reps)
        R, n, d = data.n_reps, data.n, data.d
        backend = self._resolve_backend(loss)
        T = self._steps(n)
        eta = self.step_size(n, d)
        sigma = self.sigma(n)
        use_noise = self._private and sigma > 0.0
        q, L0 = self._q, self._L0

        m = min(int(self.n_history), T)
        checkpoints = [(k * T) // m for k in range(1, m + 1)]
        hist = np.zeros((R, m, d))
        iters = np.zeros((R, m, d))
        times = np.zeros(m)
        theta = np.zeros((R, d))
        acc = np.zeros((R, d))
        n_clipped = np.zeros(R, dtype=np.int64)
        chunk_max = max(1, CHUNK_ENTRIES // (R * (d + 1)))

        if backend == "numba":
            code, hdelta = _loss_code(loss)
            proj = _kernel.PROJ_LINF if math.isinf(self._p) else _kernel.PROJ_L2
            rows = gradient_rows(data.Xs, q, L0)
            grid = [np.ascontiguousarray(a) for a in
                    (rows.rows, rows.norms, rows.unclipped, rows.clipped)]
            dummy = np.zeros((1, 1, 1))

        # One reusable buffer for the standard normals (filled in place: no page faults);
        # the kernel / numpy step multiplies them by sigma.
        buf = np.empty(R * min(chunk_max, T) * d) if use_noise else None
        done = 0
        for k, stop in enumerate(checkpoints):
            while done < stop:
                c = min(chunk_max, stop - done)
                idx = rng.integers(0, n, size=(R, c))
                noise = None
                if use_noise:
                    noise = buf[: R * c * d].reshape(R, c, d)
                    gaussian_noise(rng, 1.0, noise.shape, out=noise)
                if backend == "numba":
                    _kernel.sgd_chunk(theta, acc, data.Xs, grid[0], data.ys, *grid[1:], idx,
                                      dummy if noise is None else noise, use_noise, sigma, eta,
                                      L0, rows.limit, self._radius, proj, code, hdelta,
                                      n_clipped)
                else:
                    theta = self._numpy_chunk(loss, data, theta, acc, idx, noise, sigma, eta,
                                              n_clipped)
                done += c
            hist[:, k] = acc / done
            iters[:, k] = theta
            times[k] = elapsed(t0)

        return self._result(
            n, d,
            theta=acc / T,
            history=hist,
            history_steps=np.asarray(checkpoints, dtype=np.int64),
            n_clipped=n_clipped,
            n_gradient_evals=T,
            extra={
                "eta": eta,
                "sigma": sigma,
                "noise_multiplier": self.noise_multiplier(n) if self._private else math.inf,
                "n_steps": T,
                "backend": backend,
                "iterates": iters,
                "history_time": times,
                "seconds": elapsed(t0),
            },
        )

    def _contributions(self, loss, X, y, theta):
        """Each sample's clipped gradient at ``theta`` by the path a fit of ``loss`` takes:
        the compiled kernel's own clipping (:func:`_noisy_sgd_kernel.clipped_gradients`)
        when the fit would run it, else the
        :class:`~dpbandits.optim.batch.oracle.GradientOracle` of the numpy steps;
        sensitivity ``2 lipschitz`` in ``l_q`` (:mod:`dpbandits.privacy.contributions`)."""
        from dpbandits.optim.base import resolve_loss
        from dpbandits.optim.batch.data import prepare_data
        from dpbandits.privacy.contributions import Contribution

        loss = resolve_loss(loss)
        data = prepare_data(X, y, None)
        theta = np.ascontiguousarray(np.broadcast_to(
            np.asarray(theta, dtype=np.float64), (data.n, data.d)))
        if self._resolve_backend(loss) == "numba":
            code, hdelta = _loss_code(loss)
            rows = gradient_rows(np.asarray(data.X, dtype=np.float64), self._q, self._L0)
            g = np.empty((data.n, data.d))
            _kernel.clipped_gradients(theta, np.ascontiguousarray(data.X),
                                      np.ascontiguousarray(rows.rows), data.y, rows.norms,
                                      rows.unclipped, rows.clipped, rows.limit, code, hdelta,
                                      g)
        else:
            g, _ = GradientOracle(loss, data, self._L0, self._q).at_index(
                theta, np.arange(data.n))
        return [Contribution("gradient", g, 2.0 * self._L0, self._q)]

    def _numpy_chunk(self, loss, data, theta, acc, idx, noise, sigma, eta, n_clipped
                     ) -> np.ndarray:
        """Plain-numpy steps (vectorized over replications); same maths as the kernel (the
        clipped gradients of :class:`~dpbandits.optim.batch.oracle.GradientOracle`)."""
        oracle = GradientOracle(loss, data, self._L0, self._q)
        for k in range(idx.shape[1]):
            g, was = oracle.at_index(theta, idx[:, k])
            n_clipped += was
            if noise is not None:
                g = g + sigma * noise[:, k]
            theta = self._project(theta - eta * g)
            acc += theta
        return theta

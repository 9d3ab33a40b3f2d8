"""LocalMD: phased, localized noisy mirror descent (Asi, Feldman, Koren & Talwar, "Private
stochastic convex optimization: optimal rates in l1 geometry", ICML 2021, Algorithm 6 calling
Algorithm 5), one of the DP-SCO baselines of Table 5.1 of Han et al. 2022 (shared conventions:
:mod:`dpbandits.optim.batch.lp_ball`).

Privacy: Gaussian noise ``sigma_i = c L0 sqrt(d^{1-2/q} log(1/delta)) / (b_i eps_i)`` on the
mean of ``b_i`` gradients sampled without replacement from the phase's ``n_i`` samples; the
replace-one l_2 sensitivity of that mean is ``2 L0 d^{1/2-1/q} / b_i`` (``||g||_2 <=
d^{1/2-1/q} ||g||_q`` for ``q >= 2``), i.e. noise multiplier ``c sqrt(log(1/delta)) / (2
eps_i)``. Asi et al. prove privacy with the moments accountant and an unspecified constant
``c``; Han et al. 2022 used ``c = 100`` in their comparison. The phases use disjoint samples;
the ledger composes them sequentially anyway (conservative, and the budgets
``eps_i = 2^-i eps`` sum to less than ``eps``), and ``privacy`` is what the replace-one RDP
accountant certifies for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from dp_accounting import dp_event as _ev
from numpy.typing import ArrayLike

from dpbandits._validation import check_epsilon, check_int, check_positive, check_rng
from dpbandits.geometry import dual_exponent, lp_norm
from dpbandits.losses import LossLike
from dpbandits.optim.base import (
    CHUNK_ENTRIES,
    BatchResult,
    clipped_gradients,
    elapsed,
)
from dpbandits.optim.batch.data import start_fit
from dpbandits.optim.batch.lp_ball import LpBallOptimizer
from dpbandits.privacy import accounting
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, PlanMethod

__all__ = ["LocalMD", "LocalMDPhase", "local_md_phases", "sample_without_replacement"]


def sample_without_replacement(rng: np.random.Generator, n: int, b: int,
                               size: int | Sequence[int]) -> np.ndarray:
    """``size`` independent uniform subsets of ``b`` distinct indices from ``range(n)``.

    Returns int64 of shape ``(*size, b)`` (the order inside a subset is random). Small ``b``
    (``b^2 <= 2n``): rows of ``b`` uniform draws with repeats are redrawn until distinct
    (rejection; accepted rows are uniform over distinct tuples, acceptance >= e^-1). Otherwise
    the ``b`` smallest of ``n`` uniform keys (``argpartition``).
    """
    rng = check_rng(rng)
    n = check_int("n", n, low=1)
    b = check_int("b", b, low=1, high=n)
    size = (size,) if isinstance(size, int | np.integer) else tuple(size)
    m = int(np.prod(size, dtype=np.int64))
    if b * b <= 2 * n:
        out = rng.integers(0, n, size=(m, b))
        todo = np.arange(m)
        while todo.size:
            s = np.sort(out[todo], axis=1)
            dup = np.any(s[:, 1:] == s[:, :-1], axis=1) if b > 1 else np.zeros(todo.size, bool)
            todo = todo[dup]
            if todo.size:
                out[todo] = rng.integers(0, n, size=(todo.size, b))
    else:
        keys = rng.random((m, n))
        out = np.argpartition(keys, b - 1, axis=1)[:, :b] if b < n else np.argsort(keys, axis=1)
        out = out.astype(np.int64)
    return out.reshape((*size, b))


@dataclass(frozen=True)
class LocalMDPhase:
    """One phase ``i`` of LocalMD (Asi et al. 2021, Alg. 6 calling Alg. 5)."""

    index: int  # i = 1, 2, ...
    epsilon: float  # eps_i = 2^-i eps
    n_samples: int  # n_i = floor(2^-i n) fresh samples
    start: int  # first sample of the phase (phases use consecutive disjoint blocks)
    eta: float  # eta_i = 2^-4i eta
    batch_size: int  # b_i = floor(max(sqrt(n_i / log d), sqrt(d / eps_i)))
    n_steps: int  # T_i = floor(n_i^2 / b_i^2)
    sigma: float  # c L0 sqrt(d^(1-2/q) log(1/delta)) / (b_i eps_i)  (0 if not private)
    loc_radius: float  # 2 L0 eta_i n_i (p - 1)
    noise_multiplier: float  # sigma_i / replace-one l2 sensitivity = c sqrt(log(1/d))/(2 eps_i)

    def to_dict(self) -> dict:
        return asdict(self)


def local_md_phases(n: int, d: int, *, p: float, radius: float, epsilon: float, delta: float,
                    lipschitz: float, lr_scale: float = 1.0, noise_constant: float = 100.0
                    ) -> tuple[float, list[LocalMDPhase]]:
    """LocalMD's base step ``eta`` and its phases for ``n`` samples in dimension ``d``.

    ``eta = lr_scale (D / L0) min{1/sqrt((p-1) n), eps / sqrt(d log(1/delta) (1 + log d))}``
    with ``D = 2 radius``; phases ``i = 1 .. floor(log2 n)`` as in :class:`LocalMDPhase`,
    stopping before the first phase with ``T_i <= 1`` (its batch would be about as large as
    its data; all later phases are worse).
    """
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=2)
    eps = check_epsilon(epsilon)
    private = math.isfinite(eps)
    q = dual_exponent(p)
    D = 2.0 * radius
    log_d = math.log(d)
    cap = eps / math.sqrt(d * math.log(1.0 / delta) * (1.0 + log_d)) if private else math.inf
    eta = lr_scale * (D / lipschitz) * min(1.0 / math.sqrt((p - 1.0) * n), cap)
    phases = []
    start = 0
    for i in range(1, int(math.floor(math.log2(n))) + 1):
        eps_i = eps * 2.0**-i
        n_i = n >> i
        if n_i < 1:
            break
        b_i = max(1, int(math.floor(max(math.sqrt(n_i / log_d),
                                        math.sqrt(d / eps_i) if private else 0.0))))
        T_i = (n_i * n_i) // (b_i * b_i)
        if T_i <= 1:
            break
        if private:
            sigma = noise_constant * lipschitz * math.sqrt(
                d ** (1.0 - 2.0 / q) * math.log(1.0 / delta)) / (b_i * eps_i)
            z = noise_constant * math.sqrt(math.log(1.0 / delta)) / (2.0 * eps_i)
        else:
            sigma, z = 0.0, math.inf
        eta_i = eta * 2.0 ** (-4 * i)
        phases.append(LocalMDPhase(i, eps_i, n_i, start, eta_i, b_i, T_i, sigma,
                                   2.0 * lipschitz * eta_i * n_i * (p - 1.0), z))
        start += n_i
    return eta, phases


class LocalMD(LpBallOptimizer):
    """Phased, localized noisy mirror descent (Asi et al. 2021, Alg. 6 calling Alg. 5).

    For ``1 < p <= 2``. Phase ``i`` (see :class:`LocalMDPhase`) starts at the previous
    phase's output ``x_{i-1}`` (``x_0 = 0``) and runs ``T_i`` steps of noisy stochastic mirror
    descent on its own ``n_i`` fresh samples: a mini-batch of ``b_i`` indices sampled without
    replacement, the mean of their clipped gradients plus ``N(0, sigma_i^2 I)``, and the mirror
    step of ``h(x) = ||x - x_{i-1}||_p^2 / (2 (p - 1))`` restricted to the localization ball
    ``||x - x_{i-1}||_p <= 2 L0 eta_i n_i (p - 1)``; its output is the average of its
    iterates. The mirror step is exact and closed form: with ``w = grad h`` (dual variable),
    ``w <- w - eta_i g``, then ``w`` is scaled down to ``||w||_q <= radius_i / (p - 1)`` and
    ``x = x_{i-1} + (p-1) ||w||_q^{2-q} sign(w) |w|^{q-1}`` (``h`` depends on ``||x - x_{i-1}||_p``
    only, so the Bregman projection onto the ball is radial).

    As in the code of Han et al. 2022, the iterates are restricted to the localization
    ball only, not to the constraint set (``radius`` enters through ``D`` in ``eta``). Han et al.
    2022 report that LocalMD did not converge at any learning-rate scale; that is reproduced, not
    fixed.

    Parameters
    ----------
    p : float, default 1.5
        Exponent in (1, 2] of the l_p-ball constraint.
    noise_constant : float, default 100.0
        ``c`` > 0 in ``sigma_i`` (Han et al. 2022's comparison: 100). The noise plan
        (:meth:`plan_for`, per ``(n, d)``; calibration ``"theorem"``, the paper's formula)
        has one scale, ``noise_constant``: every phase's ``sigma_i`` and noise multiplier
        are proportional to it, and :meth:`phases` reports the noise of the plan.

    History: phase outputs ``x_0 .. x_k`` (``history_steps`` = cumulative mirror steps).
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(p=1.5, epsilon=1.0, delta=1e-3)
    _test_problem = "squared"

    def __init__(self, *, p: float = 1.5, radius: float = 1.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, lr_scale: float = 1.0,
                 noise_constant: float = 100.0) -> None:
        self._store_params(locals())
        self._check_ball()
        self._c = check_positive("noise_constant", noise_constant)

    _plan_uses_d = True

    def _phases(self, n: int, d: int, noise_constant: float
                ) -> tuple[float, list[LocalMDPhase]]:
        return local_md_phases(n, d, p=self._p, radius=self._radius, epsilon=self._eps,
                               delta=self.delta_for(n), lipschitz=self._L0, lr_scale=self._lr,
                               noise_constant=noise_constant)

    @PlanMethod
    def phases(self, n: int, d: int) -> tuple[float, list[LocalMDPhase]]:
        """Base step and phases for ``n`` samples in dimension ``d`` (:func:`local_md_phases`),
        their noise from the plan's ``noise_constant``."""
        return self._phases(n, d, self.plan_for(n, d).scales["noise_constant"])

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """One scale, ``noise_constant`` (``c``: every phase's ``sigma_i`` and noise
        multiplier are proportional to it). The ledger: per phase ``T_i``
        sampled-without-replacement Gaussian steps (sequentially composed over phases
        although their samples are disjoint; conservative); the guarantee: what the RDP
        accountant certifies for it (replace-one)."""
        if not self._private:
            return NoisePlan.non_private("LocalMD without noise (epsilon = inf)",
                                         {"noise_constant": 0.0},
                                         events=_ev.NonPrivateDpEvent())
        _, phases = self._phases(n, d, self._c)  # type: ignore[arg-type]  # d checked there
        if not phases:
            return NoisePlan("theorem", {"noise_constant": self._c}, PrivacyGuarantee(
                epsilon=self._eps, delta=self.delta_for(n), basis="LocalMD ran no phase: the "
                "output (the zero vector) does not depend on the data"), _ev.NoOpDpEvent())
        ledger = _ev.ComposedDpEvent(events=[
            accounting.wor_gaussian_event(ph.n_samples, ph.batch_size, ph.noise_multiplier,
                                          ph.n_steps)
            for ph in phases
        ])
        guarantee = self._accountant_guarantee(
            ledger,
            f"Asi, Feldman, Koren & Talwar 2021 Alg. 5/6 (LocalMD), noise constant "
            f"c={self._c:g}, {len(phases)} phases with eps_i = 2^-i eps", n,
        )
        return NoisePlan("theorem", {"noise_constant": self._c}, guarantee, ledger)

    def fit(self, loss: str | LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        """Run LocalMD on ``X`` ``(n, d)`` / ``(R, n, d)`` and ``y``; all draws from ``rng``."""
        t0 = time.perf_counter()
        loss, rng, data = start_fit(loss, X, y, rng, n_reps)
        R, n, d = data.n_reps, data.n, data.d
        if d < 2:
            raise ValueError(f"LocalMD needs d >= 2 features (its batch size uses log d), "
                             f"got X with d={d}")
        eta, phases = self.phases(n, d)
        p, q, L0 = self._p, self._q, self._L0

        center = np.zeros((R, d))
        hist = np.zeros((R, len(phases) + 1, d))
        steps = np.zeros(len(phases) + 1, dtype=np.int64)
        times = np.zeros(len(phases) + 1)
        n_clipped = np.zeros(R, dtype=np.int64)
        evals = 0
        for k, ph in enumerate(phases, start=1):
            b, T = ph.batch_size, ph.n_steps
            w = np.zeros((R, d))  # dual variable grad h(x - center)
            u = np.zeros((R, d))  # x - center
            xsum = np.zeros((R, d))
            w_cap = ph.loc_radius / (p - 1.0)  # ||u||_p = (p-1) ||w||_q <= loc_radius
            chunk = max(1, CHUNK_ENTRIES // (R * (b + d)))
            done = 0
            while done < T:
                c = min(chunk, T - done)
                idx = sample_without_replacement(rng, ph.n_samples, b, (R, c)) + ph.start
                nz = gaussian_noise(rng, ph.sigma, (R, c, d)) if self._private else None
                for j in range(c):
                    Xb, yb = data.rows(idx[:, j])
                    g, was = clipped_gradients(loss, (center + u)[:, None, :], Xb, yb, q, L0)
                    n_clipped += was.sum(axis=1)
                    g = g.mean(axis=1)
                    if nz is not None:
                        g = g + nz[:, j]
                    w = w - ph.eta * g
                    wn = lp_norm(w, q)
                    over = wn > w_cap
                    if np.any(over):
                        w = w * np.where(over, w_cap / np.where(over, wn, 1.0), 1.0)[:, None]
                        wn = np.minimum(wn, w_cap)
                    u = _mirror_primal(w, wn, p, q)
                    xsum += center + u
                done += c
            center = xsum / T
            evals += T * b
            hist[:, k] = center
            steps[k] = steps[k - 1] + T
            times[k] = elapsed(t0)
        return self._result(
            n, d,
            theta=center.copy(),
            history=hist,
            history_steps=steps,
            n_clipped=n_clipped,
            n_gradient_evals=evals,
            extra={
                "eta": eta,
                "phases": [ph.to_dict() for ph in phases],
                "history_time": times,
                "seconds": elapsed(t0),
            },
        )


def _mirror_primal(w: np.ndarray, wn: np.ndarray, p: float, q: float) -> np.ndarray:
    """``grad h*(w) = (p-1) ||w||_q^{2-q} sign(w) |w|^{q-1}``, written as
    ``(p-1) ||w||_q sign(w) (|w| / ||w||_q)^{q-1}`` (no overflow; 0 at w = 0)."""
    safe = np.where(wn > 0, wn, 1.0)[:, None]
    return (p - 1.0) * wn[:, None] * np.sign(w) * (np.abs(w) / safe) ** (q - 1.0)

"""Private SGD (Algorithm 1 of Arora, Marinov & Ullah 2020, "Private stochastic convex
optimization: efficient algorithms for non-smooth objectives", revised version).

Projected SGD over the l_2 ball ``W = {||w||_2 <= radius}`` that samples indices uniformly
**with replacement**; a fresh index gives a noisy gradient step, a repeated one a
**noise-only** step; it stops as soon as more than ``n/2`` distinct samples have been used
(``K = floor(n/2) + 1`` fresh steps, after ``tau ~ n ln 2`` iterations, ``tau <= 2n`` with
probability ``>= 1 - 2 exp(-n/16)``, Theorem 2) and outputs the average of the iterates at
which a fresh sample was used (our reading of the garbled output line)::

    w_{t+1} = P(w_t - eta (grad f(w_t; z_{y_t}) + xi_t))   if y_t is fresh
    w_{t+1} = P(w_t - eta xi_t)                            otherwise,     xi_t ~ N(0, sigma^2 I)

Subgradients are clipped to ``||.||_2 <= lipschitz`` (the paper's L-Lipschitz assumption,
enforced and counted); no smoothness is needed.

Privacy, two figures side by side
---------------------------------
*Theorem 6 / Remark 1* (``calibration="theorem"``): for a target ``(eps_bar, delta_bar)`` with
``6 e^{-n/16} <= delta_bar <= 3 e^{-4}``, set ``delta = delta' = delta_bar/3``,
``eps = eps_bar / (8 sqrt(ln(3/delta_bar)))`` and ``sigma = 8 L sqrt(ln(1/delta)) /
(sqrt(n) eps)``; the theorem needs ``eps <= 1/(2 sqrt(n))`` and then claims
``(4 eps (sqrt(ln(1/delta')) + 2), delta + delta' + 2 e^{-n/16})``-DP, which is
``<= (eps_bar, delta_bar)``. Outside that range the theorem does not apply and a ValueError
says so.

*Accountant* (``calibration="accountant"``, and the cross-check of the theorem): the
indices of the fresh steps form a uniformly random ordered subset of ``K`` of the ``n``
samples, and the number of noise-only steps between them depends only on how many are
fresh, not on which. Each sample is therefore used in at most one gradient step, so
releasing the whole trajectory is, given the subset, a single Gaussian mechanism (replace-one
sensitivity ``2L``, multiplier ``sigma/(2L)``) composed with data-independent steps — and the
subset is a uniform without-replacement sample of proportion ``K/n``. The ledger is
``SampledWithoutReplacementDpEvent(n, K, GaussianDpEvent(sigma/(2L)))``, accounted by
dp_accounting's RDP accountant under replace-one neighbours; it needs no ``tau <= 2n``
conditioning and no range restriction on epsilon.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_positive
from dpbandits.geometry import project_l2_ball
from dpbandits.losses import LossLike
from dpbandits.optim.base import BatchResult, PrivateBatchOptimizer, check_clip, check_scale
from dpbandits.optim.batch.data import start_fit
from dpbandits.optim.batch.oracle import GradientOracle
from dpbandits.privacy import accounting as acc
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, PlanMethod, check_calibration

__all__ = ["PrivateSGD", "expected_stopping_time", "n_fresh_steps"]

_BLOCK = 512
#: the calibrations of Private SGD (:mod:`dpbandits.privacy.plan`)
CALIBRATIONS = ("theorem", "accountant")


def n_fresh_steps(n: int) -> int:
    """``K = floor(n/2) + 1``: the loop runs while ``|F| <= n/2``."""
    return n // 2 + 1


def expected_stopping_time(n: int) -> tuple[float, float]:
    """Exact mean and variance of ``tau`` (coupon collector up to ``K`` distinct draws):
    ``tau = sum_{k<K} Geom((n-k)/n)``."""
    k = np.arange(n_fresh_steps(n))
    p = (n - k) / n
    return float(np.sum(1.0 / p)), float(np.sum((1.0 - p) / p**2))


class PrivateSGD(PrivateBatchOptimizer):
    """Private SGD (Arora, Marinov & Ullah 2020, Algorithm 1), batched over replications.

    Parameters
    ----------
    epsilon : float
        Target ``eps_bar`` > 0; ``inf``: no noise.
    delta : float or None
        Target ``delta_bar`` in (0, 1) (None only with ``epsilon = inf``).
    lipschitz : float, default 1.0
        ``L`` > 0, the l_2 bound enforced on every subgradient (clipping).
    radius : float, default 1.0
        ``W`` is the l_2 ball of this radius (> 0); its diameter ``D = 2 radius`` enters the
        step size and the utility bound (Theorem 6).
    calibration : {"theorem", "accountant"}, default "theorem"
        ``"theorem"``: Remark 1 (alias ``"paper"``); ``"accountant"``: the smallest noise the
        RDP accountant certifies for the ledger (alias ``"pld"``). The plan (:meth:`plan_for`)
        has one scale, ``sigma``, the per-coordinate std of every step's noise (sensitivity
        ``2 lipschitz``).
    step_size : float or None, default None
        Step ``eta`` > 0; None means ``D / (sqrt(n) (L + sigma sqrt(d)))`` (Theorem 6).
    noise_std : float or None, default None
        Use this ``sigma`` instead of calibrating; ``privacy`` is then the accountant's figure
        at ``delta``.
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3, calibration="accountant")
    _test_problem = "absolute"

    def _gradient_clip(self, d: int) -> tuple[float, float]:
        return 2.0, float(self.lipschitz)


    def __init__(self, epsilon: float, delta: float | None, *, lipschitz: float = 1.0,
                 radius: float = 1.0, calibration: str = "theorem",
                 step_size: float | None = None, noise_std: float | None = None) -> None:
        self._store_params(locals())
        check_clip(lipschitz, "lipschitz")
        check_scale("radius", radius)
        self._calibration = check_calibration(calibration, CALIBRATIONS, "PrivateSGD")
        if step_size is not None:
            check_positive("step_size", step_size)
        self._check_target()

    # ---------------------------------------------------------------- Theorem 6 / Remark 1
    def theorem_parameters(self, n: int) -> dict:
        """Remark 1's internal ``(eps, delta, delta')``, the noise ``sigma`` of Theorem 6 and
        the claimed guarantee, for the target ``(epsilon, delta)``; ValueError when the
        theorem does not apply (``eps <= 1/(2 sqrt n)`` or the delta range fails)."""
        n = self._check_n(n)
        eps_bar, delta_bar = self._eps, self._delta
        lo, hi = 6.0 * math.exp(-n / 16.0), 3.0 * math.exp(-4.0)
        if not lo <= delta_bar <= hi:
            raise ValueError(
                f"Remark 1 of Arora, Marinov & Ullah 2020 needs 6 exp(-n/16) <= delta <= "
                f"3 exp(-4), i.e. delta in [{lo:.3g}, {hi:.3g}] for n={n}; got "
                f"delta={delta_bar}. Use calibration='accountant'."
            )
        eps_in = eps_bar / (8.0 * math.sqrt(math.log(3.0 / delta_bar)))
        if eps_in > 1.0 / (2.0 * math.sqrt(n)):
            raise ValueError(
                f"Theorem 6 of Arora, Marinov & Ullah 2020 needs eps <= 1/(2 sqrt(n)); with "
                f"Remark 1 that is epsilon <= "
                f"{8.0 * math.sqrt(math.log(3.0 / delta_bar)) / (2 * math.sqrt(n)):.4g}"
                f" for n={n}, delta={delta_bar}; got epsilon={eps_bar}. Use "
                "calibration='accountant'."
            )
        d_in = delta_bar / 3.0
        sigma = 8.0 * float(self.lipschitz) * math.sqrt(math.log(1.0 / d_in)) / (math.sqrt(n)
                                                                                  * eps_in)
        claim_eps = 4.0 * eps_in * (math.sqrt(math.log(1.0 / d_in)) + 2.0)
        claim_delta = 2.0 * d_in + 2.0 * math.exp(-n / 16.0)
        return {"eps": eps_in, "delta": d_in, "delta_prime": d_in, "sigma": sigma,
                "claimed_epsilon": claim_eps, "claimed_delta": claim_delta}

    # ---------------------------------------------------------------- noise & ledgers
    def _calibrated_sigma(self, n: int) -> float:
        """``sigma`` of the calibration in force (``noise_std`` if given; 0 without noise)."""
        if self.noise_std is not None:
            return float(self.noise_std)
        if not math.isfinite(self.epsilon):
            return 0.0
        if self._calibration == "theorem":
            return self.theorem_parameters(n)["sigma"]
        k = acc.wor_gaussian_multiplier(n, n_fresh_steps(n), 1, self._eps,
                                        self._delta)
        return 2.0 * float(self.lipschitz) * k

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """One scale, ``sigma``; the ledger: one Gaussian step (multiplier ``sigma/(2L)``)
        per sample of a without-replacement subset of ``K`` of ``n``; the guarantee: Theorem
        6's (``calibration="theorem"``) or the RDP accountant's."""
        sigma = self._calibrated_sigma(n)
        if sigma == 0.0:
            return NoisePlan.non_private("Private SGD without noise", {"sigma": 0.0},
                                         events=dp_accounting.NonPrivateDpEvent())
        calibration = "accountant" if self.noise_std is not None else self._calibration
        if calibration == "theorem":
            guarantee = self._theorem_guarantee(n, sigma)
            assert guarantee is not None  # theorem_parameters raised otherwise
        else:
            guarantee = self._accountant_guarantee(n, sigma)
        return NoisePlan(calibration, {"sigma": sigma}, guarantee, self._ledger(n, sigma),
                         {"sigma": 2.0 * float(self.lipschitz)})

    def _sigma(self, n: int) -> float:
        return self.plan_for(n).scales["sigma"]

    @PlanMethod
    def noise_std_for(self, n: int) -> float:
        """``sigma``, the per-coordinate std of every step's noise (from the plan)."""
        return self._sigma(n)

    def _ledger(self, n: int, sigma: float) -> dp_accounting.DpEvent:
        return acc.wor_gaussian_event(int(n), n_fresh_steps(int(n)),
                                      sigma / (2.0 * float(self.lipschitz)))

    def _accountant_epsilon(self, n: int, sigma: float, delta: float | None) -> float:
        return acc.replace_one_rdp_epsilon(self._ledger(n, sigma),
                                           float(self.delta if delta is None else delta))

    def accountant_epsilon(self, n: int, delta: float | None = None) -> float:
        """The RDP accountant's epsilon for the plan's noise at ``delta`` (default: the
        target)."""
        sigma = self._sigma(n)
        return math.inf if sigma == 0.0 else self._accountant_epsilon(n, sigma, delta)

    @staticmethod
    def _amplified_epsilon(n: int, sigma: float, lipschitz: float, delta: float) -> float:
        gamma = n_fresh_steps(n) / n
        mu = 2.0 * lipschitz / sigma
        eps0 = acc.gdp_epsilon(mu, min(delta / gamma, 0.999999))
        return math.log1p(gamma * math.expm1(eps0))

    def amplified_epsilon(self, n: int, delta: float | None = None) -> float:
        """A tighter closed-form figure for the plan's noise (not a dp_accounting ledger):
        the exact epsilon of one Gaussian step (multiplier ``k = sigma/(2L)``, i.e.
        ``1/k``-GDP) at ``delta / gamma``, amplified by sampling ``gamma = K/n`` without
        replacement under replace-one neighbours, ``ln(1 + gamma (e^eps - 1))`` (Balle,
        Barthe & Gaboardi 2018, Theorem 10)."""
        sigma = self._sigma(n)
        if sigma == 0.0:
            return math.inf
        return self._amplified_epsilon(n, sigma, float(self.lipschitz),
                                       float(self.delta if delta is None else delta))

    def _accountant_guarantee(self, n: int, sigma: float) -> PrivacyGuarantee:
        k = sigma / (2.0 * float(self.lipschitz))
        return PrivacyGuarantee(
            epsilon=self._accountant_epsilon(n, sigma, None), delta=self._delta,
            basis=(f"RDP accountant (replace-one): one Gaussian step (multiplier {k:.4g}) per "
                   f"sample, on a w/o-replacement subset of {n_fresh_steps(n)} of {n}; "
                   "Algorithm 1 of Arora, Marinov & Ullah 2020"))

    def accountant_privacy_for(self, n: int) -> PrivacyGuarantee:
        """What the accountant certifies for the plan's noise at the target delta."""
        sigma = self._sigma(n)
        if sigma == 0.0:
            return PrivacyGuarantee.non_private("Private SGD without noise")
        return self._accountant_guarantee(n, sigma)

    def _theorem_guarantee(self, n: int, sigma: float) -> PrivacyGuarantee | None:
        if self.noise_std is None and self._calibration == "theorem":
            tp = self.theorem_parameters(n)
        else:  # read Theorem 6 backwards from sigma, with delta = delta' = delta_bar / 3
            d_in = self._delta / 3.0
            eps_in = 8.0 * float(self.lipschitz) * math.sqrt(math.log(1.0 / d_in)) / (
                math.sqrt(n) * sigma)
            if eps_in > 1.0 / (2.0 * math.sqrt(n)):
                return None
            tp = {"claimed_epsilon": 4.0 * eps_in * (math.sqrt(math.log(1.0 / d_in)) + 2.0),
                  "claimed_delta": 2.0 * d_in + 2.0 * math.exp(-n / 16.0)}
        claim_eps, claim_delta = tp["claimed_epsilon"], tp["claimed_delta"]
        rdp_eps = self._accountant_epsilon(n, sigma, claim_delta)
        amp_eps = self._amplified_epsilon(n, sigma, float(self.lipschitz), claim_delta)
        ok = min(rdp_eps, amp_eps) <= claim_eps
        basis = (f"Theorem 6 / Remark 1 of Arora, Marinov & Ullah 2020 (advanced composition); "
                 f"for the same noise at "
                 f"delta={claim_delta:.3g} the RDP accountant gives epsilon={rdp_eps:.4g} and "
                 f"the exact Gaussian amplified by sampling (Balle et al. 2018, Thm 10) "
                 f"{amp_eps:.4g}")
        return PrivacyGuarantee(
            epsilon=claim_eps, delta=min(claim_delta, 1 - 1e-12), basis=basis, certified=ok,
            caveat="" if ok else (
                "neither the RDP accountant nor the amplified-Gaussian bound confirms Theorem "
                "6's figure at this n; the theorem's proof amplifies each step by subsampling "
                "and composes over steps whose sampling depends on the hidden set of used "
                "indices, which these bounds do not exploit. The figure is the paper's claim, "
                "not a certified guarantee; accountant_privacy_for(n) is certified."))

    def theorem_privacy_for(self, n: int) -> PrivacyGuarantee | None:
        """Theorem 6's claimed guarantee for the plan's noise (``None`` if the theorem does
        not apply), certified only if an independent bound confirms it at the claimed delta:
        the RDP accountant on the ledger or :meth:`amplified_epsilon` (both rigorous; the RDP
        conversion is the looser of the two at small epsilon)."""
        sigma = self._sigma(n)
        return None if sigma == 0.0 else self._theorem_guarantee(n, sigma)

    # ---------------------------------------------------------------- the algorithm
    def fit(self, loss: LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None) -> BatchResult:
        """One run per replication on ``X (n, d)`` or ``X (R, n, d)``; ``y`` may be None for
        losses that ignore labels. History: ``w_1`` and the output."""
        loss, rng, data = start_fit(loss, X, y, rng, n_reps, loss_names=False, min_n=2,
                                    y_required=False)
        R, n, d = data.n_reps, data.n, data.d
        sigma = self._sigma(n)
        L, r = float(self.lipschitz), float(self.radius)
        D = 2.0 * r
        eta = (float(self.step_size) if self.step_size is not None
               else D / (math.sqrt(n) * (L + sigma * math.sqrt(d))))
        K = n_fresh_steps(n)
        oracle = GradientOracle(loss, data, L)
        rows = np.arange(R)
        seen = np.zeros((R, n), dtype=bool)
        count = np.zeros(R, dtype=np.int64)
        tau = np.zeros(R, dtype=np.int64)
        active = np.ones(R, dtype=bool)
        w = np.zeros((R, d))  # w_1 = argmin_W ||w||^2/2 = 0
        total = np.zeros((R, d))
        n_clipped = np.zeros(R, dtype=np.int64)
        while active.any():
            idx_block = rng.integers(0, n, size=(_BLOCK, R))
            noise_block = (gaussian_noise(rng, sigma, (_BLOCK, R, d)) if sigma > 0
                           else None)
            for t in range(_BLOCK):
                idx = idx_block[t]
                fresh = active & ~seen[rows, idx]
                g, clipped = oracle.at_index(w, idx)
                step = g * fresh[:, None]
                if noise_block is not None:
                    step = step + noise_block[t]
                total += w * fresh[:, None]
                w_new = project_l2_ball(w - eta * step, r)
                w = np.where(active[:, None], w_new, w)
                n_clipped += clipped & fresh
                seen[rows[fresh], idx[fresh]] = True
                count += fresh
                tau += active
                active &= count <= n // 2
                if not active.any():
                    break
        w_hat = total / K
        return self._result(
            n, d,
            theta=w_hat,
            history=np.stack([np.zeros((R, d)), w_hat], axis=1),
            history_steps=np.array([0, K]),
            n_clipped=n_clipped,
            n_gradient_evals=K,
            extra={"tau": tau, "n_fresh": K, "noise_std": sigma, "step_size": eta,
                   "last_iterate": w},
        )

"""Private FTRL (Algorithm 1 of the earlier version of Arora, Marinov & Ullah 2020) —
implemented faithfully, with its claimed guarantee marked **not certified**.

One pass over the data in the given order (``T = n``), lazy projection (dual averaging)::

    G_t = G_{t-1} + g(w_t; z_t) - xi_t,     w_{t+1} = argmin_{w in W} <G_t, w> + Psi(w)/eta_{t+1}

with ``W`` the l_p ball of radius ``radius`` and ``Psi(w) = ||w||_p^2 / (2 (p - 1))``
(``= ||w||_2^2 / 2`` for ``p = 2``; the paper only asks ``Psi`` to be 1-strongly convex in
``||.||_p``, ``1 < p <= 2``). For this ``Psi`` the update is closed form:
``w = -min(radius, eta (p-1) ||G||_q) * dir(G)`` with ``dir`` the unit l_p vector dual to
``G`` — for ``p = 2`` the lazy projection ``Pi_W(-eta G)``. Subgradients are clipped to
``||.||_q <= lipschitz``. Output: ``w_{T+1}``, the iterate after all ``T`` samples (the
privacy analysis is stated for it; the pseudo-code's ``w_T`` is an off-by-one).

Noise: ``p = 2`` — ``xi ~ N(0, sigma^2 I)`` (Theorems 4.1/5.4); ``p < 2`` — i.i.d.
generalized-Gaussian coordinates, density ``∝ exp(-|x|^q / sigma^q)`` (Theorems 4.3/5.5; at
``q = 2`` this is ``N(0, sigma^2/2)``, not ``N(0, sigma^2)``). ``noise="first"`` is the
anytime variant of Theorem 4.4 (only ``xi_1`` is drawn).

The claim and why it is not certified
-------------------------------------
The paper claims, by "privacy amplification by iteration without contraction":

* ``p = 2``, noise every step: ``(alpha, 4 alpha L^2 / (T sigma^2))``-RDP for all ``alpha``,
  i.e. ``rho``-zCDP with ``rho = 4 L^2 / (T sigma^2)`` (Theorem 5.4);
* ``p < 2``: ``(alpha, 2 (2L)^q / (T^{q-1} sigma^q))``-RDP for ``1 < alpha < 2^{q-1} /
  (2^{q-1} - 1)`` (Theorem 5.5);
* ``noise="first"``: ``R_alpha(xi_1, 2L)``, i.e. ``rho = 2 L^2 / sigma^2`` for ``p = 2`` and
  ``(2L/sigma)^q`` for ``p < 2`` (Theorem 4.4 / D.1).

The noise is calibrated so that the *claim* meets the target ``(epsilon, delta)`` (via the
tight zCDP -> DP conversion, or Mironov's RDP -> DP conversion at the largest allowed order).
The claim is **false for non-smooth losses**: the proof of Proposition 5.3 treats the
accumulated gradients ``sum_{j<t} grad f(w_j, z_j)`` — functions of the same noise — as a
fixed shift, and Lemma C.1 is numerically false. With
``f = |w|`` on all but the last sample the iterate is mean-reverting, the accumulated noise
cancels and the last sample is exposed; the audit ``private-ftrl`` of
:mod:`dpbandits.audits` probes exactly that and finds an empirical epsilon far above the
claim. Hence ``privacy.certified`` is False.

What *is* true (``certified_privacy_for``): each sample enters exactly one step, so releasing
all iterates is a post-processing of ``T`` adaptively chosen Gaussian queries of which only
one depends on the differing sample — one Gaussian mechanism of multiplier ``sigma/(2L)``
(``p = 2``, noise every step). With ``noise="first"`` a later sample gets no noise at all.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpbandits._validation import check_choice, check_p, check_positive
from dpbandits.geometry import dual_exponent, lmo_lp_ball, lp_norm, project_l2_ball
from dpbandits.losses import LossLike
from dpbandits.optim.base import (
    BatchResult,
    IterateHistory,
    PrivateBatchOptimizer,
    check_clip,
    check_scale,
)
from dpbandits.optim.batch.data import start_fit
from dpbandits.optim.batch.oracle import GradientOracle
from dpbandits.privacy import accounting as acc
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, PlanMethod

__all__ = ["PrivateFTRL", "generalized_gaussian_coordinates", "FTRL_CAVEAT"]

FTRL_CAVEAT = (
    "Private FTRL's guarantee (Arora, Marinov & Ullah 2020, earlier version, Theorems "
    "4.1/5.4, 4.3/5.5, 4.4) is claimed by "
    "amplification by iteration without contraction; it is false for non-smooth losses "
    "(Proposition 5.3 treats the noise-dependent accumulated gradients as a fixed shift; "
    "Lemma C.1 is false), and an audit with f = |w| on all but the last sample exceeds it "
    "(the audit private-ftrl of dpbandits.audits). A valid bound for the same "
    "noise is certified_privacy_for(n)."
)


def generalized_gaussian_coordinates(rng: np.random.Generator, sigma: float, q: float,
                                     size: int | tuple[int, ...]) -> np.ndarray:
    """I.i.d. draws with density ``q / (2 sigma Gamma(1/q)) exp(-|x|^q / sigma^q)``
    (``scipy.stats.gennorm(q, scale=sigma)``): ``|x| = sigma Gamma(1/q, 1)^{1/q}``, random
    sign. The density of a vector of them is ``∝ exp(-||xi||_q^q / sigma^q)`` (Arora,
    Marinov & Ullah 2020)."""
    mag = rng.gamma(1.0 / q, 1.0, size=size) ** (1.0 / q)
    sign = np.where(rng.random(size=size) < 0.5, -1.0, 1.0)
    return sigma * mag * sign


def _alpha_max(q: float) -> float:
    """Upper end of the RDP orders allowed by Theorem 5.5 / Lemma C.1 (read as printed in
    C.1, C.2, D.1): ``2^{q-1} / (2^{q-1} - 1)``."""
    a = 2.0 ** (q - 1.0)
    return a / (a - 1.0)


class PrivateFTRL(PrivateBatchOptimizer):
    """Private FTRL (Arora, Marinov & Ullah 2020, earlier version, Algorithm 1), batched over
    replications.

    Parameters
    ----------
    epsilon : float
        Target epsilon > 0 of the **claimed** guarantee; ``inf``: no noise.
    delta : float or None
        Target delta in (0, 1) of the claim (None only with ``epsilon = inf``).
    lipschitz : float, default 1.0
        ``L`` > 0, enforced on every subgradient in the dual norm ``l_q`` (clipping).
    radius : float, default 1.0
        ``W`` is the l_p ball of this radius (> 0).
    p : float, default 2.0
        Primal norm, ``1 < p <= 2`` (``2``: Gaussian noise; else generalized Gaussian).
    step_schedule : {"fixed", "anytime"}, default "fixed"
        ``"fixed"``: ``eta = D / (G sqrt(T))``; ``"anytime"``: ``eta_t = D / (G sqrt(t))``;
        with ``D^2 = max Psi - min Psi = radius^2/(2(p-1))`` and ``G^2`` the second-moment
        bound ``E||g_t - xi_t||_q^2`` of Theorem 5.1 (``L^2 + d sigma^2`` for ``p = 2``).
    noise : {"all", "first"}, default "all"
        Noise on every step, or only ``xi_1`` (Theorem 4.4).
    step_size : float or None, default None
        Replaces ``D/G`` (``eta = step_size / sqrt(T)`` or ``/ sqrt(t)``); None: ``D/G``.
    noise_std : float or None, default None
        Use this ``sigma`` instead of calibrating the claim.

    The noise plan (:meth:`plan_for`; calibration ``"theorem"``, the paper's claim) has one
    scale, ``sigma``; :meth:`certified_privacy_for` is computed for the plan's noise.
    """

    #: small settings and the problem of the contract checks (dpbandits.testing)
    _test_params = dict(epsilon=1.0, delta=1e-3)
    _test_problem = "absolute"

    def _gradient_clip(self, d: int) -> tuple[float, float]:
        """Subgradients clipped to ``||g||_q <= lipschitz`` (``q`` dual to ``p``)."""
        return self.q, float(self.lipschitz)


    def __init__(self, epsilon: float, delta: float | None, *, lipschitz: float = 1.0,
                 radius: float = 1.0, p: float = 2.0, step_schedule: str = "fixed",
                 noise: str = "all", step_size: float | None = None,
                 noise_std: float | None = None) -> None:
        self._store_params(locals())
        check_clip(lipschitz, "lipschitz")
        check_scale("radius", radius)
        pv = check_p("p", p, low=1.0, low_open=True)
        if pv > 2.0:
            raise ValueError(f"p must be in (1, 2] (the paper reduces p > 2 to p = 2), got {p}")
        check_choice("step_schedule", step_schedule, {"fixed", "anytime"})
        check_choice("noise", noise, {"all", "first"})
        if step_size is not None:
            check_positive("step_size", step_size)
        self._check_target()

    @property
    def q(self) -> float:
        return dual_exponent(float(self.p))

    # ---------------------------------------------------------------- the claim
    def _claimed(self, T: int) -> tuple[float, float | None]:
        """``(sigma, claimed_rdp)``: for p = 2 ``claimed_rdp`` is the zCDP ``rho``; for
        p < 2 the flat RDP value on ``(1, alpha_max)``."""
        L, q = float(self.lipschitz), self.q
        eps, delta = self._eps, self._delta
        if self.noise_std is not None:
            sigma = float(self.noise_std)
            if sigma == 0.0:
                return 0.0, None
        elif not math.isfinite(eps):
            return 0.0, None
        else:
            sigma = None
        if float(self.p) == 2.0:
            if sigma is None:
                rho = acc.zcdp_rho(eps, delta)
                sigma = (2.0 * L / math.sqrt(T * rho) if self.noise == "all"
                         else L * math.sqrt(2.0 / rho))
            rho = 4 * L**2 / (T * sigma**2) if self.noise == "all" else 2 * L**2 / sigma**2
            return sigma, rho
        a_max = _alpha_max(q)
        if sigma is None:
            c = eps - math.log(1.0 / delta) / (a_max - 1.0)
            if c <= 0:
                raise ValueError(
                    f"the claimed l_p guarantee (RDP only for alpha < {a_max:.4g}, Theorem 5.5) "
                    f"converts to epsilon > ln(1/delta)/(alpha_max - 1) = "
                    f"{math.log(1.0 / delta) / (a_max - 1.0):.4g} at delta={delta}; got "
                    f"epsilon={eps}"
                )
            sigma = ((2.0 * (2.0 * L) ** q / (T ** (q - 1.0) * c)) ** (1.0 / q)
                     if self.noise == "all" else 2.0 * L / c ** (1.0 / q))
        c = (2.0 * (2.0 * L) ** q / (T ** (q - 1.0) * sigma**q) if self.noise == "all"
             else (2.0 * L / sigma) ** q)
        return sigma, c

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """One scale, ``sigma`` (Gaussian std for p = 2; generalized-Gaussian scale for
        p < 2), calibrated so that the paper's **claim** meets the target. The ledger is the
        claimed event: ``ZCDpEvent(rho)`` for p = 2; for p < 2 the claim (RDP on a
        restricted range of orders) has no dp_accounting event: ``UnsupportedDpEvent``. The
        guarantee is the claim, ``certified=False`` (see :data:`FTRL_CAVEAT`)."""
        sigma, claim = self._claimed(n)
        if sigma == 0.0:
            return NoisePlan.non_private("Private FTRL without noise", {"sigma": 0.0},
                                         events=dp_accounting.NonPrivateDpEvent())
        assert claim is not None
        delta = self._delta
        if float(self.p) == 2.0:
            eps = acc.zcdp_epsilon(claim, delta)
            thm = "Theorem 5.4 (4.1)" if self.noise == "all" else "Theorem 4.4 (D.1)"
            basis = (f"claimed {claim:.4g}-zCDP ({thm} of Arora, Marinov & Ullah 2020, earlier "
                     "version), tight zCDP->DP conversion")
            ledger: dp_accounting.DpEvent = acc.zcdp_event(claim)
        else:
            a_max = _alpha_max(self.q)
            eps = claim + math.log(1.0 / delta) / (a_max - 1.0)
            thm = "Theorem 5.5 (4.3)" if self.noise == "all" else "Theorem 4.4 (D.1)"
            basis = (f"claimed (alpha, {claim:.4g})-RDP for alpha < {a_max:.4g} ({thm} of "
                     "Arora, Marinov & Ullah 2020, earlier version),"
                     " RDP->DP conversion (Mironov, Prop. 3) at alpha -> alpha_max")
            ledger = dp_accounting.UnsupportedDpEvent()
        return NoisePlan("theorem", {"sigma": sigma}, PrivacyGuarantee(
            epsilon=eps, delta=delta, basis=basis, certified=False, caveat=FTRL_CAVEAT),
            ledger, {"sigma": 2.0 * float(self.lipschitz)})

    @PlanMethod
    def noise_std_for(self, n: int) -> float:
        """``sigma`` (Gaussian std for p = 2; generalized-Gaussian scale for p < 2), from the
        plan."""
        return self.plan_for(n).scales["sigma"]

    def certified_ledger_for(self, n: int) -> dp_accounting.DpEvent | None:
        """A valid ledger for the same noise (p = 2): one Gaussian of multiplier
        ``sigma/(2L)``; ``NonPrivateDpEvent`` for ``noise="first"``; None for p < 2."""
        sigma = self.noise_std_for(n)
        if sigma == 0.0 or self.noise == "first":
            return dp_accounting.NonPrivateDpEvent()
        if float(self.p) != 2.0:
            return None
        return acc.gaussian_event(sigma / (2.0 * float(self.lipschitz)))

    def certified_privacy_for(self, n: int) -> PrivacyGuarantee | None:
        """The valid guarantee for this noise (None when not available, p < 2)."""
        ledger = self.certified_ledger_for(n)
        if ledger is None:
            return None
        if isinstance(ledger, dp_accounting.NonPrivateDpEvent):
            return PrivacyGuarantee.non_private(
                "Private FTRL: no noise on the steps after the first (noise='first')"
                if self.noise == "first" else "Private FTRL without noise")
        eps = acc.epsilon_of(ledger, self._delta, method="pld")
        return PrivacyGuarantee(
            epsilon=eps, delta=self._delta,
            basis=("each sample enters one Gaussian query (multiplier sigma/(2L)); all iterates "
                   "are post-processing; PLD accountant"))

    # ---------------------------------------------------------------- the algorithm
    def _noise_second_moment(self, sigma: float, d: int) -> float:
        """``E ||xi||_q^2`` (exact for p = 2; Jensen upper bound for p < 2)."""
        if float(self.p) == 2.0:
            return d * sigma**2
        q = self.q
        mq = sigma**q * special.gamma((q + 1.0) / q) / special.gamma(1.0 / q)  # E|x|^q
        return (d * mq) ** (2.0 / q)

    def fit(self, loss: LossLike, X: ArrayLike, y: ArrayLike | None, rng: np.random.Generator,
            n_reps: int | None = None, record_every: int | None = None) -> BatchResult:
        """One pass over the rows of ``X`` in order (``T = n``). History: ``w_1`` and every
        ``record_every``-th iterate (default ``max(1, T // 100)``) up to ``w_{T+1}``."""
        loss, rng, data = start_fit(loss, X, y, rng, n_reps, loss_names=False, min_n=2,
                                    y_required=False)
        R, T, d = data.n_reps, data.n, data.d
        sigma = self.noise_std_for(T)
        p, q = float(self.p), self.q
        L, r = float(self.lipschitz), float(self.radius)
        if record_every is None:
            record_every = max(1, T // 100)
        D = r / math.sqrt(2.0 * (p - 1.0))
        if self.step_size is not None:
            scale = float(self.step_size)
        else:
            g2 = (2.0 if p < 2 else 1.0) * L**2 + (
                self._noise_second_moment(sigma, d) * (1 if self.noise == "all" else 1.0 / T))
            scale = D / math.sqrt(g2)
        oracle = GradientOracle(loss, data, L, q=q)
        G = np.zeros((R, d))
        w = np.zeros((R, d))  # w_1 = argmin_W Psi = 0
        n_clipped = np.zeros(R, dtype=np.int64)
        history = IterateHistory(w)
        block = 256
        noise = None
        for t in range(1, T + 1):
            if sigma > 0 and (self.noise == "all" or t == 1) and (t - 1) % block == 0:
                b = min(block, T - t + 1) if self.noise == "all" else 1
                noise = (gaussian_noise(rng, sigma, (b, R, d)) if p == 2.0
                         else generalized_gaussian_coordinates(rng, sigma, q, (b, R, d)))
            x, yy = data.row_at(t - 1)
            g, clipped = oracle.at(w, x, yy)
            n_clipped += clipped
            G += g
            if sigma > 0 and (self.noise == "all" or t == 1):
                G -= noise[(t - 1) % block]
            eta = scale / math.sqrt(T if self.step_schedule == "fixed" else t + 1)
            if p == 2.0:
                w = project_l2_ball(-eta * G, r)
            else:
                radius_t = np.minimum(r, eta * (p - 1.0) * lp_norm(G, q))
                w = lmo_lp_ball(G, p, 1.0) * radius_t[:, None]
            if t % record_every == 0 or t == T:
                history.record(w, t)
        return self._result(
            T, d,
            theta=w,
            history=history.iterates(),
            history_steps=history.steps(),
            n_clipped=n_clipped,
            n_gradient_evals=T,
            extra={"noise_std": sigma, "step_scale": scale, "wall_time": history.wall_times()},
        )

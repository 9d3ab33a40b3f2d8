"""LDP-LinUCB (``ldp-linucb``): a linear contextual bandit under *local* differential privacy
(Zheng, Cai, Huang, Li & Wang 2020, "Locally Differentially Private (Contextual) Bandits
Learning", arXiv 2006.00701, contextual linear bandit algorithm). Reference note:
``docs/agents-modern.md``.

Protocol (disjoint model: ``K`` arms, one ``theta_k`` each, contexts shared)
----------------------------------------------------------------------------
1. The server broadcasts its current noisy sums; user ``t`` computes the optimistic arm
   ``argmax_k <u, theta_k> + beta_t sqrt(u^T V_k^-1 u)`` on its own device
   (``u = clip(x)/L``, so ``||u||_2 <= 1``; ties uniformly at random).
2. After seeing its reward (``y = clip(r, B)``) the user sends, for *every* arm ``k``,
   ``1{a=k} u u^T + B_k`` and ``1{a=k} y u + xi_k``: ``B_k`` symmetric with its upper
   triangle (diagonal included) i.i.d. ``N(0, sigma_G^2)`` and mirrored, ``xi_k ~
   N(0, sigma_b^2 I)`` (the paper's randomizer; all ``K`` blocks are noised, so the message
   does not reveal the arm, which is a function of the user's context). Blocks off the
   diagonal of the ``Kd x Kd`` design are zero for every user, so they carry nothing and are
   not sent.
3. The server adds the message to its sums: ``V_k = sum G_k + 2 gamma_t I`` with
   ``gamma_t = sigma_G sqrt(t) (4 sqrt(d) + 2 ln(2TK/alpha))`` (the paper's shift ``c_t =
   2 gamma_t``; ``K`` in the logarithm: union over the arms' blocks), ``b_k = sum b``.

Privacy
-------
Each user's message is one Gaussian mechanism in that user's ``(x_t, r_t)`` (and its arm,
a function of them). In the noise metric its replace-one sensitivity is at most
``fit_sensitivity(sigma_G/sqrt 2, sigma_b/(2B))`` (the upper-triangle change is at most the
Frobenius one, ``||u u^T - u' u'^T||_F``, and the targets change by at most ``2B``; see
:func:`~dpbandits.agents.screened_ls.fit_sensitivity`), so the message is ``1/k``-GDP for
``k = sigma_G / (that sensitivity at sigma_G = 1)``; nothing else about the user leaves
the device, so the run is ``(epsilon, delta)``-LDP (the server's actions post-process the
messages). ``calibration``:

* ``"accountant"`` (default): ``sigma_b = B sigma_G`` and the smallest ``k`` the PLD
  accountant certifies at ``(epsilon, delta)``;
* ``"theorem"`` (formerly ``"paper"``, still accepted): ``sigma = 4 sqrt(2 ln(2.5/delta)) /
  epsilon`` (times ``B`` for the targets): the classical Gaussian mechanism (Dwork & Roth
  2014, Thm A.1) at ``(epsilon/2, delta/2)`` for each part with l2 sensitivity 2, basic
  composition. Thm A.1 needs ``epsilon/2 < 1``, so this calibration refuses
  ``epsilon >= 2``.

The plan (:func:`ldp_linucb_plan`) has the scales ``multiplier`` (``k``, dimensionless),
``gram`` (``sigma_G``) and ``target`` (``sigma_b``), standard deviations in the units of
``u u^T`` and ``y u``; ``ledger`` is ``gaussian_event(k)`` of the one message a user sends.

Who holds the seed. In this simulation the local randomizers draw their noise from the
agent's own generator (the ``rng`` given to ``reset`` or ``fit``), so the server object holds
every user's noise. The local model means something only if the server cannot know that
noise: in a deployment each user draws from a generator only that user holds (its own
device's entropy), and whoever holds the seed given here can subtract the noise and read
every user's clipped ``(u u^T, y u)``. With the seed held by the server alone the run is a
central mechanism whose guarantee covers the *published* state and actions, not the
messages.

Confidence radius: Shariff & Sheffet (2018) Proposition 4 (data-dependent form), as the
paper's analysis instantiates it, with ``rho_min = gamma_t``, ``rho_max = 3 gamma_t``, ``D =
Kd`` and the accumulated target noise ``sigma_b sqrt(t) (sqrt(D) + sqrt(2 ln(2T/alpha))) /
sqrt(gamma_t)``. If ``V_k`` is not positive definite (probability below ``alpha``) its
spectrum is raised to ``rho_min`` (counted in ``n_raised_``).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits.agents._private_ridge import PrivateRidgeUCB, ridge_params
from dpbandits.agents.base import register_agent
from dpbandits.agents.screened_ls import fit_sensitivity
from dpbandits.privacy.accounting import calibrate, gaussian_event, gdp_mu
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import (
    gaussian_noise,
    gaussian_sigma_classical,
    symmetric_gaussian,
)
from dpbandits.privacy.plan import NoisePlan, check_calibration

__all__ = ["LDPLinUCB"]  # the agent; the rest supports it

#: whitened sensitivity of one message at sigma_G = 1, sigma_b = B (module docstring)
UNIT_SENSITIVITY = fit_sensitivity(1.0 / math.sqrt(2.0), 0.5)


#: who must hold the noise seed for the local model to mean anything (privacy record caveat)
SEED_CAVEAT = (
    "local only if each user's noise is drawn from a generator only that user holds: here "
    "the messages' noise comes from the agent's own rng (the seed given to reset or fit), and "
    "whoever holds that seed can remove it and read every user's clipped statistics")


def paper_sigma(epsilon: float, delta: float) -> float:
    """Zheng et al.'s ``sigma = 4 sqrt(2 ln(2.5/delta)) / epsilon``: the classical Gaussian
    mechanism at ``(epsilon/2, delta/2)`` with l2 sensitivity 2 (valid for ``epsilon < 2``)."""
    if not epsilon < 2.0:
        raise ValueError(f"calibration='theorem' uses the classical Gaussian mechanism at "
                         f"epsilon/2, valid only for epsilon < 2, got epsilon={epsilon}; use "
                         "calibration='accountant'")
    return gaussian_sigma_classical(epsilon / 2.0, delta / 2.0, 2.0)


def ldp_linucb_plan(epsilon: float, delta: float, calibration: str,
                    reward_bound: float) -> NoisePlan:
    """The noise plan of LDP-LinUCB (module docstring) for validated ``epsilon`` (inf: no
    noise), ``delta``, ``calibration`` (``"accountant"`` or ``"theorem"``) and reward bound
    ``B``."""
    if not math.isfinite(epsilon):
        return NoisePlan.non_private("LDP-LinUCB with noise off (LinUCB)",
                                     {"multiplier": 0.0, "gram": 0.0, "target": 0.0})
    if calibration == "theorem":
        s = paper_sigma(epsilon, delta)
        k = s / UNIT_SENSITIVITY
        how = ("the paper's sigma = 4 sqrt(2 ln(2.5/delta))/epsilon (Dwork & Roth Thm A.1 at "
               "(epsilon/2, delta/2) per part, basic composition)")
    else:
        k = calibrate(gaussian_event, epsilon, delta, lower=1.0 / gdp_mu(epsilon, delta),
                      growth=1.0 + 1e-4, rtol=math.inf)
        s = k * UNIT_SENSITIVITY
        how = "the smallest noise the dp_accounting PLD accountant certifies"
    guarantee = PrivacyGuarantee(
        epsilon, delta, notion="LDP", neighbouring="replace-one", caveat=SEED_CAVEAT,
        basis=("Zheng et al. 2020 local randomizer: each user sends its clipped "
               "(u u^T, y u) for every arm with symmetric Gaussian noise on the Gram "
               "blocks and Gaussian noise on the targets, one Gaussian mechanism in the "
               f"user's data (joint sensitivity bound); {how}; the server post-processes "
               "the messages"))
    return NoisePlan(calibration, {"multiplier": k, "gram": s, "target": s * reward_bound},
                     guarantee, gaussian_event(k))


@register_agent("ldp-linucb")
class LDPLinUCB(PrivateRidgeUCB):
    """LDP-LinUCB: each user privatizes its own statistics before sending them (local DP).

    Parameters
    ----------
    calibration : {"accountant", "theorem"}, default "accountant"
        Noise from the accountant (the smallest it certifies) or from the theorem (module
        docstring).
    reg : float, default 1.0
        Ridge regularizer > 0 of the non-private twin (``epsilon = inf``).
    """

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, calibration: str = "accountant",
                 context_bound: float | None = None, reward_bound: float = 1.0,
                 noise_std: float = 0.05, theta_bound: float | None = None,
                 alpha: float | None = None, reg: float = 1.0):
        super().__init__(**ridge_params(locals()))
        self.calibration = calibration
        self._plan = ldp_linucb_plan(
            self._eps, self._delta,
            check_calibration(calibration, ("accountant", "theorem"), "LDPLinUCB"), self._B)

    # -- state -------------------------------------------------------------------------------
    def _reset(self, n_reps: int, rng: np.random.Generator) -> None:
        self._noise_rng, self._tie_rng = rng.spawn(2)
        R, K, d = n_reps, self.n_arms, self.dim
        self._iu, self._ju = np.triu_indices(d)
        self._gram = np.zeros((R, K, self._iu.size))  # server's sum, packed upper triangle
        self._target = np.zeros((R, K, d))
        self._reset_counters(R)
        self._refit(0)

    def _gamma(self, t: int) -> float:
        """``gamma_t`` (the shift is ``2 gamma_t``), with ``t >= 1`` messages."""
        return float(self._gram_noise_bound(self._plan.scales["gram"], max(t, 1)))

    @property
    def gram_(self) -> np.ndarray:
        """The server's summed Gram blocks, (R, K, d, d) symmetric (messages only, no shift)."""
        out = np.zeros((*self._gram.shape[:2], self.dim, self.dim))
        out[..., self._iu, self._ju] = self._gram
        out[..., self._ju, self._iu] = self._gram
        return out

    @property
    def target_(self) -> np.ndarray:
        """The server's summed targets, (R, K, d)."""
        return self._target.copy()

    def _refit(self, t: int) -> None:
        """``V_k``, its log-determinant and the radius after ``t`` messages (Cholesky); a block
        ``V_k`` that is not positive definite gets its spectrum raised to ``rho_min``."""
        if self._private:
            rho_min = self._gamma(t)
            shift, rho_max = 2.0 * rho_min, 3.0 * rho_min
        else:
            shift = rho_min = rho_max = self._reg
        v = self.gram_ + shift * np.eye(self.dim)
        try:
            chol = np.linalg.cholesky(v)
        except np.linalg.LinAlgError:  # rare (probability < alpha): fix the non-PD blocks only
            w, q = np.linalg.eigh(v)
            bad = w[..., 0] <= 0.0
            fixed = np.einsum("...ij,...j,...kj->...ik", q, np.maximum(w, rho_min), q)
            v = np.where(bad[..., None, None], fixed, v)
            self.n_raised_ += bad.any(axis=1)
            chol = np.linalg.cholesky(v)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=(-1, -2))
        self._v = v
        gamma = self._target_noise(self._plan.scales["target"], max(t, 1), rho_min)
        self._beta = self._radius(logdet, rho_min, rho_max, gamma)

    def act(self, contexts: np.ndarray) -> np.ndarray:
        u = self._units(contexts)
        rhs = np.stack([self._target, np.broadcast_to(u[:, None, :], self._target.shape)], -1)
        sol = np.linalg.solve(self._v, rhs)  # (R, K, d, 2): theta_k and V_k^-1 u
        return self._choose(sol[..., 0], sol[..., 1], u)

    def _update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        gram, target = self.message(contexts, arms, rewards)
        self._gram += gram
        self._target += target
        self._refit(self.t_ + 1)

    def _contributions(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray):
        """Each user's message without its noise, whitened (packed ``u u^T`` over
        ``sigma_G``, ``y u`` over ``sigma_b``), with the sensitivity ``1/multiplier`` the
        calibration declares in that metric (:mod:`dpbandits.privacy.contributions`)."""
        from dpbandits.agents._private_ridge import normalized_rows, whitened_terms
        from dpbandits.privacy.contributions import Contribution

        u, y, _, _ = normalized_rows(contexts, rewards, self._L, self._B)  # as message does
        terms = whitened_terms(u, y, arms, self.n_arms, 1.0, self.sigmas["gram"],
                               self.sigmas["target"])
        return [Contribution("message", terms, 1.0 / self.multiplier)]

    def message(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """The local randomizer, run by each user on its own data: its clipped ``u u^T``
        (packed upper triangle, (R, K, d(d+1)/2)) and ``y u`` ((R, K, d)) placed in its arm's
        block, plus the Gaussian noise on every block (clips counted)."""
        R, K, d = contexts.shape[0], self.n_arms, self.dim
        u, y = self._clipped(contexts, rewards)
        rows = np.arange(R)
        gram = np.zeros((R, K, self._iu.size))
        gram[rows, arms] = u[:, self._iu] * u[:, self._ju]
        target = np.zeros((R, K, d))
        target[rows, arms] = y[:, None] * u
        if self._private:
            rng, scales = self._noise_rng, self._plan.scales
            # the paper's randomizer: B_k's upper triangle, diagonal included, i.i.d.
            # N(0, sigma_G^2) (packed; the sensitivity is the packed triangle's, module
            # docstring), then xi_k ~ N(0, sigma_b^2 I)
            gram += symmetric_gaussian(rng, d, sigma_off=scales["gram"],
                                       sigma_diag=scales["gram"], size=(R, K), form="packed")
            target += gaussian_noise(rng, scales["target"], target.shape)
        return gram, target

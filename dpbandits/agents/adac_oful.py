"""AdaC-OFUL (``adac-oful``): optimistic linear contextual bandit with adaptive episodes and
one Gaussian release per episode, under zero-concentrated DP (Azize & Basu 2023,
"Concentrated Differential Privacy for Bandits", arXiv 2309.00557). Reference note:
``docs/agents-modern.md``.

Model: contexts ``x`` (R, d) shared by the ``K`` arms, one ``theta_k`` per arm (the disjoint
model: OFUL on ``R^{Kd}`` with block-diagonal design), ``r = <x, theta_a> + noise``. Every
statistic uses ``u = clip(x)/L`` (``||u||_2 <= 1``, ``L = context_bound``) and
``y = clip(r, B)``; both clips are counted.

Algorithm (the paper's blueprint: rarely switching OFUL, Gaussian mechanism, adaptive episodes)
-----------------------------------------------------------------------------------------------
* An episode ends when the design's determinant has grown by ``det_factor`` (the paper's
  ``det V_t > 2 det V_tau``) or, with ``schedule="doubling"``, at rounds fixed in advance
  (lengths ``first_episode * 2^j``).
* At the end of an episode the agent releases noisy sums *of that episode's rounds only*
  and adds them to the running released sums, so every user enters exactly one release.
* Between episodes the estimate is fixed: ``theta_k = V_k^-1 b_k`` and the arm is
  ``argmax_k <u, theta_k> + beta sqrt(u^T V_k^-1 u)`` (ties uniformly at random).

Two trust readings (``protect``)
--------------------------------
* ``"reward"`` -- **the published algorithm** as we read it: the private inputs are the
  rewards; the design ``V`` and the determinant trigger use the exact contexts, and only
  ``sum y u`` gets ``N(0, sigma^2 I)`` with ``sigma = 2B / sqrt(2 rho)`` (replace-one
  sensitivity ``2B`` of a reward). Under the guarantee every agent of this package states
  (replace-one neighbouring on a user's ``(x_t, r_t)``, JDP) this is **not certified**: the
  released design and the episode ends are exact functions of the contexts (audit
  ``adac-oful-published``).
* ``"user"`` (default) -- what the code certifies for users ``(x_t, r_t)``:

  - the episode's release is the per-arm Gram ``sum u u^T`` (GOE noise, ``N(0, sigma_G^2)``
    on the diagonal, ``N(0, sigma_G^2/2)`` off it) and ``sum y u`` (``N(0, sigma_b^2 I)``):
    one Gaussian mechanism with the exact joint sensitivity of
    :func:`~dpbandits.agents.screened_ls.fit_sensitivity`, ``1/k``-GDP, i.e.
    ``1/(2k^2)``-zCDP;
  - the determinant trigger reads the current episode's raw data, so it is privatized:
    AboveThreshold (Dwork & Roth 2014, Alg. 1, Thm 3.23) on
    ``q_t = sum_k ln det(A_k + G_k(t)) - ln det A_k`` (``A_k`` the public design of the
    last release with its spectrum raised to ``lambda_T = 2 Upsilon_1``, the first episode's
    shift; ``G_k(t)`` the episode's Gram so far) against ``ln det_factor``; a user changes
    ``q_t`` by at most ``Delta = ln(1 + 1/lambda_T)`` because ``||u|| <= 1`` and
    ``A_k >= lambda_T I`` (``ln det`` grows by ``ln(1 + u^T M^-1 u)`` when ``u u^T`` is added),
    so Laplace noise ``2 Delta/eps_1`` (threshold) and ``4 Delta/eps_1`` (queries) make each
    episode's trigger ``eps_1``-DP, i.e. ``eps_1^2/2``-zCDP;
  - the design ``V_k = G_k + 2 Upsilon_m I`` (``m`` releases so far; Shariff & Sheffet 2018,
    Section 4.2 shift) with its spectrum floored at ``Upsilon_m`` (counted).

Privacy of ``"user"``
---------------------
An episode reads a user only between its public start and its end (the trigger of an earlier
episode that ends before the user reads nothing of it), and later episodes only
post-process published releases, so each user's privacy loss is that of one trigger and one
release: ``rho = eps_1^2/2 + 1/(2k^2)``-zCDP (Bun & Steinke 2016: pure DP to zCDP,
Prop. 1.4, and the composition of zCDP), hence ``(epsilon, delta)``-DP of the releases by the
RDP conversion
(:func:`~dpbandits.privacy.accounting.zcdp_epsilon`), and ``(epsilon, delta)``-JDP of the
actions (billboard lemma: each action is a function of its user's context, the releases and
the agent's own randomness). ``calibration="theorem"`` (the paper's zCDP calibration,
formerly ``"zcdp"``) sets ``rho = zcdp_rho(epsilon, delta)``, spends ``trigger_share`` of it
on the trigger and ``sigma = Delta/sqrt(2 rho_G)`` on the release; ``"accountant"``
(formerly ``"pld"``) keeps ``eps_1`` and takes the smallest ``k`` for which the PLD
accountant certifies the composed pair. ``ledger`` is that pair of mechanisms
(``pure_dp_event(eps_1)`` + ``gaussian_event(k)``), so the harness recomputes the certified
epsilon from the noise actually added.

The plan (:func:`adac_oful_plan`) has the scales ``eps_trigger`` (``eps_1``, 0 without a
private trigger), ``multiplier`` (``k``, dimensionless), ``gram`` and ``target``
(``sigma_G``, ``sigma_b``: standard deviations in the units of ``u u^T`` and ``y u``) and
``trigger_threshold``, ``trigger_query`` (the Laplace scales ``2 Delta/eps_1`` and
``4 Delta/eps_1``, in units of ``ln det``); its sensitivity ``trigger`` is ``Delta``.

Confidence radius (both readings): Shariff & Sheffet (2018) Proposition 4, data-dependent form,
``beta = sigma_eta sqrt(2 ln(2/alpha) + ln det V - D ln rho_min) + S sqrt(rho_max) + gamma``
with ``D = Kd``, ``S`` the bound on ``||theta||_2`` in ``u`` units (``L * theta_bound``),
``rho_min = Upsilon_m, rho_max = 3 Upsilon_m`` (``"user"``; ``reg`` for ``"reward"``) and
``gamma`` the bound on the accumulated target noise (:mod:`~dpbandits.agents._private_ridge`).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np

from dpbandits._validation import check_choice, check_int, check_real
from dpbandits.agents._private_ridge import (
    PrivateRidgeUCB,
    noise_norm_bound,
    ridge_params,
    ridge_parts,
)
from dpbandits.agents.base import register_agent
from dpbandits.agents.screened_ls import episode_ends, fit_sensitivity, gram_noise
from dpbandits.privacy.accounting import (
    calibrate,
    compose,
    gaussian_event,
    pure_dp_event,
    zcdp_rho,
)
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise, standard_laplace
from dpbandits.privacy.plan import NoisePlan, PlanView, check_calibration

__all__ = ["AdaCOFUL"]  # the agent; the rest supports it

PUBLISHED_CAVEAT = (
    "the published AdaC-OFUL protects rewards only: its design matrix and its determinant "
    "trigger are exact functions of the users' contexts, so (epsilon, delta)-JDP over users "
    "(x_t, r_t) does not hold (audit adac-oful-published); the Gaussian noise on the targets "
    "is rho-zCDP for reward-only neighbours")


def _events(eps_trigger: float, k: float) -> dp_accounting.DpEvent:
    gauss = gaussian_event(k)
    return compose([pure_dp_event(eps_trigger), gauss]) if eps_trigger > 0 else gauss


def adac_oful_plan(epsilon: float, delta: float, *, calibration: str, protect: str,
                   schedule: str, trigger_share: float, gram_share: float,
                   reward_bound: float, n_arms: int, dim: int, horizon: int,
                   alpha: float) -> NoisePlan:
    """The noise plan of AdaC-OFUL (module docstring) for validated parameters
    (``epsilon = inf``: no noise; ``calibration`` ``"theorem"`` or ``"accountant"``;
    ``alpha`` the failure probability of the confidence radius)."""
    names = ("eps_trigger", "multiplier", "gram", "target", "trigger_threshold",
             "trigger_query")
    if not math.isfinite(epsilon):
        return NoisePlan.non_private("AdaC-OFUL with noise off (rarely switching OFUL)",
                                     dict.fromkeys(names, 0.0))
    user = protect == "user"
    svt = user and schedule == "determinant"
    eps_trigger = 0.0
    rho = zcdp_rho(epsilon, delta)
    if svt:
        eps_trigger = math.sqrt(2.0 * trigger_share * rho)
        rho *= 1.0 - trigger_share
    if calibration == "theorem":
        k = 1.0 / math.sqrt(2.0 * rho)
    else:
        k = calibrate(lambda z: _events(eps_trigger, z), epsilon, delta,
                      start=1.0 / math.sqrt(2.0 * rho), rtol=1e-4)
    how = ("rho-zCDP converted by the RDP accountant (calibration 'theorem', the paper's zCDP)"
           if calibration == "theorem" else "PLD accountant (calibration 'accountant')")
    scales = dict.fromkeys(names, 0.0)
    scales.update(eps_trigger=eps_trigger, multiplier=k)
    sensitivities = {}
    if not user:  # rewards only: sum y u changes by at most 2B
        scales["target"] = k * 2.0 * reward_bound
        guarantee = PrivacyGuarantee(
            epsilon, delta, notion="JDP", certified=False, caveat=PUBLISHED_CAVEAT,
            basis=f"Azize & Basu 2023 (AdaC-OFUL, Gaussian mechanism on each episode's "
                  f"sum of y u, one release per reward); {how}")
        return NoisePlan(calibration, scales, guarantee, _events(eps_trigger, k))
    g = gram_share
    unit = fit_sensitivity(1.0 / math.sqrt(g), 1.0 / math.sqrt(1.0 - g))
    scales["gram"] = unit * k / math.sqrt(g) * math.sqrt(2.0)
    scales["target"] = unit * k / math.sqrt(1.0 - g) * 2.0 * reward_bound
    # the first episode's shift 2 Upsilon_1 bounds the determinant trigger's sensitivity
    floor = 2.0 * float(noise_norm_bound(scales["gram"], 1, dim, horizon, alpha / n_arms))
    sensitivities["trigger"] = math.log1p(1.0 / floor)
    if svt:
        b = sensitivities["trigger"] / eps_trigger
        scales.update(trigger_threshold=2.0 * b, trigger_query=4.0 * b)
    trig = ("an AboveThreshold determinant trigger (eps_1-DP per episode) and "
            if svt else "episodes fixed in advance and ")
    guarantee = PrivacyGuarantee(
        epsilon, delta, notion="JDP", neighbouring="replace-one",
        basis=(f"Azize & Basu 2023 blueprint with contexts protected: {trig}one Gaussian "
               "release per episode of the episode's Gram and targets (exact joint "
               "sensitivity, contexts clipped to L, rewards to B); each user is read by one "
               "episode (parallel composition), actions post-process the releases "
               f"(billboard lemma); {how}"))
    return NoisePlan(calibration, scales, guarantee, _events(eps_trigger, k), sensitivities)


@register_agent("adac-oful")
class AdaCOFUL(PrivateRidgeUCB):
    """AdaC-OFUL: OFUL with one Gaussian release per adaptive episode (zCDP, JDP).

    Parameters
    ----------
    protect : {"user", "reward"}, default "user"
        ``"user"``: certified JDP over ``(x_t, r_t)``; ``"reward"``: the published release,
        rewards only, not certified for users.
    schedule : {"determinant", "doubling"}, default "determinant"
        ``"determinant"``: the paper's trigger; ``"doubling"``: episode lengths
        ``first_episode * 2^j``, fixed in advance.
    det_factor : float, default 2.0
        The determinant growth (> 1) that ends an episode (the paper's 2).
    first_episode : int, default 1
        First episode length (>= 1) of ``schedule="doubling"``.
    calibration : {"theorem", "accountant"}, default "theorem"
        ``"theorem"``: the paper's zCDP calibration ``sigma = Delta/sqrt(2 rho)``;
        ``"accountant"``: the smallest noise the PLD accountant certifies.
    trigger_share : float, default 0.1
        Fraction in (0, 1) of ``rho`` spent on the private trigger (``"user"`` with the
        determinant schedule).
    gram_share : float, default 0.5
        Fraction in (0, 1) of the release's ``mu^2`` spent on the Gram (``"user"``).
    reg : float, default 1.0
        Ridge regularizer > 0 of the exact design (``"reward"`` and non-private).
    """

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, protect: str = "user",
                 schedule: str = "determinant", det_factor: float = 2.0,
                 first_episode: int = 1, calibration: str = "theorem",
                 trigger_share: float = 0.1, gram_share: float = 0.5,
                 context_bound: float | None = None, reward_bound: float = 1.0,
                 noise_std: float = 0.05, theta_bound: float | None = None,
                 alpha: float | None = None, reg: float = 1.0):
        super().__init__(**ridge_params(locals()))
        vars(self).update(protect=protect, schedule=schedule, det_factor=det_factor,
                          first_episode=first_episode, calibration=calibration,
                          trigger_share=trigger_share, gram_share=gram_share)
        check_choice("protect", protect, {"user", "reward"})
        check_choice("schedule", schedule, {"determinant", "doubling"})
        cal = check_calibration(calibration, ("theorem", "accountant"), "AdaCOFUL")
        self._log_c = math.log(check_real("det_factor", det_factor, low=1.0, low_open=True))
        self._ends = episode_ends(horizon, check_int("first_episode", first_episode, low=1))[0]
        self._tshare = check_real("trigger_share", trigger_share, low=0.0, high=1.0,
                                  low_open=True, high_open=True)
        self._gshare = check_real("gram_share", gram_share, low=0.0, high=1.0, low_open=True,
                                  high_open=True)
        self._user = self._private and protect == "user"
        self._svt = self._user and schedule == "determinant"
        self._plan = adac_oful_plan(
            self._eps, self._delta, calibration=cal, protect=protect, schedule=schedule,
            trigger_share=self._tshare, gram_share=self._gshare, reward_bound=self._B,
            n_arms=n_arms, dim=dim, horizon=horizon, alpha=self._alpha)

    # -- the plan's noise, read-only ------------------------------------------------------
    @PlanView
    def eps_trigger(self) -> float:
        """``eps_1`` of the AboveThreshold trigger (0 without a private trigger)."""
        return self._plan.scales["eps_trigger"]

    @PlanView
    def rho(self) -> float:
        """zCDP of one user's trigger and release, ``eps_1^2/2 + 1/(2k^2)`` (inf: no noise)."""
        if not self._private:
            return math.inf
        return self.eps_trigger**2 / 2.0 + 1.0 / (2.0 * self.multiplier * self.multiplier)

    @PlanView
    def trigger_sensitivity(self) -> float:
        """``Delta = ln(1 + 1/lambda_T)`` of the determinant trigger (private trigger only)."""
        return self._plan.sensitivities["trigger"]

    @PlanView
    def trigger_floor(self) -> float:
        """``lambda_T = 2 Upsilon_1``, the first episode's shift (``protect="user"``)."""
        return 2.0 * float(self._upsilon(1))

    @PlanView
    def trigger_scales(self) -> tuple[float, float]:
        """Laplace scales of AboveThreshold: ``(2 Delta/eps_1, 4 Delta/eps_1)`` for the
        threshold and for each query (``(0, 0)`` without a private trigger)."""
        return self._plan.scales["trigger_threshold"], self._plan.scales["trigger_query"]

    def _upsilon(self, m):
        """``Upsilon_m``: bound on the spectral norm of one arm's Gram noise after ``m``
        releases (``D = d`` per block, ``alpha/K`` for the union over the K blocks)."""
        return self._gram_noise_bound(self._plan.scales["gram"], m)

    # -- state -------------------------------------------------------------------------------
    def _reset(self, n_reps: int, rng: np.random.Generator) -> None:
        self._noise_rng, self._svt_rng, self._tie_rng = rng.spawn(3)
        R, K, d = n_reps, self.n_arms, self.dim
        self._gram = np.zeros((R, K, d, d))       # released (or exact) Gram, summed
        self._target = np.zeros((R, K, d))        # released targets, summed
        self._cur_gram = np.zeros((R, K, d, d))   # this episode's raw sums
        self._cur_target = np.zeros((R, K, d))
        self._q = np.zeros(R)                     # ln det growth in this episode
        self._threshold_noise = np.zeros(R)
        self.n_releases_ = np.zeros(R, dtype=np.int64)
        self._reset_counters(R)
        self._next_end = 0
        self._theta = np.zeros((R, K, d))
        self._v_inv = np.zeros((R, K, d, d))
        self._beta = np.zeros(R)
        self._m_inv = np.zeros((R, K, d, d))      # (A + G_cur)^-1 of the trigger
        self._refit(np.arange(R))

    def _bounds(self, m: np.ndarray):
        """``(shift, rho_min, rho_max, gamma)`` after ``m`` releases, per replication."""
        if self._user:
            ups = self._upsilon(np.maximum(m, 1))
            shift, rho_min, rho_max = 2.0 * ups, ups, 3.0 * ups
        else:
            shift = rho_min = rho_max = np.full(m.shape, self._reg)
        gamma = self._target_noise(self._plan.scales["target"], m, rho_min)
        return shift, rho_min, rho_max, gamma

    def _refit(self, reps: np.ndarray) -> None:
        """Estimate, inverse design and radius of replications ``reps`` from the releases."""
        shift, rho_min, rho_max, gamma = self._bounds(self.n_releases_[reps])
        floor = rho_min if self._user else 0.0  # the exact design is >= reg I already
        theta, v_inv, logdet, raised, m_inv = ridge_parts(
            self._gram[reps], self._target[reps], shift, floor,
            self.trigger_floor if self._user else None)
        self.n_raised_[reps] += raised
        self._theta[reps], self._v_inv[reps] = theta, v_inv
        self._m_inv[reps] = v_inv if m_inv is None else m_inv
        self._beta[reps] = self._radius(logdet, rho_min, rho_max, gamma)
        self._q[reps] = 0.0
        if self._svt:
            self._threshold_noise[reps] = (self.trigger_scales[0]
                                           * standard_laplace(self._svt_rng, reps.size))

    @property
    def theta_(self) -> np.ndarray:
        """The estimate in use, (R, K, dim), in units of ``u = x/L`` (``L theta``)."""
        return self._theta.copy()

    def act(self, contexts: np.ndarray) -> np.ndarray:
        u = self._units(contexts)
        return self._choose(self._theta, np.einsum("rkij,rj->rki", self._v_inv, u), u)

    def _update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        rows = np.arange(contexts.shape[0])
        u, y = self._clipped(contexts, rewards)
        self._cur_gram[rows, arms] += u[:, :, None] * u[:, None, :]
        self._cur_target[rows, arms] += y[:, None] * u
        fire = self._trigger(rows, arms, u)
        if self.t_ + 1 < self.horizon and fire.any():  # the last estimate is never played
            self._release(np.flatnonzero(fire))

    def _contributions(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray):
        """Each user's terms without noise (:mod:`dpbandits.privacy.contributions`): the
        episode release whitened (``u u^T`` with off-diagonals times ``sqrt 2`` over
        ``sigma_G``, ``y u`` over ``sigma_b``; sensitivity ``1/multiplier``) and, with the
        private trigger, its query increment ``ln(1 + u^T M^-1 u)`` for the pulled arm's
        ``M^-1`` of replication 0 (sensitivity ``trigger_sensitivity``)."""
        from dpbandits.agents._private_ridge import normalized_rows, whitened_terms
        from dpbandits.privacy.contributions import Contribution

        if not self._user:
            raise NotImplementedError("protect='reward' is not certified for users (x, r)")
        u, y, _, _ = normalized_rows(contexts, rewards, self._L, self._B)  # as _clipped does
        out = [Contribution("release", whitened_terms(
            u, y, arms, self.n_arms, math.sqrt(2.0), self.sigmas["gram"],
            self.sigmas["target"]), 1.0 / self.multiplier)]
        if self._svt:
            z = np.einsum("rij,rj->ri", self._m_inv[0, arms], u)  # as _trigger computes it
            s = np.einsum("ri,ri->r", u, z)
            out.append(Contribution("trigger", np.log1p(s)[:, None],
                                    self.trigger_sensitivity, 1.0))
        return out

    def _trigger(self, rows: np.ndarray, arms: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Episode ends after this round, per replication."""
        if self.schedule == "doubling":
            if self.t_ + 1 < self._ends[self._next_end]:
                return np.zeros(rows.size, dtype=bool)
            self._next_end += 1
            return np.ones(rows.size, dtype=bool)
        m_inv = self._m_inv[rows, arms]                       # Sherman-Morrison on the
        z = np.einsum("rij,rj->ri", m_inv, u)                 # pulled arm's (A + G_cur)^-1
        s = np.einsum("ri,ri->r", u, z)
        self._m_inv[rows, arms] = m_inv - z[:, :, None] * (z / (1.0 + s)[:, None])[:, None, :]
        self._q += np.log1p(s)
        if not self._svt:
            return self._q > self._log_c
        noise = self.trigger_scales[1] * standard_laplace(self._svt_rng, rows.size)
        return self._q + noise >= self._log_c + self._threshold_noise

    def _release(self, reps: np.ndarray) -> None:
        """Publish the current episode of replications ``reps`` and refit them."""
        gram, target = self._cur_gram[reps], self._cur_target[reps]
        rng = self._noise_rng
        if self._user:
            # the screened Gram's law (fit_sensitivity's Gaussian mechanism on the scaled
            # half-vectorization)
            gram = gram + gram_noise(rng, gram.shape, self._plan.scales["gram"])
        if self._private:
            target = target + gaussian_noise(rng, self._plan.scales["target"], target.shape)
        self._gram[reps] += gram
        self._target[reps] += target
        self._cur_gram[reps] = 0.0
        self._cur_target[reps] = 0.0
        self.n_releases_[reps] += 1
        self._refit(reps)

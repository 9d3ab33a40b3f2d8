"""Screened private least squares (``dp-screened-ls``): a jointly differentially private
linear contextual bandit that releases every user's data at most once (the last episode is
never released).

Model: contexts ``x`` (R, d) shared by the ``K`` arms, one parameter ``theta_k`` per arm
(the disjoint model of the Figure 5.1 instance), rewards ``r = <x, theta_a> + noise``.

Algorithm
---------
Rounds are cut into episodes on a schedule fixed by ``horizon`` and ``first_episode`` alone
(:func:`episode_ends`): screening episodes of ``n0`` and ``2 n0`` rounds, then fitting
episodes of ``4 n0, 8 n0, ...`` rounds. At the end of an episode the agent releases noisy
sums of that episode's rounds only; every estimate is a post-processing of the releases so
far. Actions are greedy on the current estimate, ties broken uniformly at random (so the
first episode, with a zero estimate, is uniform play).

Every statistic uses *row-normalized* data, ``u = x / ||x||_2`` and ``y = r / ||x||_2``
clipped to ``[-y_max, y_max]``: ``y = <u, theta> + noise/||x||`` is again a linear model in
``u`` with the same ``theta``, and ``||u||_2 <= 1``, so no context bound is assumed and the
Gram sensitivity is a constant. The bound holds for the floats actually used, for every
finite context: ``u`` comes from :func:`dpbandits.geometry.normalize_rows`, which computes
``||x||`` scaled by the largest entry (a plain ``sqrt(sum x_i^2)`` underflows for entries
below about ``1.5e-154`` and gave ``||u||`` up to ``sqrt(d/2 + 1)``) and certifies the exact
norm of every row it returns (``||u|| = 1`` up to a relative ``(6d + 60) 2^-53``).

* **Screening (phase A).** Per episode, release the arm contrasts
  ``c_k = sum_{a=k} y u - (1/K) sum_all y u`` (R, K, d) plus Gaussian noise in the contrast
  subspace (``y_max = clip_screen / sqrt(d)``). The running sum of the releases, hard
  thresholded at ``threshold`` noise standard deviations (union over arms), is the
  Gram-free estimate the agent plays on. After the second screening episode the
  ``screen_size`` coordinates with the largest ``max_k |c_k| / sd`` are kept: ``S``.
* **Fitting (phase B).** Per episode, release per arm the Gram ``sum_{a=k} u u'`` and
  ``sum_{a=k} y u`` of the *screened* rows ``u = x_S / ||x_S||``, ``y = r / ||x_S||``
  clipped at ``clip_fit / sqrt(|S|)``: Gaussian noise (a GOE matrix for the Gram), summed
  over the fitting episodes. The estimate is ridge least squares on ``S``,
  ``theta_S = (G+ + lambda I)^{-1} b`` with ``G+`` the PSD part of the noisy Gram and
  ``lambda = ridge * 2 sigma_G sqrt(m |S|)`` (the spectral norm of the summed noise after
  ``m`` releases). Scores ``<x_S, theta_S>`` have the argmax of ``<u, theta_S>``.

Privacy (replace-one neighbouring on one user's ``(x_t, r_t)``)
---------------------------------------------------------------
* Screening release: a user adds ``v e_a`` with ``||v|| <= y_max``; projected on the
  contrast subspace the replace-one sensitivity is ``2 y_max sqrt((K-1)/K)`` (same arm; a
  change of arm gives at most ``sqrt(2) y_max``). Noise ``N(0, sigma_A^2)`` in that
  subspace.
* Fitting release: the Gram is released as the vector ``(G_ii, sqrt(2) G_ij)_{i<j}``
  (whose l2 norm is the Frobenius norm) plus ``N(0, sigma_G^2 I)``, i.e. a symmetric noise
  matrix with variance ``sigma_G^2`` on the diagonal and ``sigma_G^2 / 2`` off it, together
  with the targets plus ``N(0, sigma_b^2 I)``: one Gaussian mechanism with two known noise
  scales, exactly ``mu``-GDP for ``mu^2 = sup ||dG||_F^2/sigma_G^2 + ||db||^2/sigma_b^2``
  over neighbours (:func:`fit_sensitivity`). Write ``A = 2/sigma_G^2``,
  ``B = 2 y_max^2/sigma_b^2``, ``rho = ||u||, rho' = ||u'|| <= 1`` and
  ``p = |<u, u'>| <= rho rho'``. Same arm: ``||u u^T - u' u'^T||_F^2 = rho^4 + rho'^4 - 2p^2``
  and ``||y u - y' u'||^2 <= y_max^2 (rho^2 + rho'^2 + 2p)``, so
  ``mu^2 <= A + B - A p^2 + B p <= A + B + B^2/(4A)`` (``2B`` when ``B > 2A``, as ``p <= 1``).
  Different arms: ``mu^2 <= A + B``. The bound is attained (unit ``u, u'`` with
  ``<u, u'> = B/(2A)``, ``y = -y' = y_max``). ``gram_share`` is ``A / (A + 2B)``, the Gram's
  part of the two worst cases added up.
* Each release is one Gaussian mechanism of noise multiplier ``k`` (``1/k``-GDP), the
  smallest ``k`` the PLD accountant certifies at ``(epsilon, delta)``. The episodes hold
  disjoint users and each only post-processes earlier *published* releases (the schedule is
  fixed in advance), so the sequence of releases is ``(epsilon, delta)``-DP in any one
  user's data (parallel composition); each action is a function of its own user's context,
  the releases and the agent's own randomness, so the agent is ``(epsilon, delta)``-JDP
  (billboard lemma, Hsu et al. 2014; Shariff & Sheffet 2018). ``ledger`` is that Gaussian
  event (parallel composition: the largest of the episodes' events, all equal).
* The plan (:func:`screened_ls_plan`, calibration ``"accountant"``, the only one) has the
  scales ``multiplier`` (``k``), ``screen`` (``sigma_A``), ``gram`` (``sigma_G``) and
  ``target`` (``sigma_b``), standard deviations in the units of the released sums, and the
  sensitivities ``screen`` (``2 y_max sqrt((K-1)/K)``), ``gram`` (``sqrt 2``) and
  ``target`` (``2 y_max``) they are relative to.

Enforced and counted: rewards clipped (``n_clipped_rewards_``); rows with ``||x|| = 0`` (or
``||x_S|| = 0``) contribute nothing (``n_zero_rows_``).

Defaults (the recommendation; how they were chosen)
---------------------------------------------------
``first_episode = ceil(horizon / 20)``, ``screen_size = min(dim, 16)``, ``clip_screen = 0.1``,
``clip_fit = 0.5``, ``gram_share = 0.4``, ``threshold = 2`` and ``ridge = 1`` are the result
of the coordinate search of ``experiments/certified_learning/tune.py`` (two passes over a
grid per parameter; objective: mean log regret ratio to uniform-random at epsilon = 1,
T = 1e4, 16 replications) on five tuning instances (K in {2, 3, 4}, d in {20, ..., 80},
isotropic, AR and equicorrelated, centred and not) with environment seeds 5000 + r: neither
the Figure 5.1 instance nor any evaluation instance or seed was used. The objective is flat
near the choice (every grid neighbour within 0.03 in mean log ratio except the shortest
first episode and the largest threshold). The clip levels are in units of reward per
root-mean-square context coordinate (``y = r / ||x||`` with ``||x|| ~ sqrt(d) rms(x)``).

Diagnostics (``episode_log_``): per release the noise standard deviations and, computed
from the raw data (**not** covered by the guarantee, never used by the agent), the signal
they compete with: ``signal_norm`` (norm of the noiseless released vector) against
``noise_norm`` (norm of the noise actually added) and, for a fitting release, the smallest
eigenvalue of the noiseless screened Gram against the spectral norm of the Gram noise.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from dpbandits._validation import check_int, check_positive, check_real
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.geometry import normalize_rows
from dpbandits.privacy.accounting import calibrate, gaussian_event
from dpbandits.privacy.accounting import gaussian_multiplier as _gdp_multiplier
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise, symmetric_gaussian
from dpbandits.privacy.plan import NoisePlan, PlanView

__all__ = ["ScreenedLS"]  # the agent; the rest supports it


def episode_ends(horizon: int, first_episode: int) -> tuple[list[int], int]:
    """``(ends, n_screen)``: the (exclusive) last round of every episode and how many of
    them are screening episodes. Screening: ``n0``, ``2 n0``; fitting: ``4 n0``, ``8 n0``,
    ...; the last episode is cut at ``horizon``."""
    horizon = check_int("horizon", horizon, low=1)
    n0 = check_int("first_episode", first_episode, low=1)
    ends: list[int] = []
    length = n0
    while not ends or ends[-1] < horizon:
        ends.append(min(horizon, (ends[-1] if ends else 0) + length))
        length *= 2
    return ends, min(2, len(ends))


def gram_noise(rng: np.random.Generator, shape: tuple, sigma: float) -> np.ndarray:
    """Symmetric noise ``shape = (..., s, s)`` for a released Gram (or moment) matrix:
    ``N(0, sigma²)`` on the diagonal, ``N(0, sigma²/2)`` off it, so that the Gram's
    half-vectorization with off-diagonals times ``sqrt 2`` (whose replace-one change is the
    Frobenius change, at most ``sqrt 2`` for unit rows) gets ``N(0, sigma² I)``, the
    Gaussian mechanism the plans calibrate (:func:`fit_sensitivity`). The law of
    ``(Z + Z^T)/sqrt 2`` at ``sigma_off = sigma/sqrt 2``, drawn by
    :func:`~dpbandits.privacy.mechanisms.symmetric_gaussian` in the ``"square"`` order these
    agents have always used (dp-screened-ls, dp-moment-ls, adac-oful)."""
    return symmetric_gaussian(rng, shape[-1], sigma_off=sigma / math.sqrt(2.0),
                              sigma_diag=sigma, size=shape[:-2], draws="square")


def fit_sensitivity(k_gram: float, k_target: float) -> float:
    """Exact replace-one sensitivity, in the noise metric, of the fitting release whose Gram
    has noise multiplier ``k_gram`` (std ``k_gram sqrt(2)``) and whose targets have
    ``k_target`` (std ``k_target 2 y_max``): ``sqrt(A + B + B^2/(4A))`` with
    ``A = 1/k_gram^2`` and ``B = 1/(2 k_target^2)``, or ``sqrt(2B)`` when ``B > 2A``
    (derivation in the module docstring). The release is ``1/k``-GDP for ``k`` = 1 / this."""
    a = 1.0 / check_positive("k_gram", k_gram) ** 2
    b = 0.5 / check_positive("k_target", k_target) ** 2
    return math.sqrt(a + b + b * b / (4.0 * a) if b <= 2.0 * a else 2.0 * b)


def _normalize(x: np.ndarray, r: np.ndarray, y_max: float):
    """Rows ``u = x/||x||`` with exact ``||u||_2 <= 1`` for every finite ``x``
    (:func:`dpbandits.geometry.normalize_rows`), targets ``clip(r/||x||, y_max)``; zero rows
    give ``u = y = 0``. Returns ``(u, y, clipped, zero)`` (the last two boolean, per row)."""
    u, norm = normalize_rows(x, 2.0, 1.0)
    zero = norm == 0.0
    with np.errstate(over="ignore"):  # r / (subnormal norm) may be inf: clipped below
        y_raw = np.where(zero, 0.0, r / np.where(zero, 1.0, norm))
    y = np.clip(y_raw, -y_max, y_max)
    return u, y, y != y_raw, zero


def screened_ls_plan(epsilon: float, delta: float, *, n_arms: int, y_screen: float,
                     y_fit: float, gram_share: float) -> NoisePlan:
    """The noise plan of screened least squares (module docstring) for validated
    ``epsilon`` (inf: no noise), ``delta``, the clip levels ``y_screen``, ``y_fit`` of the
    two kinds of release and the Gram's share ``gram_share`` of the fitting release."""
    K, g = n_arms, gram_share
    sensitivities = {"screen": 2.0 * y_screen * math.sqrt((K - 1) / K),
                     "gram": math.sqrt(2.0), "target": 2.0 * y_fit}
    if not math.isfinite(epsilon):
        return NoisePlan.non_private("screened least squares with noise off",
                                     dict.fromkeys(("multiplier", "screen", "gram", "target"),
                                                   0.0), sensitivities=sensitivities)
    base = _gdp_multiplier(epsilon, delta, 1)  # exact GDP, nudged up until the PLD certifies it
    k = calibrate(gaussian_event, epsilon, delta, lower=base, growth=1.0 + 1e-4, rtol=math.inf)
    # Gram and targets: multipliers k_G, k_b with 1/k_G^2 : 1/k_b^2 = g : 1 - g, scaled so
    # that the exact sensitivity (fit_sensitivity) of the joint release is 1/k
    unit = fit_sensitivity(1.0 / math.sqrt(g), 1.0 / math.sqrt(1.0 - g))
    k_gram, k_target = unit * k / math.sqrt(g), unit * k / math.sqrt(1.0 - g)
    scales = {"multiplier": k, "screen": k * sensitivities["screen"],
              "gram": k_gram * sensitivities["gram"],
              "target": k_target * sensitivities["target"]}
    guarantee = PrivacyGuarantee(
        epsilon, delta, notion="JDP", neighbouring="replace-one",
        basis=("Gaussian mechanisms on row-normalized statistics (||u|| <= 1 "
               "certified for every finite context, targets clipped), at most one release "
               "per user: every episode's "
               "release (screening contrasts; or the screened Gram and targets, one "
               "Gaussian mechanism with its exact joint sensitivity) is 1/k-GDP with k "
               "certified at (epsilon, delta) by the dp_accounting PLD accountant; episodes "
               "on a fixed schedule hold disjoint users (parallel composition); actions "
               "post-process the releases and the user's own context (billboard lemma)"))
    return NoisePlan("accountant", scales, guarantee, gaussian_event(k), sensitivities)


class FitRelease:
    """The fitting release shared by the screened least-squares agents: one Gaussian
    mechanism on the episode's per-arm Gram (symmetric noise, :func:`gram_noise`) and targets,
    added to the running released sums, then the ridge estimate on them (eigenvalues floored
    at 0 plus ``lam = ridge * 2 sigma_G sqrt(n_fits * p)``, a bound on the noise's spectral
    norm). Needs ``_sum`` (R, K, p), ``_gram`` (R, K, p, p), their released twins, ``_plan``
    scales ``gram`` and ``target``, ``_noise_rng``, ``_ridge``, ``_n_fits`` and ``_log``;
    its read-only views of the plan need ``_RELEASED`` (the noise scales, in order) and
    ``_ends`` (the episode ends)."""

    _RELEASED: tuple[str, ...] = ()

    @PlanView
    def multiplier(self) -> float:
        """``k``: every release is ``1/k``-GDP (0 without noise)."""
        return self._plan.scales["multiplier"]

    @PlanView
    def sigmas(self) -> dict:
        """Noise standard deviations of the releases (in the order of ``_RELEASED``)."""
        return {k: self._plan.scales[k] for k in self._RELEASED}

    @PlanView
    def sensitivities(self) -> dict:
        """Replace-one l2 sensitivities the ``sigmas`` are relative to."""
        return dict(self._plan.sensitivities)

    @property
    def episode_ends_(self) -> list[int]:
        """Exclusive last round of every episode (the first two are screening episodes)."""
        return list(self._ends)

    @property
    def screened_(self) -> np.ndarray | None:
        """The screened coordinates (R, screen_size), None before screening."""
        return None if self._support is None else self._support.copy()

    def _reset_counts(self, n_reps: int) -> None:
        """Nothing screened yet; the counts of clipped targets and zero rows, and the
        episode log, start empty."""
        self._support: np.ndarray | None = None     # (R, s) screened coordinates
        self.n_clipped_rewards_ = np.zeros(n_reps, dtype=np.int64)
        self.n_zero_rows_ = np.zeros(n_reps, dtype=np.int64)
        self.episode_log_: list[dict] = []

    def _release_fit(self) -> None:
        R, K, p = self._sum.shape
        rng = self._noise_rng
        # the Gram and the targets: one Gaussian mechanism, N(0, sigma_G^2 I) on the Gram's
        # scaled half-vectorization (gram_noise) and N(0, sigma_b^2 I) on the targets
        g_noise = gram_noise(rng, self._gram.shape, self._plan.scales["gram"])
        b_noise = gaussian_noise(rng, self._plan.scales["target"], self._sum.shape)
        self._gram_released += self._gram + g_noise
        self._b_released += self._sum + b_noise
        self._n_fits += 1
        self._log("fit", self._sum, b_noise, self._gram, g_noise)
        self._sum[:] = 0.0
        self._gram[:] = 0.0
        w, v = np.linalg.eigh(self._gram_released)
        lam = self._ridge * 2.0 * self._plan.scales["gram"] * math.sqrt(self._n_fits * p)
        w = np.maximum(w, 0.0) + max(lam, 1e-12)
        proj = np.einsum("rkji,rkj->rki", v, self._b_released)
        self._theta = np.einsum("rkij,rkj->rki", v, proj / w)


@register_agent("dp-screened-ls")
class ScreenedLS(FitRelease, PrivateAgent):
    """Private screening, then least squares on the screened coordinates; JDP (module doc).

    Parameters
    ----------
    first_episode : int or None, default None
        n0 >= 1, rounds of the first (uniform) episode; None means ``ceil(horizon/20)``.
    screen_size : int or None, default None
        ``|S|`` in [1, dim], coordinates kept for the fit; None means ``min(dim, 16)``.
    clip_screen : float, default 0.1
        Screening targets are clipped at ``clip_screen / sqrt(dim)``, > 0.
    clip_fit : float, default 0.5
        Fitting targets are clipped at ``clip_fit / sqrt(|S|)``, > 0.
    gram_share : float, default 0.4
        Fraction in (0, 1) of the fitting episodes' ``mu^2`` spent on the Gram.
    threshold : float, default 2.0
        Hard threshold (>= 0) of the screening estimate, in noise standard deviations.
    ridge : float, default 1.0
        Multiplier (> 0) of the Gram noise's spectral norm used as ridge.
    """
    supported_links = ("identity",)
    _RELEASED = ("screen", "gram", "target")

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, first_episode: int | None = None,
                 screen_size: int | None = None, clip_screen: float = 0.1,
                 clip_fit: float = 0.5, gram_share: float = 0.4, threshold: float = 2.0,
                 ridge: float = 1.0):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.first_episode = first_episode
        self.screen_size = screen_size
        self.clip_screen = clip_screen
        self.clip_fit = clip_fit
        self.gram_share = gram_share
        self.threshold = threshold
        self.ridge = ridge
        self._n0 = (max(1, math.ceil(horizon / 20)) if first_episode is None
                    else check_int("first_episode", first_episode, low=1))
        self._s = (min(dim, 16) if screen_size is None
                   else check_int("screen_size", screen_size, low=1, high=dim))
        self._y_screen = check_positive("clip_screen", clip_screen) / math.sqrt(dim)
        self._y_fit = check_positive("clip_fit", clip_fit) / math.sqrt(self._s)
        self._share = check_real("gram_share", gram_share, low=0.0, high=1.0, low_open=True,
                                 high_open=True)
        self._tau = check_real("threshold", threshold, low=0.0)
        self._ridge = check_positive("ridge", ridge)
        self._ends, self._n_screen = episode_ends(horizon, self._n0)
        self._plan = screened_ls_plan(self._eps, self._delta, n_arms=n_arms,
                                      y_screen=self._y_screen, y_fit=self._y_fit,
                                      gram_share=self._share)
        self._check_finite_noise()

    def _check_finite_noise(self) -> None:
        """Refuse clip levels whose noise standard deviation would overflow a draw (e.g.
        ``clip_fit = 1e308``: infinite target noise), naming the parameter and its limit."""
        top = np.finfo(np.float64).max / 64.0  # draws of up to 64 sd stay finite
        for key, name in (("screen", "clip_screen"), ("target", "clip_fit")):
            sigma = self._plan.scales[key]
            if not sigma <= top:  # the sd is linear in the clip level: size it at level 1
                per_unit = screened_ls_plan(
                    self._eps, self._delta, n_arms=self.n_arms, y_screen=1 / math.sqrt(self.dim),
                    y_fit=1 / math.sqrt(self._s), gram_share=self._share).scales[key]
                raise ValueError(
                    f"{name}={getattr(self, name)!r} makes the {key} noise standard deviation "
                    f"{sigma!r}, too large for finite noise draws; {name} must be at most "
                    f"{top / per_unit:.4g} at these settings")

    # -- state -------------------------------------------------------------------------------
    def _reset(self, n_reps: int, rng: np.random.Generator) -> None:
        self._noise_rng, self._tie_rng = rng.spawn(2)
        K, d = self.n_arms, self.dim
        self._episode = 0
        self._sum = np.zeros((n_reps, K, d))        # this episode's raw contrast sums
        self._released = np.zeros((n_reps, K, d))   # running sum of released contrasts
        self._theta = np.zeros((n_reps, K, d))      # the estimate played on
        self._n_releases = 0
        self._reset_counts(n_reps)

    @property
    def theta_(self) -> np.ndarray:
        """The estimate in use, (R, K, dim) (zero off the screened set once fitting)."""
        if self._support is None:
            return self._theta.copy()
        out = np.zeros((self._require_reset(), self.n_arms, self.dim))
        idx = np.broadcast_to(self._support[:, None, :], self._theta.shape)
        np.put_along_axis(out, idx, self._theta, axis=2)
        return out

    def _rows(self, contexts: np.ndarray) -> np.ndarray:
        if self._support is None:
            return contexts
        return np.take_along_axis(contexts, self._support, axis=1)

    def act(self, contexts: np.ndarray) -> np.ndarray:
        return self._choose(np.einsum("rkj,rj->rk", self._theta, self._rows(contexts)),
                            self._tie_rng)

    @staticmethod
    def _choose(scores: np.ndarray, tie_rng: np.random.Generator) -> np.ndarray:
        """The best arm of each row of ``scores``, ties broken uniformly by ``tie_rng``."""
        top = scores.max(axis=1, keepdims=True)
        u = tie_rng.random(scores.shape)
        return np.argmax(np.where(scores >= top, u, -1.0), axis=1).astype(np.int64)

    def _batch_scores(self, x: np.ndarray) -> np.ndarray:
        """Estimated rewards (n, K) of n rows from replication 0's estimate."""
        n = x.shape[0]
        theta = np.broadcast_to(self._theta[:1], (n, *self._theta.shape[1:]))
        support = None if self._support is None else np.broadcast_to(
            self._support[:1], (n, self._support.shape[1]))
        # rows laid out as act lays them out (take_along_axis), so einsum sums in its order
        rows = x if support is None else np.take_along_axis(x, support, axis=1)
        return np.einsum("rkj,rj->rk", theta, rows)

    def _batch_act(self, x: np.ndarray) -> np.ndarray:
        # n rows draw their tie-breaking uniforms in one call from a copy of the generator:
        # the same doubles, in the same order, as n successive acts
        return self._choose(self._batch_scores(x), copy.deepcopy(self._tie_rng))

    def _update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        rows = np.arange(contexts.shape[0])
        screening = self._support is None
        y_max = self._y_screen if screening else self._y_fit
        u, y, clipped, zero = _normalize(self._rows(contexts), rewards, y_max)
        self.n_clipped_rewards_ += clipped
        self.n_zero_rows_ += zero
        self._sum[rows, arms] += y[:, None] * u
        if not screening:
            self._gram[rows, arms] += u[:, :, None] * u[:, None, :]
        if self.t_ + 1 == self._ends[self._episode]:
            if self.t_ + 1 < self.horizon:  # the last estimate would never be played
                self._release_screen() if screening else self._release_fit()
            self._episode += 1

    def _contributions(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray):
        """Each user's share of the release it would enter, without noise
        (:mod:`dpbandits.privacy.contributions`): before screening, its contrast
        ``y u e_a - (1/K) y u 1`` (sensitivity ``sensitivities["screen"]``); once fitting, its
        screened ``u u^T`` (off-diagonals times ``sqrt 2``) over ``sigma_G`` and ``y u`` over
        ``sigma_b`` on replication 0's screened set (sensitivity ``1/multiplier``)."""
        from dpbandits.agents._private_ridge import whitened_terms
        from dpbandits.privacy.contributions import Contribution

        n, K = contexts.shape[0], self.n_arms
        if self._support is None:
            u, y, _, _ = _normalize(contexts, rewards, self._y_screen)  # as _update does
            v = np.zeros((n, K, self.dim))
            v[np.arange(n), arms] = y[:, None] * u
            return [Contribution("screen", v - v.mean(axis=1, keepdims=True),
                                 self.sensitivities["screen"])]
        u, y, _, _ = _normalize(contexts[:, self._support[0]], rewards, self._y_fit)
        terms = whitened_terms(u, y, arms, K, math.sqrt(2.0), self.sigmas["gram"],
                               self.sigmas["target"])
        return [Contribution("fit", terms, 1.0 / self.multiplier)]

    # -- releases ----------------------------------------------------------------------------
    def _release_screen(self) -> None:
        K = self.n_arms
        raw = self._sum - self._sum.mean(axis=1, keepdims=True)
        # N(0, sigma^2 I) on the contrasts, projected below (screen sensitivity of the plan)
        g = gaussian_noise(self._noise_rng, self._plan.scales["screen"], raw.shape)
        noise = g - g.mean(axis=1, keepdims=True)  # N(0, sigma^2) in the contrast subspace
        self._released += raw + noise
        self._n_releases += 1
        self._log("screen", raw, noise)
        self._sum[:] = 0.0
        # sd of one coordinate of the summed released contrast c_k
        sd = self._plan.scales["screen"] * math.sqrt(self._n_releases * (K - 1) / K)
        stat = np.abs(self._released).max(axis=1)  # (R, d)
        keep = stat > self._tau * sd
        self._theta = self._released * keep[:, None, :]
        if self._episode + 1 == self._n_screen:
            self._screen(stat)

    def _screen(self, stat: np.ndarray) -> None:
        """Keep the ``screen_size`` largest coordinates (ties: lowest index)."""
        R, K, s = stat.shape[0], self.n_arms, self._s
        order = np.argsort(-stat, axis=1, kind="stable")[:, :s]
        self._support = np.sort(order, axis=1)
        self._theta = np.take_along_axis(
            self._theta, np.broadcast_to(self._support[:, None, :], (R, K, s)), axis=2)
        self._sum = np.zeros((R, K, s))
        self._gram = np.zeros((R, K, s, s))
        self._b_released = np.zeros((R, K, s))
        self._gram_released = np.zeros((R, K, s, s))
        self._n_fits = 0


    def _log(self, kind: str, raw: np.ndarray, noise: np.ndarray,
             gram: np.ndarray | None = None, gram_noise: np.ndarray | None = None) -> None:
        """Noise against signal of one release (raw data: a diagnostic, not private)."""
        row = {"episode": self._episode, "kind": kind, "end": self.t_ + 1,
               "signal_norm": float(np.linalg.norm(raw, axis=(1, 2)).mean()),
               "noise_norm": float(np.linalg.norm(noise, axis=(1, 2)).mean())}
        if gram is not None and gram_noise is not None:
            row["gram_signal_min_eig"] = float(np.linalg.eigvalsh(gram).min(axis=-1).mean())
            row["gram_noise_spectral"] = float(np.abs(np.linalg.eigvalsh(gram_noise))
                                               .max(axis=-1).mean())
        self.episode_log_.append(row)

"""Moment-debiased private least squares (``dp-moment-ls``): a jointly differentially private
linear contextual bandit that releases every user's data at most once and, unlike
``dp-screened-ls``, releases an *arm-independent* second moment of the contexts with the
screening statistics, so that screening reads debiased (regressed) contrasts instead of
marginal correlations and the fit can carry the contexts' leading factors.

Model: contexts ``x`` (R, d) shared by the ``K`` arms, one parameter ``theta_k`` per arm,
rewards ``r = <x, theta_a> (+ beta_a) + noise``.

Algorithm
---------
Rounds are cut into episodes on a schedule fixed in advance by public parameters alone
(``horizon``, ``first_episode``, and ``n_arms`` through the default ``n0 = ceil(horizon/20
max(1, K/first_per_arms))``; :func:`~dpbandits.agents.screened_ls.episode_ends`): screening
episodes of ``n0`` and ``2 n0`` rounds, then fitting episodes of ``4 n0, 8 n0, ...``
rounds. At the end of an episode the agent releases noisy sums of that episode's rounds
only (the last episode is never released: its estimate would never be played); every
estimate post-processes the releases so far. Actions are greedy on the current estimate,
ties broken uniformly at random.

Every statistic uses row-normalized data. A row is augmented with an intercept coordinate,
``f = (x, kappa)`` with ``kappa = intercept * sqrt(d)`` (``intercept = 0``: none), and
``u = f / ||f||_2``, ``y = r / ||f||_2`` clipped to ``[-y_max, y_max]``: ``y = <u, (theta,
beta/kappa)> + noise/||f||`` is again linear in ``u``. ``u`` and ``||f||`` come from
:func:`dpbandits.geometry.normalize_rows`, which certifies the exact norm ``||u||_2 <= 1`` of
every row it returns for every finite context (tiny entries whose squares underflow and huge
ones included); ``y`` divides ``r`` by the computed norm, which may be subnormal: a quotient
that overflows is clipped like any other.

* **Screening (phase A).** Per episode, release together, as one Gaussian mechanism,
  (i) the arm-independent second moment ``M = sum_t u_t u_t^T`` over *all* users of the
  episode (``D x D``, ``D = d + [intercept > 0]``) and (ii) the arm contrasts
  ``c_k = sum_{a_t = k} y_t u_t - (1/K) sum_t y_t u_t`` (``y_max = clip_screen/sqrt(D)``).
  With ``M^`` and ``c^`` the sums of the releases so far, the screening estimate is the
  ridge regression of the contrasts on the moment,
  ``theta_k = (M^/K + lambda I)^{-1} c^_k`` with ``lambda = ridge_screen`` times the
  spectral norm of the summed moment noise divided by ``K``: under uniform play
  ``E c_k = (1/K) M (theta_k - mean theta)``, so where the moment is well estimated (the
  contexts' mean and common factors: large eigenvalues) the marginal bias ``M theta`` is
  undone, and elsewhere the ridge reads the marginal contrast as before. After the
  screening episodes, ``S`` = the ``screen_size`` coordinates of ``x`` with the largest
  ``max_k |theta_kj|``, and ``V`` = the leading ``n_factors`` eigenvectors of ``M^`` whose
  eigenvalue exceeds ``factor_threshold`` times the moment noise's spectral norm (post-
  processing).
* **Fitting (phase B).** Features ``g(x) = (u_S, V^T u, u_int)`` (``p = |S| + n_factors +
  [intercept > 0]`` coordinates; a factor below its threshold is a zero column), rows
  ``z = g / ||g||`` and ``y = r / (||f|| ||g||)`` clipped at ``clip_fit / sqrt(p)``. Per
  episode, release per arm the Gram ``sum_{a=k} z z^T`` and the targets ``sum_{a=k} y z``
  (one Gaussian mechanism), summed over the fitting episodes; the estimate is ridge least
  squares ``(G+ + lambda I)^{-1} b`` with ``lambda = ridge`` times the summed Gram noise's
  spectral norm; scores ``<g(x), beta_k>``.

The leading factors absorb what a screened set misses when contexts are correlated (the
omitted coordinates act mostly through the common factors), as in factor-adjusted model
selection (Fan, Ke & Wang 2020, "Factor-adjusted regularized model selection", J.
Econometrics); the debiased screening is ridge-regularized regression on a privately released
second moment, the sufficient-statistics perturbation of Wang (2018, "Revisiting differentially
private linear regression: optimal and adaptive prediction & estimation in unbounded domain",
UAI) and Sheffet (2017, "Differentially private ordinary least squares", ICML).

Privacy (replace-one neighbouring on one user's ``(x_t, r_t)``)
---------------------------------------------------------------
Every release is one Gaussian mechanism ``v + N(0, C)`` with a known diagonal ``C``; it is
``mu``-GDP for ``mu = sup ||C^{-1/2}(v(D) - v(D'))||`` over neighbours (Dong, Roth & Su 2022,
"Gaussian differential privacy", JRSS B, Theorem 2.7). Matrices are released as the vector
``(S_ii, sqrt(2) S_ij)_{i<j}`` (whose l2 norm is the Frobenius norm) with noise
``N(0, sigma^2 I)``, i.e. symmetric noise of variance ``sigma^2`` on the diagonal and
``sigma^2/2`` off it. Write ``rho = ||u||, rho' = ||u'|| <= 1`` and ``p = |<u, u'>|``:

(1)  ``||u u^T - u' u'^T||_F^2 = rho^4 + rho'^4 - 2 <u, u'>^2 <= 2 - 2 p^2``;
(2)  ``||y u - y' u'||^2 <= y_max^2 (rho^2 + rho'^2 + 2 p) <= y_max^2 (2 + 2 p)``;
(3)  projection on the contrast subspace: a change ``w e_a - w' e_{a'}`` (``w = y u``) has
     squared contrast norm ``(K-1)/K ||w - w'||^2`` if ``a = a'`` and
     ``(K-1)/K (||w||^2 + ||w'||^2) + (2/K) <w, w'>`` otherwise.

* Screening release ``(M, c)``: ``A = 2/sigma_M^2``, ``B = 2 y_max^2 (K-1)/K / sigma_c^2``.
  ``M`` does not depend on the arm, so whatever the arms, its term is ``A (1 - p^2)`` by
  (1). Same arm: by (2), (3) the contrast term is ``<= B (1 + p)``; different arms:
  ``<= B + B p/(K-1) <= B (1 + p)``. So ``mu^2 <= A + B - A p^2 + B p <= A + B + B^2/(4A)``
  (``2B`` when ``B > 2A``), attained by unit rows on one arm with ``<u, u'> = B/(2A)``,
  ``y = -y' = y_max`` (:func:`~dpbandits.agents.screened_ls.fit_sensitivity`).
* Fitting release ``(G_k, b_k)_k`` with ``A = 2/sigma_G^2``, ``B = 2 y_max^2/sigma_b^2``: the
  same bound, the different-arm case giving ``<= A + B`` (derivation in
  :mod:`dpbandits.agents.screened_ls`).
* Each release has noise multiplier ``k`` (``1/k``-GDP): the smallest ``k`` the PLD
  accountant certifies at ``(epsilon, delta)``. The episodes hold disjoint users, each user
  is released at most once (the last episode never), and the schedule is fixed in advance,
  so the sequence of releases is ``(epsilon, delta)``-DP in any one user's data (parallel
  composition); each action is a function of its own user's context, the releases and the
  agent's own randomness, so the agent is ``(epsilon, delta)``-JDP (billboard lemma: Hsu,
  Huang, Roth, Roughgarden & Wu 2014, "Private matchings and allocations", STOC; Shariff &
  Sheffet 2018, "Differentially private contextual linear bandits", NeurIPS). ``ledger`` is
  that Gaussian event.
* The plan (:func:`moment_ls_plan`, calibration ``"accountant"``, the only one) has the
  scales ``multiplier`` (``k``), ``moment`` (``sigma_M``), ``contrast`` (``sigma_c``),
  ``gram`` (``sigma_G``) and ``target`` (``sigma_b``), standard deviations in the units of
  the released sums, and the sensitivities ``moment`` and ``gram`` (``sqrt 2``),
  ``contrast`` (``2 y_max sqrt((K-1)/K)``) and ``target`` (``2 y_max``) they are relative
  to. The noise is drawn from the plan's scales and the ledger is the plan's;
  ``multiplier``, ``sigmas`` and ``sensitivities`` are read-only views of it, and
  :meth:`release_mu` recomputes a release's ``mu`` from them.

Defaults (how they were chosen)
-------------------------------
``first_episode = ceil(horizon/20)`` and ``screen_size = min(dim, 16)`` (for ``K <= 4``),
``clip_screen = 0.1``, ``clip_fit = 0.5``, ``gram_share = 0.4``, ``ridge = 1`` are
``dp-screened-ls``'s (chosen by ``experiments/certified_learning/tune.py`` on its tuning
instances). ``moment_share = 0.3``,
``ridge_screen = 1``, ``screen_episodes = 2``, ``n_factors = 0`` and ``intercept = 0`` were
compared (``experiments/certified_learning/tune_moment.py``, epsilon = 1, T = 1e4, 6
replications) on the tuning instances of ``experiments/certified_learning/instances.py`` plus
one logistic tuning instance, environment seeds 5000 + r: no evaluation instance or seed.
Factors and the intercept changed nothing measurable without noise and cost regret with it
(more Gram coordinates, more Gram noise), so they are off by default (measured; README of the
study). ``screen_per_arm = 4`` (``|S| = min(dim, max(16, 4K))``; version 3 of
the study's cells) and ``first_per_arms = 4`` (``n0 = ceil(horizon/20 max(1, K/4))``; version
4) were chosen in the third round on the many-arm tuning instances (``instances.TUNING_K``,
16 replications; neither changes anything for ``K <= 4``). The variants measured in the
study's third to fifth rounds and not kept (post-processing of the same releases, another
fixed schedule, or fewer releases) are not options of this agent: they are subclasses in
``experiments/certified_learning/variants.py``.

Enforced and counted: ``||u|| <= 1`` and ``||z|| <= 1`` for the floats used
(:func:`~dpbandits.geometry.normalize_rows`); targets clipped (``n_clipped_rewards_``); rows
with ``f = 0`` or ``g = 0`` contribute nothing (``n_zero_rows_``).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._validation import check_int, check_positive, check_range, check_real
from dpbandits.agents.base import PrivateAgent, register_agent
from dpbandits.agents.screened_ls import FitRelease, episode_ends, fit_sensitivity, gram_noise
from dpbandits.geometry import normalize_rows
from dpbandits.privacy.accounting import calibrate, gaussian_event
from dpbandits.privacy.accounting import gaussian_multiplier as _gdp_multiplier
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan

__all__ = ["MomentLS"]  # the agent; the rest supports it


def _targets(r: np.ndarray, norms: tuple[np.ndarray, ...], y_max: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """``clip(r / (n_1 n_2 ...), y_max)`` for the row norms ``norms`` (computed by
    :func:`~dpbandits.geometry.normalize_rows`), as successive quotients ``(r / n_1) / n_2``
    so that no product of norms underflows: a norm may be subnormal and a quotient overflow
    to ``inf``, which is clipped like any other (and counted); a norm of ``inf`` gives 0.
    Rows where a norm is 0 get 0 (the caller marks them zero rows). Returns ``(y, clipped)``.
    """
    y_raw = np.asarray(r, dtype=float)
    zero = np.zeros(y_raw.shape, dtype=bool)
    with np.errstate(over="ignore"):  # r / (subnormal norm) may be inf: clipped below
        for n in norms:
            zero |= n == 0.0
            y_raw = y_raw / np.where(n == 0.0, 1.0, n)
    y_raw = np.where(zero, 0.0, y_raw)
    y = np.clip(y_raw, -y_max, y_max)
    return y, y != y_raw


def _largest(stat: np.ndarray, m: int) -> np.ndarray:
    """The indices of the ``m`` largest entries of each row of ``stat`` (R, d), largest
    first, ties to the lowest index."""
    return np.argsort(-stat, axis=1, kind="stable")[:, :m]


#: the noise scales of the releases (standard deviations), in the plan's order
_RELEASED = ("moment", "contrast", "gram", "target")


def moment_ls_plan(epsilon: float, delta: float, *, n_arms: int, y_screen: float,
                   y_fit: float, moment_share: float, gram_share: float) -> NoisePlan:
    """The noise plan of moment-debiased least squares (module docstring) for validated
    ``epsilon`` (inf: no noise), ``delta``, the clip levels ``y_screen``, ``y_fit`` of the
    two kinds of release, the moment's share ``moment_share`` of the screening release and
    the Gram's share ``gram_share`` of the fitting release.

    Both kinds of release get one certified multiplier ``k``: each release's sensitivity
    (:func:`fit_sensitivity`, module doc) in its noise metric is exactly ``1/k``."""
    K = n_arms
    sensitivities = {"moment": math.sqrt(2.0),
                     "contrast": 2.0 * y_screen * math.sqrt((K - 1) / K),
                     "gram": math.sqrt(2.0), "target": 2.0 * y_fit}
    if not math.isfinite(epsilon):
        return NoisePlan.non_private("moment-debiased least squares with noise off",
                                     dict.fromkeys(("multiplier", *_RELEASED), 0.0),
                                     sensitivities=sensitivities)
    base = _gdp_multiplier(epsilon, delta, 1)  # exact GDP, nudged up until the PLD certifies it
    k = calibrate(gaussian_event, epsilon, delta, lower=base, growth=1.0 + 1e-4, rtol=math.inf)
    scales = {"multiplier": k}
    for (mat, vec), g in ((("moment", "contrast"), moment_share),
                          (("gram", "target"), gram_share)):
        # multipliers k_mat, k_vec with 1/k_mat^2 : 1/k_vec^2 = g : 1 - g, scaled so that
        # the exact joint sensitivity of the release is 1/k
        unit = fit_sensitivity(1.0 / math.sqrt(g), 1.0 / math.sqrt(1.0 - g))
        scales[mat] = unit * k / math.sqrt(g) * sensitivities[mat]
        scales[vec] = unit * k / math.sqrt(1.0 - g) * sensitivities[vec]
    guarantee = PrivacyGuarantee(
        epsilon, delta, notion="JDP", neighbouring="replace-one",
        basis=("Gaussian mechanisms on row-normalized statistics (||u|| <= 1 certified for "
               "every finite context, targets clipped), each user released at most once: "
               "every episode's release (the arm-independent second moment with the arm "
               "contrasts; or per-arm Gram and targets of the fitted features) is one "
               "Gaussian mechanism whose exact joint sensitivity makes it 1/k-GDP, k "
               "certified at (epsilon, delta) by the dp_accounting PLD accountant; "
               "episodes on a fixed schedule hold disjoint users (parallel composition); "
               "actions post-process the releases and the user's own context (billboard "
               "lemma, Hsu et al. 2014; Shariff & Sheffet 2018)"))
    return NoisePlan("accountant", scales, guarantee, gaussian_event(k), sensitivities)


@register_agent("dp-moment-ls")
class MomentLS(FitRelease, PrivateAgent):
    """Moment-debiased screening, then least squares on the screened coordinates and the
    contexts' leading private factors; JDP (module doc).

    Parameters
    ----------
    first_episode : int or None, default None
        n0 >= 1, rounds of the first (uniform) episode; None means
        ``ceil(horizon/20 * max(1, K/first_per_arms))`` (``ceil(horizon/20)`` when
        ``first_per_arms = 0``).
    first_per_arms : int, default 4
        The default first episode grows as ``K/first_per_arms`` beyond that many arms, >= 0
        (0: never grows): with many arms a screening release has few users per arm.
    screen_size : int or None, default None
        ``|S|`` in [1, dim], coordinates kept for the fit; None means
        ``min(dim, max(16, screen_per_arm * n_arms))``.
    screen_per_arm : int, default 4
        The default ``|S|`` grows as this many coordinates per arm (>= 1) beyond
        ``K = 16 / screen_per_arm``: each arm has its own support, so the union to cover
        grows with ``K``.
    n_factors : int, default 0
        Leading eigenvectors (0 to dim + 1) of the released moment added to the fit.
    intercept : float, default 0.0
        Intercept coordinate ``kappa = intercept sqrt(dim)``, >= 0 (0: none).
    clip_screen : float, default 0.1
        Screening targets are clipped at ``clip_screen / sqrt(D)``, > 0.
    clip_fit : float, default 0.5
        Fitting targets are clipped at ``clip_fit / sqrt(p)``, > 0.
    moment_share : float, default 0.3
        Fraction in (0, 1) of the screening release's ``mu^2`` spent on the moment.
    gram_share : float, default 0.4
        Fraction in (0, 1) of the fitting release's ``mu^2`` spent on the Gram.
    ridge_screen : float, default 1.0
        Multiplier (> 0) of the moment noise's spectral norm (over K) used as ridge of the
        screening regression.
    ridge : float, default 1.0
        Multiplier (> 0) of the Gram noise's spectral norm used as ridge of the fit.
    factor_threshold : float, default 2.0
        A factor is kept when its eigenvalue exceeds this many (>= 0) moment-noise spectral
        norms.
    screen_episodes : int, default 2
        Episodes (>= 1) released as screening releases.
    reward_range : (float, float) or None, default None
        The rewards' range ``(low, high)`` when it is known before any data (public; e.g.
        ``(0, 1)`` for binary rewards): every target is the reward minus the range's
        midpoint. The targets are clipped at a small level and act mostly through their
        sign, so rewards all on one side of 0 (binary rewards centred at 0) use one half of
        the clip range and carry half the signal for the same noise. None: centred at 0.
        The harness (``simulate``, ``compare``) passes the environment's declared
        ``expected_reward_range`` when this is not set. The centre is public, so the
        releases' sensitivities and the noise do not change.
    """
    supported_links = ("identity", "logistic")
    _RELEASED = _RELEASED  # the moment, contrast, Gram and target releases

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None, first_episode: int | None = None,
                 screen_size: int | None = None, n_factors: int = 0, intercept: float = 0.0,
                 clip_screen: float = 0.1, clip_fit: float = 0.5, moment_share: float = 0.3,
                 gram_share: float = 0.4, ridge_screen: float = 1.0, ridge: float = 1.0,
                 factor_threshold: float = 2.0, screen_episodes: int = 2,
                 screen_per_arm: int = 4, first_per_arms: int = 4,
                 reward_range: tuple[float, float] | None = None):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon, epsilon=epsilon, delta=delta)
        self.reward_range = reward_range
        if reward_range is None:
            self._centre = 0.0
        else:  # the midpoint, halves first: no overflow for endpoints near the float limit
            lo, hi = check_range("reward_range", reward_range)
            self._centre = lo / 2.0 + hi / 2.0
        self.first_episode = first_episode
        self.screen_size = screen_size
        self.n_factors = n_factors
        self.intercept = intercept
        self.clip_screen = clip_screen
        self.clip_fit = clip_fit
        self.moment_share = moment_share
        self.gram_share = gram_share
        self.ridge_screen = ridge_screen
        self.ridge = ridge
        self.factor_threshold = factor_threshold
        self.screen_episodes = screen_episodes
        self.first_per_arms = first_per_arms
        grow = check_int("first_per_arms", first_per_arms, low=0)
        scale = max(1.0, n_arms / grow) if grow else 1.0
        self._n0 = (max(1, math.ceil(horizon / 20 * scale)) if first_episode is None
                    else check_int("first_episode", first_episode, low=1))
        self.screen_per_arm = screen_per_arm
        per_arm = check_int("screen_per_arm", screen_per_arm, low=1)
        self._s = (min(dim, max(16, per_arm * n_arms)) if screen_size is None
                   else check_int("screen_size", screen_size, low=1, high=dim))
        self._r = check_int("n_factors", n_factors, low=0, high=dim + 1)
        self._kappa = check_real("intercept", intercept, low=0.0, high=1e6) * math.sqrt(dim)
        self._D = dim + (self._kappa > 0)
        self._p = self._s + self._r + (self._kappa > 0)
        # below 1e-75 the clipped terms' scale underflows (issue 34 item 7: the fuzzer found
        # non-finite contributions at 5e-324)
        self._y_screen = check_real("clip_screen", clip_screen, low=1e-75,
                                    high=1e6) / math.sqrt(self._D)
        self._y_fit = check_real("clip_fit", clip_fit, low=1e-75, high=1e6) / math.sqrt(self._p)
        self._mshare = check_real("moment_share", moment_share, low=0.0, high=1.0,
                                  low_open=True, high_open=True)
        self._gshare = check_real("gram_share", gram_share, low=0.0, high=1.0, low_open=True,
                                  high_open=True)
        self._ridge_screen = check_positive("ridge_screen", ridge_screen)
        self._ridge = check_positive("ridge", ridge)
        self._tau_f = check_real("factor_threshold", factor_threshold, low=0.0)
        self._n_screen = check_int("screen_episodes", screen_episodes, low=1)
        self._ends = episode_ends(horizon, self._n0)[0]
        self._n_screen = min(self._n_screen, len(self._ends))
        self._plan = moment_ls_plan(self._eps, self._delta, n_arms=n_arms,
                                    y_screen=self._y_screen, y_fit=self._y_fit,
                                    moment_share=self._mshare, gram_share=self._gshare)

    # -- the plan's noise, read-only (multiplier, sigmas, sensitivities: FitRelease) -------
    def release_mu(self, kind: str) -> float:
        """The GDP ``mu`` of one release of ``kind`` ("screen" or "fit") at the noise scales
        of the plan: :func:`fit_sensitivity` of the release's two noise multipliers (each
        scale over its part's sensitivity). Equals ``1/multiplier`` for the agent's own plan.
        """
        mat, vec = ("moment", "contrast") if kind == "screen" else ("gram", "target")
        scales, sens = self._plan.scales, self._plan.sensitivities
        return fit_sensitivity(scales[mat] / sens[mat], scales[vec] / sens[vec])

    # -- state -------------------------------------------------------------------------------
    def _reset(self, n_reps: int, rng: np.random.Generator) -> None:
        self._noise_rng, self._tie_rng = rng.spawn(2)
        K, D = self.n_arms, self._D
        self._episode = 0
        self._M = np.zeros((n_reps, D, D))          # this episode's raw moment
        self._sum = np.zeros((n_reps, K, D))        # this episode's raw per-arm target sums
        self._M_released = np.zeros((n_reps, D, D))
        self._c_released = np.zeros((n_reps, K, D))
        self._n_screens = 0
        self._theta = np.zeros((n_reps, K, D))      # the estimate played on
        self._factors: np.ndarray | None = None     # (R, D, r) factor loadings
        self._reset_counts(n_reps)

    @property
    def factors_(self) -> np.ndarray | None:
        """The factor loadings (R, D, n_factors) (zero columns: factors below threshold)."""
        return None if self._factors is None else self._factors.copy()

    @property
    def theta_(self) -> np.ndarray:
        """The coefficients in use, (R, K, D) in screening, (R, K, p) once fitting."""
        return self._theta.copy()

    def _augment(self, contexts: np.ndarray) -> np.ndarray:
        if self._kappa == 0.0:
            return contexts
        col = np.full((contexts.shape[0], 1), self._kappa)
        return np.concatenate([contexts, col], axis=1)

    def _features(self, u: np.ndarray) -> np.ndarray:
        """``g = (u_S, V^T u, u_int)`` of unit rows ``u`` (R, D)."""
        parts = [np.take_along_axis(u[:, :self.dim], self._support, axis=1),
                 np.einsum("rj,rjf->rf", u, self._factors)]
        if self._kappa > 0:
            parts.append(u[:, -1:])
        return np.concatenate(parts, axis=1)

    def _rows(self, contexts: np.ndarray, rewards: np.ndarray | None = None):
        """Rows the current phase uses: ``(z, y, clipped, zero)``; ``z`` only when
        ``rewards`` is None (for acting, where the positive row scale is irrelevant)."""
        u, norm_f = normalize_rows(self._augment(contexts), 2.0, 1.0)
        zero = norm_f == 0.0
        if self._support is None:
            if rewards is None:
                return u
            y, clipped = _targets(self._centred(rewards), (norm_f,), self._y_screen)
            return u, y, clipped, zero
        z, norm_g = normalize_rows(self._features(u), 2.0, 1.0)
        if rewards is None:
            return z
        # y = r / (||f|| ||g||), as (r / ||f||) / ||g||
        y, clipped = _targets(self._centred(rewards), (norm_f, norm_g), self._y_fit)
        return z, y, clipped, zero | (norm_g == 0.0)

    def _centred(self, rewards: np.ndarray) -> np.ndarray:
        """The rewards minus the centre of ``reward_range`` (0 without one). A difference
        that overflows is held at the largest float of its sign, so that it is clipped like
        any other large target, and gives 0 on a row of infinite norm (inf / inf is NaN)."""
        r = np.asarray(rewards, dtype=float)
        if self._centre == 0.0:
            return r
        top = np.finfo(np.float64).max
        with np.errstate(over="ignore"):
            return np.clip(r - self._centre, -top, top)

    def act(self, contexts: np.ndarray) -> np.ndarray:
        if self._support is not None and self._n_fits == 0:
            u = normalize_rows(self._augment(contexts), 2.0, 1.0)[0]
            scores = np.einsum("rkj,rj->rk", self._theta_screen, u)
        else:
            scores = np.einsum("rkj,rj->rk", self._fit_played(), self._rows(contexts))
        top = scores.max(axis=1, keepdims=True)
        u = self._tie_rng.random(scores.shape)
        return np.argmax(np.where(scores >= top, u, -1.0), axis=1).astype(np.int64)

    def _update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        rows = np.arange(contexts.shape[0])
        screening = self._support is None
        z, y, clipped, zero = self._rows(contexts, rewards)
        y = np.where(zero, 0.0, y)
        self.n_clipped_rewards_ += clipped & ~zero
        self.n_zero_rows_ += zero
        self._sum[rows, arms] += y[:, None] * z
        outer = z[:, :, None] * z[:, None, :]
        if screening:
            self._M += outer
        else:
            self._gram[rows, arms] += outer
        if self.t_ + 1 == self._ends[self._episode]:
            if self.t_ + 1 < self.horizon:  # the last estimate would never be played
                self._release_screen() if screening else self._release_fit()
            self._episode += 1

    def _contributions(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray):
        """Each user's share of the release it would enter, without noise, whitened
        (:mod:`dpbandits.privacy.contributions`), on replication 0's state: while screening,
        the upper triangle of its ``u u^T`` (off-diagonals times ``sqrt 2``) over the moment's
        noise sd and its contrast ``y u e_a - (1/K) y u 1`` over the contrasts' noise sd; once
        fitting, its features' ``z z^T`` over ``sigma_G`` and ``y z`` over ``sigma_b`` in its
        arm's block. Either release's declared sensitivity is ``1/multiplier``."""
        from dpbandits.agents._private_ridge import whitened_terms
        from dpbandits.privacy.contributions import Contribution

        n, K = contexts.shape[0], self.n_arms
        saved = {name: getattr(self, name) for name in ("_support", "_factors")}
        try:  # replication 0's screened set and factors, seen by the n users
            for name, value in saved.items():
                if value is not None:
                    setattr(self, name, np.broadcast_to(value[:1], (n, *value.shape[1:])))
            z, y, _, zero = self._rows(contexts, rewards)  # as _update computes them
        finally:
            for name, value in saved.items():
                setattr(self, name, value)
        y = np.where(zero, 0.0, y)
        sigmas, sens = self._plan.scales, 1.0 / self.multiplier
        if self._support is not None:
            terms = whitened_terms(z, y, arms, K, math.sqrt(2.0), sigmas["gram"],
                                   sigmas["target"])
            return [Contribution("fit", terms, sens)]
        iu, ju = np.triu_indices(z.shape[1])
        weight = np.where(iu == ju, 1.0, math.sqrt(2.0)) / sigmas["moment"]
        v = np.zeros((n, K, z.shape[1]))
        v[np.arange(n), arms] = y[:, None] * z
        contrast = (v - v.mean(axis=1, keepdims=True)) / sigmas["contrast"]
        moment = z[:, iu] * z[:, ju] * weight
        return [Contribution("screen", np.concatenate([moment, contrast.reshape(n, -1)], 1),
                             sens)]

    def _fit_played(self) -> np.ndarray:
        """The coefficients played on the current phase's rows: the estimate, (R, K, D) while
        screening, (R, K, p) once fitting (a hook for the study's post-processing variants)."""
        return self._theta

    # -- releases ----------------------------------------------------------------------------
    def _release_screen(self) -> None:
        K, D = self.n_arms, self._D
        rng = self._noise_rng
        raw_c = self._sum - self._sum.mean(axis=1, keepdims=True)
        # N(0, sigma_c^2 I) on the contrasts (projected below) and the moment matrix's law of
        # gram_noise: one Gaussian mechanism each, as the plan calibrates them
        g = gaussian_noise(rng, self._plan.scales["contrast"], raw_c.shape)
        c_noise = g - g.mean(axis=1, keepdims=True)  # N(0, sigma^2) in the contrast subspace
        m_noise = gram_noise(rng, self._M.shape, self._plan.scales["moment"])
        self._c_last = raw_c + c_noise  # this release's contrasts (post-processing hooks)
        self._M_released += self._M + m_noise
        self._c_released += self._c_last
        self._n_screens += 1
        self._log("screen", raw_c, c_noise, self._M, m_noise)
        self._sum[:] = 0.0
        self._M[:] = 0.0
        # ridge regression of the contrasts on the moment (per arm: the same matrix)
        m_noise_norm = 2.0 * self._plan.scales["moment"] * math.sqrt(self._n_screens * D)
        lam = max(self._ridge_screen * m_noise_norm / K, 1e-12)
        w, v = np.linalg.eigh(self._M_released / K)
        w = np.maximum(w, 0.0) + lam
        proj = np.einsum("rji,rkj->rki", v, self._c_released)
        self._theta = np.einsum("rij,rkj->rki", v, proj / w[:, None, :])
        self._after_screen_release(v, w, m_noise_norm)

    def _after_screen_release(self, v: np.ndarray, w: np.ndarray, m_noise_norm: float
                              ) -> None:
        """Once the screening estimate ``theta`` (the ridge regression, from the
        eigendecomposition ``v, w`` of ``M^/K`` floored at 0 plus the ridge) is set: screen
        after the last screening release. A hook for post-processing variants (the study's
        subclasses); nothing it does can touch the noise or the releases."""
        if self._episode + 1 == self._n_screen:
            self._screen(m_noise_norm)

    def _strength(self, theta: np.ndarray) -> np.ndarray:
        """``max_k |theta_kj|`` (R, d) over the coordinates of ``x`` of ``theta`` (R, K, D)."""
        return np.abs(theta[:, :, :self.dim]).max(axis=1)

    def _screen(self, m_noise_norm: float, order: np.ndarray | None = None) -> None:
        """``S``: the ``screen_size`` largest ``max_k |theta_kj|`` over the coordinates of
        ``x`` (ties: lowest index), or the first ``screen_size`` of ``order`` (R, >= s) when
        given; ``V``: the leading eigenvectors of the released moment above the threshold."""
        R, s = self._theta.shape[0], self._s
        if order is None:
            order = _largest(self._strength(self._theta), s)
        self._support = np.sort(order[:, :s], axis=1)
        w, v = np.linalg.eigh(self._M_released)  # ascending
        r = self._r
        top_w, top_v = w[:, ::-1][:, :r], v[:, :, ::-1][:, :, :r]
        keep = top_w > self._tau_f * m_noise_norm
        self._factors = top_v * keep[:, None, :]
        self._start_fit(R)

    def _start_fit(self, R: int) -> None:
        """Fitting state on the screened set; until the first fitting release the screening
        estimate (0 without screening: uniform play) is played on ``u``."""
        K, p = self.n_arms, self._p
        self._theta_screen = self._theta
        self._theta = np.zeros((R, K, p))
        self._sum = np.zeros((R, K, p))
        self._gram = np.zeros((R, K, p, p))
        self._b_released = np.zeros((R, K, p))
        self._gram_released = np.zeros((R, K, p, p))
        self._n_fits = 0

    def _log(self, kind: str, raw: np.ndarray, noise: np.ndarray, mat: np.ndarray,
             mat_noise: np.ndarray) -> None:
        """Noise against signal of one release (raw data: a diagnostic, not private)."""
        self.episode_log_.append({
            "episode": self._episode, "kind": kind, "end": self.t_ + 1,
            "signal_norm": float(np.linalg.norm(raw.reshape(len(raw), -1), axis=1).mean()),
            "noise_norm": float(np.linalg.norm(noise.reshape(len(noise), -1), axis=1).mean()),
            "matrix_signal_min_eig": float(np.linalg.eigvalsh(mat).min(axis=-1).mean()),
            "matrix_signal_max_eig": float(np.linalg.eigvalsh(mat).max(axis=-1).mean()),
            "matrix_noise_spectral": float(np.abs(np.linalg.eigvalsh(mat_noise))
                                           .max(axis=-1).mean())})

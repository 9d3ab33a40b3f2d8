"""The variants of ``dp-moment-ls`` measured in the study's third to fifth rounds and not kept
(README, "Third round" to "Fifth round"): subclasses of the agent, so that the package ships
only what its defaults use or a user should tune.

:class:`MomentLSVariants` takes the agent's parameters plus the seven research options, each
off by default (then it is the agent, stream for stream). Each option post-processes the same
releases, moves the fixed episode ends, or removes screening releases: none adds a release
or changes the noise plan or the ledger.

The study's commands name agents as ``[registry name, params]``; :func:`build` resolves them:
``"dp-moment-ls"`` with any of :data:`OPTIONS` is this subclass, ``"noise-ablation"`` the
diagnostic twin of ``tune_moment``, anything else the package's registry. These names are
registered here only, never in the package's registry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dpbandits._validation import check_int, check_real
from dpbandits.agents.budget_ls import BudgetLS, spike_slab_mean
from dpbandits.agents.moment_ls import MomentLS, _largest
from dpbandits.agents.screened_ls import episode_ends
from experiments.certified_learning.instances import problem_size

#: the seven research options and their "off" values
OPTIONS = {"thompson": 0.0, "fit_first": 4.0, "lasso": 0.0, "marginal_below": 0.0,
           "no_screen_below": 0.0, "no_screen_episodes": 0, "play_top": 0}


def lasso_path(a: np.ndarray, c: np.ndarray, alpha: float, top: np.ndarray,
               iters: int = 300) -> np.ndarray:
    """``argmin_t 1/2 t^T a t - c_k^T t + alpha ||t||_1`` per replication and arm (FISTA,
    step ``1/top``, ``top`` >= the largest eigenvalue of ``a`` (R, D, D)); ``c`` (R, K, D)."""
    step = 1.0 / top[:, None, None]
    t = np.zeros_like(c)
    z, q = t, 1.0
    for _ in range(iters):
        g = np.einsum("rij,rkj->rki", a, z) - c
        x = z - step * g
        t_new = np.sign(x) * np.maximum(np.abs(x) - step * alpha, 0.0)
        q_new = (1.0 + math.sqrt(1.0 + 4.0 * q * q)) / 2.0
        z = t_new + ((q - 1.0) / q_new) * (t_new - t)
        t, q = t_new, q_new
    return t


def schedule(horizon: int, n0: int, n_screen: int, fit_first: float) -> list[int]:
    """Episode ends (exclusive): the agent's (``n0``, ``2 n0``, ``4 n0``, ...) when
    ``fit_first == 4``; otherwise the screening episodes ``n0, 2 n0, ...`` (``n_screen`` of
    them), then fitting episodes of ``ceil(fit_first n0)``, twice that, ... A function of the
    public parameters only (fixed in advance), so the episodes hold disjoint users."""
    if fit_first == 4.0:
        return episode_ends(horizon, n0)[0]
    ends: list[int] = []
    lengths = [n0 * 2**i for i in range(n_screen)]
    length = max(1, math.ceil(fit_first * n0))
    while not ends or ends[-1] < horizon:
        step = lengths.pop(0) if lengths else length
        if not lengths and len(ends) >= n_screen:
            length *= 2
        ends.append(min(horizon, (ends[-1] if ends else 0) + step))
    return ends


class MomentLSVariants(MomentLS):
    """``dp-moment-ls`` with the study's research options (all off by default).

    thompson : third round, route 2: each fitting round draws every arm's coefficients from
        ``N(beta_k, thompson^2 Sigma_k)``, ``Sigma_k = n_fits sigma_b^2 (G_k + lam I)^{-2}
        + y_max^2 (G_k + lam I)^{-1}`` (post-processing), from a third child of the agent's
        stream (spawned after the agent's two, so those are unchanged).
    fit_first : third round, route 3: the first fitting episode is ``ceil(fit_first n0)``
        rounds (4: the agent's schedule).
    lasso : third round, route 5: FISTA lasso on the released ``(M^, c^)`` at ``lasso``
        contrast noise sds; ``S`` = its nonzeros, then the ridge's largest.
    marginal_below : third round, route 4: when the released moment looks isotropic (top
        eigenvalue above ``trace/D`` by less than this many moment-noise norms), play and
        screen on the 2-sd hard-thresholded marginal contrasts.
    no_screen_below : fourth round, ``c``: when ``dim <= c |S|``, ``S`` is every coordinate
        and only ``no_screen_episodes`` screening releases are made (for play).
    no_screen_episodes : fourth round: screening releases kept when the rule applies.
    play_top : fifth round: the screening estimate is played on its ``play_top`` largest
        ``max_k |theta_kj|`` coordinates until the first fit (``S`` from the whole estimate).
    """

    def __init__(self, *, thompson: float = 0.0, fit_first: float = 4.0, lasso: float = 0.0,
                 marginal_below: float = 0.0, no_screen_below: float = 0.0,
                 no_screen_episodes: int = 0, play_top: int = 0, **params):
        self.thompson, self.fit_first, self.lasso = thompson, fit_first, lasso
        self.marginal_below, self.play_top = marginal_below, play_top
        self.no_screen_below, self.no_screen_episodes = no_screen_below, no_screen_episodes
        self._ts = check_real("thompson", thompson, low=0.0, high=1e6)
        self._lasso = check_real("lasso", lasso, low=0.0, high=1e6)
        self._marg = check_real("marginal_below", marginal_below, low=0.0)
        c = check_real("no_screen_below", no_screen_below, low=0.0, high=1e6)
        small = check_int("no_screen_episodes", no_screen_episodes, low=0)
        fit_first = check_real("fit_first", fit_first, low=0.0, high=1e6, low_open=True)
        super().__init__(**params)
        self._no_screen = self.dim <= c * self._s  # |S| as the agent chooses it
        if self._no_screen:  # no screening release when d <= c |S|: S = every coordinate,
            # every release a fit (a rule on public parameters, fixed in advance)
            super().__init__(**{**params, "screen_size": self.dim})
            self.screen_size = params.get("screen_size")
        self._play_top = check_int("play_top", play_top, low=0, high=self.dim)
        self._ends = schedule(self.horizon, self._n0, self.screen_episodes, fit_first)
        if self._no_screen:  # screening releases only for play (S is every coordinate)
            self._n_screen = min(self.screen_episodes, small)
        self._n_screen = min(self._n_screen, len(self._ends))

    @classmethod
    def _init_param_names(cls) -> list[str]:
        return [*MomentLS._init_param_names(), *OPTIONS]

    def _reset(self, n_reps: int, rng: np.random.Generator) -> None:
        super()._reset(n_reps, rng)
        if self._ts > 0.0:  # a third child: the agent's two (and its stream) unchanged
            self._ts_rng = rng.spawn(1)[0]
        if self._n_screen == 0:  # S = every coordinate, no factor (no moment is released)
            self._support = np.broadcast_to(np.arange(self.dim), (n_reps, self.dim)).copy()
            self._factors = np.zeros((n_reps, self._D, self._r))
            self._start_fit(n_reps)

    def _fit_played(self) -> np.ndarray:
        theta = self._theta
        if self._ts > 0.0 and self._support is not None:  # not while playing on the screen
            z = self._ts_rng.standard_normal(theta.shape)
            theta = theta + np.einsum("rkij,rkj->rki", self._post_v, self._post_sd * z)
        return theta

    def _release_fit(self) -> None:
        super()._release_fit()
        if self._ts > 0.0:  # the ridge posterior of the released sums (post-processing)
            w, v = np.linalg.eigh(self._gram_released)
            lam = self._ridge * 2.0 * self._plan.scales["gram"] * math.sqrt(
                self._n_fits * self._p)
            w = np.maximum(w, 0.0) + max(lam, 1e-12)
            var = (self._n_fits * self._plan.scales["target"] ** 2 / w ** 2
                   + self._y_fit ** 2 / w)
            self._post_v, self._post_sd = v, self._ts * np.sqrt(var)

    def _after_screen_release(self, v: np.ndarray, w: np.ndarray, m_noise_norm: float
                              ) -> None:
        K, D = self.n_arms, self._D
        ridge = self._theta
        if self._lasso > 0.0:  # post-processing of the same released (M^, c^)
            a = np.einsum("rij,rj,rlj->ril", v, w, v)  # M^/K floored at 0, plus lam
            alpha = self._lasso * self._plan.scales["contrast"] * math.sqrt(self._n_screens)
            self._theta = lasso_path(a, self._c_released, alpha, w.max(axis=1))
        if self._marg > 0.0:  # post-processing: looks isotropic -> marginal contrasts
            w_top = np.linalg.eigvalsh(self._M_released)[:, -1]
            tr = np.trace(self._M_released, axis1=1, axis2=2)
            flat = (w_top - tr / D) < self._marg * m_noise_norm  # (R,)
            sd = self._plan.scales["contrast"] * math.sqrt(self._n_screens * (K - 1) / K)
            c = self._c_released
            marg = c * (np.abs(c).max(axis=1) > 2.0 * sd)[:, None, :]
            self._theta = np.where(flat[:, None, None], marg, self._theta)
            ridge = np.where(flat[:, None, None], c, ridge)
            self.flat_ = flat
        played = self._top_coordinates(self._theta) if self._play_top else None
        if self._episode + 1 == self._n_screen:  # S from the whole estimate
            stat = self._strength(ridge if self._marg > 0.0 else self._theta)
            if self._lasso > 0.0:  # the lasso's nonzeros first, then the ridge's largest
                order = np.lexsort((-self._strength(ridge), -stat), axis=-1)
            else:
                order = _largest(stat, self._s)
            self._screen(m_noise_norm, order)
            if played is not None:
                self._theta_screen = played
        elif played is not None:
            self._theta = played

    def _top_coordinates(self, theta: np.ndarray) -> np.ndarray:
        """``theta`` (R, K, D) with every coordinate of ``x`` but the ``play_top`` largest
        ``max_k |theta_kj|`` set to 0 (ties: lowest index; the intercept is kept)."""
        top = _largest(self._strength(theta), self._play_top)
        keep = np.zeros(theta.shape[::2], dtype=bool)
        np.put_along_axis(keep, top, True, axis=1)
        keep[:, self.dim:] = True
        return theta * keep[:, None, :]


class NoiseAblation(MomentLS):
    """dp-moment-ls with the noise scales named in ``zero`` set to 0 (a diagnostic): a changed
    noise plan (:meth:`~dpbandits.privacy.plan.NoisePlan.replaced`), whose guarantee says it
    is not certified and which has no ledger."""

    def __init__(self, *, zero: tuple = (), keep_ridge: bool = False, **kw):
        self.zero = tuple(zero)
        self.keep_ridge = keep_ridge
        super().__init__(**kw)
        self._sigma_ridge = self._plan.scales["gram"]
        if self.zero:
            self._plan = self._plan.replaced(**dict.fromkeys(self.zero, 0.0))

    def _release_fit(self) -> None:
        """As the agent's, but with ``keep_ridge`` the fit's ridge stays the private agent's
        (from its Gram noise scale) when that scale is zeroed: the third round's bound on
        what a less noisy Gram (route 1) could gain, without an unregularized fit."""
        super()._release_fit()
        if self.keep_ridge:
            p = self._p
            lam = self._ridge * 2.0 * self._sigma_ridge * math.sqrt(self._n_fits * p)
            w, v = np.linalg.eigh(self._gram_released)
            w = np.maximum(w, 0.0) + max(lam, 1e-12)
            proj = np.einsum("rkji,rkj->rki", v, self._b_released)
            self._theta = np.einsum("rkij,rkj->rki", v, proj / w)


class BudgetLSVariants(BudgetLS):
    """``dp-budget-ls`` with the issue-36 research options, each off by default (then it is
    the agent, stream for stream) and each post-processing of the same releases:

    * ``bulk`` (first round): the screening estimate averages the eigenvalues of ``M^/K``
      whose signal part (eigenvalue minus ridge) is below ``bulk`` moment-noise norms over K,
      so that only directions where the released moment carries signal are debiased and
      the noise-dominated bulk reads the marginal contrasts;
    * ``sure`` (third round, ``"plan"`` or ``"mad"``): the isotropic branch's hard threshold
      replaced by a soft one chosen by Stein's estimate of the cosine (:meth:`_thresholded`;
      it acts with ``iso_estimate = "threshold"`` and reads the plain sums, as in the third
      round);
    * ``spike`` (third round): eigenvalues of ``M^/K`` above the noise's edge debiased by the
      Wigner spiked-model inverse and used without the ridge;
    * ``iso_fit`` (third round): where the isotropy test passed, each arm's released fit
      targets over its released Gram's mean eigenvalue instead of the ridge regression;
    * ``first_bayes`` (fourth round): the first release's ridge estimate (played in episode
      1 by every replication, before the test can run) shrunk by its empirical-Bayes
      posterior mean, coordinate ``j``'s noise variance given ``M^`` being ``s [(M^/K +
      lam)^-2]_jj`` (``s``: the contrasts' variance per coordinate);
    * ``iso_from`` (fourth round): the first screening release the isotropy test reads (the
      agent's is 2; 1 tests, and may play the marginal estimate, from the first release on).
    """

    def __init__(self, *, bulk: float = 0.0, sure: str = "", spike: bool = False,
                 iso_fit: bool = False, first_bayes: bool = False, iso_from: int = 2,
                 **params):
        if not isinstance(first_bayes, bool):
            raise TypeError(f"first_bayes must be a bool, got {first_bayes!r}")
        self.first_bayes = first_bayes
        self.iso_from = iso_from
        if not isinstance(spike, bool):
            raise TypeError(f"spike must be a bool, got {spike!r}")
        if not isinstance(iso_fit, bool):
            raise TypeError(f"iso_fit must be a bool, got {iso_fit!r}")
        self.spike = spike
        self.iso_fit = iso_fit
        self.bulk = bulk
        self._bulk = check_real("bulk", bulk, low=0.0, high=1e6)
        if sure not in ("", "plan", "mad"):
            raise ValueError(f"sure must be '', 'plan' or 'mad', got {sure!r}")
        self.sure = sure
        super().__init__(**params)
        self._iso_from = check_int("iso_from", iso_from, low=1)

    def _release_fit(self) -> None:
        """With ``iso_fit``: a replication whose released moment passed the isotropy test
        plays each arm's released targets over its released Gram's mean eigenvalue
        (``b_k p / tr G_k``, the marginal fit) instead of the ridge regression."""
        super()._release_fit()
        if self.iso_fit and self._iso is not None and self._iso.any():
            p = self._b_released.shape[-1]
            tr = np.trace(self._gram_released, axis1=2, axis2=3)  # (R, K)
            marginal = self._b_released * (p / np.maximum(tr, 1.0))[:, :, None]
            self._theta = np.where(self._iso[:, None, None], marginal, self._theta)

    def _thresholded(self) -> np.ndarray:
        """With ``sure``: the summed contrasts soft-thresholded at the ``t`` (in noise sds)
        maximizing Stein's unbiased estimate of their inner product with the truth over
        their norm, ``sum_i (|z_i| (|z_i| - t)_+ - 1{|z_i| > t}) / ||(|z| - t)_+||``
        (the cosine up to ``||theta||``, which does not depend on ``t``); the noise sd from
        the plan (``"plan"``) or the median absolute deviation (``"mad"``)."""
        if not self.sure:
            return super()._thresholded()
        K, d = self.n_arms, self.dim
        c = self._c_released[:, :, :d]
        if self.sure == "plan":
            sd = self._plan.scales["contrast"] * math.sqrt(self._n_screens * (K - 1) / K)
            sd = np.full(c.shape[0], sd)
        else:
            sd = np.median(np.abs(c).reshape(c.shape[0], -1), axis=1) / 0.6745
        a = np.abs(c / sd[:, None, None]).reshape(c.shape[0], -1)  # (R, K d)
        grid = np.linspace(0.0, 4.0, 81)
        over = np.maximum(a[:, None, :] - grid[None, :, None], 0.0)  # (R, T, K d)
        num = (a[:, None, :] * over - (over > 0)).sum(axis=2)
        den = np.sqrt((over**2).sum(axis=2))
        score = np.where(den > 0, num / np.where(den > 0, den, 1.0), -np.inf)
        t = grid[np.argmax(score, axis=1)]
        out = np.zeros_like(self._c_released)
        out[:, :, :d] = np.sign(c) * np.maximum(np.abs(c) - (t * sd)[:, None, None], 0.0)
        return out

    def _after_screen_release(self, v: np.ndarray, w: np.ndarray, m_noise_norm: float
                              ) -> None:
        if self.first_bayes and self._n_screens == 1:
            # the ridge estimate (M^/K + lam)^-1 c^ of the first release shrunk by its
            # empirical-Bayes posterior mean; coordinate j's noise variance given M^ is
            # s [(M^/K + lam)^-2]_jj (s: the contrasts' variance per coordinate)
            K, d = self.n_arms, self.dim
            s_var = self.release_variance(self._ends[0])
            diag = np.einsum("rji,ri->rj", v * v, 1.0 / (w * w)) * s_var  # (R, D)
            z = self._theta[:, :, :d]
            var = np.broadcast_to(diag[:, None, :d], z.shape).reshape(len(z), -1)
            out = np.zeros_like(self._theta)
            out[:, :, :d] = spike_slab_mean(z.reshape(len(z), -1), var).reshape(z.shape)
            self._theta = out
        if self.spike:
            # eigenvalues of M^/K above the noise's semicircle edge plus the Tracy-Widom 0.99
            # quantile are spikes: their signal value is the Wigner spiked-model inverse
            # (y + sqrt(y^2 - 4 s2 D)) / 2, used without the ridge; the rest keep w + ridge
            K, D = self.n_arms, self._D
            lam = max(self._ridge_screen * m_noise_norm / K, 1e-12)
            s2 = self._n_screens * self._plan.scales["moment"] ** 2 / (2.0 * K * K)
            edge = 2.0 * math.sqrt(D * s2) + 2.0234 * math.sqrt(s2) * D ** (-1.0 / 6.0)
            raw = w - lam
            spiked = raw > edge
            sig = (raw + np.sqrt(np.maximum(raw * raw - 4.0 * s2 * D, 0.0))) / 2.0
            w = np.where(spiked, sig, w)
            proj = np.einsum("rji,rkj->rki", v, self._c_released)
            self._theta = np.einsum("rij,rkj->rki", v, proj / w[:, None, :])
        if self._bulk > 0.0:
            K = self.n_arms
            lam = max(self._ridge_screen * m_noise_norm / K, 1e-12)
            flat = (w - lam) < self._bulk * m_noise_norm / K
            mean = (w * flat).sum(axis=1) / np.maximum(flat.sum(axis=1), 1)
            w = np.where(flat, mean[:, None], w)
            proj = np.einsum("rji,rkj->rki", v, self._c_released)
            self._theta = np.einsum("rij,rkj->rki", v, proj / w[:, None, :])
        super()._after_screen_release(v, w, m_noise_norm)


def build(name: str, params: Mapping, env_params: Mapping,
          reward_range: tuple[float, float] | None = None):
    """The agent a study command names: ``(name, params)`` for the package's registry, or an
    instance of the experiment's subclasses (module doc) sized for ``env_params``. An
    instance gets ``reward_range`` (the environment's declared range) unless ``params`` set
    one, as the harness does for the registry's agents (:func:`~dpbandits.harness.simulate.
    build_agent`), so that a variant and its base agent see the same targets."""
    sized = None
    budget_options = {"bulk", "sure", "spike", "iso_fit", "first_bayes", "iso_from"}
    if name == "dp-budget-ls" and budget_options & params.keys():
        sized = BudgetLSVariants
    elif name == "noise-ablation" or (name == "dp-moment-ls" and OPTIONS.keys() & params):
        sized = NoiseAblation if name == "noise-ablation" else MomentLSVariants
    if sized is None:
        return name, dict(params)
    K, d = problem_size(env_params)
    extra = {} if reward_range is None or "reward_range" in params else {
        "reward_range": reward_range}
    return sized(n_arms=K, dim=d, horizon=env_params["horizon"], **params, **extra)

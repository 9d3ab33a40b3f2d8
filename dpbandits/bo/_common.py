"""Pieces shared by DP-GIBO and its baselines: the private gradient release (clip, average,
Gaussian noise), the GDP guarantee, the noise plan of components whose parameters are
re-validated at every use, the base class of the two private-gradient methods, the update
rules and argument checks."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np

from dpbandits._validation import (
    check_array,
    check_bound,
    check_choice,
    check_delta_open,
    check_int,
    check_positive,
    check_rng,
)
from dpbandits.bo.objectives import Objective, as_objective
from dpbandits.geometry import clip_to_norm
from dpbandits.privacy.accounting import gaussian_event, gdp_epsilon
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import gaussian_noise
from dpbandits.privacy.plan import NoisePlan, PlanMethod, Planned, check_calibration

STEP_RULES = frozenset({"sgd", "adagrad"})
#: the calibrations of the private BO methods (:mod:`dpbandits.privacy.plan`): the paper's
#: closed form, exact for Gaussian mechanisms composed in GDP
CALIBRATIONS = ("theorem",)


def clip_and_average(per_individual: np.ndarray, clip_bound: float):
    """Line 8 of Algorithm 1 (Sopa et al. 2025): ``(1/n) sum_i g_i min(1, B / ||g_i||_2)``.

    ``per_individual`` ``(n, d)``. Returns ``(mean, was_clipped)`` with ``was_clipped`` the
    ``(n,)`` mask of rescaled rows. Every clipped row has l2 norm ``<= B``, so replacing one
    individual moves the mean by at most ``2 B / n`` in l2 (proof of Theorem 3.1).

    Every clipped row has exact l2 norm ``<= B`` however the norm is rounded
    (:func:`dpbandits.geometry.clip_to_norm` certifies it on the floats returned).
    """
    clipped, was = clip_to_norm(per_individual, 2.0, clip_bound)
    return clipped.mean(axis=0), was


def gdp_noise_std(clip_bound: float, n_iters: int, n: int, mu: float) -> float:
    """Std of the per-coordinate Gaussian noise of line 9: ``2 B sqrt(T) / (n mu)``
    (0 when ``mu = inf``). Each step is then ``(mu / sqrt(T))``-GDP (sensitivity ``2B/n``,
    Theorem 2.4 of Sopa et al. 2025) and ``T`` steps compose to ``mu``-GDP (Theorem 2.5)."""
    if math.isinf(mu):
        return 0.0
    return 2.0 * clip_bound * math.sqrt(n_iters) / (n * mu)


def gdp_guarantee(mu: float, delta: float, basis: str) -> PrivacyGuarantee:
    """``mu``-GDP with its ``(epsilon, delta)`` conversion (Dong, Roth & Su), or non-private
    for ``mu = inf``."""
    if math.isinf(mu):
        return PrivacyGuarantee.non_private(basis="mu = inf: no noise")
    eps = gdp_epsilon(mu, delta)
    # gdp_epsilon returns 0 when delta already exceeds the total-variation distance; any
    # epsilon > 0 is then also valid, and PrivacyGuarantee requires epsilon > 0.
    eps = max(eps, math.ulp(0.0))
    return PrivacyGuarantee(epsilon=eps, delta=delta, notion="GDP", mu=mu, basis=basis)


def gdp_multiplier(mu: float, n_iters: int) -> float:
    """Noise multiplier (std / sensitivity) of each of ``T`` steps of a ``mu``-GDP run:
    ``sqrt(T) / mu`` (0 when ``mu = inf``)."""
    return 0.0 if math.isinf(mu) else math.sqrt(n_iters) / mu


def gdp_ledger(mu: float, n_iters: int) -> dp_accounting.DpEvent:
    """``T`` Gaussian mechanisms with noise multiplier ``sqrt(T) / mu`` (std / sensitivity)."""
    if math.isinf(mu):
        return dp_accounting.NonPrivateDpEvent()
    return gaussian_event(gdp_multiplier(mu, n_iters), count=n_iters)


def planned_scale(calibrated: float, plan: NoisePlan, own: float, name: str = "multiplier"
                  ) -> float:
    """The noise scale to draw with: ``calibrated`` (the calibration's formula, evaluated
    as it always was) times the plan's change of its scale ``name`` from its calibrated
    value ``own`` -- exactly 1 for the component's own plan, so its numbers are unchanged;
    a scaled plan (an audit's) changes the noise by its factor. 0 without noise."""
    value = plan.scales[name]
    return 0.0 if value == 0.0 else calibrated * (value / own)


#: Per-individual losses above this are scaled down before the gradient is formed, and a
#: gradient row that would exceed it is replaced by its direction at this norm (it is
#: clipped anyway: ``clip_bound`` is at most ``BOUND_RANGE[1]``).
_HUGE = 2.0**900


def loss_scales(Y: np.ndarray) -> np.ndarray:
    """Per individual (column of ``Y``), ``max |Y|`` when it exceeds ``_HUGE``, else 1 (so
    ordinary losses are used bit for bit)."""
    m = np.max(np.abs(Y), axis=0)
    return np.where(m > _HUGE, m, 1.0)


def unscale_rows(G: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``G * s[:, None]`` (rows computed from losses divided by ``s``), with each row whose
    product overflows or exceeds ``_HUGE`` replaced by its direction scaled to ``_HUGE``
    (larger than any clip bound, so it is clipped to the same direction as the true row)."""
    if np.all(s == 1.0):
        return G
    with np.errstate(over="ignore", invalid="ignore"):
        out = G * s[:, None]
        big = ~np.all(np.abs(out) <= _HUGE, axis=1)
    if big.any():
        g = G[big]
        out[big] = g / np.max(np.abs(g), axis=1)[:, None] * _HUGE
    return out


def private_gradient(per_individual: np.ndarray, clip_bound: float, noise_std: float,
                     rng: np.random.Generator):
    """Clip, average and add ``N(0, noise_std^2 I)``; returns ``(noisy, clean, was_clipped,
    noise)``. ``clean`` and ``noise`` are for diagnostics only (not private)."""
    clean, was = clip_and_average(per_individual, clip_bound)
    noise = gaussian_noise(rng, noise_std, clean.shape)
    return clean + noise, clean, was, noise


class RevalidatedPlanned(Planned):
    """:class:`~dpbandits.privacy.plan.Planned` for the BO methods, whose parameters are
    plain attributes re-validated at every use (they may be changed after construction):
    ``_plan_inputs()`` validates them and returns what the plan depends on; when that
    changes, the plan is re-computed (a plan given by ``with_plan`` is kept until then)."""

    def _plan_inputs(self) -> tuple:
        raise NotImplementedError  # pragma: no cover - abstract

    @property
    def plan(self) -> NoisePlan:
        """The frozen noise plan for the current parameters (:mod:`dpbandits.privacy.plan`)."""
        key = self._plan_inputs()
        if self.__dict__.get("_plan_key") != key:
            self.__dict__.pop("_plan", None)
            self.__dict__["_plan_key"] = key
        return super().plan


class GDPGradientMethod(RevalidatedPlanned):
    """Base of DP-GIBO and :class:`~dpbandits.bo.baselines.ExactGradientDPGD`: ``n_iters``
    releases of a clipped mean gradient plus ``N(0, (2 B sqrt(T) / (n mu))^2 I)``, each a
    step of the rule ``step_rule``, ``mu``-GDP in total (Theorem 3.1 of Sopa et al. 2025).

    Stores the shared parameters unchanged; ``_validate`` re-checks them at every use (they
    may be changed after construction) and sets ``_mu``, ``_T``, ``_B``, ``_bounds`` and
    ``_delta``. Subclasses set ``_basis`` (the theorem their guarantee rests on) and ``fit``.
    The noise plan (``plan``) has one scale, ``multiplier`` (``sqrt(T) / mu``, the noise std
    over the sensitivity ``2B/n``): ``privacy`` and ``ledger`` come from it and
    :meth:`noise_std` follows it.
    """

    _basis: str

    def __init__(self, *, mu, n_iters, clip_bound, step_size: float = 0.1,
                 step_rule: str = "sgd", adagrad_eps: float = 1e-10, theta0=None, bounds=None,
                 delta: float = 1e-5, calibration: str = "theorem",
                 record_diagnostics: bool = False):
        self.mu = mu
        self.n_iters = n_iters
        self.clip_bound = clip_bound
        self.step_size = step_size
        self.step_rule = step_rule
        self.adagrad_eps = adagrad_eps
        self.theta0 = theta0
        self.bounds = bounds
        self.delta = delta
        self.calibration = calibration
        self.record_diagnostics = record_diagnostics
        self._validate()

    def _validate(self) -> None:
        self._mu = check_mu(self.mu)
        self._T = check_int("n_iters", self.n_iters, low=1)
        self._B = check_clip(self.clip_bound, self._mu)
        check_step(self.step_rule, self.step_size, self.adagrad_eps)
        self._bounds = check_bounds(self.bounds)
        self._delta = check_gdp_delta(self.delta)
        check_calibration(self.calibration, CALIBRATIONS, type(self).__name__)
        if not isinstance(self.record_diagnostics, bool):
            raise TypeError(f"record_diagnostics must be a bool, got {self.record_diagnostics!r}")

    def _plan_inputs(self) -> tuple:
        self._validate()
        return self._mu, self._T, self._delta

    def _make_plan(self) -> NoisePlan:
        """``mu``-GDP for the whole trajectory (with its (epsilon, delta) at ``delta``):
        ``T`` Gaussian mechanisms, noise multiplier ``sqrt(T)/mu`` each."""
        if math.isinf(self._mu):
            return NoisePlan.non_private("mu = inf: no noise", {"multiplier": 0.0},
                                         events=dp_accounting.NonPrivateDpEvent())
        return NoisePlan("theorem", {"multiplier": gdp_multiplier(self._mu, self._T)},
                         gdp_guarantee(self._mu, self._delta, self._basis),
                         gdp_ledger(self._mu, self._T))

    @PlanMethod
    def noise_std(self, n: int) -> float:
        """Per-coordinate noise std ``2 B sqrt(T) / (n mu)`` for ``n`` individuals, following
        the plan's ``multiplier``."""
        plan = self.plan
        return planned_scale(gdp_noise_std(self._B, self._T, check_int("n", n, low=1),
                                           self._mu),
                             plan, gdp_multiplier(self._mu, self._T))


def fit_inputs(objective, rng, n_reps, bounds) -> tuple[Objective, np.random.Generator, int]:
    """The checked ``(objective, rng, n_reps)`` of a ``fit`` call; ``bounds`` (validated,
    or None) must match the objective's dimension."""
    obj = as_objective(objective)
    rng = check_rng(rng)
    R = check_int("n_reps", n_reps, low=1)
    check_bounds_dim(bounds, obj.dim)
    return obj, rng, R


class Stepper:
    """Plain gradient step ``theta - eta g`` or AdaGrad ``theta - eta g / (sqrt(G) + eps)``
    with ``G`` the running sum of squared (privatized) gradients, followed by projection onto
    the box ``bounds`` when given. Everything acts on released quantities: post-processing."""

    def __init__(self, step_rule: str, step_size: float, adagrad_eps: float, bounds):
        self.rule = step_rule
        self.eta = step_size
        self.eps = adagrad_eps
        self.bounds = bounds
        self.acc = None

    def __call__(self, theta: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.rule == "adagrad":
            self.acc = g * g if self.acc is None else self.acc + g * g
            new = theta - self.eta * g / (np.sqrt(self.acc) + self.eps)
        else:
            new = theta - self.eta * g
        if self.bounds is not None:
            new = np.clip(new, self.bounds[:, 0], self.bounds[:, 1])
        return new


# ---------------------------------------------------------------- argument checks
def check_mu(mu) -> float:
    return check_positive("mu", mu, allow_inf=True)


def check_clip(clip_bound, mu) -> float:
    B = check_positive("clip_bound", clip_bound, allow_inf=True)
    if math.isinf(B) and not math.isinf(mu):
        raise ValueError("clip_bound must be finite when mu is finite (the sensitivity 2B/n of "
                         "Theorem 3.1 needs clipping); clip_bound=inf is allowed only with "
                         "mu=inf")
    if not math.isinf(mu):
        check_bound("clip_bound", B)
    return B


def check_step(step_rule, step_size, adagrad_eps):
    check_choice("step_rule", step_rule, STEP_RULES)
    check_positive("step_size", step_size)
    check_positive("adagrad_eps", adagrad_eps)


def check_bounds(bounds):
    """``None`` or a ``(d, 2)`` array of finite ``[low, high]`` with ``low < high``."""
    if bounds is None:
        return None
    b = check_array("bounds", bounds, shape=(None, 2))
    if b.shape[0] < 1 or np.any(b[:, 0] >= b[:, 1]):
        raise ValueError(f"bounds must be a (d, 2) array with low < high in every row, got "
                         f"{bounds!r}")
    return b


def check_gdp_delta(delta) -> float:
    """``delta`` of the GDP -> (epsilon, delta) conversion, in (0, 1)."""
    return check_delta_open(delta, why="for the GDP -> (epsilon, delta) conversion")


def resolve_theta0(theta0, bounds, d: int, n_reps: int, rng: np.random.Generator):
    """Data-independent starting points ``(R, d)``: zeros (``None``), uniform in ``bounds``
    (``"uniform"``), one ``(d,)`` point for every replication, or ``(R, d)``."""
    if theta0 is None:
        return np.zeros((n_reps, d))
    if isinstance(theta0, str):
        check_choice("theta0", theta0, {"uniform"})
        if bounds is None:
            raise ValueError("theta0='uniform' needs bounds")
        return bounds[:, 0] + (bounds[:, 1] - bounds[:, 0]) * rng.random((n_reps, d))
    t0 = check_array("theta0", theta0)
    if t0.shape == (d,):
        return np.broadcast_to(t0, (n_reps, d)).copy()
    if t0.shape == (n_reps, d):
        return t0.copy()
    raise ValueError(f"theta0 must be None, 'uniform', shape ({d},) or ({n_reps}, {d}), got "
                     f"shape {t0.shape}")


def rep_starts(theta0, bounds, d: int, n_reps: int, rngs) -> np.ndarray:
    """Start of every replication; ``"uniform"`` draws replication ``r``'s start from its own
    generator ``rngs[r]`` (so it does not depend on ``n_reps``)."""
    if isinstance(theta0, str):
        return np.stack([resolve_theta0(theta0, bounds, d, 1, g)[0] for g in rngs])
    return resolve_theta0(theta0, bounds, d, n_reps, None)


def check_bounds_dim(bounds, d: int):
    if bounds is not None and bounds.shape[0] != d:
        raise ValueError(f"bounds has {bounds.shape[0]} rows but the objective has dim={d}")



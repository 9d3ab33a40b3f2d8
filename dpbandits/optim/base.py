"""Interfaces shared by every optimizer of the library, and the contracts they share once:
parameters, the privacy-target check, per-``n`` guarantees of batch methods, per-sample
gradient clipping and the result record.

Streaming optimizers consume one sample per replication per call and release an iterate
(continual release); batch optimizers fit a whole data set. Both are batched over a leading
replication axis ``R`` and expose their guarantee (``privacy``) and the ledger of mechanism
events their noise corresponds to (``ledger``, a ``dp_accounting.DpEvent``), so the guarantee
can be recomputed independently of the code that calibrated it.
"""

from __future__ import annotations

import copy
import math
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike

from dpbandits._docs import raises_parameter_errors
from dpbandits._params import Parameterized
from dpbandits._validation import (
    check_delta,
    check_delta_open,
    check_epsilon,
    check_int,
    check_nonnegative,
)
from dpbandits.losses import LossLike
from dpbandits.optim.gradients import (
    CHUNK_ENTRIES,
    clipped_gradient_sum,
    clipped_gradients,
    resolve_loss,
)
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.plan import NoisePlan

__all__ = [
    "CHUNK_ENTRIES",
    "BatchOptimizer",
    "BatchResult",
    "IterateHistory",
    "Optimizer",
    "PrivateBatchOptimizer",
    "StreamingOptimizer",
    "check_clip",
    "check_privacy_target",
    "clipped_gradient_sum",
    "clipped_gradients",
    "resolve_loss",
]

@raises_parameter_errors
class Optimizer(Parameterized):
    """A private optimizer: parameters (scikit-learn rule), ``privacy`` and ``ledger``.

    """

    def _store_params(self, values: dict[str, Any]) -> None:
        """Store every constructor argument unchanged under its own name (``values`` is the
        constructor's ``locals()``); validation comes after."""
        for name in self._init_param_names():
            if name in values:  # a subclass may store its own extra parameters first
                setattr(self, name, values[name])

    @property
    @abstractmethod
    def privacy(self) -> PrivacyGuarantee:
        """Guarantee of everything released (for a batch method: after ``fit``)."""

    @property
    @abstractmethod
    def ledger(self) -> dp_accounting.DpEvent:
        """The mechanism events the noise corresponds to (for independent re-accounting)."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


class StreamingOptimizer(Optimizer):
    """One sample in, one released iterate out, for ``R`` independent replications.

    Subclasses take their hyper-parameters in ``__init__`` (stored unchanged and validated
    there) and implement ``reset``, ``step``, ``privacy`` and ``ledger``.
    """

    @abstractmethod
    def reset(self, n_reps: int, rng: np.random.Generator) -> StreamingOptimizer:
        """Fresh state for ``n_reps`` replications; all noise is drawn from ``rng``."""

    @abstractmethod
    def step(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Consume one sample per replication, ``x`` of shape ``(R, d)`` and ``y`` of
        shape ``(R,)``; return the released iterate, shape ``(R, d)``."""


@dataclass
class BatchResult:
    """Outcome of ``BatchOptimizer.fit``.

    Parameters
    ----------
    theta : (R, d) array
        The output of every replication.
    history : (R, n_iterates, d) array
        The iterates (may be thinned: ``history_steps`` says which steps were kept).
    history_steps : (n_iterates,) array
        The step of each kept iterate.
    privacy : PrivacyGuarantee
        The guarantee of the fit.
    n_clipped : (R,) array
        Clipped per-sample gradients or inputs per replication.
    n_gradient_evals : int
        Per-sample gradient evaluations per replication.
    extra : dict, default {}
        Optimizer-specific diagnostics (e.g. ``"iterates"``, ``"history_samples"``).
    """

    theta: np.ndarray
    history: np.ndarray
    history_steps: np.ndarray
    privacy: PrivacyGuarantee
    n_clipped: np.ndarray
    n_gradient_evals: int
    extra: dict = field(default_factory=dict)


class BatchOptimizer(Optimizer):
    """Fits a data set privately: ``fit(loss, X, y, rng) -> BatchResult``.

    ``X`` is ``(n, d)`` (the same data for every replication; give ``n_reps``) or
    ``(R, n, d)`` (one data set per replication); ``y`` is ``(n,)`` or ``(R, n)``.
    """

    @abstractmethod
    def fit(self, loss: LossLike, X: ArrayLike, y: ArrayLike | None,
            rng: np.random.Generator, n_reps: int | None = None) -> BatchResult:
        """Run the algorithm; all randomness from ``rng`` (some methods also take a loss
        name for ``loss``)."""


# --------------------------------------------------------------------------------------------
# Validation shared by every optimizer
# --------------------------------------------------------------------------------------------


def check_privacy_target(epsilon: float, delta: float | None, component: str, *,
                         needs_delta: bool = True) -> tuple[float, float, bool]:
    """``(epsilon, delta, private)``: ``epsilon > 0`` (``inf`` turns the noise off); a private
    run whose noise needs it (Gaussian noise gives no pure epsilon-DP) needs ``0 < delta <
    1``; otherwise ``delta`` may be 0, or None when not private."""
    eps = check_epsilon(epsilon)
    private = math.isfinite(eps)
    if not private and delta is None:
        return eps, 0.0, False
    if private and needs_delta:
        why = f"for a private run of {component} (epsilon={eps})"
        return eps, check_delta_open(delta, why=why), True
    return eps, check_delta(delta), private


#: the range of a scale parameter (clip bound, Lipschitz constant, radius): products and
#: squares of up to three of them in a noise plan stay normal floats, so no noise scale or
#: sensitivity underflows to a subnormal or 0 or overflows to inf (issue 34, item 7)
SCALE_RANGE = (1e-100, 1e100)


def check_scale(name: str, value: float) -> float:
    """A parameter that reaches a noise scale or a sensitivity (a clip bound, a Lipschitz
    constant, a radius): a real number within :data:`SCALE_RANGE`, else ``ValueError`` naming
    it (``TypeError`` for a non-number)."""
    low, high = SCALE_RANGE
    v = check_nonnegative(name, value, allow_inf=True)
    if not low <= v <= high:
        raise ValueError(f"{name} must be between {low:g} and {high:g} (so that the noise "
                         f"plan neither underflows nor overflows; rescale the data), got "
                         f"{value!r}")
    return v


def check_clip(value: float, name: str = "clip_norm") -> float:
    """A clipping bound: :func:`check_scale`."""
    return check_scale(name, value)


# --------------------------------------------------------------------------------------------
# Batch methods whose guarantee depends on the data set's size
# --------------------------------------------------------------------------------------------


class PrivateBatchOptimizer(BatchOptimizer):
    """Per-size noise plans: the noise of these methods depends on the data-set size ``n``
    (sensitivities ``2G/n``, sampling rates ``1/n``) and for some on the dimension ``d``, so
    their calibration is a pure function ``plan_for(n, d) -> NoisePlan``
    (:mod:`dpbandits.privacy.plan`), cached per size. ``privacy_for(n, d)`` and
    ``ledger_for(n, d)`` come from it before fitting, ``plan`` / ``privacy`` / ``ledger``
    for the last ``fit``, and ``fit`` draws its noise from the plan's scales.

    Subclasses implement ``_make_plan_for(n, d)`` (``d`` is None unless ``_plan_uses_d``).
    An audit's broken variant is :meth:`with_plan`: a copy whose plan of every size is a
    changed version of its own (``opt.with_plan(lambda plan: plan.scaled(10))``).
    """

    epsilon: Any
    delta: Any
    #: True when the plan depends on the dimension ``d`` (else it is cached per ``n``)
    _plan_uses_d = False

    def _check_target(self) -> None:
        """Validate ``epsilon``, ``delta`` (and ``noise_std`` if the method has it); sets
        ``_eps``, ``_delta`` and ``_private``."""
        noise_std = getattr(self, "noise_std", None)
        if noise_std is not None:
            check_nonnegative("noise_std", noise_std)
        self._eps, self._delta, self._private = check_privacy_target(
            self.epsilon, self.delta, type(self).__name__,
            needs_delta=noise_std is None)
        self._fitted: tuple[int, int] | None = None

    def _make_plan_for(self, n: int, d: int | None) -> NoisePlan:
        """The noise plan for ``n`` samples (in dimension ``d`` when ``_plan_uses_d``), from
        the validated parameters only."""
        raise NotImplementedError  # pragma: no cover - abstract

    def plan_for(self, n: int, d: int | None = None) -> NoisePlan:
        """The frozen noise plan of a fit on ``n`` samples in dimension ``d``: the noise
        scales ``fit`` draws with, the guarantee and the ledger (computed once per size)."""
        key = (self._check_n(n), d if self._plan_uses_d else None)
        plans = self.__dict__.setdefault("_plans", {})
        plan = plans.get(key)
        if plan is None:
            plan = self._make_plan_for(*key)
            change = self.__dict__.get("_plan_change")
            if change is not None:  # a plan the optimizer did not derive is flagged
                plan = plan.adopt(change(plan), type(self).__name__)
            plans[key] = plan
        return plan

    def privacy_for(self, n: int, d: int | None = None) -> PrivacyGuarantee:
        """Guarantee of a fit on ``n`` samples in dimension ``d`` (its plan's)."""
        return self.plan_for(n, d).guarantee

    def ledger_for(self, n: int, d: int | None = None) -> dp_accounting.DpEvent | None:
        """Ledger of a fit on ``n`` samples in dimension ``d`` (its plan's; None for a plan
        changed by :meth:`with_plan`)."""
        return self.plan_for(n, d).ledger

    def with_plan(self, change: Callable[[NoisePlan], NoisePlan]) -> Self:
        """A copy of this optimizer whose plan for every size is ``change(own plan)`` -- a
        changed version with the same scale names (:meth:`NoisePlan.scaled` /
        :meth:`NoisePlan.replaced`, e.g. ``lambda plan: plan.scaled(10)``): an audit's
        broken variant, whose guarantee says it is not certified. Everything else (step
        sizes, batch sizes) is the optimizer's own. A returned plan the optimizer did not
        derive is flagged (:meth:`NoisePlan.adopt`: not certified, no ledger)."""
        if not callable(change):
            raise TypeError(f"{type(self).__name__}.with_plan: change must be a function "
                            f"NoisePlan -> NoisePlan, got {change!r}")
        twin = copy.deepcopy(self)
        object.__setattr__(twin, "_plans", {})
        object.__setattr__(twin, "_plan_change", change)
        return twin

    @staticmethod
    def _check_n(n) -> int:
        return check_int("n", n, low=2)

    @property
    def private(self) -> bool:
        """False when run without noise (``epsilon = inf`` and no ``noise_std``)."""
        return math.isfinite(self.epsilon) or bool(getattr(self, "noise_std", None))

    def _require_fit(self) -> tuple[int, int]:
        fitted = getattr(self, "_fitted", None)
        if fitted is None:
            raise RuntimeError(
                f"{type(self).__name__}'s guarantee depends on the data-set size n: call fit() "
                "first, or use privacy_for(n, d) / ledger_for(n, d)"
            )
        return fitted

    @property
    def plan(self) -> NoisePlan:
        """The noise plan of the last ``fit``."""
        return self.plan_for(*self._require_fit())

    @property
    def privacy(self) -> PrivacyGuarantee:
        return self.plan.guarantee

    @property
    def ledger(self) -> dp_accounting.DpEvent | None:
        return self.plan.ledger

    def _gradient_clip(self, d: int) -> tuple[float, float]:
        """``(q, G)``: every per-sample gradient is clipped to ``||g||_q <= G`` (subclasses
        whose noise protects a sum of clipped gradients say which)."""
        raise NotImplementedError(f"{type(self).__name__} does not declare its gradient clip")

    def _contributions(self, loss: LossLike, X: np.ndarray, y: np.ndarray,
                       theta: np.ndarray):
        """Each sample's clipped gradient at ``theta`` (d,), noiseless, through the
        :class:`~dpbandits.optim.batch.oracle.GradientOracle` the fits use
        (:mod:`dpbandits.privacy.contributions`): replacing a sample moves a sum of them by
        at most ``2 G`` in ``l_q``, the sensitivity the calibrations use (``2G/n`` for the
        mean)."""
        from dpbandits.optim.batch.data import prepare_data
        from dpbandits.optim.batch.oracle import GradientOracle
        from dpbandits.privacy.contributions import Contribution

        data = prepare_data(X, y, None)
        q, bound = self._gradient_clip(data.d)
        oracle = GradientOracle(resolve_loss(loss), data, bound, q)
        theta = np.broadcast_to(np.asarray(theta, dtype=np.float64), (data.n, data.d))
        g, _ = oracle.at_index(np.ascontiguousarray(theta), np.arange(data.n))
        return [Contribution("gradient", g, 2.0 * bound, q)]

    def _result(self, n: int, d: int, *, theta: np.ndarray, history: np.ndarray,
                history_steps: np.ndarray, n_clipped: np.ndarray, n_gradient_evals: int,
                extra: dict) -> BatchResult:
        """Record the fitted size and return the result with its guarantee."""
        self._fitted = (n, d)
        return BatchResult(theta=theta, history=history, history_steps=history_steps,
                           privacy=self.plan.guarantee, n_clipped=n_clipped,
                           n_gradient_evals=int(n_gradient_evals), extra=extra)


class IterateHistory:
    """Iterates a batch ``fit`` keeps (each ``(R, d)``), with the step (or cost) and the wall
    time since the history was started at which each was recorded."""

    def __init__(self, theta0: np.ndarray) -> None:
        self._iterates = [theta0.copy()]
        self._steps: list[int] = [0]
        self._walls = [0.0]
        self._t0 = time.perf_counter()

    def record(self, theta: np.ndarray, step: int) -> None:
        self._iterates.append(theta.copy())
        self._steps.append(step)
        self._walls.append(elapsed(self._t0))

    def iterates(self) -> np.ndarray:
        """``(R, n_recorded, d)``."""
        return np.stack(self._iterates, axis=1)

    def steps(self) -> np.ndarray:
        return np.asarray(self._steps)

    def wall_times(self) -> np.ndarray:
        return np.asarray(self._walls)


def elapsed(t0: float) -> float:
    """Seconds since ``t0`` (``time.perf_counter``)."""
    return time.perf_counter() - t0

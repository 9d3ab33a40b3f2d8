"""Property-based search for inputs and parameters that break a privacy bound.

:func:`fuzz_adversarial_inputs` extends :func:`dpbandits.testing.check_adversarial_inputs`
(a fixed list of adversarial rows) with a `hypothesis` search over the whole float range of
every argument that reaches a sensitivity:

* the component's **scale parameters** (clip bounds, context / reward / target bounds,
  radii) anywhere from the smallest subnormal to the float maximum. The constructor either
  refuses them with a ``ValueError``/``TypeError`` naming the parameter, or builds a
  component whose certified plan has finite, positive noise scales and sensitivities;
* the **data**: context rows mixing entries from ``5e-324`` to ``1.7e308`` (subnormal,
  underflowing squares, near overflow, signed zeros), rewards and regression targets over the
  same range. Every user's noiseless contribution (the ``_contributions`` hook, which for
  compiled components runs the compiled clipping) must stay within the declared
  sensitivity, measured **exactly** (rational arithmetic) for ``l_1``, ``l_2`` and ``l_inf``;
  a fit may not raise on one user's finite record except as a clear refusal;
* for the Bayesian-optimization methods, one individual's loss anywhere in the finite range:
  ``fit`` must run to the end with a finite result (an exception that depends on one
  individual's data is an output of unbounded epsilon).

The search is derandomized, but hypothesis also mixes in constants it collects from the
project's modules loaded at the time, so the examples tried depend on which modules are
loaded. Each search first loads every module of the package (:func:`_load_package`), which
leaves only the caller's own modules (the test files) to vary; every case a search has found
is kept in its corpus of explicit examples, tried first whatever the order. It needs the
``hypothesis`` package (the ``test`` extra); it runs in the test suite's heavy tier on every
registered private component.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpbandits.agents.base import Agent
from dpbandits.losses import SquaredLoss
from dpbandits.optim.base import BatchOptimizer, StreamingOptimizer
from dpbandits.testing import (
    ContractError,
    _adversarial_agent,
    _adversarial_batch,
    _adversarial_streaming,
    _Case,
    _is_private,
    adversarial_rows,
    problem_for_checks,
)

__all__ = ["ESTIMATOR_PARAMETERS", "SCALE_PARAMETERS", "fuzz_adversarial_inputs", "fuzz_bo_method",
           "fuzz_private_estimator"]

#: constructor parameters that reach a sensitivity (searched when a component has them)
SCALE_PARAMETERS = ("context_bound", "reward_bound", "x_bound", "y_bound", "theta_bound",
                    "clip_norm", "clip_bound", "lipschitz", "radius", "clip_fit",
                    "clip_screen")
#: relative slack of the exact comparison with a declared sensitivity
EXACT_RTOL = 1e-12
_MAX = 1.7976931348623157e308
_EXTREME_POSITIVE = (5e-324, 1e-310, 2.0**-1022, 3e-162, 1.55e-162, 1e-200, 2.0**-800,
                     2.0**-51, 1e-5, 1.0, 7.0, 1e100, 1e160, 1e200, 1e300, _MAX)
_SPECIAL = (0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 2.0**-537, 1.0, -1.0, 1.9 * 2.0**1023,
            -1.9 * 2.0**1023, 4.25e307, _MAX, -_MAX)


def _load_package() -> None:
    """Import every module of ``dpbandits`` (those whose optional dependencies are missing
    excepted), so that hypothesis's constants from loaded modules do not depend on what
    other code imported before the search."""
    import importlib
    import pkgutil

    import dpbandits

    for info in pkgutil.walk_packages(dpbandits.__path__, "dpbandits."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # pragma: no cover - an optional extra not installed
            pass


def _strategies():
    _load_package()
    try:
        from hypothesis import strategies as st
    except ImportError:  # pragma: no cover - the test extra
        raise ImportError("fuzz_adversarial_inputs needs hypothesis: pip install "
                          "'dpbandits[test]'") from None
    finite = st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(min_value=-1e-300, max_value=1e-300),  # squares underflow
        st.floats(min_value=1e300, max_value=_MAX),  # squares overflow
        st.floats(min_value=-_MAX, max_value=-1e300),
        st.sampled_from(_SPECIAL),
    )
    # log-uniform over every binade, so that tiny and huge bounds are as likely as ordinary
    log_uniform = st.builds(lambda e, m: m * 2.0**e, st.integers(-1074, 1023),
                            st.floats(min_value=1.0, max_value=1.9999999999999998))
    positive = st.one_of(st.sampled_from(_EXTREME_POSITIVE), log_uniform)
    return st, finite, positive


_RADII = ("radius", "theta_bound")


def _corpus(names: list[str], d: int) -> list[dict]:
    """Examples tried first, whatever the search draws: the corners the reviews of issue 34
    reached (a tiny bound against a residual near the float maximum; bounds whose squares
    are subnormal; tiny data bounds against a huge radius; huge bounds)."""
    e1 = [[1.0] + [0.0] * (d - 1)]
    huge = [1.9 * 2.0**1023, -1.9 * 2.0**1023]
    out = []
    if names:
        out.append(dict(changes={n: (2.0**-51 if i == 0 else None)
                                 for i, n in enumerate(names)}, rows=e1, rewards=huge))
        for small in (3e-162, 1.55e-162):
            out.append(dict(changes={n: small for n in names}, rows=e1, rewards=huge))
        # one bound at the smallest subnormal, the others as built, against a row clipped to
        # unit entries 1/sqrt 2: a product such as y u then rounds up by as much as 2x
        diagonal = [[0.0] * (d - 2) + [1e300, 1e300]] if d >= 2 else e1
        for n in names:
            out.append(dict(changes={m: (5e-324 if m == n else None) for m in names},
                            rows=diagonal, rewards=[1.0, -1.0]))
        out.append(dict(changes={n: (1e200 if n in _RADII else 1e-200) for n in names},
                        rows=e1, rewards=[1.0, -1.0]))
        out.append(dict(changes={n: 1e160 for n in names},
                        rows=[[1e160] * d, [-1e160] + [0.0] * (d - 1)], rewards=huge))
    out.append(dict(changes={n: None for n in names}, rows=e1, rewards=huge))
    return out


def _exact_norm(v: list[Fraction], q: float) -> Fraction | float:
    if math.isinf(q):
        return max((abs(x) for x in v), default=Fraction(0))
    if q == 1.0:
        return sum((abs(x) for x in v), Fraction(0))
    if q == 2.0:
        return sum((x * x for x in v), Fraction(0))  # squared: compared with s^2
    return float(np.sum(np.abs(np.array([float(x) for x in v])) ** q) ** (1.0 / q))


def _exact_check(component, contribution) -> None:
    """Every pair of users (or every user, for a declared norm bound) within the declared
    sensitivity, in exact rational arithmetic for ``l_1``, ``l_2`` and ``l_inf``."""
    values = np.unique(np.asarray(contribution.values, dtype=np.float64), axis=0)
    if not np.all(np.isfinite(values)):
        raise ContractError(f"{type(component).__name__}: release {contribution.release!r}: "
                            "a user's contribution is not finite")
    q, s = float(contribution.ord), float(contribution.sensitivity)
    limit: Fraction | float = Fraction(s) * Fraction(1.0 + EXACT_RTOL)
    if q == 2.0:
        limit = limit * limit
    rows = [[Fraction(float(x)) for x in row] for row in values]
    pairs = ([(r, [Fraction(0)] * len(r)) for r in rows] if contribution.bound == "norm" else
             [(rows[i], rows[j]) for i in range(len(rows)) for j in range(i)])
    for a, b in pairs:
        size = _exact_norm([x - y for x, y in zip(a, b, strict=True)], q)
        if size > limit:
            shown = math.sqrt(float(size)) if q == 2.0 else float(size)
            raise ContractError(
                f"{type(component).__name__}: release {contribution.release!r}: users "
                f"{[float(x) for x in a]} and {[float(x) for x in b]} differ by "
                f"{shown!r} in l_{q:g} (exactly), above the declared sensitivity {s!r} "
                f"({shown / s if s else math.inf:.4g} times)")


def _exactly_checked(component):
    """A copy of ``component`` whose ``_contributions`` hook also checks exactly."""
    checked = copy.deepcopy(component)
    inner = checked._contributions

    def hook(*args):
        out = inner(*args)
        for c in out:
            _exact_check(checked, c)
        return out

    object.__setattr__(checked, "_contributions", hook)
    return checked


def _rebuilt(component, changed: dict[str, float]):
    """The component with ``changed`` constructor parameters, or None when the constructor
    refuses them clearly (a ValueError/TypeError naming one of them)."""
    try:
        if hasattr(component, "clone"):
            return component.clone(**changed)
        return type(component)(**{**component.get_params(), **changed})
    except (ValueError, TypeError) as exc:
        if any(name in str(exc) for name in changed):
            return None
        raise ContractError(f"{type(component).__name__}({changed}) raised "
                            f"{type(exc).__name__}: {exc} — a refusal must name the "
                            "parameter") from exc
    except ArithmeticError as exc:
        raise ContractError(f"{type(component).__name__}({changed}) raised "
                            f"{type(exc).__name__}: {exc} — refuse such parameters with a "
                            "ValueError naming them, or compute the plan without "
                            "overflow") from exc


def _plan_of(component, problem) -> Any:
    if isinstance(component, BatchOptimizer):
        _, X, _ = problem
        try:
            return component.plan_for(np.shape(X)[-2], np.shape(X)[-1])
        except RuntimeError:  # the plan waits for the loss (e.g. its smoothness): fit first
            return None
    return getattr(component, "plan", None)


def _check_plan(component, problem) -> None:
    """A certified plan has finite, positive noise scales and sensitivities (no quantity
    underflowed to 0 or overflowed)."""
    plan = _plan_of(component, problem)
    if plan is None or not plan.guarantee.certified or not math.isfinite(plan.guarantee.epsilon):
        return
    for kind, scales in (("noise scale", plan.scales), ("sensitivity", plan.sensitivities)):
        for name, value in scales.items():
            if not (math.isfinite(value) and value > 0.0):
                raise ContractError(
                    f"{type(component).__name__}: its certified plan has {kind} {name!r} = "
                    f"{value!r}: a guarantee resting on a zero or non-finite {kind} must not "
                    "be certified (refuse the parameters instead)")


def _dim(component) -> int:
    if isinstance(component, Agent):
        return int(component.dim)
    return int(component.get_params().get("dim", 5) or 5)


def _run_data(component, rows: np.ndarray, rewards: tuple[float, ...], seed: int) -> None:
    d = _dim(component)
    kinds = {f"fuzzed row {i}": np.asarray(r, dtype=np.float64) for i, r in enumerate(rows)}
    kinds["ordinary"] = adversarial_rows(d)["ordinary"]
    rewards = tuple(dict.fromkeys(rewards + (1.0, -1.0)))  # keep the ordinary ones too
    checked = _exactly_checked(component)
    if isinstance(component, Agent):
        _adversarial_agent(checked, seed, kinds, rewards)
    elif isinstance(component, StreamingOptimizer):
        case = _Case(seed=seed, problem=problem_for_checks(component, n_reps=1))
        _adversarial_streaming(checked, case, kinds, rewards)
    else:
        problems = [problem_for_checks(component, n_reps=1)]
        if not isinstance(problems[0][0], SquaredLoss):  # a target reaches psi = z - y
            try:
                problems.append(problem_for_checks(component, n_reps=1, kind="squared"))
            except ValueError:  # pragma: no cover - every batch method takes the squared loss
                pass
        for problem in problems:
            _adversarial_batch(checked, _Case(seed=seed, problem=problem), kinds, rewards)


def fuzz_adversarial_inputs(component: Agent | StreamingOptimizer | BatchOptimizer, *,
                            max_examples: int = 30, seed: int = 0,
                            parameters: bool = True) -> None:
    """Search scale parameters (when ``parameters``) and data over the whole float range
    for a broken privacy bound of the private ``component`` (module docstring); raises
    ``ContractError`` with the smallest example found. ``max_examples`` examples of
    parameters + 1-3 context rows + 2-4 rewards or targets each."""
    from hypothesis import HealthCheck, example, given, settings

    st, finite, positive = _strategies()
    if not _is_private(component):
        raise ValueError(f"{type(component).__name__} is not private: nothing to fuzz")
    d = _dim(component)
    names = [n for n in SCALE_PARAMETERS if n in component.get_params()
             and (component.get_params()[n] is None
                  or isinstance(component.get_params()[n], int | float))] if parameters else []
    keep = st.just(None)
    changes = st.fixed_dictionaries({n: st.one_of(keep, keep, positive) for n in names})
    rows = st.lists(st.lists(finite, min_size=d, max_size=d), min_size=1, max_size=3)
    rewards = st.lists(finite, min_size=2, max_size=4)

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    @given(changes=changes, rows=rows, rewards=rewards)
    def search(changes, rows, rewards):
        changed = {k: v for k, v in changes.items() if v is not None}
        built = _rebuilt(component, changed) if changed else copy.deepcopy(component)
        if built is None:
            return
        problem = None
        if isinstance(built, BatchOptimizer):
            problem = problem_for_checks(built, n_reps=1)
        _check_plan(built, problem)
        _run_data(built, np.array(rows, dtype=np.float64), tuple(rewards), seed)

    for case in _corpus(names, d):
        search = example(**case)(search)
    search()


def fuzz_bo_method(method: Any, *, max_examples: int = 30, seed: int = 0) -> None:
    """One individual's loss anywhere in the finite float range (the others ordinary):
    ``method.fit`` runs to the end with a finite result, as it does on the neighbouring
    data; raises ``ContractError`` otherwise."""
    from hypothesis import HealthCheck, given, settings

    from dpbandits.bo.objectives import CallableObjective

    st, finite, _ = _strategies()
    dim, n = 2, 8

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    @given(value=finite, slope=finite)
    def search(value, slope):
        def losses(theta):  # one point (dim,) -> the n individuals' losses (n,)
            theta = np.asarray(theta, dtype=np.float64)
            base = 0.5 * np.sum((theta[None, :] - np.linspace(-1, 1, n)[:, None]) ** 2,
                                axis=-1)
            with np.errstate(over="ignore", invalid="ignore"):
                odd = value + slope * np.tanh(theta[0])  # one individual, anywhere finite
            base[0] = odd if np.isfinite(odd) else value
            return base

        objective = CallableObjective(losses, dim=dim, n_individuals=n)
        try:
            result = copy.deepcopy(method).fit(objective, np.random.default_rng(seed))
        except Exception as exc:
            raise ContractError(
                f"{type(method).__name__}.fit raised {type(exc).__name__}: {exc} when one "
                f"individual's loss is {value!r} + {slope!r} tanh(theta_0): an exception "
                "that depends on one individual's data is an output with unbounded "
                "epsilon; clip or bound before any operation that can overflow") from exc
        theta = getattr(result, "theta", None)
        if theta is not None and not np.all(np.isfinite(theta)):
            raise ContractError(f"{type(method).__name__}.fit returned a non-finite theta "
                                f"when one individual's loss is {value!r}")

    search()


#: the estimator's public parameters that reach its sensitivity (searched when not None)
ESTIMATOR_PARAMETERS = ("max_weight", "reward_range", "context_bound")


def _exact_l2(a: np.ndarray, b: np.ndarray) -> Fraction:
    """``||a - b||_2^2`` of two float arrays, exactly."""
    return sum(((Fraction(float(x)) - Fraction(float(y))) ** 2
                for x, y in zip(np.ravel(a), np.ravel(b), strict=True)), Fraction(0))


def _check_move(estimator, what: str, a: np.ndarray, b: np.ndarray, bound: float) -> None:
    limit = Fraction(bound) * Fraction(1.0 + EXACT_RTOL)
    size = _exact_l2(a, b)
    if size > limit * limit:
        shown = math.sqrt(float(size))
        raise ContractError(f"{estimator!r}: one replaced round moved {what} by {shown!r} "
                            f"(exactly), above its sensitivity {bound!r} "
                            f"({shown / bound:.4g} times)")


def _replaced_logs(rounds: list, K: int):
    """The log of ``rounds[:-1]`` and the one with its first round replaced by the last."""
    from dpbandits.envs.logged import LoggedBandit

    out = []
    for first in (rounds[0], rounds[-1]):
        rows = [first] + rounds[1:-1]
        log = LoggedBandit(np.array([r[0] for r in rows], dtype=np.float64),
                           [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows], K)
        pi = np.array([r[4] for r in rows], dtype=np.float64)
        q = np.array([r[5] for r in rows], dtype=np.float64)
        out.append((log, pi, q))
    return out


def fuzz_private_estimator(estimator: Any, *, max_examples: int = 30) -> None:
    """Search a :class:`~dpbandits.offpolicy.PrivateEstimator`'s parameters
    (:data:`ESTIMATOR_PARAMETERS`, over the whole float range) and pairs of logs differing in
    one round (contexts, rewards and predictions anywhere in the finite range, propensities
    down to the smallest subnormal) for a noiseless query that one replaced round moves
    beyond ``sensitivity(n)`` (measured exactly), or, for private DR, reward-model sums
    that move beyond their sensitivities; raises ``ContractError`` with the example. The
    constructor may refuse parameters with a ``ValueError`` naming them."""
    from hypothesis import HealthCheck, example, given, settings

    st, finite, positive = _strategies()
    K, d = 2, 2
    params = estimator.get_params()
    pair = st.lists(finite, min_size=2, max_size=2).map(sorted).map(tuple)
    choices = {"max_weight": positive, "reward_range": pair, "context_bound": positive}
    changes = st.fixed_dictionaries({n: st.one_of(st.just(None), choices[n])
                                     for n in ESTIMATOR_PARAMETERS})
    propensity = st.one_of(st.sampled_from((5e-324, 1e-310, 2.0**-1022, 1e-3, 0.5, 1.0)),
                           st.floats(min_value=5e-324, max_value=1.0))
    share = st.one_of(st.sampled_from((0.0, 1.0, 0.5)), st.floats(0.0, 1.0))
    one_round = st.tuples(st.lists(finite, min_size=d, max_size=d), st.integers(0, K - 1),
                          finite, propensity, share.map(lambda a: [a, 1.0 - a]),
                          st.lists(finite, min_size=K, max_size=K))
    rounds = st.lists(one_round, min_size=2, max_size=7)

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
    @given(changes=changes, rounds=rounds)
    def search(changes, rounds):
        changed = {k: v for k, v in changes.items() if v is not None}
        if "context_bound" in changed and params.get("estimator") != "dr":
            changed.pop("context_bound")
        try:
            built = estimator.clone(**changed) if changed else estimator
        except ValueError as exc:
            if any(name in str(exc) for name in changed):
                return  # a clear refusal
            raise ContractError(f"PrivateEstimator({changed}) raised ValueError: {exc} — a "
                                "refusal must name the parameter") from exc
        (log0, pi0, q0), (log1, pi1, q1) = _replaced_logs(rounds, K)
        n = log0.n_rounds
        preds = (q0, q1) if built.estimator == "dr" else (None, None)
        s0 = built.statistic(log0, pi0, preds[0])[0]
        s1 = built.statistic(log1, pi1, preds[1])[0]
        _check_move(built.estimator, "the query", s0, s1, built.sensitivity(n))
        if built.model_multiplier is not None:
            (g0, b0), (g1, b1) = built.model_sums(log0), built.model_sums(log1)
            sens = built.plan.sensitivities
            _check_move("dr", "the reward model's Gram sums", g0, g1, sens["model_gram"])
            _check_move("dr", "the reward model's target sums", b0, b1, sens["model_target"])

    # rewards far from 0 relative to their range: one round's reward moves the float sum of
    # the DR terms by an ulp of n lo, 2x the range-based Delta (the first order of rewards for
    # a sequential sum as numpy's mean of 6 terms, the second for a correctly rounded one)
    lo, hi = 1e20, 1e20 + 2.0**14
    for order in ((lo, hi, hi, lo, lo, hi, hi), (lo, lo, hi, hi, hi, hi, hi)):
        far = [([0.0, 0.0], 0, r, 1.0, [1.0, 0.0], [lo, lo]) for r in order]
        search = example(changes={"max_weight": 1.0, "reward_range": (lo, hi),
                                  "context_bound": None}, rounds=far)(search)
    search()

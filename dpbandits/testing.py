"""Contract checks for agents, optimizers and environments — run them on your own components.

Like Gymnasium's ``check_env`` and scikit-learn's ``check_estimator``: each function runs a
component through the rules every registered component of dpbandits obeys and raises
``ContractError`` naming the first rule it breaks::

    from dpbandits.testing import check_agent
    check_agent(MyAgent(n_arms=2, dim=5, horizon=200))

The rules are **named checks** (:data:`CHECKS`, each a function ``check_<rule>``), run one by
one: :func:`agent_checks`, :func:`optimizer_checks` and :func:`env_checks` yield
``(name, run)`` pairs for one component, and :func:`parametrize_with_checks` turns a list of
components into one pytest case per (component, check), like scikit-learn's decorator of
the same name::

    @parametrize_with_checks([MyAgent(n_arms=2, dim=5, horizon=200)])
    def test_contract(component, check):
        check(component)

A component class declares its own test setup (read by :func:`instance_for_checks` and
:func:`parametrize_with_checks`): ``_test_params`` (small constructor arguments: sizes,
horizons, privacy targets), for an optimizer ``_test_problem`` (``"stream"``, ``"squared"``,
``"logistic"`` or ``"absolute"``: the problem it is checked on), and ``_xfail_checks``
(check name -> the reason it is expected to fail; the pytest case is then a strict xfail).

The rules: shapes and dtypes over R replications; the same seed gives identical results and
``reset`` starts afresh; a private component's noise depends on the seed; ``get_params`` →
``clone`` behaves the same; parameters are read-only after construction; bad input raises one
clear error naming the component and the argument; a private component states its notion
and basis, and the epsilon ``dp_accounting`` recomputes from its ledger is at most the claim;
an agent's ``fit``/``partial_fit``/``predict`` on one logged stream are ``reset``/``update``/
``act`` (and ``predict`` leaves the agent unchanged, rows beyond the horizon are refused);
and a private component fed adversarial floats (rows whose squares underflow, entries near
overflow, 1e-300 next to 1e300, single subnormals, zero rows, signed zeros) either refuses
them with an error naming the argument or keeps every user's contribution within the
sensitivity its analysis declares (:func:`check_adversarial_inputs`, measured on the
noiseless per-user terms of the hook documented in :mod:`dpbandits.privacy.contributions`).
"""

from __future__ import annotations

import copy
import functools
import math
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits.agents.base import Agent
from dpbandits.losses import LossLike
from dpbandits.optim.base import BatchOptimizer, Optimizer, StreamingOptimizer
from dpbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["CHECKS", "ContractError", "adversarial_rows", "agent_checks",
           "check_adversarial_inputs", "check_agent", "check_claims", "check_env",
           "check_fit_predict", "check_optimizer", "env_checks", "instance_for_checks",
           "optimizer_checks", "parametrize_with_checks"]

NOTIONS = ("DP", "JDP", "LDP", "GDP", "RDP", "none")
#: relative slack of "certified epsilon <= claimed epsilon" (PLD discretization)
CERTIFY_RTOL = 1e-6


class ContractError(AssertionError):
    """A component breaks one of the contract's rules; the message says which."""


def _require(condition: bool, component, rule: str) -> None:
    if not condition:
        raise ContractError(f"{type(component).__name__}: {rule}")


def _expect_error(component, call: Callable[[], object], errors, words: list[str],
                  rule: str) -> None:
    try:
        call()
    except errors as exc:
        text = str(exc)
        missing = [w for w in words if w not in text]
        _require(not missing, component, f"{rule}: the error {text!r} should name {missing}")
        return
    raise ContractError(f"{type(component).__name__}: {rule}: no error raised")


# -- privacy ---------------------------------------------------------------------------------
def check_privacy(component: Agent | Optimizer) -> None:
    """The guarantee names its notion and basis, and a ledger certifies the claim."""
    from dpbandits.privacy.accounting.certification import certified_guarantee

    privacy = component.privacy
    if privacy is None:
        return
    _require(isinstance(privacy, PrivacyGuarantee), component,
             f"privacy must be a PrivacyGuarantee or None, got {type(privacy).__name__}")
    _require(privacy.notion in NOTIONS, component,
             f"privacy.notion must be one of {NOTIONS}, got {privacy.notion!r}")
    _require(bool(privacy.basis.strip()), component, "privacy.basis must name the theorem or "
             "accountant the guarantee rests on")
    if not math.isfinite(privacy.epsilon) or not privacy.certified:
        return
    cert = certified_guarantee(component)
    if cert is None:
        return  # no ledger (a closed-form theorem): nothing to recompute
    eps = cert["epsilon"]
    _require(eps is not None, component,
             f"its ledger cannot be recomputed ({cert['basis']}): a certified claim must rest "
             "on a ledger the accountant certifies")
    _require(isinstance(eps, float) and not math.isnan(eps) and eps >= 0.0, component,
             f"the ledger's certified epsilon is {eps!r}: it must be a number >= 0")
    _require(eps <= privacy.epsilon * (1 + CERTIFY_RTOL), component,
             f"the ledger certifies epsilon={eps:.6g} at delta={privacy.delta:g}, "
             f"above the claimed epsilon={privacy.epsilon:.6g}")


def _is_private(component) -> bool:
    try:
        privacy = component.privacy
    except RuntimeError:  # a batch optimizer's guarantee waits for its data-set size (fit)
        return bool(getattr(component, "private", True))
    return privacy is not None and math.isfinite(privacy.epsilon) and privacy.notion != "none"


def _check_frozen(component) -> None:
    for key in component._init_param_names():
        if not hasattr(component, key):
            continue
        try:
            setattr(component, key, getattr(component, key))
        except AttributeError:
            continue
        raise ContractError(f"{type(component).__name__}: parameter {key!r} can be assigned "
                            "after construction (noise calibrated from it would go stale)")


def _check_clone(component, run: Callable, reference) -> None:
    _require(component.get_params().keys() == set(component._init_param_names()) & set(
        vars(component)), component, "get_params must return the constructor's arguments")
    twin = type(component)(**component.get_params())
    _require(_same(run(twin), reference), component,
             "a clone built from get_params() must behave identically for the same seed")


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# -- named checks ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """A named rule ``func(component, case)`` for components of the given ``kinds``
    (``"agent"``, ``"optimizer"``, ``"env"``); ``private``: only for components with a
    finite privacy claim."""

    name: str
    kinds: tuple[str, ...]
    func: Callable[..., None]
    private: bool = False


#: every named check, by name, in the order the composite functions run them
CHECKS: dict[str, Check] = {}


def _check(*kinds: str, private: bool = False):
    def deco(func):
        CHECKS[func.__name__] = Check(func.__name__, kinds, func, private)
        return func

    return deco


@dataclass(frozen=True)
class _Case:
    """The settings one check runs with."""

    n_reps: int = 3
    seed: int = 0
    problem: Any = None
    n_steps: int = 20
    env_params: dict | None = None
    n_queries: int = 20


def _kind(component) -> str:
    if isinstance(component, Agent):
        return "agent"
    if isinstance(component, StreamingOptimizer | BatchOptimizer):
        return "optimizer"
    if isinstance(component, str):
        return "env"
    raise TypeError(f"expected an Agent, a StreamingOptimizer or BatchOptimizer instance, or "
                    f"an environment id, got {type(component).__name__}")


def _run_check(check: Check, component, case: _Case) -> None:
    """Run one check on a copy of ``component``; for agents and optimizers an error the
    component raises where the contract expects none is reported as a ContractError."""
    if check.kinds == ("env",):
        check.func(component, case)
        return
    subject = copy.deepcopy(component)
    try:
        check.func(subject, case)
    except ContractError:
        raise
    except Exception as exc:  # noqa: BLE001 - the component broke the contract: say so
        raise ContractError(f"{type(component).__name__}: raised {type(exc).__name__} where "
                            f"the contract expects none ({check.name}): {exc}") from exc


def _named_checks(component, case: _Case) -> Iterator[tuple[str, Callable[[Any], None]]]:
    kind = _kind(component)
    private = kind != "env" and _is_private(component)
    for check in CHECKS.values():
        if kind in check.kinds and (private or not check.private):
            yield check.name, functools.partial(_run_check, check, case=case)


def agent_checks(agent: Agent, *, n_reps: int = 3, seed: int = 0
                 ) -> Iterator[tuple[str, Callable[[Agent], None]]]:
    """``(name, run)`` for every check that applies to ``agent``: ``run(agent)`` runs that
    check on a copy of it and raises ``ContractError``."""
    if not isinstance(agent, Agent):
        raise TypeError(f"agent_checks needs an Agent subclass instance, got "
                        f"{type(agent).__name__}")
    return _named_checks(agent, _Case(n_reps=n_reps, seed=seed))


def optimizer_checks(optimizer: Optimizer, problem: Any = None, *, n_reps: int = 3, seed: int = 0
                     ) -> Iterator[tuple[str, Callable[[Optimizer], None]]]:
    """``(name, run)`` for every check that applies to ``optimizer`` on ``problem`` (see
    :func:`check_optimizer`; default: :func:`problem_for_checks`, the problem its class
    declares in ``_test_problem``)."""
    if not isinstance(optimizer, StreamingOptimizer | BatchOptimizer):
        raise TypeError(f"check_optimizer needs a StreamingOptimizer or BatchOptimizer, got "
                        f"{type(optimizer).__name__}")
    if problem is None:
        problem = problem_for_checks(optimizer, n_reps=n_reps)
    return _named_checks(optimizer, _Case(n_reps=n_reps, seed=seed, problem=problem))


def env_checks(env_id: str, *, n_reps: int = 3, seed: int = 0, n_steps: int = 20,
               env_params: dict | None = None) -> Iterator[tuple[str, Callable[[str], None]]]:
    """``(name, run)`` for every check of a registered environment id."""
    return _named_checks(env_id, _Case(n_reps=n_reps, seed=seed, n_steps=n_steps,
                                       env_params=env_params))


#: the sizes every agent is checked at unless its class's ``_test_params`` say otherwise
AGENT_TEST_PARAMS = {"n_arms": 2, "dim": 5, "horizon": 300}


def instance_for_checks(cls: type) -> Agent | Optimizer:
    """An instance of an agent or optimizer class built from its ``_test_params`` (agents:
    on top of :data:`AGENT_TEST_PARAMS`)."""
    params = dict(getattr(cls, "_test_params", {}))
    if issubclass(cls, Agent):
        params = {**AGENT_TEST_PARAMS, **params}
    return cls(**params)


def _xfail_reason(component, name: str) -> str | None:
    if isinstance(component, str):
        return None
    return dict(getattr(type(component), "_xfail_checks", {})).get(name)


def _label(component) -> str:
    if isinstance(component, str):
        return component
    return getattr(component, "name", "") or type(component).__name__


def parametrize_with_checks(components: Iterable, *, n_reps: int = 3, seed: int = 0
                            ) -> Any:
    """A ``pytest.mark.parametrize("component, check", ...)`` with one case per (component,
    check), id ``"<name>-<check>"``: agents and optimizers (instances) and environment ids.
    A check named in the class's ``_xfail_checks`` is a strict xfail with its reason."""
    import pytest

    params = []
    for component in components:
        label = _label(component)
        kind = _kind(component)
        if kind == "agent":
            checks = agent_checks(component, n_reps=n_reps, seed=seed)
        elif kind == "optimizer":
            checks = optimizer_checks(component, n_reps=n_reps, seed=seed)
        else:
            checks = env_checks(component, n_reps=n_reps, seed=seed)
        for name, run in checks:
            reason = _xfail_reason(component, name)
            marks = ([pytest.mark.xfail(strict=True, raises=ContractError, reason=reason)]
                     if reason else [])
            params.append(pytest.param(component, run, id=f"{label}-{name}", marks=marks))
    return pytest.mark.parametrize("component, check", params)


# -- agents ----------------------------------------------------------------------------------
def _agent_stream(agent: Agent, n_reps: int, seed: int):
    """Contexts in [-1, 1]^d and rewards in [0, 1], one array per round (fixed by ``seed``)."""
    rng = np.random.default_rng([seed, 7])
    contexts = rng.uniform(-1.0, 1.0, size=(agent.horizon, n_reps, agent.dim))
    rewards = rng.uniform(0.0, 1.0, size=(agent.horizon, n_reps, agent.n_arms))
    return contexts, rewards


def _play(agent: Agent, n_reps: int, seed: int, stream) -> tuple[np.ndarray]:
    contexts, rewards = stream
    agent.reset(n_reps, np.random.default_rng(seed))
    arms = np.empty((agent.horizon, n_reps), dtype=np.int64)
    rows = np.arange(n_reps)
    for t in range(agent.horizon):
        a = np.asarray(agent.act(contexts[t]))
        _require(a.shape == (n_reps,) and a.dtype.kind in "iu", agent,
                 f"act must return integer arms of shape ({n_reps},), got {a.shape} {a.dtype}")
        _require(bool(((a >= 0) & (a < agent.n_arms)).all()), agent,
                 f"act returned arms outside [0, {agent.n_arms - 1}]")
        agent.update(contexts[t], a, rewards[t][rows, a])
        arms[t] = a
    return (arms,)


def check_agent(agent: Agent, *, n_reps: int = 3, seed: int = 0) -> None:
    """Run ``agent`` (an unreset ``Agent``, small ``horizon`` recommended) through every
    named agent check (:func:`agent_checks`) on a fixed stream of contexts and rewards;
    raises ``ContractError`` (an error the agent raises where the contract expects none is
    reported as one, naming it)."""
    for _, run in agent_checks(agent, n_reps=n_reps, seed=seed):
        run(agent)


@_check("agent")
def check_act_before_reset(agent: Agent, case: _Case) -> None:
    """``act`` before ``reset`` asks for ``reset``."""
    _expect_error(agent, lambda: agent.clone().act(np.zeros((case.n_reps, agent.dim))),
                  RuntimeError, ["reset"], "act before reset must ask for reset")


@_check("agent")
def check_agent_reproducible(agent: Agent, case: _Case) -> None:
    """Arms of the right shape and range; the same seed reproduces the run after ``reset``."""
    stream = _agent_stream(agent, case.n_reps, case.seed)
    first = _play(agent, case.n_reps, case.seed, stream)
    _require(_same(_play(agent, case.n_reps, case.seed, stream), first), agent,
             "reset with the same seed must reproduce the run exactly (state left over?)")


@_check("agent", private=True)
def check_agent_noise_depends_on_seed(agent: Agent, case: _Case) -> None:
    """A private agent's arms depend on the seed given to ``reset``."""
    stream = _agent_stream(agent, case.n_reps, case.seed)
    first = _play(agent, case.n_reps, case.seed, stream)
    _require(not _same(_play(agent, case.n_reps, case.seed + 1, stream), first), agent,
             "a private agent's arms must depend on its seed (is the noise drawn from "
             "the rng given to reset?)")


@_check("agent")
def check_agent_clone(agent: Agent, case: _Case) -> None:
    """``get_params`` returns the constructor's arguments; a clone behaves identically."""
    stream = _agent_stream(agent, case.n_reps, case.seed)
    first = _play(agent, case.n_reps, case.seed, stream)
    _check_clone(agent, lambda a: _play(a, case.n_reps, case.seed, stream), first)


@_check("agent", "optimizer")
def check_params_frozen(component: Agent | Optimizer, case: _Case) -> None:
    """Constructor parameters cannot be assigned after construction."""
    _check_frozen(component)


@_check("agent")
def check_context_shape_error(agent: Agent, case: _Case) -> None:
    """Contexts of the wrong shape raise an error naming the agent and ``contexts``."""
    agent.reset(case.n_reps, np.random.default_rng(case.seed))
    _expect_error(agent, lambda: agent.act(np.zeros((case.n_reps, agent.dim + 1))),
                  (ValueError, TypeError), [type(agent).__name__, "contexts"],
                  "wrong context shape")


@_check("agent")
def check_nan_contexts_error(agent: Agent, case: _Case) -> None:
    """NaN contexts raise an error naming the agent, ``contexts`` and ``finite``."""
    agent.reset(case.n_reps, np.random.default_rng(case.seed))
    _expect_error(agent, lambda: agent.act(np.full((case.n_reps, agent.dim), np.nan)),
                  (ValueError, TypeError), [type(agent).__name__, "contexts", "finite"],
                  "NaN contexts")


@_check("agent")
def check_arm_range_error(agent: Agent, case: _Case) -> None:
    """An arm out of range in ``update`` raises an error naming the agent and ``arms``."""
    n = case.n_reps
    agent.reset(n, np.random.default_rng(case.seed))
    _expect_error(agent, lambda: agent.update(
        np.zeros((n, agent.dim)), np.full(n, agent.n_arms), np.zeros(n)),
        ValueError, [type(agent).__name__, "arms"], "arm out of range")


def _state(agent: Agent) -> bytes | None:
    """The agent's full state as bytes (None when it cannot be pickled)."""
    try:
        return pickle.dumps(agent)
    except (TypeError, AttributeError, pickle.PicklingError):
        return None


@dataclass(frozen=True)
class _Log:
    """One logged stream the agent itself could write, query rows, and the arms the
    reference (``reset(1, rng)``, one ``update`` per row, ``act`` per query) chooses."""

    x: np.ndarray
    a: np.ndarray
    r: np.ndarray
    queries: np.ndarray
    expected: np.ndarray


def _logged(agent: Agent, seed: int, n_queries: int) -> _Log:
    T = agent.horizon
    stream = _agent_stream(agent, 1, seed)
    (logged,) = _play(agent.clone(), 1, seed, stream)
    x, a = stream[0][:, 0], logged[:, 0]
    r = stream[1][np.arange(T), 0, a]
    queries = np.random.default_rng([seed, 11]).uniform(-1.0, 1.0, (n_queries, agent.dim))
    ref = agent.clone()
    ref.reset(1, np.random.default_rng(seed + 5))
    for t in range(T):
        ref.update(x[t:t + 1], a[t:t + 1], r[t:t + 1])
    expected = np.array([ref.act(q[None])[0] for q in queries])
    return _Log(x, a, r, queries, expected)


def check_fit_predict(agent: Agent, *, seed: int = 0, n_queries: int = 20) -> None:
    """``fit``, ``partial_fit`` and ``predict`` on one logged stream (R = 1): the named
    checks ``check_fit_then_predict``, ``check_predict_leaves_agent_unchanged``,
    ``check_partial_fit_halves``, ``check_fit_beyond_horizon`` and
    ``check_predict_before_fit``."""
    case = _Case(seed=seed, n_queries=n_queries)
    for name in _FIT_PREDICT:
        _run_check(CHECKS[name], agent, case)


@_check("agent")
def check_fit_then_predict(agent: Agent, case: _Case) -> None:
    """``fit`` returns the agent; ``fit`` then ``predict`` equals ``reset(1, rng)``, one
    ``update`` per row, then ``act`` per query row."""
    log = _logged(agent, case.seed, case.n_queries)
    fitted = agent.clone()
    _require(fitted.fit(log.x, log.a, log.r, rng=np.random.default_rng(case.seed + 5))
             is fitted, agent, "fit must return the agent")
    _require(np.array_equal(fitted.predict(log.queries), log.expected), agent,
             "fit then predict must equal reset(1, rng), update on every row, then act on "
             "every query row")


@_check("agent")
def check_predict_leaves_agent_unchanged(agent: Agent, case: _Case) -> None:
    """``predict`` changes nothing: state, counters, generators."""
    log = _logged(agent, case.seed, case.n_queries)
    fitted = agent.clone().fit(log.x, log.a, log.r, rng=np.random.default_rng(case.seed + 5))
    before = _state(fitted)
    fitted.predict(log.queries)
    _require(before is None or _state(fitted) == before, agent,
             "predict must leave the agent unchanged (state, counters, generators)")
    _require(np.array_equal([fitted.act(q[None])[0] for q in log.queries], log.expected),
             agent, "predict must leave the agent unchanged: act afterwards must choose as "
             "predict did")


@_check("agent")
def check_partial_fit_halves(agent: Agent, case: _Case) -> None:
    """``partial_fit`` on two halves equals ``fit`` on the whole stream."""
    log = _logged(agent, case.seed, case.n_queries)
    h = agent.horizon // 2
    half = agent.clone().partial_fit(log.x[:h], log.a[:h], log.r[:h],
                                     rng=np.random.default_rng(case.seed + 5))
    half.partial_fit(log.x[h:], log.a[h:], log.r[h:])
    _require(np.array_equal(half.predict(log.queries), log.expected), agent,
             "partial_fit on two halves must equal fit on the whole stream")


@_check("agent")
def check_fit_beyond_horizon(agent: Agent, case: _Case) -> None:
    """Rows beyond the horizon are refused (``fit`` and ``partial_fit``), before anything
    is learnt."""
    log = _logged(agent, case.seed, case.n_queries)
    x, a, r, seed = log.x, log.a, log.r, case.seed
    h = agent.horizon // 2
    name = type(agent).__name__
    _expect_error(agent, lambda: agent.clone().fit(np.vstack([x, x[:1]]), np.append(a, a[0]),
                                                   np.append(r, r[0]), rng=seed),
                  ValueError, [name, "horizon"], "fit on more rows than the horizon")
    part = agent.clone().partial_fit(x[:h], a[:h], r[:h], rng=seed)
    before = part.predict(log.queries), part.t_
    _expect_error(agent, lambda: part.partial_fit(x, a, r), ValueError, [name, "horizon"],
                  "partial_fit beyond the horizon")
    _require(part.t_ == before[1] and np.array_equal(part.predict(log.queries), before[0]),
             agent, "refused rows must not be learnt")


@_check("agent")
def check_predict_before_fit(agent: Agent, case: _Case) -> None:
    """``predict`` before ``fit`` asks for ``fit``."""
    queries = np.zeros((2, agent.dim))
    _expect_error(agent, lambda: agent.clone().predict(queries), RuntimeError,
                  [type(agent).__name__, "fit"], "predict before fit must ask for fit")


_FIT_PREDICT = ("check_fit_then_predict", "check_predict_leaves_agent_unchanged",
                "check_partial_fit_halves", "check_fit_beyond_horizon",
                "check_predict_before_fit")


@_check("agent", "optimizer")
def check_privacy_claim(component: Agent | Optimizer, case: _Case) -> None:
    """:func:`check_privacy`: notion, basis, and a ledger that certifies the claim (for a
    batch optimizer, after one ``fit`` on its problem)."""
    if isinstance(component, BatchOptimizer):
        _runner(component, case)(component, case.seed)
    check_privacy(component)


# -- optimizers ------------------------------------------------------------------------------
def _streaming_run(opt: StreamingOptimizer, n_reps: int, seed: int, stream):
    xs, ys = stream
    opt.reset(n_reps, np.random.default_rng(seed))
    out = np.empty_like(xs)
    for t in range(xs.shape[0]):
        theta = np.asarray(opt.step(xs[t], ys[t]))
        _require(theta.shape == (n_reps, xs.shape[2]) and bool(np.isfinite(theta).all()),
                 opt, f"step must return finite iterates of shape {(n_reps, xs.shape[2])}, "
                 f"got {theta.shape}")
        out[t] = theta
    return (out,)


def _batch_run(opt: BatchOptimizer, n_reps: int, seed: int, problem):
    loss, X, y = problem
    res = opt.fit(loss, X, y, np.random.default_rng(seed), n_reps=n_reps)
    _require(res.theta.shape == (n_reps, X.shape[1]) and bool(np.isfinite(res.theta).all()),
             opt, f"fit must return finite theta of shape {(n_reps, X.shape[1])}, got "
             f"{res.theta.shape}")
    return (res.theta, res.history)


def _runner(optimizer, case: _Case) -> Callable[[Any, int], tuple]:
    if isinstance(optimizer, StreamingOptimizer):
        return lambda o, s: _streaming_run(o, case.n_reps, s, case.problem)
    return lambda o, s: _batch_run(o, case.n_reps, s, case.problem)


#: the problems optimizers are checked on (an optimizer class names one in ``_test_problem``)
TEST_PROBLEMS = ("stream", "squared", "logistic", "absolute")


def problem_for_checks(optimizer: Optimizer, *, n_reps: int = 3, kind: str | None = None,
                 n: int = 64, horizon: int = 60) -> tuple:
    """The problem ``kind`` (default: the class's ``_test_problem``; ``"stream"`` for a
    streaming optimizer) in the optimizer's dimension (its ``dim`` parameter, else 5):
    ``"stream"`` is ``(xs, ys)`` of shapes ``(horizon, n_reps, d)`` and ``(horizon, n_reps)``
    in [-1, 1]; the others ``(loss, X, y)`` with ``n`` rows of l_1 norm 1 and targets in
    [-1, 1] (``"logistic"``: labels 0/1)."""
    from dpbandits.losses import AbsoluteLoss, LogisticLoss, SquaredLoss

    if kind is None:
        kind = getattr(type(optimizer), "_test_problem",
                       "stream" if isinstance(optimizer, StreamingOptimizer) else "squared")
    if kind not in TEST_PROBLEMS:
        raise ValueError(f"kind must be one of {TEST_PROBLEMS}, got {kind!r}")
    d = int(optimizer.get_params().get("dim", 5))
    rng = np.random.default_rng(0)
    if kind == "stream":
        horizon = int(optimizer.get_params().get("horizon", horizon))
        return rng.uniform(-1, 1, (horizon, n_reps, d)), rng.uniform(-1, 1, (horizon, n_reps))
    X = rng.uniform(-1, 1, (n, d))
    X /= np.abs(X).sum(axis=1, keepdims=True)
    y = rng.uniform(-1, 1, n)
    if kind == "logistic":
        return LogisticLoss(), X, (rng.uniform(size=n) < 0.5).astype(float)
    return (SquaredLoss() if kind == "squared" else AbsoluteLoss()), X, y


def check_optimizer(optimizer: Optimizer,
                    problem: tuple[ArrayLike, ArrayLike]
                    | tuple[str | LossLike, ArrayLike, ArrayLike | None] | None = None, *,
                    n_reps: int = 3, seed: int = 0) -> None:
    """Run a streaming or batch optimizer through every named optimizer check
    (:func:`optimizer_checks`).

    ``problem``: for a ``StreamingOptimizer``, ``(xs, ys)`` of shapes ``(T, R, d)`` and
    ``(T, R)``; for a ``BatchOptimizer``, ``(loss, X, y)`` passed to ``fit`` with
    ``n_reps``; default: :func:`problem_for_checks`. Raises ``ContractError``.
    """
    for _, run in optimizer_checks(optimizer, problem, n_reps=n_reps, seed=seed):
        run(optimizer)


@_check("optimizer")
def check_optimizer_reproducible(optimizer: Optimizer, case: _Case) -> None:
    """Finite iterates of the right shape; the same seed reproduces the run exactly."""
    run = _runner(optimizer, case)
    first = run(optimizer, case.seed)
    _require(_same(run(optimizer, case.seed), first), optimizer,
             "the same seed must reproduce the run exactly")


@_check("optimizer", private=True)
def check_optimizer_noise_depends_on_seed(optimizer: Optimizer, case: _Case) -> None:
    """A private optimizer's output depends on its seed."""
    run = _runner(optimizer, case)
    first = run(optimizer, case.seed)
    _require(not _same(run(optimizer, case.seed + 1), first), optimizer,
             "a private optimizer's output must depend on its seed")


@_check("optimizer")
def check_optimizer_clone(optimizer: Optimizer, case: _Case) -> None:
    """``get_params`` returns the constructor's arguments; a clone behaves identically."""
    run = _runner(optimizer, case)
    _check_clone(optimizer, lambda o: run(o, case.seed), run(optimizer, case.seed))


# -- adversarial floats ----------------------------------------------------------------------
#: relative slack of "measured change <= declared sensitivity": the measurement's own rounding
#: (a difference and a norm of m doubles, below (m + 4) 2^-53 relative) is far below it, and
#: a real violation (issue 25's was 5.7 times the sensitivity) far above
SENSITIVITY_RTOL = 1e-9
#: finite rewards / targets fed with the adversarial rows
ADVERSARIAL_REWARDS = (1.0, -1.0, 0.0, -0.0, 1.7e308, -1.7e308, 5e-324)


def adversarial_rows(d: int) -> dict[str, np.ndarray]:
    """Finite rows of dimension ``d`` on which naive float arithmetic breaks norm bounds:
    squares that underflow (entries ``~2^-537``; a plain ``sqrt(sum x_i^2)`` gave issue 25's
    ``||u|| = sqrt(d/2 + 1)``), entries near overflow (squares overflow to inf), ``1e-300``
    next to ``1e300`` with subnormals and signed zeros, a single subnormal, an all-zero row,
    a row of signed zeros, and an ordinary row in [-1, 1]."""
    under = np.full(d, 0.7071 * 2.0**-537)
    under[0] = math.sqrt(1.4999) * 2.0**-537
    mixed = np.full(d, 2.0**-1070)
    mixed[0] = 1e300
    mixed[1 % d] = -1e-300 if d > 1 else 1e300
    if d > 2:
        mixed[2] = -0.0
    if d > 3:
        mixed[3] = 3e-310
    single = np.zeros(d)
    single[d // 2] = -5e-324
    signed = np.zeros(d)
    signed[::2] = -0.0
    return {
        "underflowing squares": under,
        "near overflow": np.where(np.arange(d) % 2 == 0, 1.7e308, -1.7e308),
        "mixed scales": mixed,
        "single subnormal": single,
        "all zero": np.zeros(d),
        "signed zeros": signed,
        "ordinary": np.random.default_rng(3).uniform(-1.0, 1.0, d),
    }


def _refusal_ok(component, exc: Exception, names: tuple[str, ...]) -> None:
    text = str(exc)
    _require(isinstance(exc, ValueError | TypeError) and any(n in text for n in names),
             component, f"refused adversarial input with {type(exc).__name__}: {text!r}, which "
             f"should be a ValueError naming the argument ({' or '.join(names)}) and the value")


def _within(component, contributions, labels: list[str], where: str) -> None:
    from dpbandits.privacy.contributions import Contribution, largest_change, largest_norm

    _require(bool(contributions), component, "_contributions returned no release")
    for c in contributions:
        _require(isinstance(c, Contribution), component,
                 f"_contributions must return Contribution objects, got {type(c).__name__}")
        bad = np.flatnonzero(~np.isfinite(c.values).all(axis=1))
        if bad.size:
            raise ContractError(f"{type(component).__name__}: {where}: release "
                                f"{c.release!r}: the contribution of the user with "
                                f"{labels[int(bad[0])]} is not finite")
        if c.bound == "norm":
            size, i = largest_norm(c.values, c.ord)
            _require(size <= c.sensitivity * (1.0 + SENSITIVITY_RTOL), component,
                     f"{where}: release {c.release!r}: the user with {labels[i]} adds a term "
                     f"of l_{c.ord:g} norm {size!r}, above the declared bound "
                     f"{c.sensitivity!r}")
            continue
        change, i, j = largest_change(c.values, c.ord)
        _require(change <= c.sensitivity * (1.0 + SENSITIVITY_RTOL), component,
                 f"{where}: release {c.release!r}: replacing the user with {labels[i]} by the "
                 f"user with {labels[j]} moves the noiseless release by {change!r} in l_"
                 f"{c.ord:g}, above the declared sensitivity {c.sensitivity!r} "
                 f"({change / c.sensitivity if c.sensitivity else math.inf:.3g} times)")


def _hook(component):
    hook = getattr(component, "_contributions", None)
    _require(callable(hook), component,
             "a private component must expose its noiseless per-user terms through "
             "_contributions (dpbandits.privacy.contributions) for the adversarial checks")
    return hook


def _agent_users(agent: Agent, kinds: dict[str, np.ndarray],
                 reward_values: tuple[float, ...] = ADVERSARIAL_REWARDS):
    """Every (context kind, arm, reward): contexts (n, d), arms (n,), rewards (n,), labels."""
    xs, arms, rewards, labels = [], [], [], []
    for kind, row in kinds.items():
        for a in range(agent.n_arms):
            for r in reward_values:
                xs.append(row)
                arms.append(a)
                rewards.append(r)
                labels.append(f"context {kind!r}, arm {a}, reward {r!r}")
    return np.array(xs), np.array(arms, dtype=np.int64), np.array(rewards), labels


def _adversarial_agent(agent: Agent, seed: int, kinds: dict[str, np.ndarray] | None = None,
                       reward_values: tuple[float, ...] = ADVERSARIAL_REWARDS) -> None:
    """``kinds`` (name -> context row; default :func:`adversarial_rows`, which must include
    an ``"ordinary"`` row) and ``reward_values`` are the users tried."""
    hook = _hook(agent)
    kinds = adversarial_rows(agent.dim) if kinds is None else kinds
    m = agent.n_arms * len(reward_values)
    rewards = np.tile(reward_values, agent.n_arms)
    stream = _agent_stream(agent, m, seed)
    agent.reset(m, np.random.default_rng(seed))
    rows = np.arange(m)
    for when in (0, agent.horizon // 2):  # the state after reset, and half-way
        while agent.t_ < when:
            x = stream[0][agent.t_]
            a = agent.act(x)
            agent.update(x, a, stream[1][agent.t_][rows, a])
        where = f"after {agent.t_} rounds (n_arms={agent.n_arms})"
        accepted = {}
        for kind, row in kinds.items():
            trial = copy.deepcopy(agent)
            x = np.tile(row, (m, 1))
            try:
                trial.update(x, trial.act(x), rewards)
            except (ValueError, TypeError, ArithmeticError) as exc:
                _refusal_ok(agent, exc, ("contexts", "rewards"))
                continue
            accepted[kind] = row
        _require("ordinary" in accepted, agent, f"{where}: refused an ordinary round")
        x, a, r, labels = _agent_users(agent, accepted, reward_values)
        _within(agent, hook(x, a, r), labels, where)


def _adversarial_streaming(opt: StreamingOptimizer, case: _Case,
                           kinds: dict[str, np.ndarray] | None = None,
                           reward_values: tuple[float, ...] = ADVERSARIAL_REWARDS) -> None:
    hook = _hook(opt)
    d = int(opt.get_params().get("dim", 5))
    kinds = adversarial_rows(d) if kinds is None else kinds
    m = len(reward_values)
    ys = np.array(reward_values)
    xs, ys_stream = case.problem
    horizon = xs.shape[0]
    benign = np.random.default_rng([case.seed, 13])
    opt.reset(m, np.random.default_rng(case.seed))
    t = 0
    for when in (0, horizon // 2):
        while t < when:
            opt.step(benign.uniform(-1, 1, (m, d)), benign.uniform(-1, 1, m))
            t += 1
        where = f"after {t} steps"
        accepted = {}
        for kind, row in kinds.items():
            trial = copy.deepcopy(opt)
            try:
                trial.step(np.tile(row, (m, 1)), ys)
            except (ValueError, TypeError, ArithmeticError) as exc:
                _refusal_ok(opt, exc, ("x", "y"))
                continue
            accepted[kind] = row
        _require("ordinary" in accepted, opt, f"{where}: refused an ordinary step")
        x = np.array([row for row in accepted.values() for _ in ys])
        y = np.tile(ys, len(accepted))
        labels = [f"x {k!r}, y {v!r}" for k in accepted for v in ys]
        _within(opt, hook(x, y), labels, where)


def _adversarial_batch(opt: BatchOptimizer, case: _Case,
                       kinds: dict[str, np.ndarray] | None = None,
                       reward_values: tuple[float, ...] = ADVERSARIAL_REWARDS) -> None:
    hook = _hook(opt)
    loss, X, y = case.problem
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    d = X.shape[1]
    labels_only = set(np.unique(y).tolist()) <= {0.0, 1.0}
    targets = (0.0, 1.0) if labels_only else reward_values
    accepted = {}
    for kind, row in (adversarial_rows(d) if kinds is None else kinds).items():
        X2 = np.vstack([X, np.tile(row, (len(targets), 1))])
        y2 = np.concatenate([y, targets])
        try:
            res = copy.deepcopy(opt).fit(loss, X2, y2, np.random.default_rng(case.seed),
                                         n_reps=1)
        except (ValueError, TypeError, ArithmeticError) as exc:
            _refusal_ok(opt, exc, ("X", "y"))
            continue
        _require(bool(np.isfinite(res.theta).all()), opt,
                 f"fit on data with a {kind!r} row returned a non-finite theta")
        accepted[kind] = row
    _require("ordinary" in accepted, opt, "refused ordinary data")
    xs = np.array([row for row in accepted.values() for _ in targets])
    ys = np.tile(np.array(targets), len(accepted))
    labels = [f"x {k!r}, y {v!r}" for k in accepted for v in targets]
    rng = np.random.default_rng([case.seed, 17])
    radius = float(opt.get_params().get("radius", 1.0) or 1.0)
    for theta in (np.zeros(d), rng.uniform(-1, 1, d) * radius / d):
        where = f"at theta={theta.round(3).tolist()}"
        keep = np.ones(len(labels), dtype=bool)
        for kind in accepted:  # rows the fit would refuse at this theta (overflow), clearly
            rows = np.array([lab.startswith(f"x {kind!r}") for lab in labels])
            try:
                hook(loss, xs[rows], ys[rows], theta)
            except (ValueError, ArithmeticError) as exc:
                _refusal_ok(opt, exc, ("X", "y"))
                keep &= ~rows
        _within(opt, hook(loss, xs[keep], ys[keep], theta),
                [lab for lab, k in zip(labels, keep, strict=True) if k], where)


@_check("agent", "optimizer", private=True)
def check_adversarial_inputs(component: Agent | Optimizer, case: _Case | None = None) -> None:
    """Adversarial floats (:func:`adversarial_rows`, rewards/targets up to ``+-1.7e308``
    and subnormal) are refused with a ``ValueError`` naming the argument, or every user's
    noiseless contribution (the ``_contributions`` hook) stays within the declared
    sensitivity, for every pair of users. Agents are checked after ``reset`` and half-way
    through the horizon, at their ``n_arms`` and at ``n_arms = 3`` when they have fewer (the
    sensitivity of some releases grows with the number of arms). Optimizers run on their
    :func:`problem_for_checks`."""
    if case is None:
        case = _Case()
    if not isinstance(component, Agent) and case.problem is None:
        case = _Case(seed=case.seed, problem=problem_for_checks(component, n_reps=1))
    if isinstance(component, Agent):
        _adversarial_agent(component, case.seed)
        if component.n_arms < 3:
            _adversarial_agent(component.clone(n_arms=3), case.seed)
    elif isinstance(component, StreamingOptimizer):
        _adversarial_streaming(component, case)
    else:
        _adversarial_batch(component, case)


# -- claims that follow the noise -------------------------------------------------------------
#: the data-set size (and dimension) an unfitted batch optimizer's plan is compared at
CLAIM_PLAN_SIZE = (64, 5)


def _own_plan(component):
    """The component's noise plan (a batch optimizer's at :data:`CLAIM_PLAN_SIZE`), or None
    for a component without one."""
    from dpbandits.optim.base import PrivateBatchOptimizer

    if isinstance(component, PrivateBatchOptimizer):
        if component.__dict__.get("_fitted") is not None:
            return component.plan  # the last fit's
        return component.plan_for(*CLAIM_PLAN_SIZE)
    return getattr(component, "plan", None) if hasattr(type(component), "plan") else None


def _claim(component) -> tuple:
    """What the component claims and draws: its guarantee, its ledger, its plan's scales and
    its plan views (``sigmas``, ``multiplier`` ...); a refusal to compute them is part of
    it."""
    from dpbandits.privacy.plan import PlanView

    try:
        plan = _own_plan(component)
        privacy = _privacy_of(component, plan)
        ledger = plan.ledger if plan is not None else getattr(component, "ledger", None)
        views = {name: getattr(component, name) for name in _descriptors(component, PlanView)}
    except (ValueError, TypeError) as exc:
        return ("refused", type(exc).__name__)
    return (privacy, ledger, None if plan is None else dict(plan.scales),
            _comparable(views))


def _privacy_of(component, plan):
    from dpbandits.optim.base import PrivateBatchOptimizer

    if isinstance(component, PrivateBatchOptimizer):
        return plan.guarantee
    return component.privacy


def _comparable(value):
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _descriptors(component, kind: type) -> list[str]:
    """Names of the class attributes of type ``kind`` (plan views and plan methods)."""
    names = []
    for klass in type(component).__mro__:
        for name, value in vars(klass).items():
            if isinstance(value, kind) and not name.startswith("_") and name not in names:
                names.append(name)
    return names


def _named_params(klass: type) -> tuple[list[str], bool]:
    import inspect

    sig = inspect.signature(klass.__init__)  # type: ignore[misc]
    names = [k for k, p in sig.parameters.items()
             if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return names, any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def _constructor_params(component) -> dict[str, Any]:
    """The constructor's named parameters, as the component stores them: the most-derived
    ``__init__``'s, and when it forwards ``**kwargs``, its bases' (less any one the class
    refuses, e.g. GIBO's ``mu``), so that the class rebuilds the component from them."""
    cls = type(component)
    own, forwards = _named_params(cls)
    params = {k: getattr(component, k) for k in own if hasattr(component, k)}
    if not forwards:
        return params
    extra = {k: getattr(component, k) for klass in cls.__mro__[1:]
             if "__init__" in vars(klass) and klass is not object
             for k in _named_params(klass)[0] if k not in params and hasattr(component, k)}
    for drop in (None, *extra):
        trial = {**params, **{k: v for k, v in extra.items() if k != drop}}
        try:
            cls(**trial)
        except (TypeError, ValueError):
            continue
        return trial
    return params


def _perturbed(value):
    """Another valid-looking value of a parameter: a number moved (an int by one, a float in
    (0, 1) halved, any other doubled); anything else unchanged."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if not math.isfinite(value):
        return value
    if isinstance(value, int):
        return value + 1
    return value / 2.0 if 0.0 < value < 1.0 else (value * 2.0 if value else 1.0)


def _check_assignments(component) -> None:
    """Every constructor parameter and noise attribute: assigning it is refused
    (``AttributeError``) or fully applied (the claim and the noise are those of a component
    built with the new value)."""
    from dpbandits.privacy.plan import PlanMethod, PlanView

    params = _constructor_params(component)
    plan = _own_plan(component)
    scale_names = set(plan.scales) if plan is not None else set()
    noise_attrs = [n for n in _descriptors(component, PlanView) + _descriptors(component,
                                                                               PlanMethod)
                   if n not in params]
    noise_attrs += [n for n in scale_names if n in vars(component) and n not in params]
    for name in list(params) + noise_attrs:
        trial = copy.deepcopy(component)
        value = getattr(trial, name)
        new = _perturbed(value) if name in params else (
            {k: _perturbed(v) for k, v in value.items()} if isinstance(value, dict)
            else _perturbed(value))
        try:
            setattr(trial, name, new)
        except AttributeError:
            continue
        if name not in params:
            raise ContractError(f"{type(component).__name__}: the noise attribute {name!r} can "
                                "be assigned after construction, while the noise and the "
                                "ledger follow the plan: it must be read-only (PlanView)")
        try:
            fresh = type(component)(**{**params, name: new})
        except (ValueError, TypeError):
            _require(_claim(trial)[0] == "refused", component,
                     f"parameter {name!r} accepted the value {new!r} after construction, "
                     "which the constructor refuses, and the component still states a claim")
            continue
        _require(_claim(trial) == _claim(fresh), component,
                 f"assigning {name}={new!r} after construction was accepted but not applied: "
                 "the claim or the noise differ from those of a component built with it "
                 "(refuse the assignment, or re-plan)")


def _forged(plan):
    """A hand-built plan: the scales divided by 4 under the original guarantee and ledger."""
    from dpbandits.privacy.plan import NoisePlan

    return NoisePlan(plan.calibration, {k: v / 4.0 for k, v in plan.scales.items()},
                     plan.guarantee, plan.events, plan.sensitivities)


def _with_plan(component, change):
    from dpbandits.optim.base import PrivateBatchOptimizer

    if isinstance(component, PrivateBatchOptimizer):
        return component.with_plan(change)
    return component.with_plan(change(component.plan))


def _check_forged_plan(component) -> None:
    """``with_plan`` of a forged plan is flagged; of a scaled plan (an audit's broken
    variant) too, and it draws the scaled noise."""
    own = _own_plan(component)
    if own is None or not own.is_private or not callable(getattr(component, "with_plan", None)):
        return
    if not any(v > 0.0 for v in own.scales.values()):
        return
    for label, change in (("a forged plan (scales / 4, the original guarantee and ledger)",
                           _forged), ("a scaled plan (plan.scaled(4))",
                                      lambda p: p.scaled(4.0))):
        twin = _with_plan(component, change)
        plan = _own_plan(twin)
        _require(not plan.guarantee.certified and plan.ledger is None
                 and not _privacy_of(twin, plan).certified, component,
                 f"with_plan of {label} still reports itself certified (or keeps a ledger): "
                 "a plan the component did not derive must be flagged")
        _require(dict(plan.scales) == {k: v / 4.0 for k, v in own.scales.items()}, component,
                 f"with_plan of {label} must draw its scales")
        _require(own.guarantee.certified == _own_plan(component).guarantee.certified,
                 component, "with_plan must leave the component itself unchanged")


def check_claims(component: Any) -> None:
    """Claims that follow the noise, for any component exposing ``privacy`` (agents,
    optimizers, Bayesian-optimization methods, off-policy estimators): assigning any
    constructor parameter or noise attribute after construction is refused
    (``AttributeError``) or fully applied (the guarantee, the plan's scales and its views are
    those of a component built with the new value), and ``with_plan`` of a forged plan (the
    scales divided by 4 under the original guarantee and ledger) is flagged as not
    certified, without a ledger. Raises ``ContractError``."""
    _require(hasattr(type(component), "privacy"), component, "check_claims needs a component "
             "exposing privacy")
    if isinstance(component, BatchOptimizer):
        try:
            _own_plan(component)
        except RuntimeError:  # a plan that needs the data (DP-SVRG's smoothness): fit once
            component = copy.deepcopy(component)
            loss, X, y = problem_for_checks(component, n_reps=1)
            component.fit(loss, X, y, np.random.default_rng(0), n_reps=1)
    _check_assignments(component)
    _check_forged_plan(component)


@_check("agent", "optimizer")
def check_claims_follow_noise(component: Agent | Optimizer, case: _Case) -> None:
    """:func:`check_claims`: assigning a parameter or a noise attribute is refused or fully
    applied, and ``with_plan`` of a forged plan is flagged."""
    check_claims(component)


# -- environments ----------------------------------------------------------------------------
def check_env(env_id: str, *, n_reps: int = 3, seed: int = 0, n_steps: int = 20,
              env_params: dict | None = None) -> None:
    """Check a registered bandit environment through every named environment check
    (:func:`env_checks`): Gymnasium's own checker on the single env, then the vector env's
    shapes, ``info["pseudo_regret"] >= 0``, seeding, and that replication r of a batch
    equals a one-replication env with the same seed."""
    for _, run in env_checks(env_id, n_reps=n_reps, seed=seed, n_steps=n_steps,
                             env_params=env_params):
        run(env_id)


def _env_rollout(env_id: str, case: _Case, n: int, seeds, arm_seed: int):
    import gymnasium

    params = dict(case.env_params or {})
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                              **params)
    obs, _ = venv.reset(seed=seeds)
    k = int(venv.single_action_space.n)
    arm_rng = np.random.default_rng(arm_seed)
    trace = [obs]
    for _ in range(case.n_steps):
        arms = arm_rng.integers(0, k, size=case.n_reps)[:n]
        obs, rewards, _, _, info = venv.step(arms)
        regret = _oracle_record(venv, info)
        _require(obs.shape == (n, venv.single_observation_space.shape[0])
                 and rewards.shape == (n,) and regret.shape == (n,), venv,
                 "step must return observations (R, d), rewards (R,) and "
                 "info['pseudo_regret'] (R,)")
        _require(bool(np.isfinite(obs).all() and np.isfinite(rewards).all()), venv,
                 "observations and rewards must be finite")
        _require(bool((regret >= -1e-12).all()), venv, "pseudo-regret must be >= 0")
        trace += [obs, rewards, regret]
    venv.close()
    return trace


def _env_seeds(case: _Case) -> list[int]:
    return [case.seed + 11 * r for r in range(case.n_reps)]


@_check("env")
def check_env_gymnasium(env_id: str, case: _Case) -> None:
    """Gymnasium's own ``check_env`` on the single environment."""
    import gymnasium
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    single = gymnasium.make(env_id, **dict(case.env_params or {}))
    gymnasium_check_env(single.unwrapped, skip_render_check=True)
    single.close()


@_check("env")
def check_env_vector_steps(env_id: str, case: _Case) -> None:
    """The vector env's shapes, finite observations and rewards, pseudo-regret >= 0."""
    _env_rollout(env_id, case, case.n_reps, _env_seeds(case), 0)


@_check("env")
def check_env_seeding(env_id: str, case: _Case) -> None:
    """The same seeds reproduce the run exactly; different seeds give different runs."""
    import gymnasium

    single = gymnasium.make(env_id, **dict(case.env_params or {}))
    seeds = _env_seeds(case)
    batch = _env_rollout(env_id, case, case.n_reps, seeds, 0)
    _require(_same(_env_rollout(env_id, case, case.n_reps, seeds, 0), batch), single,
             "the same seeds must reproduce the run exactly")
    _require(not _same(_env_rollout(env_id, case, case.n_reps, [s + 1 for s in seeds], 0),
                       batch), single, "different seeds must give different runs")
    single.close()


@_check("env")
def check_env_replication_is_a_solo_env(env_id: str, case: _Case) -> None:
    """Replication r of a batch equals a one-replication env with its seed."""
    import gymnasium

    single = gymnasium.make(env_id, **dict(case.env_params or {}))
    seeds = _env_seeds(case)
    batch = _env_rollout(env_id, case, case.n_reps, seeds, 0)
    # the arms of replication r are column r of the batch's arm draws; replay them with R = 1
    for r in (0, case.n_reps - 1):
        solo = _solo_rollout(env_id, dict(case.env_params or {}), seeds[r], r, case.n_reps,
                             case.n_steps)
        picked = [x[r:r + 1] for x in batch]
        _require(_same(solo, picked), single,
                 f"replication {r} of a batch must equal a one-replication env with its seed")
    single.close()


def _oracle_record(venv, info: dict) -> np.ndarray:
    """``info["pseudo_regret"]``; for an environment without an oracle (``reports_regret =
    False``: replay of logged data) ``info["accepted"]`` as 0/1 floats, checked the same way."""
    key = "pseudo_regret" if getattr(venv.unwrapped, "reports_regret", True) else "accepted"
    return np.asarray(info[key], dtype=np.float64)


def _solo_rollout(env_id: str, params: dict, seed: int, column: int, n_reps: int,
                  n_steps: int) -> list:
    import gymnasium

    venv = gymnasium.make_vec(env_id, num_envs=1, vectorization_mode="vector_entry_point",
                              **params)
    obs, _ = venv.reset(seed=[seed])
    k = int(venv.single_action_space.n)
    arm_rng = np.random.default_rng(0)
    trace = [obs]
    for _ in range(n_steps):
        arms = arm_rng.integers(0, k, size=n_reps)[column:column + 1]
        obs, rewards, _, _, info = venv.step(arms)
        trace += [obs, rewards, _oracle_record(venv, info)]
    venv.close()
    return trace

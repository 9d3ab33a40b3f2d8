"""Contract checks for agents, optimizers and environments — run them on your own components.

Like Gymnasium's ``check_env`` and scikit-learn's ``check_estimator``: each function runs a
component through the rules every registered component of dpbandits obeys and raises
``ContractError`` naming the first rule it breaks::

    from dpbandits.testing import check_agent
    check_agent(MyAgent(n_arms=2, dim=5, horizon=200))

The rules: shapes and dtypes over R replications; the same seed gives identical results and
``reset`` starts afresh; a private component's noise depends on the seed; ``get_params`` →
``clone`` behaves the same; parameters are read-only after construction; bad input raises one
clear error naming the component and the argument; a private component states its notion
and basis, and the epsilon ``dp_accounting`` recomputes from its ledger is at most the claim;
an agent's ``fit``/``partial_fit``/``predict`` on one logged stream are ``reset``/``update``/
``act`` (and ``predict`` leaves the agent unchanged, rows beyond the horizon are refused).
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from dpbandits.agents.base import Agent
from dpbandits.losses import LossLike
from dpbandits.optim.base import BatchOptimizer, Optimizer, StreamingOptimizer
from dpbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["ContractError", "check_agent", "check_env", "check_fit_predict", "check_optimizer"]

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
    if cert is None or cert["epsilon"] is None:
        return  # no ledger (a closed-form theorem): nothing to recompute
    _require(cert["epsilon"] <= privacy.epsilon * (1 + CERTIFY_RTOL), component,
             f"the ledger certifies epsilon={cert['epsilon']:.6g} at delta={privacy.delta:g}, "
             f"above the claimed epsilon={privacy.epsilon:.6g}")


def _is_private(component) -> bool:
    privacy = component.privacy
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
    """Run ``agent`` (an unreset ``Agent``, small ``horizon`` recommended) through the
    contract on a fixed stream of contexts and rewards; raises ``ContractError`` (an error
    the agent raises where the contract expects none is reported as one, naming it)."""
    if not isinstance(agent, Agent):
        raise TypeError(f"check_agent needs an Agent subclass instance, got "
                        f"{type(agent).__name__}")
    try:
        _check_agent(agent, n_reps, seed)
    except ContractError:
        raise
    except Exception as exc:  # noqa: BLE001 - the agent broke the contract: say so
        raise ContractError(f"{type(agent).__name__}: raised {type(exc).__name__} where the "
                            f"contract expects none: {exc}") from exc


def _check_agent(agent: Agent, n_reps: int, seed: int) -> None:
    _expect_error(agent, lambda: agent.clone().act(np.zeros((n_reps, agent.dim))),
                  RuntimeError, ["reset"], "act before reset must ask for reset")
    stream = _agent_stream(agent, n_reps, seed)
    first = _play(agent, n_reps, seed, stream)
    _require(_same(_play(agent, n_reps, seed, stream), first), agent,
             "reset with the same seed must reproduce the run exactly (state left over?)")
    if _is_private(agent):
        _require(not _same(_play(agent, n_reps, seed + 1, stream), first), agent,
                 "a private agent's arms must depend on its seed (is the noise drawn from "
                 "the rng given to reset?)")
    _check_clone(agent, lambda a: _play(a, n_reps, seed, stream), first)
    _check_frozen(agent)
    name = type(agent).__name__
    agent.reset(n_reps, np.random.default_rng(seed))
    _expect_error(agent, lambda: agent.act(np.zeros((n_reps, agent.dim + 1))),
                  (ValueError, TypeError), [name, "contexts"], "wrong context shape")
    _expect_error(agent, lambda: agent.act(np.full((n_reps, agent.dim), np.nan)),
                  (ValueError, TypeError), [name, "contexts", "finite"], "NaN contexts")
    _expect_error(agent, lambda: agent.update(
        np.zeros((n_reps, agent.dim)), np.full(n_reps, agent.n_arms), np.zeros(n_reps)),
        ValueError, [name, "arms"], "arm out of range")
    check_fit_predict(agent, seed=seed)
    check_privacy(agent)


def _state(agent: Agent) -> bytes | None:
    """The agent's full state as bytes (None when it cannot be pickled)."""
    try:
        return pickle.dumps(agent)
    except (TypeError, AttributeError, pickle.PicklingError):
        return None


def check_fit_predict(agent: Agent, *, seed: int = 0, n_queries: int = 20) -> None:
    """``fit``, ``partial_fit`` and ``predict`` on one logged stream (R = 1): ``fit`` then
    ``predict`` equals ``reset(1, rng)``, one ``update`` per row, then ``act`` per query row;
    ``predict`` leaves the agent unchanged; ``partial_fit`` on two halves equals ``fit``;
    rows beyond the horizon are refused before anything is learnt."""
    T = agent.horizon
    stream = _agent_stream(agent, 1, seed)
    (logged,) = _play(agent.clone(), 1, seed, stream)  # a log the agent itself could write
    x, a = stream[0][:, 0], logged[:, 0]
    r = stream[1][np.arange(T), 0, a]
    queries = np.random.default_rng([seed, 11]).uniform(-1.0, 1.0, (n_queries, agent.dim))
    ref = agent.clone()
    ref.reset(1, np.random.default_rng(seed + 5))
    for t in range(T):
        ref.update(x[t:t + 1], a[t:t + 1], r[t:t + 1])
    expected = np.array([ref.act(q[None])[0] for q in queries])
    fitted = agent.clone()
    _require(fitted.fit(x, a, r, rng=np.random.default_rng(seed + 5)) is fitted, agent,
             "fit must return the agent")
    before = _state(fitted)
    got = fitted.predict(queries)
    _require(np.array_equal(got, expected), agent, "fit then predict must equal reset(1, rng), "
             "update on every row, then act on every query row")
    _require(before is None or _state(fitted) == before, agent,
             "predict must leave the agent unchanged (state, counters, generators)")
    _require(np.array_equal([fitted.act(q[None])[0] for q in queries], expected), agent,
             "predict must leave the agent unchanged: act afterwards must choose as predict did")
    half = agent.clone().partial_fit(x[:T // 2], a[:T // 2], r[:T // 2],
                                     rng=np.random.default_rng(seed + 5))
    half.partial_fit(x[T // 2:], a[T // 2:], r[T // 2:])
    _require(np.array_equal(half.predict(queries), expected), agent,
             "partial_fit on two halves must equal fit on the whole stream")
    name = type(agent).__name__
    _expect_error(agent, lambda: agent.clone().fit(np.vstack([x, x[:1]]), np.append(a, a[0]),
                                                   np.append(r, r[0]), rng=seed),
                  ValueError, [name, "horizon"], "fit on more rows than the horizon")
    part = agent.clone().partial_fit(x[:T // 2], a[:T // 2], r[:T // 2], rng=seed)
    before = part.predict(queries), part.t_
    _expect_error(agent, lambda: part.partial_fit(x, a, r), ValueError, [name, "horizon"],
                  "partial_fit beyond the horizon")
    _require(part.t_ == before[1] and np.array_equal(part.predict(queries), before[0]), agent,
             "refused rows must not be learnt")
    _expect_error(agent, lambda: agent.clone().predict(queries), RuntimeError, [name, "fit"],
                  "predict before fit must ask for fit")


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


def check_optimizer(optimizer: Optimizer,
                    problem: tuple[ArrayLike, ArrayLike]
                    | tuple[str | LossLike, ArrayLike, ArrayLike | None], *,
                    n_reps: int = 3, seed: int = 0) -> None:
    """Run a streaming or batch optimizer through the contract.

    ``problem``: for a ``StreamingOptimizer``, ``(xs, ys)`` of shapes ``(T, R, d)`` and
    ``(T, R)``; for a ``BatchOptimizer``, ``(loss, X, y)`` passed to ``fit`` with
    ``n_reps``. Raises ``ContractError``.
    """
    if isinstance(optimizer, StreamingOptimizer):
        def run(o, s):
            return _streaming_run(o, n_reps, s, problem)
    elif isinstance(optimizer, BatchOptimizer):
        def run(o, s):
            return _batch_run(o, n_reps, s, problem)
    else:
        raise TypeError(f"check_optimizer needs a StreamingOptimizer or BatchOptimizer, got "
                        f"{type(optimizer).__name__}")
    first = run(optimizer, seed)
    _require(_same(run(optimizer, seed), first), optimizer,
             "the same seed must reproduce the run exactly")
    if _is_private(optimizer):
        _require(not _same(run(optimizer, seed + 1), first), optimizer,
                 "a private optimizer's output must depend on its seed")
    _check_clone(optimizer, lambda o: run(o, seed), first)
    _check_frozen(optimizer)
    check_privacy(optimizer)


# -- environments ----------------------------------------------------------------------------
def check_env(env_id: str, *, n_reps: int = 3, seed: int = 0, n_steps: int = 20,
              env_params: dict | None = None) -> None:
    """Check a registered bandit environment: Gymnasium's own checker on the single env,
    then the vector env's shapes, ``info["pseudo_regret"] >= 0``, seeding, and that
    replication r of a batch equals a one-replication env with the same seed."""
    import gymnasium
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    params = dict(env_params or {})
    single = gymnasium.make(env_id, **params)
    gymnasium_check_env(single.unwrapped, skip_render_check=True)
    single.close()

    def rollout(n: int, seeds, arm_seed: int):
        venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                                  **params)
        obs, _ = venv.reset(seed=seeds)
        k = int(venv.single_action_space.n)
        arm_rng = np.random.default_rng(arm_seed)
        trace = [obs]
        for _ in range(n_steps):
            arms = arm_rng.integers(0, k, size=n_reps)[:n]
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

    seeds = [seed + 11 * r for r in range(n_reps)]
    batch = rollout(n_reps, seeds, 0)
    _require(_same(rollout(n_reps, seeds, 0), batch), single,
             "the same seeds must reproduce the run exactly")
    _require(not _same(rollout(n_reps, [s + 1 for s in seeds], 0), batch), single,
             "different seeds must give different runs")
    # the arms of replication r are column r of the batch's arm draws; replay them with R = 1
    for r in (0, n_reps - 1):
        solo = _solo_rollout(env_id, params, seeds[r], r, n_reps, n_steps)
        picked = [x[r:r + 1] for x in batch]
        _require(_same(solo, picked), single,
                 f"replication {r} of a batch must equal a one-replication env with its seed")


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

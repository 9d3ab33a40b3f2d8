"""The agent contract (DESIGN.md, "Agent") and the name registry.

An agent is batched over ``R`` independent replications: ``act`` maps contexts of shape
``(R, d)`` to arms ``(R,)`` and ``update`` learns from the round just played. Problem sizes
(``n_arms``, ``dim``, ``horizon``) and hyper-parameters are keyword arguments of ``__init__``,
stored unchanged and validated there (scikit-learn style).

The base class enforces the contract for every subclass, built-in or user-written:

* ``act`` and ``update`` check their inputs (shapes, dtypes, arm range, finite values) and
  ``act`` its output, with one error naming the agent and the argument;
* constructor parameters are read-only after construction: private agents calibrate their
  noise in ``__init__``, so ``agent.epsilon = 0.1`` would make the reported and the applied
  guarantee differ. ``set_params`` re-builds (and re-calibrates) the agent, ``clone`` returns
  a new one;
* ``supported_links`` declares the reward models (GLM links) the agent is meant for;
  ``check_link`` warns once (``LinkMismatchWarning``) when an environment uses another;
* outside the simulator, ``fit``/``partial_fit`` learn from one logged stream (R = 1, at most
  ``horizon`` rows: the noise is calibrated for that many) and ``predict`` returns the arms
  the agent would pull, without learning or spending privacy budget (docs/real-data.md).
"""

from __future__ import annotations

import copy
import functools
import math
import sys
import warnings
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np

from dpbandits._params import Parameterized
from dpbandits._validation import (
    SeedLike,
    as_rng,
    check_array,
    check_delta,
    check_delta_open,
    check_epsilon,
    check_int,
    check_rng,
)
from dpbandits.privacy.guarantee import PrivacyGuarantee


class LinkMismatchWarning(UserWarning):
    """An agent runs on an environment whose reward model (link) it was not built for."""


_WARNED_LINKS: set[tuple] = set()


def _checked_act(act):
    """Wrap a subclass's ``act`` with the base class's input and output checks."""

    @functools.wraps(act)
    def act_checked(self, contexts):
        x = self._check_contexts(contexts, where="act")
        return self._check_arms(act(self, x), where="act", what="returned arms")

    def act_trusted(self, contexts):
        # contexts straight from a dpbandits environment: only the returned arms are checked
        self._require_reset()
        return self._check_arms(act(self, contexts), where="act", what="returned arms")

    act_checked._dpbandits_checked = True
    act_checked._trusted = act_trusted
    return act_checked


class Agent(Parameterized):
    """Base class of every bandit agent.

    Subclasses implement ``_reset``, ``act``, ``_update`` and ``privacy``; the base class
    checks shapes and values at the boundary so the subclasses can assume clean arrays
    (``act`` receives float64 contexts of shape ``(R, d)``).
    """

    #: registry name, set by ``register_agent``
    name: str = ""
    #: reward models (GLM links of the environment) the agent is built for; None: any
    supported_links: tuple[str, ...] | None = None
    #: True when ``act`` is a function of the state and the context alone (no draw, ties to
    #: a fixed arm): its action probabilities are then the one-hot rows of ``act``
    deterministic_policy: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        act = cls.__dict__.get("act")
        if callable(act) and not getattr(act, "__isabstractmethod__", False) and not getattr(
                act, "_dpbandits_checked", False):
            cls.act = _checked_act(act)

    def __init__(self, *, n_arms: int, dim: int, horizon: int):
        self.n_arms = n_arms
        self.dim = dim
        self.horizon = horizon
        check_int("n_arms", n_arms, low=2)
        check_int("dim", dim, low=1)
        check_int("horizon", horizon, low=1)
        self.n_reps_: int | None = None
        self.t_: int = 0

    # -- lifecycle -------------------------------------------------------------------------
    def reset(self, n_reps: int, rng: np.random.Generator) -> Agent:
        """Fresh state for ``n_reps`` replications; all randomness is drawn from ``rng``."""
        self.n_reps_ = check_int("n_reps", n_reps, low=1)
        check_rng(rng)
        self.t_ = 0
        self._reset(self.n_reps_, rng)
        return self

    @abstractmethod
    def _reset(self, n_reps: int, rng: np.random.Generator) -> None: ...

    @abstractmethod
    def act(self, contexts: np.ndarray) -> np.ndarray:
        """Arms to pull, shape ``(R,)`` int64, for contexts of shape ``(R, d)``."""

    def update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Learn from the round just played (contexts ``(R, d)``, arms and rewards ``(R,)``)."""
        x = self._check_contexts(contexts, where="update")
        a = self._check_arms(arms, where="update")
        r = rewards
        if not (type(r) is np.ndarray and r.dtype == np.float64 and r.shape == x.shape[:1]
                and np.isfinite(r).all()):  # else the full check (the common case is clean)
            r = self._checked("update", check_array, "rewards", rewards, shape=(self.n_reps_,))
        if self.t_ >= self.horizon:
            raise ValueError(f"{type(self).__name__}.update: called more than "
                             f"horizon={self.horizon} times")
        self._update(x, a, r)
        self.t_ += 1

    def _act_trusted(self, contexts: np.ndarray) -> np.ndarray:
        """``act`` without the context check, for the harness only: ``contexts`` come from a
        dpbandits environment (float64, finite, shape ``(R, d)``); the returned arms are still
        checked. Falls back to ``act`` when it is not the base class's checked wrapper."""
        trusted = getattr(type(self).act, "_trusted", None)
        if trusted is None:
            return self.act(contexts)
        return trusted(self, contexts)

    def _update_trusted(self, contexts: np.ndarray, arms: np.ndarray,
                        rewards: np.ndarray) -> None:
        """``update`` without the boundary checks, for the harness only: ``contexts`` and
        ``rewards`` come from a dpbandits environment (float64, finite, right shapes) and
        ``arms`` from this agent's checked ``act``. Falls back to ``update`` when a subclass
        overrides it."""
        if type(self).update is not Agent.update:
            self.update(contexts, arms, rewards)
            return
        if self.t_ >= self.horizon:
            raise ValueError(f"{type(self).__name__}.update: called more than "
                             f"horizon={self.horizon} times")
        self._update(contexts, arms, rewards)
        self.t_ += 1

    @abstractmethod
    def _update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None: ...

    @property
    @abstractmethod
    def privacy(self) -> PrivacyGuarantee | None:
        """The agent's guarantee; ``None`` only for agents that are not private at all."""

    @property
    def ledger(self) -> dp_accounting.DpEvent | None:
        """dp_accounting event of the agent's noise (None for non-private agents)."""
        return None

    # -- one logged stream, scikit-learn style ---------------------------------------------
    def fit(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray, *,
            rng: SeedLike) -> Agent:
        """Learn from one logged stream: ``reset(1, rng)``, then the rows in order through the
        update path ``simulate`` uses (one ``update`` per row, each row a user).

        ``contexts`` (n, d), ``arms`` (n,) integers in [0, n_arms) (the logged actions: any
        policy's, not necessarily this agent's), ``rewards`` (n,). All rows are checked first,
        and ``n <= horizon`` is required: the agent's noise, and hence its guarantee
        ``privacy``, is calibrated for ``horizon`` rounds, each row one neighbouring unit. An
        agent whose algorithm fixes some arms (DP-HDB's forced sampling) refuses a log that
        does not follow them. ``rng`` (a Generator or a seed) drives all of the agent's
        randomness, its privacy noise included: for a real release draw it from fresh entropy
        (``numpy.random.default_rng()``) and keep it secret. Returns ``self``.
        """
        x, a, r = self._check_log("fit", contexts, arms, rewards, seen=0)
        self.reset(1, as_rng(rng, "rng"))
        self._feed(x, a, r)
        return self

    def partial_fit(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray, *,
                    rng: SeedLike | None = None) -> Agent:
        """Continue the one-replication stream with more logged rows (same arrays as ``fit``).

        The first call starts the stream (``rng`` required, as in ``fit``); later calls
        continue it where ``fit``, ``partial_fit`` or ``reset(1, rng)`` left it (``rng`` must
        then be omitted). ``partial_fit`` on two halves equals ``fit`` on the whole. Refuses,
        before learning anything, rows beyond the ``horizon`` the noise is calibrated for.
        """
        started = self.n_reps_ is not None
        if started and self.n_reps_ != 1:
            raise ValueError(f"{type(self).__name__}.partial_fit: continues a one-replication "
                             f"stream, but the agent was reset for n_reps={self.n_reps_}; "
                             "call fit (or partial_fit with rng) on a fresh agent")
        if started and rng is not None:
            raise ValueError(f"{type(self).__name__}.partial_fit: the stream has started "
                             f"({self.t_} rows seen), so rng must be omitted (it only seeds the "
                             "first call)")
        if not started and rng is None:
            raise ValueError(f"{type(self).__name__}.partial_fit: the first call starts the "
                             "stream and needs rng (a numpy Generator or a seed)")
        x, a, r = self._check_log("partial_fit", contexts, arms, rewards,
                                  seen=self.t_ if started else 0)
        if not started:
            self.reset(1, as_rng(rng, "rng"))
        self._feed(x, a, r)
        return self

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """Arms (n,) the agent would pull for the rows of ``contexts`` (n, d), in order, from
        its current state and without any update in between: row i gets what ``act`` would
        return after acting on rows 0..i-1.

        The agent is left unchanged (its estimates, counters and generators: the calls run on
        a copy), so ``predict`` learns nothing and spends no privacy budget (each arm is a
        post-processing of the state the guarantee covers and of that row's own context).
        Randomized choices (ties, the ``random`` agent) draw from the copy's generators: the
        same call twice returns the same arms. Needs a one-replication state (``fit``).
        """
        if self.n_reps_ is None:
            raise RuntimeError(f"{type(self).__name__}.predict: call fit (or partial_fit, or "
                               "reset(1, rng)) first")
        if self.n_reps_ != 1:
            raise ValueError(f"{type(self).__name__}.predict: needs a one-replication agent "
                             f"(fit), but it was reset for n_reps={self.n_reps_}")
        x = self._checked("predict", check_array, "contexts", contexts, shape=(None, self.dim))
        twin = copy.deepcopy(self)
        out = np.empty(x.shape[0], dtype=np.int64)
        for i in range(x.shape[0]):
            out[i] = twin.act(x[i:i + 1])[0]
        return out

    def action_probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """``pi(k | x_i)``, shape (n, K): the probability that ``act`` plays each arm on each
        row of ``contexts`` (n, d), from the current state (no update in between, nothing
        learnt, no generator advanced), for a one-replication agent (``fit``). Defined for
        deterministic agents (``deterministic_policy``: one-hot rows) and agents that
        override ``_action_probabilities`` (``random``: uniform); others raise
        ``NotImplementedError`` (evaluate the arms of ``predict`` instead). The off-policy
        estimators accept the agent itself as the target and call this."""
        if self.n_reps_ is None:
            raise RuntimeError(f"{type(self).__name__}.action_probabilities: call fit (or "
                               "partial_fit, or reset(1, rng)) first")
        if self.n_reps_ != 1:
            raise ValueError(f"{type(self).__name__}.action_probabilities: needs a "
                             f"one-replication agent (fit), but it was reset for "
                             f"n_reps={self.n_reps_}; see "
                             "dpbandits.offpolicy.policy_probabilities")
        x = self._checked("action_probabilities", check_array, "contexts", contexts,
                          shape=(None, self.dim))
        twin = copy.deepcopy(self)
        out = np.empty((x.shape[0], self.n_arms))
        for i in range(x.shape[0]):
            out[i] = twin._action_probabilities(x[i:i + 1])[0]
        return out

    def _action_probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """Probabilities (R, K) of ``act`` on clean contexts (R, d): one-hot rows of ``act``
        for a deterministic agent. Called on a copy: may advance its state freely."""
        if not self.deterministic_policy:
            raise NotImplementedError(
                f"{type(self).__name__}: action probabilities are not available for this "
                "agent (its act is not declared deterministic and it defines no "
                "_action_probabilities); evaluate the arms of predict (or "
                "dpbandits.offpolicy.policy_actions) instead")
        arms = self.act(contexts)
        out = np.zeros((contexts.shape[0], self.n_arms))
        out[np.arange(contexts.shape[0]), arms] = 1.0
        return out

    def _check_log(self, where: str, contexts, arms, rewards, seen: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The logged rows as clean arrays, and no more of them than the horizon allows."""
        x = self._checked(where, check_array, "contexts", contexts, shape=(None, self.dim))
        n = x.shape[0]
        if n < 1:
            raise ValueError(f"{type(self).__name__}.{where}: contexts has no rows")
        a = np.asarray(arms)
        if a.shape != (n,) or a.dtype.kind not in "iu":
            raise ValueError(f"{type(self).__name__}.{where}: arms must be an integer array "
                             f"of shape ({n},), got shape {a.shape} dtype {a.dtype}")
        if a.min() < 0 or a.max() >= self.n_arms:
            raise ValueError(f"{type(self).__name__}.{where}: arms must lie in "
                             f"[0, {self.n_arms - 1}], got values in [{a.min()}, {a.max()}]")
        r = self._checked(where, check_array, "rewards", rewards, shape=(n,))
        if seen + n > self.horizon:
            raise ValueError(
                f"{type(self).__name__}.{where}: {n} rows after {seen} already seen exceed "
                f"horizon={self.horizon}, the number of rounds its noise and guarantee are "
                f"calibrated for (at most {self.horizon - seen} more); build the agent with "
                f"horizon >= {seen + n}")
        return x.copy(), a.astype(np.int64), r.copy()  # the agent keeps no view of them

    def _feed(self, x: np.ndarray, a: np.ndarray, r: np.ndarray) -> None:
        for t in range(x.shape[0]):
            self._update_trusted(x[t:t + 1], a[t:t + 1], r[t:t + 1])

    # -- reward model ----------------------------------------------------------------------
    def check_link(self, link: str | None, env_id: str = "the environment") -> None:
        """Warn (once per agent, environment and link) with ``LinkMismatchWarning`` when the
        environment's reward model ``link`` is not in ``supported_links``."""
        supported = self.supported_links
        if link is None or supported is None or link in supported:
            return
        key = (type(self), env_id, link, tuple(supported))
        if key in _WARNED_LINKS:
            return
        _WARNED_LINKS.add(key)
        warnings.warn(
            f"agent {self.name or type(self).__name__!r} is built for link(s) "
            f"{', '.join(supported)} but {env_id} uses the {link!r} link: its estimates and "
            "confidence bounds assume the wrong reward model"
            + (" (pass link=... to the agent)" if "link" in self._init_param_names() else ""),
            LinkMismatchWarning, stacklevel=2)

    # -- boundary checks -------------------------------------------------------------------
    def _require_reset(self) -> int:
        if self.n_reps_ is None:
            raise RuntimeError(f"{type(self).__name__}: call reset(n_reps, rng) first")
        return self.n_reps_

    def _checked(self, where: str, check, *args, **kwargs):
        """Run a validation helper; prefix its error with ``Agent.where``."""
        try:
            return check(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{type(self).__name__}.{where}: {exc}") from None

    def _check_contexts(self, contexts, where: str = "act") -> np.ndarray:
        r = self._require_reset()
        if type(contexts) is np.ndarray and contexts.dtype == np.float64 and (
                contexts.shape == (r, self.dim)) and np.isfinite(contexts).all():
            return contexts  # the common case, already clean
        return self._checked(where, check_array, "contexts", contexts, shape=(r, self.dim))

    def _check_arms(self, arms, where: str = "update", what: str = "arms") -> np.ndarray:
        r = self._require_reset()
        a = np.asarray(arms)
        if a.shape != (r,) or a.dtype.kind not in "iu":
            raise ValueError(f"{type(self).__name__}.{where}: {what} must be an integer array "
                             f"of shape ({r},), got shape {a.shape} dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() >= self.n_arms):
            raise ValueError(f"{type(self).__name__}.{where}: {what} must lie in "
                             f"[0, {self.n_arms - 1}], got values in [{a.min()}, {a.max()}]")
        return a.astype(np.int64, copy=False)


class PrivateAgent(Agent):
    """Base class of an agent with a privacy target ``(epsilon, delta)``.

    Stores ``epsilon`` and ``delta`` (as given) and their validated values ``_eps``,
    ``_delta`` and ``_private``: ``epsilon = inf`` is the non-private twin (no noise),
    ``delta`` defaults to ``1/horizon`` and must lie in (0, 1) for a private run. Subclasses
    calibrate their noise from ``_eps`` and ``_delta`` in their own ``__init__``.
    """

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.epsilon = epsilon
        self.delta = delta
        self._eps = check_epsilon(epsilon)
        self._private = math.isfinite(self._eps)
        self._delta = 1.0 / horizon if delta is None else check_delta(delta)
        if self._private:
            check_delta_open(self._delta, why="for a private run")


_REGISTRY: dict[str, type[Agent]] = {}


def register_agent(name: str) -> Callable[[type[Agent]], type[Agent]]:
    """Class decorator: make ``cls`` constructible as ``make_agent(name, **params)``."""

    def deco(cls: type[Agent]) -> type[Agent]:
        old = _REGISTRY.get(name)
        if old is not None and _definition(old) != _definition(cls):
            raise ValueError(f"agent name {name!r} is already registered by "
                             f"{old.__module__}.{old.__qualname__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def _definition(cls: type) -> tuple[str, str]:
    """Where a class is defined: its qualified name and source file (or module name).

    Registering a class with the same definition again replaces it, so re-running a notebook
    cell or importing one plugin file under two module names does not fail."""
    module = sys.modules.get(cls.__module__)
    source = getattr(module, "__file__", None)
    return cls.__qualname__, str(Path(source).resolve()) if source else cls.__module__


def make_agent(name: str, **params: Any) -> Agent:
    """Build a registered agent by name."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; registered agents: {sorted(_REGISTRY)}")
    return _REGISTRY[name](**params)


def available_agents() -> list[str]:
    """Names accepted by ``make_agent``."""
    return sorted(_REGISTRY)


def agent_class(name: str) -> type[Agent]:
    """The class registered under ``name``."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; registered agents: {sorted(_REGISTRY)}")
    return _REGISTRY[name]

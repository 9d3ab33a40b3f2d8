"""The agent contract (CONTRIBUTING.md, "Add an agent") and the name registry.

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

import contextlib
import copy
import difflib
import functools
import inspect
import math
import sys
import warnings
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np

from dpbandits._docs import raises_parameter_errors
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
from dpbandits.errors import ClippingWarning
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.plan import Planned


def _fresh_or(rng: SeedLike | None) -> np.random.Generator:
    """``rng`` as a Generator; ``None``: one seeded from fresh operating-system entropy."""
    return np.random.default_rng() if rng is None else as_rng(rng, "rng")


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


@raises_parameter_errors
class Agent(Parameterized):
    """Base class of every bandit agent.

    Subclasses implement ``_reset``, ``act``, ``_update`` and ``privacy``; the base class
    checks shapes and values at the boundary so the subclasses can assume clean arrays
    (``act`` receives float64 contexts of shape ``(R, d)``).

    Parameters
    ----------
    n_arms : int
        Number of arms K, >= 2. Set from the environment by the harness and the CLI.
    dim : int
        Context dimension d, >= 1. Set from the environment by the harness and the CLI.
    horizon : int
        Number of rounds T the agent is built for, >= 1 (its noise and schedules are
        calibrated to it). Set from the environment by the harness and the CLI.

    """

    #: registry name, set by ``register_agent``
    name: str = ""
    #: reward models (GLM links of the environment) the agent is built for; None: any
    supported_links: tuple[str, ...] | None = None
    #: True when ``act`` is a function of the state and the context alone (no draw, ties to
    #: a fixed arm): its action probabilities are then the one-hot rows of ``act``
    deterministic_policy: bool = False
    #: counters of rows clipped to the bounds the agent is calibrated for (attributes of
    #: shape (R,) or (R, K), e.g. ``n_clipped_contexts_``): ``fit`` warns when they grow by
    #: more than half the rows. Empty: the agent's clipping is part of its design, not a
    #: sign of badly scaled data (dp-moment-ls clips most targets by intent)
    clip_counters: tuple[str, ...] = ()

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
        self.arm_labels_: np.ndarray | None = None  # set by fit / partial_fit
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
            rng: SeedLike | None = None, arm_labels: Any = None) -> Agent:
        """Learn from one logged stream: ``reset(1, rng)``, then the rows in order through the
        update path ``simulate`` uses (one ``update`` per row, each row a user).

        ``contexts`` (n, d), ``arms`` (n,) the logged actions (any policy's, not necessarily
        this agent's), ``rewards`` (n,). Arms are integers in [0, n_arms), or labels: give
        ``arm_labels`` (the n_arms distinct labels, in arm order), or arms of a non-numeric
        type (strings) taking exactly n_arms distinct values, which are sorted into arm order.
        The labels are kept (``arm_labels_``): ``predict`` returns them and later
        ``partial_fit`` calls map through them. All rows are checked first, and
        ``n <= horizon`` is required: the agent's noise, and hence its guarantee ``privacy``,
        is calibrated for ``horizon`` rounds, each row one neighbouring unit. An agent whose
        algorithm fixes some arms (DP-HDB's forced sampling) refuses a log that does not follow
        them. ``rng`` (a Generator or a seed) drives all of the agent's randomness, its privacy
        noise included; omitted, it is drawn from fresh operating-system entropy (the secure
        default for a private release: nobody, you included, can reproduce the noise). Give a
        seed to reproduce a run, and keep it secret. Returns ``self``.

        All or nothing: a ``fit`` that raises (an invalid log, an interrupt, a numerical
        failure) leaves the agent exactly as it was. When clipping to the agent's bounds
        changes more than half of the rows (``clip_counters``), one ``ClippingWarning``
        says so: the data are not on the scale the bounds assume.
        """
        x, a, r, labels = self._check_log("fit", contexts, arms, rewards, seen=0,
                                          arm_labels=arm_labels, labels=None)
        with self._all_or_nothing():
            self.reset(1, _fresh_or(rng))
            self.arm_labels_ = labels
            self._feed_counting_clips("fit", x, a, r)
        return self

    def partial_fit(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray, *,
                    rng: SeedLike | None = None, arm_labels: Any = None) -> Agent:
        """Continue the one-replication stream with more logged rows (same arrays as ``fit``).

        The first call starts the stream (``rng`` and ``arm_labels`` as in ``fit``); later
        calls continue it where ``fit``, ``partial_fit`` or ``reset(1, rng)`` left it (``rng``
        must then be omitted; arms are mapped through the labels of the first call).
        ``partial_fit`` on two halves equals ``fit`` on the whole. Refuses, before learning
        anything, rows beyond the ``horizon`` the noise is calibrated for; all or nothing,
        and warns of clipping, as ``fit``.
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
        kept = getattr(self, "arm_labels_", None) if started else None
        x, a, r, labels = self._check_log("partial_fit", contexts, arms, rewards,
                                          seen=self.t_ if started else 0,
                                          arm_labels=arm_labels, labels=kept)
        with self._all_or_nothing():
            if not started:
                self.reset(1, _fresh_or(rng))
            self.arm_labels_ = labels
            self._feed_counting_clips("partial_fit", x, a, r)
        return self

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """Arms (n,) the agent would pull for the rows of ``contexts`` (n, d), in order, from
        its current state and without any update in between: row i gets what ``act`` would
        return after acting on rows 0..i-1.

        The agent is left unchanged (its estimates, counters and generators), so ``predict``
        learns nothing and spends no privacy budget (each arm is a post-processing of the
        state the guarantee covers and of that row's own context). Randomized choices (ties,
        the ``random`` agent) draw from a copy of the agent's generators: the same call twice
        returns the same arms. Agents whose ``act`` only reads their estimate answer all rows
        in one batched call (``_batch_act``), with the same arms as the row-by-row loop.
        Needs a one-replication state (``fit``).
        """
        x = self._predict_rows("predict", contexts)
        arms = self._batch_act(x)
        if arms is None:
            twin = copy.deepcopy(self)
            arms = np.empty(x.shape[0], dtype=np.int64)
            for i in range(x.shape[0]):
                arms[i] = twin.act(x[i:i + 1])[0]
        labels = getattr(self, "arm_labels_", None)
        return arms if labels is None else labels[arms]

    def decision_function(self, contexts: np.ndarray) -> np.ndarray:
        """Per-arm scores (n, K) of the rows of ``contexts`` (n, d) from the current state:
        the numbers ``act`` maximizes (an index or an estimate: the agent's docstring says
        which), without any update in between. Column k is arm k (label ``arm_labels_[k]``
        when ``fit`` was given labels). MABWiser calls this
        ``predict_expectations``. Agents whose choice is not the argmax of a score (forced or
        randomized rounds) raise ``NotImplementedError``. Needs a one-replication state.
        """
        x = self._predict_rows("decision_function", contexts)
        scores = self._batch_scores(x)
        if scores is None:
            raise NotImplementedError(f"{type(self).__name__} has no per-arm score to return "
                                      "(its act is not the argmax of one)")
        return scores

    # hooks of predict and decision_function: one-replication state, n rows
    def _batch_scores(self, x: np.ndarray) -> np.ndarray | None:
        """Scores (n, K) of rows ``x`` (n, d), or ``None`` when the agent has none."""
        return None

    def _batch_act(self, x: np.ndarray) -> np.ndarray | None:
        """The arms (n,) of ``n`` successive ``act`` calls on the rows of ``x`` without updates
        (bit for bit, generators included), in one call; ``None``: ``predict`` loops."""
        return None

    def _predict_rows(self, where: str, contexts: np.ndarray) -> np.ndarray:
        if self.n_reps_ is None:
            raise RuntimeError(f"{type(self).__name__}.{where}: call fit (or partial_fit, or "
                               "reset(1, rng)) first")
        if self.n_reps_ != 1:
            raise ValueError(f"{type(self).__name__}.{where}: needs a one-replication agent "
                             f"(fit), but it was reset for n_reps={self.n_reps_}")
        return self._checked(where, check_array, "contexts", contexts, shape=(None, self.dim))

    def action_probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """``pi(k | x_i)``, shape (n, K): the probability that ``act`` plays each arm on each
        row of ``contexts`` (n, d), from the current state (no update in between, nothing
        learnt, no generator advanced), for a one-replication agent (``fit``). Defined for
        deterministic agents (``deterministic_policy``: one-hot rows) and agents that
        override ``_action_probabilities`` (``random``: uniform); others raise
        ``NotImplementedError`` (evaluate the arms of ``predict`` instead). The off-policy
        estimators accept the agent itself as the target and call this."""
        if self.n_reps_ is not None and self.n_reps_ != 1:
            raise ValueError(f"{type(self).__name__}.action_probabilities: needs a "
                             f"one-replication agent (fit), but it was reset for "
                             f"n_reps={self.n_reps_}; see "
                             "dpbandits.offpolicy.policy_probabilities")
        x = self._predict_rows("action_probabilities", contexts)
        arms = self._batch_act(x) if self.deterministic_policy else None
        if arms is not None:  # one batched call, the arms of the row-by-row acts
            out = np.zeros((x.shape[0], self.n_arms))
            out[np.arange(x.shape[0]), arms] = 1.0
            return out
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

    def _check_log(self, where: str, contexts, arms, rewards, seen: int, arm_labels: Any,
                   labels: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """The logged rows as clean arrays (arms as indices 0..K-1), no more of them than the
        horizon allows, and the arm labels in force (``None``: the arms are the indices)."""
        x = self._checked(where, check_array, "contexts", contexts, shape=(None, self.dim))
        n = x.shape[0]
        if n < 1:
            raise ValueError(f"{type(self).__name__}.{where}: contexts has no rows")
        a, labels = self._arm_indices(where, np.asarray(arms), n, arm_labels, labels)
        r = self._checked(where, check_array, "rewards", rewards, shape=(n,))
        if seen + n > self.horizon:
            raise ValueError(
                f"{type(self).__name__}.{where}: {n} rows after {seen} already seen exceed "
                f"horizon={self.horizon}, the number of rounds its noise and guarantee are "
                f"calibrated for (at most {self.horizon - seen} more); build the agent with "
                f"horizon >= {seen + n}")
        a = a.astype(np.int64)
        self._check_logged_arms(where, a, seen)
        return x.copy(), a, r.copy(), labels  # no views kept

    def _check_logged_arms(self, where: str, arms: np.ndarray, seen: int) -> None:
        """Hook of ``fit``/``partial_fit``, called before any state changes: raise
        ``ValueError`` when the algorithm cannot learn logged ``arms`` (n,) played at rounds
        ``seen + 1 .. seen + n`` (DP-HDB's forced sampling fixes some). Default: any arms."""

    @contextlib.contextmanager
    def _all_or_nothing(self):
        """``fit``/``partial_fit`` either complete or leave the agent exactly as it was
        (estimates, counters, generators, labels): the logged rows are checked first, and
        anything raised while learning them (an interrupt included) restores a copy taken
        before."""
        saved = copy.deepcopy(self.__dict__)
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def _clip_count(self) -> int | None:
        """Rows of replication 0 clipped so far: the largest of the agent's
        ``clip_counters`` (a row may count in several), or None when it declares none."""
        if not self.clip_counters:
            return None
        return max(int(np.asarray(getattr(self, name))[0].sum())
                   for name in self.clip_counters)

    def _feed_counting_clips(self, where: str, x: np.ndarray, a: np.ndarray,
                             r: np.ndarray) -> None:
        """``_feed`` the rows, then warn once (one line) when clipping changed more than
        half of them: the data are not on the scale the agent's bounds assume."""
        before = self._clip_count()
        self._feed(x, a, r)
        after = self._clip_count()
        if before is None or after is None:
            return
        clipped, n = after - before, x.shape[0]
        if 2 * clipped > n:
            bounds = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                               if "bound" in k or k.startswith("clip")) or "its bounds"
            warnings.warn(ClippingWarning(
                f"{type(self).__name__}.{where}: clipping changed {clipped} of {n} rows to the "
                f"bounds the agent is calibrated for ({bounds}); rescale the data to them, or "
                "raise them"), stacklevel=3)


    def _arm_indices(self, where: str, a: np.ndarray, n: int, arm_labels: Any,
                     labels: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Logged arms ``a`` (n,) as indices in [0, K), through ``arm_labels`` (given now),
        ``labels`` (kept from the stream's first call) or, for non-numeric arms with exactly
        K distinct values, their sorted values; returns the indices and the labels."""
        name = f"{type(self).__name__}.{where}"
        if arm_labels is not None:
            given = np.asarray(arm_labels)
            if given.shape != (self.n_arms,) or np.unique(given).size != self.n_arms:
                raise ValueError(f"{name}: arm_labels must be {self.n_arms} distinct labels "
                                 f"(one per arm, in arm order), got {arm_labels!r}")
            if labels is not None and not np.array_equal(given, labels):
                raise ValueError(f"{name}: arm_labels {arm_labels!r} differ from the labels "
                                 f"the stream started with, {labels.tolist()!r}")
            labels = given
        elif labels is None and a.shape == (n,) and a.dtype.kind in "OUS":
            found = np.unique(a)
            if found.size != self.n_arms:
                raise ValueError(f"{name}: arms are labels with {found.size} distinct values "
                                 f"({found.tolist()!r}), but the agent has n_arms="
                                 f"{self.n_arms}; give arm_labels (all {self.n_arms} labels, "
                                 "in arm order)")
            labels = found
        if labels is None:
            if a.shape != (n,) or a.dtype.kind not in "iu":
                raise ValueError(f"{name}: arms must be an integer array of shape ({n},), got "
                                 f"shape {a.shape} dtype {a.dtype} (or give arm_labels)")
            if a.min() < 0 or a.max() >= self.n_arms:
                raise ValueError(f"{name}: arms must lie in [0, {self.n_arms - 1}], got values "
                                 f"in [{a.min()}, {a.max()}] (or give arm_labels)")
            return a, None
        if a.shape != (n,):
            raise ValueError(f"{name}: arms must have shape ({n},), got shape {a.shape}")
        order = np.argsort(labels, kind="stable")
        pos = np.searchsorted(labels[order], a)
        pos = np.minimum(pos, labels.size - 1)
        found = labels[order][pos] == a
        if not found.all():
            row = int(np.flatnonzero(~found)[0])
            raise ValueError(f"{name}: arm {a[row]!r} in row {row} is not one of the arm "
                             f"labels {labels.tolist()!r}")
        return order[pos], labels

    def _feed(self, x: np.ndarray, a: np.ndarray, r: np.ndarray) -> None:
        """Learn the checked rows in order: one ``_batch_update`` call when the agent has one
        (and does not override ``update``), else one trusted update per row."""
        n = x.shape[0]
        if (type(self).update is Agent.update and self.t_ + n <= self.horizon
                and self._batch_update(x, a, r)):
            self.t_ += n
            return
        for t in range(n):
            self._update_trusted(x[t:t + 1], a[t:t + 1], r[t:t + 1])

    # hook of fit and partial_fit: one-replication state, n checked rows
    def _batch_update(self, x: np.ndarray, a: np.ndarray, r: np.ndarray) -> bool:
        """Learn rows ``x`` (n, d), arms ``a`` and rewards ``r`` (n,) in order, in one call,
        leaving every attribute (``t_`` aside, which ``_feed`` advances) exactly as ``n``
        calls of ``_update`` on one row each would (bit for bit, generators included);
        return ``True``. The default returns ``False`` without touching anything, and
        ``_feed`` loops."""
        return False

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


class PrivateAgent(Planned, Agent):
    """Base class of an agent with a privacy target ``(epsilon, delta)``.

    Stores ``epsilon`` and ``delta`` (as given) and their validated values ``_eps``,
    ``_delta`` and ``_private``: ``epsilon = inf`` is the non-private twin (no noise),
    ``delta`` defaults to ``1/horizon`` and must lie in (0, 1) for a private run. Subclasses
    compute their :class:`~dpbandits.privacy.plan.NoisePlan` from ``_eps`` and ``_delta`` in
    their own ``__init__`` (``self._plan``, by a pure function of the parameters) and draw
    their noise from its scales; ``privacy`` and ``ledger`` are the plan's.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy budget epsilon > 0 of the whole run; ``inf`` gives the non-private twin
        (same algorithm, no noise).
    delta : float or None, default None
        Privacy parameter delta in (0, 1); None means ``1 / horizon``.
    """

    def __init__(self, *, n_arms: int, dim: int, horizon: int, epsilon: float = 1.0,
                 delta: float | None = None):
        super().__init__(n_arms=n_arms, dim=dim, horizon=horizon)
        self.epsilon = epsilon
        self.delta = delta
        self._eps = check_epsilon(epsilon)
        self._private = math.isfinite(self._eps)
        self._delta = 1.0 / horizon if delta is None else check_delta(delta)
        if self._private and delta is None and horizon == 1:
            raise ValueError(f"{type(self).__name__}: delta defaults to 1/horizon, which is 1 "
                             "at horizon=1 and gives no guarantee; pass delta in (0, 1) "
                             "explicitly (e.g. delta=1e-6) for a private run of one round")
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


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def make_agent(name: str, **params: Any) -> Agent:
    """Build a registered agent by name; an unknown name or parameter raises an error with
    the closest match and the accepted ones."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}{_did_you_mean(name, _REGISTRY)}; registered "
                         f"agents: {sorted(_REGISTRY)}")
    cls = _REGISTRY[name]
    accepted = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        names = [k for k, p in accepted.items() if k != "self" and p.kind is not p.VAR_POSITIONAL]
        for key in params:
            if key not in names:
                raise TypeError(f"agent {name!r} has no parameter {key!r}"
                                f"{_did_you_mean(key, names)}; its parameters: {names}")
    return cls(**params)


def available_agents() -> list[str]:
    """Names accepted by ``make_agent``."""
    return sorted(_REGISTRY)


def agent_class(name: str) -> type[Agent]:
    """The class registered under ``name``."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}{_did_you_mean(name, _REGISTRY)}; registered "
                         f"agents: {sorted(_REGISTRY)}")
    return _REGISTRY[name]

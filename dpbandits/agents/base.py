"""The agent contract (DESIGN.md, "Agent") and the name registry.

An agent is batched over ``R`` independent replications: ``act`` maps contexts of shape
``(R, d)`` to arms ``(R,)`` and ``update`` learns from the round just played. Problem sizes
(``n_arms``, ``dim``, ``horizon``) and hyper-parameters are keyword arguments of ``__init__``,
stored unchanged and validated there (scikit-learn style).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from dpbandits._validation import check_array, check_int, check_rng
from dpbandits.privacy.guarantee import PrivacyGuarantee


class Agent(ABC):
    """Base class of every bandit agent.

    Subclasses implement ``_reset``, ``act``, ``_update`` and ``privacy``; the base class
    checks shapes and values at the boundary so the subclasses can assume clean arrays.
    """

    #: registry name, set by ``register_agent``
    name: str = ""

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
        x = self._check_contexts(contexts)
        a = self._check_arms(arms)
        r = check_array("rewards", rewards, shape=(self.n_reps_,))
        if self.t_ >= self.horizon:
            raise ValueError(f"update called more than horizon={self.horizon} times")
        self._update(x, a, r)
        self.t_ += 1

    @abstractmethod
    def _update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None: ...

    @property
    @abstractmethod
    def privacy(self) -> PrivacyGuarantee | None:
        """The agent's guarantee; ``None`` only for agents that are not private at all."""

    @property
    def ledger(self):
        """dp_accounting event of the agent's noise (None for non-private agents)."""
        return None

    def get_params(self) -> dict:
        """Constructor arguments as given (scikit-learn style)."""
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {k: getattr(self, k) for k in sig.parameters if k != "self" and hasattr(self, k)}

    # -- boundary checks -------------------------------------------------------------------
    def _require_reset(self) -> int:
        if self.n_reps_ is None:
            raise RuntimeError(f"{type(self).__name__}: call reset(n_reps, rng) first")
        return self.n_reps_

    def _check_contexts(self, contexts) -> np.ndarray:
        r = self._require_reset()
        return check_array("contexts", contexts, shape=(r, self.dim))

    def _check_arms(self, arms) -> np.ndarray:
        r = self._require_reset()
        a = np.asarray(arms)
        if a.shape != (r,) or a.dtype.kind not in "iu":
            raise ValueError(f"arms must be an integer array of shape ({r},), got "
                             f"shape {a.shape} dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() >= self.n_arms):
            raise ValueError(f"arms must lie in [0, {self.n_arms - 1}], got values in "
                             f"[{a.min()}, {a.max()}]")
        return a.astype(np.int64, copy=False)


_REGISTRY: dict[str, type[Agent]] = {}


def register_agent(name: str) -> Callable[[type[Agent]], type[Agent]]:
    """Class decorator: make ``cls`` constructible as ``make_agent(name, **params)``."""

    def deco(cls: type[Agent]) -> type[Agent]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"agent name {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def make_agent(name: str, **params) -> Agent:
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

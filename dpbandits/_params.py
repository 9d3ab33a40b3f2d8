"""Constructor parameters, scikit-learn style, for agents and optimizers alike.

``__init__`` stores every argument unchanged under its own name and validates it; the
component then calibrates its noise from the validated values. ``Parameterized`` adds
``get_params``, ``clone`` and ``set_params``, and makes the stored parameters read-only once
the most-derived ``__init__`` has returned: assigning ``epsilon`` afterwards would leave the
noise calibrated for the old value while ``get_params`` reported the new one.
"""

from __future__ import annotations

import difflib
import inspect
from abc import ABCMeta
from numbers import Real
from typing import Any, Self

import numpy as np


class _FreezeAfterInit(ABCMeta):
    """Freezes the constructor parameters once the most-derived ``__init__`` has returned."""

    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        object.__setattr__(obj, "_frozen_params", frozenset(cls._init_param_names()))
        return obj

    @property
    def __signature__(cls) -> inspect.Signature:
        """The constructor's signature, which ``__call__`` above would hide from ``help``,
        ``inspect.signature`` and the API reference."""
        sig = inspect.signature(cls.__init__)  # type: ignore[misc]  # cls is a class here
        return sig.replace(parameters=list(sig.parameters.values())[1:],
                           return_annotation=inspect.Signature.empty)


class Parameterized(metaclass=_FreezeAfterInit):
    """Base of every component with constructor parameters (agents, optimizers)."""

    @classmethod
    def _init_param_names(cls) -> list[str]:
        """Names of the keyword-capable parameters of ``__init__``."""
        sig = inspect.signature(cls.__init__)
        return [k for k, p in sig.parameters.items() if k != "self" and p.kind in (
            p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments as given (the objects themselves, as scikit-learn's
        ``clone`` requires). ``deep=True`` adds, for a parameter that is itself a component
        with ``get_params``, its parameters under ``name__param`` (scikit-learn's rule)."""
        out = {k: getattr(self, k) for k in self._init_param_names() if hasattr(self, k)}
        if deep:
            for key, value in list(out.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
        return out

    def __setattr__(self, key: str, value: Any) -> None:
        if key in self.__dict__.get("_frozen_params", ()):
            raise AttributeError(
                f"{type(self).__name__}.{key} is fixed at construction (noise and constants "
                f"are calibrated from it in __init__); use .set_params({key}=...) to re-build "
                f"it, or .clone({key}=...) for a new one")
        super().__setattr__(key, value)

    def _merged_params(self, changes: dict[str, Any]) -> dict[str, Any]:
        known = self._init_param_names()
        for key in changes:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"{type(self).__name__} has no parameter {key!r}{hint} "
                                 f"(parameters: {', '.join(known)})")
        return {**self.get_params(deep=False), **changes}

    def clone(self, **changes: Any) -> Self:
        """A new, unreset instance with the same parameters except ``changes``."""
        return type(self)(**self._merged_params(changes))

    def set_params(self, **changes: Any) -> Self:
        """Re-build in place with ``changes`` applied (every constant re-calibrated, the
        guarantee re-derived); returns ``self``, which must be reset before use. Validation
        comes first: on an error nothing changes. A call that changes nothing (no argument,
        or every value the one already set) keeps the agent as it is, fitted state
        included."""
        merged = self._merged_params(changes)
        fresh = type(self)(**merged)  # validated first, even when nothing changes
        current = self.get_params(deep=False)
        if all(key in current and _same(current[key], value) for key, value in changes.items()):
            return self
        object.__setattr__(self, "_frozen_params", frozenset())
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)
        return self


def _same(a: Any, b: Any) -> bool:
    """Whether ``b`` is ``a`` or an equal value: of the same type, or both real numbers
    (``1`` and ``1.0``; booleans only equal booleans); arrays element-wise."""
    if a is b:
        return True
    numbers = all(isinstance(v, Real) and not isinstance(v, bool | np.bool_) for v in (a, b))
    if type(a) is not type(b) and not numbers:
        return False
    try:
        return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) else bool(a == b)
    except (TypeError, ValueError):  # no single truth value: not known to be equal
        return False

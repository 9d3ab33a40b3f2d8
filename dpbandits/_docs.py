"""Docstring sections that several public classes share, written once (numpydoc): a class
decorator adds each to the class's ``__doc__``, which the API reference and ``describe`` read.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T", bound=type)

#: the errors every constructor raises on a bad parameter
_PARAMETER_ERRORS = """
    Raises
    ------
    ValueError
        A parameter out of its range; the message names it, its value and what is allowed.
    TypeError
        A parameter of the wrong type.
"""

#: the privacy target of a batch optimizer's whole run
_PRIVACY_TARGET = """    epsilon : float
        Target epsilon > 0 of the whole run; ``inf``: no noise.
    delta : float or None
        Target delta in (0, 1) (may be None only when ``epsilon = inf``).
"""

_RULE = "    Parameters\n    ----------\n"


def raises_parameter_errors(cls: T) -> T:
    """Append the Raises section of a constructor's parameter errors to ``cls``'s docstring."""
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n" + _PARAMETER_ERRORS
    return cls


def privacy_target_parameters(cls: T) -> T:
    """Put ``epsilon`` and ``delta`` (the whole run's target) first in ``cls``'s Parameters
    section."""
    doc = cls.__doc__ or ""
    if _RULE not in doc:
        raise ValueError(f"{cls.__name__}'s docstring has no Parameters section")
    cls.__doc__ = doc.replace(_RULE, _RULE + _PRIVACY_TARGET, 1)
    return cls

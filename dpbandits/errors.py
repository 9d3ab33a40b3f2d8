"""Errors that are the user's, not dpbandits': the command line prints their message as one
line and exits with status 2 (anything else raised after validation is reported as a bug).

Every subclass also derives from the built-in exception a Python caller would expect
(``ValueError``, ``ModuleNotFoundError``), so ``except ValueError`` keeps working.
The message names the culprit (file, parameter, agent, round), the value and the way out.
"""

from __future__ import annotations

__all__ = ["AgentFault", "ClippingWarning", "MissingExtraError", "UserError",
           "missing_dataset_extra"]


class ClippingWarning(UserWarning):
    """Most rows given to ``fit`` (an agent) or ``estimate`` (a private estimator) were
    clipped to the bounds it is calibrated for: the data are not on the scale those bounds
    assume (a warning, not an error: the result is still private, only biased)."""


class UserError(Exception):
    """Base of the errors caused by what the user gave (a file, a plugin, a setting)."""


class MissingExtraError(UserError, ModuleNotFoundError):
    """A feature needs an optional dependency group that is not installed; the message
    names it (``pip install 'dpbandits[<extra>]'``)."""


class AgentFault(UserError, ValueError):
    """A user's agent (a plugin, not a built-in) failed inside ``reset``, ``act`` or
    ``update``: the message names the agent, where it is defined, the round and the error
    (chained as the cause). A ``ValueError``: the agent given is not a working agent."""


def missing_dataset_extra(dataset: str) -> MissingExtraError:
    """The error of a dataset read from scikit-learn when scikit-learn is not installed
    (raised by the loader, and printed by ``dpbandits list`` for the dataset's id)."""
    return MissingExtraError(
        f"dataset {dataset!r} is read from scikit-learn's bundled copy, and scikit-learn is "
        "not installed: install the optional extra with pip install 'dpbandits[datasets]' "
        "(or pass your own X and y)")

"""Blame for a failure inside an agent: a user's agent (a plugin, a class of the user's own
code) that raises in ``reset``, ``act`` or ``update`` is reported as
:class:`dpbandits.errors.AgentFault` naming the agent, where it is defined and the round; a
failure inside a built-in agent is left as it is (a bug in dpbandits)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager

from dpbandits.errors import AgentFault


def is_builtin(agent: object) -> bool:
    """Whether ``agent`` (an instance or a class) is defined inside the dpbandits package."""
    module = (agent if isinstance(agent, type) else type(agent)).__module__ or ""
    return module == "dpbandits" or module.startswith("dpbandits.")


def defined_in(cls: type) -> str:
    """``Class (path/to/file.py)`` or ``module.Class`` where the file is unknown."""
    try:
        return f"{cls.__qualname__} ({inspect.getfile(cls)})"
    except (TypeError, OSError):
        return f"{cls.__module__}.{cls.__qualname__}"


def blame_agent(agent: object, label: str, method: str, round_: int | None, horizon: int,
                exc: BaseException) -> None:
    """Raise ``AgentFault`` (chained to ``exc``) if ``agent`` is a user's; else return, and
    the caller re-raises ``exc``. ``round_`` is 0-based (None: before the first round)."""
    if is_builtin(agent) or isinstance(exc, AgentFault):
        return
    when = "before the first round" if round_ is None else f"at round {round_ + 1} of {horizon}"
    text = str(exc).strip()
    detail = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
    raise AgentFault(f"agent {label!r}, {defined_in(type(agent))}, failed in {method}() {when}: "
                     f"{detail}") from exc


@contextmanager
def blamed(agent: object, label: str, method: str, round_: int | None, horizon: int
           ) -> Iterator[None]:
    """Run the block, an agent's ``method`` at ``round_``: an exception it raises goes
    through :func:`blame_agent` (a user's agent: ``AgentFault``), else is re-raised."""
    try:
        yield
    except Exception as exc:
        blame_agent(agent, label, method, round_, horizon, exc)
        raise

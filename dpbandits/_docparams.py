"""The ``Parameters`` section of numpydoc docstrings, read without numpydoc.

One source of truth for what a constructor parameter means: the class docstring's
``Parameters`` section (numpydoc, the convention of scikit-learn) is rendered by the API
reference and printed by ``dpbandits describe``. A parameter a class does not describe
itself is described by the nearest base class that does (``n_arms``, ``epsilon``, ...
once, on :class:`~dpbandits.agents.Agent` and :class:`~dpbandits.agents.PrivateAgent`).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

__all__ = ["ParamDoc", "constructor_parameters", "inherited_entries", "inherited_section",
           "parameter_docs", "parse_parameters", "plain_text"]

#: a numpydoc section heading: a title line underlined by dashes
_HEADING = re.compile(r"^(\S[^\n]*)\n-{3,}[ \t]*$", re.M)
#: an entry line: one or more names, then optionally `` : type``
#: reST inline markup: a role (``:class:`~a.B```, ``:func:`text <a.f>```) or literal
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(?:([^`<]*?)\s*<[^`>]+>|~?([^`]+))`")
_LITERAL = re.compile(r"``([^`]+)``")
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::\s*(.*))?$")


@dataclass(frozen=True)
class ParamDoc:
    """One documented parameter: its type line (``float, default 1.0``; may be empty) and
    its description (the indented paragraph under it, on one line)."""

    type: str
    description: str


def _section(doc: str, title: str) -> str | None:
    """The body of section ``title`` of a (dedented) numpydoc docstring, or None."""
    heads = list(_HEADING.finditer(doc))
    for i, head in enumerate(heads):
        if head.group(1).strip() == title:
            end = heads[i + 1].start() if i + 1 < len(heads) else len(doc)
            return doc[head.end():end]
    return None


def parse_parameters(doc: str | None) -> dict[str, ParamDoc]:
    """Name -> :class:`ParamDoc` of every entry of the ``Parameters`` section of ``doc``
    (a docstring, dedented or not). ``a, b : int`` documents both names with one text."""
    if not isinstance(doc, str):  # a __doc__ slot, a class without docstring
        return {}
    body = _section(inspect.cleandoc(doc), "Parameters")
    out: dict[str, ParamDoc] = {}
    if body is None:
        return out
    names: list[str] = []
    kind, text = "", []

    def flush() -> None:
        for name in names:
            out[name.lstrip("*")] = ParamDoc(kind, " ".join(" ".join(text).split()))

    for line in body.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            if names:
                text.append(line.strip())
            continue
        flush()  # an entry line, or prose after the entries (not part of the last one)
        match = _ENTRY.match(line)
        names = [n.strip() for n in match.group(1).split(",")] if match else []
        kind, text = ((match.group(2) or "").strip() if match else ""), []
    flush()
    return out


def constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """The parameters of ``cls.__init__`` a caller names (not ``self``, ``*args``,
    ``**kwargs``)."""
    init = cls.__dict__.get("__init__") or getattr(cls, "__init__", None)
    try:
        sig = inspect.signature(init) if init is not None else None
    except (TypeError, ValueError):
        return []
    if sig is None:
        return []
    return [p for name, p in sig.parameters.items() if name != "self"
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def parameter_docs(cls: type) -> dict[str, ParamDoc]:
    """Every constructor parameter ``cls`` or one of its bases documents, nearest first:
    the class docstring's ``Parameters`` section, else its ``__init__``'s, else a base's."""
    out: dict[str, ParamDoc] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        init = klass.__dict__.get("__init__")
        out.update(parse_parameters(getattr(init, "__doc__", None)))
        out.update(parse_parameters(klass.__dict__.get("__doc__")))
    return out


def inherited_entries(cls: type) -> list[str]:
    """numpydoc entries (lines) for the constructor parameters of ``cls`` that its own
    docstring leaves to a base class, in signature order: appended to its ``Parameters``
    section on the site so that every class's page lists all of its parameters."""
    own = parse_parameters(cls.__dict__.get("__doc__"))
    own.update(parse_parameters(getattr(cls.__dict__.get("__init__"), "__doc__", None)))
    docs = parameter_docs(cls)
    lines: list[str] = []
    for par in constructor_parameters(cls):
        if par.name in own or par.name not in docs:
            continue
        entry = docs[par.name]
        lines.append(f"{par.name} : {entry.type}" if entry.type else par.name)
        lines.append(f"    {entry.description}")
    return lines


def plain_text(text: str) -> str:
    """``text`` without reST markup, for a terminal: ``x`` -> x, :class:`~a.B` -> B,
    :func:`the rule <a.f>` -> the rule."""
    def role(match: re.Match) -> str:
        if match.group(1) is not None:
            return match.group(1)
        target = match.group(2)
        return target.rsplit(".", 1)[-1] if match.group(0).split("`")[1].startswith("~") \
            else target

    return _LITERAL.sub(r"\1", _ROLE.sub(role, text))


def inherited_section(cls: type, title: str) -> list[str] | None:
    """The body (lines) of section ``title`` (``"Raises"``) of the nearest base class that
    has one, when ``cls``'s own docstring has none; else None. The site adds it to the
    class's page: the errors every agent raises are described once, on the base class."""
    if _section(inspect.cleandoc(cls.__dict__.get("__doc__") or ""), title) is not None:
        return None
    for klass in cls.__mro__[1:]:
        doc = klass.__dict__.get("__doc__")
        body = _section(inspect.cleandoc(doc), title) if isinstance(doc, str) else None
        if body is not None:
            return body.strip("\n").splitlines()
    return None

"""Every constructor parameter of every public class is documented, numpydoc style, where
users look: the class's ``Parameters`` section (the API reference renders it, ``dpbandits
describe`` prints it). Introspection only: no Sphinx build."""

from __future__ import annotations

import importlib
import inspect

import pytest

from dpbandits._docparams import constructor_parameters, parameter_docs, parse_parameters
from dpbandits.agents import agent_class, available_agents

#: the packages whose ``__all__`` users construct from: agents, optimizers, environments,
#: off-policy estimators and the harness
PACKAGES = ("dpbandits.agents", "dpbandits.optim", "dpbandits.envs", "dpbandits.offpolicy",
            "dpbandits.harness")


def _public_classes() -> list[type]:
    from dpbandits.harness.faults import is_builtin

    seen: dict[int, type] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and not issubclass(obj, BaseException):
                seen.setdefault(id(obj), obj)
    for name in available_agents():
        cls = agent_class(name)
        if is_builtin(cls):  # not a plugin another test left registered
            seen.setdefault(id(cls), cls)
    return sorted(seen.values(), key=lambda c: f"{c.__module__}.{c.__qualname__}")


#: dp-moment-ls's seven research options, measured and not kept: they move to
#: experiments/certified_learning (issue 35), so they are not documented on the agent
_LEAVING = {"MomentLS": {"thompson", "fit_first", "lasso", "marginal_below", "no_screen_below",
                         "no_screen_episodes", "play_top"}}


@pytest.mark.parametrize("cls", _public_classes(), ids=lambda c: c.__qualname__)
def test_every_constructor_parameter_is_documented(cls):
    docs = parameter_docs(cls)
    leaving = _LEAVING.get(cls.__qualname__, set())
    missing = [p.name for p in constructor_parameters(cls) if p.name not in leaving
               and (p.name not in docs or not docs[p.name].description)]
    assert not missing, f"{cls.__qualname__}: no Parameters entry for {missing}"
    # a parameter with a default says which: ``name : type, default X`` (or ``optional``)
    silent = [p.name for p in constructor_parameters(cls) if p.default is not p.empty
              and p.name not in leaving
              and not any(w in docs[p.name].type for w in ("default", "optional"))]
    assert not silent, f"{cls.__qualname__}: the type line of {silent} states no default"


def test_signature_of_a_parameterized_class_is_its_constructor():
    """The metaclass that freezes parameters wraps ``__call__``; the signature users see
    (``help``, the API reference, IDEs) must still be the constructor's."""
    cls = agent_class("dp-hdb")
    names = list(inspect.signature(cls).parameters)
    assert names[:3] == ["n_arms", "dim", "horizon"] and "epsilon" in names


def test_parser_reads_numpydoc_entries():
    doc = """Summary.

    Parameters
    ----------
    a, b : int, default 2
        Two names,
        one text.
    c
        No type.
    d : float

    Returns
    -------
    x : int
        Not a parameter.
    """
    got = parse_parameters(doc)
    assert set(got) == {"a", "b", "c", "d"}
    assert got["a"].type == "int, default 2" and got["b"].description == "Two names, one text."
    assert got["c"].type == "" and got["c"].description == "No type."
    assert got["d"].description == ""  # an entry without a description is caught above
    after = parse_parameters("""S.

    Parameters
    ----------
    a : int
        Text.

    Prose after the entries, not part of ``a``.
    """)
    assert after["a"].description == "Text."


# -- dpbandits describe ------------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in available_agents()
                                  if n in {"adac-oful", "dp-budget-ls", "dp-hdb",
                                           "dp-hdb-authors-code",
                                           "dp-moment-ls", "dp-screened-ls", "dp-ucb",
                                           "dp-ucb-authors-code", "fliphat", "greedy",
                                           "ldp-linucb", "linucb", "random"}])
def test_describe_gives_every_parameter_a_meaning(name):
    from dpbandits.harness.catalogue import parameter_lines

    cls = agent_class(name)
    lines = parameter_lines(cls)
    leaving = _LEAVING.get(cls.__qualname__, set())
    for par in constructor_parameters(cls):
        i = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [par.name])
        meaning = lines[i + 1]
        assert meaning.startswith(" " * 6) and meaning.strip(), (name, par.name)
        if par.name not in leaving:
            assert meaning.strip() != "(not documented)", (name, par.name)
            assert "``" not in meaning and ":class:" not in meaning  # plain text, no reST


def test_describe_says_what_a_none_default_means():
    from dpbandits.harness.catalogue import parameter_lines

    lines = parameter_lines(agent_class("dp-ucb"))
    i = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["delta"])
    assert lines[i].split()[1] == "None" and "None means 1 / horizon" in lines[i + 1]


def test_describe_unknown_agent_suggests_the_closest_name(capsys):
    from dpbandits.cli import main

    assert main(["describe", "dp-hbd"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown agent 'dp-hbd'" in err[0]
    assert "did you mean 'dp-hdb'" in err[0]


@pytest.mark.parametrize("name", ["simulate", "compare", "sweep"])
def test_the_harness_entry_points_document_parameters_returns_and_raises(name):
    import dpbandits.harness as harness

    func = getattr(harness, name)
    docs = parse_parameters(func.__doc__)
    params = [p for p in inspect.signature(func).parameters.values()
              if not p.name.startswith("_")]
    missing = [p.name for p in params if p.name not in docs or not docs[p.name].description]
    assert not missing, f"{name}: no Parameters entry for {missing}"
    text = inspect.cleandoc(func.__doc__)
    assert "\nReturns\n-------\n" in text and "\nRaises\n------\n" in text

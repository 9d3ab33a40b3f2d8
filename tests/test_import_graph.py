"""The import graph of dpbandits: no cycles and no upward imports (docs/architecture.md).

Every ``import`` statement counts, at module level or inside a function (a lazy import
still makes each module need the other; the two circles issue 35 found ran through lazy
imports), except those under ``if TYPE_CHECKING:``, which never run. ``from a import b``
is an edge to the module ``a.b`` when it is one, else to ``a``; importing a submodule is
not an edge to its package's ``__init__`` (an edge to the package is only a ``from
package import name`` of a name the ``__init__`` defines or re-exports)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "dpbandits"

#: the layers of docs/architecture.md, lowest first: a module may import its own layer or
#: lower ones. The private helpers at the top of the package (``_validation``, ``errors``,
#: ``_params``, ...) and ``testing`` are shared by every layer and are not ranked.
LAYERS = {"privacy": 0, "geometry": 1, "losses": 1, "optim": 2, "bo": 2, "envs": 2,
          "agents": 2, "offpolicy": 2, "datasets": 2, "harness": 3, "plugins": 3, "cli": 4,
          "audits": 4}
#: ``plugins`` (user components loaded by name) sits beside the harness, which loads them.
#: Known exceptions, each with its reason: the check of what one user adds to a release
#: (a test hook, not a mechanism) measures rows with the scaled l_p norm of ``geometry``.
ALLOWED = {"dpbandits.privacy.contributions -> dpbandits.geometry"}
#: within the third layer, what the document orders: ``offpolicy`` and ``datasets`` are
#: above ``envs`` (the reverse import is upward)
ABOVE = {"envs": {"offpolicy", "datasets"}}


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, name: str, is_package: bool, modules) -> set[str]:
    """The dpbandits modules the module ``name`` imports (module doc for what counts)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(ast.parse(path.read_text()), name, path.name == "__init__.py",
                           modules)
            for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_the_graph_sees_lazy_imports_and_finds_a_circle():
    """The checker itself: a function-level import closes a circle, a TYPE_CHECKING one
    does not, relative imports resolve."""
    modules = {"p", "p.a", "p.b", "p.c"}
    a = ast.parse("from p.b import f\n")
    b = ast.parse("def g():\n    from . import a\n")
    c = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import x\n")
    graph = {"p": set(), "p.a": _imports(a, "p.a", False, modules),
             "p.b": _imports(b, "p.b", False, modules),
             "p.c": _imports(c, "p.c", False, modules)}
    assert graph["p.b"] == {"p.a"} and graph["p.c"] == set()
    assert _cycles(graph) == [["p.a", "p.b"]]


def test_no_import_cycle_inside_dpbandits():
    graph = _graph()
    assert len(graph) > 100 and "dpbandits.harness.listing" in graph
    assert _cycles(graph) == [], "import cycles (each a set of modules importing each other)"


def test_no_upward_import():
    """No module imports a layer above its own (docs/architecture.md)."""
    upward = []
    for module, targets in _graph().items():
        src = _layer(module)
        for target in targets:
            dst = _layer(target)
            if src and dst and (LAYERS[dst] > LAYERS[src] or dst in ABOVE.get(src, ())):
                upward.append(f"{module} -> {target}")
    assert sorted(set(upward) - ALLOWED) == []
    assert ALLOWED <= set(upward), "an allowed exception is gone: remove it from ALLOWED"

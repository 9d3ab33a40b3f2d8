"""Every public function and method of dpbandits has type hints.

Checked: module-level functions and methods of module-level classes whose own name does not
start with ``_`` (``__init__`` included; methods of a private class too, since a private base
class carries public methods of its public subclasses), in every module whose name does not
start with ``_`` plus the shared ``_validation`` and ``_params`` modules. Each parameter
other than ``self``/``cls`` needs an annotation (``*args``/``**kwargs`` included) and each
function other than ``__init__`` a return annotation. The check reads the source (AST): it
imports nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpbandits"

# Private modules checked anyway: the argument checks and parameter storage every layer uses.
CHECKED_PRIVATE = {"_validation.py", "_params.py"}

# Files other work was rewriting when this check was added (speed work: the DP-UCB kernels,
# the authors'-code and reference agents, FLIPHAT, the tree and mechanisms, the
# environments, simulate; a new agent: screened least squares and its audit). Annotating them
# then would have collided with those edits. Remove an entry once its file is annotated; the
# private modules of that work (agents/_ucb_kernels.py, agents/_niht.py, _lapack.py) are not
# checked in any case.
EXEMPT = {
    "agents/dp_ucb.py",
    "agents/authors_code.py",
    "agents/references.py",
    "agents/fliphat.py",
    "harness/simulate.py",
    "privacy/tree.py",
    "privacy/mechanisms.py",
    "privacy/streams.py",
}
EXEMPT_DIRS = {"envs"}  # dpbandits/envs/**, same reason

# Numba-compiled kernels: numba infers its own types when it compiles; Python annotations on
# them are neither checked nor used.
NUMBA_DECORATORS = {"njit", "jit", "vectorize", "guvectorize", "generated_jit"}

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _checked_files() -> list[Path]:
    files = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in EXEMPT or rel.split("/")[0] in EXEMPT_DIRS:
            continue
        private = path.name.startswith("_") and path.name != "__init__.py"
        if private and path.name not in CHECKED_PRIVATE:
            continue
        files.append(path)
    return files


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _public_functions(tree: ast.Module) -> Iterator[tuple[Function, bool]]:
    """``(function, is_method)`` for the public module-level functions and methods."""
    for node in tree.body:
        if isinstance(node, Function) and not node.name.startswith("_"):
            yield node, False
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, Function) and (
                    item.name == "__init__" or not item.name.startswith("_")
                ):
                    yield item, True


def _problems(func: Function, is_method: bool) -> list[str]:
    if any(_decorator_name(d) in NUMBA_DECORATORS for d in func.decorator_list):
        return []
    args = func.args
    positional = args.posonlyargs + args.args
    static = any(_decorator_name(d) == "staticmethod" for d in func.decorator_list)
    if is_method and not static and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    params = positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    problems = [f"parameter {a.arg!r} has no annotation" for a in params if a.annotation is None]
    if func.returns is None and func.name != "__init__":
        problems.append("no return annotation")
    return problems


def _violations(source: str, name: str) -> list[str]:
    return [f"{name}:{func.lineno}:{func.name}: {problem}"
            for func, is_method in _public_functions(ast.parse(source, filename=name))
            for problem in _problems(func, is_method)]


def test_public_functions_are_annotated():
    failures = []
    for path in _checked_files():
        failures += _violations(path.read_text(), path.relative_to(PACKAGE.parent).as_posix())
    assert not failures, "public functions without type hints:\n" + "\n".join(failures)


def test_the_check_finds_what_it_must_and_only_that():
    source = '''
def f(x, *args: int, y: int = 1, **kw):
    pass
def g(a: int) -> int:
    return a
def _private(a):
    pass
@numba.njit(cache=True)
def kernel(a, b):
    pass
class _Base:
    def __init__(self, a):
        pass
    def method(self, b) -> None:
        pass
    @staticmethod
    def build(self):
        pass
    @classmethod
    def make(cls) -> _Base:
        pass
    def _hook(self, c):
        pass
'''
    assert _violations(source, "m.py") == [
        "m.py:2:f: parameter 'x' has no annotation",
        "m.py:2:f: parameter 'kw' has no annotation",
        "m.py:2:f: no return annotation",
        "m.py:12:__init__: parameter 'a' has no annotation",
        "m.py:14:method: parameter 'b' has no annotation",
        "m.py:17:build: parameter 'self' has no annotation",
        "m.py:17:build: no return annotation",
    ]


def test_exemptions_name_existing_files():
    # a stale entry (file moved or deleted) would silently exempt nothing: drop it instead
    for rel in EXEMPT:
        assert (PACKAGE / rel).is_file(), f"exempt file dpbandits/{rel} no longer exists"
    for rel in EXEMPT_DIRS:
        assert (PACKAGE / rel).is_dir(), f"exempt directory dpbandits/{rel} no longer exists"
    for name in CHECKED_PRIVATE:
        assert (PACKAGE / name).is_file(), f"dpbandits/{name} no longer exists"

"""``import dp_accounting`` without its accountants until one is used.

dp_accounting's package ``__init__`` imports both accountants (PLD and RDP) and with them
scipy.stats, scipy.signal and scipy.special: about 1-3 s and 55-70 MB resident on the
development machine, paid by every ``dpbandits list`` and by every simulation, although most of
them only build ledgers (``DpEvent`` objects, plain ``attr`` classes in
``dp_accounting.dp_event``) and read their noise searches' numbers from the store.

:func:`install` (called once by ``import dpbandits``, before any dpbandits module imports
dp_accounting) puts a :class:`LazyPackage` under the name ``dp_accounting`` in ``sys.modules``
when dp_accounting is not imported yet. It is the real package -- same ``__spec__``,
``__path__`` and files -- whose ``__init__`` has not run yet:

* the event classes the real ``__init__`` binds from ``dp_accounting.dp_event`` (read from
  its source) are package attributes (``dp_accounting.GaussianDpEvent``), taken from
  ``dp_event`` when first named;
* a submodule (``dp_accounting.pld``, ``dp_accounting.rdp``, ...) is imported by the normal
  import system when first named;
* any other attribute (``NeighboringRelation``, ``calibrate_dp_mechanism``, ...) runs the real
  ``__init__`` in the package's namespace first, so the package is then exactly what a plain
  ``import dp_accounting`` gives.

Every object is the one the real package holds (same modules, same classes), so events pickle,
compare and are dispatched on by the accountants as usual. Nothing here changes a number.
``DPBANDITS_LAZY_ACCOUNTING=0`` turns the laziness off (a plain import).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
import threading
from types import ModuleType

__all__ = ["LazyPackage", "install"]

NAME = "dp_accounting"


class LazyPackage(ModuleType):
    """dp_accounting before its ``__init__`` ran: see the module docstring."""

    def __getattr__(self, name: str):
        # only called for names not yet in the namespace
        if name.startswith("__"):
            raise AttributeError(name)
        if _is_submodule(self, name):
            return importlib.import_module(f"{NAME}.{name}")
        if name in _names_from_dp_event(self.__spec__.origin):
            value = getattr(importlib.import_module(f"{NAME}.dp_event"), name)
            setattr(self, name, value)
            return value
        _run_init(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {NAME!r} has no attribute {name!r}") from None


_LOCK = threading.RLock()


def _is_submodule(package: ModuleType, name: str) -> bool:
    for folder in getattr(package, "__path__", ()):
        if (os.path.isfile(os.path.join(folder, name + ".py"))
                or os.path.isfile(os.path.join(folder, name, "__init__.py"))):
            return True
    return False


def _run_init(package: ModuleType) -> None:
    """Run dp_accounting's real ``__init__`` in ``package``'s namespace (once)."""
    with _LOCK:
        if package.__dict__.get("_dpbandits_initialized"):
            return
        package.__dict__["_dpbandits_initialized"] = True
        package.__spec__.loader.exec_module(package)


def install() -> None:
    """Make the next ``import dp_accounting`` lazy (no-op if it is imported already, if it is
    not installed, or if ``DPBANDITS_LAZY_ACCOUNTING=0``)."""
    if NAME in sys.modules or os.environ.get("DPBANDITS_LAZY_ACCOUNTING", "1") == "0":
        return
    spec = importlib.util.find_spec(NAME)
    if spec is None or spec.submodule_search_locations is None:  # pragma: no cover
        return
    package = LazyPackage(NAME, "DP Accounting package.")
    package.__spec__ = spec
    package.__loader__ = spec.loader
    package.__file__ = spec.origin
    package.__path__ = list(spec.submodule_search_locations)
    package.__package__ = NAME
    sys.modules[NAME] = package


@functools.cache
def _names_from_dp_event(init_file: str) -> frozenset[str]:
    """The names the real ``__init__`` binds with ``from dp_accounting.dp_event import ...``
    (read from its source, so the lazy package exposes exactly those)."""
    import ast

    with open(init_file, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    return frozenset(alias.asname or alias.name for node in tree.body
                     if isinstance(node, ast.ImportFrom) and node.module == f"{NAME}.dp_event"
                     for alias in node.names if alias.name != "*")

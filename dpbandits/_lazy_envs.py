"""The ``dpbandits/...`` Gymnasium ids, registered when Gymnasium is imported, not before.

``import dpbandits`` promises that ``gymnasium.make("dpbandits/Figure5.1-v0")`` works. Importing
Gymnasium (and numpy with it) to register the ids up front costs about 0.2 s, which
``dpbandits --help`` would pay for nothing. :func:`register_when_imported` registers them at
once if Gymnasium is already imported, and otherwise when Gymnasium's own import completes:
a finder at the front of ``sys.meta_path`` wraps Gymnasium's loader so that, right after the
package has executed, :mod:`dpbandits.envs` is imported (which registers the ids); the finder
removes itself on first use. Either way no one can reach ``gymnasium.make`` before the ids
are registered. Every dpbandits module that builds an environment imports
:mod:`dpbandits.envs` itself.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["register_when_imported"]

GYMNASIUM = "gymnasium"


class _RegisteringLoader(importlib.abc.Loader):
    """Gymnasium's own loader, followed by the registration of the dpbandits ids."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        importlib.import_module("dpbandits.envs")  # registers the ids

    def __getattr__(self, name):  # resource readers and the like: Gymnasium's loader's
        return getattr(self._loader, name)


class _GymnasiumFinder(importlib.abc.MetaPathFinder):
    """Finds Gymnasium with the other finders and wraps its loader (once)."""

    def find_spec(self, name, path=None, target=None):
        if name != GYMNASIUM:
            return None
        _remove_finder()
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:  # pragma: no cover - a dependency
            return spec
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


def _remove_finder() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _GymnasiumFinder)]


def register_when_imported() -> None:
    """Register the ids now if Gymnasium is imported, else right after it is (idempotent)."""
    if GYMNASIUM in sys.modules:
        importlib.import_module("dpbandits.envs")
    elif not any(isinstance(f, _GymnasiumFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _GymnasiumFinder())

"""User plugins: modules or files that register agents (``register_agent``) or environments
(``gymnasium.register``) when imported.

Three ways in, all idempotent (a plugin is imported at most once per process):

* ``load_plugins(["my_agents", "path/to/agents.py"])`` -- what ``--plugin`` on the command
  line and ``plugins = [...]`` in a TOML config do. A name ending in ``.py`` (or an existing
  file) is imported from that path; anything else is imported as a module.
* installed packages that declare an entry point in the group ``dpbandits.plugins``
  (the convention of pytest and Gymnasium plugins)::

      [project.entry-points."dpbandits.plugins"]
      my_agents = "my_package.agents"

  are imported by :func:`load_entry_point_plugins`, which ``import dpbandits`` calls once.
* parallel sweep workers import the sweep's plugin list before their first cell.

A plugin file's folder is appended to ``sys.path`` before it runs, so it can import the
modules beside it. A plugin that raises while being imported raises :class:`PluginError`
naming it, the line and the exception (the original is chained as its cause).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
import warnings
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from types import ModuleType

from dpbandits.errors import UserError

ENTRY_POINT_GROUP = "dpbandits.plugins"

_LOADED: dict[str, ModuleType] = {}
_ENTRY_POINTS_LOADED = False


class PluginError(UserError, ValueError):
    """A plugin could not be found or imported: the message names it and why."""


def load_plugin(spec: str) -> ModuleType:
    """Import one plugin (a module name or a ``.py`` path) and return the module."""
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError(f"plugin must be a module name or a .py file path, got {spec!r}")
    spec = spec.strip()
    path = Path(spec).expanduser()
    is_file = spec.endswith(".py") or path.is_file()
    key = str(path.resolve()) if is_file else spec
    if key in _LOADED:
        return _LOADED[key]
    module = _import_file(path) if is_file else _import_module(spec)
    _LOADED[key] = module
    return module


def load_plugins(specs: Iterable[str] | None) -> list:
    """Import every plugin of ``specs`` (in order); already imported ones are skipped."""
    return [load_plugin(s) for s in (specs or ())]


def _import_module(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise PluginError(f"plugin {name!r}: no module named {exc.name!r} (give an "
                              "importable module name or a path to a .py file)") from None
        raise _failed(f"plugin {name!r}", exc, None) from exc
    except Exception as exc:  # noqa: BLE001 - the plugin's own error, named as such
        raise _failed(f"plugin {name!r}", exc, None) from exc


def _failed(what: str, exc: BaseException, source: Path | None) -> PluginError:
    """One line for a plugin that raised while being imported: the plugin, where (the last
    line of ``source`` in the traceback) and the exception."""
    frames = traceback.extract_tb(exc.__traceback__)
    if source is not None:
        frames = [f for f in frames if f.filename == str(source)] or frames
    where = f", line {frames[-1].lineno}" if source is not None and frames else ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return PluginError(f"{what}{where} raised {type(exc).__name__}"
                       f"{': ' + detail if detail else ''} while being imported (run with "
                       "--debug for the traceback)")


def _import_file(path: Path):
    if not path.is_file():
        raise PluginError(f"plugin file '{path}' does not exist")
    resolved = path.resolve()
    # a stable module name per file, so pickled references and repeated loads agree
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"dpbandits_plugin_{resolved.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin file '{path}' cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(resolved.parent)
    if folder not in sys.path:  # so the plugin can import the modules beside it
        sys.path.append(folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the plugin's own error, named as such
        del sys.modules[name]
        raise _failed(f"plugin file '{path}'", exc, resolved) from exc
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_entry_point_plugins() -> list[str]:
    """Import every installed ``dpbandits.plugins`` entry point (once per process).

    A plugin that fails to import is reported with a warning naming it and the error, and
    skipped: one broken package must not make ``import dpbandits`` fail. Returns the names
    of the entry points imported.
    """
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return []
    _ENTRY_POINTS_LOADED = True
    loaded = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - reported, never silently dropped
            warnings.warn(f"dpbandits plugin entry point {ep.name!r} ({ep.value}) failed to "
                          f"import and was skipped: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        loaded.append(ep.name)
    return loaded

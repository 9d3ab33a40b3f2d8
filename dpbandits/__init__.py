"""dpbandits: differentially private contextual bandits and private optimizers.

Importing the package registers the ``dpbandits/...`` Gymnasium environment ids (so
``gymnasium.make("dpbandits/Figure5.1-v0")`` works after ``import dpbandits``; registered when
Gymnasium is imported, see :mod:`dpbandits._lazy_envs`) and imports the installed plugins of
the entry-point group ``dpbandits.plugins``. Subpackages load on first use
(``dpbandits.envs``, ``dpbandits.agents``, ...: attribute access imports them).
"""

__version__ = "0.2.0.dev1"

from dpbandits import _lazy_accounting  # noqa: E402  (before any module imports dp_accounting)

_lazy_accounting.install()

from dpbandits import _lazy_envs  # noqa: E402

_lazy_envs.register_when_imported()

from dpbandits.plugins import load_entry_point_plugins as _load_entry_point_plugins  # noqa: E402

_load_entry_point_plugins()


def __getattr__(name: str):
    # ``import dpbandits`` imports no subpackage; ``dpbandits.envs`` and the like import it
    import importlib.util

    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")

"""dpbandits: differentially private contextual bandits and private optimizers.

Importing the package registers the ``dpbandits/...`` Gymnasium environment ids (so
``gymnasium.make("dpbandits/Figure5.1-v0")`` works after ``import dpbandits``) and imports the
installed plugins of the entry-point group ``dpbandits.plugins``.
"""

__version__ = "0.2.0.dev1"

from dpbandits import _lazy_accounting  # noqa: E402  (before any module imports dp_accounting)

_lazy_accounting.install()

from dpbandits import envs as _envs  # noqa: E402,F401  (registers the environment ids)
from dpbandits.plugins import load_entry_point_plugins as _load_entry_point_plugins  # noqa: E402

_load_entry_point_plugins()

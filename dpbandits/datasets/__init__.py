"""Logged bandit data: the file format and its loader, and the Open Bandit Dataset sample.

The off-policy estimators are in :mod:`dpbandits.offpolicy`; ``ips``, ``snips``,
``PolicyEstimate`` and ``policy_actions``, which first lived here, still import from here
with a ``DeprecationWarning``.

Layer: above ``envs`` (it builds :class:`dpbandits.envs.LoggedBandit`, the arrays the replay
environment takes) and below ``harness`` (which reads a log given by path); it needs pandas
and pyarrow, which the ``envs`` layer must not import.
"""

from __future__ import annotations

from dpbandits.datasets.logged import LOG_COLUMNS, load_log, log_frame, read_logged, write_logged
from dpbandits.datasets.obd import (
    OBD_CAMPAIGNS,
    OBD_DOWNLOAD,
    OBD_ENV,
    OBD_POLICIES,
    load_obd,
    obd_source,
    obp_data_dir,
)
from dpbandits.envs.logged import LoggedBandit, synthetic_log

__all__ = [
    "LOG_COLUMNS",
    "OBD_CAMPAIGNS",
    "OBD_DOWNLOAD",
    "OBD_ENV",
    "OBD_POLICIES",
    "LoggedBandit",
    "load_log",
    "load_obd",
    "log_frame",
    "obd_source",
    "obp_data_dir",
    "read_logged",
    "synthetic_log",
    "write_logged",
]

_MOVED = frozenset({"PolicyEstimate", "ips", "policy_actions", "snips"})


def __getattr__(name: str):
    """The off-policy names that moved to :mod:`dpbandits.offpolicy`, with a warning."""
    if name in _MOVED:
        import warnings

        from dpbandits import offpolicy

        warnings.warn(f"dpbandits.datasets.{name} is deprecated: import it from "
                      "dpbandits.offpolicy", DeprecationWarning, stacklevel=2)
        return getattr(offpolicy, name)
    raise AttributeError(f"module 'dpbandits.datasets' has no attribute {name!r}")

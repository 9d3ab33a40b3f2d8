"""Logged bandit data: the file format and its loader, the Open Bandit Dataset sample, and
off-policy estimators (IPS, SNIPS) of fixed policies.

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
from dpbandits.datasets.offpolicy import PolicyEstimate, ips, policy_actions, snips
from dpbandits.envs.logged import LoggedBandit, synthetic_log

__all__ = [
    "LOG_COLUMNS",
    "OBD_CAMPAIGNS",
    "OBD_DOWNLOAD",
    "OBD_ENV",
    "OBD_POLICIES",
    "LoggedBandit",
    "PolicyEstimate",
    "ips",
    "load_log",
    "load_obd",
    "log_frame",
    "obd_source",
    "obp_data_dir",
    "policy_actions",
    "read_logged",
    "snips",
    "synthetic_log",
    "write_logged",
]

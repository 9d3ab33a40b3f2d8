"""IPS and SNIPS, kept importable from ``dpbandits.datasets`` (where they first lived); every
off-policy estimator now lives in :mod:`dpbandits.offpolicy`."""

from __future__ import annotations

from dpbandits.offpolicy import PolicyEstimate, ips, policy_actions, snips

__all__ = ["PolicyEstimate", "ips", "policy_actions", "snips"]

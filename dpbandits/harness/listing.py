"""The rows ``dpbandits list`` prints, without importing what it does not print.

The built-in environments' sizes and reward models and the built-in agents' privacy notions
depend only on the code, not on the machine: :mod:`dpbandits.harness.catalogue` computes them
by building every environment and agent (which imports numpy, Gymnasium, every agent module
and the accountant's calibrations, about a second), and ``python -m
dpbandits.harness.catalogue`` writes them to ``catalogue.json`` beside this module.
``tests/test_catalogue.py`` recomputes them and fails when the file is stale. This module reads
the file (standard library only); ids and agents registered by plugins, and anything the file
does not know, are computed by the catalogue as before.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache

from dpbandits.harness._rows import CATALOGUE_FILE, short

__all__ = ["CATALOGUE_FILE", "agent_rows", "env_rows", "short"]


@cache
def _builtin() -> dict:
    return json.loads(CATALOGUE_FILE.read_text())


def env_rows() -> list[dict]:
    """One row per environment id (the ``catalogue.env_rows`` columns), sorted by id: the
    built-in ones from the file; a dataset id whose optional extra is missing says so; ids
    registered by plugins (Gymnasium imported) are built by the catalogue."""
    rows = [_available(row) for row in _builtin()["environments"]]
    if "gymnasium" in sys.modules:  # someone (a plugin) registered ids: any new ones?
        from dpbandits.harness import catalogue

        rows += catalogue.env_rows(exclude={row["id"] for row in rows})
    return sorted(rows, key=lambda row: row["id"])


def agent_rows() -> list[dict]:
    """One row per agent (name, privacy notion at the defaults, description), sorted by name:
    the built-in ones from the file; agents registered by plugins (the agents package
    imported) are built by the catalogue."""
    rows = [dict(row) for row in _builtin()["agents"]]
    if "dpbandits.agents.base" in sys.modules:
        from dpbandits.harness import catalogue

        rows += catalogue.agent_rows(exclude={row["name"] for row in rows})
    return sorted(rows, key=lambda row: row["name"])


def _available(row: dict) -> dict:
    """The row as printed here: a dataset read from scikit-learn says it is not available
    when scikit-learn is missing, with the error loading it would raise."""
    row = dict(row)
    dataset = row.pop("sklearn_dataset", None)
    if dataset is not None and importlib.util.find_spec("sklearn") is None:
        from dpbandits.errors import missing_dataset_extra

        row.update({"K": "-", "d": "-", "T": "-", "link": "-", "noise": "-",
                    "description": short(f"not available: {missing_dataset_extra(dataset)}",
                                         94)})
    return row

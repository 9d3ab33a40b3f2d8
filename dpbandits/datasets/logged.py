"""The logged-data file format and its loader.

A log is a table, one row per logged round in the order it was logged, as Parquet
(``.parquet``/``.pq``) or CSV (``.csv``, header row, no index column):

==================  ===========================================================================
``action``          the arm the logging policy played, an integer in ``{0, ..., n_arms - 1}``
``reward``          the reward observed for that arm (finite)
``propensity``      the logging policy's probability of playing that arm in that context, in
                    (0, 1] (``1 / n_arms`` for a uniformly random logging policy)
context columns     every other column (or those named by ``context_columns``), numeric and
                    finite, in file order: the context the logging policy saw
==================  ===========================================================================

The three column names can be changed (``action=``, ``reward=``, ``propensity=``). The arm
set is ``{0, ..., n_arms - 1}``: ``n_arms`` given to the loader, else the file's own
declaration (``write_logged`` stores it in the Parquet metadata), else ``1 + max(action)``.
Every error names the file, the column, the first offending row (0-based, data rows) and value,
and what is allowed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits._validation import check_int
from dpbandits.envs.logged import LoggedBandit

__all__ = ["LOG_COLUMNS", "load_log", "log_frame", "read_logged", "write_logged"]

#: the default names of the three required non-context columns
LOG_COLUMNS = ("action", "reward", "propensity")
_META_N_ARMS = b"dpbandits.n_arms"
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def _kind(path: Path) -> str:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"log file {str(path)!r}: the name must end in .parquet, .pq or .csv "
                         f"(the format is read from the suffix), got {path.suffix!r}")
    return kind


def _read_table(path: Path) -> tuple[pd.DataFrame, int | None]:
    """The file's table and the arm count declared in its metadata (Parquet only)."""
    kind = _kind(path)
    if not path.is_file():
        raise FileNotFoundError(f"log file {str(path)!r} does not exist")
    if kind == "csv":
        return pd.read_csv(path), None
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    declared = int(meta[_META_N_ARMS]) if _META_N_ARMS in meta else None
    return table.to_pandas(), declared


def read_logged(path: str | os.PathLike[str], *, n_arms: int | None = None,
                context_columns: list[str] | None = None, action: str = "action",
                reward: str = "reward", propensity: str = "propensity",
                name: str | None = None) -> LoggedBandit:
    """Read a log file (format in the module docstring) into a validated ``LoggedBandit``.

    Raises ``ValueError`` naming the column for a missing column, a non-numeric or
    non-finite value, a propensity outside (0, 1] or an action outside ``{0, ...,
    n_arms - 1}``; ``FileNotFoundError`` for a missing file.
    """
    path = Path(path)
    frame, declared = _read_table(path)
    where = f"log file {str(path)!r}"
    roles = {"action": action, "reward": reward, "propensity": propensity}
    for role, column in roles.items():
        if not isinstance(column, str):
            raise TypeError(f"{role} must be a column name (str), got {column!r}")
        if column not in frame.columns:
            raise ValueError(f"{where}: missing column {column!r} (the {role} of every logged "
                             f"round); columns present: {list(frame.columns)}; name another "
                             f"column with {role}=...")
    if context_columns is None:
        context_columns = [c for c in frame.columns if c not in roles.values()]
    else:
        context_columns = list(context_columns)
        missing = [c for c in context_columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{where}: context_columns {missing} are not columns of the file; "
                             f"columns present: {list(frame.columns)}")
    if not context_columns:
        raise ValueError(f"{where}: no context columns (every column other than "
                         f"{list(roles.values())} is a context feature, and there is none)")
    for column in [*context_columns, *roles.values()]:
        if not pd.api.types.is_numeric_dtype(frame[column]):
            raise ValueError(f"{where}: column {column!r} must be numeric, got dtype "
                             f"{frame[column].dtype} (e.g. {frame[column].iloc[0]!r}); encode "
                             "categorical features as numbers first")
    if n_arms is None:
        n_arms = declared
    if n_arms is None:
        top = frame[action].max()
        n_arms = int(top) + 1 if np.isfinite(top) and top == int(top) else 2
    else:
        n_arms = check_int("n_arms", n_arms, low=2)
    return LoggedBandit(
        frame[context_columns].to_numpy(dtype=np.float64), frame[action].to_numpy(),
        frame[reward].to_numpy(), frame[propensity].to_numpy(), n_arms,
        name=name or path.name,
        columns={"contexts": context_columns, "actions": action, "rewards": reward,
                 "propensities": propensity})


def log_frame(log: LoggedBandit, context_names: list[str] | None = None) -> pd.DataFrame:
    """The log as a table in the file format (context columns ``x0, x1, ...`` by default)."""
    names = context_names or [f"x{j}" for j in range(log.dim)]
    if len(names) != log.dim:
        raise ValueError(f"context_names must name the {log.dim} context columns, got "
                         f"{len(names)}")
    frame = pd.DataFrame(log.contexts, columns=names)
    frame["action"] = log.actions
    frame["reward"] = log.rewards
    frame["propensity"] = log.propensities
    return frame


def write_logged(log: LoggedBandit, path: str | os.PathLike[str]) -> Path:
    """Write ``log`` in the file format (by suffix: Parquet, with ``n_arms`` in its metadata,
    or CSV, where floats keep 17 significant digits so the read-back is exact)."""
    path = Path(path)
    frame = log_frame(log)
    if _kind(path) == "csv":
        frame.to_csv(path, index=False, float_format="%.17g")
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META_N_ARMS] = str(log.n_arms).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    return path


def load_log(spec: str | os.PathLike[str] | LoggedBandit) -> LoggedBandit:
    """A log from a ``LoggedBandit`` (returned as is), a file path (:func:`read_logged` with
    the default column names) or ``"obd:CAMPAIGN"`` / ``"obd:POLICY/CAMPAIGN"`` (the Open
    Bandit Dataset sample of an installed ``obp``, :func:`dpbandits.datasets.load_obd`)."""
    if isinstance(spec, LoggedBandit):
        return spec
    if isinstance(spec, str) and spec.startswith("obd:"):
        from dpbandits.datasets.obd import load_obd

        policy, _, campaign = spec[4:].rpartition("/")
        return load_obd(campaign, behavior_policy=policy or "random")
    if not isinstance(spec, str | os.PathLike):
        raise TypeError(f"log must be a LoggedBandit, a file path or 'obd:CAMPAIGN', got "
                        f"{type(spec).__name__}")
    return read_logged(spec)

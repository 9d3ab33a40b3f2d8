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
from dpbandits.envs.logged import UNIFORM_RTOL, LoggedBandit

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
                name: str | None = None,
                action_labels: list | dict | None = None) -> LoggedBandit:
    """Read a log file (format in the module docstring) into a validated ``LoggedBandit``.

    ``action_labels`` maps the action column's values to arms: a list (the label of arm
    ``i`` at position ``i``) or a dict ``{label: arm}``; ``n_arms`` defaults to the list's
    length or 1 + the dict's largest arm. Raises ``ValueError`` naming the column, the row
    and the value for a file without data rows, a missing column, a non-numeric or
    non-finite value, a propensity outside (0, 1], an action outside ``{0, ...,
    n_arms - 1}`` or a label missing from ``action_labels``; ``FileNotFoundError`` for a
    missing file.
    """
    path = Path(path)
    frame, declared = _read_table(path)
    where = f"log file {str(path)!r}"
    if frame.shape[0] == 0:
        raise ValueError(f"{where}: no data rows (only a header row, columns "
                         f"{list(frame.columns)}); a log needs at least one logged round")
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
    actions = frame[action]
    if action_labels is not None:
        actions, n_labelled = _label_arms(where, action, actions, action_labels)
        n_arms = n_labelled if n_arms is None else n_arms
    for column in [*context_columns, *roles.values()]:
        values = actions if column == action else frame[column]
        if not pd.api.types.is_numeric_dtype(values):
            raise ValueError(f"{where}: column {column!r} must be numeric, but "
                             f"{_first_non_numeric(values)}"
                             + ("; map labels to arms with action_labels=[...]"
                                if column == action else
                                "; encode categorical features as numbers first"))
    if n_arms is None:
        n_arms = declared
    if n_arms is None:
        n_arms = _inferred_arms(where, action, actions, frame[propensity])
    else:
        n_arms = check_int("n_arms", n_arms, low=2)
    return LoggedBandit(
        frame[context_columns].to_numpy(dtype=np.float64), actions.to_numpy(),
        frame[reward].to_numpy(), frame[propensity].to_numpy(), n_arms,
        name=name or path.name,
        columns={"contexts": context_columns, "actions": action, "rewards": reward,
                 "propensities": propensity})


def _first_non_numeric(values: pd.Series) -> str:
    """``row i is 'x'`` for the first value of ``values`` that is not a number."""
    numbers = pd.to_numeric(values, errors="coerce")
    bad = np.flatnonzero((numbers.isna() & values.notna()).to_numpy())
    if bad.size == 0:
        return f"its dtype is {values.dtype}"
    i = int(bad[0])
    return f"row {i} is {values.iloc[i]!r}"


def _label_arms(where: str, column: str, values: pd.Series,
                labels: list | dict) -> tuple[pd.Series, int]:
    """The arms of the labels in ``values`` and the arm count the labels declare."""
    if isinstance(labels, dict):
        mapping = dict(labels)
        for label, arm in mapping.items():
            check_int(f"action_labels[{label!r}]", arm, low=0)
    elif isinstance(labels, list | tuple):
        if len(set(labels)) != len(labels):
            dup = next(x for i, x in enumerate(labels) if x in labels[:i])
            raise ValueError(f"action_labels lists {dup!r} twice; each label names one arm")
        mapping = {label: i for i, label in enumerate(labels)}
    else:
        raise TypeError(f"action_labels must be a list (arm i = the i-th label) or a dict "
                        f"{{label: arm}}, got {type(labels).__name__}")
    if not mapping:
        raise ValueError("action_labels is empty; give the label of every arm")
    arms = values.map(mapping)
    missing = np.flatnonzero(arms.isna().to_numpy())
    if missing.size:
        i = int(missing[0])
        raise ValueError(f"{where}: column {column!r} row {i} is {values.iloc[i]!r}, which is "
                         f"not one of action_labels {list(mapping)}")
    return arms.astype(np.int64), max(mapping.values()) + 1


def _inferred_arms(where: str, column: str, actions: pd.Series, props: pd.Series) -> int:
    """``1 + max(action)``, unless constant propensities ``1/k`` say there are ``k`` arms
    and an action lies outside them: that action is named rather than replayed as a
    non-uniform log of ``1 + max(action)`` arms."""
    top = actions.max()
    n_arms = int(top) + 1 if np.isfinite(top) and top == int(top) else 2
    p = props.to_numpy(dtype=np.float64)
    if not (np.isfinite(p).all() and p.size and (p > 0).all()):
        return n_arms
    k = round(1.0 / p[0])
    constant = np.all(np.abs(p * k - 1.0) <= UNIFORM_RTOL)
    if constant and 2 <= k < n_arms:
        a = actions.to_numpy(dtype=np.float64)
        i = int(np.flatnonzero(a >= k)[0])
        raise ValueError(f"{where}: column {column!r} row {i} is {actions.iloc[i]}, outside "
                         f"the {k} arms {{0, ..., {k - 1}}} that the propensities imply "
                         f"(every one is 1/{k}); declare the arm set with n_arms (e.g. "
                         f"--env-param n_arms={n_arms} if the log really has {n_arms} arms) "
                         "or map labels to arms with action_labels")
    return n_arms


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


def load_log(spec: str | os.PathLike[str] | LoggedBandit, *, n_arms: int | None = None,
             action_labels: list | dict | None = None) -> LoggedBandit:
    """A log from a ``LoggedBandit`` (returned as is), a file path (:func:`read_logged` with
    the default column names, ``n_arms`` and ``action_labels``) or ``"obd:CAMPAIGN"`` /
    ``"obd:POLICY/CAMPAIGN"`` (the Open Bandit Dataset sample of an installed ``obp``,
    :func:`dpbandits.datasets.load_obd`)."""
    if n_arms is not None or action_labels is not None:
        if not isinstance(spec, str | os.PathLike) or str(spec).startswith("obd:"):
            raise ValueError("n_arms and action_labels apply to a log read from a file "
                             f"(log='path/to/log.csv'), not to {spec!r}")
        return read_logged(spec, n_arms=n_arms, action_labels=action_labels)
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

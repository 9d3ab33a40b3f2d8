"""Simulation results: per-replication arrays, the tidy frame, and Parquet + JSON storage.

A ``SimulationResult`` holds, for one agent on one environment, arrays of shape ``(R, T)``:
instantaneous pseudo-regret, arms and rewards. ``to_frame`` gives the tidy frame: one row per
replication x recorded step with ``agent, rep, t, regret, cum_regret`` (``t`` counts rounds
from 1) and the agent's privacy level ``epsilon, delta, certified_epsilon`` (constant per
agent; ``epsilon = inf, delta = 0`` for a non-private agent, ``certified_epsilon = NaN`` when
no accountant could recompute it).

A run on a replay environment (logged data, no oracle) has no regret: its frame holds
``reward, cum_reward, log_events`` instead of ``regret, cum_regret`` (``t`` counts accepted
rounds; ``log_events`` the logged rounds the replication had read by then), and ``summarize``
reports the final cumulative reward with the mean ``log_events``.

Privacy record schema (``PRIVACY_RECORD_KEYS``): every results JSON written by ``run``,
``compare``, ``sweep`` and ``reproduce`` holds ``"schema": RECORD_SCHEMA`` and a list
``"privacy"`` with one entry per agent label (and, for sweeps, per swept cell), made by
:func:`privacy_entry`:

=====================  ==================================================================
``agent``              the agent's label in the run
``cell``, ``seed``     sweeps only: the cell id and its seed (absent elsewhere)
``params``             sweeps only: the swept values of that cell (``agent.*``, ``env.*``)
``private``            False for an agent without noise (then ``epsilon`` is ``"inf"``)
``epsilon, delta``     the guarantee the agent claims; ``"inf"`` / 0 when not private (the
                       frame's ``inf``: JSON has no infinity, and ``float("inf")`` reads it)
``notion``             ``"DP"``, ``"JDP"``, ``"LDP"``, ``"GDP"``, ``"RDP"`` or ``"none"``
``neighbouring``       ``"replace-one"`` or ``"add-remove"``
``basis``              the theorem or accountant the claim rests on
``caveat``             why a reproduced claim is known not to hold ("" otherwise)
``certified_epsilon``  epsilon recomputed by dp_accounting from the agent's own ledger at the
                       claimed delta (null when the agent has no ledger)
``certified_basis``    how it was recomputed, or why it could not be
``certified``          true iff the claim is marked certified and the recomputed epsilon is
                       at most the claimed one
=====================  ==================================================================

JSON files are strict JSON: no NaN or infinity. A non-private agent's ``epsilon`` is the
string ``"inf"`` (no privacy is epsilon = infinity, as in the frame; ``float`` of the entry
gives the frame's value); every other NaN or infinity is written as null (a missing number).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpbandits._validation import check_int

if TYPE_CHECKING:
    import pandas as pd

FRAME_COLUMNS = ["agent", "rep", "t", "regret", "cum_regret", "epsilon", "delta",
                 "certified_epsilon"]
#: the frame of a run without an oracle (replay of logged data)
REPLAY_FRAME_COLUMNS = ["agent", "rep", "t", "reward", "cum_reward", "log_events", "epsilon",
                        "delta", "certified_epsilon"]
RECORD_SCHEMA = "dpbandits.results/1"
PRIVACY_RECORD_KEYS = ("agent", "private", "epsilon", "delta", "notion", "neighbouring", "basis",
                       "caveat", "certified_epsilon", "certified_basis", "certified")
#: ``epsilon`` of a non-private agent in a privacy record: the frame's ``inf`` as strict JSON
NON_PRIVATE_EPSILON = "inf"
#: relative slack when comparing a recomputed epsilon with the claimed one (float round-off)
_CERTIFY_RTOL = 1e-6


@dataclass
class SimulationResult:
    """Outcome of ``simulate`` for one agent.

    Parameters
    ----------
    agent : str
        The agent's name.
    regret : (R, T) array or None
        Per-round pseudo-regret of every replication; None for a replay run.
    arms, rewards : (R, T) arrays
        The arms pulled and the rewards received.
    seconds : float
        Wall time of the run.
    peak_memory_mb : float or None, default None
        Peak resident memory of the process during the run (or, with ``track_memory``, the
        peak of Python-traced allocations).
    privacy : dict or None, default None
        The agent's ``PrivacyGuarantee`` as a dict (None: not private).
    certified : dict or None, default None
        The guarantee recomputed by the accountant from the agent's ledger.
    config : dict, default {}
        The run's configuration.
    log_events : (R, T) array or None, default None
        Replay: logged rounds read up to accepted round t.
    reference_reward : float or None, default None
        Replay: the logged policy's mean reward per round.
    """

    agent: str
    regret: np.ndarray | None
    arms: np.ndarray
    rewards: np.ndarray
    seconds: float
    peak_memory_mb: float | None = None
    privacy: dict | None = None
    certified: dict | None = None
    config: dict = field(default_factory=dict)
    log_events: np.ndarray | None = None
    reference_reward: float | None = None

    @property
    def n_reps(self) -> int:
        return self.arms.shape[0]

    @property
    def horizon(self) -> int:
        return self.arms.shape[1]

    @property
    def cum_regret(self) -> np.ndarray:
        """Cumulative pseudo-regret, shape (R, T)."""
        if self.regret is None:
            raise ValueError(f"{self.agent}: this run has no regret (a replay of logged data "
                             "has no oracle); use cum_reward")
        return np.cumsum(self.regret, axis=1)

    @property
    def cum_reward(self) -> np.ndarray:
        """Cumulative reward, shape (R, T)."""
        return np.cumsum(self.rewards, axis=1)

    def to_frame(self, record_every: int = 1) -> pd.DataFrame:
        """Tidy frame at rounds ``record_every, 2*record_every, ...`` and always the last."""
        return tidy_frame([self], record_every)

    def _column_dtypes(self) -> dict[str, np.dtype]:
        """The dtype of each column of the tidy frame but ``agent``, in the frame's order."""
        def running(values: np.ndarray) -> np.dtype:  # of np.cumsum(values)
            return np.cumsum(values[:1, :1], axis=1).dtype

        if self.regret is None:
            assert self.log_events is not None
            values = {"reward": self.rewards.dtype, "cum_reward": running(self.rewards),
                      "log_events": self.log_events.dtype}
        else:
            values = {"regret": self.regret.dtype, "cum_regret": running(self.regret)}
        return {"rep": np.dtype(np.intp), "t": np.dtype(np.int64), **values,
                **dict.fromkeys(("epsilon", "delta", "certified_epsilon"), np.dtype(float))}

    def _fill_columns(self, steps: np.ndarray, columns: dict[str, np.ndarray],
                      start: int) -> None:
        """Write this result's rows of the tidy frame at rounds ``steps`` (1-based, increasing;
        one row per replication and step, replication-major; every column but ``agent``) into
        ``columns[key][start:start + rows]`` (arrays of :meth:`_column_dtypes`): no column is
        copied on the way, and numpy releases the GIL while it writes (a background thread can
        do this)."""
        n_reps, width = self.n_reps, len(steps)
        stop = start + n_reps * width

        def block(key: str) -> np.ndarray:  # this result's rows, as (R, len(steps))
            return columns[key][start:stop].reshape(n_reps, width)

        index = steps - 1
        if self.regret is None:
            taken = {"reward": self.rewards, "log_events": self.log_events}
            running, summed = "cum_reward", self.rewards
        else:
            taken = {"regret": self.regret}
            running, summed = "cum_regret", self.regret
        block("rep")[...] = np.arange(n_reps)[:, None]
        block("t")[...] = steps
        for key, values in taken.items():
            np.take(values, index, axis=1, out=block(key), mode="clip")  # unbuffered
        if width == self.horizon:  # every round recorded: the running sum is the column
            np.cumsum(summed, axis=1, out=block(running))
        else:
            np.take(np.cumsum(summed, axis=1), index, axis=1, out=block(running),
                    mode="clip")
        level = privacy_level(self.privacy, self.certified)
        for key in ("epsilon", "delta", "certified_epsilon"):
            columns[key][start:stop] = level[key]

    def privacy_entry(self) -> dict:
        """This agent's entry of the privacy record (module docstring)."""
        return privacy_entry(self.agent, self.privacy, self.certified)


def tidy_frame(results: Iterable[SimulationResult], record_every: int = 1) -> pd.DataFrame:
    """The tidy frames of several results (:meth:`SimulationResult.to_frame`) one below the
    other, as ``pd.concat`` of them with ``ignore_index=True`` gives, built in one piece
    (:class:`FrameBuilder`: 3e6 rows, each column written once, where the frame keeps it)."""
    results = list(results)
    builder = FrameBuilder(max(1, len(results)), record_every)
    for result in results:
        builder.add(result)
    return builder.frame()


class FrameBuilder:
    """The frame of :func:`tidy_frame`, built one result at a time, in order.

    The first ``add`` allocates the frame's columns for ``n_results`` results of its size;
    each ``add`` writes one result's rows below the previous ones; ``frame`` wraps the
    columns without a copy (``dpbandits compare`` does this in a background thread while it
    draws the plots, ``harness.pipeline``). Rows are placed by the order of ``add``.
    Results of another size or kind than the first
    (a replay beside simulations) are concatenated as ``pd.concat`` does, at ``frame``.
    With ``rounds``, only the recorded rounds among them are kept (the rows of
    ``frame[frame["t"].isin(rounds)]``, numbered from 0).
    """

    def __init__(self, n_results: int, record_every: int = 1, *,
                 rounds: np.ndarray | None = None) -> None:
        self._n_results = check_int("n_results", n_results, low=1)
        self._record_every = check_int("record_every", record_every, low=1)
        self._rounds = None if rounds is None else np.asarray(rounds)
        self._results: list[SimulationResult] = []
        self._columns: dict[str, np.ndarray] = {}
        self._layout: tuple | None = None  # (dtypes, steps, rows) of the first result
        self._labels: list = []  # the agent column's pieces (_string_piece)
        self._mixed = False

    def add(self, result: SimulationResult) -> None:
        """Write ``result``'s rows below those of the results added before it."""
        if len(self._results) == self._n_results:
            raise ValueError(f"FrameBuilder: all {self._n_results} results were added")
        self._results.append(result)
        if self._mixed:
            return
        steps = recorded_steps(result.horizon, self._record_every)
        if self._rounds is not None:
            steps = steps[np.isin(steps, self._rounds)]
        dtypes, rows = result._column_dtypes(), result.n_reps * len(steps)
        if self._layout is None:
            self._layout = (dtypes, steps, rows)
            self._columns = {key: np.empty(self._n_results * rows, dtype=dtype)
                             for key, dtype in dtypes.items()}
        elif (dtypes != self._layout[0] or rows != self._layout[2]
              or not np.array_equal(steps, self._layout[1])):
            self._mixed, self._columns, self._labels = True, {}, []
            return
        result._fill_columns(steps, self._columns, (len(self._results) - 1) * rows)
        self._labels.append(_string_piece(result.agent, rows))

    def frame(self) -> pd.DataFrame:
        """The tidy frame of the results added so far."""
        import pandas as pd  # on first use: a simulation alone never loads pandas

        if not self._results:
            return pd.DataFrame(columns=FRAME_COLUMNS)
        if self._mixed:
            frame = pd.concat([tidy_frame([r], self._record_every) for r in self._results],
                              ignore_index=True)
            if self._rounds is None:
                return frame
            return frame[frame["t"].isin(self._rounds)].reset_index(drop=True)
        assert self._layout is not None
        used = len(self._results) * self._layout[2]
        columns = {key: values[:used] for key, values in self._columns.items()}
        # copy=False: the arrays become the frame's columns as they are, one block each
        # (consolidating them into one 2-D block per dtype would copy every row again)
        return pd.DataFrame({"agent": _repeated_strings(self._labels), **columns}, copy=False)


def _string_piece(text: str, n: int):
    """``n`` copies of ``text`` for :func:`_repeated_strings`: an Arrow array when that is
    the storage of pandas' ``"string"`` dtype (made here, by whichever thread adds the
    result), else the pair ``(text, n)``."""
    import pandas as pd

    if pd.StringDtype().storage == "pyarrow":
        import pyarrow as pa

        return pa.repeat(pa.scalar(text, type=pa.large_string()), n)
    return (text, n)


def _repeated_strings(pieces: list):
    """Pandas' ``"string"`` array of the pieces of :func:`_string_piece`, in order: Arrow
    arrays kept as the chunks of one column (0.05 s per million rows, against 0.5 s
    converting a numpy array of strings), else built from shared ``str`` objects."""
    import pandas as pd

    dtype = pd.StringDtype()
    if dtype.storage == "pyarrow":
        import pyarrow as pa

        return pd.array(pa.chunked_array(pieces, type=pa.large_string()), dtype=dtype)
    values = np.empty(sum(n for _, n in pieces), dtype=object)
    start = 0
    for text, n in pieces:
        values[start:start + n] = text
        start += n
    return pd.array(values, dtype=dtype)


def privacy_entry(agent: str, privacy: dict | None, certified: dict | None) -> dict:
    """One entry of the privacy record (schema in the module docstring), JSON-safe.

    ``privacy`` is ``PrivacyGuarantee.to_dict()`` (or None for an agent without one);
    ``certified`` is the accountant's recomputation (``privacy.accounting.certification``).
    """
    private = privacy is not None and privacy.get("notion") != "none" and np.isfinite(
        privacy.get("epsilon", np.inf))
    cert = certified or {}
    cert_eps = cert.get("epsilon")
    entry = {
        "agent": agent,
        "private": bool(private),
        "epsilon": float(privacy["epsilon"]) if private else NON_PRIVATE_EPSILON,
        "delta": float(privacy["delta"]) if private else 0.0,
        "notion": (privacy or {}).get("notion", "none") if private else "none",
        "neighbouring": (privacy or {}).get("neighbouring", "replace-one"),
        "basis": (privacy or {}).get("basis", "no privacy guarantee"),
        "caveat": (privacy or {}).get("caveat", ""),
        "certified_epsilon": None if cert_eps is None else float(cert_eps),
        "certified_basis": cert.get("basis", "no ledger: nothing to recompute"),
    }
    entry["certified"] = bool(
        private and (privacy or {}).get("certified", True) and cert_eps is not None
        and cert_eps <= entry["epsilon"] * (1 + _CERTIFY_RTOL))
    return entry


def privacy_level(privacy: dict | None, certified: dict | None) -> dict:
    """The numeric privacy columns of a frame: ``epsilon`` (inf when not private), ``delta``
    (0 when not private) and ``certified_epsilon`` (NaN when not recomputed)."""
    entry = privacy_entry("", privacy, certified)
    return {"epsilon": float(entry["epsilon"]),
            "delta": entry["delta"],
            "certified_epsilon": (np.nan if entry["certified_epsilon"] is None
                                  else entry["certified_epsilon"])}


def recorded_steps(horizon: int, record_every: int) -> np.ndarray:
    """Rounds (1-based) at which a curve is recorded: every ``record_every``-th and the last."""
    steps = np.arange(record_every, horizon + 1, record_every)
    if steps.size == 0 or steps[-1] != horizon:
        steps = np.append(steps, horizon)
    return steps


def package_versions() -> dict:
    """Versions of the packages a result depends on (for the JSON record); dpbandits's is
    the running code's ``__version__`` (an editable install's metadata keeps the version it
    was installed with)."""
    import dpbandits

    names = ["numpy", "scipy", "gymnasium", "pandas", "dp-accounting", "pyarrow"]
    out = {"python": platform.python_version(), "dpbandits": dpbandits.__version__}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    """The current git commit of the working directory, if there is one."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


#: A value ``json.dumps`` writes as is (what :func:`json_safe` returns).
JSONValue = dict[str, "JSONValue"] | list["JSONValue"] | str | int | float | bool | None


def json_safe(obj: object) -> JSONValue:
    """``obj`` with numpy scalars/arrays, paths and tuples made plain, and every NaN or
    infinity replaced by None, so that ``json.dumps(..., allow_nan=False)`` succeeds."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if np.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, str | int):
        return obj
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def dumps_json(obj: object) -> bytes:
    """Strict JSON (no NaN/Infinity tokens) of ``obj``, indented and key-sorted."""
    return json.dumps(json_safe(obj), indent=2, sort_keys=True, allow_nan=False).encode()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees either nothing or the whole file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600; results are shared like any other file (0644 under
        # the usual umask 022)
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_frame_atomic(frame: pd.DataFrame, path: Path) -> None:
    """Parquet file written atomically (temporary file + rename)."""
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    atomic_write_bytes(Path(path), buf.getvalue())


def write_csv_atomic(frame: pd.DataFrame, path: Path) -> None:
    """CSV file (no index) written atomically."""
    atomic_write_bytes(Path(path), frame.to_csv(index=False).encode())


def save_results(frame: pd.DataFrame, record: dict, out_dir: str | os.PathLike[str], *,
                 name: str = "results", csv: bool = False) -> dict[str, Path]:
    """Save ``frame`` as Parquet (and CSV on request) with a JSON record beside it.

    The record is completed with the schema tag, package versions and the git commit, and
    written as strict JSON (NaN and infinity become null). Returns the paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = dict(record)
    record.setdefault("schema", RECORD_SCHEMA)
    record.setdefault("versions", package_versions())
    record.setdefault("git_commit", git_commit())
    paths = {"parquet": out / f"{name}.parquet", "json": out / f"{name}.json"}
    write_frame_atomic(frame, paths["parquet"])
    atomic_write_bytes(paths["json"], dumps_json(record))
    if csv:
        paths["csv"] = out / f"{name}.csv"
        write_csv_atomic(frame, paths["csv"])
    return paths


def load_results(out_dir: str | os.PathLike[str], *, name: str = "results"
                 ) -> tuple[pd.DataFrame, dict]:
    """Inverse of ``save_results``: the frame and the JSON record."""
    import pandas as pd

    out = Path(out_dir)
    frame = pd.read_parquet(out / f"{name}.parquet")
    record = json.loads((out / f"{name}.json").read_text())
    return frame, record


SUMMARY_COLUMNS = ["n", "mean", "std", "ci95_low", "ci95_high", "epsilon", "delta",
                   "certified_epsilon"]


def swept_columns(frame: pd.DataFrame) -> list[str]:
    """The parameter columns of a sweep frame (``agent.*``, ``env.*``) that take more than one
    value (a missing value counts as one), sorted; constant ones identify no group."""
    return sorted(c for c in frame.columns if c.startswith(("agent.", "env."))
                  and frame[c].nunique(dropna=False) > 1)


def summarize(frame: pd.DataFrame, *, by: str | list[str] | None = None) -> pd.DataFrame:
    """Final cumulative regret per group: ``n, mean, std, ci95_low, ci95_high`` (normal
    approximation, 1.96 standard errors) and the privacy columns ``epsilon, delta,
    certified_epsilon`` when the frame has them. A replay frame (no ``cum_regret``) is
    summarized by its final cumulative reward, with ``accepted`` (the accepted rounds) and
    ``log_events`` (the mean logged rounds read) after ``n``.

    ``by`` defaults to ``agent`` plus the swept columns of a sweep frame. One replication is
    one ``(seed, rep)`` pair (``(cell, rep)`` in sweeps), so ``n`` counts every seed's
    replications. Missing values of a swept column (an agent without that parameter) form
    their own group rather than being dropped.
    """
    if by is None:
        by = ["agent", *swept_columns(frame)]
    by = [by] if isinstance(by, str) else list(by)
    run_keys = [k for k in ("cell", "seed") if k in frame.columns and k not in by]
    last = frame.loc[frame.groupby(by + run_keys + ["rep"], observed=True, dropna=False)["t"]
                     .idxmax()]
    groups = last.groupby(by, observed=True, dropna=False, sort=False)
    replay = "cum_regret" not in frame.columns
    out = groups["cum_reward" if replay else "cum_regret"].agg(n="count", mean="mean",
                                                                std="std")
    if replay:
        out.insert(1, "accepted", groups["t"].max())
        out.insert(2, "log_events", groups["log_events"].mean())
    half = 1.96 * out["std"].fillna(0.0) / np.sqrt(out["n"])
    out["ci95_low"] = out["mean"] - half
    out["ci95_high"] = out["mean"] + half
    for key in ("epsilon", "delta", "certified_epsilon"):
        if key in last.columns:
            out[key] = groups[key].first()  # constant within a group (one agent config)
    return out.reset_index()

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
``private``            False for an agent without noise (then ``epsilon`` is null)
``epsilon, delta``     the guarantee the agent claims (null / 0 when not private)
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

JSON files are strict JSON: no NaN or infinity (they are written as null).
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
#: relative slack when comparing a recomputed epsilon with the claimed one (float round-off)
_CERTIFY_RTOL = 1e-6


@dataclass
class SimulationResult:
    """Outcome of ``simulate`` for one agent.

    ``regret``, ``arms``, ``rewards``: arrays ``(R, T)``. ``privacy``: the agent's
    ``PrivacyGuarantee`` as a dict (or None); ``certified``: the guarantee recomputed by the
    accountant from the agent's ledger (or None). ``seconds`` is wall time of the run;
    ``peak_memory_mb`` the peak resident memory of the process during the run (or, with
    ``track_memory``, the peak of Python-traced allocations). A replay run has
    ``regret = None``, ``log_events`` (R, T) (logged rounds read up to accepted round t) and
    ``reference_reward`` (the logged policy's mean reward per round).
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

    def _columns(self, record_every: int) -> dict[str, np.ndarray]:
        """The columns of :meth:`to_frame` but ``agent``, as numpy arrays."""
        check_int("record_every", record_every, low=1)
        steps = recorded_steps(self.horizon, record_every)
        n_reps = self.n_reps
        if self.regret is None:
            values = {"reward": self.rewards[:, steps - 1].ravel(),
                      "cum_reward": self.cum_reward[:, steps - 1].ravel(),
                      "log_events": self.log_events[:, steps - 1].ravel()}
        else:
            values = {"regret": self.regret[:, steps - 1].ravel(),
                      "cum_regret": self.cum_regret[:, steps - 1].ravel()}
        n = n_reps * len(steps)
        level = privacy_level(self.privacy, self.certified)
        return {"rep": np.repeat(np.arange(n_reps), len(steps)), "t": np.tile(steps, n_reps),
                **values, **{key: np.full(n, level[key]) for key in
                             ("epsilon", "delta", "certified_epsilon")}}

    def privacy_entry(self) -> dict:
        """This agent's entry of the privacy record (module docstring)."""
        return privacy_entry(self.agent, self.privacy, self.certified)


def tidy_frame(results: Iterable[SimulationResult], record_every: int = 1) -> pd.DataFrame:
    """The tidy frames of several results (:meth:`SimulationResult.to_frame`) one below the
    other, as ``pd.concat`` of them with ``ignore_index=True`` gives, built in one piece
    (3e6 rows: one copy of the columns instead of three)."""
    import pandas as pd  # on first use: a simulation alone never loads pandas

    results = list(results)
    parts = [(r.agent, r._columns(record_every)) for r in results]
    if len({tuple(cols) for _, cols in parts}) > 1:  # replays beside simulations: as concat
        return pd.concat([tidy_frame([r], record_every) for r in results], ignore_index=True)
    agent = _repeated_strings([(name, len(cols["t"])) for name, cols in parts])
    return pd.DataFrame({"agent": agent, **{
        key: np.concatenate([cols[key] for _, cols in parts]) for key in parts[0][1]}})


def _repeated_strings(runs: list[tuple[str, int]]):
    """Pandas' ``"string"`` array of ``n`` copies of each ``(text, n)`` in order: built by
    Arrow when that is the dtype's storage (0.05 s per million rows, against 0.5 s converting
    a numpy array of strings), else from shared ``str`` objects."""
    import pandas as pd

    dtype = pd.StringDtype()
    if dtype.storage == "pyarrow":
        import pyarrow as pa

        chunks = [pa.repeat(pa.scalar(text, type=pa.large_string()), n) for text, n in runs]
        return pd.array(pa.concat_arrays(chunks), dtype=dtype)
    values = np.empty(sum(n for _, n in runs), dtype=object)
    start = 0
    for text, n in runs:
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
        "epsilon": float(privacy["epsilon"]) if private else None,
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
    return {"epsilon": np.inf if entry["epsilon"] is None else entry["epsilon"],
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

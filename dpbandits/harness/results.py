"""Simulation results: per-replication arrays, the tidy frame, and Parquet + JSON storage.

A ``SimulationResult`` holds, for one agent on one environment, arrays of shape ``(R, T)``:
instantaneous pseudo-regret, arms and rewards. ``to_frame`` gives the tidy frame of
DESIGN.md: one row per replication x recorded step with ``agent, rep, t, regret,
cum_regret`` (``t`` counts rounds from 1).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits._validation import check_int

FRAME_COLUMNS = ["agent", "rep", "t", "regret", "cum_regret"]


@dataclass
class SimulationResult:
    """Outcome of ``simulate`` for one agent.

    ``regret``, ``arms``, ``rewards``: arrays ``(R, T)``. ``privacy``: the agent's
    ``PrivacyGuarantee`` as a dict (or None); ``certified``: the guarantee recomputed by the
    accountant from the agent's ledger (or None). ``seconds`` is wall time of the run.
    """

    agent: str
    regret: np.ndarray
    arms: np.ndarray
    rewards: np.ndarray
    seconds: float
    peak_memory_mb: float | None = None
    privacy: dict | None = None
    certified: dict | None = None
    config: dict = field(default_factory=dict)

    @property
    def n_reps(self) -> int:
        return self.regret.shape[0]

    @property
    def horizon(self) -> int:
        return self.regret.shape[1]

    @property
    def cum_regret(self) -> np.ndarray:
        """Cumulative pseudo-regret, shape (R, T)."""
        return np.cumsum(self.regret, axis=1)

    def to_frame(self, record_every: int = 1) -> pd.DataFrame:
        """Tidy frame at rounds ``record_every, 2*record_every, ...`` and always the last."""
        check_int("record_every", record_every, low=1)
        steps = recorded_steps(self.horizon, record_every)
        cum = self.cum_regret[:, steps - 1]
        inst = self.regret[:, steps - 1]
        n_reps = self.n_reps
        frame = pd.DataFrame({
            "agent": np.repeat(self.agent, n_reps * len(steps)),
            "rep": np.repeat(np.arange(n_reps), len(steps)),
            "t": np.tile(steps, n_reps),
            "regret": inst.ravel(),
            "cum_regret": cum.ravel(),
        })
        frame["agent"] = frame["agent"].astype("string")
        return frame


def recorded_steps(horizon: int, record_every: int) -> np.ndarray:
    """Rounds (1-based) at which a curve is recorded: every ``record_every``-th and the last."""
    steps = np.arange(record_every, horizon + 1, record_every)
    if steps.size == 0 or steps[-1] != horizon:
        steps = np.append(steps, horizon)
    return steps


def package_versions() -> dict:
    """Versions of the packages a result depends on (for the JSON record)."""
    names = ["dpbandits", "numpy", "scipy", "gymnasium", "pandas", "dp-accounting", "pyarrow"]
    out = {"python": platform.python_version()}
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


def _json_default(obj):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees either nothing or the whole file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
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


def save_results(frame: pd.DataFrame, record: dict, out_dir, *, name: str = "results",
                 csv: bool = False) -> dict:
    """Save ``frame`` as Parquet (and CSV on request) with a JSON record beside it.

    The record is completed with package versions and the git commit. Returns the paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = dict(record)
    record.setdefault("versions", package_versions())
    record.setdefault("git_commit", git_commit())
    paths = {"parquet": out / f"{name}.parquet", "json": out / f"{name}.json"}
    write_frame_atomic(frame, paths["parquet"])
    atomic_write_bytes(paths["json"], json.dumps(record, indent=2, default=_json_default,
                                                 sort_keys=True).encode())
    if csv:
        paths["csv"] = out / f"{name}.csv"
        atomic_write_bytes(paths["csv"], frame.to_csv(index=False).encode())
    return paths


def load_results(out_dir, *, name: str = "results") -> tuple[pd.DataFrame, dict]:
    """Inverse of ``save_results``: the frame and the JSON record."""
    out = Path(out_dir)
    frame = pd.read_parquet(out / f"{name}.parquet")
    record = json.loads((out / f"{name}.json").read_text())
    return frame, record


def summarize(frame: pd.DataFrame, *, by: str | list[str] = "agent") -> pd.DataFrame:
    """Final cumulative regret per group: mean, std, 95% CI (normal approximation), n."""
    by = [by] if isinstance(by, str) else list(by)
    last = frame.loc[frame.groupby(by + ["rep"], observed=True)["t"].idxmax()]
    g = last.groupby(by, observed=True)["cum_regret"]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    half = 1.96 * out["std"].fillna(0.0) / np.sqrt(out["n"])
    out["ci95_low"] = out["mean"] - half
    out["ci95_high"] = out["mean"] + half
    return out

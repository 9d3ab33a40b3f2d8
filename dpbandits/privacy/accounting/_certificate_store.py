"""Where certificates persist between processes: one small JSON file per (ledger, delta).

A certificate depends only on the ledger's content, the delta and the accounting code, never
on data, so a result computed once serves every later run, worker and process. The file name
is a digest of the ledger's ``repr``, the delta, the installed ``dp_accounting`` version and the
source of this accounting package: a new accountant or a changed accounting module never reads
an old number. Files are written atomically (temporary file + rename), so processes sharing the
folder read either nothing or a whole file.

Folder: ``$DPBANDITS_CACHE_DIR`` if set (``off`` or an empty value disables the store), else
``$XDG_CACHE_HOME/dpbandits`` or ``~/.cache/dpbandits``, under ``certificates/``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["load", "remember", "save", "store_dir"]


def store_dir() -> Path | None:
    """The folder certificates persist in, or ``None`` when the store is off."""
    configured = os.environ.get("DPBANDITS_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "off"):
            return None
        return Path(configured) / "certificates"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dpbandits" / "certificates"


@functools.cache
def _code_version() -> str:
    """dp_accounting's version and a digest of this package's accounting sources."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    try:
        accountant = metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - a dependency of the package
        accountant = "unknown"
    return f"dp_accounting {accountant}, accounting sources {digest.hexdigest()[:16]}"


def _path(folder: Path, ledger_repr: str, delta: float) -> Path:
    digest = hashlib.sha256()
    for part in (_code_version(), repr(float(delta)), ledger_repr):
        digest.update(part.encode() + b"\0")
    return folder / f"{digest.hexdigest()[:32]}.json"


def load(ledger_repr: str, delta: float) -> dict[str, Any] | None:
    """The stored certificate fields (``epsilon``, ``delta``, ``basis``), or ``None``."""
    folder = store_dir()
    if folder is None:
        return None
    try:
        record = json.loads(_path(folder, ledger_repr, delta).read_text())
    except (OSError, ValueError):
        return None
    # the digest names the content; the fields say it again, so a colliding or foreign file
    # is ignored rather than trusted
    if record.get("code") != _code_version() or record.get("delta") != float(delta):
        return None
    if record.get("ledger_sha256") != hashlib.sha256(ledger_repr.encode()).hexdigest():
        return None
    eps = record.get("epsilon")
    if eps is not None and not (isinstance(eps, float) and math.isfinite(eps) or eps == math.inf):
        return None
    return {"epsilon": eps, "delta": record["delta"], "basis": record.get("basis", "")}


def save(ledger_repr: str, delta: float, epsilon: float | None, basis: str) -> None:
    """Store one certificate (a write failure warns once and is otherwise ignored: the store
    only saves time)."""
    folder = store_dir()
    if folder is None:
        return
    record = {"code": _code_version(), "delta": float(delta), "epsilon": epsilon,
              "basis": basis,
              "ledger_sha256": hashlib.sha256(ledger_repr.encode()).hexdigest()}
    path = _path(folder, ledger_repr, delta)
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        _warn_once(f"certificates are not cached: cannot write to {folder} ({exc}); set "
                   "DPBANDITS_CACHE_DIR to a writable folder, or to 'off'")


def remember(query: str, delta: float, compute: Callable[[], float]) -> float:
    """The number ``compute()`` returns for an accounting ``query`` at ``delta``, kept in the
    store like a certificate (keyed by the query's text, which must name everything the
    number depends on besides ``delta`` and the accounting code; the number is stored in the
    record's ``epsilon`` field with the basis ``"query"``): a noise search evaluates the same
    candidates in every run, so a later process reads them instead of loading the accountant.
    The number returned is exactly what ``compute`` gave."""
    stored = load(query, delta)
    if stored is not None and stored["basis"] == _QUERY and stored["epsilon"] is not None:
        return stored["epsilon"]
    value = float(compute())
    save(query, delta, value, _QUERY)
    return value


_QUERY = "query"


@functools.cache
def _warn_once(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)

"""Where the numbers of the noise searches persist between processes: one small JSON file per
(query, delta).

A noise search evaluates the same candidates in every run; a later process reads their epsilons
instead of loading the accountant and composing again. The file name is a digest of the
query's text, the delta, the installed ``dp_accounting`` version and the source of this
accounting package: a new accountant or a changed accounting module never reads an old number.
Files are written atomically (temporary file + rename), so processes sharing the folder read
either nothing or a whole file.

What the store is trusted for: saving time, nothing else. Every field of a record can be
computed by anyone, so a record proves nothing about where its number came from. Nothing read
from the store can lower the noise a component draws or change the epsilon certified for it:

* a record is validated by type and range (a finite number >= 0, or inf) and by the fields
  that restate its key; one that fails is ignored and recomputed;
* a caller that reads a number checks it against a bound computed without the store
  (:func:`remember`'s ``check``: the GDP and zCDP conversions in closed form; a noise search
  re-checks its answer with the accountant, and recomputes the whole search without the store
  when the answer fails, see :func:`~dpbandits.privacy.accounting.calibration.calibrate`);
* certificates (:func:`~dpbandits.privacy.accounting.certification.certify`) are never read
  from the store: they are recomputed from the ledger in every process;
* a folder that another user owns, or that group or others may write (or whose parent they may
  write without the sticky bit), is not used at all, as ssh refuses such key files: one
  warning, and numbers are computed in memory. The folder is created with mode 0o700.

A record ignored or a folder refused warns once per process and folder.

Folder: ``$DPBANDITS_CACHE_DIR`` if set (``off`` or an empty value disables the store), else
``$XDG_CACHE_HOME/dpbandits`` or ``~/.cache/dpbandits``, under ``certificates/``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TypeGuard

__all__ = ["keep", "lookup", "remember", "store_dir", "warn_ignored"]


def store_dir() -> Path | None:
    """The folder the store is configured in, or ``None`` when the store is off (whether the
    folder may be used is :func:`_trusted_dir`'s question)."""
    configured = os.environ.get("DPBANDITS_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "off"):
            return None
        return Path(configured) / "certificates"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dpbandits" / "certificates"


def _unsafe(folder: Path) -> str | None:
    """Why ``folder`` must not be used (another user could plant records in it), or None.

    The folder, when it exists, must be owned by this process's user and not writable by
    group or others; its parent must not be writable by group or others unless sticky (as
    ``/tmp``: then nobody else can rename the folder away and put theirs in its place)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - no POSIX owners (Windows): nothing to compare
        return None
    for path, is_parent in ((folder, False), (folder.parent, True)):
        try:
            st = os.stat(path)
        except OSError:
            continue  # not there yet: created below with mode 0o700
        writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if is_parent:
            if writable and not st.st_mode & stat.S_ISVTX:
                return (f"its parent {path} is writable by group or others "
                        f"(mode {stat.S_IMODE(st.st_mode):o})")
            continue
        if st.st_uid != getuid():
            return f"{path} is owned by another user (uid {st.st_uid})"
        if writable:
            return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _trusted_dir() -> Path | None:
    """:func:`store_dir` when it may be used, else ``None`` (a refused folder warns once)."""
    folder = store_dir()
    if folder is None:
        return None
    why = _unsafe(folder)
    if why is not None:
        _warn_once(f"the dpbandits store is not used: {why}; anyone who can write it could "
                   "plant numbers (chmod go-w, or set DPBANDITS_CACHE_DIR to a folder of your "
                   "own, or to 'off')")
        return None
    return folder


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


def _path(folder: Path, query: str, delta: float) -> Path:
    digest = hashlib.sha256()
    for part in (_code_version(), repr(float(delta)), query):
        digest.update(part.encode() + b"\0")
    return folder / f"{digest.hexdigest()[:32]}.json"


def _valid_number(value: object) -> TypeGuard[float]:
    """A number a query can give: a float >= 0, finite or inf (never NaN, null, a string, a
    bool, an int or a negative number)."""
    return isinstance(value, float) and value >= 0.0  # NaN compares False


def lookup(query: str, delta: float) -> float | None:
    """The number stored for ``query`` at ``delta`` if a valid record holds one, else ``None``
    (no record, the store off or refused, or a record that fails validation: ignored, with
    one warning). The caller must check the number before it sets noise (module docstring)."""
    folder = _trusted_dir()
    if folder is None:
        return None
    path = _path(folder, query, delta)
    try:
        text = path.read_text()
    except OSError:
        return None  # nothing stored (or unreadable: as if nothing were)
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        warn_ignored(f"{path.name} is not a JSON record")
        return None
    # the digest names the content; the fields say it again
    if (record.get("code") != _code_version() or record.get("delta") != float(delta)
            or record.get("query_sha256") != hashlib.sha256(query.encode()).hexdigest()):
        warn_ignored(f"{path.name} names another query, delta or accounting code")
        return None
    value = record.get("value")
    if not _valid_number(value):
        warn_ignored(f"{path.name} holds {value!r}, not a number >= 0")
        return None
    return value


def keep(query: str, delta: float, value: float) -> None:
    """Store ``value`` for ``query`` at ``delta`` (a write failure warns once and is otherwise
    ignored: the store only saves time)."""
    folder = _trusted_dir()
    if folder is None or not _valid_number(value):
        return
    record = {"code": _code_version(), "delta": float(delta), "value": value,
              "query_sha256": hashlib.sha256(query.encode()).hexdigest()}
    path = _path(folder, query, delta)
    tmp = None
    try:
        _make_private_dirs(folder)
        why = _unsafe(folder)  # a folder created between the check and here by someone else
        if why is not None:
            raise PermissionError(why)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        _warn_once(f"accounting numbers are not cached: cannot write to {folder} ({exc}); "
                   "set DPBANDITS_CACHE_DIR to a writable folder, or to 'off'")


def _make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and its missing parents with mode 0o700 (``Path.mkdir(parents=True)``
    would give the parents the umask's mode, group-writable under a umask of 002)."""
    missing = []
    path = folder
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)


def remember(query: str, delta: float, compute: Callable[[], float],
             check: Callable[[float], bool]) -> float:
    """The number ``compute()`` gives for an accounting ``query`` at ``delta`` (its text must
    name everything the number depends on besides ``delta`` and the accounting code), kept in
    the store. A stored number is returned only when ``check(number)`` holds, a check computed
    without the store that fails for any number that would lower noise (e.g. the closed-form
    delta of a stored GDP ``mu``); otherwise it is ignored with one warning, recomputed and
    stored again. The number returned is what ``compute`` gave, or a stored one that passed
    ``check``."""
    stored = lookup(query, delta)
    if stored is not None:
        if check(stored):
            return stored
        warn_ignored(f"the number {stored!r} stored for {query.splitlines()[0]} at "
                     f"delta={delta!r} fails its check")
    value = float(compute())
    keep(query, delta, value)
    return value


def warn_ignored(detail: str) -> None:
    """One warning per process and store folder: a record failed its check (``detail`` says
    how) and was ignored; the number is recomputed."""
    folder = store_dir()
    if folder in _WARNED:
        return
    _WARNED.add(folder)
    warnings.warn(f"the dpbandits store in {folder} holds a record that fails its check, "
                  f"ignored and recomputed ({detail}); later ones are ignored silently",
                  RuntimeWarning, stacklevel=3)


#: store folders for which :func:`warn_ignored` has warned in this process
_WARNED: set[Path | None] = set()


@functools.cache
def _warn_once(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)

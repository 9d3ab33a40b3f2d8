"""Output directories: checked before any work, never a mix of stale and new files.

A directory written by a command holds a marker file ``.dpbandits-run.json`` naming the
command and the fingerprint of its configuration. :func:`prepare_out_dir` applies one policy:

* missing or empty: created and used;
* holds results of the same command and configuration and the command can resume
  (``sweep``, ``reproduce``): used, finished work is kept;
* otherwise: refused with one line, unless ``overwrite`` -- then its contents are deleted
  first, but only if the marker shows dpbandits wrote it (a directory of other files is never
  deleted);
* not writable: refused with one line.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from dpbandits.harness.config import ConfigError
from dpbandits.harness.results import atomic_write_bytes, dumps_json

MARKER = ".dpbandits-run.json"


def _marker(path: Path) -> dict | None:
    try:
        return json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None


def prepare_out_dir(out: str | os.PathLike[str], *, command: str, fingerprint: str,
                    overwrite: bool = False, resumable: bool = False) -> Path:
    """Check and claim ``out`` for ``command`` (module docstring); return it as a Path.

    Raises ``ConfigError`` (one line, naming the directory and the way out) when the
    directory cannot be used.
    """
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out '{path}' exists and is not a directory")
    contents = [p for p in path.iterdir() if p.name != MARKER] if path.is_dir() else []
    if contents:
        mark = _marker(path)
        same = (mark is not None and mark.get("command") == command
                and mark.get("fingerprint") == fingerprint)
        if overwrite:
            if mark is None:
                raise ConfigError(f"--out '{path}' is not empty and was not written by "
                                  "dpbandits; refusing to delete it: choose another --out")
            _clear(path)
        elif not (resumable and same):
            what = ("the results of this same configuration" if same
                    else "results of a different configuration" if mark is not None
                    else "files not written by dpbandits")
            how = ("use --overwrite to replace them" if mark is not None
                   else "choose an empty or new directory")
            raise ConfigError(f"--out '{path}' already holds {what}; {how}"
                              + (" (re-running the same configuration resumes it)"
                                 if resumable and mark is not None else ""))
    try:
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path / MARKER, dumps_json({"command": command,
                                                      "fingerprint": fingerprint}))
    except OSError as exc:
        raise ConfigError(f"--out '{path}' is not writable: {exc.strerror or exc}") from None
    return path


def _clear(path: Path) -> None:
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            os.unlink(child)

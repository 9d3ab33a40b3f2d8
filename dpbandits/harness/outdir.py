"""Output directories: checked before any work, never a mix of stale and new files, and
earlier results never lost to a run that does not finish.

A directory written by a command holds a marker file ``.dpbandits-run.json`` naming the
command and the fingerprint of its configuration. :func:`claim_out_dir` applies one policy:

* missing or empty: created and used;
* holds results of the same command and configuration and the command can resume
  (``sweep``, ``reproduce``): used, finished work is kept;
* otherwise: refused with one line, unless ``overwrite`` -- and only if the marker shows
  dpbandits wrote it (a directory of other files is never touched). The new run is then
  written beside it, into the hidden sibling ``.<name>.dpbandits-new`` of the same parent
  directory, and replaces the earlier results only when it completes
  (:meth:`OutDir.commit`: two renames on one file system, the earlier results deleted last).
  A run that fails or is interrupted leaves the earlier results exactly as they were
  (:meth:`OutDir.abandon`); a resumable command keeps its unfinished new run in the sibling,
  and re-running it with ``overwrite`` resumes there; a commit cut short between its two
  renames is finished by the next claim of the directory;
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
#: suffixes of the hidden siblings of ``out`` while a run replaces it
NEW, OLD = ".dpbandits-new", ".dpbandits-old"


def _marker(path: Path) -> dict | None:
    try:
        return json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None


def _contents(path: Path) -> list[Path]:
    return [p for p in path.iterdir() if p.name != MARKER] if path.is_dir() else []


class OutDir:
    """A claimed output directory: the run writes into :attr:`path`; :attr:`out` is the
    directory the user named. They differ while the run replaces earlier results
    (:attr:`replacing`), until :meth:`commit`. As a context manager it commits when the
    block completes and abandons the run when the block raises (the error stands)."""

    def __init__(self, out: Path, path: Path, *, replacing: bool, resumable: bool) -> None:
        self.out, self.path = out, path
        self.replacing, self.resumable = replacing, resumable

    def __enter__(self) -> OutDir:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if exc is None:
            self.commit()
        else:
            self.abandon()

    def commit(self) -> Path:
        """Put the finished run in place of the earlier results (when replacing); return
        :attr:`out`."""
        if self.replacing and self.path != self.out:
            aside = self.out.with_name(f".{self.out.name}{OLD}")
            if aside.exists():  # left by a commit cut short: ours (the name says so)
                shutil.rmtree(aside)
            os.rename(self.out, aside)
            try:
                os.rename(self.path, self.out)
            except BaseException:
                os.rename(aside, self.out)
                raise
            shutil.rmtree(aside, ignore_errors=True)
            self.path = self.out
        return self.out

    def abandon(self) -> None:
        """The run did not complete: the earlier results stay as they were; the new run is
        deleted, unless the command resumes (then it is kept for the next run)."""
        if self.replacing and self.path != self.out and not self.resumable:
            shutil.rmtree(self.path, ignore_errors=True)

    def kept_note(self) -> str:
        """What a failed or interrupted run left of the earlier results (for the status
        line), or ``""`` when it replaced none."""
        if not self.replacing or self.path == self.out:
            return ""
        return f"the earlier results in {self.out} were kept unchanged"


def claim_out_dir(out: str | os.PathLike[str], *, command: str, fingerprint: str,
                  overwrite: bool = False, resumable: bool = False) -> OutDir:
    """Check and claim ``out`` for ``command`` (module docstring).

    Raises ``ConfigError`` (one line, naming the directory and the way out) when the
    directory cannot be used. With ``overwrite`` and earlier results in ``out``, the returned
    :class:`OutDir` writes beside them; call :meth:`OutDir.commit` when the run completes
    (or use it as a context manager).
    """
    path = Path(out).expanduser()
    _finish_cut_commit(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out '{path}' exists and is not a directory")
    target, replacing = path, False
    if _contents(path):
        mark = _marker(path)
        same = (mark is not None and mark.get("command") == command
                and mark.get("fingerprint") == fingerprint)
        if overwrite:
            if mark is None:
                raise ConfigError(f"--out '{path}' is not empty and was not written by "
                                  "dpbandits; refusing to delete it: choose another --out")
            target, replacing = _sibling(path, command, fingerprint, resumable), True
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
        target.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target / MARKER, dumps_json({"command": command,
                                                        "fingerprint": fingerprint}))
    except OSError as exc:
        raise ConfigError(f"--out '{path}' is not writable: {exc.strerror or exc}") from None
    return OutDir(path, target, replacing=replacing, resumable=resumable)


def _finish_cut_commit(path: Path) -> None:
    """A commit cut short between its two renames (a SIGKILL, a power loss) leaves ``path``
    missing, the earlier results aside and the finished run in the new sibling: finish it
    (the finished run in place, then the earlier results deleted, as the commit would have),
    or, without a finished run, put the earlier results back."""
    aside = path.with_name(f".{path.name}{OLD}")
    if path.exists() or not aside.is_dir() or _marker(aside) is None:
        return
    new = path.with_name(f".{path.name}{NEW}")
    if new.is_dir() and _marker(new) is not None:
        os.rename(new, path)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(aside, path)


def _sibling(path: Path, command: str, fingerprint: str, resumable: bool) -> Path:
    """The hidden sibling a replacing run writes into: a resumable command's unfinished run
    of the same configuration is resumed there; anything else dpbandits left there is
    deleted."""
    new = path.with_name(f".{path.name}{NEW}")
    if new.exists():
        mark = _marker(new)
        if mark is None and _contents(new):
            raise ConfigError(f"'{new}' is in the way of --overwrite (it holds files not "
                              "written by dpbandits): move it away")
        same = (mark is not None and mark.get("command") == command
                and mark.get("fingerprint") == fingerprint)
        if not (resumable and same):
            shutil.rmtree(new) if new.is_dir() else os.unlink(new)
    return new


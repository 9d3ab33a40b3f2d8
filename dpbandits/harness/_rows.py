"""What ``dpbandits list``'s light listing and the catalogue that builds its rows share: the
file of built-in rows and the cut of a description. Below both, so that neither imports the
other for them (the listing imports the catalogue, lazily, for plugins' rows only)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CATALOGUE_FILE", "short"]

#: the built-in rows, written by ``python -m dpbandits.harness.catalogue``
CATALOGUE_FILE = Path(__file__).with_name("catalogue.json")


def short(text: str, width: int = 72) -> str:
    """``text`` cut to ``width`` characters, with ``...`` when cut."""
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."

"""The command line shared by the benchmarks: ``--name`` options, the result printed as JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable


def run(bench: Callable[..., dict], doc: str, argv=None, **options) -> None:
    """Parse one ``--name`` option per keyword of ``options`` and print ``bench(**values)`` as
    indented JSON. A default is an int (an integer option), ``False`` (a flag) or ``None`` (a
    text option, e.g. a path); a ``(default, help)`` pair adds a help text. ``doc``'s first
    line describes the command."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    for name, spec in options.items():
        default, help_ = spec if isinstance(spec, tuple) else (spec, None)
        if isinstance(default, bool):
            ap.add_argument(f"--{name}", action="store_true", help=help_)
        elif default is None:
            ap.add_argument(f"--{name}", default=None, metavar="PATH", help=help_)
        else:
            ap.add_argument(f"--{name}", type=int, default=default, help=help_)
    print(json.dumps(bench(**vars(ap.parse_args(argv))), indent=2))

"""The command-line reference page (``docs/cli.md``), written from the CLI's own argparse
parser at every build (``docs/conf.py``): the page cannot disagree with ``--help``."""

from __future__ import annotations

import argparse
import contextlib
import io
import os

from dpbandits.cli import build_parser

#: the width the help is wrapped at on the page (argparse reads it from $COLUMNS)
WIDTH = 96


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _audit_help() -> str:
    """``dpbandits audit --help``: the audit runner parses its own options."""
    from dpbandits.audits.__main__ import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["--help"], prog="dpbandits audit")
    return out.getvalue()


def cli_reference() -> str:
    """The page's Markdown: the top-level help, then each command's ``--help``."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        parser = build_parser()
        parts = ["# Command-line reference", "",
                 "Every command of `dpbandits` with its options, as `dpbandits COMMAND --help` "
                 "prints them (this page is written from the same parser when the site is "
                 "built). A problem with the input is one line on stderr and exit status 2; "
                 "see the module docstring of `dpbandits.cli` for the precedence of flags, "
                 "`--config` and defaults.", "", "## `dpbandits`", "", "```text",
                 parser.format_help().rstrip(), "```"]
        for name, sub in _subcommands(parser).items():
            text = _audit_help() if name == "audit" else sub.format_help()
            parts += ["", f"## `dpbandits {name}`", "", "```text", text.rstrip(), "```"]
        return "\n".join(parts) + "\n"
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old

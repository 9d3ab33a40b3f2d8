"""Command-line entry point ``dpbandits``."""

from __future__ import annotations

import argparse
import json
import sys


def _demo(args: argparse.Namespace) -> int:
    from dpbandits.privacy.guarantee import PrivacyGuarantee

    g = PrivacyGuarantee(epsilon=1.0, delta=1e-4, basis="demo")
    print(json.dumps({"guarantee": str(g)}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpbandits", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the small end-to-end demo")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

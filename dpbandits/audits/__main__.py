"""``python -m dpbandits.audits [component ...] [--thorough] [--power] [--json] [--seed S]``.

Runs the selected audits (all by default; shell patterns such as ``'dp-ucb*'`` work) and
prints the table, or a JSON list with one object per audit. ``--power`` also runs each
audit's broken variant. Exit status 1 if any verdict differs from the expected one.
``--markdown`` runs nothing and prints the selected audits' sections of
``docs/privacy-audit.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from dpbandits.audits import AUDITS, MISSING, format_table, run_audits, select


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def main(argv=None, prog: str = "python -m dpbandits.audits") -> int:
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Empirical privacy audits of dpbandits.")
    parser.add_argument("components", nargs="*", help="audit names or patterns (default: all)")
    parser.add_argument("--thorough", action="store_true", help="thorough tier (slow)")
    parser.add_argument("--power", action="store_true", help="also run the broken variants")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true", help="list the audits and exit")
    parser.add_argument("--markdown", action="store_true",
                        help="print the audits' sections of docs/privacy-audit.md and exit")
    args = parser.parse_args(argv)
    try:
        chosen = select(args.components or None)
    except ValueError as exc:  # an unknown name: one line, not a traceback
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.list:  # the selected audits (all by default)
        for name in chosen:
            print(f"{name:30s} {AUDITS[name].component}")
        for name, reason in MISSING.items():
            if not args.components:
                print(f"{name:30s} MISSING: {reason}")
        return 0
    if args.markdown:
        print("\n\n".join(AUDITS[n].markdown() for n in select(args.components or None)))
        return 0
    results = run_audits(args.components or None, "thorough" if args.thorough else "fast",
                         args.seed, power=args.power)
    if args.json:
        print(json.dumps([_jsonable(r.to_dict()) for r in results], indent=1))
    else:
        print(format_table(results))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

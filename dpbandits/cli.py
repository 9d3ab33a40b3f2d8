"""Command-line interface: ``dpbandits run | compare | sweep | reproduce | audit | list``.

Configuration errors print one line naming the bad key or value and exit with status 2
(``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

EXIT_USAGE = 2


def _parse_value(text: str):
    """A TOML literal (number, bool, string, list) or, failing that, the raw string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _parse_assignments(items, what: str) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            from dpbandits.harness.config import ConfigError

            raise ConfigError(f"{what} {item!r} must look like key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = _parse_value(value.strip())
    return out


def _config_from_args(args, *, several: bool) -> dict:
    from dpbandits.harness.config import ConfigError, load_config, validate_config

    if args.config:
        cfg = load_config(args.config)
    else:
        if not args.env or not args.agent:
            raise ConfigError("give a --config file, or --env and at least one --agent")
        params = _parse_assignments(args.param, "--param")
        agents = {}
        for name in args.agent:
            own = {k.split(".", 1)[1]: v for k, v in params.items()
                   if k.startswith(name + ".")}
            shared = {k: v for k, v in params.items() if "." not in k}
            agents[name] = {"name": name, "params": {**shared, **own}}
        if not several and len(agents) != 1:
            raise ConfigError("run takes exactly one --agent (use compare for several)")
        cfg = validate_config({"env": args.env, "agents": agents,
                               "env_params": _parse_assignments(args.env_param, "--env-param")})
    for key in ("horizon", "n_reps", "seed", "record_every", "out"):
        value = getattr(args, key, None)
        if value is not None:
            cfg[key] = value
    return cfg


def _cmd_compare(args, several=True) -> int:
    from dpbandits.harness.compare import compare
    from dpbandits.harness.plots import plot_final_regret_distribution, plot_regret_curves
    from dpbandits.harness.results import save_results

    cfg = _config_from_args(args, several=several)
    agents = {label: (spec["name"], spec.get("params", {}))
              for label, spec in cfg["agents"].items()}
    frame, summary, results = compare(
        agents, cfg["env"], horizon=cfg.get("horizon"), n_reps=cfg.get("n_reps", 1),
        seed=cfg.get("seed", 0), env_params=cfg.get("env_params"),
        record_every=cfg.get("record_every", 1))
    out = Path(cfg.get("out", f"results/{args.command}"))
    record = {"command": args.command, "config": cfg,
              "privacy": {k: r.privacy for k, r in results.items()},
              "certified": {k: r.certified for k, r in results.items()}}
    save_results(frame, record, out, csv=args.csv)
    summary.to_csv(out / "summary.csv", index=False)
    plot_regret_curves(frame, out / "regret", svg=args.svg)
    plot_final_regret_distribution(frame, out / "final_regret", svg=args.svg)
    print(summary.to_string(index=False))
    print(f"results written to {out}")
    return 0


def _cmd_run(args) -> int:
    return _cmd_compare(args, several=False)


def _cmd_sweep(args) -> int:
    from dpbandits.harness.config import ConfigError, load_config
    from dpbandits.harness.results import save_results, summarize
    from dpbandits.harness.sweep import SweepSpec, sweep

    cfg = load_config(args.config)
    if "horizon" not in cfg:
        raise ConfigError("sweep configs need the key 'horizon'")
    spec = SweepSpec(agents=cfg["agents"], env=cfg["env"], horizon=cfg["horizon"],
                     seeds=cfg.get("seeds", [cfg.get("seed", 0)]), n_reps=cfg.get("n_reps", 1),
                     env_params=cfg.get("env_params", {}), env_grid=cfg.get("env_grid", {}),
                     record_every=cfg.get("record_every", 1))
    out = Path(args.out or cfg.get("out", "results/sweep"))
    frame = sweep(spec, out, n_jobs=args.jobs or cfg.get("n_jobs", 1),
                  scheduler=args.scheduler or cfg.get("scheduler"), progress=not args.quiet)
    save_results(frame, {"command": "sweep", "config": cfg}, out, csv=args.csv)
    group = ["agent"] + sorted(c for c in frame.columns if c.startswith(("agent.", "env.")))
    print(summarize(frame, by=group).to_string(index=False))
    print(f"results written to {out}")
    return 0


def _cmd_reproduce(args) -> int:
    from dpbandits.harness.reproduce import REPRODUCTIONS

    if args.target not in REPRODUCTIONS:
        from dpbandits.harness.config import ConfigError

        raise ConfigError(f"unknown reproduction {args.target!r}; available: "
                          f"{sorted(REPRODUCTIONS)}")
    return REPRODUCTIONS[args.target](args)


def _cmd_audit(args) -> int:
    from dpbandits.audits.__main__ import main as audit_main

    return audit_main(args.rest)


def _cmd_list(args) -> int:
    import gymnasium

    import dpbandits.envs  # noqa: F401
    from dpbandits.agents import available_agents

    print("environments:")
    for env_id in sorted(k for k in gymnasium.registry if k.startswith("dpbandits/")):
        print(f"  {env_id}")
    print("agents:")
    for name in available_agents():
        print(f"  {name}")
    return 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML configuration file")
    p.add_argument("--env", help="registered environment id")
    p.add_argument("--agent", action="append", help="agent name (repeat for several)")
    p.add_argument("--param", action="append", metavar="[AGENT.]KEY=VALUE",
                   help="agent parameter (TOML literal)")
    p.add_argument("--env-param", action="append", metavar="KEY=VALUE",
                   help="environment parameter")
    p.add_argument("--horizon", type=int)
    p.add_argument("--reps", dest="n_reps", type=int, help="replications")
    p.add_argument("--seed", type=int)
    p.add_argument("--record-every", type=int)
    p.add_argument("--out", help="output directory")
    p.add_argument("--csv", action="store_true", help="also write CSV")
    p.add_argument("--svg", action="store_true", help="also write SVG plots")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpbandits", description="Differentially private contextual bandits.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="simulate one agent on one environment")
    _add_common(run)
    run.set_defaults(func=_cmd_run)
    cmp_ = sub.add_parser("compare", help="several agents on the same instances and contexts")
    _add_common(cmp_)
    cmp_.set_defaults(func=_cmd_compare)

    sw = sub.add_parser("sweep", help="parallel, resumable grid of runs (TOML config)")
    sw.add_argument("config", help="TOML configuration file")
    sw.add_argument("--out")
    sw.add_argument("--jobs", type=int, help="local worker processes")
    sw.add_argument("--scheduler", help="Dask scheduler address (tcp://host:port)")
    sw.add_argument("--csv", action="store_true")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=_cmd_sweep)

    rep = sub.add_parser("reproduce", help="reproduce a published figure or table")
    rep.add_argument("target", help="e.g. fig5.1")
    rep.add_argument("--panels", default="AB", help="panels to run, e.g. AB or ABC")
    rep.add_argument("--size", choices=["tiny", "small", "full"], default="small")
    rep.add_argument("--reps", type=int, help="replications (overrides the size preset)")
    rep.add_argument("--horizon", type=int, help="horizon (overrides the size preset)")
    rep.add_argument("--jobs", type=int, default=1)
    rep.add_argument("--out", help="output directory")
    rep.add_argument("--svg", action="store_true")
    rep.add_argument("--quiet", action="store_true")
    rep.set_defaults(func=_cmd_reproduce)

    aud = sub.add_parser(
        "audit", help="empirical privacy audits: dpbandits audit [component ...] [--json] "
        "[--thorough] [--power] [--list]", add_help=False)
    aud.add_argument("rest", nargs=argparse.REMAINDER)
    aud.set_defaults(func=_cmd_audit)

    lst = sub.add_parser("list", help="registered environments and agents")
    lst.set_defaults(func=_cmd_list)

    demo = sub.add_parser("demo", help="alias of 'reproduce fig5.1' at the small size")
    demo.set_defaults(func=lambda a: _cmd_reproduce(argparse.Namespace(
        target="fig5.1", panels="AB", size="small", reps=None, horizon=None, jobs=1,
        out=None, svg=False, quiet=False, debug=a.debug)))
    return parser


def main(argv: list[str] | None = None) -> int:
    from dpbandits.harness.config import ConfigError

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["audit"]:  # its options belong to the audit runner; pass them through
        from dpbandits.audits.__main__ import main as audit_main

        return audit_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, ValueError, TypeError) as exc:
        if args.debug:
            raise
        print(f"dpbandits {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

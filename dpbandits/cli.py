"""Command-line interface: ``dpbandits run | compare | sweep | reproduce | audit | list |
describe``.

Every command first validates everything it was given -- the configuration, every agent's
parameters (by building each agent once), the plugins, the output directory -- and only then
simulates. A problem found there is the user's: one line on stderr naming the key or value,
exit status 2. An exception raised after validation is a bug in dpbandits: its traceback is
shown with a line saying so (exit status 1). Ctrl-C ends with one line (exit status 130);
a sweep keeps its finished cells and resumes when re-run.

Precedence: a flag given on the command line overrides the same setting of ``--config``,
which overrides the default. ``--agent`` cannot be combined with ``--config`` (agents are
declared in the file; ``--param LABEL.KEY=VALUE`` overrides their parameters).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from dpbandits.errors import UserError

if TYPE_CHECKING:
    from dpbandits.harness.outdir import OutDir

EXIT_USAGE = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a killed writer


class _State:
    """What the running command has validated and where it writes (for the error lines)."""

    validated = False
    out: Path | None = None
    claim: OutDir | None = None  # the claimed --out (says whether earlier results were kept)
    resumable = False
    #: what an interrupted run keeps and what re-running it recomputes (resumable commands)
    kept = "finished cells are kept in {out} and the same command resumes"


def _written(out: Path | None) -> bool:
    """Whether ``out`` holds anything besides the marker claiming it (some result)."""
    from dpbandits.harness.outdir import MARKER

    try:
        return out is not None and any(p.name != MARKER for p in out.iterdir())
    except OSError:
        return False


# -- parsing flags into a configuration ------------------------------------------------------
def _parse_value(text: str):
    """A TOML literal (number, bool, string, list) or, failing that, the raw string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _parse_assignments(items, what: str) -> dict:
    from dpbandits.harness.config import ConfigError

    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"{what} {item!r} must look like key=value")
        key, value = item.split("=", 1)
        out[key.strip()] = _parse_value(value.strip())
    return out


def _agents_from_flags(specs: list[str]) -> dict:
    """``--agent NAME`` or ``--agent LABEL=NAME`` -> {label: {"name": NAME}}."""
    from dpbandits.harness.config import ConfigError

    agents: dict = {}
    for spec in specs:
        label, _, name = spec.partition("=") if "=" in spec else (spec, "", spec)
        label, name = label.strip(), name.strip()
        if not label or not name:
            raise ConfigError(f"--agent {spec!r} must be NAME or LABEL=NAME")
        if label in agents:
            raise ConfigError(f"--agent label {label!r} is given twice; give distinct labels "
                              f"with --agent LABEL=NAME (e.g. --agent {label}-2={name})")
        agents[label] = {"name": name, "params": {}}
    return agents


def _apply_params(agents: dict, params: dict) -> None:
    """``--param KEY=V`` (every agent) and ``--param LABEL.KEY=V`` (one agent), in place."""
    from dpbandits.harness.config import ConfigError, did_you_mean

    for key, value in params.items():
        label, dot, name = key.partition(".")
        if not dot:
            for spec in agents.values():
                spec.setdefault("params", {})[key] = value
        elif label in agents:
            agents[label].setdefault("params", {})[name] = value
        else:
            raise ConfigError(f"--param {key!r} names agent label {label!r}, which is not in "
                              f"this run{did_you_mean(label, agents)}; labels: {list(agents)}")


def _config_from_args(args, *, several: bool) -> dict:
    """The validated configuration of ``run``/``compare``: ``--config`` and the flags."""
    from dpbandits.harness.config import (
        DEFAULT_N_REPS,
        ConfigError,
        read_config,
        validate_config,
    )
    from dpbandits.plugins import load_plugins

    load_plugins(args.plugin)
    if args.config:
        if args.agent:
            raise ConfigError("--agent cannot be combined with --config: declare agents as "
                              "[agents.<label>] in the file (--param LABEL.KEY=VALUE overrides "
                              "their parameters)")
        raw = read_config(args.config)
    else:
        if not args.env or not args.agent:
            raise ConfigError("give a --config file, or --env and at least one --agent")
        raw = {"env": args.env, "agents": _agents_from_flags(args.agent)}
    if args.config and args.env:
        raw["env"] = args.env
    agents = {label: {**spec, "params": dict(spec.get("params", {}))}
              for label, spec in dict(raw.get("agents", {})).items()}
    if agents:
        _apply_params(agents, _parse_assignments(args.param, "--param"))
        raw["agents"] = agents
    env_params = _parse_assignments(args.env_param, "--env-param")
    if env_params:
        raw["env_params"] = {**raw.get("env_params", {}), **env_params}
    for key in ("horizon", "n_reps", "seed", "record_every", "out"):
        value = getattr(args, key, None)
        if value is not None:
            raw[key] = value
    raw["plugins"] = list(dict.fromkeys([*raw.get("plugins", []), *(args.plugin or [])]))
    if not raw["plugins"]:
        del raw["plugins"]
    cfg = validate_config(raw)
    if "seeds" in cfg:
        raise ConfigError("'seeds' is for sweeps; run and compare take one 'seed'")
    if not several and len(cfg["agents"]) != 1:
        raise ConfigError("run takes exactly one agent (use compare for several)")
    cfg.setdefault("n_reps", DEFAULT_N_REPS)
    cfg.setdefault("seed", 0)
    cfg.setdefault("record_every", 1)
    return cfg


def _progress(args) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


# -- commands ----------------------------------------------------------------------------------
def _cmd_compare(args, several=True) -> int:
    from dpbandits.harness.config import check_agents, fingerprint
    from dpbandits.harness.outdir import claim_out_dir

    cfg = _config_from_args(args, several=several)
    check_agents(cfg)
    claim = claim_out_dir(cfg.get("out", f"results/{args.command}"), command=args.command,
                          fingerprint=fingerprint(cfg), overwrite=args.overwrite)
    _State.claim, _State.out, _State.validated = claim, claim.path, True
    with claim:  # replaces earlier results (--overwrite) only when the run completes
        results, summary, privacy = _compare_into(claim.path, cfg, args)
    out = _State.out = claim.out
    from dpbandits.harness.report import format_summary, privacy_notes, replay_notes

    print(format_summary(summary))
    reference = next(iter(results.values())).reference_reward
    for line in [*replay_notes(summary, reference), *privacy_notes(summary, privacy)]:
        print(line)
    print(f"results written to {out}")
    return 0


def _compare_into(out: Path, cfg: dict, args) -> tuple[dict, object, list]:
    """The simulations of run/compare and their files and plots, written into ``out``."""
    from dpbandits.harness.compare import privacy_records, run_agents
    from dpbandits.harness.pipeline import CompareOutputs

    agents = {label: (spec["name"], spec.get("params", {}))
              for label, spec in cfg["agents"].items()}
    # the frame, Parquet, JSON and CSV files are written by a background thread while the
    # plots are drawn (harness.pipeline); the plots are moved beside them once they are
    # written
    with CompareOutputs(out, cfg["record_every"], csv=args.csv,
                        plots=not args.no_plot) as outputs:
        results = run_agents(
            agents, cfg["env"], horizon=cfg.get("horizon"), n_reps=cfg["n_reps"],
            seed=cfg["seed"], env_params=cfg.get("env_params"), progress=_progress(args))
        privacy = privacy_records(results)
        record = {"command": args.command, "config": cfg, "privacy": privacy}
        # the environment's declared range, which the agents that take one were given
        declared = next(iter(results.values())).config.get("env_reward_range")
        if declared is not None:
            record["env_reward_range"] = declared
        outputs.write(results, record)
        if not args.no_plot:
            outputs.draw(lambda folder: _plot_compare(results, folder, args,
                                                      cfg["record_every"]))
        summary = outputs.wait()
    return results, summary, privacy


def _plot_compare(results, out: Path, args, record_every: int = 1) -> None:
    from dpbandits.harness.plots import (
        plot_final_regret_distribution,
        plot_regret_curves,
        plot_reward_curves,
        privacy_label,
        run_title,
        thinned_frame,
    )

    labels = {k: f"{k} — {privacy_label(r.privacy, r.certified)}" for k, r in results.items()}
    first = next(iter(results.values()))
    title = run_title(first.config.get("env", "?"), first.horizon)
    # each plot draws at most MAX_POINTS rounds, always the last: the frame of those rounds
    # is built from the results' arrays (the rows thin_rounds keeps of the whole frame), so
    # the plots need not wait for it; the box plot reads the last round's rows
    regret = any(r.regret is not None for r in results.values())
    frame = thinned_frame(list(results.values()), record_every, log=args.log and regret)
    if not regret:  # replay of logged data: reward, no oracle
        plot_reward_curves(frame, out / "reward", svg=args.svg, band=args.band, labels=labels,
                           reference=first.reference_reward, title=title)
        plot_final_regret_distribution(frame, out / "final_reward", svg=args.svg,
                                       labels=labels, title=title)
        return
    floor = next((k for k, r in results.items() if r.config.get("agent_name") == "random"),
                 None)
    plot_regret_curves(frame, out / "regret", svg=args.svg, log=args.log, band=args.band,
                       labels=labels, floor=floor, title=title)
    plot_final_regret_distribution(frame, out / "final_regret", svg=args.svg, labels=labels,
                                   title=title)


def _cmd_run(args) -> int:
    return _cmd_compare(args, several=False)


def _cmd_sweep(args) -> int:
    from dpbandits.harness.config import ConfigError, check_agents, fingerprint, load_config
    from dpbandits.harness.outdir import claim_out_dir
    from dpbandits.harness.report import format_summary, privacy_notes
    from dpbandits.harness.sweep import SweepSpec, cells_done, sweep, write_sweep_results
    from dpbandits.plugins import load_plugins

    load_plugins(args.plugin)
    cfg = load_config(args.config)
    if "horizon" not in cfg:
        raise ConfigError("sweep configs need the key 'horizon'")
    plugins = list(dict.fromkeys([*cfg.get("plugins", []), *(args.plugin or [])]))
    check_agents(cfg)
    spec = SweepSpec(agents=cfg["agents"], env=cfg["env"], horizon=cfg["horizon"],
                     seeds=cfg.get("seeds", [cfg.get("seed", 0)]),
                     n_reps=cfg.get("n_reps", 10), env_params=cfg.get("env_params", {}),
                     env_grid=cfg.get("env_grid", {}), record_every=cfg.get("record_every", 1))
    n_cells = len(spec.cells())  # validates sizes and seeds
    claim = claim_out_dir(args.out or cfg.get("out", "results/sweep"), command="sweep",
                          fingerprint=fingerprint(cfg), overwrite=args.overwrite,
                          resumable=True)
    _State.claim, _State.out, _State.validated, _State.resumable = (claim, claim.path, True,
                                                                     True)
    done = cells_done(spec, claim.path)
    if done and not args.quiet:
        print(f"dpbandits sweep: resuming: {done} of {n_cells} cells done in {claim.path}",
              file=sys.stderr)
    on_done = None
    if not args.quiet and not sys.stderr.isatty():  # no bar: one line per finished cell
        def on_done(cell, count=[done]):  # noqa: B006 - the running count of finished cells
            count[0] += 1
            params = ", ".join(f"{k}={v}" for k, v in (*cell.agent_params, *cell.env_params))
            print(f"dpbandits sweep: cell {count[0]} of {n_cells} done: {cell.label}"
                  f"{f' ({params})' if params else ''}, seed {cell.seed}",
                  file=sys.stderr, flush=True)
    with claim:  # replaces earlier results (--overwrite) only when the sweep completes
        frame = sweep(spec, claim.path, n_jobs=args.jobs or cfg.get("n_jobs", 1),
                      scheduler=args.scheduler or cfg.get("scheduler"),
                      progress=_progress(args), plugins=plugins, on_done=on_done)
        summary = write_sweep_results(spec, frame, claim.path,
                                      {"command": "sweep", "config": cfg}, csv=args.csv)
    out = _State.out = claim.out
    print(format_summary(summary))
    for line in privacy_notes(summary):
        print(line)
    print(f"results written to {out} (summary.csv: one row per agent and swept value, "
          f"over {len(spec.seeds)} seed(s) x {spec.n_reps} replications)")
    return 0


def _cmd_reproduce(args) -> int:
    from dpbandits.harness.config import ConfigError, did_you_mean
    from dpbandits.harness.reproduce import REPRODUCTIONS
    from dpbandits.plugins import load_plugins

    load_plugins(args.plugin)
    if args.target not in REPRODUCTIONS:
        raise ConfigError(f"unknown reproduction {args.target!r}"
                          f"{did_you_mean(args.target, REPRODUCTIONS)}; available: "
                          f"{sorted(REPRODUCTIONS)}")
    args.progress = _progress(args)
    return REPRODUCTIONS[args.target](args, _State)


def _cmd_list(args) -> int:
    from dpbandits.harness.listing import agent_rows, env_rows
    from dpbandits.plugins import load_plugins

    load_plugins(args.plugin)
    print("environments (K arms, d dimensions, T horizon, link, reward noise):")
    for row in env_rows():
        print(f"  {row['id']:34s} K={row['K']:<3} d={row['d']:<4} T={row['T']:<7} "
              f"{row['link']:9s} {row['noise']}\n      {row['description']}")
    print("agents (privacy notion at the defaults):")
    for row in agent_rows():
        print(f"  {row['name']:20s} {row['privacy']:16s} {row['description']}")
    print("dpbandits describe AGENT shows an agent's parameters and full guarantee.")
    return 0


def _cmd_describe(args) -> int:
    from dpbandits.harness.catalogue import describe_agent
    from dpbandits.plugins import load_plugins

    load_plugins(args.plugin)
    print(describe_agent(args.agent, env=args.env))
    return 0


# -- parser --------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse turns the error into one usage line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value

class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, like every other user error:
    ``dpbandits COMMAND: error: MESSAGE (see dpbandits COMMAND --help)``, exit status 2; an
    unknown flag gets the closest known one (did you mean)."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        message = " ".join(message.split())
        if message.startswith("unrecognized arguments:"):
            message = self._unrecognized(message.split(":", 1)[1].split())
        match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if match:
            import difflib

            choices = re.findall(r"'([^']*)'", match.group(2))
            close = difflib.get_close_matches(match.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {close[0]!r}?)"
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)

    def _unrecognized(self, extra: list[str]) -> str:
        import difflib

        known = [o for action in self._actions for o in action.option_strings]
        flags = [w for w in extra if w.startswith("-")]
        if not flags:
            return f"unexpected argument(s) {' '.join(extra)!r}"
        parts = []
        for flag in flags:
            name = flag.split("=", 1)[0]
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return (f"unknown option {', '.join(parts)}; options: "
                f"{', '.join(o for o in known if o.startswith('--'))}")


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, but not the ``(default: None)`` of flags that have none."""

    def _get_help_string(self, action):
        if action.default in (None, False) or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def _add_output(p: argparse.ArgumentParser, *, plots: bool = True) -> None:
    p.add_argument("--out", help="output directory (must be new or empty; see --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results already in --out")
    p.add_argument("--csv", action="store_true", help="also write the frame as CSV")
    p.add_argument("--quiet", action="store_true",
                   help="no progress (a bar on a terminal; sweep prints one line per finished "
                   "cell elsewhere)")
    p.add_argument("--plugin", action="append", metavar="PATH_OR_MODULE",
                   help="import a module or .py file that registers agents/envs (repeatable)")
    if plots:
        p.add_argument("--no-plot", action="store_true", help="write no plots")
        p.add_argument("--svg", action="store_true", help="also write SVG plots")
        p.add_argument("--log", action="store_true", help="log-scale regret plots")
        p.add_argument("--band", choices=["se", "bootstrap", "none"], default="se",
                       help="confidence band: mean ± 1.96 SE, seaborn bootstrap, or none")


def _add_common(p: argparse.ArgumentParser) -> None:
    from dpbandits._defaults import DEFAULT_N_REPS

    p.add_argument("--config", help="TOML configuration file (flags override it)")
    p.add_argument("--env", help="registered environment id (see dpbandits list)")
    p.add_argument("--agent", action="append", metavar="[LABEL=]NAME",
                   help="agent name, optionally labelled; run takes one, compare several (repeat "
                   "--agent)")
    p.add_argument("--param", action="append", metavar="[LABEL.]KEY=VALUE",
                   help="agent parameter as a TOML literal; without LABEL, for every agent")
    p.add_argument("--env-param", action="append", metavar="KEY=VALUE",
                   help="environment parameter (TOML literal)")
    p.add_argument("--horizon", type=int, help="rounds (default: the environment's)")
    p.add_argument("--reps", dest="n_reps", type=int,
                   help=f"replications (default {DEFAULT_N_REPS})")
    p.add_argument("--seed", type=int, help="seed of the run (default 0)")
    p.add_argument("--record-every", type=int, help="record the curves every k rounds "
                   "(default 1)")
    _add_output(p)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dpbandits", description="Differentially private contextual bandits.",
        formatter_class=_Formatter)
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks of usage errors too")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name, func, help_):
        p = sub.add_parser(name, help=help_, description=help_, formatter_class=_Formatter)
        p.set_defaults(func=func)
        return p

    _add_common(command("run", _cmd_run, "simulate one agent on one environment"))
    _add_common(command("compare", _cmd_compare,
                        "several agents on the same instances and contexts"))

    sw = command("sweep", _cmd_sweep, "parallel, resumable grid of runs (TOML config)")
    sw.add_argument("config", help="TOML configuration file")
    sw.add_argument("--jobs", type=_positive_int, help="local worker processes (default 1)")
    sw.add_argument("--scheduler", help="Dask scheduler address (tcp://host:port)")
    _add_output(sw, plots=False)

    rep = command("reproduce", _cmd_reproduce, "reproduce a published figure or table")
    rep.add_argument("target", help="e.g. fig5.1")
    rep.add_argument("--panels", default="AB", help="panels to run, e.g. AB or ABC")
    rep.add_argument("--size", choices=["tiny", "small", "full"], default="small",
                     help="preset of horizon and replications")
    rep.add_argument("--reps", type=int, help="replications (overrides the size preset)")
    rep.add_argument("--horizon", type=int, help="horizon (overrides the size preset)")
    rep.add_argument("--jobs", type=_positive_int, default=1, help="worker processes")
    _add_output(rep)

    aud = sub.add_parser(
        "audit", help="empirical privacy audits: dpbandits audit [component ...] [--json] "
        "[--thorough] [--power] [--list]", add_help=False)
    aud.add_argument("rest", nargs=argparse.REMAINDER)

    lst = command("list", _cmd_list, "registered environments and agents")
    lst.add_argument("--plugin", action="append", metavar="PATH_OR_MODULE",
                     help="import a module or .py file that registers agents/envs first "
                     "(repeatable)")
    desc = command("describe", _cmd_describe,
                   "an agent's description, parameters with defaults and privacy guarantee")
    desc.add_argument("agent", help="registered agent name")
    desc.add_argument("--env", default="dpbandits/Figure5.1-v0",
                      help="environment whose sizes (K, d, T) the guarantee is computed for")
    desc.add_argument("--plugin", action="append", metavar="PATH_OR_MODULE",
                      help="import a module or .py file that registers agents (repeatable)")

    demo = command("demo", None, "alias of 'reproduce fig5.1 --size small --panels AB'")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func=lambda a: _cmd_reproduce(argparse.Namespace(
        command="reproduce", target="fig5.1", panels="AB", size="small", reps=None,
        horizon=None, jobs=1, out=None, overwrite=True, csv=False, svg=False, log=False,
        band="se", no_plot=False, plugin=None, quiet=a.quiet, debug=a.debug)))
    return parser


def _kept() -> str:
    """``"; the earlier results in OUT were kept unchanged"`` when a replacing run stopped."""
    note = _State.claim.kept_note() if _State.claim is not None else ""
    return f"; {note}" if note else ""


def _bug(exc: BaseException, command: str) -> int:
    traceback.print_exception(exc)
    where = _kept() or (f"; results written so far are in {_State.out}"
                        if _written(_State.out) else "")
    print(f"dpbandits {command}: internal error ({type(exc).__name__}) -- this is a bug in "
          f"dpbandits, please report it with the command line above{where}", file=sys.stderr)
    return EXIT_BUG


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["audit"]:  # its options belong to the audit runner; pass them through
        from dpbandits.audits.__main__ import main as audit_main

        return audit_main(argv[1:], prog="dpbandits audit")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the subcommand's parser names the stray flag, with its own options
        commands = next(a for a in parser._actions
                        if isinstance(a, argparse._SubParsersAction)).choices
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    _State.validated, _State.out, _State.resumable, _State.claim = False, None, False, None
    _State.kept = "finished cells are kept in {out} and the same command resumes"
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning(args.command)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        kept = ""
        if _kept():
            kept = _kept() + ("; this run's finished work is kept in " f"{_State.out} and "
                              "the same command resumes it" if _State.resumable else "")
        elif _State.out is not None:
            kept = ("; " + _State.kept.format(out=_State.out) if _State.resumable
                    else f"; nothing complete was written to {_State.out}")
        print(f"dpbandits {args.command}: interrupted{kept}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`dpbandits list | head`): stop quietly
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except UserError as exc:
        if args.debug:
            raise
        print(f"dpbandits {args.command}: error: {exc}{_kept()}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, TypeError, FileNotFoundError) as exc:
        if _State.validated:
            return _bug(exc, args.command)
        if args.debug:
            raise
        print(f"dpbandits {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - anything else is a bug: say so, show it
        return _bug(exc, args.command)
    finally:
        warnings.showwarning = shown


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail again."""
    try:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (e.g. captured)
        pass


def _one_line_warning(command: str):
    """A ``warnings.showwarning`` printing each distinct warning once, as one line on stderr
    without the source line (validation and the run may both raise the same warning)."""
    seen: set[tuple] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        key = (category, str(message))
        if key in seen:
            return
        seen.add(key)
        text = " ".join(str(message).split())
        print(f"dpbandits {command}: warning: {text} ({category.__name__})",
              file=file or sys.stderr)

    return show


if __name__ == "__main__":
    sys.exit(main())

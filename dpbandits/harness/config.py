"""TOML run/compare/sweep configurations, validated with one clear error per problem.

Schema (all commands)::

    env = "dpbandits/Figure5.1-v0"   # registered env id (required)
    plugins = ["my_agents.py"]       # modules or .py files imported first (register agents)
    horizon = 1000                   # rounds (default: the env's)
    n_reps = 20                      # replications per seed (default 10)
    seed = 0                         # or seeds = [0, 1, 2] for sweeps
    record_every = 10
    out = "results/my-run"
    [env_params]                     # keyword arguments of the env
    [env_grid]                       # sweep only: {param = [values]}
    [agents.<label>]                 # one table per agent
    name = "dp-hdb"                  # registry name (required)
    params = { epsilon = 1.0 }
    grid = { epsilon = [0.5, 1.0] }  # sweep only

Command-line flags given together with ``--config`` override the file (flag > file >
default); see ``dpbandits.cli``.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import itertools
import json
import os
import tomllib
from collections.abc import Iterable
from pathlib import Path

from dpbandits._defaults import DEFAULT_N_REPS  # noqa: F401  (re-exported: a run's default)
from dpbandits.errors import MissingExtraError, UserError


class ConfigError(UserError, ValueError):
    """An invalid configuration: the message names the key, the value and what is allowed."""


TOP_KEYS = {"env", "horizon", "n_reps", "seed", "seeds", "record_every", "out", "env_params",
            "env_grid", "agents", "n_jobs", "scheduler", "plugins"}
AGENT_KEYS = {"name", "params", "grid"}
#: keys that do not change what a run computes (left out of its fingerprint)
_NOT_FINGERPRINTED = {"out", "n_jobs", "scheduler", "plugins"}


def did_you_mean(word: str, choices: Iterable[object]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def fingerprint(cfg: dict) -> str:
    """A hash of what a configuration computes (output location and workers excluded)."""
    blob = json.dumps({k: v for k, v in cfg.items() if k not in _NOT_FINGERPRINTED},
                      sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def _expect(key: str, value, kind, what: str):
    if isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"config key '{key}' must be {what}, got {value!r}")
    if not isinstance(value, kind):
        raise ConfigError(f"config key '{key}' must be {what}, got {value!r}")
    return value


def read_config(path: str | os.PathLike[str]) -> dict:
    """The raw table of a TOML file (not yet validated). Relative ``.py`` paths in its
    ``plugins`` are made relative to the file's folder (module names are left as they are)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file '{p}' does not exist")
    try:
        raw = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file '{p}' is not valid TOML: {exc}") from None
    if isinstance(raw.get("plugins"), list):
        raw["plugins"] = [_beside(p, spec) for spec in raw["plugins"]]
    return raw


def _beside(config: Path, spec):
    """A relative plugin file path of ``config`` as a path from its folder."""
    if not isinstance(spec, str) or not (spec.strip().endswith(".py") or "/" in spec
                                         or os.sep in spec):
        return spec
    path = Path(spec.strip()).expanduser()
    return spec if path.is_absolute() else str(config.parent / path)


def load_config(path: str | os.PathLike[str]) -> dict:
    """Read a TOML file and validate it (see the module docstring)."""
    return validate_config(read_config(path))


def _refuse_unknown_keys(table: dict, allowed, *, prefix: str) -> None:
    unknown = set(table) - set(allowed)
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"unknown config key '{prefix}{key}'{did_you_mean(key, allowed)}; "
                          f"allowed: {sorted(allowed)}")


def validate_config(raw: dict) -> dict:
    """Check keys and types; return a normalised dict (agents as label -> spec)."""
    from dpbandits.agents import available_agents

    _refuse_unknown_keys(raw, TOP_KEYS, prefix="")
    if "env" not in raw:
        raise ConfigError("config is missing the required key 'env' (a registered env id)")
    cfg = dict(raw)
    _expect("env", cfg["env"], str, "a registered env id string")
    for key in ("horizon", "n_reps", "seed", "record_every", "n_jobs"):
        if key in cfg:
            _expect(key, cfg[key], int, "an integer")
            if cfg[key] < (0 if key == "seed" else 1):
                raise ConfigError(f"config key '{key}' must be >= "
                                  f"{0 if key == 'seed' else 1}, got {cfg[key]}")
    if "plugins" in cfg:
        _expect("plugins", cfg["plugins"], list, "a list of module names or .py paths")
        for spec in cfg["plugins"]:
            _expect("plugins", spec, str, "a list of module names or .py paths")
        from dpbandits.plugins import load_plugins

        load_plugins(cfg["plugins"])
    if "seeds" in cfg:
        if "seed" in cfg:
            raise ConfigError(f"config keys 'seed' = {cfg['seed']!r} and 'seeds' = "
                              f"{cfg['seeds']!r} are both given; keep one ('seeds' for a "
                              "sweep over several)")
        _expect("seeds", cfg["seeds"], list, "a list of non-negative integers")
        if not cfg["seeds"]:
            raise ConfigError("config key 'seeds' is an empty list; give at least one seed")
        for s in cfg["seeds"]:
            if isinstance(s, bool) or not isinstance(s, int) or s < 0:
                raise ConfigError(f"config key 'seeds' must hold non-negative integers, got {s!r}")
    for key in ("env_params", "env_grid"):
        if key in cfg:
            _expect(key, cfg[key], dict, "a table")
    if "env_grid" in cfg:
        for k, v in cfg["env_grid"].items():
            _expect(f"env_grid.{k}", v, list, "a list of values")
    if "agents" not in cfg:
        raise ConfigError("config is missing the required table 'agents' "
                          "([agents.<label>] with a 'name')")
    agents = _expect("agents", cfg["agents"], dict, "a table of [agents.<label>] tables")
    if not agents:
        raise ConfigError("config table 'agents' is empty")
    known = set(available_agents())
    for label, spec in agents.items():
        _expect(f"agents.{label}", spec, dict, "a table")
        _refuse_unknown_keys(spec, AGENT_KEYS, prefix=f"agents.{label}.")
        if "name" not in spec:
            raise ConfigError(f"config is missing the required key 'agents.{label}.name'")
        name = _expect(f"agents.{label}.name", spec["name"], str, "an agent name")
        if name not in known:
            raise ConfigError(f"config key 'agents.{label}.name' = {name!r} is not a "
                              f"registered agent{did_you_mean(name, known)}; known: "
                              f"{sorted(known)}")
        if "params" in spec:
            _expect(f"agents.{label}.params", spec["params"], dict, "a table")
        if "grid" in spec:
            _expect(f"agents.{label}.grid", spec["grid"], dict, "a table of lists")
            for k, v in spec["grid"].items():
                _expect(f"agents.{label}.grid.{k}", v, list, "a list of values")
                if not v:
                    raise ConfigError(f"config key 'agents.{label}.grid.{k}' is an empty list")
    import gymnasium

    import dpbandits.envs  # noqa: F401  (registers the ids)

    if cfg["env"] not in gymnasium.registry:
        ids = sorted(k for k in gymnasium.registry if k.startswith("dpbandits/"))
        raise ConfigError(f"config key 'env' = {cfg['env']!r} is not a registered env id"
                          f"{did_you_mean(cfg['env'], gymnasium.registry)}; "
                          f"dpbandits ids: {ids}")
    return cfg


def _combos(grid: dict | None) -> list[dict]:
    if not grid:
        return [{}]
    names = sorted(grid)
    return [dict(zip(names, values, strict=True))
            for values in itertools.product(*(grid[n] for n in names))]


def agent_parameter_names(name: str) -> list[str]:
    """The keyword parameters a registered agent's constructor accepts."""
    from dpbandits.agents import agent_class

    params = inspect.signature(agent_class(name).__init__).parameters
    return [k for k, p in params.items() if k != "self" and p.kind is not p.VAR_KEYWORD]


def check_agents(cfg: dict) -> int:
    """Validate every agent of a normalised config before anything runs: parameter names
    (with a did-you-mean suggestion), then values, by building each agent once for every
    combination of its grid and of the env grid on the environment it will face. Returns the
    number of agent configurations checked; raises ``ConfigError`` naming the agent label,
    the parameter and the value."""
    from dpbandits.agents import agent_class
    from dpbandits.harness.faults import defined_in, is_builtin
    from dpbandits.harness.simulate import build_agent, env_reward_range, env_sizes, make_env

    checked = 0
    for env_combo in _combos(cfg.get("env_grid")):
        env_params = {**cfg.get("env_params", {}), **env_combo}
        try:
            venv = make_env(cfg["env"], 1, env_params)
        except (ValueError, TypeError, MissingExtraError) as exc:
            raise ConfigError(f"environment {cfg['env']!r} with parameters {env_params}: "
                              f"{exc}") from None
        n_arms, dim, env_horizon = env_sizes(venv)
        reward_range = env_reward_range(venv)
        venv.close()
        horizon = cfg.get("horizon", env_horizon)
        if horizon > env_horizon:
            raise ConfigError(f"horizon={horizon} exceeds the horizon {env_horizon} of "
                              f"{cfg['env']!r}; lower it or set env_params.horizon")
        for label, spec in cfg["agents"].items():
            allowed = agent_parameter_names(spec["name"])
            fixed, grid = dict(spec.get("params", {})), dict(spec.get("grid", {}))
            for key in [*fixed, *grid]:
                if key not in allowed:
                    hint = did_you_mean(key, allowed)
                    raise ConfigError(
                        f"agent '{label}' ({spec['name']}) has no parameter {key!r}{hint}; "
                        f"its parameters: {[k for k in allowed if k not in SIZE_PARAMS]}")
                if key in SIZE_PARAMS:
                    raise ConfigError(f"agent '{label}': {key!r} is set by the environment "
                                      f"({cfg['env']}), not by the agent's parameters")
            for combo in _combos(grid):
                params = {**fixed, **combo}
                try:
                    build_agent(spec["name"], n_arms, dim, horizon, params, reward_range)
                except (ValueError, TypeError) as exc:
                    raise ConfigError(f"agent '{label}' ({spec['name']}) with {params}: "
                                      f"{exc}") from None
                except Exception as exc:
                    cls = agent_class(spec["name"])
                    if is_builtin(cls):
                        raise
                    raise ConfigError(f"agent '{label}' ({spec['name']}, {defined_in(cls)}) "
                                      f"with {params} failed to build: "
                                      f"{type(exc).__name__}: {exc}") from exc
                checked += 1
    return checked


#: constructor arguments every agent takes from the environment
SIZE_PARAMS = ("n_arms", "dim", "horizon")

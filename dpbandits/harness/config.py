"""TOML run/compare/sweep configurations, validated with one clear error per problem.

Schema (all commands)::

    env = "dpbandits/Figure5.1-v0"   # registered env id (required)
    horizon = 1000                   # rounds (default: the env's)
    n_reps = 20                      # replications per seed
    seed = 0                         # or seeds = [0, 1, 2] for sweeps
    record_every = 10
    out = "results/my-run"
    [env_params]                     # keyword arguments of the env
    [env_grid]                       # sweep only: {param = [values]}
    [agents.<label>]                 # one table per agent
    name = "dp-hdb"                  # registry name (required)
    params = { epsilon = 1.0 }
    grid = { epsilon = [0.5, 1.0] }  # sweep only
"""

from __future__ import annotations

import tomllib
from pathlib import Path


class ConfigError(ValueError):
    """An invalid configuration: the message names the key, the value and what is allowed."""


TOP_KEYS = {"env", "horizon", "n_reps", "seed", "seeds", "record_every", "out", "env_params",
            "env_grid", "agents", "n_jobs", "scheduler"}
AGENT_KEYS = {"name", "params", "grid"}


def _expect(key: str, value, kind, what: str):
    if isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"config key '{key}' must be {what}, got {value!r}")
    if not isinstance(value, kind):
        raise ConfigError(f"config key '{key}' must be {what}, got {value!r}")
    return value


def load_config(path) -> dict:
    """Read a TOML file and validate it (see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file '{p}' does not exist")
    try:
        raw = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file '{p}' is not valid TOML: {exc}") from None
    return validate_config(raw)


def validate_config(raw: dict) -> dict:
    """Check keys and types; return a normalised dict (agents as label -> spec)."""
    from dpbandits.agents import available_agents

    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise ConfigError(f"unknown config key '{sorted(unknown)[0]}'; allowed: "
                          f"{sorted(TOP_KEYS)}")
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
    if "seeds" in cfg:
        _expect("seeds", cfg["seeds"], list, "a list of non-negative integers")
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
        bad = set(spec) - AGENT_KEYS
        if bad:
            raise ConfigError(f"unknown config key 'agents.{label}.{sorted(bad)[0]}'; allowed: "
                              f"{sorted(AGENT_KEYS)}")
        if "name" not in spec:
            raise ConfigError(f"config is missing the required key 'agents.{label}.name'")
        name = _expect(f"agents.{label}.name", spec["name"], str, "an agent name")
        if name not in known:
            raise ConfigError(f"config key 'agents.{label}.name' = {name!r} is not a "
                              f"registered agent; known: {sorted(known)}")
        if "params" in spec:
            _expect(f"agents.{label}.params", spec["params"], dict, "a table")
        if "grid" in spec:
            _expect(f"agents.{label}.grid", spec["grid"], dict, "a table of lists")
            for k, v in spec["grid"].items():
                _expect(f"agents.{label}.grid.{k}", v, list, "a list of values")
    import gymnasium

    import dpbandits.envs  # noqa: F401  (registers the ids)

    if cfg["env"] not in gymnasium.registry:
        ids = sorted(k for k in gymnasium.registry if k.startswith("dpbandits/"))
        raise ConfigError(f"config key 'env' = {cfg['env']!r} is not a registered env id; "
                          f"dpbandits ids: {ids}")
    return cfg

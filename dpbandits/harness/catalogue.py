"""What is registered, for ``dpbandits list`` and ``dpbandits describe``: environments with
their sizes and reward model, agents with their privacy notion and parameters.

Each environment and agent is built to read them. ``dpbandits list`` prints the built-in rows
from ``catalogue.json`` (:mod:`dpbandits.harness.listing`), which ``python -m
dpbandits.harness.catalogue`` rewrites from the functions here.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import textwrap

import gymnasium

import dpbandits.envs  # noqa: F401  (registers the ids)
from dpbandits._docparams import constructor_parameters, parameter_docs, plain_text
from dpbandits.envs import DESCRIPTIONS
from dpbandits.envs._datasets import SHAPES
from dpbandits.envs.classification import ClassificationBanditVectorEnv
from dpbandits.harness._rows import CATALOGUE_FILE
from dpbandits.harness._rows import short as _short

#: one-line descriptions of the built-in agents (plugins: the first sentence of the docstring)
AGENT_SUMMARIES = {
    "dp-hdb": "DP-HDB: forced sampling + private online Frank-Wolfe per arm",
    "dp-hdb-authors-code": "DP-HDB as the authors' code runs it (uncertified)",
    "dp-ucb": "DP-UCB of Shariff & Sheffet: LinUCB on a tree-private Gram",
    "dp-ucb-authors-code": "DP-UCB as the authors' code runs it (uncertified)",
    "fliphat": "FLIPHAT: sparse linear bandit, private IHT per episode",
    "greedy": "greedy plug-in GLM estimate per arm (non-private)",
    "linucb": "LinUCB / OFUL per arm (non-private reference)",
    "random": "uniform random arm: the floor every agent should beat",
}

#: the small problem an agent is built on to read its privacy notion for ``list``
_PROBE_SIZES = {"n_arms": 2, "dim": 5, "horizon": 100}


def _first_line(obj) -> str:
    """The first paragraph of ``obj``'s docstring on one line."""
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ").strip() or "(no description)"


def _first_sentence(obj) -> str:
    text = _first_line(obj).replace(" (module docstring)", "")
    return text.split(". ")[0].rstrip(".")


def env_rows(exclude: frozenset[str] | set[str] = frozenset()) -> list[dict]:
    """One row per ``dpbandits/`` id, and per id of any namespace built on the dpbandits
    environment classes (e.g. a plugin's variant of the GLM bandit): K, d, T, link, noise.
    Ids in ``exclude`` are left out."""
    rows = []
    for env_id in sorted(k for k, spec in gymnasium.registry.items()
                         if (k.startswith("dpbandits/")
                             or str(spec.vector_entry_point).startswith("dpbandits."))
                         and k not in exclude):
        row = _dataset_row(env_id, gymnasium.registry[env_id])
        if row is not None:
            rows.append(row)
            continue
        try:
            venv = gymnasium.make_vec(env_id, num_envs=1, vectorization_mode="vector_entry_point")
        except ImportError as exc:  # an id whose optional extra is not installed
            rows.append({"id": env_id, "K": "-", "d": "-", "T": "-", "link": "-", "noise": "-",
                         "description": _short(f"not available: {exc}", 94)})
            continue
        base = venv.unwrapped
        cfg = getattr(base, "config", None)
        noise = getattr(cfg, "noise", "-")
        std = getattr(cfg, "noise_std", None)
        rows.append({
            "id": env_id, "K": int(base.single_action_space.n),
            "d": int(base.single_observation_space.shape[0]), "T": int(base.horizon),
            "link": str(getattr(cfg, "link", "0/1")),
            "noise": f"{noise}({std:g})" if noise == "gaussian" and std else str(noise),
            "description": _short(DESCRIPTIONS.get(env_id) or _first_sentence(type(base)), 94),
        })
        venv.close()
    return rows


def _dataset_row(env_id: str, spec, *, assume_sklearn: bool = False) -> dict | None:
    """The row of a classification bandit on a built-in dataset with its defaults, from the
    dataset's known shape (:data:`dpbandits.envs._datasets.SHAPES`) instead of loading it
    (scikit-learn's import alone takes seconds); ``None`` for any other id, and when
    scikit-learn is missing (the id's row then says why it is not available) unless
    ``assume_sklearn``."""
    name = _builtin_dataset(spec)
    if name is None or (name != "iris" and not assume_sklearn
                        and importlib.util.find_spec("sklearn") is None):
        return None
    n_rows, dim, n_arms = SHAPES[name]
    return {"id": env_id, "K": n_arms, "d": dim, "T": n_rows, "link": "0/1", "noise": "-",
            "description": _short(DESCRIPTIONS.get(env_id)
                                  or _first_sentence(ClassificationBanditVectorEnv), 94)}


def _builtin_dataset(spec) -> str | None:
    """The built-in dataset an id's spec is the classification bandit of, at its defaults."""
    vector = f"{ClassificationBanditVectorEnv.__module__}:{ClassificationBanditVectorEnv.__name__}"
    name = dict(spec.kwargs).get("dataset")
    if spec.vector_entry_point != vector or set(spec.kwargs) != {"dataset"} or name not in SHAPES:
        return None
    return name


def agent_rows(exclude: frozenset[str] | set[str] = frozenset()) -> list[dict]:
    """One row per registered agent: its privacy notion at the defaults and a description.
    Agents in ``exclude`` are left out."""
    from dpbandits.agents import agent_class, available_agents, make_agent
    from dpbandits.harness.faults import is_builtin

    rows = []
    for name in available_agents():
        if name in exclude:
            continue
        cls = agent_class(name)
        try:
            privacy = make_agent(name, **_PROBE_SIZES).privacy
        except (ValueError, TypeError):
            privacy = "?"
        except Exception:
            if is_builtin(cls):
                raise
            privacy = "?"  # a user's agent that cannot be built at the probe sizes
        if privacy is None or privacy == "?":
            notion = "not private" if privacy is None else "?"
        elif privacy.notion == "none":
            notion = "not private"
        else:
            notion = privacy.notion + ("" if privacy.certified else " (NOT cert.)")
        rows.append({"name": name, "privacy": notion,
                     "description": _short(AGENT_SUMMARIES.get(name)
                                           or _first_sentence(cls), 58)})
    return rows


def parameter_lines(cls: type) -> list[str]:
    """``describe``'s parameter list: each constructor parameter of ``cls`` with its default,
    then its meaning from the ``Parameters`` section of the class (or a base class)."""
    from dpbandits.harness.config import SIZE_PARAMS

    docs = parameter_docs(cls)
    lines = []
    for par in constructor_parameters(cls):
        key = par.name
        default = "from the environment" if key in SIZE_PARAMS else (
            "required" if par.default is par.empty else repr(par.default))
        lines.append(f"  {key:18s} {default}")
        meaning = plain_text(docs[key].description) if key in docs else "(not documented)"
        lines += textwrap.wrap(meaning, 96, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return lines


def describe_agent(name: str, env: str = "dpbandits/Figure5.1-v0") -> str:
    """Description, parameters with defaults, and the guarantee at the defaults on ``env``."""
    from dpbandits.agents import agent_class
    from dpbandits.harness.simulate import build_agent, env_sizes, make_env
    from dpbandits.privacy.accounting.certification import certified_guarantee

    cls = agent_class(name)
    venv = make_env(env, 1)
    n_arms, dim, horizon = env_sizes(venv)
    venv.close()
    agent = build_agent(name, n_arms, dim, horizon, {})
    lines = [f"{name} ({cls.__module__}.{cls.__qualname__})", ""]
    lines += textwrap.wrap(_first_line(cls), 96)
    lines += ["", "parameters (default, then meaning):", *parameter_lines(cls)]
    lines += ["", f"privacy at the defaults on {env} (K={n_arms}, d={dim}, T={horizon}):"]
    privacy = agent.privacy
    if privacy is None:
        lines.append("  not private")
    else:
        lines += textwrap.wrap(str(privacy), 96, initial_indent="  ", subsequent_indent="  ")
        cert = certified_guarantee(agent)
        if cert is not None:
            eps = "not recomputable" if cert["epsilon"] is None else f"{cert['epsilon']:.4g}"
            lines.append(f"  certified epsilon (accountant, from its ledger): {eps}")
    return "\n".join(lines)


def builtin_catalogue() -> dict:
    """The rows of the built-in ids and agents, as ``catalogue.json`` holds them: a dataset id
    read from scikit-learn has its row as when it is installed, and ``sklearn_dataset``
    naming the dataset (:func:`dpbandits.harness.listing.env_rows` says it is not available
    when scikit-learn is missing). Built before any plugin is loaded."""
    from dpbandits.agents import agent_class
    from dpbandits.harness.faults import is_builtin

    envs = []
    for row in env_rows():
        if not row["id"].startswith("dpbandits/"):
            continue  # a plugin's id on a dpbandits class
        spec = gymnasium.registry[row["id"]]
        dataset = _builtin_dataset(spec)
        if dataset is not None and dataset != "iris":
            row = {**_dataset_row(row["id"], spec, assume_sklearn=True),
                   "sklearn_dataset": dataset}
        envs.append(row)
    agents = [row for row in agent_rows() if is_builtin(agent_class(row["name"]))]
    return {"environments": envs, "agents": agents}


def write_catalogue() -> None:
    """Rewrite ``catalogue.json`` from the built-in ids and agents."""
    catalogue = builtin_catalogue()
    lines = []
    for key in ("environments", "agents"):  # one row per line: a change is one line of diff
        rows = ",\n".join(f"  {json.dumps(row)}" for row in catalogue[key])
        lines.append(f' "{key}": [\n{rows}\n ]')
    CATALOGUE_FILE.write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    write_catalogue()
    print(f"wrote {CATALOGUE_FILE}")

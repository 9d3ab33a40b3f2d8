"""Shared pieces of the ``dp-screened-ls`` runs (``tune.py``, ``target.py``): one grid cell =
one agent on one instance for ``reps`` replications, stored as the per-replication final
regret; the ratio to uniform-random with a paired bootstrap interval."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from dpbandits.agents import make_agent
from dpbandits.harness.grid import GridCell, cell_digest
from dpbandits.harness.simulate import simulate
from dpbandits.privacy.accounting import epsilon_of
from experiments.certified_learning.instances import EVALUATION, TUNING, problem_size

AGENT = "dp-screened-ls"


def instance(name: str) -> tuple[str, dict, str]:
    if name in TUNING:
        return TUNING[name]
    return EVALUATION[name]


def sls_cell(inst: str, agent: str, params: dict, reps: int, seed: int,
             horizon: int | None = None) -> GridCell:
    """Cell of ``agent`` (a registry name) with ``params`` on instance ``inst`` (at its own
    horizon, or ``horizon``)."""
    tag = "default" if not params else cell_digest(params)[:10]
    name = f"{inst}__{agent}__{tag}__R{reps}__s{seed}"
    spec = {"instance": inst, "agent": agent, "params": json.dumps(params, sort_keys=True),
            "reps": reps}
    if horizon is not None:
        spec["horizon"] = horizon
        name += f"__T{horizon}"
    return GridCell(spec, seed, name)


def run_cell(cell: GridCell) -> pd.DataFrame:
    """Final cumulative regret per replication, with the agent's claimed and recomputed
    epsilon (``certified_epsilon``: dp_accounting on the agent's own ledger at its delta)."""
    env_id, env_params, _ = instance(cell["instance"])
    if "horizon" in cell.params:
        env_params = {**env_params, "horizon": cell["horizon"]}
    K, d = problem_size(env_params)
    params = json.loads(cell["params"])
    agent = make_agent(cell["agent"], n_arms=K, dim=d, horizon=env_params.get("horizon", 10_000),
                       **params)
    res = simulate(env_id, agent, n_reps=cell["reps"], seed=cell.seed, env_params=env_params,
                   label=cell["agent"])
    g = agent.privacy
    cert = (math.nan if agent.ledger is None or g is None
            else float(epsilon_of(agent.ledger, g.delta)))
    frame = pd.DataFrame({"rep": np.arange(cell["reps"]),
                          "final_regret": res.cum_regret[:, -1]})
    for key in ("instance", "agent", "params"):
        frame[key] = cell[key]
    frame["seed"] = cell.seed
    frame["horizon"] = res.horizon
    frame["epsilon"] = math.inf if g is None else g.epsilon
    frame["delta"] = math.nan if g is None else g.delta
    frame["certified_epsilon"] = cert
    frame["seconds"] = res.seconds
    if hasattr(agent, "n_clipped_rewards_"):
        frame["clipped_fraction"] = agent.n_clipped_rewards_ / res.horizon
    return frame


def table_sections(table, descs: dict, columns: tuple[str, ...]):
    """For each instance of ``descs`` with rows in ``table`` (a summary with an ``instance``
    column), ``(its rows, its markdown heading)``: ``## instance: description``, a blank line,
    the header of ``columns`` and its rule."""
    for inst, desc in descs.items():
        sub = table[table.instance == inst]
        if not sub.empty:
            yield sub, [f"## {inst}: {desc}", "", "| " + " | ".join(columns) + " |",
                        "|" + "---|" * len(columns)]


def ratio_ci(agent: np.ndarray, random: np.ndarray, n_boot: int = 10_000, seed: int = 0
             ) -> tuple[float, float, float]:
    """``mean(agent) / mean(random)`` and a 95% paired-bootstrap interval over replications
    (the two arrays are the same replications: common random numbers)."""
    agent, random = np.asarray(agent, float), np.asarray(random, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(agent), (n_boot, len(agent)))
    boots = agent[idx].mean(axis=1) / random[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return float(agent.mean() / random.mean()), float(lo), float(hi)

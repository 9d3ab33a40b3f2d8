"""Bandit agents: DP-HDB, DP-UCB and non-private references, created by name."""

from dpbandits.agents.base import (
    Agent,
    LinkMismatchWarning,
    PrivateAgent,
    agent_class,
    available_agents,
    make_agent,
    register_agent,
)

__all__ = ["Agent", "LinkMismatchWarning", "PrivateAgent", "agent_class", "available_agents",
           "make_agent", "register_agent"]

from dpbandits.agents import adac_oful as _adac_oful  # noqa: E402,F401
from dpbandits.agents import authors_code as _authors_code  # noqa: E402,F401  (registers)
from dpbandits.agents import budget_ls as _budget_ls  # noqa: E402,F401
from dpbandits.agents import dp_hdb as _dp_hdb  # noqa: E402,F401
from dpbandits.agents import dp_ucb as _dp_ucb  # noqa: E402,F401
from dpbandits.agents import fliphat as _fliphat  # noqa: E402,F401
from dpbandits.agents import ldp_linucb as _ldp_linucb  # noqa: E402,F401
from dpbandits.agents import moment_ls as _moment_ls  # noqa: E402,F401
from dpbandits.agents import references as _references  # noqa: E402,F401
from dpbandits.agents import screened_ls as _screened_ls  # noqa: E402,F401

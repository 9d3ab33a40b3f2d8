"""Pieces the component audits share: the canary pair, the changed noise plans (and wrapped
methods) of the broken variants, and the statistics of tree releases and of DP-POFW steps.

Broken variants are built from one *instance*: a copy drawing from a changed noise plan
(:func:`shrink_plan`, :meth:`dpbandits.privacy.plan.Planned.with_plan`) or with one method
wrapped (:func:`shrink_output`), never by changing the library code.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from dpbandits.optim.base import PrivateBatchOptimizer
from dpbandits.privacy.plan import NoisePlan
from dpbandits.privacy.tree import tree_levels

T = TypeVar("T")


def canary_pair(make: Callable[[int], T]) -> tuple[T, T]:
    """``(make(0), make(1))``: the neighbouring inputs ``D`` and ``D'``."""
    return make(0), make(1)


def signed(world: int, n: int, value: float = 1.0) -> np.ndarray:
    """``n`` copies of ``-value`` on ``D`` (``world = 0``) and ``+value`` on ``D'``."""
    return np.full(n, value if world else -value)


def first_user_round(probe, u0: np.ndarray, u1: np.ndarray, world: int, n: int,
                     rng: np.random.Generator, reward: float):
    """Round 1 of a first-user canary, ``n`` runs at once: the probe agent reset with ``rng``
    sees user 1 with context ``u0`` and reward ``-reward`` (world 0) or ``u1`` and
    ``+reward`` (world 1), on the arm it picks. Returns ``(agent, arm)``."""
    agent = probe.reset(n, rng)
    x = np.tile(u1 if world else u0, (n, 1))
    arm = agent.act(x)
    agent.update(x, arm, signed(world, n, reward))
    return agent, arm


def shrink_plan(component: T, factor: float, *names: str) -> T:
    """A copy of ``component`` whose noise plan has the named scales (all when none are
    named) divided by ``factor`` (:meth:`~dpbandits.privacy.plan.NoisePlan.scaled`): the
    broken variant. Its guarantee keeps the claim, marked not certified; ``component`` is
    unchanged. A batch optimizer has one plan per data-set size: every one is scaled
    (:meth:`~dpbandits.optim.base.PrivateBatchOptimizer.with_plan`)."""
    if isinstance(component, PrivateBatchOptimizer):
        return component.with_plan(functools.partial(_scaled, factor=factor, names=names))
    return component.with_plan(component.plan.scaled(factor, *names))  # type: ignore[attr-defined]


def _scaled(plan: NoisePlan, factor: float, names: tuple[str, ...]) -> NoisePlan:
    return plan.scaled(factor, *names)


def shrink_output(obj, method: str, factor: float, *fields: str):
    """Wrap ``obj.<method>`` so that the noise level it returns is divided by ``factor``: the
    named fields of a returned dataclass, else the first entry of a returned tuple (the
    per-step std), else the returned number. Returns ``obj``."""
    orig = getattr(obj, method)

    def patched(*args):
        out = orig(*args)
        if fields:
            return dataclasses.replace(out, **{f: getattr(out, f) / factor for f in fields})
        if isinstance(out, tuple):
            return (out[0] / factor, *out[1:])
        return out / factor

    setattr(obj, method, patched)
    return obj


def tree_read_rounds(horizon: int) -> set[int]:
    """Rounds ``t = 1, 2, 4, ..., 2^(L-1)``: the releases that are exactly the tree nodes
    holding the first element of a stream of length ``horizon``."""
    return {2**j for j in range(tree_levels(horizon))}


def pofw_step_score(new: np.ndarray, prev: np.ndarray, s: int) -> np.ndarray:
    """``sqrt(s)/(s+1) sign(v_s)`` for DP-POFW's step ``s``: the selected vertex ``v_s`` is
    recovered from two consecutive released iterates,
    ``v_s = (theta_new - (1 - eta) theta_prev) / eta`` with ``eta = min(1, 1/(s+1))``, and
    weighted by the step's privacy-loss weight."""
    eta = min(1.0, 1.0 / (s + 1.0))
    v = (new - (1.0 - eta) * prev) / eta
    return math.sqrt(s) / (s + 1.0) * np.sign(v)

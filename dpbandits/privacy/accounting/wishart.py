"""Closed-form check of :class:`~dpbandits.privacy.accounting.WishartTreeDpEvent` ledgers (a
binary tree of Wishart nodes, DP-UCB's Wishart noise), which no ``dp_accounting`` accountant
supports.

* **Per node, Sheffet 2015 Theorem 4.1**: adding ``W ~ Wishart_p(L^2 I, k)`` to the Gram
  matrix of rows of l_2 norm at most ``L`` is ``(eps0, delta0)``-DP for every ``delta0`` in
  (0, 1/e) with ``eps0(delta0) = sqrt(28 ln(4 / delta0) / (k - p))``, provided
  ``eps0 < 1`` (the theorem's requirement ``k >= p + 28 ln(4/delta0) / eps0^2``). A scale
  ``c >= L^2`` is the theorem applied to the rows divided by ``sqrt(c)`` (post-processing:
  multiply the release by ``c``); a scale below ``L^2`` certifies nothing.
* **Over the ``N`` nodes one datum enters, optimal composition** (Kairouz, Oh & Viswanath
  2015, Theorem 3.3 and its proof): every ``(eps0, delta0)``-DP mechanism is a post-processing
  of one dominating pair, so the ``N``-fold adaptive composition is ``(eps, delta)``-DP with
  ``delta = 1 - (1 - delta0)^N (1 - delta_RR(eps))``, ``delta_RR(eps) = sum_l C(N, l)
  [p^(N-l) q^l - e^eps q^(N-l) p^l]_+``, ``p = e^eps0 / (1 + e^eps0)``, ``q = 1 - p`` (the
  hockey-stick divergence of N-fold binary randomized response; at ``eps = (N - 2i) eps0``
  it is the theorem's ``delta_i``).

The per-node ``delta0`` is free: every choice is a valid certificate, so the check takes the
best over a fixed grid of ``delta0`` (and the smallest epsilon up to a bisection tolerance,
rounded up). The stored fields are the noise (degrees, scale), not a budget, so too few
degrees of freedom show as an epsilon above the claim.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as _ev

from dpbandits.privacy.accounting.events import WishartTreeDpEvent, flatten

__all__ = ["has_wishart_events", "wishart_tree_delta", "wishart_tree_epsilon"]

_GRID = 400  # delta0 grid points (log-spaced) of the free per-node delta
_BISECTION_STEPS = 60


def has_wishart_events(event: _ev.DpEvent) -> bool:
    """Whether ``event`` contains a :class:`WishartTreeDpEvent`."""
    counts, _ = flatten(event)
    return any(isinstance(leaf, WishartTreeDpEvent) for leaf in counts)


def _tree(event: _ev.DpEvent) -> tuple[int, int, bool] | None:
    """``(k - p, N)`` of a ledger made of Wishart trees (all with the same ``k - p``; the counts
    of equal trees add up), with whether the scale covers the rows; ``None`` if non-private."""
    counts, non_private = flatten(event)
    if non_private:
        return None
    trees = [leaf for leaf in counts if isinstance(leaf, WishartTreeDpEvent)]
    if len(trees) != len(counts):
        others = [leaf for leaf in counts if not isinstance(leaf, WishartTreeDpEvent)]
        raise ValueError(f"event mixes Wishart tree events with {others[0]!r}: no accountant "
                         "composes them")
    if len({leaf.degrees - leaf.dim for leaf in trees}) != 1:
        raise ValueError("Wishart tree events with different degrees of freedom over dimension "
                         f"(k - p) cannot be composed by this check: {trees!r}")
    for leaf in trees:
        if not (leaf.dim >= 1 and leaf.nodes_per_datum >= 1 and leaf.scale > 0
                and leaf.row_bound_sq > 0):
            raise ValueError(f"event {leaf!r} needs dim >= 1, nodes_per_datum >= 1 and a positive "
                             "scale and row bound")
    n = sum(count * leaf.nodes_per_datum for leaf, count in counts.items())
    covered = all(leaf.scale >= leaf.row_bound_sq for leaf in trees)
    return trees[0].degrees - trees[0].dim, n, covered


def _delta_rr(eps: np.ndarray, eps0: np.ndarray, n: int) -> np.ndarray:
    """Hockey-stick divergence at ``eps`` (broadcast with ``eps0``) of the ``n``-fold binary
    randomized response with parameter ``eps0`` (module docstring)."""
    eps, eps0 = np.broadcast_arrays(np.asarray(eps, float), np.asarray(eps0, float))
    log_p = -np.logaddexp(0.0, -eps0)[..., None]  # ln(e^eps0 / (1 + e^eps0))
    log_q = -np.logaddexp(0.0, eps0)[..., None]
    flips = np.arange(n + 1)
    log_comb = np.array([math.log(math.comb(n, i)) for i in flips])
    a = log_comb + (n - flips) * log_p + flips * log_q
    b = log_comb + eps[..., None] + (n - flips) * log_q + flips * log_p
    return np.clip(np.exp(a) - np.exp(b), 0.0, None).sum(axis=-1)


def _node_epsilons(gap: int, delta0: np.ndarray) -> np.ndarray:
    """``eps0(delta0)`` of Theorem 4.1 for ``k - p = gap`` (``inf`` where not applicable)."""
    if gap <= 0:
        return np.full(delta0.shape, math.inf)
    eps0 = np.sqrt(28.0 * np.log(4.0 / delta0) / gap)
    return np.where((eps0 < 1.0) & (delta0 < math.exp(-1.0)), eps0, math.inf)


def _delta0_grid(top: float) -> np.ndarray:
    top = min(top, math.exp(-1.0)) * (1.0 - 1e-9)
    return np.geomspace(top * 1e-12, top, _GRID)


def wishart_tree_epsilon(event: _ev.DpEvent, delta: float) -> float:
    """Smallest epsilon (up to a bisection tolerance, rounded up) for which the Wishart tree
    ledger ``event`` is certified ``(epsilon, delta)``-DP by the check of the module docstring;
    ``inf`` if no per-node ``delta0`` works (``delta = 0``, too few degrees of freedom, a scale
    below the rows' bound)."""
    tree = _tree(event)
    if tree is None or not tree[2] or delta <= 0.0:
        return math.inf
    gap, n, _ = tree
    delta0 = _delta0_grid(delta)
    eps0 = _node_epsilons(gap, delta0)
    # 1 - (1 - delta0)^N (1 - delta_RR) <= delta  <=>  delta_RR <= target
    target = 1.0 - (1.0 - delta) / np.exp(n * np.log1p(-delta0))
    ok = np.isfinite(eps0) & (target > 0.0)
    if not ok.any():
        return math.inf
    eps0, target = eps0[ok], target[ok]
    lo, hi = np.zeros_like(eps0), n * eps0  # delta_RR(N eps0) = 0
    done = _delta_rr(lo, eps0, n) <= target
    hi[done] = 0.0
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        below = _delta_rr(mid, eps0, n) <= target
        hi = np.where(below, mid, hi)
        lo = np.where(below, lo, mid)
    return float(hi.min())


def wishart_tree_delta(event: _ev.DpEvent, epsilon: float) -> float:
    """Smallest delta over the per-node ``delta0`` grid at which the Wishart tree ledger
    ``event`` is certified ``(epsilon, delta)``-DP (1 where nothing is certified)."""
    tree = _tree(event)
    if tree is None or not tree[2]:
        return 1.0
    gap, n, _ = tree
    delta0 = _delta0_grid(1.0)
    eps0 = _node_epsilons(gap, delta0)
    ok = np.isfinite(eps0)
    if not ok.any():
        return 1.0
    keep = np.exp(n * np.log1p(-delta0[ok]))
    total = 1.0 - keep * (1.0 - _delta_rr(np.full(ok.sum(), epsilon), eps0[ok], n))
    return float(min(1.0, max(0.0, total.min())))

"""RDP method: Renyi-DP curves of ledgers with dp_accounting's public ``RdpAccountant``.

Two neighbouring relations occur in the package:

* ``rdp_curve`` / ``epsilon_of(..., method="rdp")``: every event is read with dp_accounting's
  ``ADD_OR_REMOVE_ONE`` (noise relative to the sensitivity, Poisson subsampling add/remove),
  except randomized response (the pure-DP representation of
  :func:`~dpbandits.privacy.accounting.events.pure_dp_event`), which is read with
  ``REPLACE_ONE`` (input x versus input x'). Each distinct leaf of the flattened ledger is
  composed in its own public ``RdpAccountant`` built with the relation that leaf needs, and
  the curves are added order by order (RDP composes additively at each order), in the order
  of the leaves — exactly the sums an accountant composing them one after the other forms.
* ``replace_one_rdp_epsilon``: the whole ledger under ``REPLACE_ONE``, for ledgers of
  ``SampledWithoutReplacementDpEvent`` (Wang, Balle & Kasiviswanathan 2019, Theorem 27).

RDP orders
----------
:data:`RDP_ORDERS` is the package's grid. The sampled-without-replacement bound costs
``O(alpha^2)`` Python work per integer order up to 256, so two ledger families use cheaper
grids, kept because their committed results were computed on them (re-accounting on
another grid moves, e.g., LocalMD's certified epsilon at ``n = 1000`` from 0.02875 to 0.03102):
:data:`WOR_SEARCH_ORDERS` (a subset of :data:`RDP_ORDERS` up to 56, used by the noise searches
of DP-SVRG and Private SGD; their ledgers re-accounted on :data:`RDP_ORDERS` can only give a
smaller epsilon) and :data:`SCO_BASELINE_ORDERS` (LocalMD's and NoisySGD's ledgers, the
baselines of Han et al. 2022). Any set of orders gives a valid bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
import numpy as np
from dp_accounting import dp_event as _ev
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant, compute_epsilon
from dp_accounting.rdp.rdp_privacy_accountant import compute_delta
from numpy.typing import ArrayLike

from dpbandits._validation import check_delta_open
from dpbandits.privacy.accounting.events import check_event, flatten

__all__ = [
    "RDP_ORDERS",
    "SCO_BASELINE_ORDERS",
    "WOR_SEARCH_ORDERS",
    "delta_from_rdp",
    "epsilon_from_rdp",
    "rdp_curve",
    "replace_one_rdp",
    "replace_one_rdp_epsilon",
]

_NR = NeighboringRelation

#: The package's RDP orders: dp_accounting's defaults plus 2048 and 4096 for small total
#: privacy losses, whose optimal order is large. Not more: the subsampled-Gaussian RDP costs
#: O(order) per integer order (going up to 65536 makes it ~10x slower).
RDP_ORDERS: tuple[float, ...] = tuple(dp_accounting.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS
                                      ) + (2048, 4096)

#: Noise searches over sampled-without-replacement ledgers (DP-SVRG, Private SGD): the orders
#: of :data:`RDP_ORDERS` in [1.1, 4.9] by 0.1, [5, 10.5] by 0.5, 11..20, and 22..56.
WOR_SEARCH_ORDERS: tuple[float, ...] = tuple(
    [round(1 + x / 10.0, 10) for x in range(1, 40)]
    + [round(1 + x / 10.0, 10) for x in range(40, 100, 5)]
    + list(range(11, 21)) + [22, 24, 26, 28, 32, 36, 40, 48, 56]
)
assert set(WOR_SEARCH_ORDERS) <= set(RDP_ORDERS)

#: LocalMD's and NoisySGD's ledgers. Orders in (128, 256] are skipped (dp_accounting switches
#: to a cheap Stirling bound above 256); the optimum for their privacy levels lies below 128.
SCO_BASELINE_ORDERS: tuple[float, ...] = (
    (1.25, 1.5, 1.75) + tuple(float(a) for a in range(2, 33))
    + (40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 112.0, 128.0, 320.0, 512.0, 1024.0, 2048.0, 4096.0))


def _leaf_relation(leaf: _ev.DpEvent) -> dp_accounting.NeighboringRelation:
    if isinstance(leaf, _ev.RandomizedResponseDpEvent):
        return _NR.REPLACE_ONE
    return _NR.ADD_OR_REMOVE_ONE


def _composed_rdp(event: _ev.DpEvent, orders, relation) -> np.ndarray:
    accountant = RdpAccountant(orders=list(orders), neighboring_relation=relation)
    try:
        accountant.compose(event)
    except dp_accounting.UnsupportedEventError as exc:
        raise ValueError(f"event is not supported by the RDP method: {exc}") from None
    return accountant.rdp


def rdp_curve(event: _ev.DpEvent, orders: Sequence[float] = RDP_ORDERS) -> np.ndarray:
    """RDP of ``event`` at ``orders`` (add/remove-one; randomized response replace-one).

    Equal leaves are bucketed and self-composed; the per-leaf curves are summed in leaf order
    and a non-private event adds ``inf`` last. A leaf that itself wraps randomized response
    inside another event (e.g. ``RepeatAndSelectDpEvent``) is read with add/remove-one,
    which dp_accounting rejects (ValueError).
    """
    counts, non_private = flatten(event)
    total = np.zeros(len(orders))
    for leaf, c in counts.items():
        leaf_event = leaf if c == 1 else _ev.SelfComposedDpEvent(leaf, c)
        total += _composed_rdp(leaf_event, orders, _leaf_relation(leaf))
    if non_private:
        total += np.inf
    return total


def epsilon_from_rdp(rdp: ArrayLike, delta: float, orders: Sequence[float] = RDP_ORDERS
                     ) -> float:
    """Smallest epsilon at ``delta`` that the RDP curve ``rdp`` (at ``orders``) implies
    (dp_accounting's conversion, Canonne, Kamath & Steinke 2020)."""
    return float(compute_epsilon(np.asarray(orders), rdp, delta)[0])


def delta_from_rdp(rdp: ArrayLike, epsilon: float, orders: Sequence[float] = RDP_ORDERS
                   ) -> float:
    """Smallest delta at ``epsilon`` that the RDP curve ``rdp`` (at ``orders``) implies."""
    return float(compute_delta(np.asarray(orders), rdp, epsilon)[0])


def replace_one_rdp(event: _ev.DpEvent, orders: Sequence[float] = WOR_SEARCH_ORDERS
                    ) -> np.ndarray:
    """RDP curve of ``event`` at ``orders`` under ``REPLACE_ONE`` (no caching)."""
    return _composed_rdp(check_event(event), orders, _NR.REPLACE_ONE)


_CACHE: dict = {}


def replace_one_rdp_epsilon(event: _ev.DpEvent, delta: float,
                            orders: Sequence[float] = RDP_ORDERS) -> float:
    """Epsilon that dp_accounting's RDP accountant certifies for ``event`` at ``delta`` with
    ``REPLACE_ONE`` neighbours at ``orders`` (noise multipliers relative to the replace-one
    sensitivity; ``SampledWithoutReplacementDpEvent`` is accounted by Wang, Balle &
    Kasiviswanathan 2019, Thm. 27). Cached on the event's repr (``ComposedDpEvent`` holds a
    list, so events are not hashable)."""
    check_event(event)
    delta = check_delta_open(delta)
    key = (repr(event), float(delta), tuple(orders))
    if key not in _CACHE:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        curve = _composed_rdp(event, orders, _NR.REPLACE_ONE)
        _CACHE[key] = float(compute_epsilon(np.asarray(orders), curve, delta)[0])
    return _CACHE[key]

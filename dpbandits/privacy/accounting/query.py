"""Queries of a ledger: the epsilon (or delta) a ``dp_accounting`` event certifies, by the PLD
or the RDP method (composition is always dp_accounting's; the generalized-Gaussian and Wishart
tree ledgers no accountant supports are recomputed in closed form, :mod:`.closed_form` and
:mod:`.wishart`)."""

from __future__ import annotations

import math

from dp_accounting import dp_event as _ev

from dpbandits._validation import check_choice, check_delta, check_positive
from dpbandits.privacy.accounting.closed_form import (
    has_lemma_2_1_events,
    lemma_2_1_delta,
    lemma_2_1_epsilon,
)
from dpbandits.privacy.accounting.events import check_event
from dpbandits.privacy.accounting.rdp import delta_from_rdp, epsilon_from_rdp, rdp_curve
from dpbandits.privacy.accounting.wishart import (
    has_wishart_events,
    wishart_tree_delta,
    wishart_tree_epsilon,
)

__all__ = ["METHODS", "check_discretization", "delta_of", "epsilon_of"]

#: accountants of :func:`epsilon_of`
METHODS = frozenset({"pld", "rdp"})


def check_discretization(discretization: float | None) -> float | None:
    """``None`` (automatic) or a positive PLD value-discretization interval."""
    if discretization is None:
        return None
    return check_positive("discretization", discretization)


def _checked(event: _ev.DpEvent, method: str, discretization: float | None
             ) -> tuple[float | None, str | None]:
    """The checked discretization, and which closed form recomputes ``event`` (``"lemma_2_1"``,
    ``"wishart"`` or None: an accountant); raises for an event that is not a DpEvent or an
    unknown method."""
    check_event(event)
    check_choice("method", method, METHODS)
    closed_form = ("lemma_2_1" if has_lemma_2_1_events(event)
                   else "wishart" if has_wishart_events(event) else None)
    return check_discretization(discretization), closed_form


def epsilon_of(event: _ev.DpEvent, delta: float, method: str = "pld", *,
               discretization: float | None = None) -> float:
    """Smallest epsilon such that ``event`` is (epsilon, delta)-DP, by the chosen accountant.

    Parameters
    ----------
    event : dp_accounting.DpEvent
    delta : float in [0, 1). With ``method="rdp"``, ``delta=0`` gives ``inf``.
    method : ``"pld"`` (privacy loss distributions; tight, pessimistic up to the
        discretization) or ``"rdp"`` (Renyi DP; a looser upper bound, used as cross-check).
    discretization : PLD value-discretization interval; default chosen automatically
        relative to the per-step privacy loss (see ``pld._auto_discretization``).

    Returns ``inf`` for non-private events and ``0.0`` for a no-op. A ledger of
    generalized-Gaussian (Lemma 2.1) events, which neither accountant supports, is recomputed
    by the closed-form check of :mod:`~dpbandits.privacy.accounting.closed_form` whatever the
    method (Lemma 2.1 per mechanism from its noise, basic composition); a ledger of Wishart
    trees by :mod:`~dpbandits.privacy.accounting.wishart` (Sheffet 2015 Thm 4.1 per node,
    optimal composition).
    """
    delta = check_delta(delta)
    discretization, closed_form = _checked(event, method, discretization)
    if closed_form == "lemma_2_1":
        return lemma_2_1_epsilon(event, delta)
    if closed_form == "wishart":
        return wishart_tree_epsilon(event, delta)
    if method == "rdp":
        return epsilon_from_rdp(rdp_curve(event), delta)
    pld = _pld_module().build_pld(event, discretization, exact_tails=delta == 0)
    if pld is None:
        return 0.0
    if isinstance(pld, str):
        return math.inf
    return float(pld.get_epsilon_for_delta(delta))


def _pld_module():
    """:mod:`~dpbandits.privacy.accounting.pld`, imported on the first PLD query: it loads
    dp_accounting's PLD code and with it scipy.signal and scipy.stats (about 30 MB), which a
    run that only builds ledgers never needs."""
    from dpbandits.privacy.accounting import pld

    return pld


def delta_of(event: _ev.DpEvent, epsilon: float, method: str = "pld", *,
             discretization: float | None = None) -> float:
    """Smallest delta such that ``event`` is (epsilon, delta)-DP (``epsilon`` > 0, finite);
    Lemma 2.1 and Wishart tree ledgers as in :func:`epsilon_of`."""
    epsilon = check_positive("epsilon", epsilon)
    discretization, closed_form = _checked(event, method, discretization)
    if closed_form == "lemma_2_1":
        return lemma_2_1_delta(event, epsilon)
    if closed_form == "wishart":
        return wishart_tree_delta(event, epsilon)
    if method == "rdp":
        return delta_from_rdp(rdp_curve(event), epsilon)
    pld = _pld_module().build_pld(event, discretization)
    if pld is None:
        return 0.0
    if isinstance(pld, str):
        return 1.0
    return float(min(1.0, max(0.0, pld.get_delta_for_epsilon(epsilon))))

"""Certification: the (epsilon, delta) the accountant gives for a component's own ledger.

A private component (agent or optimizer) exposes ``privacy`` (the guarantee it claims) and
``ledger`` (the ``dp_accounting`` event its noise corresponds to). :func:`certify` recomputes
epsilon at the claimed delta from the ledger alone: the closed form for the generalized-Gaussian
(Lemma 2.1) and Wishart tree events no accountant supports, else the PLD accountant, else RDP
(e.g. zCDP events). A ledger depends only on a component's parameters, never on data, so a
result is computed once per ledger and delta and reused within a process. It is never read from
disk: a file can be written by anyone who can write the store's folder, and the certificate is
what vouches for a claim, so every process recomputes it from the ledger (at most about 2 s,
DP-HDB's ten thousand randomized-response events; the store,
:mod:`._certificate_store`, only speeds up the noise searches).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from dpbandits._memo import IdentityMemo

__all__ = ["Certificate", "certified_guarantee", "certify"]


@dataclass(frozen=True)
class Certificate:
    """What the accountant certifies for one ledger at one delta.

    ``epsilon`` is ``None`` when no accountant can recompute the ledger; ``basis`` then says
    why, else which accountant (or closed form) gave the number."""

    epsilon: float | None
    delta: float
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "basis": self.basis}


def certify(ledger: Any, delta: float, neighbouring: str | None = None) -> Certificate:
    """The epsilon the accountant certifies for ``ledger`` (a ``DpEvent``) at ``delta``.

    A ledger with sampling without replacement is certified by the RDP accountant under
    replace-one neighbours (the only relation dp_accounting supports for it), when
    ``neighbouring`` is ``"replace-one"`` (the relation the component claims); under any
    other relation it is reported not recomputable."""
    def digest_of(obj: Any) -> str:
        return hashlib.sha1(repr(obj).encode()).hexdigest()

    # a ledger object seen before (components of the same sizes share theirs) is found by
    # identity, without the repr of ten thousand events (~0.1 s)
    wor = neighbouring == "replace-one" and _has_wor_events(ledger)
    key = (_DIGESTS.get(ledger, digest_of), float(delta), wor)
    if key not in _CACHE:  # long ledgers take seconds; runs repeat them
        _CACHE[key] = (_recompute_wor(ledger, float(delta)) if wor
                       else _recompute(ledger, float(delta)))
    return _CACHE[key]


def _has_wor_events(event: Any) -> bool:
    """Whether ``event`` holds a ``SampledWithoutReplacementDpEvent`` anywhere."""
    import dp_accounting

    from dpbandits.privacy.accounting.events import flatten

    if isinstance(event, (dp_accounting.ComposedDpEvent, dp_accounting.SelfComposedDpEvent)):
        # the distinct leaves (flatten is remembered for a ledger), not its 10^4 events; a
        # leaf is never composed, so each is one of the cases below
        return any(_has_wor_events(leaf) for leaf in flatten(event)[0])
    if isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent):
        return True
    inner = getattr(event, "event", None)
    if inner is not None and _has_wor_events(inner):
        return True
    return any(_has_wor_events(e) for e in getattr(event, "events", ()) or ())


def _recompute_wor(ledger: Any, delta: float) -> Certificate:
    """Replace-one RDP over every order the calibrations search (so a claim computed on any
    of their grids is never above the certificate by the choice of orders)."""
    from dpbandits.privacy.accounting.rdp import (
        RDP_ORDERS,
        SCO_BASELINE_ORDERS,
        WOR_SEARCH_ORDERS,
        replace_one_rdp_epsilon,
    )

    orders = tuple(sorted(set(RDP_ORDERS) | set(SCO_BASELINE_ORDERS) | set(WOR_SEARCH_ORDERS)))
    try:
        eps = float(replace_one_rdp_epsilon(ledger, delta, orders))
    except (ValueError, TypeError, NotImplementedError) as exc:
        return Certificate(None, delta, f"not recomputable: rdp (replace-one): {exc}")
    return Certificate(eps, delta, "dp_accounting RDP (replace-one neighbours, sampling "
                       "without replacement), recomputed from the component's ledger")


def certified_guarantee(component: Any) -> dict[str, Any] | None:
    """``certify(component.ledger, component.privacy.delta)`` as a dict (``epsilon``, ``delta``,
    ``basis``), or ``None`` for a component without a ledger or with an infinite claim."""
    ledger = getattr(component, "ledger", None)
    privacy = getattr(component, "privacy", None)
    if ledger is None or privacy is None or not math.isfinite(privacy.epsilon):
        return None
    return certify(ledger, privacy.delta, getattr(privacy, "neighbouring", None)).to_dict()


def _recompute(ledger: Any, delta: float) -> Certificate:
    from dpbandits.privacy.accounting.closed_form import has_lemma_2_1_events
    from dpbandits.privacy.accounting.query import epsilon_of
    from dpbandits.privacy.accounting.wishart import has_wishart_events

    if has_lemma_2_1_events(ledger):  # neither accountant supports them
        return Certificate(float(epsilon_of(ledger, delta)), delta, (
            "closed form (Lemma 2.1 per mechanism, basic composition), recomputed from the "
            "agent's ledger"))
    if has_wishart_events(ledger):  # nor these
        return Certificate(float(epsilon_of(ledger, delta)), delta, (
            "closed form (Sheffet 2015 Thm 4.1 per Wishart node, optimal composition), "
            "recomputed from the agent's ledger"))
    errors = []
    for method in ("pld", "rdp"):
        try:
            return Certificate(float(epsilon_of(ledger, delta, method=method)), delta,
                               f"dp_accounting {method.upper()}, recomputed from the agent's "
                               "ledger")
        except (ValueError, TypeError, NotImplementedError) as exc:
            errors.append(f"{method}: {exc}")
    return Certificate(None, delta, "not recomputable: " + "; ".join(errors))


#: (sha1 of the ledger's repr, delta, replace-one sampling) -> its certificate
_CACHE: dict[tuple[str, float, bool], Certificate] = {}
#: ledger object -> sha1 of its repr (events are immutable; a DP-HDB ledger holds ~10^4
#: events, a few MB, so at most 16 are kept)
_DIGESTS = IdentityMemo(16)

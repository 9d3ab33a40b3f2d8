"""Closed-form check of the ledgers no ``dp_accounting`` accountant supports: the
generalized-Gaussian mechanisms of [Han et al. 2022] Lemma 2.1 (from [Bassily, Guzmán & Nandi
2021]), :class:`~dpbandits.privacy.accounting.GeneralizedGaussianDpEvent` (NoisySFW's
aggregates) and :class:`~dpbandits.privacy.accounting.GeneralizedGaussianTreeDpEvent`
(DP-TOFW's l_q branch, and DP-HDB with DP-TOFW arms).

The check is the proof of [Han et al. 2022] Theorem 3.1, redone from the noise parameters:

* **Lemma 2.1**, per mechanism: noise ``G_{||.||_+}(0, sigma^2)``, ``||.||_+`` the
  kappa-regular smooth norm, on a query of ``||.||``-sensitivity ``s`` is
  ``(eps0(delta0), delta0)``-DP for every ``delta0`` in (0, 1), with
  ``eps0(delta0) = sqrt(2 kappa log(1/delta0)) s / sigma``. It is trusted only where
  ``eps0 <= 1`` (:data:`LEMMA_2_1_MAX_EPSILON`: its Gaussian instance fails for large
  epsilon); elsewhere the check certifies nothing (``inf``).
* **Basic composition** (Dwork & Roth 2014, Theorem 3.16) over the ``N`` mechanisms one datum
  enters (a tree counts its ``nodes_per_datum``), delta split equally:
  ``epsilon(delta) = sum_i eps0_i(delta / N)`` and ``delta(epsilon)`` its inverse.

The budgets stored in an event (``node_epsilon``, ``epsilon``, ...) are not read: the claim is
recomputed from ``sigma``, ``kappa`` and the sensitivity, so a noise too small for the claim
shows as an epsilon above it. :func:`~dpbandits.privacy.accounting.epsilon_of` and
:func:`~dpbandits.privacy.accounting.delta_of` use this check, whatever the method, for
ledgers made only of these events.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event as _ev

from dpbandits.privacy.accounting.events import (
    GeneralizedGaussianDpEvent,
    GeneralizedGaussianTreeDpEvent,
    flatten,
)

__all__ = ["LEMMA_2_1_MAX_EPSILON", "has_lemma_2_1_events", "lemma_2_1_delta",
           "lemma_2_1_epsilon"]

#: Per-mechanism epsilon above which Lemma 2.1 is not trusted (its Gaussian instance,
#: sigma = sqrt(2 log(1/delta)) s / eps, is far inside the exact Gaussian region for
#: eps <= 1 and fails outright near eps = 10).
LEMMA_2_1_MAX_EPSILON = 1.0

_LEMMA_2_1_EVENTS = (GeneralizedGaussianDpEvent, GeneralizedGaussianTreeDpEvent)


def has_lemma_2_1_events(event: _ev.DpEvent) -> bool:
    """Whether ``event`` contains a generalized-Gaussian (Lemma 2.1) event."""
    counts, _ = flatten(event)
    return any(isinstance(leaf, _LEMMA_2_1_EVENTS) for leaf in counts)


def _mechanisms(event: _ev.DpEvent) -> tuple[float, int]:
    """``(C, N)``: ``N`` mechanisms per datum, and ``C = sum_i sqrt(2 kappa_i) s_i / sigma_i``
    so that ``eps0_i(delta0) = sqrt(2 kappa_i) s_i / sigma_i * sqrt(log(1/delta0))``."""
    counts, non_private = flatten(event)
    if non_private:
        return math.inf, 1
    others = [leaf for leaf in counts if not isinstance(leaf, _LEMMA_2_1_EVENTS)]
    if others:
        raise ValueError(f"event mixes Lemma 2.1 (generalized-Gaussian) events with {others[0]!r}"
                         ": no accountant composes them")
    total, n = 0.0, 0
    for leaf, count in counts.items():
        if isinstance(leaf, GeneralizedGaussianTreeDpEvent):
            sigma, s, k = leaf.sigma_plus, leaf.sensitivity, leaf.nodes_per_datum
        else:
            sigma, s, k = leaf.sigma_over_sensitivity, 1.0, 1
        if not (sigma > 0 and s >= 0 and leaf.kappa > 0 and k >= 1):
            raise ValueError(f"event {leaf!r} needs sigma > 0, sensitivity >= 0, kappa > 0 and "
                             "at least one mechanism per datum")
        total += count * k * math.sqrt(2.0 * leaf.kappa) * s / sigma
        n += count * k
    return total, n


def _per_mechanism_max(event: _ev.DpEvent, delta0: float) -> float:
    """The largest ``eps0_i(delta0)`` over the mechanisms of ``event``."""
    counts, _ = flatten(event)
    worst = 0.0
    for leaf in counts:
        if isinstance(leaf, GeneralizedGaussianTreeDpEvent):
            c = math.sqrt(2.0 * leaf.kappa) * leaf.sensitivity / leaf.sigma_plus
        else:
            c = math.sqrt(2.0 * leaf.kappa) / leaf.sigma_over_sensitivity
        worst = max(worst, c * math.sqrt(math.log(1.0 / delta0)))
    return worst


def lemma_2_1_epsilon(event: _ev.DpEvent, delta: float) -> float:
    """Epsilon at ``delta`` of a ledger of Lemma 2.1 events: ``sum_i eps0_i(delta / N)`` (module
    docstring); ``inf`` for ``delta = 0`` or where a mechanism's ``eps0`` exceeds
    :data:`LEMMA_2_1_MAX_EPSILON`."""
    total, n = _mechanisms(event)
    if math.isinf(total) or delta <= 0.0:
        return math.inf
    delta0 = delta / n
    if _per_mechanism_max(event, delta0) > LEMMA_2_1_MAX_EPSILON:
        return math.inf
    return total * math.sqrt(math.log(1.0 / delta0))


def lemma_2_1_delta(event: _ev.DpEvent, epsilon: float) -> float:
    """Delta at ``epsilon`` of a ledger of Lemma 2.1 events, the inverse of
    :func:`lemma_2_1_epsilon`: ``N exp(-(epsilon / C)^2)`` (1 where Lemma 2.1 is not trusted)."""
    total, n = _mechanisms(event)
    if math.isinf(total):
        return 1.0
    if total == 0.0:
        return 0.0
    delta = min(1.0, n * math.exp(-((epsilon / total) ** 2)))
    if delta >= 1.0 or _per_mechanism_max(event, delta / n) > LEMMA_2_1_MAX_EPSILON:
        return 1.0
    return delta

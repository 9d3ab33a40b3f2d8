"""Mechanism events: constructors of ``dp_accounting`` events, and the package's only custom
``DpEvent`` subclasses.

*Noise parameters are relative to the sensitivity under the guarantee's neighbouring
relation.* ``gaussian_event(s)`` describes the release of ``f(D) + N(0, (s * Delta)^2 I)``
where ``Delta = sup ||f(D) - f(D')||_2`` over the neighbouring pairs the caller's guarantee is
about (for ``"replace-one"``, the replace-one sensitivity, e.g. ``2 (beta D + L)`` in seed
000). The accountant therefore compares ``N(0, s^2)`` with ``N(1, s^2)``: such a Gaussian
mechanism is exactly ``(1/s)``-GDP. The same holds for ``laplace_event`` (scale ``b * Delta_1``)
and ``pure_dp_event``. (Internally this is dp_accounting's ``ADD_OR_REMOVE_ONE`` reading of a
noise multiplier; dp_accounting's ``REPLACE_ONE`` would instead double the sensitivity.)
``subsampled_gaussian_event`` is the DP-SGD mechanism and is accounted under add/remove-one
neighbours with the noise multiplier relative to the per-record clipping norm.
``wor_gaussian_event`` and ``svrg_event`` contain ``SampledWithoutReplacementDpEvent``, whose
amplification bound (Wang, Balle & Kasiviswanathan 2019, Theorem 27) is stated for replace-one
neighbours: they are accounted by :func:`~dpbandits.privacy.accounting.rdp.replace_one_rdp_epsilon`
(there a ``GaussianDpEvent(k)`` has RDP ``alpha / (2 k^2)``, the same reading of ``k``).

*Generic pure epsilon-DP steps* (``pure_dp_event``) have no native dp_accounting event. They
are represented by their worst case, binary randomized response with flip probability
``1/(1 + e^eps)``, i.e. ``RandomizedResponseDpEvent(noise_parameter=2/(1+e^eps),
num_buckets=2)`` read with replace-one neighbours: every epsilon-DP mechanism is a
post-processing of this pair (Kairouz, Oh & Viswanath 2015). For safety when a ledger is
recomputed with plain dp_accounting, ``pure_dp_event(eps, count=n)`` is an n-fold
``ComposedDpEvent`` rather than a ``SelfComposedDpEvent`` (dp_accounting 0.6.0's PLD
accountant composes a self-composed randomized response only once).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import attr
import dp_accounting
from dp_accounting import dp_event as _ev

from dpbandits._memo import IdentityMemo
from dpbandits._validation import check_int, check_positive, check_real

__all__ = [
    "GeneralizedGaussianDpEvent",
    "GeneralizedGaussianTreeDpEvent",
    "WishartTreeDpEvent",
    "compose",
    "gaussian_event",
    "laplace_event",
    "pure_dp_event",
    "subsampled_gaussian_event",
    "svrg_event",
    "wor_gaussian_event",
    "zcdp_event",
]


def _repeat(event: _ev.DpEvent, count: int) -> _ev.DpEvent:
    count = check_int("count", count, low=1)
    return event if count == 1 else _ev.SelfComposedDpEvent(event=event, count=count)


def gaussian_event(noise_multiplier: float, count: int = 1) -> _ev.DpEvent:
    """``count`` Gaussian mechanisms, each with std ``noise_multiplier`` x l2-sensitivity.

    One such mechanism is exactly ``(1/noise_multiplier)``-GDP; ``count`` of them compose to
    ``sqrt(count)/noise_multiplier``-GDP.
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    return _repeat(_ev.GaussianDpEvent(noise_multiplier=sigma), count)


def laplace_event(scale_over_sensitivity: float, count: int = 1) -> _ev.DpEvent:
    """``count`` Laplace mechanisms with scale ``b = scale_over_sensitivity`` x l1-sensitivity.

    Each is ``(1/b, 0)``-DP.
    """
    b = check_positive("scale_over_sensitivity", scale_over_sensitivity)
    return _repeat(_ev.LaplaceDpEvent(noise_multiplier=b), count)


def _rr_noise_parameter(epsilon: float) -> float:
    # 2 / (1 + e^eps), written so it does not overflow for large eps.
    t = math.exp(-epsilon)
    return 2.0 * t / (1.0 + t)


def pure_dp_event(epsilon: float, count: int = 1) -> _ev.DpEvent:
    """``count`` generic ``(epsilon, 0)``-DP mechanisms (e.g. report-noisy-max steps).

    Represented by the worst-case epsilon-DP pair, binary randomized response
    (``RandomizedResponseDpEvent(2/(1+e^eps), 2)``, replace-one reading); see the module
    docstring. For ``count > 1`` this is a ``ComposedDpEvent`` of ``count`` copies (not a
    ``SelfComposedDpEvent``: dp_accounting 0.6.0's PLD accountant would count that once).
    ``epsilon_of`` buckets the copies again, so this costs nothing there. With
    ``method="rdp"`` every *distinct* epsilon costs ~10 ms (dp_accounting evaluates the
    randomized-response RDP order by order); for long schedules of distinct epsilons use the
    PLD method, or compose ``zcdp_event(pure_dp_to_zcdp(eps))`` for a zCDP cross-check.
    Above epsilon ~ 745 the flip probability underflows and the step is accounted as
    non-private (epsilon = inf), which is conservative.
    """
    eps = check_positive("epsilon", epsilon)
    count = check_int("count", count, low=1)
    event = _ev.RandomizedResponseDpEvent(noise_parameter=_rr_noise_parameter(eps), num_buckets=2)
    return event if count == 1 else _ev.ComposedDpEvent(events=[event] * count)


def zcdp_event(rho: float, count: int = 1) -> _ev.DpEvent:
    """``count`` mechanisms that are each ``rho``-zCDP (only the RDP method can account them)."""
    rho = check_positive("rho", rho)
    return _repeat(_ev.ZCDpEvent(rho=rho), count)


def subsampled_gaussian_event(noise_multiplier: float, sampling_prob: float, count: int = 1
                              ) -> _ev.DpEvent:
    """``count`` Poisson-subsampled Gaussian mechanisms (DP-SGD steps), add/remove-one.

    Each record enters a step independently with probability ``sampling_prob``; the noise std
    is ``noise_multiplier`` x the per-record clipping norm.
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_real("sampling_prob", sampling_prob, low=0.0, high=1.0, low_open=True)
    inner = _ev.PoissonSampledDpEvent(
        sampling_probability=q, event=_ev.GaussianDpEvent(noise_multiplier=sigma)
    )
    return _repeat(inner, count)


def wor_gaussian_event(n: int, sample_size: int, noise_multiplier: float, count: int = 1
                       ) -> _ev.DpEvent:
    """``count`` x ``SampledWithoutReplacement(n, sample_size, Gaussian(noise_multiplier))``:
    a Gaussian on a uniform subset of ``sample_size`` of the ``n`` records (replace-one; one
    uniform index per step is ``sample_size = 1``)."""
    inner = _ev.SampledWithoutReplacementDpEvent(
        source_dataset_size=int(n), sample_size=int(sample_size),
        event=_ev.GaussianDpEvent(noise_multiplier=float(noise_multiplier)),
    )
    return inner if count == 1 else _ev.SelfComposedDpEvent(event=inner, count=int(count))


def svrg_event(n: int, steps: int, k_sub: float, k_full: float) -> _ev.DpEvent:
    """``steps`` variance-reduced steps of DP-SVRG (Wang, Ye & Xu 2017, App. B.2): each a Gaussian
    (multiplier ``k_sub``) on one uniformly sampled record composed with a Gaussian
    (multiplier ``k_full``) on the full gradient (see
    :func:`~dpbandits.privacy.accounting.calibration.svrg_multipliers`)."""
    step = _ev.ComposedDpEvent([wor_gaussian_event(n, 1, k_sub), _ev.GaussianDpEvent(k_full)])
    return _ev.SelfComposedDpEvent(step, steps)


def compose(events: Iterable[_ev.DpEvent]) -> _ev.DpEvent:
    """Sequential composition of ``events`` (a ``ComposedDpEvent``)."""
    if isinstance(events, _ev.DpEvent) or not isinstance(events, Iterable):
        raise TypeError(
            f"events must be an iterable of dp_accounting DpEvents, got {type(events).__name__}"
        )
    events = list(events)
    if not events:
        raise ValueError("events must contain at least one DpEvent, got an empty iterable")
    for i, e in enumerate(events):
        check_event(e, f"events[{i}]")
    return _ev.ComposedDpEvent(events=events)


def check_event(event: object, name: str = "event") -> _ev.DpEvent:
    """``event`` if it is a ``dp_accounting.DpEvent``, else a TypeError naming ``name``."""
    if not isinstance(event, _ev.DpEvent):
        raise TypeError(f"{name} must be a dp_accounting DpEvent, got {type(event).__name__}")
    return event


# --------------------------------------------------------------------------------------------
# Events no dp_accounting accountant supports (their guarantee rests on a stated lemma)
# --------------------------------------------------------------------------------------------


@attr.s(frozen=True, slots=True, auto_attribs=True)
class GeneralizedGaussianDpEvent(dp_accounting.DpEvent):
    """One generalized-Gaussian mechanism (Lemma 2.1 of Han et al. 2022; NoisySFW's
    aggregates): noise
    ``G_{||.||_+}(0, sigma^2)`` with ``||z||_+ = scale ||z||_{q_plus}`` on a query of l_q
    sensitivity ``s``, with ``sigma / s = sigma_over_sensitivity = sqrt(2 kappa
    log(1/delta)) / epsilon``, hence ``(epsilon, delta)``-DP by Lemma 2.1. No dp_accounting
    accountant supports it: ``epsilon_of`` recomputes it from ``sigma_over_sensitivity`` and
    ``kappa`` (:mod:`~dpbandits.privacy.accounting.closed_form`)."""

    sigma_over_sensitivity: float
    q_plus: float
    scale: float
    kappa: float
    epsilon: float
    delta: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class GeneralizedGaussianTreeDpEvent(dp_accounting.DpEvent):
    """A DP-TOFW tree with generalized-Gaussian nodes. Each datum enters at most
    ``nodes_per_datum`` nodes; each node is ``(node_epsilon, node_delta)``-DP by Lemma 2.1
    (``sigma_plus^2 = 2 kappa log(1/node_delta) sensitivity^2 / node_epsilon^2``), so basic
    composition gives ``(nodes_per_datum * node_epsilon, nodes_per_datum * node_delta)``.
    ``epsilon_of`` redoes this from ``sigma_plus``, ``kappa`` and ``sensitivity`` (the
    stored budgets are not read; :mod:`~dpbandits.privacy.accounting.closed_form`)."""

    sigma_plus: float
    q_plus: float
    scale: float
    kappa: float
    sensitivity: float
    nodes_per_datum: int
    node_epsilon: float
    node_delta: float


@attr.s(frozen=True, slots=True, auto_attribs=True)
class WishartTreeDpEvent(dp_accounting.DpEvent):
    """A binary tree of Wishart nodes (DP-UCB's Wishart noise, Shariff & Sheffet 2018
    Section 4.1): each node adds ``Wishart_dim(scale I, degrees)`` to the Gram matrix of rows
    of l_2 norm at most ``sqrt(row_bound_sq)``, and one datum enters at most
    ``nodes_per_datum`` nodes. Per node, Sheffet 2015 Thm 4.1; over the nodes, the optimal
    composition of Kairouz, Oh & Viswanath 2015. No dp_accounting accountant supports it:
    ``epsilon_of`` recomputes it from these fields
    (:mod:`~dpbandits.privacy.accounting.wishart`)."""

    dim: int
    degrees: int
    scale: float
    row_bound_sq: float
    nodes_per_datum: int


# --------------------------------------------------------------------------------------------
# Flattening: equal leaves are bucketed (and later self-composed by the accountants)
# --------------------------------------------------------------------------------------------


def flatten(event: _ev.DpEvent) -> tuple[Counter, bool]:
    """Leaf events with their total multiplicity, and whether a non-private event occurs.

    A composed ledger's answer is remembered by identity (a certification asks several times
    for each of DP-HDB's twenty thousand events; events are immutable) and handed out as a
    copy."""
    if not isinstance(event, (_ev.ComposedDpEvent, _ev.SelfComposedDpEvent)):
        return _flatten(event)
    counts, non_private = _FLAT.get(event, _flatten)
    return Counter(counts), non_private


#: composed ledger -> its flattening (a few ledgers live at a time; see IdentityMemo)
_FLAT = IdentityMemo(16)


def _flatten(event: _ev.DpEvent) -> tuple[Counter, bool]:
    counts: Counter = Counter()
    non_private = False
    stack = [(event, 1)]
    while stack:
        e, c = stack.pop()
        if isinstance(e, _ev.NoOpDpEvent):
            continue
        if isinstance(e, _ev.NonPrivateDpEvent):
            non_private = True
        elif isinstance(e, _ev.SelfComposedDpEvent):
            if e.count < 0:
                raise ValueError(f"SelfComposedDpEvent count must be >= 0, got {e.count}")
            if e.count > 0:
                stack.append((e.event, c * e.count))
        elif isinstance(e, _ev.ComposedDpEvent):
            stack.extend((sub, c) for sub in e.events)
        else:
            counts[e] += c
    return counts, non_private

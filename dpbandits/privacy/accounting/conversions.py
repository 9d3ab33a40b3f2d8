"""Closed-form privacy notions and their conversions: Gaussian DP (Dong, Roth & Su 2019) and
zero-concentrated DP (Bun & Steinke 2016)."""

from __future__ import annotations

import functools
import math

import dp_accounting
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant

from dpbandits._validation import check_delta_open, check_positive
from dpbandits.privacy.accounting import _certificate_store
from dpbandits.privacy.accounting.rdp import RDP_ORDERS

__all__ = [
    "bounded_range_to_zcdp",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "pure_dp_to_zcdp",
    "zcdp_epsilon",
    "zcdp_rho",
]


def _gdp_delta(mu: float, eps: float) -> float:
    # Corollary 2.13: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), evaluated
    # as Phi(a) * (1 - exp(eps + log Phi(b) - log Phi(a))) to avoid cancellation / overflow.
    from scipy import special  # scipy.special and .optimize load on first use (~25 MB)

    la = special.log_ndtr(-eps / mu + mu / 2.0)
    lb = special.log_ndtr(-eps / mu - mu / 2.0)
    value = math.exp(la) * -math.expm1(min(0.0, eps + lb - la))
    return min(1.0, max(0.0, value))


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta(epsilon) of a mu-GDP mechanism (Dong, Roth & Su 2019, Corollary 2.13)."""
    mu = check_positive("mu", mu)
    eps = check_positive("epsilon", epsilon)
    return _gdp_delta(mu, eps)


_XTOL, _RTOL = 1e-15, 1e-12


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon >= 0 with ``gdp_delta(mu, epsilon) <= delta`` (root finding).

    Returns 0.0 when already ``delta >= 2 Phi(mu/2) - 1`` (the total variation distance).
    """
    mu = check_positive("mu", mu)
    delta = check_delta_open(delta)
    if _gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while _gdp_delta(mu, hi) > delta:
        hi *= 2.0
    from scipy import optimize

    root = optimize.brentq(lambda e: _gdp_delta(mu, e) - delta, 0.0, hi, xtol=_XTOL, rtol=_RTOL)
    if _gdp_delta(mu, root) > delta:  # land on the safe side of the root
        root = min(hi, root + 2.0 * (_XTOL + _RTOL * root))
    return float(root)


@functools.lru_cache(maxsize=256)
def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP (root finding; kept in the
    store, the same number every run: a stored ``mu`` is used only when the closed form
    (Corollary 2.13) confirms it, :func:`_is_gdp_mu`)."""
    eps = check_positive("epsilon", epsilon)
    delta = check_delta_open(delta)
    return _certificate_store.remember(f"gdp_mu(epsilon={eps!r})", delta,
                                       lambda: _gdp_mu(eps, delta),
                                       lambda mu: _is_gdp_mu(mu, eps, delta))


#: how far above a confirmed ``mu`` (or ``rho``) the target must already fail: the root
#: finders land within ~1e-11 (relative) of the root, on its safe side
_CONFIRM_RTOL = 1e-8


def _is_gdp_mu(mu: float, eps: float, delta: float) -> bool:
    """Whether ``mu`` is :func:`gdp_mu`'s answer up to :data:`_CONFIRM_RTOL`, by the closed
    form alone: ``mu``-GDP is (eps, delta)-DP and ``mu (1 + rtol)``-GDP is not."""
    return (0.0 < mu < math.inf and _gdp_delta(mu, eps) <= delta
            and _gdp_delta(mu * (1.0 + _CONFIRM_RTOL), eps) > delta)


def _gdp_mu(eps: float, delta: float) -> float:
    lo, hi = 1.0, 1.0
    while _gdp_delta(lo, eps) > delta:
        lo /= 2.0
    while _gdp_delta(hi, eps) <= delta:
        hi *= 2.0
    if lo == hi:
        lo = hi / 2.0
    from scipy import optimize

    root = optimize.brentq(lambda m: _gdp_delta(m, eps) - delta, lo, hi, xtol=_XTOL, rtol=_RTOL)
    if _gdp_delta(root, eps) > delta:
        root = max(lo, root - 2.0 * (_XTOL + _RTOL * root))
    return float(root)


# --------------------------------------------------------------------------------------------
# zCDP
# --------------------------------------------------------------------------------------------


def pure_dp_to_zcdp(epsilon: float) -> float:
    """epsilon-DP implies (epsilon^2/2)-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
    eps = check_positive("epsilon", epsilon)
    return eps * eps / 2.0


def bounded_range_to_zcdp(epsilon: float) -> float:
    """epsilon-bounded-range (e.g. the exponential mechanism) implies (epsilon^2/8)-zCDP
    (Cesar & Rogers 2021)."""
    eps = check_positive("epsilon", epsilon)
    return eps * eps / 8.0


def zcdp_epsilon(rho: float, delta: float) -> float:
    """epsilon such that rho-zCDP implies (epsilon, delta)-DP, via dp_accounting's RDP
    accountant on a ``ZCDpEvent`` (its improved RDP-to-DP conversion).

    The orders include the minimizer ``1 + sqrt(log(1/delta)/rho)`` of the standard bound,
    so the result is never above ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016).
    """
    rho = check_positive("rho", rho)
    delta = check_delta_open(delta)
    best = 1.0 + math.sqrt(math.log(1.0 / delta) / rho)
    acc = RdpAccountant(orders=sorted({*RDP_ORDERS, best}),
                        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_accounting.ZCDpEvent(rho=rho))
    return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest ``rho`` with ``zcdp_epsilon(rho, delta) <= epsilon`` (root finding on
    ``log rho``, then nudged to the safe side): the inverse of :func:`zcdp_epsilon`. Cached,
    and kept in the store (the same number every run: a stored ``rho`` is used only when
    :func:`zcdp_epsilon` confirms it, :func:`_is_zcdp_rho`)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta_open(delta)
    return _certificate_store.remember(f"zcdp_rho(epsilon={epsilon!r})", delta,
                                       lambda: _zcdp_rho(epsilon, delta),
                                       lambda rho: _is_zcdp_rho(rho, epsilon, delta))


def _is_zcdp_rho(rho: float, epsilon: float, delta: float) -> bool:
    """Whether ``rho`` is :func:`zcdp_rho`'s answer up to :data:`_CONFIRM_RTOL`, by the RDP
    conversion alone: ``rho``-zCDP is (epsilon, delta)-DP and ``rho (1 + rtol)``-zCDP is
    not."""
    return (0.0 < rho < math.inf and zcdp_epsilon(rho, delta) <= epsilon
            and zcdp_epsilon(rho * (1.0 + _CONFIRM_RTOL), delta) > epsilon)


def _zcdp_rho(epsilon: float, delta: float) -> float:
    def excess(log_rho: float) -> float:
        return zcdp_epsilon(math.exp(log_rho), delta) - epsilon

    lo, hi = math.log(1e-12), math.log(epsilon)
    while excess(hi) <= 0:
        hi += 1.0
    from scipy import optimize

    rho = math.exp(optimize.brentq(excess, lo, hi, xtol=1e-12))
    while zcdp_epsilon(rho, delta) > epsilon:
        rho *= 1.0 - 1e-9
    return rho

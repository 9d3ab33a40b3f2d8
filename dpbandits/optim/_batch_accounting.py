"""Accounting helpers of the seed 001/002/004 optimizers (on :mod:`dpbandits.privacy.accounting`
and dp_accounting).

Noise-multiplier convention (the same as :mod:`dpbandits.privacy.accounting`): a Gaussian
event with noise multiplier ``k`` stands for ``f(D) + N(0, (k Delta)^2 I)`` where ``Delta`` is
the **replace-one** l_2 sensitivity ``sup ||f(D) - f(D')||_2``.

Two kinds of ledgers occur here:

* full-gradient methods (DP-GD, DP-AccMD) compose plain Gaussian events; they are accounted
  with :func:`dpbandits.privacy.accounting.epsilon_of` (PLD, tight) and calibrated exactly via
  Gaussian DP (``T`` Gaussian steps of multiplier ``k`` are ``sqrt(T)/k``-GDP);
* methods that pick **one uniformly random index** per step (DP-SVRG, DP-SVRG++) and Private
  SGD (a uniformly random subset of fresh samples) contain
  ``dp_accounting.SampledWithoutReplacementDpEvent``. Its amplification bound (Wang, Balle &
  Kasiviswanathan 2019, Theorem 27) is stated for replace-one neighbours, so these ledgers are
  accounted with dp_accounting's RDP accountant under ``NeighboringRelation.REPLACE_ONE``
  (:func:`rdp_epsilon`); there a ``GaussianDpEvent(k)`` has RDP ``alpha / (2 k^2)``, which is
  the same reading of ``k`` as above. :mod:`dpbandits.privacy.accounting` accounts RDP under
  add/remove-one and so cannot take these events; that is why this module exists.

Calibration uses a subset of dp_accounting's default RDP orders (:data:`CALIBRATION_ORDERS`),
so re-accounting a ledger with the full default order set can only give a smaller epsilon.
"""

from __future__ import annotations

import functools
import math

import dp_accounting
import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as _rdp

from dpbandits.privacy import accounting as acc

_NR = dp_accounting.NeighboringRelation

#: RDP orders used for calibration: a subset of ``dp_accounting``'s ``DEFAULT_RDP_ORDERS``.
CALIBRATION_ORDERS = tuple(
    [round(1 + x / 10.0, 10) for x in range(1, 40)]
    + [round(1 + x / 10.0, 10) for x in range(40, 100, 5)]
    + list(range(11, 21)) + [22, 24, 26, 28, 32, 36, 40, 48, 56]
)
assert set(CALIBRATION_ORDERS) <= set(_rdp.DEFAULT_RDP_ORDERS)


def rdp_epsilon(event: dp_accounting.DpEvent, delta: float, orders=None) -> float:
    """epsilon of ``event`` at ``delta`` by dp_accounting's RDP accountant, replace-one."""
    kwargs = {"neighboring_relation": _NR.REPLACE_ONE}
    if orders is not None:
        kwargs["orders"] = list(orders)
    accountant = _rdp.RdpAccountant(**kwargs)
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _wor_rdp(q: float, k: float) -> np.ndarray:
    """Per-order RDP of one Gaussian step (multiplier ``k``) on a without-replacement sample
    of proportion ``q`` (replace-one), at :data:`CALIBRATION_ORDERS`.

    Same numbers as ``dp_accounting``'s ``_compute_rdp_sample_wor_gaussian`` (Theorem 27 of
    Wang, Balle & Kasiviswanathan 2019 at integer orders, their Corollary 10 interpolation of
    the CGF in between), but each integer order is evaluated once instead of twice per
    fractional order.
    """
    ints = {}

    def log_a(alpha: int) -> float:
        if alpha not in ints:
            ints[alpha] = float(_rdp._compute_rdp_sample_wor_gaussian_int(q, k, alpha))
        return ints[alpha]

    out = []
    for a in CALIBRATION_ORDERS:
        if float(a).is_integer():
            out.append(log_a(int(a)) / (a - 1))
        else:
            lo, hi = math.floor(a), math.ceil(a)
            t = a - lo
            out.append(((1 - t) * log_a(lo) + t * log_a(hi)) / (a - 1))
    return np.asarray(out, dtype=float)


def _eps_from_rdp(rdp: np.ndarray, delta: float) -> float:
    if not np.all(np.isfinite(rdp)):
        rdp = np.where(np.isfinite(rdp), rdp, 1e300)
    return float(_rdp.compute_epsilon(CALIBRATION_ORDERS, rdp, delta)[0])


def gaussian_multiplier(epsilon: float, delta: float, count: int, margin: float = 1e-6
                        ) -> float:
    """Smallest multiplier ``k`` such that ``count`` composed Gaussian steps are
    ``(epsilon, delta)``-DP: ``sqrt(count)/k = mu`` with ``mu = gdp_mu(epsilon, delta)``
    (exact: the composition of Gaussian mechanisms is a Gaussian mechanism). ``margin``
    keeps the result on the safe side of the PLD accountant's discretization."""
    mu = acc.gdp_mu(epsilon * (1.0 - margin), delta)
    return math.sqrt(count) / mu


@functools.lru_cache(maxsize=256)
def wor_gaussian_multiplier(n: int, sample_size: int, count: int, epsilon: float,
                            delta: float) -> float:
    """Smallest ``k`` (rel. 1e-4) such that ``count`` x SampledWithoutReplacement(n,
    sample_size, Gaussian(k)) is ``(epsilon, delta)``-DP by the RDP accountant."""
    q = sample_size / n

    def eps(k):
        return _eps_from_rdp(count * _wor_rdp(q, k), delta)

    lo, hi = 0.05, 1.0
    while eps(hi) > epsilon:
        lo, hi = hi, hi * 4.0
        if hi > 1e9:
            raise ValueError(f"cannot reach epsilon={epsilon} at delta={delta}")
    if eps(lo) <= epsilon:
        return lo
    while hi / lo > 1.0 + 1e-4:
        mid = math.sqrt(lo * hi)
        if eps(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=256)
def svrg_multipliers(n: int, steps: int, epsilon: float, delta: float, sens_sub: float,
                     sens_full: float) -> tuple[float, float]:
    """Noise split of a variance-reduced step (DP-SVRG/DP-SVRG++, App. B.2 of seed 001).

    The step's query ``d_i + v~`` (``d_i`` the sampled gradient difference, replace-one
    sensitivity ``sens_sub``; ``v~`` the snapshot full gradient, sensitivity ``sens_full``) is
    released with ``N(0, sigma^2 I)``. Writing the noise as ``N(0, sigma_1^2) + N(0,
    sigma_2^2)``, the release is a post-processing of ``(d_i + N(0, sigma_1^2), v~ + N(0,
    sigma_2^2))``: a subsampled Gaussian (one uniform index, ``q = 1/n``) composed with a
    Gaussian, ``steps`` times. Returns the multipliers ``(k_1, k_2)`` (``sigma_j = k_j
    sens_j``) minimizing ``sigma^2 = sigma_1^2 + sigma_2^2`` subject to the RDP accountant
    certifying ``(epsilon, delta)``; the split is searched by golden section on ``log k_1``.
    """
    q = 1.0 / n
    orders = np.asarray(CALIBRATION_ORDERS, float)

    def k2_for(wor: np.ndarray) -> float:
        """Smallest k_2 (rel. 1e-6) given the per-step WOR RDP vector, inf if none."""
        base = steps * wor
        if _eps_from_rdp(base, delta) > epsilon:
            return math.inf
        lo, hi = 1e-6, 1.0  # in t = 1/k^2 (more t = less noise = larger epsilon)
        while _eps_from_rdp(base + steps * orders * hi / 2.0, delta) <= epsilon:
            lo, hi = hi, hi * 4.0
        while _eps_from_rdp(base + steps * orders * lo / 2.0, delta) > epsilon:
            lo /= 4.0
            if lo < 1e-300:
                return math.inf
        while hi / lo > 1.0 + 1e-6:
            mid = math.sqrt(lo * hi)
            if _eps_from_rdp(base + steps * orders * mid / 2.0, delta) <= epsilon:
                lo = mid
            else:
                hi = mid
        return 1.0 / math.sqrt(lo)

    @functools.cache
    def total(log_k1: float) -> tuple[float, float, float]:
        k1 = math.exp(log_k1)
        k2 = k2_for(_wor_rdp(q, k1))
        return (k1 * sens_sub) ** 2 + (k2 * sens_full) ** 2, k1, k2

    # Coarse grid on log k_1, then golden-section refinement around the best grid point.
    grid = np.linspace(math.log(0.05), math.log(200.0), 14)
    values = [total(float(g))[0] for g in grid]
    if all(math.isinf(v) for v in values):
        raise ValueError(
            f"cannot certify (epsilon={epsilon}, delta={delta}) for {steps} variance-reduced "
            f"steps on n={n} samples at any noise split")
    i = int(np.argmin(values))
    a, b = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    invphi = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - invphi * (b - a), a + invphi * (b - a)
    while b - a > 2e-2:
        if total(c)[0] < total(d)[0]:
            b, d = d, c
            c = b - invphi * (b - a)
        else:
            a, c = c, d
            d = a + invphi * (b - a)
    best = min((total(x) for x in (a, b, c, d, float(grid[i]))), key=lambda t: t[0])
    return best[1], best[2]


def svrg_event(n: int, steps: int, k_sub: float, k_full: float) -> dp_accounting.DpEvent:
    """Ledger of ``steps`` variance-reduced steps (see :func:`svrg_multipliers`)."""
    step = dp_accounting.ComposedDpEvent([
        dp_accounting.SampledWithoutReplacementDpEvent(
            source_dataset_size=n, sample_size=1,
            event=dp_accounting.GaussianDpEvent(k_sub)),
        dp_accounting.GaussianDpEvent(k_full),
    ])
    return dp_accounting.SelfComposedDpEvent(step, steps)


def wor_event(n: int, sample_size: int, k: float, count: int = 1) -> dp_accounting.DpEvent:
    """``count`` x SampledWithoutReplacement(n, sample_size, Gaussian(k))."""
    ev = dp_accounting.SampledWithoutReplacementDpEvent(
        source_dataset_size=n, sample_size=sample_size, event=dp_accounting.GaussianDpEvent(k))
    return ev if count == 1 else dp_accounting.SelfComposedDpEvent(ev, count)

"""Noise calibration: the one search for a noise parameter that meets a privacy target
(:func:`calibrate`), and the calibrations of the package's ledgers built on it.

Every noise scale of the package comes from :func:`calibrate` or from a closed form a theorem
gives (cited where it is used). The ledger-specific calibrations here fix the accountant, the
orders and the search bracket their committed results were computed with.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from dpbandits._validation import check_choice, check_delta, check_positive, check_real
from dpbandits.privacy.accounting import _certificate_store
from dpbandits.privacy.accounting.conversions import gdp_mu
from dpbandits.privacy.accounting.events import (
    check_event,
    gaussian_event,
    wor_gaussian_event,
)
from dpbandits.privacy.accounting.query import METHODS, check_discretization, epsilon_of
from dpbandits.privacy.accounting.rdp import (
    WOR_SEARCH_ORDERS,
    epsilon_from_rdp,
    replace_one_rdp,
)

__all__ = [
    "calibrate",
    "certified_gaussian_multiplier",
    "gaussian_multiplier",
    "svrg_multipliers",
    "svrg_split",
    "wor_gaussian_multiplier",
]

_SEARCH_MIN, _SEARCH_MAX = 1e-12, 1e12


def _query(event: Any, method: str, discretization: float | None) -> str:
    """The store's key text of ``epsilon_of(event, ., method, discretization)``."""
    return f"epsilon_of(method={method!r}, discretization={discretization!r})\n{event!r}"


def _stored_epsilon_of(event: Any, delta: float, method: str,
                      discretization: float | None) -> tuple[float, bool]:
    """``epsilon_of(event, delta, method, discretization=discretization)`` for a noise search,
    and whether it was read from the store
    (:mod:`~dpbandits.privacy.accounting._certificate_store`) rather than computed: a later
    run (another process, a worker) reads the number instead of loading the accountant and
    composing again. A number read from the store is anyone's claim: the search that used it
    checks its answer with the accountant (:func:`calibrate`)."""
    query = _query(event, method, discretization)
    stored = _certificate_store.lookup(query, delta)
    if stored is not None:
        return stored, True
    value = float(epsilon_of(event, delta, method, discretization=discretization))
    _certificate_store.keep(query, delta, value)
    return value, False


def calibrate(
    event_of_noise: Callable[[float], Any],
    epsilon: float,
    delta: float,
    *,
    method: str | Callable[[Any, float], float] = "pld",
    lower: float | None = None,
    upper: float | None = None,
    start: float | None = None,
    growth: float = 4.0,
    rtol: float = 1e-3,
    decreasing: bool = True,
    discretization: float | None = None,
) -> float:
    """Noise parameter ``x`` for which ``event_of_noise(x)`` is (epsilon, delta)-DP.

    With ``decreasing=True`` (privacy improves as ``x`` grows, e.g. a noise multiplier) this
    returns the *smallest* such ``x``; with ``decreasing=False`` (e.g. ``x`` is a per-step
    epsilon) the *largest*. The answer always meets the target by the same query the caller
    would run (``epsilon_of(event_of_noise(x), delta, method) <= epsilon``) and is within a
    factor ``1 + rtol`` of the optimum: the bisection (in log space) stops once the
    feasible end ``x`` and an infeasible point are within that factor, so for
    ``rtol <= 0.01`` and a monotone accountant ``x * 0.99`` (resp. ``x * 1.01``) fails.
    ``rtol = inf`` returns the first feasible point the bracket search finds.

    ``method`` is ``"pld"``, ``"rdp"`` or an accountant ``method(event, delta) -> epsilon``
    (e.g. :func:`~dpbandits.privacy.accounting.rdp.replace_one_rdp_epsilon`); with a callable,
    ``event_of_noise`` may return whatever it accepts (an event, an RDP curve, a list of
    per-step epsilons) and ``discretization`` must be None.

    Bracket: ``lower``/``upper`` bound the search. If the feasible end of a given bracket
    fails, or no feasible/infeasible point is found within [1e-12, 1e12], a ``ValueError``
    says so. If the infeasible end of a given bracket already meets the target it is
    returned (it is optimal within the bracket). When the feasible end is not given, the
    search probes ``start`` (default: 1 when no end is given, otherwise the given end) and
    then moves by the factor ``growth`` toward more noise (until the target is met) or less
    noise (until it fails).

    The accountant's numbers are kept in the store (docs/store.md) and read back by later
    searches. A search that read any number from the store returns its answer only when
    accountant queries made now confirm it (the answer meets the target; the other end of
    the final bracket, if any, does not); otherwise, or when it raised, it searches again
    without the store (one warning): no stored number can lower the noise below what the
    accountant certifies for the target.
    """
    if not callable(event_of_noise):
        raise TypeError(
            "event_of_noise must be callable (noise -> DpEvent), "
            f"got {type(event_of_noise).__name__}"
        )
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta(delta)
    accountant = method if callable(method) else None
    custom = accountant is not None
    if accountant is None:
        check_choice("method", method, METHODS)
    rtol = check_real("rtol", rtol, low=0.0, low_open=True, allow_inf=True)
    growth = check_real("growth", growth, low=1.0, low_open=True)
    if not isinstance(decreasing, bool):
        raise TypeError(f"decreasing must be a bool, got {type(decreasing).__name__}")
    discretization = check_discretization(discretization)
    if custom and discretization is not None:
        raise ValueError("discretization applies to method='pld' only, got a callable method "
                         f"and discretization={discretization}")
    lo_b = None if lower is None else check_positive("lower", lower)
    hi_b = None if upper is None else check_positive("upper", upper)
    if lo_b is not None and hi_b is not None and not lo_b < hi_b:
        raise ValueError(f"lower must be < upper, got lower={lo_b}, upper={hi_b}")
    # Orient the search: the "good" end meets the target, the "bad" end does not. More noise
    # means a larger parameter when `decreasing`, a smaller one otherwise.
    good_limit, bad_limit = (hi_b, lo_b) if decreasing else (lo_b, hi_b)
    x0 = None if start is None else check_positive("start", start)
    if x0 is not None:
        if good_limit is not None:
            raise ValueError(f"start cannot be combined with {'upper' if decreasing else 'lower'}"
                             " (the end that must meet the target)")
        if (lo_b is not None and x0 <= lo_b) or (hi_b is not None and x0 >= hi_b):
            raise ValueError(f"start must lie strictly between lower={lo_b} and upper={hi_b}, "
                             f"got {x0}")

    target = f"(epsilon={epsilon}, delta={delta}, method={method!r})"
    name = None if accountant is not None else cast(str, method)
    read = [False]  # whether the search read a number from the store

    def search(use_store: bool) -> tuple[float, float | None]:
        return _search(event_of_noise, epsilon, delta, accountant, name, discretization,
                       use_store, read, target, good_limit, bad_limit, x0, decreasing,
                       growth, rtol)

    try:
        answer, bad = search(use_store=True)
    except ValueError:
        if not read[0]:
            raise
        answer, bad = None, None  # maybe the store's doing: see what the accountant says
    if read[0] and not _confirmed(event_of_noise, answer, bad, epsilon, delta, cast(str, name),
                                  discretization):
        answer, _ = search(use_store=False)  # raises if the target cannot be met
        _certificate_store.warn_ignored(
            f"a noise search for {target} read numbers the accountant does not confirm")
    assert answer is not None  # a search that cannot meet the target raises
    return answer


def _confirmed(event_of_noise: Callable[[float], Any], answer: float | None,
               bad: float | None, epsilon: float, delta: float, method: str,
               discretization: float | None) -> bool:
    """Whether the accountant itself, without the store, confirms the answer of a search that
    read numbers from the store (public files anyone could have written): the answer meets
    the target, and the other end of the final bracket, a little less noise, does not. Two
    queries instead of the whole search; for an honest store both give the very numbers the
    search read, so the answer is the same one."""
    def epsilon_at(x: float) -> float:
        return float(epsilon_of(event_of_noise(x), delta, method,
                                discretization=discretization))

    return (answer is not None and epsilon_at(answer) <= epsilon
            and (bad is None or epsilon_at(bad) > epsilon))


def _search(event_of_noise: Callable[[float], Any], epsilon: float, delta: float,
            accountant: Callable[[Any, float], float] | None, method: str | None,
            discretization: float | None, use_store: bool, read: list[bool], target: str,
            good_limit: float | None, bad_limit: float | None, x0: float | None,
            decreasing: bool, growth: float, rtol: float) -> tuple[float, float | None]:
    """:func:`calibrate`'s search: the answer, and the infeasible end of the final bracket
    (None when the bracket's infeasible end met the target). Sets ``read[0]`` when a number
    came from the store."""
    last: dict[str, float | None] = {"x": None, "eps": None}

    def meets(x: float) -> bool:
        event = event_of_noise(x)
        if accountant is not None:
            value = float(accountant(event, delta))
        else:
            assert method is not None  # one of the two is set
            check_event(event, f"event_of_noise({x!r})")
            if use_store:
                value, stored = _stored_epsilon_of(event, delta, method, discretization)
                read[0] = read[0] or stored
            else:
                value = float(epsilon_of(event, delta, method, discretization=discretization))
                _certificate_store.keep(_query(event, method, discretization), delta, value)
        last["x"], last["eps"] = x, value
        return value <= epsilon

    def more_noise(x: float) -> float:
        return x * growth if decreasing else x / growth

    def less_noise(x: float) -> float:
        return x / growth if decreasing else x * growth

    def out_of_range(x: float) -> bool:
        return not (_SEARCH_MIN <= x <= _SEARCH_MAX)

    good = bad = None
    if good_limit is not None:
        if not meets(good_limit):
            raise ValueError(
                f"target {target} cannot be met within the given bracket: at "
                f"{'upper' if decreasing else 'lower'}={good_limit} epsilon_of gives "
                f"{last['eps']:.6g}"
            )
        good = good_limit
    if bad_limit is not None:
        if meets(bad_limit):
            return float(bad_limit), None  # the bracket's end is optimal within the bracket
        bad = bad_limit
    if good is None and (bad is None or x0 is not None):
        probe = 1.0 if x0 is None else x0
        if meets(probe):
            good = probe
        else:
            bad = probe

    while good is None:  # expand toward more noise until the target is met
        assert bad is not None  # one of the two ends is set above
        x = more_noise(bad)
        if out_of_range(x):
            raise ValueError(
                f"target {target} cannot be met: even at noise parameter {last['x']:.3g} "
                f"epsilon_of gives {last['eps']:.6g}. Check that delta > 0 for Gaussian "
                f"events, that decreasing={decreasing} matches how the event depends on the "
                "parameter, and that the event depends on it at all."
            )
        if meets(x):
            good = x
        else:
            bad = x
    while bad is None:  # expand toward less noise until the target fails
        x = less_noise(good)
        if out_of_range(x):
            raise ValueError(
                f"target {target} is met for every parameter down to {last['x']:.3g} "
                f"(epsilon_of gives {last['eps']:.6g}); the event does not seem to depend on "
                f"the parameter (or decreasing={decreasing} is wrong)"
            )
        if meets(x):
            good = x
        else:
            bad = x

    # Bisection in log space until good/bad are within a factor 1 + rtol.
    while max(good, bad) / min(good, bad) > 1.0 + rtol:
        mid = math.sqrt(good * bad)
        if meets(mid):
            good = mid
        else:
            bad = mid
    return float(good), float(bad)


# --------------------------------------------------------------------------------------------
# Gaussian mechanisms
# --------------------------------------------------------------------------------------------


def gaussian_multiplier(epsilon: float, delta: float, count: int, margin: float = 1e-6
                        ) -> float:
    """Smallest multiplier ``k`` such that ``count`` composed Gaussian steps are
    ``(epsilon, delta)``-DP: ``sqrt(count)/k = mu`` with ``mu = gdp_mu(epsilon, delta)``
    (exact: the composition of Gaussian mechanisms is a Gaussian mechanism, Dong, Roth & Su
    2019). ``margin`` keeps the result on the safe side of the PLD accountant's
    discretization."""
    mu = gdp_mu(epsilon * (1.0 - margin), delta)
    return math.sqrt(count) / mu


@functools.lru_cache(maxsize=256)
def certified_gaussian_multiplier(epsilon: float, delta: float, count: int) -> float:
    """:func:`gaussian_multiplier`, raised by factors ``1 + 1e-4`` until the PLD accountant
    (pessimistic discretization) also certifies ``gaussian_event(k, count)``. Cached."""
    k = gaussian_multiplier(epsilon, delta, count)
    return calibrate(lambda x: gaussian_event(x, count=count), epsilon, delta, method="pld",
                     lower=k, growth=1.0 + 1e-4, rtol=math.inf)


# --------------------------------------------------------------------------------------------
# Sampled-without-replacement Gaussians (replace-one RDP)
# --------------------------------------------------------------------------------------------


def _search_epsilon(rdp, delta: float, orders=WOR_SEARCH_ORDERS) -> float:
    """Epsilon of an RDP curve inside a search: an order whose bound overflowed (inf or
    nan) certifies nothing (counts as 1e300) instead of poisoning the minimum."""
    rdp = np.asarray(rdp, dtype=float)
    if not np.all(np.isfinite(rdp)):
        rdp = np.where(np.isfinite(rdp), rdp, 1e300)
    return epsilon_from_rdp(rdp, delta, orders)


@functools.lru_cache(maxsize=256)
def wor_gaussian_multiplier(n: int, sample_size: int, count: int, epsilon: float,
                            delta: float, *, orders: tuple = WOR_SEARCH_ORDERS,
                            start: float = 1.0, lower: float | None = 0.05,
                            growth: float = 4.0, rtol: float = 1e-4) -> float:
    """Smallest ``k`` (within a factor ``1 + rtol``) such that ``count`` x
    ``SampledWithoutReplacement(n, sample_size, Gaussian(k))`` is ``(epsilon, delta)``-DP by
    the replace-one RDP accountant at ``orders``. The bracket options are
    :func:`calibrate`'s (the defaults are Private SGD's; NoisySGD starts at the paper's noise
    and grows by 1.5). Cached."""
    def rdp_of(k: float) -> np.ndarray:
        return replace_one_rdp(wor_gaussian_event(n, sample_size, k, count), orders)

    return calibrate(rdp_of, epsilon, delta,
                     method=lambda rdp, d: _search_epsilon(rdp, d, orders),
                     lower=lower, start=start, growth=growth, rtol=rtol)


def _wor_step_rdp(n: int, k: float) -> np.ndarray:
    """RDP (at :data:`WOR_SEARCH_ORDERS`) of one Gaussian of multiplier ``k`` on one record
    sampled uniformly from ``n``."""
    return replace_one_rdp(wor_gaussian_event(n, 1, k), WOR_SEARCH_ORDERS)


def _largest_gaussian_precision(base: np.ndarray, steps: int, epsilon: float, delta: float
                                ) -> float:
    """Largest ``t = 1/k^2`` (rel. 1e-6) such that ``base`` plus ``steps`` Gaussians of
    multiplier ``k`` (RDP ``alpha t / 2`` each) is certified; 0 if none."""
    orders = np.asarray(WOR_SEARCH_ORDERS, float)

    def rdp_of(t: float) -> np.ndarray:
        return base + steps * orders * t / 2.0

    def accountant(rdp, d):
        return _search_epsilon(rdp, d)

    search = functools.partial(calibrate, rdp_of, epsilon, delta, method=accountant,
                               decreasing=False)
    if accountant(rdp_of(1.0), delta) <= epsilon:  # expand upward from t = 1
        return search(start=1.0, rtol=1e-6)
    # bracket [1e-6 4^-j, 1]: the first t of that grid that meets the target, then bisect
    try:
        lo = search(upper=1.0, start=1e-6, rtol=math.inf)
    except ValueError:
        return 0.0
    return search(lower=lo, upper=1.0, rtol=1e-6)


@functools.lru_cache(maxsize=256)
def svrg_multipliers(n: int, steps: int, epsilon: float, delta: float, sens_sub: float,
                     sens_full: float) -> tuple[float, float]:
    """Noise split of a variance-reduced step (DP-SVRG/DP-SVRG++, App. B.2 of Wang, Ye & Xu 2017).

    The step's query ``d_i + v~`` (``d_i`` the sampled gradient difference, replace-one
    sensitivity ``sens_sub``; ``v~`` the snapshot full gradient, sensitivity ``sens_full``) is
    released with ``N(0, sigma^2 I)``. Writing the noise as ``N(0, sigma_1^2) + N(0,
    sigma_2^2)``, the release is a post-processing of ``(d_i + N(0, sigma_1^2), v~ + N(0,
    sigma_2^2))``: a subsampled Gaussian (one uniform index, ``q = 1/n``) composed with a
    Gaussian, ``steps`` times (:func:`~dpbandits.privacy.accounting.events.svrg_event`).
    Returns the multipliers ``(k_1, k_2)`` (``sigma_j = k_j sens_j``) minimizing ``sigma^2 =
    sigma_1^2 + sigma_2^2`` subject to the RDP accountant certifying ``(epsilon, delta)``;
    for each ``k_1`` the smallest ``k_2`` comes from :func:`calibrate`, and the split is
    searched by golden section on ``log k_1``.
    """
    def k2_for(wor: np.ndarray) -> float:
        base = steps * wor
        if _search_epsilon(base, delta) > epsilon:
            return math.inf
        t = _largest_gaussian_precision(base, steps, epsilon, delta)
        return math.inf if t == 0.0 else 1.0 / math.sqrt(t)

    @functools.cache
    def total(log_k1: float) -> tuple[float, float, float]:
        k1 = math.exp(log_k1)
        k2 = k2_for(_wor_step_rdp(n, k1))
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


def svrg_split(n: int, steps: int, sigma: float, delta: float, sens_sub: float,
               sens_full: float) -> tuple[float, float]:
    """For a given total per-step std ``sigma``, the split ``(k_1, k_2)`` of
    :func:`svrg_multipliers`'s ledger that minimises the accountant's epsilon (golden
    section on the variance fraction of the sampled part)."""
    orders = np.asarray(WOR_SEARCH_ORDERS)

    @functools.cache
    def eps_of(frac: float) -> float:
        k1 = math.sqrt(frac) * sigma / sens_sub
        k2 = math.sqrt(1.0 - frac) * sigma / sens_full
        rdp = steps * (_wor_step_rdp(n, k1) + orders / (2 * k2**2))
        return _search_epsilon(rdp, delta)

    a, b = 1e-4, 1.0 - 1e-4
    invphi = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - invphi * (b - a), a + invphi * (b - a)
    while b - a > 1e-2:
        if eps_of(c) < eps_of(d):
            b, d = d, c
            c = b - invphi * (b - a)
        else:
            a, c = c, d
            d = a + invphi * (b - a)
    frac = min((a, b, c, d), key=eps_of)
    return math.sqrt(frac) * sigma / sens_sub, math.sqrt(1.0 - frac) * sigma / sens_full

"""Tests added to kill surviving mutants of DP-SVRG's noise split, the GDP multiplier's margin,
the RDP conversion of the searches and the store check of the noise searches
(privacy/accounting/calibration.py), of the contract measurements
(privacy/contributions.py) and of the chunked noise streams (privacy/streams.py)
(scripts/mutation.sh, docs/mutation-report.md). Each pins a contract whose mutation changed
the noise drawn, the epsilon claimed, a measured sensitivity or the rounds a stream hands out.

The DP-SVRG checks recompute every epsilon with dp_accounting's public ``RdpAccountant``
(``REPLACE_ONE`` neighbours, the calibration's orders), composing the events by hand rather
than through the package's event builders."""

from __future__ import annotations

import math
import re
import threading
import warnings

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant, compute_epsilon
from test_certificate_store import _new_process, _plant, _store_warnings
from test_mutation_kills_components import gdp_delta

from dpbandits._background import executor
from dpbandits.privacy.accounting import (
    calibrate,
    calibration,
    epsilon_of,
    gaussian_event,
    pure_dp_event,
    query,
)
from dpbandits.privacy.accounting.rdp import WOR_SEARCH_ORDERS
from dpbandits.privacy.contributions import largest_change, largest_norm
from dpbandits.privacy.streams import CHUNK_BUDGET, MAX_CHUNK, ChunkedDraws, chunk_rounds

ORDERS = np.asarray(WOR_SEARCH_ORDERS, dtype=float)
#: the relative tolerance of the precision search (calibration._largest_gaussian_precision)
PRECISION_RTOL = 1e-6


# -- Gaussian multipliers and RDP curves (calibration.gaussian_multiplier, _search_epsilon) ----
@pytest.mark.parametrize("epsilon, delta, count", [(1.0, 1e-5, 1), (0.3, 1e-6, 50),
                                                   (4.0, 1e-3, 7)])
def test_gaussian_multiplier_keeps_its_margin_on_the_safe_side(epsilon, delta, count):
    # count Gaussians of multiplier k are exactly (sqrt(count)/k)-GDP (Dong, Roth & Su 2019),
    # whose delta at each epsilon is closed-form: k meets delta at epsilon (1 - margin), so at
    # epsilon with room, and the room is no more than that margin
    margin = 1e-6
    mu = math.sqrt(count) / calibration.gaussian_multiplier(epsilon, delta, count, margin)
    assert gdp_delta(mu, epsilon) < delta < gdp_delta(mu, epsilon * (1.0 - 2.0 * margin))


def test_an_order_whose_rdp_bound_overflowed_certifies_nothing():
    # dp_accounting's conversion reads a NaN order as epsilon 0: the search must drop it
    rdp = 0.01 * ORDERS
    broken = rdp.copy()
    broken[-1], broken[-2] = math.inf, math.nan
    finite = float(compute_epsilon(ORDERS[:-2], rdp[:-2], 1e-5)[0])
    assert calibration._search_epsilon(broken, 1e-5) == finite
    assert calibration._search_epsilon(rdp, 1e-5) == float(compute_epsilon(ORDERS, rdp, 1e-5)[0])


# -- DP-SVRG's noise split (calibration.svrg_multipliers, svrg_split) -------------------------
def _accountant() -> RdpAccountant:
    return RdpAccountant(orders=list(WOR_SEARCH_ORDERS),
                         neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)


def _sampled_rdp(n: int, steps: int, k_sub: float) -> np.ndarray:
    """RDP of ``steps`` Gaussians of multiplier ``k_sub`` on one record sampled without
    replacement from ``n``."""
    accountant = _accountant()
    accountant.compose(dp_accounting.SampledWithoutReplacementDpEvent(
        source_dataset_size=n, sample_size=1,
        event=dp_accounting.GaussianDpEvent(noise_multiplier=k_sub)), steps)
    return accountant.rdp


def _unit_gaussian_rdp() -> np.ndarray:
    """RDP of one Gaussian of multiplier 1 (``alpha / 2``; multiplier ``k``: divide by k^2)."""
    accountant = _accountant()
    accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier=1.0))
    return accountant.rdp


def _svrg_epsilon(n: int, steps: int, k_sub: float, k_full: float, delta: float) -> float:
    """``steps`` x (the sampled Gaussian of multiplier ``k_sub``, then a Gaussian of
    multiplier ``k_full``), composed in one accountant."""
    accountant = _accountant()
    step = dp_accounting.ComposedDpEvent([
        dp_accounting.SampledWithoutReplacementDpEvent(
            source_dataset_size=n, sample_size=1,
            event=dp_accounting.GaussianDpEvent(noise_multiplier=k_sub)),
        dp_accounting.GaussianDpEvent(noise_multiplier=k_full)])
    accountant.compose(step, steps)
    return float(accountant.get_epsilon(delta))


def _smallest_k_full(n: int, steps: int, k_sub: float, epsilon: float, delta: float) -> float:
    """The smallest full-gradient multiplier certified with ``k_sub`` (bisection in log space
    to a factor 1 + 1e-9), ``inf`` if the sampled part alone spends the target."""
    sampled, unit = _sampled_rdp(n, steps, k_sub), steps * _unit_gaussian_rdp()

    def epsilon_at(k: float) -> float:
        return float(compute_epsilon(ORDERS, sampled + unit / k**2, delta)[0])

    lo, hi = 1e-3, 1e6
    if epsilon_at(hi) > epsilon:
        return math.inf
    assert epsilon_at(lo) > epsilon
    while hi / lo > 1.0 + 1e-9:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if epsilon_at(mid) <= epsilon else (mid, hi)
    return hi


# the search's three ways to a precision t = 1/k^2: t < 1 (bisected below 1), 1 <= t < 2 and
# t >= 2 (expanded upward from 1); for 8 steps on n = 64 with k_sub = 1.5 at delta = 1e-5
@pytest.mark.parametrize("epsilon, low, high", [(4.0, 0.0, 1.0), (20.0, 1.0, 2.0),
                                                (30.0, 2.0, math.inf)])
def test_largest_gaussian_precision_is_the_largest_certified(epsilon, low, high):
    n, steps, k_sub, delta = 64, 8, 1.5, 1e-5
    t = calibration._largest_gaussian_precision(_sampled_rdp(n, steps, k_sub), steps, epsilon,
                                                delta)
    assert low <= t < high
    assert _svrg_epsilon(n, steps, k_sub, 1.0 / math.sqrt(t), delta) <= epsilon
    # the bisection stops with a failing precision within a factor 1 + rtol of t
    t_more = t * (1.0 + 2.0 * PRECISION_RTOL)
    assert _svrg_epsilon(n, steps, k_sub, 1.0 / math.sqrt(t_more), delta) > epsilon


def test_largest_gaussian_precision_at_the_ends_of_its_range():
    steps, delta = 8, 1e-5
    sampled = _sampled_rdp(64, steps, 1.5)
    # the target met exactly at t = 1 (the float sum of steps Gaussians of multiplier 1 that
    # the search forms) and failed above: t = 1, not a refusal
    on_target = float(compute_epsilon(ORDERS, sampled + steps * ORDERS * 1.0 / 2.0, delta)[0])
    assert calibration._largest_gaussian_precision(sampled, steps, on_target, delta) == 1.0
    # the sampled part alone spends the whole target: no precision is certified
    spent = float(compute_epsilon(ORDERS, sampled, delta)[0])
    assert calibration._largest_gaussian_precision(sampled, steps, spent, delta) == 0.0


SVRG_CASES = [
    # the optimum sits just above the k_sub at which the sampled part alone spends the target
    pytest.param(200, 20, 4.0, 1e-5, 2.0, 0.1, id="n200"),
    *[pytest.param(*case, marks=pytest.mark.heavy, id=f"n{case[0]}")
      for case in ((257, 23, 0.9, 1e-5, 1.0, 0.3), (500, 50, 1.0, 1e-5, 1.0, 0.5),
                   (1000, 100, 0.5, 1e-6, 1.0, 1.0), (120, 12, 3.0, 1e-5, 0.5, 2.0))],
]


@pytest.mark.parametrize("n, steps, epsilon, delta, s_sub, s_full", SVRG_CASES)
def test_svrg_multipliers_are_certified_tight_and_near_optimal(n, steps, epsilon, delta,
                                                               s_sub, s_full):
    calibration.svrg_multipliers.cache_clear()  # searched here, not read from another call
    k_sub, k_full = calibration.svrg_multipliers(n, steps, epsilon, delta, s_sub, s_full)
    assert _svrg_epsilon(n, steps, k_sub, k_full, delta) <= epsilon
    # k_full = t^-1/2 with t within a factor 1 + rtol of the largest certified precision:
    # k_full (1 - rtol), a precision larger by 2 rtol, is not certified
    assert _svrg_epsilon(n, steps, k_sub, k_full * (1.0 - PRECISION_RTOL), delta) > epsilon
    # the variance of the split is within 1% of the best over k_sub e^-0.3 .. k_sub e^0.3
    # (steps of 0.05) and k_sub 2^(+-1.5), k_sub 2^(+-3), each with its smallest certified
    # k_full (the search refines log k_sub to 0.02: its own excess is below 1e-6 here)
    variance = (k_sub * s_sub) ** 2 + (k_full * s_full) ** 2
    grid = k_sub * np.concatenate([np.exp(np.linspace(-0.3, 0.3, 13)),
                                   2.0 ** np.array([-3.0, -1.5, 1.5, 3.0])])
    best = min((k * s_sub) ** 2 + (_smallest_k_full(n, steps, k, epsilon, delta) * s_full) ** 2
               for k in grid)
    assert variance <= 1.01 * best


@pytest.mark.parametrize("scale, full", [
    pytest.param(1.0, 0.4, id="interior"),  # the best fraction is near 0.11
    pytest.param(1.0, 2e-6, id="edge"),  # the full gradient's noise costs nothing: near 1
    pytest.param(1e-100, 0.4, id="tiny", marks=pytest.mark.heavy)])
def test_svrg_split_draws_the_given_noise_at_the_best_fraction(scale, full):
    n, steps, delta = 300, 30, 1e-5
    sigma, s_sub, s_full = 6.0 * scale, 2.0 * scale, full * scale
    k_sub, k_full = calibration.svrg_split(n, steps, sigma, delta, s_sub, s_full)
    # the privacy claim is for these two Gaussians: together they must be the noise drawn
    assert math.isclose((k_sub * s_sub) ** 2 + (k_full * s_full) ** 2, sigma**2,
                        rel_tol=1e-12, abs_tol=0.0)
    eps = _svrg_epsilon(n, steps, k_sub, k_full, delta)
    for frac in (0.02, 0.25, 0.5, 0.75, 0.98):
        other = _svrg_epsilon(n, steps, math.sqrt(frac) * sigma / s_sub,
                              math.sqrt(1.0 - frac) * sigma / s_full, delta)
        assert eps <= other, frac


# -- the store check of the noise searches (calibration._confirmed) ----------------------------
@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty store in ``tmp_path`` and a new process (as tests/test_certificate_store.py)."""
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(tmp_path))
    _new_process(monkeypatch)
    yield tmp_path / "certificates"
    _new_process(monkeypatch)


#: a Gaussian multiplier that the PLD accountant at its automatic discretization certifies for
#: (1, 1e-5) while the RDP accountant and the PLD at discretization 0.3 do not (their smallest
#: certified multipliers: 3.7306, 4.0463 and 4.0166)
BETWEEN = 3.85


@pytest.mark.parametrize("method, discretization", [("rdp", None), ("pld", 0.3)])
def test_a_planted_record_cannot_pass_an_answer_the_callers_accountant_rejects(
        store, monkeypatch, method, discretization):
    # a record says BETWEEN meets the target: the search stops there. The check must ask the
    # caller's accountant; another one (sound too) that accepts BETWEEN would let a stored
    # number set the noise below what the caller's query certifies
    def search():
        return calibrate(gaussian_event, 1.0, 1e-5, method=method,
                         discretization=discretization, lower=BETWEEN, rtol=math.inf)

    honest = search()
    assert epsilon_of(gaussian_event(BETWEEN), 1e-5, method, discretization=discretization) > 1
    _plant(store, calibration._query(gaussian_event(BETWEEN), method, discretization), 1e-5,
           0.5)
    _new_process(monkeypatch)
    target = re.escape(f"(epsilon=1.0, delta=1e-05, method={method!r})")
    with pytest.warns(RuntimeWarning, match=rf"dpbandits store .*\(a noise search for "
                      rf"{target} read numbers the accountant does not confirm\)"):
        answer = search()
    assert answer == honest
    assert epsilon_of(gaussian_event(answer), 1e-5, method, discretization=discretization) <= 1


@pytest.mark.parametrize("lie", [False, True])
def test_an_answer_exactly_on_the_target_is_confirmed_and_a_lie_about_it_caught(
        store, monkeypatch, lie):
    # the target is the accountant's epsilon at x exactly, so x meets it with equality
    x = 4.5
    target = epsilon_of(gaussian_event(x), 1e-5, "rdp")

    def search():
        return calibrate(gaussian_event, target, 1e-5, method="rdp", lower=x, growth=1.5,
                         rtol=math.inf)

    assert search() == x  # the bracket's end meets the target: it is the answer
    if lie:  # the record says x fails: the search would stop at 1.5 x, more noise than needed
        _plant(store, calibration._query(gaussian_event(x), "rdp", None), 1e-5, 2 * target)
    _new_process(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert search() == x
    assert len(_store_warnings(caught)) == lie  # an honest store is confirmed silently


# -- contract measurements (contributions.largest_norm, largest_change) ------------------------
def test_measurements_of_integer_rows_are_exact_where_int64_arithmetic_wraps():
    # differences 2^63 and 3 * 2^62 overflow int64 (to -2^63 and -2^62); every entry and
    # difference is a float64 exactly, so the measurement is exact in every norm. (0, 1) and
    # (1, 0) tie, as both rows' norms do: the first maximal pair / row is named
    for rows, change in (([[-2**62], [2**62]], 2.0**63),
                         ([[-(3 << 61)], [3 << 61]], 3 * 2.0**62)):
        values = np.array(rows, dtype=np.int64)
        for q in (1.0, 2.0, math.inf):
            assert largest_change(values, q) == (change, 0, 1)
            assert largest_norm(values, q) == (change / 2, 0)


@pytest.mark.parametrize("rows, want", [
    ([[0.0, 1.0], [2.0, 2.0], [math.inf, 0.0], [1.0, math.nan]], (math.inf, 0, 2)),
    ([[math.nan, 0.0], [1.0, 1.0]], (math.inf, 0, 0)),  # the first row itself
    ([[1e308, 0.0], [-1e308, 0.0]], (math.inf, 0, 1)),  # finite rows, overflowing difference
    ([[math.inf], [math.inf]], (math.inf, 0, 0)),  # inf - inf
])
def test_a_non_finite_row_or_difference_gives_inf_and_names_the_pair_silently(rows, want):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # adversarial rows raise no floating-point warning
        assert largest_change(np.array(rows), 2.0) == want


# -- chunked noise streams (streams.ChunkedDraws, chunk_rounds) --------------------------------
@pytest.mark.parametrize("args, kwargs, want", [
    ((7, 10**6), {}, MAX_CHUNK),  # the default most rounds
    ((CHUNK_BUDGET // 3, 10**6), {}, 3),  # the default budget
    ((3, 10**6), {"max_chunk": 5}, 5),
    ((1, 10**6), {"budget": 100, "max_chunk": 10**6}, 100),
    ((30, 10**6), {"budget": 100, "max_chunk": 10**6}, 3),
    ((1, 40), {"budget": 100, "max_chunk": 10**6}, 40),  # at most n_rounds
    ((10**9, 10**6), {}, 1),  # at least 1
    ((1, 0), {}, 1),
])
def test_chunk_rounds_is_the_tightest_of_its_limits(args, kwargs, want):
    assert chunk_rounds(*args, **kwargs) == want


N_ROUNDS = 10
#: floats per round such that CHUNK_BUDGET holds 4 rounds, and a quarter of it (prefetching) 1
WIDE = CHUNK_BUDGET // 4


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("chunk, floats_per_round, per_chunk", [
    (1, 1, 1), (3, 1, 3), (N_ROUNDS, 1, N_ROUNDS), (None, 1, N_ROUNDS), (None, WIDE, None)])
def test_chunked_draws_hand_out_every_round_once_in_order(monkeypatch, prefetch, chunk,
                                                          floats_per_round, per_chunk):
    monkeypatch.setenv("DPBANDITS_PREFETCH", "1")
    per_chunk = per_chunk or (1 if prefetch else 4)
    calls = []

    def draw(start, n):
        calls.append((start, n, threading.get_ident()))
        return np.arange(start, start + n), -np.arange(start, start + n)

    stream = ChunkedDraws(draw, N_ROUNDS, floats_per_round, chunk=chunk, prefetch=prefetch)
    assert stream.chunk == per_chunk
    assert stream.prefetch is (prefetch and N_ROUNDS > per_chunk)  # only with a second chunk
    got = [stream.next() for _ in range(N_ROUNDS)]
    assert [(int(a), int(b)) for a, b in got] == [(r, -r) for r in range(N_ROUNDS)]
    with pytest.raises(IndexError, match=f"^all {N_ROUNDS} rounds of this stream were drawn$"):
        stream.next()
    executor().submit(int).result()  # the one drawing thread is idle: all it drew is recorded
    # the calls tile the rounds, in order, never past the last one
    assert [(s, n) for s, n, _ in calls] == [(s, min(per_chunk, N_ROUNDS - s))
                                             for s in range(0, N_ROUNDS, per_chunk)]
    # prefetching draws every chunk in the background thread, otherwise none
    caller = threading.get_ident()
    assert [thread != caller for *_, thread in calls] == [stream.prefetch] * len(calls)


def test_chunked_draws_refuse_bad_sizes_naming_them():
    calls = []

    def draw(start, n):
        calls.append((start, n))
        return (np.zeros(n),)

    with pytest.raises(IndexError, match="^all 0 rounds"):
        ChunkedDraws(draw, 0, 1).next()  # an empty stream is valid: it hands out nothing
    assert calls == []
    with pytest.raises(ValueError, match="^n_rounds must be >= 0, got -1$"):
        ChunkedDraws(draw, -1, 1)
    with pytest.raises(ValueError, match="^chunk must be >= 1, got 0$"):
        ChunkedDraws(draw, 5, 1, chunk=0)


# -- calibrate's argument errors (calibration.calibrate) ---------------------------------------
def _gauss(x):
    return gaussian_event(x)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"event_of_noise": 3}, TypeError,
     r"^event_of_noise must be callable \(noise -> DpEvent\), got int$"),
    ({"epsilon": -1.0}, ValueError, r"\bepsilon\b.*-1\.0"),
    ({"method": "exact"}, ValueError, r"\bmethod\b.*'exact'"),
    ({"rtol": 0.0}, ValueError, r"\brtol\b.*0\.0"),
    ({"growth": 1.0}, ValueError, r"\bgrowth\b.*1\.0"),
    ({"decreasing": 1}, TypeError, r"^decreasing must be a bool, got int$"),
    ({"method": epsilon_of, "discretization": 0.1}, ValueError,
     r"^discretization applies to method='pld' only, got a callable method and "
     r"discretization=0\.1$"),
    ({"lower": -2.0}, ValueError, r"\blower\b.*-2\.0"),
    ({"upper": -3.0}, ValueError, r"\bupper\b.*-3\.0"),
    ({"lower": 2.0, "upper": 2.0}, ValueError, r"^lower must be < upper, got lower=2\.0, "
     r"upper=2\.0$"),
    ({"start": -4.0}, ValueError, r"\bstart\b.*-4\.0"),
    ({"start": 2.0, "upper": 8.0}, ValueError,
     r"^start cannot be combined with upper \(the end that must meet the target\)$"),
    ({"start": 2.0, "lower": 0.5, "decreasing": False}, ValueError,
     r"^start cannot be combined with lower \(the end that must meet the target\)$"),
    ({"start": 0.5, "lower": 1.0}, ValueError,
     r"^start must lie strictly between lower=1\.0 and upper=None, got 0\.5$"),
    ({"start": 1.0, "lower": 1.0}, ValueError,
     r"^start must lie strictly between lower=1\.0 and upper=None, got 1\.0$"),
    ({"start": 2.0, "upper": 2.0, "decreasing": False}, ValueError,
     r"^start must lie strictly between lower=None and upper=2\.0, got 2\.0$"),
    ({"upper": 1e-3}, ValueError,
     r"^target \(epsilon=1\.0, delta=1e-05, method='pld'\) cannot be met within the given "
     r"bracket: at upper=0\.001 epsilon_of gives "),
    ({"event_of_noise": pure_dp_event, "decreasing": False, "lower": 2.0}, ValueError,
     r"^target \(epsilon=1\.0, delta=1e-05, method='pld'\) cannot be met within the given "
     r"bracket: at lower=2\.0 epsilon_of gives 1\.99"),
])
def test_calibrate_refuses_each_bad_argument_naming_it_and_its_value(kwargs, error, message):
    args = {"event_of_noise": _gauss, "epsilon": 1.0, "delta": 1e-5, **kwargs}
    with pytest.raises(error, match=message):
        calibrate(args.pop("event_of_noise"), args.pop("epsilon"), args.pop("delta"), **args)


@pytest.mark.parametrize("call, message", [
    (lambda: query.check_discretization(-1.0), r"^discretization must be > 0\.0, got -1\.0$"),
    (lambda: epsilon_of(gaussian_event(1.0), 1e-5, "exact"),
     r"^method must be one of \['pld', 'rdp'\], got 'exact'$"),
    (lambda: query.delta_of(gaussian_event(1.0), -2.0),
     r"^epsilon must be > 0\.0, got -2\.0$"),
])
def test_accountant_queries_refuse_bad_arguments_naming_them(call, message):
    with pytest.raises(ValueError, match=message):
        call()

"""The store saves time and nothing else (issue 34, item 2): a number read back is the
accountant's, bit for bit; a changed query, delta, accountant or accounting source never reads
an old one; and no content of the store (planted, damaged, or in a folder others can write)
can lower the noise a component draws or change the epsilon certified for it."""

import json
import math
import os
import warnings

import pytest

from dpbandits.agents import make_agent
from dpbandits.privacy.accounting import _certificate_store as store
from dpbandits.privacy.accounting import (
    calibrate,
    certification,
    epsilon_of,
    gaussian_event,
)


def _new_process(monkeypatch):
    """What a new process starts with: no in-process cache of a certificate or a calibration,
    and no warning given yet."""
    from dpbandits.privacy import peeling
    from dpbandits.privacy.accounting import calibration, conversions

    for cached in (conversions.gdp_mu, conversions.zcdp_rho, peeling._multiplier,
                   calibration.certified_gaussian_multiplier,
                   calibration.wor_gaussian_multiplier, calibration.svrg_multipliers):
        cached.cache_clear()
    monkeypatch.setattr(certification, "_CACHE", {})
    monkeypatch.setattr(store, "_WARNED", set(), raising=False)
    store._warn_once.cache_clear()


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty store in ``tmp_path`` and a new process."""
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(tmp_path))
    _new_process(monkeypatch)
    yield tmp_path / "certificates"
    _new_process(monkeypatch)  # nothing computed against a planted store outlives the test


def _records(folder):
    return sorted(folder.glob("*.json"))


def _store_warnings(caught):
    return [w for w in caught if issubclass(w.category, RuntimeWarning)
            and "dpbandits store" in str(w.message)]


# -- what the store keeps -------------------------------------------------------------------

def test_a_remembered_query_is_computed_once_and_read_back_exactly(fresh):
    calls = []

    def compute():
        calls.append(1)
        return 0.1 + 0.2  # not a round number: the float must come back bit for bit

    def check(value):
        return True

    first = store.remember("a query (test)", 1e-5, compute, check)
    again = store.remember("a query (test)", 1e-5, compute, check)
    other = store.remember("a query (test)", 1e-6, compute, check)  # another delta
    assert first == again == other == 0.1 + 0.2 and len(calls) == 2


def test_another_query_delta_or_accounting_code_is_recomputed(fresh, monkeypatch):
    calls = []

    def compute():
        calls.append(1)
        return 0.5

    def remember(query, delta):
        return store.remember(query, delta, compute, lambda value: True)

    remember("query a", 1e-5)
    remember("query b", 1e-5)
    remember("query a", 1e-6)
    assert len(calls) == 3 and len(_records(fresh)) == 3
    monkeypatch.setattr(store, "_code_version", lambda: "dp_accounting 9.9, sources changed")
    remember("query a", 1e-5)
    assert len(calls) == 4


def test_the_store_is_off_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", "off")
    _new_process(monkeypatch)
    assert store.store_dir() is None
    assert calibrate(gaussian_event, 1.0, 1e-5) > 0
    assert not list(tmp_path.iterdir())


def test_an_unwritable_folder_warns_and_still_calibrates(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the folder should be
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(blocker))
    _new_process(monkeypatch)
    with pytest.warns(RuntimeWarning, match="DPBANDITS_CACHE_DIR"):
        k = calibrate(gaussian_event, 1.0, 1e-5, rtol=1e-2)
    assert epsilon_of(gaussian_event(k), 1e-5) <= 1.0 < epsilon_of(gaussian_event(k / 1.01),
                                                                    1e-5)


def test_the_folder_and_its_missing_parents_are_created_private(tmp_path, monkeypatch):
    base = tmp_path / "a" / "b"
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(base))
    _new_process(monkeypatch)
    old = os.umask(0o002)  # a umask that leaves new folders group-writable
    try:
        store.remember("a query (test)", 1e-5, lambda: 0.5, lambda value: True)
    finally:
        os.umask(old)
    for folder in (tmp_path / "a", base, base / "certificates"):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert len(_records(base / "certificates")) == 1


def test_calibrations_read_from_the_store_give_the_same_noise(fresh, monkeypatch):
    # noise searches (calibrate) and gdp_mu/zcdp_rho: computed cold, then read back in "another
    # process". No search runs again and no root is found again; a search that read numbers
    # from the store confirms its answer with at most two accountant queries (the answer and
    # the end of its final bracket), and the noise is bit for bit the cold one
    from dpbandits.privacy.accounting import calibration, conversions, query

    def build():
        return [make_agent(name, n_arms=2, dim=5, horizon=100).plan.scales
                for name in ("dp-moment-ls", "adac-oful", "fliphat", "ldp-linucb")]

    cold = build()
    _new_process(monkeypatch)

    def refuse(*args, **kwargs):
        raise AssertionError("the accountant ran although the store holds the number")

    confirm, confirmations = calibration._confirmed, []

    def counted(*args):
        confirmations.append(1)
        with monkeypatch.context() as m:
            m.setattr(calibration, "epsilon_of", counting)
            return confirm(*args)

    queries = []
    direct = calibration.epsilon_of

    def counting(*args, **kwargs):
        queries.append(1)
        return direct(*args, **kwargs)

    monkeypatch.setattr(calibration, "_confirmed", counted)
    monkeypatch.setattr(calibration, "epsilon_of", refuse)
    monkeypatch.setattr(query, "epsilon_of", refuse)
    monkeypatch.setattr(conversions, "_gdp_mu", refuse)
    monkeypatch.setattr(conversions, "_zcdp_rho", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an honest store: nothing ignored
        assert build() == cold
    assert confirmations and len(queries) <= 2 * len(confirmations)


# -- no content of the store sets the noise or the certificate ------------------------------

def _honest_and_planted(monkeypatch, build):
    """``build()`` against no store, then against the store while an accountant that
    under-reports epsilon 10^4-fold and a GDP root finder 10-fold too generous write it (as
    anyone who can write the folder could), each in a new process."""
    from dpbandits.privacy.accounting import calibration, conversions

    with monkeypatch.context() as m:
        m.setenv("DPBANDITS_CACHE_DIR", "off")
        _new_process(monkeypatch)
        honest = build()
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        direct, gdp_mu = calibration.epsilon_of, conversions._gdp_mu
        m.setattr(calibration, "epsilon_of", lambda *a, **k: direct(*a, **k) * 1e-4)
        m.setattr(conversions, "_gdp_mu", lambda eps, delta: gdp_mu(eps, delta) * 10.0)
        recompute = certification._recompute
        m.setattr(certification, "_recompute", lambda ledger, delta: certification.Certificate(
            recompute(ledger, delta).epsilon * 1e-4, delta, "planted"))
        planted = build()
    _new_process(monkeypatch)
    return honest, planted


@pytest.mark.parametrize("component", ["private-estimator", "dp-moment-ls"])
def test_a_planted_store_cannot_lower_the_noise_or_the_certified_epsilon(fresh, monkeypatch,
                                                                         component):
    from dpbandits.offpolicy import PrivateEstimator

    def build():
        if component == "private-estimator":
            made = PrivateEstimator("ips", epsilon=1.0, delta=1e-6, max_weight=20.0)
        else:
            made = make_agent("dp-moment-ls", n_arms=2, dim=5, horizon=100, epsilon=1.0,
                              delta=1e-6)
        multiplier = made.plan.scales["multiplier"]
        return multiplier, certification.certify(made.ledger, made.privacy.delta).epsilon

    (k_honest, eps_honest), (k_planted, _) = _honest_and_planted(monkeypatch, build)
    assert k_planted < k_honest / 5  # the plant took: that store would cut the noise 10-fold
    assert _records(fresh)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k, eps = build()
    assert (k, eps) == (k_honest, eps_honest)  # the noise and the certificate of no store
    assert eps <= 1.0 and len(_store_warnings(caught)) == 1


def _plant(folder, query, delta, value):
    """Overwrite the value of the record of ``query`` at ``delta`` in ``folder``."""
    path = store._path(folder, query, delta)
    record = json.loads(path.read_text())
    record["value"] = value
    path.write_text(json.dumps(record))


def _flip_a_digit(value: float) -> float:
    text = repr(value)
    i = next(i for i, c in enumerate(text) if c in "123456789")  # the leading digit
    return float(text[:i] + str(int(text[i]) % 9 + 1) + text[i + 1:])


@pytest.mark.parametrize("bad", [-1.0, None, math.nan, "0.5", True, 1, [0.1], "flip",
                                 "slightly lower"])
def test_a_bad_record_is_ignored_and_recomputed_with_one_warning(fresh, monkeypatch, bad):
    from dpbandits.privacy.accounting import conversions

    honest = (conversions.gdp_mu(1.0, 1e-5), conversions.zcdp_rho(1.0, 1e-5))
    for query, value in (("gdp_mu(epsilon=1.0)", honest[0]),
                         ("zcdp_rho(epsilon=1.0)", honest[1])):
        # "slightly lower": a mu or rho a millionth below the root (more noise than needed)
        _plant(fresh, query, 1e-5, _flip_a_digit(value) if bad == "flip"
               else value * (1 - 1e-6) if bad == "slightly lower" else bad)
    _new_process(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = (conversions.gdp_mu(1.0, 1e-5), conversions.zcdp_rho(1.0, 1e-5))
    assert again == honest and len(_store_warnings(caught)) == 1  # two bad records, one line
    _new_process(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the records were written again, now valid
        assert (conversions.gdp_mu(1.0, 1e-5), conversions.zcdp_rho(1.0, 1e-5)) == honest


@pytest.mark.parametrize("lie", ["less noise", "more noise"])
def test_a_record_that_moves_a_noise_search_is_caught(fresh, monkeypatch, lie):
    # one candidate's record is changed (a flipped digit would do): the last candidate that
    # fails now passes, so the search would stop there, at less noise than the target needs;
    # or the answer now fails, so the search would go on to more noise than it needs. The
    # answer is checked by the accountant, ignored and the search recomputed
    from dpbandits.privacy.accounting import calibration

    seen = []

    def event(x):
        seen.append(x)
        return gaussian_event(x)

    def search():
        return calibrate(event, 1.0, 1e-5, lower=3.0, growth=1.05, rtol=math.inf)

    k = search()
    bad = max(x for x in seen if x < k)  # the last candidate that failed
    assert epsilon_of(gaussian_event(bad), 1e-5) > 1.0 >= epsilon_of(gaussian_event(k), 1e-5)
    x, value = (bad, 0.5) if lie == "less noise" else (k, 1.5)
    _plant(fresh, calibration._query(gaussian_event(x), "pld", None), 1e-5, value)
    _new_process(monkeypatch)
    with pytest.warns(RuntimeWarning, match="dpbandits store"):
        assert search() == k


def test_a_record_that_makes_a_search_fail_is_recomputed(fresh, monkeypatch):
    from dpbandits.privacy.accounting import calibration

    k = calibrate(gaussian_event, 1.0, 1e-5, upper=20.0, rtol=1e-2)
    _plant(fresh, calibration._query(gaussian_event(20.0), "pld", None), 1e-5, math.inf)
    _new_process(monkeypatch)
    with pytest.warns(RuntimeWarning, match="dpbandits store"):  # not "cannot be met"
        assert calibrate(gaussian_event, 1.0, 1e-5, upper=20.0, rtol=1e-2) == k


def test_a_certificate_is_never_read_from_the_store(fresh, monkeypatch):
    ledger = gaussian_event(2.0)
    cold = certification.certify(ledger, 1e-5)
    _new_process(monkeypatch)
    calls = []
    recompute = certification._recompute
    monkeypatch.setattr(certification, "_recompute",
                        lambda led, d: calls.append(d) or recompute(led, d))
    assert certification.certify(ledger, 1e-5) == cold and calls == [1e-5]
    assert cold.epsilon == epsilon_of(ledger, 1e-5)


# -- folders others could write -------------------------------------------------------------

def _refusals(caught):
    return [w for w in caught if "is not used" in str(w.message)]


def _calibrate_twice():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calibrate(gaussian_event, 1.0, 1e-5, rtol=1e-2)
        calibrate(gaussian_event, 2.0, 1e-5, rtol=1e-2)
    return caught


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_folder_others_can_write_is_refused_with_one_line(tmp_path, monkeypatch, mode):
    folder = tmp_path / "certificates"
    folder.mkdir()
    folder.chmod(mode)
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(tmp_path))
    _new_process(monkeypatch)
    (refusal,) = _refusals(_calibrate_twice())
    assert "writable by group or others" in str(refusal.message)
    assert "\n" not in str(refusal.message) and not list(folder.iterdir())


def test_a_folder_in_a_parent_others_can_write_is_refused_unless_sticky(tmp_path, monkeypatch):
    parent = tmp_path / "shared"
    parent.mkdir()
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(parent))
    parent.chmod(0o777)
    _new_process(monkeypatch)
    (refusal,) = _refusals(_calibrate_twice())
    assert "parent" in str(refusal.message) and not list(parent.iterdir())
    parent.chmod(0o1777)  # as /tmp: nobody else can rename our folder away
    _new_process(monkeypatch)
    assert not _refusals(_calibrate_twice())
    assert (parent / "certificates").stat().st_mode & 0o777 == 0o700


def test_a_folder_another_user_owns_is_refused_with_one_line(fresh, monkeypatch):
    calibrate(gaussian_event, 1.0, 1e-5, rtol=1e-2)  # the folder exists, ours
    assert _records(fresh)
    _new_process(monkeypatch)
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)  # the folder's owner is someone else
    before = {p: p.stat().st_mtime_ns for p in _records(fresh)}
    from dpbandits.privacy.accounting import calibration

    queries, direct = [], calibration.epsilon_of
    monkeypatch.setattr(calibration, "epsilon_of",
                        lambda *a, **k: queries.append(1) or direct(*a, **k))
    (refusal,) = _refusals(_calibrate_twice())
    assert f"owned by another user (uid {uid})" in str(refusal.message)
    assert len(queries) > 4  # both searches ran in full: nothing was read from the folder
    assert {p: p.stat().st_mtime_ns for p in _records(fresh)} == before  # nor written


def test_a_shared_ledger_is_found_by_identity_with_the_same_certificate(fresh, monkeypatch):
    # agents of the same sizes share their ledger object (DP-POFW caches it): the second
    # certification finds the digest by identity (no repr, no hash); an equal ledger that is
    # another object takes the repr path to the same certificate
    import copy
    import hashlib

    first = make_agent("dp-hdb", n_arms=2, dim=20, horizon=300)
    second = make_agent("dp-hdb", n_arms=2, dim=20, horizon=300)
    assert second.ledger is first.ledger
    cert = certification.certify(first.ledger, 1e-3)
    hashed, sha1 = [], hashlib.sha1
    monkeypatch.setattr(certification.hashlib, "sha1",
                        lambda data: hashed.append(len(data)) or sha1(data))
    assert certification.certify(second.ledger, 1e-3) == cert
    assert hashed == []
    twin = copy.deepcopy(first.ledger)
    assert certification.certify(twin, 1e-3) == cert
    assert hashed == [len(repr(twin).encode())]
    assert certification.certify(make_agent("dp-hdb", n_arms=2, dim=20, horizon=301).ledger,
                                 1e-3) != cert

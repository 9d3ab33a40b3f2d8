"""Certificates persist between processes: a stored number is the accountant's, bit for bit,
and a changed ledger, delta, accountant or accounting source never reads an old one."""

import json

import pytest

from dpbandits.agents import make_agent
from dpbandits.privacy.accounting import _certificate_store as store
from dpbandits.privacy.accounting import certification, epsilon_of, gaussian_event


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty store in ``tmp_path`` and an empty in-process cache."""
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(certification, "_CACHE", {})
    return tmp_path / "certificates"


def _forget(monkeypatch):
    """A new process: nothing in memory, and no recomputation allowed."""
    monkeypatch.setattr(certification, "_CACHE", {})

    def refuse(ledger, delta):
        raise AssertionError("recomputed although the store holds the certificate")

    monkeypatch.setattr(certification, "_recompute", refuse)


def test_a_stored_certificate_is_the_accountants_number_bit_for_bit(fresh, monkeypatch):
    agent = make_agent("dp-hdb", n_arms=2, dim=20, horizon=300)
    cold = certification.certify(agent.ledger, agent.privacy.delta)
    assert cold.epsilon == epsilon_of(agent.ledger, agent.privacy.delta)
    assert len(list(fresh.glob("*.json"))) == 1
    _forget(monkeypatch)
    warm = certification.certify(agent.ledger, agent.privacy.delta)
    assert warm == cold  # same float, same delta, same basis


def test_another_ledger_delta_or_accounting_code_is_recomputed(fresh, monkeypatch):
    ledger = gaussian_event(3.0)
    first = certification.certify(ledger, 1e-5)
    monkeypatch.setattr(certification, "_CACHE", {})
    calls = []
    recompute = certification._recompute
    monkeypatch.setattr(certification, "_recompute",
                        lambda led, d: calls.append(d) or recompute(led, d))
    assert certification.certify(gaussian_event(3.5), 1e-5).epsilon < first.epsilon
    assert certification.certify(ledger, 1e-6).epsilon > first.epsilon
    monkeypatch.setattr(certification, "_CACHE", {})
    monkeypatch.setattr(store, "_code_version", lambda: "dp_accounting 9.9, sources changed")
    assert certification.certify(ledger, 1e-5) == first
    assert calls == [1e-5, 1e-6, 1e-5]


def test_a_damaged_or_foreign_file_is_ignored(fresh, monkeypatch):
    ledger = gaussian_event(2.0)
    first = certification.certify(ledger, 1e-5)
    (path,) = fresh.glob("*.json")
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "epsilon": 0.001, "ledger_sha256": "0" * 64}))
    monkeypatch.setattr(certification, "_CACHE", {})
    assert certification.certify(ledger, 1e-5) == first  # recomputed, then stored again
    path.write_text("{not json")
    monkeypatch.setattr(certification, "_CACHE", {})
    assert certification.certify(ledger, 1e-5) == first
    _forget(monkeypatch)
    assert certification.certify(ledger, 1e-5) == first


def test_the_store_is_off_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", "off")
    monkeypatch.setattr(certification, "_CACHE", {})
    assert store.store_dir() is None
    certification.certify(gaussian_event(2.0), 1e-5)
    assert not list(tmp_path.iterdir())


def test_an_unwritable_folder_warns_and_still_certifies(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the folder should be
    monkeypatch.setenv("DPBANDITS_CACHE_DIR", str(blocker))
    monkeypatch.setattr(certification, "_CACHE", {})
    with pytest.warns(RuntimeWarning, match="DPBANDITS_CACHE_DIR"):
        cert = certification.certify(gaussian_event(2.5), 1e-5)
    assert cert.epsilon == epsilon_of(gaussian_event(2.5), 1e-5)


def test_a_remembered_query_is_computed_once_and_read_back_exactly(fresh):
    calls = []

    def compute():
        calls.append(1)
        return 0.1 + 0.2  # not a round number: the float must come back bit for bit

    first = store.remember("a query (test)", 1e-5, compute)
    again = store.remember("a query (test)", 1e-5, compute)
    other = store.remember("a query (test)", 1e-6, compute)  # another delta: another number
    assert first == again == other == 0.1 + 0.2 and len(calls) == 2


def test_calibrations_read_from_the_store_give_the_same_noise(fresh, monkeypatch):
    # a noise search (calibrate), a peeling check and gdp_mu/zcdp_rho: computed cold, then
    # read back in "another process" (caches cleared, the accountant refused); the in-process
    # caches are cleared before the cold build too (an earlier test in this process may have
    # filled them, and the cold build would then write nothing to the fresh store)
    from dpbandits.privacy import peeling
    from dpbandits.privacy.accounting import calibration, conversions, query

    def build():
        return [make_agent(name, n_arms=2, dim=5, horizon=100)._plan.scales
                for name in ("dp-moment-ls", "adac-oful", "fliphat", "ldp-linucb")]

    def new_process():
        conversions.gdp_mu.cache_clear()
        conversions.zcdp_rho.cache_clear()
        peeling._multiplier.cache_clear()

    new_process()
    cold = build()
    new_process()

    def refuse(*args, **kwargs):
        raise AssertionError("the accountant ran although the store holds the number")

    monkeypatch.setattr(calibration, "epsilon_of", refuse)
    monkeypatch.setattr(query, "epsilon_of", refuse)
    monkeypatch.setattr(conversions, "_gdp_mu", refuse)
    monkeypatch.setattr(conversions, "_zcdp_rho", refuse)
    assert build() == cold


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

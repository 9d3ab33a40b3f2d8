"""Certification sees every ledger (issue 34, item 4): sampling without replacement is
certified by the RDP accountant under replace-one neighbours, and ``check_privacy`` fails on a
certified epsilon that is missing, not a number, negative or above the claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.optim import OPTIMIZERS
from dpbandits.privacy.accounting import certification
from dpbandits.privacy.accounting.certification import certify
from dpbandits.testing import (
    ContractError,
    check_privacy,
    instance_for_checks,
    problem_for_checks,
)

WOR = ["local-md", "noisy-sgd", "dp-svrg", "dp-svrg++", "private-sgd"]


def _fitted(name):
    opt = instance_for_checks(OPTIMIZERS[name])
    loss, X, y = problem_for_checks(opt, n_reps=1)
    opt.fit(loss, X, y, np.random.default_rng(0))
    return opt


@pytest.mark.parametrize("name", WOR)
def test_sampling_without_replacement_is_certified_at_or_below_the_claim(name):
    opt = _fitted(name)
    assert "SampledWithoutReplacement" in repr(opt.ledger)
    cert = certify(opt.ledger, opt.privacy.delta, opt.privacy.neighbouring)
    assert cert.epsilon is not None and 0.0 < cert.epsilon <= opt.privacy.epsilon * (1 + 1e-6)
    assert "replace-one" in cert.basis
    check_privacy(opt)
    # add/remove neighbours: dp_accounting has no accountant for these ledgers
    assert certify(opt.ledger, opt.privacy.delta, "add-remove").epsilon is None


@pytest.mark.parametrize("value, words", [
    (None, "cannot be recomputed"), (math.nan, "must be a number >= 0"),
    (-1.0, "must be a number >= 0"), (5.0, "above the claimed epsilon")])
def test_check_privacy_fails_on_a_certificate_it_cannot_trust(monkeypatch, value, words):
    opt = _fitted("dp-svrg")
    monkeypatch.setattr(certification, "certified_guarantee", lambda c: {
        "epsilon": value, "delta": c.privacy.delta, "basis": "not recomputable: planted"})
    with pytest.raises(ContractError, match=words):
        check_privacy(opt)

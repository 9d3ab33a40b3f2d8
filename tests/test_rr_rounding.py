"""Randomized response's privacy loss is rounded up (never below the loss of the float ``p``
the ledger holds), and the remembered flattening of a ledger is handed out as a copy."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpbandits.privacy.accounting.events import flatten, pure_dp_event
from dpbandits.privacy.accounting.pld import _rr_atoms


@settings(max_examples=300, deadline=None)
@given(p=st.floats(1e-300, 1.0, exclude_max=True), k=st.integers(2, 1000))
@example(p=1.0 - 2.0**-52, k=2)  # the smallest steps: the loss is a difference of near-equals
@example(p=2.0 * math.exp(-0.005) / (1.0 + math.exp(-0.005)), k=2)
def test_randomized_responses_loss_is_rounded_up(p, k):
    getcontext().prec = 60
    dp, dk = Decimal(p), Decimal(k)  # the float p, exactly
    exact = ((1 - dp + dp / dk) / (dp / dk)).ln()
    losses, _ = _rr_atoms(p, k)
    assert Decimal(losses[0]) >= exact and losses[1] == -losses[0]
    # and not by more than a few ulps of the logarithms (1e-9 relative, 1e-12 absolute)
    assert Decimal(losses[0]) <= exact * (1 + Decimal(1e-9)) + Decimal(1e-12)


def test_flatten_hands_out_a_copy_of_what_it_remembers():
    import dp_accounting

    event = dp_accounting.ComposedDpEvent([pure_dp_event(0.1 * (i + 1)) for i in range(5)] * 25)
    counts, _ = flatten(event)
    counts.clear()
    again, _ = flatten(event)
    assert sum(again.values()) == 125

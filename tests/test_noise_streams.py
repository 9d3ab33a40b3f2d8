"""Components whose noise now comes from :mod:`dpbandits.privacy.noise` kept their random
streams: a short fixed-seed run of each is bit-identical to the run measured on main (commit
b6e15c6) before the samplers were merged (fingerprints of ``tests/_streams.py``)."""

from __future__ import annotations

import pytest
from _streams import fingerprints

#: measured on main b6e15c6 before the change (``python tests/_streams.py``)
BEFORE = {
    "agent:adac-oful": "fe5947c3ff1cd067",
    "agent:dp-hdb": "7980c1f841413103",
    "agent:dp-hdb-authors-code": "ea45468f95761f94",
    # issue 36 round 4: the latest release's contrasts kept as state (`_c_last`); arms and
    # every other state array unchanged
    "agent:dp-moment-ls": "5eec50c483a36994",
    "agent:dp-budget-ls": "9e44d8dc9db8e8d4",  # issue 36 round 4: weighted, shrunk contrasts
    "agent:dp-screened-ls": "d759890c04b5e8c6",
    "agent:dp-ucb": "398e57a829909723",
    "agent:dp-ucb-authors-code": "73562772722ebaca",
    "agent:fliphat": "c65362bdc500eae8",
    "agent:greedy": "0636d8fbea1b6226",
    "agent:ldp-linucb": "5d951cd2430f1b8a",
    "agent:linucb": "ee7857e5f78998c4",
    "agent:random": "c8b92fad8ef102c1",
    # L~ rounded up one ulp so that its square covers the rows exactly (issue 34, item 8)
    "agent:dp-ucb-wishart": "2beabd58f190ac1a",
    "agent:dp-hdb-gumbel": "08387ba97222ba09",
    "optim:dp-accmd": "bd4c865a7630b663",
    "optim:dp-gd": "01f58d96d0833060",
    "optim:dp-pofw": "57c4ffa7170975dc",
    "optim:dp-svrg": "9ea6e71d4579e0a7",
    "optim:dp-svrg++": "ef42baa526b9332d",
    "optim:dp-tofw": "91573ceef013de32",
    "optim:local-md": "a9ce488d9bece4da",
    "optim:noisy-sfw": "18688aabfdbb46d7",
    "optim:noisy-sgd": "f5e3553b26920997",  # issue 34.1: clipped rows move by ulps
    "optim:private-ftrl": "389fdfc7a3ff3ca7",
    "optim:private-sgd": "f0edf83d8eb5bd23",
    "optim:dp-pofw-gumbel": "dd9bfdf1c8612744",
    "mech:laplace_noise": "a88ce45e6390eda6",
    "mech:gaussian_noise": "2b73efd683f13ce8",
    "mech:symmetric_gaussian(goe)": "ccd603f82932860d",
    "mech:wishart_matrix": "38db55cf6153bfeb",
    "mech:report_noisy_argmax": "38e56269ab156c78",
    "mech:report_noisy_argmin": "ba5f21266837f39f",
    "mech:exponential_mechanism": "a9fb08102a08a6c7",
    "mech:generalized_gaussian_noise": "d4b6fde20de588ab",
    "mech:peel": "d876fb04b6bf4271",
    "offpolicy:release": "577c7b6aef597ab1",
}

RUNS = fingerprints()


def test_every_fingerprinted_component_has_a_recorded_value():
    assert set(RUNS) == set(BEFORE)


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_stream_bit_identical_to_main(name):
    assert RUNS[name]() == BEFORE[name]

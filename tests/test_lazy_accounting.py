"""``import dp_accounting`` through dpbandits is lazy (dpbandits._lazy_accounting): events
without the accountants, and the same objects as a plain import once they are used."""

import json
import subprocess
import sys

import pytest

_CHILD = r"""
import json, sys
import dpbandits
import dp_accounting
out = {"lazy": type(dp_accounting).__name__,
       "pld_before": "dp_accounting.pld" in sys.modules,
       "stats_before": "scipy.stats" in sys.modules}
event = dp_accounting.GaussianDpEvent(2.0)
out["event_same"] = dp_accounting.dp_event.GaussianDpEvent is type(event)
from dp_accounting.pld import PLDAccountant   # a submodule: the normal import system
out["init_not_run"] = "_dpbandits_initialized" not in vars(dp_accounting)
relation = dp_accounting.NeighboringRelation  # not an event: the real __init__ runs
from dp_accounting import privacy_accountant
out["relation_same"] = relation is privacy_accountant.NeighboringRelation
out["calibrate"] = callable(dp_accounting.calibrate_dp_mechanism)
acc = PLDAccountant()
acc.compose(event)
out["epsilon"] = acc.get_epsilon(1e-5)
print(json.dumps(out))
"""


def _child(env_extra: dict) -> dict:
    import os

    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         check=True, env={**os.environ, **env_extra})
    return json.loads(out.stdout)


@pytest.mark.integration
def test_lazy_package_is_the_real_one_and_gives_the_same_numbers():
    lazy = _child({})
    plain = _child({"DPBANDITS_LAZY_ACCOUNTING": "0"})
    assert lazy["lazy"] == "LazyPackage" and plain["lazy"] == "module"
    assert not lazy["pld_before"] and not lazy["stats_before"]
    assert lazy["event_same"] and lazy["init_not_run"] and lazy["relation_same"]
    assert lazy["calibrate"]
    assert lazy["epsilon"] == plain["epsilon"]


def test_lazy_package_exposes_what_the_real_init_binds():
    import dp_accounting

    from dpbandits import _lazy_accounting

    names = _lazy_accounting._names_from_dp_event(dp_accounting.__spec__.origin)
    assert "GaussianDpEvent" in names and "DpEvent" in names
    for name in names:
        assert getattr(dp_accounting, name) is getattr(dp_accounting.dp_event, name)

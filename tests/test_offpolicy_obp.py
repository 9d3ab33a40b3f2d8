"""Our estimators against obp 0.5.7's on the Open Bandit Dataset sample (random/all): the
numbers in fixtures/obp_reference.json were produced by fixtures/obp_reference.py in obp's own
Python 3.10 environment (its docstring says how), so this test needs the sample but not obp."""

import json
from pathlib import Path

import numpy as np
import pytest
from _obd_sample import real_sample

from dpbandits import offpolicy as ope
from dpbandits.datasets import load_obd

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "obp_reference.json").read_text())


def target_policy(x, K):
    """softmax_k(4 x^T B), B[j, k] = cos(1 + 3 j + 7 k), as in the fixture script."""
    j, k = np.meshgrid(np.arange(x.shape[1]), np.arange(K), indexing="ij")
    z = 4.0 * x @ np.cos(1.0 + 3.0 * j + 7.0 * k)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def obd():
    log = load_obd(REFERENCE["campaign"], behavior_policy=REFERENCE["behavior_policy"],
                   path=real_sample())
    return log, target_policy(log.contexts, log.n_arms), ope.fit_reward_model(log, alpha=1.0)


def _ours(name, log, pi, q, **kw):
    lam = REFERENCE["lambda"]
    return {
        "ips": lambda: ope.ips(log, pi, **kw),
        "clipped_ips": lambda: ope.clipped_ips(log, pi, max_weight=lam, **kw),
        "snips": lambda: ope.snips(log, pi, **kw),
        "direct_method": lambda: ope.direct_method(log, pi, estimated_rewards=q, **kw),
        "doubly_robust": lambda: ope.doubly_robust(log, pi, estimated_rewards=q, **kw),
        "self_normalized_dr": lambda: ope.self_normalized_dr(log, pi, estimated_rewards=q, **kw),
        "switch_dr": lambda: ope.switch_dr(log, pi, estimated_rewards=q, threshold=lam, **kw),
    }[name]()


@pytest.mark.parametrize("name", sorted(REFERENCE["estimators"]))
def test_each_estimator_matches_obp_on_the_obd_sample(obd, name):
    log, pi, q = obd
    ref = REFERENCE["estimators"][name]
    w = pi[np.arange(log.n_rounds), log.actions] / log.propensities
    assert w.mean() == pytest.approx(REFERENCE["mean_weight"], rel=1e-12)
    est = _ours(name, log, pi, q)
    # same formula, same data, same ridge (ours in numpy, obp's side scikit-learn's Ridge)
    assert est.value == pytest.approx(ref["value"], rel=1e-9)
    # obp's bootstrap: 10,000 resamples of the per-round terms (a RandomState stream); ours
    # recomputes the estimator on 10,000 resamples of rounds from a Generator. The endpoints
    # of two independent percentile bootstraps differ by Monte Carlo error: at 10,000
    # resamples the 2.5% quantile's sd is about 0.05 se, so 0.25 se is 5 sd
    boot = _ours(name, log, pi, q, interval="bootstrap", rng=np.random.default_rng(0),
                 n_bootstrap=REFERENCE["n_bootstrap"])
    tol = 0.25 * boot.std_error
    assert abs(boot.ci_low - ref["ci_low"]) <= tol and abs(boot.ci_high - ref["ci_high"]) <= tol


def test_the_normal_interval_goes_below_zero_and_the_cut_one_does_not(obd):
    log, pi, q = obd
    item = np.bincount(log.actions[log.rewards > 0], minlength=log.n_arms).argmax()
    always = np.full(log.n_rounds, item)  # the most clicked item: weight 80 where matched
    raw = ope.ips(log, always)
    assert raw.value > 0.0 and raw.ci_low < 0.0
    cut = ope.ips(log, always, reward_range=(0, 1))
    assert cut.ci_low == 0.0 and cut.interval_clipped
    bern = ope.ips(log, pi, interval="bernstein", reward_range=(0, 1))
    assert bern.ci_low == 0.0 <= bern.value <= bern.ci_high  # valid and wide: weights up to 80

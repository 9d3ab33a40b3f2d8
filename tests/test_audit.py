"""The generic auditor (dpbandits.privacy.audit): bounds, validity, power, reproducibility."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy.accounting import gdp_mu
from dpbandits.privacy.audit import (
    AuditResult,
    AuditSpec,
    audit,
    clopper_pearson_lower,
    clopper_pearson_upper,
    eps_lower_bound,
    format_table,
    lower_bounds_from_counts,
    mu_lower_bound,
)

# ------------------------------------------------------------------ Clopper-Pearson


def test_clopper_pearson_closed_forms():
    # k = 0: upper = 1 - alpha^(1/n); k = n: lower = alpha^(1/n)
    assert clopper_pearson_upper(0, 10, 0.05)[()] == pytest.approx(1 - 0.05 ** 0.1)
    assert clopper_pearson_lower(10, 10, 0.05)[()] == pytest.approx(0.05 ** 0.1)
    assert clopper_pearson_upper(10, 10, 0.05)[()] == 1.0
    assert clopper_pearson_lower(0, 10, 0.05)[()] == 0.0
    # general k: the beta quantiles
    assert clopper_pearson_upper(3, 20, 0.01)[()] == pytest.approx(
        stats.beta.ppf(0.99, 4, 17))
    assert clopper_pearson_lower(3, 20, 0.01)[()] == pytest.approx(stats.beta.ppf(0.01, 3, 18))


def test_clopper_pearson_coverage():
    # one-sided coverage >= 1 - alpha for a binomial (exact check over all outcomes)
    n, p, alpha = 40, 0.3, 0.1
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, p)
    assert pmf[clopper_pearson_upper(k, n, alpha) >= p].sum() >= 1 - alpha
    assert pmf[clopper_pearson_lower(k, n, alpha) <= p].sum() >= 1 - alpha


def test_eps_and_mu_bounds_formulas():
    # ln((p1 - delta)/p0) vs ln((1 - delta - p0)/(1 - p1))
    assert eps_lower_bound(0.1, 0.5, 0.0)[()] == pytest.approx(math.log(5.0))
    assert eps_lower_bound(0.5, 0.9, 0.0)[()] == pytest.approx(math.log(0.5 / 0.1))
    assert eps_lower_bound(0.1, 0.5, 0.05)[()] == pytest.approx(math.log(4.5))
    assert eps_lower_bound(0.6, 0.5, 0.0)[()] == 0.0  # no evidence -> 0, never negative
    a = stats.norm.cdf(-1.0)
    assert mu_lower_bound(a, 1 - a)[()] == pytest.approx(2.0)
    e, m = lower_bounds_from_counts([10], 100, [90], 100, 0.0, 0.01, "less")
    assert e[0] == 0.0 and m[0] < 0  # wrong orientation gives no evidence


# ------------------------------------------------------------------ samplers


def laplace_sampler(scale, sens=1.0):
    def sampler(world, n, rng):
        return world * sens + rng.laplace(0.0, scale, n)
    return sampler


def gaussian_sampler(sigma, sens=1.0):
    def sampler(world, n, rng):
        return world * sens + rng.normal(0.0, sigma, n)
    return sampler


# ------------------------------------------------------------------ validity and power


def test_correct_laplace_is_consistent_over_seeds():
    for seed in range(20):
        spec = AuditSpec(epsilon=1.0, delta=0.0, runs=3000, seed=seed, confidence=0.99)
        res = audit(laplace_sampler(1.0), spec)
        assert res.eps_lb <= 1.0 and res.verdict == "consistent"


def test_lower_bound_is_close_to_the_truth_for_laplace():
    spec = AuditSpec(epsilon=1.0, delta=0.0, runs=200_000, seed=1, confidence=0.95)
    assert 0.9 < audit(laplace_sampler(1.0), spec).eps_lb <= 1.0


def test_gaussian_mu_route_is_tight_and_valid():
    mu = gdp_mu(1.0, 1e-5)
    spec = AuditSpec(epsilon=1.0, delta=1e-5, runs=50_000, mu_claim=mu, confidence=0.95)
    lbs = [audit(gaussian_sampler(1.0 / mu), replace(spec, seed=s)).mu_lb for s in range(5)]
    assert max(lbs) <= mu and min(lbs) > 0.8 * mu


def test_broken_mechanisms_are_detected():
    res = audit(laplace_sampler(0.1),
                AuditSpec(epsilon=1.0, delta=0.0, runs=2000, confidence=0.999))
    assert res.verdict == "violation" and res.eps_lb > 4
    mu = gdp_mu(1.0, 1e-5)
    res = audit(gaussian_sampler(0.3 / mu),
                AuditSpec(epsilon=1.0, delta=1e-5, runs=5000, mu_claim=mu, confidence=0.999))
    # the direct route alone need not refute (1, 1e-5) at mu ~ 0.9, the mu route does
    assert res.verdict == "violation" and res.mu_lb > mu


def test_orientation_less_and_both():
    def reversed_sampler(world, n, rng):  # D' shifts the statistic *down*
        return -laplace_sampler(0.2)(world, n, rng)

    spec = AuditSpec(epsilon=1.0, delta=0.0, runs=2000)
    greater, less, both = (audit(reversed_sampler, replace(spec, orientation=o))
                           for o in ("greater", "less", "both"))
    assert greater.verdict == "consistent"
    assert less.verdict == both.verdict == "violation"
    assert both.orientation == "less"


def test_bonferroni_mode_and_indicator_statistics():
    def sampler(world, n, rng):  # randomized response with epsilon = ln 9
        p = 0.9 if world else 0.1
        return (rng.random(n) < p).astype(float)

    spec = AuditSpec(epsilon=math.log(9), delta=0.0, runs=50_000, thresholds=[0.5],
                     selection="bonferroni", confidence=0.95)
    res = audit(sampler, spec)
    assert res.selection_runs == 0 and res.threshold == 0.5
    assert 0.9 * math.log(9) < res.eps_lb <= math.log(9)
    res = audit(sampler, replace(spec, epsilon=1.0, runs=5000))
    assert res.verdict == "violation"


# ------------------------------------------------------------------ randomness


def test_same_seed_same_result_and_separate_streams():
    spec = AuditSpec(epsilon=1.0, delta=0.0, runs=1000, seed=7)
    a = audit(laplace_sampler(1.0), spec)
    b = audit(laplace_sampler(1.0), spec)
    c = audit(laplace_sampler(1.0), replace(spec, seed=8))
    assert a.to_dict() | {"seconds": 0} == b.to_dict() | {"seconds": 0}
    assert (a.eps_lb, a.threshold) != (c.eps_lb, c.threshold)

    seen = []

    def recorder(world, n, rng):
        draws = rng.random(n)
        seen.append((world, n, draws[0]))
        return draws

    audit(recorder, AuditSpec(epsilon=1.0, delta=0.0, runs=400, selection_runs=100,
                              batch_size=150))
    firsts = [s[2] for s in seen]
    assert len(set(firsts)) == len(firsts)  # every batch of every phase: its own stream
    assert [s[1] for s in seen] == [100, 100, 150, 150, 100, 150, 150, 100]
    assert [s[0] for s in seen] == [0, 1, 0, 0, 0, 1, 1, 1]


# ------------------------------------------------------------------ the spec


@pytest.mark.parametrize(("field", "value", "error", "message"), [
    ("runs", 5, ValueError, "runs must be >= 10, got 5"),
    ("runs", 100.0, TypeError, "runs must be an integer, got 100.0"),
    ("epsilon", -1.0, ValueError, "epsilon must be >= 0.0, got -1.0"),
    ("delta", 1.0, ValueError, "delta must be < 1.0, got 1.0"),
    ("confidence", 1.0, ValueError, "confidence must be < 1.0, got 1.0"),
    ("seed", -1, ValueError, "seed must be >= 0, got -1"),
    ("mu_claim", 0.0, ValueError, "mu_claim must be > 0.0, got 0.0"),
    ("orientation", "up", ValueError, "orientation must be one of .*got 'up'"),
    ("selection", "best", ValueError, "selection must be one of .*got 'best'"),
    ("expected", "fine", ValueError, "expected must be one of .*got 'fine'"),
    ("selection_runs", 3, ValueError, "selection_runs must be >= 10, got 3"),
    ("batch_size", 0, ValueError, "batch_size must be >= 1, got 0"),
    ("n_candidates", 0, ValueError, "n_candidates must be >= 1, got 0"),
    ("thresholds", [0.5, math.nan], ValueError, r"thresholds\[1\] must not be NaN"),
    ("thresholds", [], ValueError, "thresholds must hold at least one value"),
    ("broken", "yes", TypeError, "broken must be a bool, got 'yes'"),
])
def test_spec_errors_name_the_field_the_value_and_what_is_allowed(field, value, error,
                                                                   message):
    fields = dict(epsilon=1.0, delta=0.0, runs=100) | {field: value}
    with pytest.raises(error, match=message):
        AuditSpec(**fields)


def test_spec_is_frozen_and_replace_revalidates():
    spec = AuditSpec(epsilon=1.0, delta=0.0, runs=100, thresholds=[1, 0.5], extra={"a": 1})
    assert spec.thresholds == (1.0, 0.5) and spec.n_selection == 500
    assert replace(spec, runs=4000).n_selection == 1000  # derived from the new runs
    assert replace(spec, selection="bonferroni").n_selection == 0
    with pytest.raises(AttributeError):
        spec.runs = 10  # type: ignore[misc]
    with pytest.raises(ValueError, match="runs"):
        replace(spec, runs=1)
    with pytest.raises(ValueError, match="thresholds must be given"):
        AuditSpec(epsilon=1.0, delta=0.0, runs=100, selection="bonferroni")


# ------------------------------------------------------------------ errors and reporting


def test_validation_errors():
    ok = laplace_sampler(1.0)
    spec = AuditSpec(epsilon=1.0, delta=0.0, runs=100)
    with pytest.raises(TypeError, match="sampler"):
        audit(None, spec)
    with pytest.raises(TypeError, match="spec must be an AuditSpec"):
        audit(ok, {"epsilon": 1.0, "delta": 0.0, "runs": 100})
    with pytest.raises(ValueError, match="shape"):
        audit(lambda w, n, rng: np.zeros(n + 1), spec)
    with pytest.raises(ValueError, match="non-finite"):
        audit(lambda w, n, rng: np.full(n, np.nan), spec)


def test_result_dict_json_and_table():
    mu = gdp_mu(1.0, 1e-5)
    extra = {"arr": np.arange(2), "x": np.float64(1.5)}
    res = audit(gaussian_sampler(1.0 / mu),
                AuditSpec(epsilon=1.0, delta=1e-5, runs=1000, mu_claim=mu, component="toy",
                          extra=extra))
    d = res.to_dict()
    for key in ("component", "epsilon", "delta", "eps_lb", "confidence", "runs", "verdict",
                "mu_claim", "mu_lb", "eps_lb_gdp", "expected", "ok"):
        assert key in d
    assert d["extra"] == {"arr": [0, 1], "x": 1.5}
    json.dumps(d)
    assert isinstance(res, AuditResult) and res.ok and res.margin < 1
    bad = audit(laplace_sampler(0.1),
                AuditSpec(epsilon=1.0, delta=0.0, runs=500, component="bad"))
    lines = format_table([res, bad]).splitlines()
    assert "eps_lb" in lines[0] and "toy" in lines[2] and "MISMATCH" in lines[3]
    assert len({len(line) for line in lines}) == 1  # aligned columns

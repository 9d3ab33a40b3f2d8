"""Issue 34 item 7: plans computed in floating point at the ends of the accepted parameter
ranges, and aborts that depend on one user's finite record."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.agents.dp_ucb import DPUCB
from dpbandits.agents.fliphat import FLIPHAT
from dpbandits.bo.dp_gibo import DPGIBO
from dpbandits.bo.kernels import Polynomial
from dpbandits.bo.objectives import CallableObjective
from dpbandits.optim.streaming.dp_pofw import DPPOFW
from dpbandits.optim.streaming.dp_tofw import DPTOFW
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.plan import NoisePlan


def _certified():
    return PrivacyGuarantee(epsilon=1.0, delta=1e-3, notion="DP", neighbouring="replace-one",
                            basis="test")


@pytest.mark.parametrize("sens", [0.0, 5e-324, 1e-310, float("inf")])
def test_a_plan_with_a_degenerate_sensitivity_is_never_certified(sens):
    # the item-7 plans had sensitivity 0 (DP-POFW at x_bound = 1.55e-162) or a subnormal one
    # (DP-UCB's L~^2 at bounds 3e-162) while their claim stayed certified
    plan = NoisePlan("theorem", {"sigma": 1.0}, _certified(), None, {"increment": sens})
    assert not plan.guarantee.certified
    assert "sensitivity 'increment'" in plan.guarantee.caveat


def test_a_plan_with_a_subnormal_noise_scale_is_never_certified():
    plan = NoisePlan("theorem", {"sigma": 5.4e-323}, _certified(), None, {"node": 1.0})
    assert not plan.guarantee.certified


def test_an_ordinary_plan_stays_certified():
    plan = NoisePlan("theorem", {"sigma": 1.0, "share": 0.0}, _certified(), None,
                     {"node": 1e-150})
    assert plan.guarantee.certified


def test_dp_ucb_refuses_bounds_whose_node_noise_is_subnormal():
    # 3e-162: L~^2 = 1.8e-323 and the accountant's node noise 5.61e-323 is drawn as 5.4e-323
    for name in ("context_bound", "reward_bound"):
        kw = {"context_bound": 1.0, "reward_bound": 1.0, name: 3e-162}
        with pytest.raises(ValueError, match=rf"{name} must be in \[.*got 3e-162"):
            DPUCB(n_arms=2, dim=2, horizon=16, epsilon=1.0, delta=1e-3,
                  calibration="accountant", **kw)
    with pytest.raises(ValueError, match="context_bound must be in"):
        DPUCB(n_arms=2, dim=2, horizon=16, context_bound=1e160)


@pytest.mark.parametrize("cls, extra", [(DPPOFW, {}), (DPTOFW, {"p": 1.5})])
@pytest.mark.parametrize("x_bound, radius, bad", [(1e-200, 1e200, "radius"),
                                                  (1.55e-162, 1.0, "x_bound"),
                                                  (1e-200, 1.0, "x_bound")])
def test_frank_wolfe_refuses_bounds_whose_sensitivity_underflows(cls, extra, x_bound, radius,
                                                                 bad):
    # smoothness = x_bound**2 underflows to 0 and drops a term of the increment's sensitivity
    # (1.5x over the declared one); at 1.55e-162 the sensitivity and the noise are exactly 0
    with pytest.raises(ValueError, match=rf"{bad} must be in \["):
        cls("squared", dim=3, radius=radius, horizon=20, epsilon=1.0, delta=1e-3,
            x_bound=x_bound, **extra)


def test_fliphat_refuses_bounds_whose_products_overflow():
    with pytest.raises(ValueError, match="context_bound must be in"):
        FLIPHAT(n_arms=2, dim=4, horizon=16, context_bound=1e160)
    with pytest.raises(ValueError, match="reward_bound must be in"):
        FLIPHAT(n_arms=2, dim=4, horizon=16, reward_bound=1e160)


def _gibo_run(big: float):
    def losses(theta):
        out = np.array([1.0, 2.0, 3.0]) * float(np.sum(theta**2) + 1.0)
        out[0] = big * (0.5 + 0.5 * np.tanh(10.0 * float(theta[0])))
        return out

    obj = CallableObjective(losses, dim=2, n_individuals=3)
    alg = DPGIBO(mu=1.0, n_iters=3, clip_bound=1.0, kernel=Polynomial(2), batch_size=3)
    return alg.fit(obj, np.random.default_rng(0))


def test_dp_gibo_runs_the_same_on_one_users_huge_finite_loss():
    # user 0's loss near 1.7e308 (4.25e307 in the review's case) overflowed its per-user
    # gradient before the clip and clip_to_norm raised, while the neighbouring data set
    # (losses of order 1) ran to the end
    ordinary = _gibo_run(1.0)
    huge = _gibo_run(1.7e308)
    assert np.all(ordinary.extra["batch_sizes"] == huge.extra["batch_sizes"])
    assert np.all(np.isfinite(huge.history))
    # the huge user's gradient is clipped in every iteration
    assert np.all(huge.extra["n_clipped_per_iter"] >= 1)


def test_unscale_rows_keeps_the_direction_of_an_overflowing_row():
    from fractions import Fraction

    from dpbandits.bo._common import _HUGE, unscale_rows
    g = np.array([[0.5, -0.375], [1.0, 2.0]])
    out = unscale_rows(g, np.array([1e308, 1.0]))
    assert np.all(out[1] == g[1])  # ordinary rows bit for bit
    # the overflowing row: its direction, exactly, at norm >= _HUGE (clipped by any bound)
    assert Fraction(out[0, 0]) * Fraction(g[0, 1]) == Fraction(out[0, 1]) * Fraction(g[0, 0])
    assert max(abs(Fraction(v)) for v in out[0]) == Fraction(_HUGE)


def _exact_lq(row, q):
    from fractions import Fraction
    if q == 2.0:
        return sum(Fraction(v) ** 2 for v in row), 2
    return sum(abs(Fraction(v)) for v in row), 1


@pytest.mark.parametrize("q", [2.0, 1.0])
def test_noisy_sfw_difference_clip_holds_exactly(q):
    # issue 34 item 8: the hand-written clip diff * (bound / ||diff||) was up to 3.4e-16 over
    from fractions import Fraction

    from dpbandits.optim.batch.noisy_sfw import clip_differences
    rng = np.random.default_rng(3)
    scales = 10.0 ** rng.uniform(-300, 300, size=(4, 64, 1))
    diff = rng.standard_normal((4, 64, 5)) * scales * 10.0 ** rng.uniform(-20, 20, (4, 64, 5))
    bound = np.array([1e-300, 0.3, 1.0, 7e250])
    out, n = clip_differences(diff, q, bound)
    assert n.sum() > 0
    for r in range(4):
        for row in out[r]:
            s, power = _exact_lq(row, q)
            assert s <= Fraction(bound[r]) ** power


@pytest.mark.parametrize("name", ["context_bound", "reward_bound", "radius"])
def test_dp_hdb_refuses_extreme_bounds_under_its_own_names(name):
    """DP-HDB's arms (DP-POFW) refuse them as x_bound / y_bound; DP-HDB names its own."""
    from dpbandits.agents import make_agent

    for value in (5e-324, 3e-162, 1e160):
        with pytest.raises(ValueError, match=rf"^{name} must be in \[1e-75, 1e\+75\]"):
            make_agent("dp-hdb", n_arms=2, dim=4, horizon=200, **{name: value})


@pytest.mark.parametrize("agent", ["dp-moment-ls", "dp-screened-ls", "dp-budget-ls"])
@pytest.mark.parametrize("name", ["clip_screen", "clip_fit"])
def test_screened_agents_refuse_clips_whose_scale_underflows(agent, name):
    """The fuzzer found non-finite contributions at clip_screen / clip_fit = 5e-324."""
    from dpbandits.agents import make_agent

    with pytest.raises(ValueError, match=rf"^{name} must be"):
        make_agent(agent, n_arms=2, dim=5, horizon=200, **{name: 5e-324})


@pytest.mark.parametrize("agent", ["adac-oful", "ldp-linucb"])
@pytest.mark.parametrize("name", ["context_bound", "reward_bound"])
def test_private_ridge_agents_refuse_bounds_whose_products_are_subnormal(agent, name):
    # reward_bound = 5e-324: y u rounded up to the smallest subnormal (2x for u_j = 1/sqrt 2)
    # and the whitened target block moved 1.26x (ldp-linucb) / 1.09x (adac-oful) the declared
    # sensitivity; the fuzzer's corpus has the case (tests/test_fuzzing.py)
    from dpbandits.agents import agent_class

    cls = agent_class(agent)
    with pytest.raises(ValueError, match=rf"{name} must be in \[.*got 5e-324"):
        cls(n_arms=2, dim=5, horizon=50, **{name: 5e-324})
    # the non-private twin has no sensitivity to protect: any positive bound
    assert cls(n_arms=2, dim=5, horizon=50, epsilon=float("inf"), **{name: 5e-324})


def test_private_estimator_refuses_parameters_whose_sensitivity_underflows():
    from dpbandits.offpolicy.private import PrivateEstimator

    ok = dict(epsilon=1.0, delta=1e-5, max_weight=10.0)
    with pytest.raises(ValueError, match=r"max_weight must be in \[.*got 5e-324"):
        PrivateEstimator("ips", **{**ok, "max_weight": 5e-324})
    with pytest.raises(ValueError, match=r"reward_range must have width at least"):
        PrivateEstimator("ips", **ok, reward_range=(0.0, 5e-324))
    with pytest.raises(ValueError, match=r"reward_range must have .*endpoints within"):
        PrivateEstimator("ips", **ok, reward_range=(0.0, 1e300))
    with pytest.raises(ValueError, match=r"context_bound must be in \[.*got 5e-324"):
        PrivateEstimator("dr", **ok, context_bound=5e-324)

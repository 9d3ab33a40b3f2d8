"""The noise of the local and central ridge agents' releases has the spread their plans
declare (issue 34 item 5; the method and the chi-square tolerance: tests/test_noise_spread.py):
on zero contexts and rewards every message or release is its noise alone."""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpbandits.agents.ldp_linucb import UNIT_SENSITIVITY, LDPLinUCB
from dpbandits.privacy.accounting import epsilon_of, gaussian_event

P_VALUE = 1e-9
MIN_N = 20_000


def _assert_chi_square(name: str, standardized: np.ndarray) -> None:
    n = standardized.size
    assert n >= MIN_N, f"{name}: only {n} coordinates"
    stat = float(np.sum(standardized ** 2))
    lo, hi = stats.chi2.ppf(P_VALUE / 2, n), stats.chi2.isf(P_VALUE / 2, n)
    assert lo <= stat <= hi, (f"{name}: sum z^2/sigma^2 = {stat:.1f} over {n} coordinates "
                              f"(ratio {stat / n:.3f}), outside [{lo:.1f}, {hi:.1f}]")


def test_ldp_linucb_messages_draw_the_plans_scales():
    # 2,000 users, K = 2, d = 5: 2,000 x 2 x 15 packed Gram entries, 2,000 x 2 x 5 targets
    R, K, d = 2000, 2, 5
    agent = LDPLinUCB(n_arms=K, dim=d, horizon=10, epsilon=1.0, delta=1e-5, reward_bound=0.5)
    agent.reset(R, np.random.default_rng(20261129))
    gram, target = agent.message(np.zeros((R, d)), np.zeros(R, dtype=np.int64), np.zeros(R))
    scales = agent.plan.scales
    _assert_chi_square("ldp-linucb gram", gram / scales["gram"])
    _assert_chi_square("ldp-linucb target", target / scales["target"])


def test_ldp_linucb_plan_scales_carry_the_claim():
    # recomputed here, not read from the plan: sigma_G = k * UNIT_SENSITIVITY and sigma_b = B
    # sigma_G, with k the smallest multiplier whose Gaussian event the accountant certifies
    agent = LDPLinUCB(n_arms=2, dim=5, horizon=10, epsilon=1.0, delta=1e-5, reward_bound=0.5)
    s = agent.plan.scales
    k = s["gram"] / UNIT_SENSITIVITY
    assert s["target"] == 0.5 * s["gram"]
    assert s["multiplier"] == k
    # the claim holds at k and fails at 0.99 k (the plan is not needlessly loose either)
    assert epsilon_of(gaussian_event(k), 1e-5) <= 1.0 * (1 + 1e-9)
    assert epsilon_of(gaussian_event(0.99 * k), 1e-5) > 1.0

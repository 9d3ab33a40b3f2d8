import math

import numpy as np
import pytest

from dpbandits._validation import as_rng, check_array, check_delta, check_epsilon, check_int
from dpbandits.privacy.guarantee import PrivacyGuarantee


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan")])
def test_guarantee_rejects_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyGuarantee(epsilon=eps, delta=1e-5)


@pytest.mark.parametrize("delta", [-0.1, 1.0, 2.0])
def test_guarantee_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        PrivacyGuarantee(epsilon=1.0, delta=delta)


def test_guarantee_notion_and_caveat_checks():
    with pytest.raises(ValueError, match="notion"):
        PrivacyGuarantee(epsilon=1.0, delta=0.0, notion="bogus")
    with pytest.raises(ValueError, match="caveat"):
        PrivacyGuarantee(epsilon=1.0, delta=0.0, certified=False)
    with pytest.raises(ValueError, match="epsilon=inf"):
        PrivacyGuarantee(epsilon=1.0, delta=0.0, notion="none")


def test_guarantee_non_private_and_str():
    g = PrivacyGuarantee.non_private()
    assert math.isinf(g.epsilon) and not g.is_private
    p = PrivacyGuarantee(epsilon=1.0, delta=1e-4, basis="Theorem 3.4")
    assert p.is_private and "(1, 0.0001)-DP" in str(p)
    bad = PrivacyGuarantee(epsilon=1.0, delta=1e-4, certified=False, caveat="claim fails")
    assert not bad.is_private and "NOT CERTIFIED" in str(bad)
    with pytest.raises(AttributeError):
        p.epsilon = 2.0  # frozen


def test_validation_helpers():
    assert check_epsilon(math.inf) == math.inf
    with pytest.raises(TypeError, match="k"):
        check_int("k", 1.5)
    with pytest.raises(TypeError):
        check_int("k", True)
    with pytest.raises(ValueError, match="delta"):
        check_delta(1.0)
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 3\)"):
        check_array("x", np.zeros((2, 2)), shape=(None, 3))
    with pytest.raises(ValueError, match="finite"):
        check_array("x", [1.0, np.nan])
    a = as_rng(3).standard_normal(4)
    b = as_rng(np.random.SeedSequence(3)).standard_normal(4)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="seed"):
        as_rng(-1)

"""Data enters as float64, converted exactly or refused (issue 34, item 8).

Before: the unvalidated cores computed in float32 (a clipped row 2.25e-7 over its bound in
exact arithmetic) and returned an int64 row holding ``-2^63`` unchanged (``abs`` wraps), and
the entry points converted integers above ``2^53`` (rounded), complex (imaginary part
dropped with a warning) and object arrays (parsed) silently.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpbandits._validation import as_float64, check_array
from dpbandits.agents import make_agent
from dpbandits.envs import LoggedBandit
from dpbandits.geometry import clip_rows, clip_to_norm, normalize_rows
from dpbandits.losses import SquaredLoss
from dpbandits.optim import OPTIMIZERS
from dpbandits.testing import instance_for_checks

#: a float32 row that float32 clipping left 2.25e-7 over the unit l_2 bound (exact arithmetic)
ROW32 = np.array([[5.884108543395996, 4.853869438171387, -1.240478277206421,
                   -2.3712453842163086, -19.219758987426758]], dtype=np.float32)
INT_MIN = np.array([[-2**63, 0]], dtype=np.int64)
BAD = {
    "complex": (np.array([[1 + 2j, 0.0]]), TypeError, "dtype complex128"),
    "object": (np.array([[1.0, "2"]], dtype=object), TypeError, "dtype object"),
    "inexact int": (np.array([[2**53 + 1, 0]], dtype=np.int64), ValueError,
                    r"\[0, 0\] = 9007199254740993 \(dtype int64\) has no exact float64"),
}


def exact_sq_norm(row) -> Fraction:
    return sum((Fraction(float(v)) ** 2 for v in row), Fraction(0))


def test_as_float64_converts_exactly_or_refuses():
    assert as_float64("x", INT_MIN)[0, 0] == -(2.0**63)  # exact
    assert as_float64("x", np.array([2**60, -(2**62)], dtype=np.int64)).tolist() == [
        2.0**60, -(2.0**62)]
    assert as_float64("x", np.array([True, False])).tolist() == [1.0, 0.0]
    assert as_float64("x", ROW32).tolist() == ROW32.tolist()  # float32 -> float64: exact
    x = np.ones(3)
    assert as_float64("x", x) is x  # float64 is not copied
    for value, err, msg in BAD.values():
        with pytest.raises(err, match=msg) as info:
            as_float64("contexts", value)
        assert "contexts" in str(info.value) and "allowed" in str(info.value)
    with pytest.raises(ValueError, match="18446744073709551615"):
        as_float64("x", np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(TypeError, match="dtype <U1"):
        check_array("y", np.array(["a"]))


@pytest.mark.parametrize("core", [clip_rows, normalize_rows])
def test_cores_keep_the_bound_on_float32_and_int64(core):
    out, _ = core(ROW32, 2.0, 1.0)
    assert out.dtype == np.float64 and exact_sq_norm(out[0]) <= 1
    out, _ = core(INT_MIN, 2.0, 1.0)
    # -2^63 clipped / normalised onto the unit sphere (from inside by a few ulps)
    assert out[0, 1] == 0.0 and -1.0 <= out[0, 0] < -1.0 + 1e-12


@pytest.mark.parametrize("kind", sorted(BAD))
def test_cores_and_validated_clip_refuse_what_has_no_exact_float(kind):
    value, err, msg = BAD[kind]
    for call in (lambda: clip_rows(value, 2.0, 1.0), lambda: normalize_rows(value, 2.0, 1.0),
                 lambda: clip_to_norm(value, 2.0, 1.0)):
        with pytest.raises(err, match=msg):
            call()


@pytest.mark.parametrize("kind", sorted(BAD))
def test_agent_entry_points_refuse(kind):
    value, err, msg = BAD[kind]
    agent = make_agent("dp-ucb", n_arms=2, dim=2, horizon=16, epsilon=1.0, delta=1e-3)
    agent.reset(1, np.random.default_rng(0))
    with pytest.raises(err, match=msg):
        agent.act(value)
    with pytest.raises(err, match=msg):
        agent.update(value, np.array([0]), np.array([0.5]))
    with pytest.raises(err, match=msg.replace("[0, 0]", "[0]").replace(r"\[0, 0\]", r"\[0\]")):
        agent.update(np.zeros((1, 2)), np.array([0]), value[:, 0])
    with pytest.raises(err, match=msg):
        agent.fit(value, np.array([0]), np.array([0.5]))


def test_agent_accepts_exact_integer_and_bool_data():
    agent = make_agent("dp-ucb", n_arms=2, dim=2, horizon=16, epsilon=1.0, delta=1e-3)
    agent.fit(np.array([[1, 0], [0, 1]], dtype=np.int64), np.array([0, 1]),
              np.array([True, False]))


@pytest.mark.parametrize("kind", sorted(BAD))
def test_optimizer_fit_and_log_refuse(kind):
    value, err, msg = BAD[kind]
    opt = instance_for_checks(OPTIMIZERS["dp-gd"])
    X = np.zeros((4, 2), dtype=value.dtype)
    X[0, 0] = value[0, 0]
    with pytest.raises(err, match=msg):
        opt.fit(SquaredLoss(), X, np.zeros(4), np.random.default_rng(0))
    with pytest.raises(err, match=msg.replace("[0, 0]", "[0]").replace(r"\[0, 0\]", r"\[0\]")):
        opt.fit(SquaredLoss(), np.zeros((4, 2)), X[:, 0], np.random.default_rng(0))
    ok = dict(actions=np.array([0, 1]), rewards=np.ones(2), propensities=np.full(2, 0.5),
              n_arms=2)
    if kind == "inexact int":
        with pytest.raises(ValueError, match="contexts.*no exact float64"):
            LoggedBandit(np.vstack([value, value]), **ok)
        with pytest.raises(ValueError, match="rewards.*no exact float64"):
            LoggedBandit(np.zeros((2, 2)), **{**ok, "rewards": value[0]})


@pytest.mark.parametrize("kind", sorted(BAD))
def test_reward_model_refuses(kind):
    from dpbandits.offpolicy.reward_model import RidgeRegressor

    value, err, msg = BAD[kind]
    X = np.zeros((3, 2), dtype=value.dtype)
    X[0, 0] = value[0, 0]
    with pytest.raises(err, match=msg.replace("contexts", "X")):
        RidgeRegressor().fit(X, np.zeros(3))


def test_a_masked_array_is_refused_not_unmasked():
    from dpbandits._validation import as_float64

    masked = np.ma.masked_array([1.0, 1e300], mask=[False, True])
    with pytest.raises(TypeError, match="contexts must be a plain array, got a masked array"):
        as_float64("contexts", masked)

"""The logged-data format: LoggedBandit's checks, the file loader's errors (each names the
column, row, value and what is allowed), round trips, and the synthetic log's law."""

import numpy as np
import pytest

from dpbandits.datasets import LoggedBandit, load_log, log_frame, read_logged, write_logged
from dpbandits.envs import synthetic_log


@pytest.fixture(scope="module")
def small():
    return synthetic_log(200, n_arms=3, dim=4, seed=1)[0]


def _csv(tmp_path, frame, name="log.csv"):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


# -- round trips ---------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_write_then_read_gives_the_same_log(tmp_path, small, suffix):
    back = read_logged(write_logged(small, tmp_path / f"log{suffix}"))
    for key in ("contexts", "actions", "rewards", "propensities"):
        np.testing.assert_array_equal(getattr(back, key), getattr(small, key))
    assert back.n_arms == small.n_arms and back.is_uniform


def test_parquet_keeps_the_declared_arm_set_csv_infers_it(tmp_path):
    log, _ = synthetic_log(50, n_arms=3, dim=2, seed=0)
    only_01 = log.subset(log.actions < 2)  # arm 2 never logged
    assert read_logged(write_logged(only_01, tmp_path / "a.parquet")).n_arms == 3
    assert read_logged(write_logged(only_01, tmp_path / "a.csv")).n_arms == 2
    assert read_logged(tmp_path / "a.csv", n_arms=3).n_arms == 3


def test_custom_column_names_and_context_columns(tmp_path, small):
    frame = log_frame(small).rename(columns={"action": "arm", "reward": "click",
                                             "propensity": "p"})
    frame["user_id"] = np.arange(len(frame))
    path = _csv(tmp_path, frame)
    log = read_logged(path, action="arm", reward="click", propensity="p",
                      context_columns=["x0", "x1", "x2", "x3"])
    np.testing.assert_array_equal(log.contexts, small.contexts)
    assert read_logged(path, action="arm", reward="click", propensity="p").dim == 5


def test_load_log_accepts_a_log_or_a_path(tmp_path, small):
    assert load_log(small) is small
    assert load_log(str(write_logged(small, tmp_path / "l.parquet"))).n_rounds == 200


# -- errors name the column, the row, the value and what is allowed ------------------------------
def _broken(small, column, row, value):
    frame = log_frame(small)
    frame[column] = frame[column].astype(np.float64)
    frame.loc[row, column] = value
    return frame


@pytest.mark.parametrize("column,row,value,allowed", [
    ("x2", 7, np.nan, "contexts must be finite"),
    ("x0", 3, np.inf, "contexts must be finite"),
    ("reward", 11, np.nan, "rewards must be finite"),
    ("reward", 0, -np.inf, "rewards must be finite"),
    ("propensity", 5, 0.0, "must lie in (0, 1]"),
    ("propensity", 6, 1.5, "must lie in (0, 1]"),
    ("propensity", 9, np.nan, "must lie in (0, 1]"),
    ("propensity", 2, -0.2, "must lie in (0, 1]"),
    ("action", 4, 3, "declared set {0, ..., 2}"),
    ("action", 8, -1, "declared set {0, ..., 2}"),
    ("action", 1, 1.5, "integer arm indices"),
    ("action", 12, np.nan, "arm indices"),
])
def test_each_malformed_value_is_refused_with_its_column_row_and_rule(tmp_path, small, column,
                                                                      row, value, allowed):
    path = _csv(tmp_path, _broken(small, column, row, value))
    with pytest.raises(ValueError) as err:
        read_logged(path, n_arms=3)
    text = str(err.value)
    assert f"column '{column}' row {row}" in text and allowed in text and "log.csv" in text


@pytest.mark.parametrize("missing", ["action", "reward", "propensity"])
def test_a_missing_column_is_named(tmp_path, small, missing):
    path = _csv(tmp_path, log_frame(small).drop(columns=missing))
    with pytest.raises(ValueError, match=f"missing column '{missing}'.*{missing}="):
        read_logged(path)


def test_other_file_errors(tmp_path, small):
    frame = log_frame(small)
    frame["city"] = "paris"
    with pytest.raises(ValueError, match="column 'city' must be numeric"):
        read_logged(_csv(tmp_path, frame, "c.csv"))
    with pytest.raises(ValueError, match=r"context_columns \['z'\]"):
        read_logged(_csv(tmp_path, log_frame(small)), context_columns=["z"])
    with pytest.raises(ValueError, match="no context columns"):
        read_logged(_csv(tmp_path, log_frame(small)[["action", "reward", "propensity"]]))
    with pytest.raises(ValueError, match=r"must end in .parquet, .pq or .csv.*'\.txt'"):
        read_logged(tmp_path / "log.txt")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_logged(tmp_path / "nope.parquet")
    with pytest.raises(ValueError, match="n_arms must be >= 2"):
        read_logged(_csv(tmp_path, log_frame(small)), n_arms=1)


def test_array_level_errors_name_the_field():
    x = np.zeros((4, 2))
    ok = dict(actions=np.array([0, 1, 0, 1]), rewards=np.ones(4), propensities=np.full(4, 0.5),
              n_arms=2)
    with pytest.raises(ValueError, match=r"contexts\[:, 1\] row 2 is nan"):
        LoggedBandit(np.where(np.arange(2) == 1, np.array([[0], [0], [np.nan], [0]]), 0), **ok)
    with pytest.raises(ValueError, match=r"rewards must have shape \(4,\)"):
        LoggedBandit(x, **{**ok, "rewards": np.ones(3)})
    with pytest.raises(ValueError, match="actions row 3 is 2; actions must be arms"):
        LoggedBandit(x, **{**ok, "actions": np.array([0, 1, 0, 2])})
    with pytest.raises(ValueError, match="2-d array"):
        LoggedBandit(np.zeros(4), **ok)


# -- the log object --------------------------------------------------------------------------------
def test_log_is_read_only_and_subsets_keep_the_arm_set(small):
    with pytest.raises(ValueError):
        small.rewards[0] = 2.0
    part = small.subset(slice(0, 50))
    assert part.n_rounds == 50 and part.n_arms == 3
    np.testing.assert_array_equal(part.actions, small.actions[:50])
    assert small.mean_reward == pytest.approx(small.rewards.mean())


def test_uniform_detection():
    log, _ = synthetic_log(500, n_arms=4, seed=0)
    assert log.is_uniform and np.all(log.propensities == 0.25)
    soft, _ = synthetic_log(500, n_arms=4, seed=0, logging="softmax")
    assert not soft.is_uniform
    near = LoggedBandit(log.contexts, log.actions, log.rewards, np.full(500, 0.2500001), 4)
    assert near.is_uniform  # 1/K written with 7 digits still counts as uniform
    off = LoggedBandit(log.contexts, log.actions, log.rewards, np.full(500, 0.251), 4)
    assert not off.is_uniform


# -- the synthetic log ---------------------------------------------------------------------------
def test_synthetic_log_is_reproducible_and_its_law_is_the_stated_one():
    a, mu = synthetic_log(20_000, n_arms=3, dim=5, seed=3, logging="softmax", temperature=0.25)
    b, mu_b = synthetic_log(20_000, n_arms=3, dim=5, seed=3, logging="softmax",
                            temperature=0.25)
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(mu, mu_b)
    assert not np.array_equal(a.actions, synthetic_log(20_000, seed=4)[0].actions)
    np.testing.assert_allclose(np.linalg.norm(a.contexts, axis=1), 1.0)
    assert mu.min() >= 0.1 and mu.max() <= 0.9
    # propensity = the softmax probability of the logged arm
    z = np.exp((mu - mu.max(axis=1, keepdims=True)) / 0.25)
    probs = z / z.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(a.propensities, probs[np.arange(20_000), a.actions])
    # arm frequencies match the mean probabilities; rewards match the means of the arms played
    n = 20_000
    for k in range(3):
        p = probs[:, k].mean()
        assert abs((a.actions == k).mean() - p) <= 4 * np.sqrt(p * (1 - p) / n)
    m = mu[np.arange(n), a.actions]
    assert abs(a.rewards.mean() - m.mean()) <= 4 * np.sqrt((m * (1 - m)).sum()) / n

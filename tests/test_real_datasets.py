"""The classification bandit on the real datasets (digits, wine, breast cancer via the
``datasets`` extra; iris embedded): sizes, the documented feature scaling, rewards that are the
row's label, and a clear error when scikit-learn is missing."""

import sys

import gymnasium
import numpy as np
import pytest

import dpbandits.envs  # noqa: F401  (registers the ids)
from dpbandits.envs import NEEDS_EXTRA, ClassificationBanditEnv, _datasets

# (id, dataset, n, d, K, standardized by default)
SPECS = [("dpbandits/DigitsBandit-v0", "digits", 1797, 64, 10, False),
         ("dpbandits/WineBandit-v0", "wine", 178, 13, 3, True),
         ("dpbandits/BreastCancerBandit-v0", "breast_cancer", 569, 30, 2, True)]


def test_every_sklearn_dataset_has_a_registered_id_needing_the_extra():
    assert {s[1] for s in SPECS} == set(_datasets.DATASETS) - {"iris"}
    assert NEEDS_EXTRA == {s[0]: "datasets" for s in SPECS}


@pytest.mark.parametrize("env_id, name, n, d, K, standardized", SPECS)
def test_dataset_env_sizes_scaling_and_rewards(env_id, name, n, d, K, standardized):
    sk = pytest.importorskip("sklearn.datasets", reason="needs the datasets extra")
    X, y = getattr(sk, f"load_{name}")(return_X_y=True)
    assert X.shape == (n, d) and len(np.unique(y)) == K
    assert _datasets.SHAPES[name] == (n, d, K)  # what `dpbandits list` prints without loading
    env = gymnasium.make(env_id).unwrapped
    cfg = env.config
    assert (env.n_arms, env.dim, env.horizon, cfg.standardize) == (K, d, n, standardized)
    # the documented pipeline, recomputed: standardize (or not), then unit l_inf rows
    Z = X.astype(float)
    if standardized:
        sd = Z.std(axis=0)
        Z = (Z - Z.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    Z /= np.abs(Z).max(axis=1, keepdims=True)
    np.testing.assert_allclose(cfg.X, Z, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.abs(cfg.X).max(axis=1), 1.0)  # the bound, attained
    assert np.array_equal(cfg.labels, y)
    # every round pays 1 exactly for the played row's label
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    row_of = {row.tobytes(): i for i, row in enumerate(cfg.X)}
    for _ in range(min(n, 200)):
        label = y[row_of[obs.tobytes()]]  # identical rows carry one label in these data
        arm = int(rng.integers(K))
        obs, reward, _, _, info = env.step(arm)
        assert info["optimal_arm"] == label and reward == float(arm == label)


def test_iris_shape_is_the_embedded_data():
    X, y = _datasets.load_dataset("iris")
    assert _datasets.SHAPES["iris"] == (*X.shape, len(np.unique(y)))


def test_identical_rows_share_their_label():
    """What the previous test's row lookup relies on."""
    pytest.importorskip("sklearn.datasets", reason="needs the datasets extra")
    for _, name, *_ in SPECS:
        X, y = _datasets.load_dataset(name)
        _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
        assert np.array_equal(y, y[first][inverse.ravel()]), name


def test_standardize_default_is_the_datasets_and_can_be_overridden():
    pytest.importorskip("sklearn.datasets", reason="needs the datasets extra")
    raw = ClassificationBanditEnv("digits").config
    std = ClassificationBanditEnv("digits", standardize=True).config
    assert not raw.standardize and std.standardize
    X, _ = _datasets.load_dataset("digits")
    np.testing.assert_allclose(raw.X, X / X.max(axis=1, keepdims=True))
    assert not np.allclose(raw.X, std.X)
    assert ClassificationBanditEnv(X=np.array([[1.0, 2.0], [3.0, 5.0]]),
                                   y=[0, 1]).config.standardize
    assert ClassificationBanditEnv().config.standardize  # iris, unchanged


def test_loaded_arrays_are_read_only_and_the_env_copies_them():
    X, y = _datasets.load_dataset("iris")
    assert not X.flags.writeable and not y.flags.writeable
    env = ClassificationBanditEnv("iris", standardize=False, normalization=None)
    assert env.config.X.flags.writeable and np.array_equal(env.config.X, X)


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now fails
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    monkeypatch.setattr(_datasets, "_load", _datasets._load.__wrapped__)  # no cache
    for name in ("digits", "wine", "breast_cancer"):
        with pytest.raises(ImportError, match=r"dpbandits\[datasets\]") as info:
            ClassificationBanditEnv(name)
        assert repr(name) in str(info.value)
    ClassificationBanditEnv("iris")  # embedded: no scikit-learn needed


def test_unknown_dataset_names_the_choices():
    with pytest.raises(ValueError, match="dataset must be one of .*breast_cancer.*got 'mnist'"):
        ClassificationBanditEnv("mnist")

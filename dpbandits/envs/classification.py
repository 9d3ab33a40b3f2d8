"""A contextual bandit built from a labelled dataset (the classic "supervised-to-bandit"
conversion): every class is an arm, the context is a data row, and pulling the row's true
class pays 1 (plus optional Gaussian noise), any other arm pays 0.

Default dataset: Fisher's iris (150 rows, d = 4, K = 3), embedded in
:mod:`dpbandits.envs._iris`. Why iris: it is the canonical small labelled multiclass dataset;
it ships with no package in this environment except as SciPy test data and scikit-learn is
not a dependency, so it is embedded (2 KiB) — no download at run time, no new dependency;
and it makes a non-trivial bandit (setosa is linearly separable, versicolor and virginica
overlap). Any other dataset can be passed as ``X, y`` (e.g. from scikit-learn's loaders).

Context stream: each episode walks the rows in a random order drawn from the context stream
(a fresh permutation for every pass over the data when the horizon exceeds the number of
rows). Oracle: ``expected_rewards`` is the one-hot vector of the row's class, the optimal arm
its class, the pseudo-regret ``1{a_t != y_t}``.
"""

from __future__ import annotations

import numpy as np

from dpbandits._validation import check_array, check_choice, check_int
from dpbandits.envs._core import (
    BanditCore,
    BanditEnvBase,
    BanditVectorEnvBase,
    check_noise_std,
    check_normalization,
    normalize_rows,
)
from dpbandits.envs._iris import load_iris

__all__ = ["ClassificationBanditEnv", "ClassificationBanditVectorEnv", "DATASETS"]

DATASETS = ("iris",)


class _ClassificationConfig:
    def __init__(self, *, dataset, X, y, horizon, standardize, normalization, noise_std):
        if X is None and y is None:
            name = "iris" if dataset is None else check_choice("dataset", dataset, DATASETS)
            X, y = load_iris()
        else:
            if dataset is not None:
                raise ValueError("give either dataset or X and y, not both")
            if X is None or y is None:
                raise ValueError("X and y must be given together")
            name = "custom"
        self.dataset = name
        X = check_array("X", X, ndim=2)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
        if X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"X must have at least one row and one column, got {X.shape}")
        self.classes, labels = np.unique(y, return_inverse=True)
        self.labels = labels.astype(np.int64)
        if not isinstance(standardize, bool | np.bool_):
            raise TypeError(f"standardize must be a bool, got {standardize!r}")
        self.standardize = bool(standardize)
        self.normalization = check_normalization(normalization)
        Z = X.astype(np.float64, copy=True)
        if self.standardize:
            sd = Z.std(axis=0)
            Z = (Z - Z.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        self.X = np.ascontiguousarray(normalize_rows(Z, self.normalization, "row of X"))
        self.n_rows, self.dim = self.X.shape
        self.n_arms = len(self.classes)
        self.horizon = (self.n_rows if horizon is None
                        else check_int("horizon (T)", horizon, low=1))
        self.noise_std = check_noise_std(noise_std)
        self.onehot = (self.labels[:, None] == np.arange(self.n_arms)).astype(np.float64)
        if self.normalization is not None:
            self.obs_low, self.obs_high = -1.0, 1.0
        else:
            self.obs_low, self.obs_high = self.X.min(axis=0), self.X.max(axis=0)


class _ClassificationCore(BanditCore):
    def __init__(self, cfg: _ClassificationConfig, n_reps: int, chunk_size):
        super().__init__(n_reps=n_reps, n_arms=cfg.n_arms, dim=cfg.dim, horizon=cfg.horizon,
                         noise="gaussian", noise_std=cfg.noise_std, chunk_size=chunk_size)
        self.cfg = cfg
        self._rngs = [None] * n_reps
        self._queue = [None] * n_reps

    def _reset_rep(self, r, instance_rng, context_rng):
        self._rngs[r] = context_rng
        self._queue[r] = np.empty(0, dtype=np.int64)

    def _draw(self, r, n):
        q = self._queue[r]
        while q.shape[0] < n:
            q = np.concatenate([q, self._rngs[r].permutation(self.cfg.n_rows)])
        idx, self._queue[r] = q[:n], q[n:]
        return self.cfg.X[idx], self.cfg.onehot[idx]


_DOC = """
    Parameters
    ----------
    dataset : {"iris"}, optional
        Built-in dataset (default iris when X and y are not given).
    X, y : arrays, optional
        A custom dataset: X (n, d) finite features, y (n,) labels (any sortable values;
        arm k is ``classes[k]`` in sorted order).
    horizon : int, optional
        Rounds per episode (default: one pass over the rows, n).
    standardize : bool
        Centre and scale every feature to unit variance (dataset statistics) first.
    normalization : {"linf", "l1", "l2", None}
        Then rescale every row to unit norm (default "linf", as in the paper's setting).
    noise_std : float >= 0
        Gaussian noise added to the 0/1 reward (default 0).
    chunk_size : int, optional
        Rounds drawn ahead per chunk; results do not depend on it.
"""


class ClassificationBanditEnv(BanditEnvBase):
    __doc__ = ("""Bandit from a labelled dataset, one replication (``gymnasium.Env``).

    Arms are classes; reward ``1{a_t == y_t} + noise_std * z_t``; ``info`` as for
    ``GLMBanditEnv``. Seeding: see :mod:`dpbandits.envs` (the instance stream is unused, the
    context stream draws the row order).
""" + _DOC)

    def __init__(self, dataset=None, *, X=None, y=None, horizon=None, standardize=True,
                 normalization="linf", noise_std=0.0, chunk_size=None, render_mode=None):
        self.config = cfg = _ClassificationConfig(
            dataset=dataset, X=X, y=y, horizon=horizon, standardize=standardize,
            normalization=normalization, noise_std=noise_std)
        self.classes = cfg.classes
        self._setup(_ClassificationCore(cfg, 1, chunk_size), cfg.obs_low, cfg.obs_high,
                    render_mode)


class ClassificationBanditVectorEnv(BanditVectorEnvBase):
    __doc__ = ("""Bandit from a labelled dataset, ``num_envs = R`` replications advanced
    together (``gymnasium.vector.VectorEnv``); replication r after ``reset(seed=s)`` equals
    ``ClassificationBanditEnv`` after ``reset(seed=s + r)``.
""" + _DOC)

    def __init__(self, num_envs: int = 1, dataset=None, *, X=None, y=None, horizon=None,
                 standardize=True, normalization="linf", noise_std=0.0, chunk_size=None,
                 autoreset_mode="NextStep", render_mode=None):
        R = check_int("num_envs", num_envs, low=1)
        self.config = cfg = _ClassificationConfig(
            dataset=dataset, X=X, y=y, horizon=horizon, standardize=standardize,
            normalization=normalization, noise_std=noise_std)
        self.classes = cfg.classes
        self._setup(_ClassificationCore(cfg, R, chunk_size), cfg.obs_low, cfg.obs_high,
                    autoreset_mode, render_mode)

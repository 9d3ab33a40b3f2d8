"""A contextual bandit built from a labelled dataset (the classic "supervised-to-bandit"
conversion): every class is an arm, the context is a data row, and pulling the row's true
class pays 1 (plus optional Gaussian noise), any other arm pays 0.

Datasets (:mod:`dpbandits.envs._datasets`): Fisher's iris (150 x 4, K = 3, embedded, the
default), and, with the optional ``datasets`` extra (scikit-learn's bundled copies, no
download), digits (1,797 x 64, K = 10), wine (178 x 13, K = 3) and breast cancer
(569 x 30, K = 2); or any ``X, y`` passed by the user.

Feature scaling, fixed once when the environment is built (the agents see only the result):

1. ``standardize``: centre every feature and scale it to unit variance (the dataset's own mean
   and standard deviation; constant features are left at 0). Default: per dataset (yes for
   features in different units, no for the digits' pixels, which share one unit; yes for a
   user's ``X``).
2. ``normalization`` (default ``"linf"``): rescale every row to unit norm, so every context
   satisfies ``||x||_inf = 1`` exactly. This is the bound the private agents' sensitivities
   are stated for: DP-HDB's ``context_bound`` is a bound on ``||x||_inf`` (the dual norm of
   its l_1 geometry) and FLIPHAT's ``x_max`` a bound on ``||phi||_inf``, both 1 by default;
   DP-UCB, AdaC-OFUL and LDP-LinUCB bound ``||x||_2 <= L`` with default ``L = sqrt(d)``,
   the l_2 radius of the unit l_inf ball, so unit-l_inf rows never reach their clipping
   either; dp-screened-ls rescales each row itself and assumes no bound. Every default
   therefore holds for every row: no agent clips a context, and each adds the noise its own
   (worst-case) bound calls for. The rows are scaled one by one, not by one dataset-wide
   constant: the optimal arm of a linear agent, ``argmax_k <theta_k, x>``, does not change
   when a row is multiplied by a positive number, so nothing learnable is lost, whereas a
   single constant would be set by the most extreme row and leave typical rows far inside
   the bound. What this leaves is the gap between ``||x||_2`` and the l_2 agents' ``sqrt(d)``
   (a row is on the l_inf sphere, not at a corner of the cube); ``experiments/real_data``
   measures it per dataset.

The dataset statistics used here (means, standard deviations) are treated as public, as in
every supervised-to-bandit benchmark; the privacy unit is one round's (context, reward).

Context stream: each episode walks the rows in a random order drawn from the context stream
(a fresh permutation for every pass over the data when the horizon exceeds the number of
rows). Oracle: ``expected_rewards`` is the one-hot vector of the row's class, the optimal arm
its class, the pseudo-regret ``1{a_t != y_t}``.
"""

from __future__ import annotations

import numpy as np

from dpbandits._validation import check_array, check_int
from dpbandits.envs._core import (
    BanditCore,
    BanditEnvBase,
    BanditVectorEnvBase,
    check_noise_std,
    check_normalization,
    normalize_rows,
)
from dpbandits.envs._datasets import DATASETS, STANDARDIZE, load_dataset

__all__ = ["ClassificationBanditEnv", "ClassificationBanditVectorEnv", "DATASETS"]


class _ClassificationConfig:
    def __init__(self, *, dataset, X, y, horizon, standardize, normalization, noise_std):
        if X is None and y is None:
            name = "iris" if dataset is None else dataset
            X, y = load_dataset(name)
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
        if standardize is None:
            standardize = STANDARDIZE.get(name, True)
        if not isinstance(standardize, bool | np.bool_):
            raise TypeError(f"standardize must be a bool or None, got {standardize!r}")
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
    #: the expected rewards are one-hot: 1 for the row's class, 0 elsewhere
    expected_reward_range = (0.0, 1.0)

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
    dataset : {"iris", "digits", "wine", "breast_cancer"}, optional
        Built-in dataset (default iris when X and y are not given); all but iris need the
        ``datasets`` extra (scikit-learn).
    X, y : arrays, optional
        A custom dataset: X (n, d) finite features, y (n,) labels (any sortable values;
        arm k is ``classes[k]`` in sorted order).
    horizon : int, optional
        Rounds per episode (default: one pass over the rows, n).
    standardize : bool, optional
        Centre and scale every feature to unit variance (dataset statistics) first (default
        None: the dataset's choice, see the module docstring; True for a custom X).
    normalization : {"linf", "l1", "l2", None}, default "linf"
        Then rescale every row to unit norm (default "linf": the bound the private agents'
        defaults assume, see the module docstring).
    noise_std : float >= 0, default 0.0
        Standard deviation of the Gaussian noise added to the 0/1 reward.
    chunk_size : int, optional
        Rounds drawn ahead per chunk; results do not depend on it.
"""


class ClassificationBanditEnv(BanditEnvBase):
    __doc__ = ("""Bandit from a labelled dataset, one replication (``gymnasium.Env``).

    Arms are classes; reward ``1{a_t == y_t} + noise_std * z_t``; ``info`` as for
    ``GLMBanditEnv``. Seeding: see :mod:`dpbandits.envs` (the instance stream is unused, the
    context stream draws the row order).
""" + _DOC)

    def __init__(self, dataset=None, *, X=None, y=None, horizon=None, standardize=None,
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
                 standardize=None, normalization="linf", noise_std=0.0, chunk_size=None,
                 autoreset_mode="NextStep", render_mode=None):
        R = check_int("num_envs", num_envs, low=1)
        self.config = cfg = _ClassificationConfig(
            dataset=dataset, X=X, y=y, horizon=horizon, standardize=standardize,
            normalization=normalization, noise_std=noise_std)
        self.classes = cfg.classes
        self._setup(_ClassificationCore(cfg, R, chunk_size), cfg.obs_low, cfg.obs_high,
                    autoreset_mode, render_mode)

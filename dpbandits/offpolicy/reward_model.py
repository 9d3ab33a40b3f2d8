"""Reward models for the Direct Method and the doubly robust estimators: one regressor per
arm, fit on the rounds where that arm was logged, predicting ``q_hat(x, k)`` for every logged
context and arm.

The default is ridge regression with an unpenalized intercept, per arm ``k``:
``(b_k, theta_k) = argmin sum_{i: a_i = k} (r_i - b - x_i^T theta)^2 + alpha ||theta||^2``,
solved in closed form on centred data (the estimator of scikit-learn's ``Ridge``, computed
here with numpy). Any scikit-learn regressor (an object with ``fit``/``predict`` that
``sklearn.base.clone`` copies) may be passed instead. ``n_folds > 1`` cross-fits: the rounds
are split into folds at random (from ``rng``) and each fold's predictions come from models fit
on the other folds (Chernozhukov et al. 2018, *Double/debiased machine learning for treatment
and structural parameters*), which removes the in-sample bias of DR.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandits._validation import SeedLike, as_float64, as_rng, check_int, check_positive
from dpbandits.envs.logged import LoggedBandit
from dpbandits.offpolicy._inputs import check_log

__all__ = ["RidgeRegressor", "fit_reward_model"]


class RidgeRegressor:
    """Ridge regression with an unpenalized intercept (module docstring), ``fit(X, y)`` /
    ``predict(X)`` like a scikit-learn regressor.

    Parameters
    ----------
    alpha : float, default 1.0
        The penalty, > 0.
    """

    def __init__(self, alpha: float = 1.0):
        self.alpha = check_positive("alpha", alpha)

    def fit(self, X: np.ndarray, y: np.ndarray) -> RidgeRegressor:
        """Fit on ``X`` (m, d) and ``y`` (m,)."""
        X, y = as_float64("X", X), as_float64("y", y)  # exact or refused
        x_mean, y_mean = X.mean(axis=0), float(y.mean())
        Xc = X - x_mean
        gram = Xc.T @ Xc + self.alpha * np.eye(X.shape[1])
        self.coef_ = np.linalg.solve(gram, Xc.T @ (y - y_mean))
        self.intercept_ = y_mean - float(x_mean @ self.coef_)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predictions (m,) for ``X`` (m, d)."""
        return as_float64("X", X) @ self.coef_ + self.intercept_

    def __repr__(self) -> str:
        return f"RidgeRegressor(alpha={self.alpha})"


def _new_model(model: Any, alpha: float) -> Any:
    if model == "ridge":
        return RidgeRegressor(alpha)
    if isinstance(model, str) or not (hasattr(model, "fit") and hasattr(model, "predict")):
        raise TypeError(f"model must be 'ridge' or a scikit-learn regressor (with fit and "
                        f"predict), got {model!r}")
    from sklearn.base import clone  # optional dependency: only for a user's regressor

    return clone(model)


def fit_reward_model(log: LoggedBandit, model: Any = "ridge", *, alpha: float = 1.0,
                     n_folds: int = 1, rng: SeedLike | None = None) -> np.ndarray:
    """``q_hat(x_i, k)`` for every logged round and arm, shape (n, K).

    ``model``: ``"ridge"`` (:class:`RidgeRegressor` with penalty ``alpha``) or a scikit-learn
    regressor (cloned per arm and fold). ``n_folds``: 1 fits on all rounds (in-sample
    predictions, as obp's default), more cross-fits (folds drawn from ``rng``, required).
    Every arm needs logged rounds in every training set, else ``ValueError`` names it.
    """
    log = check_log(log)
    n, K = log.n_rounds, log.n_arms
    folds = check_int("n_folds", n_folds, low=1, high=n)
    if folds == 1:
        fold_of = np.zeros(n, dtype=np.int64)
    else:
        if rng is None:
            raise ValueError(f"n_folds={folds} draws the folds at random: pass rng (a numpy "
                             "Generator or an int seed)")
        fold_of = as_rng(rng, "rng").permutation(np.arange(n) % folds)
    out = np.empty((n, K))
    for f in range(folds):
        test = fold_of == f
        train = ~test if folds > 1 else test
        for k in range(K):
            rows = train & (log.actions == k)
            if not rows.any():
                raise ValueError(f"fit_reward_model: arm {k} has no logged round"
                                 + (f" outside fold {f}" if folds > 1 else "")
                                 + f" in log {log.name!r}, so no model can be fit for it")
            fitted = _new_model(model, alpha).fit(log.contexts[rows], log.rewards[rows])
            out[test, k] = np.asarray(fitted.predict(log.contexts[test]), dtype=np.float64)
    return out

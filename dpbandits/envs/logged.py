"""Logged bandit data as arrays: what a logging policy saw, did and got.

Round ``i`` of a log saw context ``contexts[i]`` (d floats), the logging policy played
``actions[i]`` (an arm in ``{0, ..., n_arms - 1}``) with probability ``propensities[i]``
given that context, and the reward ``rewards[i]`` was observed for that arm only.
:class:`LoggedBandit` holds such a log (validated once, read-only) for the replay
environment (:mod:`dpbandits.envs.replay`) and the off-policy estimators
(:mod:`dpbandits.offpolicy`); the file formats and loaders live in
:mod:`dpbandits.datasets` (this layer depends on numpy only).

:func:`synthetic_log` draws a log whose true policy values are known (the expected reward of
every arm in every logged context is returned with it), for tests and examples.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field

import numpy as np

from dpbandits._validation import as_float64, check_choice, check_int, check_positive

__all__ = ["LoggedBandit", "synthetic_log"]

#: relative tolerance of "every propensity equals 1/n_arms" (a CSV round-trips 1/K exactly
#: with 17 significant digits; files written with fewer digits still count as uniform)
UNIFORM_RTOL = 1e-6


def _where(columns: dict, key: str, default: str) -> str:
    name = columns.get(key)
    return default if name is None else f"column {name!r}"


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True, eq=False)
class LoggedBandit:
    """A validated, read-only log of ``n`` rounds of a contextual bandit.

    Invalid data raises ``ValueError`` naming the column, the first offending row (0-based)
    and value, and what is allowed.

    Parameters
    ----------
    contexts : (n, d) array
        Finite float features of every round.
    actions : (n,) array
        Logged arms in ``[0, n_arms - 1]`` (integer values; floats are accepted only when
        every value is an integer).
    rewards : (n,) array
        Finite float rewards.
    propensities : (n,) array
        The logging policy's probability of the logged action given the context, in (0, 1].
    n_arms : int
        The declared number of arms, >= 2.
    name : str, default "log"
        Labels the log in messages.
    columns : dict or None, default None
        Construction only: maps ``"contexts"`` (a list of names), ``"actions"``,
        ``"rewards"``, ``"propensities"`` to the names of the file's columns, so errors name
        the column the user wrote.
    """

    contexts: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    propensities: np.ndarray
    n_arms: int
    name: str = "log"
    columns: InitVar[dict | None] = None
    _uniform: bool = field(init=False, repr=False)

    def __post_init__(self, columns: dict | None) -> None:
        cols = dict(columns or {})
        where = f"log {self.name!r}"
        n_arms = check_int("n_arms (the declared number of arms)", self.n_arms, low=2)
        x = np.asarray(self.contexts)
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise ValueError(f"{where}: contexts must be a 2-d array (rounds, features) with at "
                             f"least one round and one feature, got shape {x.shape}")
        n = x.shape[0]
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{where}: contexts must be numeric, got dtype {x.dtype}")
        x = np.array(as_float64(f"{where}: contexts", x), order="C")  # exact or refused
        if not np.isfinite(x).all():
            i, j = np.argwhere(~np.isfinite(x))[0]
            names = cols.get("contexts")
            what = f"column {names[j]!r}" if names is not None else f"contexts[:, {j}]"
            raise ValueError(f"{where}: {what} row {i} is {x[i, j]}; contexts must be finite")
        arrays = {}
        for key in ("actions", "rewards", "propensities"):
            a = np.asarray(getattr(self, key))
            if a.shape != (n,):
                raise ValueError(f"{where}: {_where(cols, key, key)} must have shape ({n},) "
                                 f"to match the contexts, got {a.shape}")
            if a.dtype.kind not in "biuf":
                raise TypeError(f"{where}: {_where(cols, key, key)} must be numeric, got dtype "
                                f"{a.dtype}")
            arrays[key] = a
        a = arrays["actions"].astype(np.float64)
        what = _where(cols, "actions", "actions")
        if not np.isfinite(a).all():
            i = _first_bad(~np.isfinite(a))
            raise ValueError(f"{where}: {what} row {i} is {a[i]}; actions must be arm indices")
        if (a != np.round(a)).any():
            i = _first_bad(a != np.round(a))
            raise ValueError(f"{where}: {what} row {i} is {a[i]}; actions must be integer arm "
                             "indices")
        if ((a < 0) | (a >= n_arms)).any():
            i = _first_bad((a < 0) | (a >= n_arms))
            raise ValueError(f"{where}: {what} row {i} is {int(a[i])}; actions must be arms in "
                             f"the declared set {{0, ..., {n_arms - 1}}} (n_arms={n_arms})")
        r = as_float64(f"{where}: {_where(cols, 'rewards', 'rewards')}",
                       arrays["rewards"]).astype(np.float64)
        if not np.isfinite(r).all():
            i = _first_bad(~np.isfinite(r))
            raise ValueError(f"{where}: {_where(cols, 'rewards', 'rewards')} row {i} is {r[i]}; "
                             "rewards must be finite")
        p = as_float64(f"{where}: {_where(cols, 'propensities', 'propensities')}",
                       arrays["propensities"]).astype(np.float64)
        bad = ~(np.isfinite(p) & (p > 0.0) & (p <= 1.0))
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(f"{where}: {_where(cols, 'propensities', 'propensities')} row {i} "
                             f"is {p[i]}; propensities (the logging policy's probability of "
                             "the logged action) must lie in (0, 1]")
        for key, value in (("contexts", x), ("actions", a.astype(np.int64)), ("rewards", r),
                           ("propensities", p)):
            value.setflags(write=False)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "n_arms", n_arms)
        object.__setattr__(self, "_uniform", bool(
            np.all(np.abs(p * n_arms - 1.0) <= UNIFORM_RTOL)))

    @property
    def n_rounds(self) -> int:
        """Logged rounds ``n``."""
        return int(self.contexts.shape[0])

    @property
    def dim(self) -> int:
        """Context dimension ``d``."""
        return int(self.contexts.shape[1])

    @property
    def is_uniform(self) -> bool:
        """True iff every propensity is ``1 / n_arms`` (relative tolerance ``UNIFORM_RTOL``):
        the logging policy was uniformly random, which replay needs to be unbiased."""
        return self._uniform

    @property
    def mean_reward(self) -> float:
        """The logging policy's average reward on the log (its on-policy value estimate)."""
        return float(self.rewards.mean())

    def subset(self, index: slice | np.ndarray, name: str | None = None) -> LoggedBandit:
        """The rounds ``index`` (a slice, integer indices or a boolean mask) as a new log with
        the same arm set, e.g. ``log.subset(slice(0, 7000))`` for a time split."""
        return LoggedBandit(self.contexts[index], self.actions[index], self.rewards[index],
                            self.propensities[index], self.n_arms,
                            name=self.name if name is None else name)

    def __repr__(self) -> str:
        return (f"LoggedBandit(name={self.name!r}, n_rounds={self.n_rounds}, dim={self.dim}, "
                f"n_arms={self.n_arms}, uniform={self.is_uniform})")


def synthetic_log(n_rounds: int = 30_000, n_arms: int = 3, dim: int = 5, *, seed: int = 0,
                  logging: str = "uniform", temperature: float = 0.25,
                  ) -> tuple[LoggedBandit, np.ndarray]:
    """A log with known expected rewards: ``(log, expected_rewards (n, K))``.

    Contexts are uniform on the unit l_2 sphere in R^d, ``theta_k`` uniform on the same
    sphere, and arm ``k`` pays a Bernoulli reward of mean ``mu_k(x) = 0.5 + 0.4 x^T theta_k``
    (in [0.1, 0.9]). ``logging="uniform"`` plays every arm with probability ``1/K``;
    ``"softmax"`` plays ``k`` with probability proportional to ``exp(mu_k(x) / temperature)``
    (a non-uniform policy that favours good arms; propensities are those probabilities).
    The true value of a policy ``pi`` on the logged contexts is
    ``mean_i sum_k pi(k | x_i) expected_rewards[i, k]``. Independent streams (spawned from
    ``seed``) draw theta, the contexts, the logged actions and the rewards.
    """
    n = check_int("n_rounds", n_rounds, low=1)
    K = check_int("n_arms", n_arms, low=2)
    d = check_int("dim", dim, low=1)
    check_int("seed", seed, low=0)
    check_choice("logging", logging, ("uniform", "softmax"))
    temp = check_positive("temperature", temperature)
    g_theta, g_x, g_a, g_r = np.random.default_rng(seed).spawn(4)
    theta = g_theta.standard_normal((K, d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    x = g_x.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    mu = 0.5 + 0.4 * (x @ theta.T)
    if logging == "uniform":
        probs = np.full((n, K), 1.0 / K)
    else:
        z = (mu - mu.max(axis=1, keepdims=True)) / temp
        probs = np.exp(z)
        probs /= probs.sum(axis=1, keepdims=True)
    cum = np.cumsum(probs, axis=1)
    u = g_a.random(n)
    actions = np.minimum((u[:, None] >= cum).sum(axis=1), K - 1)
    rows = np.arange(n)
    rewards = (g_r.random(n) < mu[rows, actions]).astype(np.float64)
    log = LoggedBandit(x, actions, rewards, probs[rows, actions], K,
                       name=f"synthetic-{logging}-seed{seed}")
    return log, mu

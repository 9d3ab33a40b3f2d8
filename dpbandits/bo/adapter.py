"""Continuous hyper-parameters of any model as a DP-GIBO objective.

:class:`HyperparameterSpace` maps optimizer coordinates ``theta`` in the unit box
``[0, 1]^d`` to named hyper-parameter values (linear or log scale), and
:class:`HyperparameterObjective` turns a function ``loss_fn(params) -> (n,)`` — one loss per
held-out validation individual — into an :class:`~dpbandits.bo.objectives.Objective`.
Pass ``bounds=space.bounds`` to DP-GIBO so that design points and iterates stay in the box.

For a bandit agent (the intended use; one held-out simulated user per individual) use
:class:`dpbandits.harness.tuning.AgentTuningObjective`, which builds ``loss_fn`` from a
registered agent and environment (it lives in the harness layer because it runs
simulations)::

    space = HyperparameterSpace(["radius", "h_sub"], low=[0.1, 0.01], high=[10.0, 2.0],
                                log=True)
    objective = AgentTuningObjective("dp-hdb", "dpbandits/SparseLinearBandit-v0", space,
                                     user_seeds=range(100), horizon=1000,
                                     fixed_params={"epsilon": 1.0})
    result = DPGIBO(mu=1.0, n_iters=15, clip_bound=1.0, batch_size=space.dim + 1,
                    bounds=space.bounds).fit(objective, rng)
    best = space.to_params(result.theta[0])

``DPGIBO``'s guarantee then covers the held-out users whose losses it reads (replace-one on
those ``n`` users); the privacy of whatever data the agent itself learns from is the agent's
own guarantee and is separate. The per-user loss must be bounded in practice for clipping to
lose little, and integer hyper-parameters should be treated as continuous inside
``loss_fn`` (rounding there is fine for privacy but makes the loss piecewise constant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._validation import check_array, check_int
from dpbandits.bo.objectives import Objective

__all__ = ["HyperparameterSpace", "HyperparameterObjective"]


class HyperparameterSpace:
    """Named box ``[low_j, high_j]`` (log scale where ``log[j]``), coordinates in ``[0, 1]``.

    ``names`` sequence of distinct strings; ``low``/``high`` same length with
    ``low < high`` (and ``low > 0`` on log-scaled entries); ``log`` a bool or a sequence.
    """

    def __init__(self, names: Iterable[str], low: ArrayLike, high: ArrayLike,
                 log: bool | Sequence[bool] = False) -> None:
        names = list(names)
        if not names or not all(isinstance(s, str) for s in names):
            raise TypeError(f"names must be a non-empty sequence of strings, got {names!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {names!r}")
        d = len(names)
        lo = check_array("low", low, shape=(d,))
        hi = check_array("high", high, shape=(d,))
        if np.any(lo >= hi):
            raise ValueError(f"low must be < high in every entry, got low={lo}, high={hi}")
        lg = np.broadcast_to(np.asarray(log), (d,))
        if lg.dtype != bool:
            raise TypeError(f"log must be a bool or a sequence of {d} bools, got {log!r}")
        if np.any(lg & (lo <= 0)):
            raise ValueError(f"log-scaled hyper-parameters need low > 0, got low={lo}")
        self.names, self.low, self.high, self.log = names, lo, hi, lg.copy()
        self._a = np.where(lg, np.log(np.where(lg, lo, 1.0)), lo)
        self._b = np.where(lg, np.log(np.where(lg, hi, 1.0)), hi)

    @property
    def dim(self) -> int:
        return len(self.names)

    @property
    def bounds(self) -> np.ndarray:
        """The unit box ``[[0, 1]] * d`` for the optimizer's ``bounds``."""
        return np.tile([0.0, 1.0], (self.dim, 1))

    def to_params(self, theta: ArrayLike) -> dict[str, float]:
        """Coordinates ``theta`` in ``[0, 1]^d`` -> ``{name: value}``."""
        th = check_array("theta", theta, shape=(self.dim,))
        if np.any(th < 0) or np.any(th > 1):
            raise ValueError(f"theta must lie in [0, 1]^{self.dim} (give the optimizer "
                             f"bounds=space.bounds), got {th}")
        v = self._a + th * (self._b - self._a)
        v = np.where(self.log, np.exp(v), v)
        return {k: float(x) for k, x in zip(self.names, v, strict=True)}

    def from_params(self, params: Mapping[str, float]) -> np.ndarray:
        """``{name: value}`` -> coordinates in ``[0, 1]^d``."""
        missing = set(self.names) - set(params)
        if missing:
            raise ValueError(f"params is missing {sorted(missing)}")
        v = check_array("params", [params[k] for k in self.names])
        if np.any(v < self.low) or np.any(v > self.high):
            raise ValueError(f"params must lie in [low, high], got {params!r}")
        v = np.where(self.log, np.log(np.where(self.log, v, 1.0)), v)
        return (v - self._a) / (self._b - self._a)


class HyperparameterObjective(Objective):
    """``loss_fn(params: dict) -> (n,)`` as an Objective over ``space`` coordinates."""

    def __init__(self, loss_fn: Callable[[dict[str, float]], ArrayLike],
                 space: HyperparameterSpace, n_individuals: int) -> None:
        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        if not isinstance(space, HyperparameterSpace):
            raise TypeError(f"space must be a HyperparameterSpace, got {type(space).__name__}")
        self.loss_fn = loss_fn
        self.space = space
        self.dim = space.dim
        self.n_individuals = check_int("n_individuals", n_individuals, low=1)

    def _losses(self, thetas):
        return np.stack([np.asarray(self.loss_fn(self.space.to_params(th)), dtype=float)
                         for th in thetas])

"""What one user adds to a noisy release, without the noise: the quantity a private
component's noise is calibrated for, made reachable for checks.

A private component that sums per-user terms into a noisy release (a Gram matrix, clipped
gradients, arm contrasts, ...) implements the hook ``_contributions`` (agents:
``_contributions(contexts, arms, rewards)`` in their current state; streaming optimizers:
``_contributions(x, y)`` at their current iterate; batch optimizers:
``_contributions(loss, X, y, theta)``). It returns one :class:`Contribution` per release:
row ``i`` of ``values`` is what user ``i`` adds to that release, computed by the same code
the component runs on the data (clipping, normalization, the linear algebra of the
statistic), without noise. ``sensitivity`` is the replace-one sensitivity the component's
privacy analysis declares for that release, in the ``ord`` norm and in the units of
``values``: replacing user ``i`` by user ``j`` moves the noiseless release by
``values[i] - values[j]``, so the analysis holds on these inputs only if
``||values[i] - values[j]||_ord <= sensitivity`` for every pair.

A release with several noise scales (one Gaussian mechanism on a Gram and targets with
different standard deviations) is returned *whitened*: every coordinate divided by the
standard deviation of its noise, so ``sensitivity`` is the mechanism's sensitivity in the
noise metric (``1 / multiplier`` for a ``1/k``-GDP Gaussian mechanism).

:func:`dpbandits.testing.check_adversarial_inputs` feeds every registered private component
adversarial floats and compares these rows with the declared sensitivity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits.geometry import lp_norm

__all__ = ["Contribution", "largest_change", "largest_norm"]


@dataclass(frozen=True)
class Contribution:
    """One release's per-user terms: ``values`` (n, m), one row per user; ``sensitivity``
    the declared replace-one sensitivity in the ``ord`` norm (``1 <= ord <= inf``). ``bound="norm"``
    declares instead a bound on every row's own norm (a mechanism whose analysis assumes
    each datum in a ball, e.g. Wishart noise on ``v v^T`` with ``||v|| <= L``)."""

    release: str
    values: np.ndarray
    sensitivity: float
    ord: float = 2.0
    bound: str = "change"

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        object.__setattr__(self, "values", values.reshape(values.shape[0], -1))
        if not 1.0 <= self.ord <= math.inf:
            raise ValueError(f"ord must be in [1, inf], got {self.ord!r}")
        if self.bound not in ("change", "norm"):
            raise ValueError(f"bound must be 'change' or 'norm', got {self.bound!r}")
        if not self.sensitivity >= 0.0:
            raise ValueError(f"sensitivity must be >= 0, got {self.sensitivity!r}")


def largest_norm(values: np.ndarray, ord: float) -> tuple[float, int]:
    """``(max_i ||values[i]||_ord, i)`` for finite ``values`` (n, m), the norms by
    :func:`dpbandits.geometry.lp_norm` (scaled by the largest entry: no square underflows or
    overflows), the primitive the components clip with."""
    norms = lp_norm(np.asarray(values, dtype=np.float64), ord)
    i = int(np.argmax(norms))
    return float(norms[i]), i


def largest_change(values: np.ndarray, ord: float) -> tuple[float, int, int]:
    """``(max_{i,j} ||values[i] - values[j]||_ord, i, j)`` over all pairs of rows, ``(i, j)``
    the first maximal pair in row order, the norms by :func:`dpbandits.geometry.lp_norm` as
    in :func:`largest_norm`. A non-finite row (or difference) gives ``inf``."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    best, where = -1.0, (0, 0)
    for i in range(n):
        with np.errstate(over="ignore", invalid="ignore"):
            diff = values - values[i]
        a = np.abs(diff)
        if not np.all(np.isfinite(a)):
            j = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0]) if np.isfinite(
                values[i]).all() else i
            return math.inf, i, j
        norms = lp_norm(a, ord)
        j = int(np.argmax(norms))
        if norms[j] > best:
            best, where = float(norms[j]), (i, j)
    return best, where[0], where[1]

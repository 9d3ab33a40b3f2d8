"""Binary-tree aggregation (continual counting) of a stream of arrays.

The binary mechanism of Dwork, Naor, Pitassi & Rothblum (2010) and Chan, Shi & Song (2011),
used as the tree-based aggregation of Guha Thakurta & Smith (2013) — Algorithm 5 of Han et
al. 2022 — to release every prefix sum ``S_t = z_1 + … + z_t`` (t = 1..T) of a stream of
arrays of a fixed shape (vectors for DP-TOFW, symmetric matrices for DP-UCB), batched over ``R``
independent replications.

Construction (0-based levels ``j``; ``t`` counted from 1)
---------------------------------------------------------
* Level ``j`` node ``k`` is the dyadic block of leaves ``((k-1) 2^j, k 2^j]``. A node is
  *completed* at the step ``t = k 2^j`` that adds its last leaf; only then is its single
  noise array drawn (``node_noise(rng, (R, *shape))``), and the same noisy node is reused by
  every later release that includes it. Nodes that would complete after the horizon are
  never formed, drawn or released.
* Step ``t`` completes exactly one node, at level ``tz(t)`` (the number of trailing zero
  bits of ``t``), so over the horizon ``node_noise`` is called exactly ``T`` times.
* The release at ``t`` is the sum of the noisy nodes at the levels ``j`` where bit ``j`` of
  ``t`` is 1: ``last_node_count = popcount(t)`` noisy nodes.

Numbers that matter for the privacy accounting
----------------------------------------------
* ``n_levels = L = floor(log2 T) + 1 = T.bit_length()`` levels are ever used.
* ``nodes_per_datum = L``: a datum (leaf ``i``) lies in at most one released node per level,
  and leaf 1 lies in exactly ``L`` of them (``[1,1], [1,2], [1,4], …, [1, 2^{L-1}]``), so
  ``L`` is the exact maximum. This is what multiplies the per-datum sensitivity in the
  composition over nodes (l_2 sensitivity ``sqrt(L) Δ`` of the vector of all node sums
  for Gaussian nodes). ``L <= ceil(log2 T) + 1``, with equality iff ``T`` is a power of 2;
  the paper's count ``ceil(log2 n) + 1`` (Han et al. 2022, Alg. 5 and Thm 3.1; it counts the levels
  of the padded complete tree, including nodes never completed) is therefore a valid, at
  times slightly loose, upper bound.
* ``max_nodes_per_release = max_{t <= T} popcount(t) = (T + 1).bit_length() - 1 <= L``.

Memory is ``O(log T)``: per level, the exact sum of the current node and its noisy version
(two arrays of shape ``(L, R, *shape)``); the whole tree and the noise of future nodes are
never stored.

The same structure with dp_accounting: ``SingleEpochTreeAggregationDpEvent`` describes a
Gaussian tree; Gaussian nodes of std ``σ`` on data of l_2 sensitivity ``Δ`` compose to a
Gaussian mechanism with noise multiplier ``σ / (sqrt(nodes_per_datum) Δ)`` (adaptive
streams included, Guha Thakurta & Smith 2013 / Kairouz et al. 2021).
"""

from __future__ import annotations

import numbers

import numpy as np

from dpbandits._validation import check_array, check_int, check_rng

__all__ = ["TreeAggregator", "tree_levels", "tree_max_nodes_per_release", "tree_node_levels"]


def tree_levels(horizon) -> int:
    """Number of levels ``L = floor(log2 T) + 1`` of the binary mechanism over ``T`` steps.

    Equal to the maximum number of released nodes containing one datum (``nodes_per_datum``).
    """
    T = check_int("horizon", horizon, low=1)
    return T.bit_length()


def tree_max_nodes_per_release(horizon) -> int:
    """``max_{1 <= t <= T} popcount(t)``: most noisy nodes any release sums."""
    T = check_int("horizon", horizon, low=1)
    return (T + 1).bit_length() - 1


def tree_node_levels(t: int) -> tuple[int, int]:
    """``(level, above)`` at step ``t >= 1``: the level of the node completed at ``t``
    (trailing zeros of ``t``) and the lowest level above it whose node the release at ``t``
    also sums (the next set bit of ``t``; ``-1`` if none).

    This is what keeping the release noise as partial sums needs: with ``S[j]`` the sum of
    the noise of the released nodes at levels ``>= j`` (valid at the set bits ``j``), step
    ``t`` sets ``S[level] = eta_t + S[above]`` and the release noise at ``t`` is
    ``S[level]``: one addition per step instead of ``popcount(t) - 1``, ``O(log T)`` arrays.
    ``S[above]`` is still valid because the bits of ``t`` above ``level`` are those of
    ``t - 1``.
    """
    level = (t & -t).bit_length() - 1
    rest = t >> (level + 1)
    above = -1 if rest == 0 else level + 1 + (rest & -rest).bit_length() - 1
    return level, above


def _check_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}")
    return tuple(check_int(f"shape[{i}]", s, low=1) for i, s in enumerate(shape))


class TreeAggregator:
    """Private release of all prefix sums of a stream by the binary (tree) mechanism.

    Parameters
    ----------
    horizon : int >= 1
        Maximum number of stream elements ``T``; one more :meth:`add` raises.
    shape : int or tuple of ints
        Shape of one stream element per replication (``(d,)`` vectors, ``(d, d)`` matrices).
    n_reps : int >= 1
        Number of independent replications ``R``.
    node_noise : callable ``(rng, full_shape) -> ndarray`` or ``None``
        Draws the noise of one tree node for all replications, ``full_shape = (R, *shape)``
        (must return exactly that shape, finite). Replications must get independent noise.
        ``None`` means no noise (exact prefix sums; for testing / non-private baselines).
    rng : numpy.random.Generator
        Source of all node noise (may be ``None`` only when ``node_noise`` is ``None``).

    Use: ``S_tilde = tree.add(z)`` with ``z`` of shape ``(R, *shape)`` returns the noisy
    prefix sum ``z_1 + … + z_t + (sum of popcount(t) node noises)``, shape ``(R, *shape)``.
    See the module docstring for the construction and the accounting numbers.
    """

    def __init__(self, horizon, shape, n_reps, node_noise, rng):
        self.horizon = check_int("horizon", horizon, low=1)
        self.shape = _check_shape(shape)
        self.n_reps = check_int("n_reps", n_reps, low=1)
        if node_noise is not None and not callable(node_noise):
            raise TypeError(
                f"node_noise must be a callable (rng, shape) -> ndarray or None, "
                f"got {type(node_noise).__name__}"
            )
        self.node_noise = node_noise
        if node_noise is None:
            self.rng = None if rng is None else check_rng(rng)
        else:
            self.rng = check_rng(rng)
        self._full_shape = (self.n_reps, *self.shape)
        n_levels = tree_levels(self.horizon)
        self._exact = np.zeros((n_levels, *self._full_shape))
        # Without noise the noisy node is the exact node: share the storage.
        self._noisy = self._exact if node_noise is None else np.zeros_like(self._exact)
        self._t = 0
        self._last_node_count = 0

    # -- accounting-relevant numbers -------------------------------------------------
    @property
    def t(self) -> int:
        """Number of stream elements added so far."""
        return self._t

    @property
    def n_levels(self) -> int:
        """Levels of the tree, ``floor(log2 T) + 1``; also the number of node slots stored."""
        return self._exact.shape[0]

    @property
    def nodes_per_datum(self) -> int:
        """Maximum number of released (noisy) nodes containing any one datum: ``n_levels``
        (``<= ceil(log2 T) + 1``, equality iff ``T`` is a power of two)."""
        return self.n_levels

    @property
    def max_nodes_per_release(self) -> int:
        """Most noisy nodes any release over the horizon sums: ``max popcount(t)``."""
        return tree_max_nodes_per_release(self.horizon)

    @property
    def last_node_count(self) -> int:
        """Noisy nodes summed by the latest release (``popcount(t)``; 0 before any add)."""
        return self._last_node_count

    @property
    def live_node_count(self) -> int:
        """Nodes currently held (the ones the next releases can still use): ``popcount(t)``."""
        return int(self._t).bit_count()

    # -- streaming ------------------------------------------------------------------
    def add(self, values) -> np.ndarray:
        """Append ``values`` (shape ``(R, *shape)``) and return the noisy prefix sum."""
        if self._t >= self.horizon:
            raise ValueError(
                f"cannot add element {self._t + 1}: the tree was built for horizon="
                f"{self.horizon} elements"
            )
        z = check_array("values", values, shape=self._full_shape)
        t = self._t + 1
        level = (t & -t).bit_length() - 1  # trailing zeros of t: the node completed now
        noise = None
        if self.node_noise is not None:  # drawn and checked before any state changes
            noise = np.asarray(self.node_noise(self.rng, self._full_shape), dtype=np.float64)
            if noise.shape != self._full_shape:
                raise ValueError(
                    f"node_noise must return an array of shape {self._full_shape}, "
                    f"got {noise.shape}"
                )
            if not np.all(np.isfinite(noise)):
                raise ValueError("node_noise returned non-finite values (NaN or inf)")
        # Levels below `level` hold exactly the blocks that merge into the new node.
        if level:
            self._exact[level] = self._exact[:level].sum(axis=0) + z
        else:
            self._exact[0] = z
        if noise is not None:
            np.add(self._exact[level], noise, out=self._noisy[level])
        self._t = t
        used = [j for j in range(self.n_levels) if (t >> j) & 1]
        self._last_node_count = len(used)
        if len(used) == 1:
            return self._noisy[used[0]].copy()
        return self._noisy[used].sum(axis=0)

    def __repr__(self) -> str:
        noise = "None" if self.node_noise is None else getattr(
            self.node_noise, "__name__", type(self.node_noise).__name__)
        return (f"TreeAggregator(horizon={self.horizon}, shape={self.shape}, "
                f"n_reps={self.n_reps}, node_noise={noise}, t={self._t})")

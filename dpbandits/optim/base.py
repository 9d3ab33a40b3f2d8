"""Interfaces shared by every optimizer of the library (DESIGN.md, "Optimizer").

Streaming optimizers consume one sample per replication per call and release an iterate
(continual release); batch optimizers fit a whole data set. Both are batched over a leading
replication axis ``R`` and expose their guarantee (``privacy``) and the ledger of mechanism
events their noise corresponds to (``ledger``, a ``dp_accounting.DpEvent``), so the guarantee
can be recomputed independently of the code that calibrated it.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field

import dp_accounting
import numpy as np

from dpbandits._params import Parameterized
from dpbandits.privacy.guarantee import PrivacyGuarantee


class StreamingOptimizer(Parameterized):
    """One sample in, one released iterate out, for ``R`` independent replications.

    Subclasses take their hyper-parameters in ``__init__`` (stored unchanged and validated
    there) and implement ``reset``, ``step``, ``privacy`` and ``ledger``.
    """

    @abstractmethod
    def reset(self, n_reps: int, rng: np.random.Generator) -> StreamingOptimizer:
        """Fresh state for ``n_reps`` replications; all noise is drawn from ``rng``."""

    @abstractmethod
    def step(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Consume one sample per replication, ``x`` of shape ``(R, d)`` and ``y`` of
        shape ``(R,)``; return the released iterate, shape ``(R, d)``."""

    @property
    @abstractmethod
    def privacy(self) -> PrivacyGuarantee:
        """Guarantee of the whole released sequence of iterates."""

    @property
    @abstractmethod
    def ledger(self) -> dp_accounting.DpEvent:
        """The mechanism events the noise corresponds to (for independent re-accounting)."""


@dataclass
class BatchResult:
    """Outcome of ``BatchOptimizer.fit``.

    ``theta`` is the output, shape ``(R, d)``; ``history`` the iterates, shape
    ``(R, n_iterates, d)`` (may be thinned — ``history_steps`` says which steps were kept);
    ``n_clipped`` counts clipped per-sample gradients or inputs per replication.
    """

    theta: np.ndarray
    history: np.ndarray
    history_steps: np.ndarray
    privacy: PrivacyGuarantee
    n_clipped: np.ndarray
    n_gradient_evals: int
    extra: dict = field(default_factory=dict)


class BatchOptimizer(Parameterized):
    """Fits a data set privately: ``fit(loss, X, y, rng) -> BatchResult``.

    ``X`` is ``(n, d)`` (the same data for every replication; give ``n_reps``) or
    ``(R, n, d)`` (one data set per replication); ``y`` is ``(n,)`` or ``(R, n)``.
    """

    @abstractmethod
    def fit(self, loss, X, y, rng: np.random.Generator, n_reps: int | None = None
            ) -> BatchResult:
        """Run the algorithm; all randomness from ``rng``."""

    @property
    @abstractmethod
    def privacy(self) -> PrivacyGuarantee:
        """Guarantee of the released output (after ``fit`` where it depends on ``n``)."""

    @property
    @abstractmethod
    def ledger(self) -> dp_accounting.DpEvent:
        """The mechanism events the noise corresponds to."""

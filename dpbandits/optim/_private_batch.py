"""Common skeleton of the batch private optimizers of seeds 001/002/004.

Their noise depends on the data-set size ``n`` (sensitivities ``2G/n``, sampling rates
``1/n``), so the guarantee is computed per ``n``: ``privacy_for(n)`` / ``ledger_for(n)``
before fitting, ``privacy`` / ``ledger`` for the last ``fit``.
"""

from __future__ import annotations

import math

import dp_accounting

from dpbandits._validation import check_delta, check_epsilon, check_int, check_nonnegative
from dpbandits.optim.base import BatchOptimizer
from dpbandits.privacy.guarantee import PrivacyGuarantee


class PrivateBatchOptimizer(BatchOptimizer):
    """Adds per-``n`` guarantees and the ``epsilon``/``delta``/``noise_std`` checks."""

    #: set by subclasses: does the mechanism need delta > 0 (Gaussian noise)?
    _needs_delta = True

    def _check_common(self) -> None:
        eps = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        if self._needs_delta and math.isfinite(eps) and delta == 0.0 and self.noise_std is None:
            raise ValueError(
                f"delta must be > 0 for {type(self).__name__} (Gaussian noise gives no pure "
                f"epsilon-DP), got delta={self.delta}"
            )
        if self.noise_std is not None:
            check_nonnegative("noise_std", self.noise_std)
        self._fitted_n = None

    # subclasses implement ------------------------------------------------------------------
    def privacy_for(self, n: int) -> PrivacyGuarantee:  # pragma: no cover - abstract
        raise NotImplementedError

    def ledger_for(self, n: int) -> dp_accounting.DpEvent:  # pragma: no cover - abstract
        raise NotImplementedError

    # shared ------------------------------------------------------------------------------
    @staticmethod
    def _check_n(n) -> int:
        return check_int("n", n, low=2)

    @property
    def private(self) -> bool:
        """False when run without noise (``epsilon = inf`` and no ``noise_std``)."""
        return math.isfinite(self.epsilon) or bool(self.noise_std)

    def _require_fit(self) -> int:
        if getattr(self, "_fitted_n", None) is None:
            raise RuntimeError(
                f"{type(self).__name__}'s guarantee depends on the data-set size n: call fit() "
                "first, or use privacy_for(n) / ledger_for(n)"
            )
        return self._fitted_n

    @property
    def privacy(self) -> PrivacyGuarantee:
        return self.privacy_for(self._require_fit())

    @property
    def ledger(self) -> dp_accounting.DpEvent:
        return self.ledger_for(self._require_fit())

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

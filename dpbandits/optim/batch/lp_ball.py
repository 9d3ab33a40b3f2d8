"""What the DP-SCO baselines of Han et al. 2022's Table 5.1 (NoisySFW, LocalMD, NoisySGD) share:
the l_p-ball parameters and the replace-one RDP guarantee of their ledgers.

They are batch optimizers (``fit(loss, X, y, rng, n_reps=None) -> BatchResult``) over the
l_p ball ``C = {||theta||_p <= radius}`` (the papers cited in each module). Every
per-sample gradient is clipped to ``||g||_q <= L0`` (``q`` dual to ``p``; the ``lipschitz``
parameter), so the sensitivities hold for any data; ``BatchResult.n_clipped`` counts the
clips. With data inside the bounds nothing is clipped and the algorithms are the papers'.
Privacy is stated for replace-one neighbours and covers every iterate of the history.

For LocalMD and NoisySGD the ledger is the sequence of subsampled Gaussian steps,
``SampledWithoutReplacementDpEvent(n, b, GaussianDpEvent(z))`` (one index per step is the
same as sampling one index without replacement), and the reported ``privacy`` is what
dp_accounting's RDP accountant certifies for that ledger under ``REPLACE_ONE`` neighbours
(Wang, Balle & Kasiviswanathan 2019, Theorem 27) — recomputable with
:func:`dpbandits.privacy.accounting.replace_one_rdp_epsilon` at
:data:`~dpbandits.privacy.accounting.SCO_BASELINE_ORDERS`.

Each computes its noise as a frozen plan per data-set size (``plan_for(n, d)``,
:class:`~dpbandits.optim.base.PrivateBatchOptimizer`), which its ``fit`` draws from.

Randomness: every draw comes from the ``rng`` given to ``fit``; same seed => bit-identical
results (for NoisySGD, on the same backend).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._validation import check_epsilon, check_int, check_p, check_positive
from dpbandits.geometry import dual_exponent
from dpbandits.optim.base import PrivateBatchOptimizer, check_scale
from dpbandits.privacy import accounting
from dpbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["LpBallOptimizer"]


class LpBallOptimizer(PrivateBatchOptimizer):
    """Validation of ``p`` (within ``p_range``), ``radius``, the privacy target, ``lipschitz``
    and ``lr_scale``; the replace-one RDP guarantee of a ledger.

    Parameters
    ----------
    radius : float, default 1.0
        Radius > 0 of the constraint ``||theta||_p <= radius``; ``M = 2 radius``.
    epsilon : float, default 1.0
        Target epsilon > 0 of the whole run; ``inf`` turns the noise off.
    delta : float or None, default None
        Target delta in (0, 1). None: ``1/n^2`` for a fit on ``n`` samples (``1/4`` when
        ``n = 1``), the usual choice well below ``1/n`` (a delta of order ``1/n`` allows
        releasing one sample in the clear); ``0`` when ``epsilon = inf``.
    lipschitz : float, default 1.0
        ``L0`` > 0: per-sample gradients are clipped to ``||g||_q <= L0`` (``q`` dual to ``p``).
    lr_scale : float, default 1.0
        Multiplies (> 0) the paper's step size.
    """

    def _gradient_clip(self, d: int) -> tuple[float, float]:
        """Per-sample gradients clipped to ``||g||_q <= lipschitz`` (``q`` dual to ``p``)."""
        return self._q, self._L0

    def _contributions(self, loss, X, y, theta):
        """Each sample's gradient at ``theta`` clipped by
        :func:`~dpbandits.optim.base.clipped_gradients` (the path of LocalMD's and NoisySFW's
        fits; NoisySGD has its own), sensitivity ``2 lipschitz`` in
        ``l_q`` (:mod:`dpbandits.privacy.contributions`)."""
        from dpbandits._validation import as_float64
        from dpbandits.optim.base import clipped_gradients, resolve_loss
        from dpbandits.privacy.contributions import Contribution

        X = as_float64("X", X)
        theta = np.broadcast_to(as_float64("theta", theta), X.shape)
        g, _ = clipped_gradients(resolve_loss(loss), theta, X, as_float64("y", y),
                                 self._q, self._L0)
        return [Contribution("gradient", g, 2.0 * self._L0, self._q)]

    #: (low, low_open, high) of the allowed ``p``
    p_range: tuple[float, bool, float] = (1.0, True, 2.0)

    def _check_ball(self) -> None:
        low, low_open, high = self.p_range
        self._p = check_p("p", self.p, low=low, low_open=low_open)
        if self._p > high:
            raise ValueError(f"p must be <= {high} for {type(self).__name__}, got {self._p}")
        self._q = dual_exponent(self._p)
        self._radius = check_scale("radius", self.radius)
        self._check_target()
        self._L0 = check_scale("lipschitz", self.lipschitz)
        self._lr = check_positive("lr_scale", self.lr_scale)

    @staticmethod
    def _check_n(n) -> int:
        return check_int("n", n, low=1)

    def _check_target(self) -> None:
        """As every batch optimizer, except that ``delta=None`` with a finite ``epsilon``
        is resolved per data-set size (:meth:`delta_for`). These methods have no
        ``noise_std``."""
        eps = check_epsilon(self.epsilon)
        if self.delta is None and math.isfinite(eps):
            self._eps, self._delta, self._private = eps, None, True
            self._fitted = None
            return
        super()._check_target()

    def delta_for(self, n: int) -> float:
        """The target delta of a fit on ``n`` samples: ``delta`` as given, or for
        ``delta=None`` ``1/n^2`` (``1/4`` for ``n = 1``)."""
        if self._delta is not None:
            return self._delta
        return 1.0 / max(int(n), 2) ** 2

    def _accountant_guarantee(self, event, basis: str, n: int) -> PrivacyGuarantee:
        delta = self.delta_for(n)
        eps = accounting.replace_one_rdp_epsilon(event, delta, accounting.SCO_BASELINE_ORDERS)
        return PrivacyGuarantee(
            epsilon=eps, delta=delta, notion="DP", neighbouring="replace-one",
            basis=basis + f"; certified by dp_accounting RDP (replace-one) on the ledger: "
            f"epsilon={eps:.4g} at delta={delta:.3g} (target epsilon={self._eps:g})",
        )

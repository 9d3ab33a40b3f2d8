"""The DP-ERM optimizers of seed 001 (Wang, Ye & Xu, "Differentially private empirical risk
minimization revisited: faster and more general"), gathered in one namespace.

* :class:`DPSVRG` — Algorithm 1, strongly convex ``F^r`` (proximal SVRG with noise);
* :class:`DPSVRGPlusPlus` — Algorithm 2, doubling epochs, last-iterate restart;
* :class:`DPAccMD` — Algorithm 3, accelerated mirror descent over an l_1/l_2 ball (private
  reading: the noisy gradient is used in both steps);
* :class:`DPGD` — Algorithm 4, noisy gradient descent (last or uniformly random iterate).

Every constant the paper leaves as "some constant c" is calibrated by an accountant to the
target ``(epsilon, delta)``; see each module's docstring for the ledger.
"""

from dpbandits.optim.dp_accmd import DPAccMD, l1_squared_prox
from dpbandits.optim.dp_gd import DPGD
from dpbandits.optim.dp_svrg import (
    DPSVRG,
    DPSVRGPlusPlus,
    svrg_contraction,
    svrg_theory_parameters,
)

__all__ = [
    "DPAccMD",
    "DPGD",
    "DPSVRG",
    "DPSVRGPlusPlus",
    "l1_squared_prox",
    "svrg_contraction",
    "svrg_theory_parameters",
]

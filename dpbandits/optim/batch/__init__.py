"""Batch private optimizers (``fit(loss, X, y, rng, n_reps)``), on the shared base
:class:`~dpbandits.optim.base.PrivateBatchOptimizer`, data handling
(:mod:`~dpbandits.optim.batch.data`) and clipped gradients
(:mod:`~dpbandits.optim.batch.oracle`):

* the DP-SCO baselines of Han et al. 2022's Table 5.1 over an l_p ball
  (:mod:`~dpbandits.optim.batch.lp_ball`): :class:`NoisySFW`, :class:`LocalMD`,
  :class:`NoisySGD`;
* the DP-ERM methods of Wang, Ye & Xu 2017: :class:`DPSVRG`,
  :class:`DPSVRGPlusPlus`, :class:`DPGD`, :class:`DPAccMD`;
* the non-smooth DP-SCO methods of Arora, Marinov & Ullah 2020:
  :class:`PrivateSGD`, :class:`PrivateFTRL` (its claim is marked not certified).
"""

from dpbandits.optim.batch.dp_accmd import DPAccMD
from dpbandits.optim.batch.dp_gd import DPGD
from dpbandits.optim.batch.dp_svrg import DPSVRG, DPSVRGPlusPlus
from dpbandits.optim.batch.local_md import LocalMD
from dpbandits.optim.batch.noisy_sfw import NoisySFW
from dpbandits.optim.batch.noisy_sgd import NoisySGD
from dpbandits.optim.batch.private_ftrl import PrivateFTRL
from dpbandits.optim.batch.private_sgd import PrivateSGD

__all__ = ["DPGD", "DPSVRG", "DPAccMD", "DPSVRGPlusPlus", "LocalMD", "NoisySFW", "NoisySGD",
           "PrivateFTRL", "PrivateSGD"]

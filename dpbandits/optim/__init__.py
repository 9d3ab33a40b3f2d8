"""Private optimizers: streaming (behind the bandit agents) and batch (DP-SCO and DP-ERM).

Every optimizer states its guarantee (``privacy``) and exposes the ``dp_accounting`` ledger of
the noise it adds (``ledger``); parameters follow the scikit-learn rule (``get_params``,
``clone``, ``set_params``; read-only after construction).

* streaming (``reset(n_reps, rng)``, ``step(x, y)``): :class:`DPTOFW`, :class:`DPPOFW`
  ([Han et al. 2022], Algorithms 1 and 2);
* batch (``fit(loss, X, y, rng, n_reps)``): the DP-SCO baselines :class:`NoisySFW`,
  :class:`LocalMD`, :class:`NoisySGD`; the DP-ERM methods :class:`DPSVRG`,
  :class:`DPSVRGPlusPlus`, :class:`DPGD`, :class:`DPAccMD` ([Wang, Ye & Xu 2017]); the
  non-smooth DP-SCO methods :class:`PrivateSGD`, :class:`PrivateFTRL` ([Arora, Marinov &
  Ullah 2020]; Private FTRL's claim is marked not certified).

``OPTIMIZERS`` maps a short name to each class (the contract tests run every entry).
"""

from dpbandits.optim.base import BatchOptimizer, BatchResult, StreamingOptimizer
from dpbandits.optim.dp_accmd import DPAccMD
from dpbandits.optim.dp_gd import DPGD
from dpbandits.optim.dp_pofw import DPPOFW
from dpbandits.optim.dp_svrg import DPSVRG, DPSVRGPlusPlus
from dpbandits.optim.dp_tofw import DPTOFW
from dpbandits.optim.private_ftrl import PrivateFTRL
from dpbandits.optim.private_sgd import PrivateSGD
from dpbandits.optim.sco_baselines import LocalMD, NoisySFW, NoisySGD

#: every optimizer class of the package, by short name
OPTIMIZERS = {
    "dp-tofw": DPTOFW,
    "dp-pofw": DPPOFW,
    "noisy-sfw": NoisySFW,
    "local-md": LocalMD,
    "noisy-sgd": NoisySGD,
    "dp-svrg": DPSVRG,
    "dp-svrg++": DPSVRGPlusPlus,
    "dp-gd": DPGD,
    "dp-accmd": DPAccMD,
    "private-sgd": PrivateSGD,
    "private-ftrl": PrivateFTRL,
}

__all__ = ["OPTIMIZERS", "BatchOptimizer", "BatchResult", "DPAccMD", "DPGD", "DPPOFW", "DPSVRG",
           "DPSVRGPlusPlus", "DPTOFW", "LocalMD", "NoisySFW", "NoisySGD", "PrivateFTRL",
           "PrivateSGD", "StreamingOptimizer"]

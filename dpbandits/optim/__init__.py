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
Layout: :mod:`~dpbandits.optim.base` (the interfaces and what they share: parameters,
privacy-target check, per-size guarantees, gradient clipping), :mod:`~dpbandits.optim.streaming`
and :mod:`~dpbandits.optim.batch` (one module per algorithm).
"""

from dpbandits.optim.base import (
    BatchOptimizer,
    BatchResult,
    Optimizer,
    PrivateBatchOptimizer,
    StreamingOptimizer,
)
from dpbandits.optim.batch import (
    DPGD,
    DPSVRG,
    DPAccMD,
    DPSVRGPlusPlus,
    LocalMD,
    NoisySFW,
    NoisySGD,
    PrivateFTRL,
    PrivateSGD,
)
from dpbandits.optim.streaming import DPPOFW, DPTOFW

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
           "DPSVRGPlusPlus", "DPTOFW", "LocalMD", "NoisySFW", "NoisySGD", "Optimizer",
           "PrivateBatchOptimizer", "PrivateFTRL", "PrivateSGD", "StreamingOptimizer"]

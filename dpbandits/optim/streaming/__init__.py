"""Streaming private Frank-Wolfe optimizers of Han et al. 2022 (the optimizers behind DP-HDB):
:class:`DPTOFW` (Algorithm 1, tree aggregation) and :class:`DPPOFW` (Algorithm 2, private
vertex selection), on the shared recursive-gradient machinery of
:mod:`~dpbandits.optim.streaming.frank_wolfe`."""

from dpbandits.optim.streaming.dp_pofw import DPPOFW
from dpbandits.optim.streaming.dp_tofw import DPTOFW
from dpbandits.optim.streaming.frank_wolfe import StreamingFrankWolfe

__all__ = ["DPPOFW", "DPTOFW", "StreamingFrankWolfe"]

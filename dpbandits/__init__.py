"""dpbandits: differentially private contextual bandits and private optimizers."""

__version__ = "0.1.0"

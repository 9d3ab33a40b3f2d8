"""Off-policy evaluation of fixed policies from logged bandit data.

* :mod:`~dpbandits.offpolicy.estimators` -- IPS, clipped IPS, SNIPS, the Direct Method, doubly
  robust, self-normalized DR and Switch-DR (not private);
* :mod:`~dpbandits.offpolicy.intervals` -- normal, bootstrap and empirical-Bernstein intervals,
  cut to a reward range on request;
* :mod:`~dpbandits.offpolicy.reward_model` -- per-arm reward models (ridge or any scikit-learn
  regressor, optionally cross-fit) for the model-based estimators;
* :mod:`~dpbandits.offpolicy.private` -- differentially private IPS, SNIPS and DR;
* :mod:`~dpbandits.offpolicy.policies` -- an agent's arms or action probabilities on logged
  contexts.

Layer: beside ``datasets`` (above ``envs`` and ``privacy``; numpy and scipy only, scikit-learn
only for a user's regressor). See ``docs/offpolicy.md``.
"""

from dpbandits.offpolicy.estimate import PolicyEstimate
from dpbandits.offpolicy.estimators import (
    clipped_ips,
    direct_method,
    doubly_robust,
    ips,
    self_normalized_dr,
    snips,
    switch_dr,
)
from dpbandits.offpolicy.intervals import INTERVALS
from dpbandits.offpolicy.policies import policy_actions, policy_probabilities
from dpbandits.offpolicy.private import PRIVATE_ESTIMATORS, PrivateEstimate, PrivateEstimator
from dpbandits.offpolicy.reward_model import RidgeRegressor, fit_reward_model

__all__ = [
    "INTERVALS",
    "PRIVATE_ESTIMATORS",
    "PolicyEstimate",
    "PrivateEstimate",
    "PrivateEstimator",
    "RidgeRegressor",
    "clipped_ips",
    "direct_method",
    "doubly_robust",
    "fit_reward_model",
    "ips",
    "policy_actions",
    "policy_probabilities",
    "self_normalized_dr",
    "snips",
    "switch_dr",
]

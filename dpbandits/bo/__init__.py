"""Scalable differentially private Bayesian optimization (Sopa et al. 2025) and its baselines.

* :mod:`~dpbandits.bo.kernels` — RBF, Matern-5/2 and polynomial kernels with input gradients
  and cross-Hessians;
* :mod:`~dpbandits.bo.gp` — exact GP regression (Cholesky, incremental) with the posterior of
  the gradient;
* :mod:`~dpbandits.bo.acquisition` — the gradient-informative design of Algorithm 1;
* :mod:`~dpbandits.bo.dp_gibo` — DP-GIBO (Algorithm 1, ``mu``-GDP by Theorem 3.1) and GIBO;
* :mod:`~dpbandits.bo.baselines` — DP-GD on exact gradients (``ExactGradientDPGD``), private
  random search, GP-UCB;
* :mod:`~dpbandits.bo.objectives` — per-individual black-box objectives;
* :mod:`~dpbandits.bo.adapter` — continuous hyper-parameters of any model (e.g. a bandit
  agent) as a DP-GIBO objective.
"""

from dpbandits.bo.acquisition import GradientDesigner
from dpbandits.bo.adapter import HyperparameterObjective, HyperparameterSpace
from dpbandits.bo.baselines import GPUCB, ExactGradientDPGD, PrivateRandomSearch
from dpbandits.bo.dp_gibo import DPGIBO, GIBO
from dpbandits.bo.gp import ExactGP, GPDesign
from dpbandits.bo.kernels import RBF, Kernel, Matern52, Polynomial, make_kernel
from dpbandits.bo.objectives import (
    CallableObjective,
    GPRegressionObjective,
    HuberRegression,
    NoisyObjective,
    NormalLocation,
    Objective,
    as_objective,
)

__all__ = [
    "DPGIBO", "GIBO", "ExactGradientDPGD", "GPUCB", "PrivateRandomSearch", "GradientDesigner",
    "ExactGP", "GPDesign", "Kernel", "RBF", "Matern52", "Polynomial", "make_kernel",
    "Objective", "CallableObjective", "NoisyObjective", "NormalLocation", "HuberRegression",
    "GPRegressionObjective", "as_objective", "HyperparameterSpace", "HyperparameterObjective",
]

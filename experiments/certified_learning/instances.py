"""Problem instances of the screened-least-squares study: the tuning instances (used only to
choose ``dp-screened-ls``'s defaults) and the evaluation instances (never used for tuning).

The two sets share neither environment parameters nor seeds: tuning runs use environment
seeds 5000 + r, evaluation runs seeds 0 + r (replication r). Every instance is a
``dpbandits/GLMBandit-v0`` (or the registered Figure 5.1 instance) at T = 1e4 with
contexts rescaled to unit l_inf norm, so the agent only ever sees the declared bound
``||x||_inf <= 1``; correlated instances draw raw contexts from N(mu, Sigma) with an AR(rho)
or equicorrelated Sigma (std 0.05) and a fixed mean mu = m * 0.05 * N(0, I) drawn from its own
seed (m = mean size in units of the context std), i.e. correlated and not centred.
"""

from __future__ import annotations

import numpy as np

GLM = "dpbandits/GLMBandit-v0"
FIG51 = "dpbandits/Figure5.1-v0"
HORIZON = 10_000
STD = 0.05
TUNE_SEED = 5000
EVAL_SEED = 0


def ar_cov(d: int, rho: float) -> np.ndarray:
    i = np.arange(d)
    return STD**2 * rho ** np.abs(i[:, None] - i[None, :])


def eq_cov(d: int, rho: float) -> np.ndarray:
    return STD**2 * ((1 - rho) * np.eye(d) + rho)


def mean_vector(d: int, size: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence([0x3EA7, seed]))
    return size * STD * rng.standard_normal(d)


def _glm(K: int, d: int, *, corr: tuple[str, float] | None = None,
         mean: tuple[float, int] | None = None, **extra) -> tuple[str, dict, str]:
    """An instance: ``corr = ("AR" | "equicorrelated", rho)``, ``mean = (size, seed)``;
    returns ``(env id, env params, description)``."""
    params = {"n_arms": K, "dim": d, "horizon": HORIZON, "normalization": "linf", **extra}
    words = []
    if corr is not None:
        kind, rho = corr
        params["context_cov"] = (ar_cov if kind == "AR" else eq_cov)(d, rho)
        words.append(f"AR({rho:g})" if kind == "AR" else f"equicorrelated {rho:g}")
    else:
        words.append("isotropic")
    if mean is not None:
        params["context_mean"] = mean_vector(d, mean[0], mean[1])
        words.append(f"mean {mean[0]:g} sd")
    words += [f"K = {K}", f"d = {d}"]
    words.append("dense theta" if extra.get("theta") == "gaussian"
                 else f"s = {extra.get('sparsity')}")
    if "noise_std" in extra:
        words.append(f"noise {extra['noise_std']:g}")
    return GLM, params, ", ".join(words)


#: name -> (env id, env params, one-line description)
TUNING = {
    "tune-iso-K2-d40-s4": _glm(2, 40, sparsity=4),
    "tune-ar3-K2-d60-s6": _glm(2, 60, sparsity=6, corr=("AR", 0.3), mean=(0.3, 11)),
    "tune-ar6-K3-d30-s3": _glm(3, 30, sparsity=3, corr=("AR", 0.6), mean=(0.8, 12)),
    "tune-iso-K4-d20-s2": _glm(4, 20, sparsity=2, noise_std=0.1),
    "tune-eq2-K2-d80-s8": _glm(2, 80, sparsity=8, corr=("equicorrelated", 0.2),
                               mean=(0.5, 13)),
}

#: name -> (env id, env params, one-line description); "figure5.1" is the target instance
EVALUATION = {
    "figure5.1": (FIG51, {}, "Figure 5.1: isotropic, K = 2, d = 50, s = 5 (the target)"),
    "ar5-K4-d30-s3": _glm(4, 30, sparsity=3, corr=("AR", 0.5), mean=(0.5, 1)),
    "eq3-K2-d100-s10": _glm(2, 100, sparsity=10, corr=("equicorrelated", 0.3), mean=(0.5, 2)),
    "ar7-K3-d50-dense": _glm(3, 50, theta="gaussian", corr=("AR", 0.7), mean=(1.0, 3)),
}


#: evaluation instances added for dp-moment-ls (issue 26), fixed before any run: a K >= 5
#: correlated, not-centred instance and the logistic instance at T = 1e4 (never used to tune)
EVALUATION_MORE = {
    "ar5-K6-d40-s4": _glm(6, 40, sparsity=4, corr=("AR", 0.5), mean=(0.5, 4)),
    "logistic-T1e4": ("dpbandits/LogisticBandit-v0", {"n_arms": 3, "dim": 20,
                                                      "horizon": HORIZON},
                      "LogisticBandit-v0 at T = 1e4: K = 3, d = 20, s = 3, logistic link, "
                      "Bernoulli rewards"),
}

#: a tuning instance with logistic rewards (dp-moment-ls; never evaluated)
TUNING_MORE = {
    "tune-logit-K4-d15-s2": _glm(4, 15, sparsity=2, link="logistic", noise="bernoulli",
                                 theta_scale=4.0),
}

#: tuning instances with many arms (issue 26, third round: the schedule and budget as a
#: function of K; never evaluated). Disjoint from the evaluation instances: other sizes,
#: correlations and mean seeds, and tuning environment seeds 5000 + r
TUNING_K = {
    "tune-ar4-K6-d24-s3": _glm(6, 24, sparsity=3, corr=("AR", 0.4), mean=(0.5, 14)),
    "tune-iso-K8-d32-s3": _glm(8, 32, sparsity=3),
    "tune-ar3-K6-d48-s4": _glm(6, 48, sparsity=4, corr=("AR", 0.3), mean=(0.5, 15)),
    # a short horizon with many arms and coordinates (T = 1800)
    "tune-ar3-K10-d64-T1800": _glm(10, 64, sparsity=4, corr=("AR", 0.3), mean=(0.5, 16),
                                   horizon=1800),
}


def problem_size(env_params: dict) -> tuple[int, int]:
    """(K, d) of an instance (the Figure 5.1 defaults when not given)."""
    return int(env_params.get("n_arms", 2)), int(env_params.get("dim", 50))

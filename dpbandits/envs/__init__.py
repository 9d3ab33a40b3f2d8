"""Gymnasium contextual-bandit environments, single and natively vectorized.

Importing this module registers the ids below with Gymnasium::

    import gymnasium
    import dpbandits.envs  # noqa: F401  (registers the dpbandits/ ids)

    env = gymnasium.make("dpbandits/Figure5.1-v0")
    x, info = env.reset(seed=0)
    x, reward, terminated, truncated, info = env.step(0)
    info["pseudo_regret"], info["optimal_arm"], info["expected_rewards"]

    venv = gymnasium.make_vec("dpbandits/Figure5.1-v0", num_envs=100,
                              vectorization_mode="vector_entry_point")
    X, info = venv.reset(seed=0)          # X: (100, 50)

Registered ids (every one has a single ``entry_point`` and a native ``vector_entry_point``):

=================================== ==========================================================
``dpbandits/GLMBandit-v0``          :class:`GLMBanditEnv` with its defaults (any keyword can be
                                    passed to ``make``/``make_vec``)
``dpbandits/Figure5.1-v0``          the paper's Figure 5.1 instance: T = 10000, d = 50, K = 2,
                                    s = 5, contexts N(0, 0.05^2 I) at unit l_inf norm, linear
                                    link, N(0, 0.05^2) noise
``dpbandits/Figure5.1-l1-v0``       the same with unit-l_1 contexts — what the authors' code
                                    actually feeds DP-HDB (experiments/fig5_1)
``dpbandits/SparseLinearBandit-v0`` K = 5, d = 20, T = 2000, s = 3, unit l_inf contexts
``dpbandits/LogisticBandit-v0``     K = 3, d = 20, T = 2000, s = 3, logistic link,
                                    theta_scale = 5, Bernoulli rewards
``dpbandits/IrisBandit-v0``         :class:`ClassificationBanditEnv` on Fisher's iris
``dpbandits/DigitsBandit-v0``       the same on scikit-learn's digits (1,797 x 64, K = 10);
                                    this id and the next two need the ``datasets`` extra
                                    (:data:`NEEDS_EXTRA`)
``dpbandits/WineBandit-v0``         the same on wine (178 x 13, K = 3)
``dpbandits/BreastCancerBandit-v0`` the same on breast cancer (569 x 30, K = 2)
=================================== ==========================================================

Logged data (no oracle: :data:`LOGGED_ENV_IDS`): ``dpbandits/Replay-v0`` is
:class:`ReplayBanditEnv`, the replay evaluator of Li, Chu, Langford & Wang (2011) on a
:class:`LoggedBandit` passed as ``log=`` (default: :func:`synthetic_log`, 30,000
uniform-random rounds, K = 3, d = 5); it reveals a logged reward only when the arm played is
the logged action, and ``info`` holds ``accepted`` instead of the pseudo-regret.

Seeding (common random numbers)
-------------------------------
A single environment reset with ``seed=s`` builds ``E = SeedSequence(s)`` and splits it with
``E.spawn(3)`` into an **instance** stream (theta*), a **context** stream (one context per
round) and a **noise** stream (one Gaussian ``z_t`` or uniform ``u_t`` per round); each is
consumed the same way whatever arms are pulled. Two agents run on the same env seed therefore
face the same theta*, the same contexts and the same noise variates. ``reset()`` without a
seed uses ``E = SeedSequence(int(env.np_random.integers(2**63)))``, where ``np_random`` is
Gymnasium's generator (seeded by the last seeded reset).

Replication ``r`` of a vector environment reset with ``seed=s`` is exactly the single
environment reset with ``seed=s + r`` (Gymnasium's ``SyncVectorEnv`` convention; a list of
seeds gives replication ``r`` the seed ``seed[r]``), including every unseeded reset after it.
Streams are drawn ahead in chunks (``chunk_size``) that continue the same sequential streams,
so results never depend on the chunk size.
"""

from __future__ import annotations

import gymnasium

from dpbandits.envs._core import normalize_rows
from dpbandits.envs.classification import (
    DATASETS,
    ClassificationBanditEnv,
    ClassificationBanditVectorEnv,
)
from dpbandits.envs.glm import LINKS, GLMBanditEnv, GLMBanditVectorEnv, link_function
from dpbandits.envs.logged import LoggedBandit, synthetic_log
from dpbandits.envs.replay import (
    LogExhaustedError,
    NonUniformLoggingWarning,
    ReplayBanditEnv,
    ReplayBanditVectorEnv,
)

__all__ = [
    "DATASETS",
    "DESCRIPTIONS",
    "ENV_IDS",
    "LINKS",
    "LOGGED_ENV_IDS",
    "NEEDS_EXTRA",
    "ClassificationBanditEnv",
    "ClassificationBanditVectorEnv",
    "GLMBanditEnv",
    "GLMBanditVectorEnv",
    "LogExhaustedError",
    "LoggedBandit",
    "NonUniformLoggingWarning",
    "ReplayBanditEnv",
    "ReplayBanditVectorEnv",
    "link_function",
    "normalize_rows",
    "register_envs",
    "synthetic_log",
]

_GLM = ("dpbandits.envs.glm:GLMBanditEnv", "dpbandits.envs.glm:GLMBanditVectorEnv")
_CLS = ("dpbandits.envs.classification:ClassificationBanditEnv",
        "dpbandits.envs.classification:ClassificationBanditVectorEnv")
_FIG51 = {"n_arms": 2, "dim": 50, "horizon": 10_000, "link": "identity", "noise": "gaussian",
          "noise_std": 0.05, "context": "gaussian", "context_std": 0.05, "theta": "sparse",
          "sparsity": 5}

#: id -> one-line description (``dpbandits list``)
DESCRIPTIONS = {
    "dpbandits/GLMBandit-v0": "generalized-linear bandit; every keyword of GLMBanditEnv can "
                              "be set",
    "dpbandits/Figure5.1-v0": "Figure 5.1 of the core paper: sparse theta*, Gaussian "
                              "contexts at unit l_inf norm",
    "dpbandits/Figure5.1-l1-v0": "Figure 5.1 with unit-l_1 contexts (what the authors' code "
                                 "feeds DP-HDB)",
    "dpbandits/SparseLinearBandit-v0": "small sparse linear bandit for quick experiments",
    "dpbandits/LogisticBandit-v0": "logistic link with Bernoulli rewards",
    "dpbandits/IrisBandit-v0": "supervised-to-bandit on Fisher's iris (reward 1 for the "
                               "true class)",
    "dpbandits/DigitsBandit-v0": "supervised-to-bandit on the 8x8 digits (needs the datasets "
                                 "extra)",
    "dpbandits/WineBandit-v0": "supervised-to-bandit on wine (needs the datasets extra)",
    "dpbandits/BreastCancerBandit-v0": "supervised-to-bandit on breast cancer (needs the "
                                       "datasets extra)",
}

#: id -> (entry points, default kwargs)
_SPECS = {
    "dpbandits/GLMBandit-v0": (_GLM, {}),
    "dpbandits/Figure5.1-v0": (_GLM, {**_FIG51, "normalization": "linf"}),
    "dpbandits/Figure5.1-l1-v0": (_GLM, {**_FIG51, "normalization": "l1"}),
    "dpbandits/SparseLinearBandit-v0": (_GLM, {"n_arms": 5, "dim": 20, "horizon": 2000,
                                               "sparsity": 3, "normalization": "linf"}),
    "dpbandits/LogisticBandit-v0": (_GLM, {"n_arms": 3, "dim": 20, "horizon": 2000,
                                           "sparsity": 3, "link": "logistic",
                                           "noise": "bernoulli", "theta_scale": 5.0,
                                           "normalization": "linf"}),
    "dpbandits/IrisBandit-v0": (_CLS, {"dataset": "iris"}),
    "dpbandits/DigitsBandit-v0": (_CLS, {"dataset": "digits"}),
    "dpbandits/WineBandit-v0": (_CLS, {"dataset": "wine"}),
    "dpbandits/BreastCancerBandit-v0": (_CLS, {"dataset": "breast_cancer"}),
}
ENV_IDS = tuple(_SPECS)
#: id -> the optional dependency group (``pip install 'dpbandits[<group>]'``) it needs
NEEDS_EXTRA = {env_id: "datasets" for env_id, (_, kwargs) in _SPECS.items()
               if kwargs.get("dataset") in ("digits", "wine", "breast_cancer")}

#: logged-data environments: no oracle, ``info["accepted"]`` instead of the pseudo-regret
_LOGGED_SPECS = {
    "dpbandits/Replay-v0": (("dpbandits.envs.replay:ReplayBanditEnv",
                             "dpbandits.envs.replay:ReplayBanditVectorEnv"), {}),
}
LOGGED_ENV_IDS = tuple(_LOGGED_SPECS)
DESCRIPTIONS["dpbandits/Replay-v0"] = ("replay of a uniform-random log (Li et al. 2011); "
                                       "log=LoggedBandit, default a synthetic log")


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` and :data:`LOGGED_ENV_IDS` (idempotent; called
    on import)."""
    for env_id, ((entry, vector_entry), kwargs) in {**_SPECS, **_LOGGED_SPECS}.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point=entry, vector_entry_point=vector_entry,
                           kwargs=dict(kwargs))


register_envs()

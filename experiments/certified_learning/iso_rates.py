"""How often ``dp-budget-ls``'s isotropy test passes (issue 36, second round): per tuning
instance and epsilon, the share of replications whose released moment is not rejected after
the first and after the second screening release (tuning seeds 5000 + r; the first-release
share is the test applied to that release, which the agent itself does not use).

``python -m experiments.certified_learning.iso_rates [reps]`` (20 in the README).
"""

from __future__ import annotations

import sys

from dpbandits.agents import make_agent
from dpbandits.agents.budget_ls import isotropy_rejected
from dpbandits.harness.compare import compare
from experiments.certified_learning.instances import (
    TUNE_SEED,
    TUNING,
    TUNING_K,
    TUNING_MORE,
    problem_size,
)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    reps = int(argv[0]) if argv else 20
    for name, (env_id, params, _) in {**TUNING, **TUNING_MORE, **TUNING_K}.items():
        K, d = problem_size(params)
        horizon = params.get("horizon", 10_000)
        row = []
        for eps in (0.3, 1.0, 3.0):
            shares = []
            for e in range(2):
                a = make_agent("dp-budget-ls", n_arms=K, dim=d, horizon=horizon, epsilon=eps)
                compare({"b": a}, env_id, horizon=a.episode_ends_[e] + 1, n_reps=reps,
                        seed=TUNE_SEED, env_params=params)
                var = a.sigmas["moment"] ** 2 * (e + 1)
                passed = ~isotropy_rejected(a._M_released, a.episode_ends_[e], var)
                shares.append(f"{passed.mean():.2f}")
            row.append("/".join(shares))
        print(f"{name:24s} passing after release 1/2, eps 0.3 | 1 | 3: {'  '.join(row)}",
              flush=True)


if __name__ == "__main__":
    main()

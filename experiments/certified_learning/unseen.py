"""Issue 36, fourth round: the recommended agent's defaults on instances neither tuned nor
evaluated on before (environment seeds 7000 + r, 16 replications): against the third round's
agent (``iso_weights="equal"``, ``iso_estimate="threshold"``) and ``dp-screened-ls``, ratio
to uniform-random and the paired mean of ``log R_new(T) - log R_old(T)`` with a 95%
bootstrap interval. A check written after the defaults were fixed; nothing is chosen from it.

``python -m experiments.certified_learning.unseen <epsilon>``
"""

from __future__ import annotations

import sys

import numpy as np

from dpbandits.harness.compare import compare
from experiments.certified_learning.instances import _glm

SEED, REPS = 7000, 16
INSTANCES = {
    "iso K2 d30 dense": _glm(2, 30, theta="gaussian"),
    "iso K3 d100 s3": _glm(3, 100, sparsity=3),
    "iso K2 d80 s20": _glm(2, 80, sparsity=20),
    "iso K5 d40 s4": _glm(5, 40, sparsity=4),
    "iso K2 d50 s5 noise 2": _glm(2, 50, sparsity=5, noise_std=2.0),
    "AR(.2) K2 d50 s5 (no mean)": _glm(2, 50, sparsity=5, corr=("AR", 0.2)),
}


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit(__doc__)
    eps = float(argv[0])
    rng = np.random.default_rng(0)
    old = {"epsilon": eps, "iso_weights": "equal", "iso_estimate": "threshold"}
    for name, (env_id, params, _) in INSTANCES.items():
        agents = {"random": ("random", {}), "new": ("dp-budget-ls", {"epsilon": eps}),
                  "old": ("dp-budget-ls", old), "sls": ("dp-screened-ls", {"epsilon": eps})}
        _, _, res = compare(agents, env_id, n_reps=REPS, seed=SEED, env_params=params)
        base = res["random"].cum_regret[:, -1].mean()
        final = {k: res[k].cum_regret[:, -1] for k in ("new", "old", "sls")}
        diff = np.log(final["new"]) - np.log(final["old"])
        boot = [diff[rng.integers(0, REPS, REPS)].mean() for _ in range(2000)]
        print(f"{name:28s} new {final['new'].mean() / base:.3f} "
              f"old {final['old'].mean() / base:.3f} sls {final['sls'].mean() / base:.3f} | "
              f"new-old {diff.mean():+.3f} [{np.quantile(boot, .025):+.3f}, "
              f"{np.quantile(boot, .975):+.3f}]", flush=True)


if __name__ == "__main__":
    main()

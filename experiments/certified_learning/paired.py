"""Paired comparison of dp-moment-ls variants on tuning instances (issue 26, third round):
per instance, each variant's ratio to uniform-random and the mean over replications of
``log R_variant(T) - log R_base(T)`` (same environment seeds 5000 + r, common random
numbers) with a 95% bootstrap interval, then the mean over instances. Never run on an
evaluation instance or seed.

``python -m experiments.certified_learning.paired '<json agents, one "base">' <instances> <reps>``,
e.g. the run behind the third round's ``screen_per_arm`` (``logs/round3_r7.log``)::

    python -m experiments.certified_learning.paired \\
        '{"base": ["dp-moment-ls", {"screen_per_arm": 1}], \\
          "spa4": ["dp-moment-ls", {"screen_per_arm": 4}]}' \\
        tune-ar3-K6-d48-s4,tune-ar4-K6-d24-s3,tune-iso-K8-d32-s3 16

(``screen_per_arm = 1`` gives the former default ``|S| = min(d, 16)`` for ``K <= 16``; at
the time of that run it was the agent's default and ``"base"`` was ``{}``.)
"""

from __future__ import annotations

import json
import sys

import numpy as np

from dpbandits.harness.compare import compare
from dpbandits.harness.simulate import env_reward_range, make_env
from experiments.certified_learning.instances import TUNE_SEED
from experiments.certified_learning.tune_moment import INSTANCES
from experiments.certified_learning.variants import build


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    agents = json.loads(argv[0])
    insts, reps = argv[1].split(","), int(argv[2])
    rng = np.random.default_rng(0)
    diffs: dict[str, list] = {k: [] for k in agents if k != "base"}
    for inst in insts:
        env_id, params, _ = INSTANCES[inst]
        declared = env_reward_range(make_env(env_id, 1, params))
        specs = {"random": ("random", {}),
                 **{k: build(name, kw, params, declared) for k, (name, kw) in agents.items()}}
        _, _, res = compare(specs, env_id, n_reps=reps, seed=TUNE_SEED, env_params=params)
        final = {k: v.cum_regret[:, -1] for k, v in res.items()}
        rate = final["random"].mean()
        for k in diffs:
            d = np.log(final[k]) - np.log(final["base"])
            boot = [rng.choice(d, d.size).mean() for _ in range(2000)]
            diffs[k].append(d.mean())
            print(f"{inst:22s} {k:8s} base {final['base'].mean() / rate:.3f} {k} "
                  f"{final[k].mean() / rate:.3f} paired mean log diff {d.mean():+.3f} "
                  f"[{np.quantile(boot, .025):+.3f}, {np.quantile(boot, .975):+.3f}]",
                  flush=True)
    for k, ds in diffs.items():
        print(k, "mean over instances of paired per-rep log diff", f"{np.mean(ds):+.3f}")


if __name__ == "__main__":
    main()

"""How ``dp-moment-ls``'s defaults were chosen, and where its privacy noise bites: the
measurements behind the README section on issue 26 (never on an evaluation instance or seed).

``python -m experiments.certified_learning.tune_moment '<json agents>' [instances] [reps]``
prints, per tuning instance (:data:`instances.TUNING` and :data:`instances.TUNING_MORE`,
environment seeds 5000 + r), every agent's ratio to uniform-random overall and per segment of
rounds (0-500, 500-1500, 1500-3500, 3500-7500, 7500-1e4: the episodes at T = 1e4), then the
mean log ratio over the instances (the objective of ``tune.py``). ``<json agents>`` maps a
label to ``[registry name, params]``, resolved by :func:`variants.build`: the name
``noise-ablation`` is a diagnostic twin of ``dp-moment-ls`` (**not private**) whose noise
scales named in ``zero`` are set to 0, to see which release's noise costs regret, and
``dp-moment-ls`` with one of the research options of the third to fifth rounds is
:class:`variants.MomentLSVariants`. The runs of the README used 6 replications::

    python -m experiments.certified_learning.tune_moment \
        '{"base": ["dp-moment-ls", {}], "rs3": ["dp-moment-ls", {"ridge_screen": 3}]}'
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from dpbandits.harness.compare import compare
from dpbandits.harness.simulate import env_reward_range, make_env
from experiments.certified_learning.instances import (
    TUNE_SEED,
    TUNING,
    TUNING_K,
    TUNING_MORE,
)
from experiments.certified_learning.variants import NoiseAblation, build

__all__ = ["NoiseAblation", "build", "run"]

SEGMENTS = (0, 500, 1500, 3500, 7500, 10_000)
#: the six instances of the mean log ratio (the default list)
DEFAULT = [*TUNING, *TUNING_MORE]
#: every tuning instance a run may name (``TUNING_K``: the many-arm ones, third round)
INSTANCES = {**TUNING, **TUNING_MORE, **TUNING_K}


def run(agents: dict, instances: list[str], reps: int) -> dict:
    out = {}
    for inst in instances:
        env_id, env_params, _ = INSTANCES[inst]
        declared = env_reward_range(make_env(env_id, 1, env_params))
        specs = {label: build(name, params, env_params, declared)
                 for label, (name, params) in agents.items()}
        _, _, res = compare({"random": ("random", {}), **specs}, env_id, n_reps=reps,
                            seed=TUNE_SEED, env_params=env_params)
        rate = res["random"].regret.mean()
        for label in agents:
            r = res[label]
            segs = [r.regret[:, a:b].mean() / rate for a, b in zip(SEGMENTS[:-1], SEGMENTS[1:],
                                                                  strict=True)]
            out[(inst, label)] = r.regret.mean() / rate
            print(f"{inst:22s} {label:24s} {out[(inst, label)]:.3f} | "
                  + " ".join(f"{s:.2f}" for s in segs), flush=True)
    for label in agents:
        print(f"mean log ratio {label:24s} "
              f"{np.mean([math.log(out[(i, label)]) for i in instances]):+.3f}")
    return out


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    agents = {k: tuple(v) for k, v in json.loads(argv[0]).items()}
    instances = argv[1].split(",") if len(argv) > 1 else DEFAULT
    reps = int(argv[2]) if len(argv) > 2 else 6
    run(agents, instances, reps)


if __name__ == "__main__":
    main()

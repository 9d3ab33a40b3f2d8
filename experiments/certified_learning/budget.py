"""Issue 36: what the certified learners reach on digits (1,797 users, K = 10, d = 64), or on
a synthetic instance of the study, as epsilon grows, and the budget rule's Gram
signal-to-noise ratio at each epsilon: where the privacy noise stops being the limit.
Digits: one pass over the data (T = 1,797, delta = 1/T); a synthetic instance: T = 1e4.
Environment seeds 0 + r (evaluation seeds: a measurement of what is reachable, nothing is
chosen from it).

``python -m experiments.certified_learning.budget digits [reps]`` or
``python -m experiments.certified_learning.budget reach <instance> [reps] [eps,eps,...]`` (an
instance of ``moment.INSTANCES``, e.g. ``eq3-K2-d100-s10``; the epsilons default to
:data:`EPSILONS`) prints one row per (agent, epsilon): ratio to
uniform-random with its paired-bootstrap 95% interval, the certified epsilon recomputed from
the ledger, and dp-budget-ls's first fitting episode and ``snr`` of its episodes
(:mod:`dpbandits.agents.budget_ls`).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from dpbandits.agents import make_agent
from dpbandits.harness.compare import compare
from dpbandits.harness.simulate import env_sizes, make_env
from experiments.certified_learning.instances import EVAL_SEED

DIGITS = "dpbandits/DigitsBandit-v0"
EPSILONS = (1.0, 3.0, 10.0, 30.0, 100.0)


def snr_row(K: int, d: int, T: int, eps: float) -> str:
    a = make_agent("dp-budget-ls", n_arms=K, dim=d, horizon=T, epsilon=eps)
    lengths = np.diff([0, *a.episode_ends_])
    ratios = [(n / a._p) / (2 * a.sigmas["gram"] * math.sqrt(K * a._p)) for n in lengths]
    return (f"first fit at episode {a.screen_episodes_} of {len(lengths)}; snr per episode "
            + " ".join(f"{r:.2f}" for r in ratios))


def digits(reps: int) -> None:
    reach(DIGITS, None, reps)


def reach(env_id: str, env_params: dict | None, reps: int,
          epsilons: tuple[float, ...] = EPSILONS) -> None:
    K, d, T = env_sizes(make_env(env_id, 1, env_params))
    rng = np.random.default_rng(0)
    for eps in epsilons:
        agents = {"random": ("random", {}),
                  "dp-budget-ls": ("dp-budget-ls", {"epsilon": eps}),
                  "dp-moment-ls": ("dp-moment-ls", {"epsilon": eps}),
                  "dp-screened-ls": ("dp-screened-ls", {"epsilon": eps})}
        _, _, res = compare(agents, env_id, n_reps=reps, seed=EVAL_SEED, env_params=env_params)
        base = res["random"].cum_regret[:, -1]
        print(f"epsilon {eps:g}: {snr_row(K, d, T, eps)}", flush=True)
        for label in list(agents)[1:]:
            final = res[label].cum_regret[:, -1]
            boot = [final[i].mean() / base[i].mean()
                    for i in (rng.integers(0, reps, reps) for _ in range(2000))]
            cert = res[label].certified["epsilon"]
            print(f"  {label:15s} {final.mean() / base.mean():.3f} "
                  f"[{np.quantile(boot, .025):.3f}, {np.quantile(boot, .975):.3f}] "
                  f"certified eps {cert:.6g}", flush=True)
    lin = compare({"random": ("random", {}), "linucb": ("linucb", {})}, env_id, n_reps=reps,
                  seed=EVAL_SEED, env_params=env_params)[2]
    ratio = lin["linucb"].cum_regret[:, -1].mean() / lin["random"].cum_regret[:, -1].mean()
    print(f"linucb (not private) {ratio:.3f}")


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["digits"]:
        digits(int(argv[1]) if len(argv) > 1 else 20)
    elif argv[:1] == ["reach"] and len(argv) > 1:
        from experiments.certified_learning.moment import INSTANCES
        env_id, env_params, _ = INSTANCES[argv[1]]
        epsilons = tuple(map(float, argv[3].split(","))) if len(argv) > 3 else EPSILONS
        reach(env_id, env_params, int(argv[2]) if len(argv) > 2 else 20, epsilons)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()

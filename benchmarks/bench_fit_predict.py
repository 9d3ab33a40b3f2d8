"""``linucb``'s ``fit`` + ``predict`` on a logged stream against MABWiser's LinUCB (issue 28:
at least as fast as MABWiser in batch, the row-by-row lead kept).

The stream: every row of a dataset (digits: 1,797 x 64, K = 10; breast cancer: 569 x 30,
K = 2; scikit-learn's bundled copies) with a uniformly random logged arm (seed 0) and reward
1 when it is the row's class. Both libraries play the same rule (MABWiser's radius
``alpha = 1``: ``noise_std`` 1e-12, ``theta_bound`` 1, ``reg`` = ``l2_lambda`` = 1, see
docs/real-data.md) and the arms they predict are compared. Timed, minimum over ``--repeat``:

* ``batch``: ``fit`` on all rows, then ``predict`` on all rows (one call each);
* ``row_by_row``: ``partial_fit`` and ``predict`` one row at a time over the first
  ``--rows`` rows (the online use).

MABWiser is optional: without it (``pip install mabwiser``) its columns say why they are
missing. Every timed call follows one untimed call (numba's kernels compiled or loaded).
Prints one JSON object.

Usage: ``python -m benchmarks.bench_fit_predict [--repeat N] [--rows N]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time

import numpy as np

DATASETS = ("digits", "breast_cancer")


def logged_stream(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(X, arms, rewards, K)``: the dataset's rows, uniform logged arms, 0/1 rewards."""
    from dpbandits.envs._datasets import load_dataset

    X, y = load_dataset(name)
    K = int(y.max()) + 1
    arms = np.random.default_rng(0).integers(0, K, len(y))
    return np.asarray(X, dtype=float), arms, (arms == y).astype(float), K


def _ours(K: int, d: int, n: int, backend: str):
    from dpbandits.agents import make_agent

    return make_agent("linucb", n_arms=K, dim=d, horizon=n, noise_std=1e-12,
                      theta_bound=1.0, reg=1.0, exploration_scale=1.0, backend=backend)


def _theirs(K: int):
    from mabwiser.mab import MAB, LearningPolicy

    return MAB(arms=list(range(K)), learning_policy=LearningPolicy.LinUCB(alpha=1.0,
                                                                          l2_lambda=1.0),
               seed=0)


def _best(fn, repeat: int) -> tuple[float, object]:
    """The minimum time of ``repeat`` calls after one untimed call (numba's kernels compile
    or load from their cache on the first)."""
    times, out = [], fn()
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def bench_dataset(name: str, repeat: int, rows: int) -> dict:
    X, arms, rewards, K = logged_stream(name)
    n, d = X.shape
    row: dict = {"dataset": name, "n": n, "d": d, "K": K}
    for backend in ("auto", "numpy"):
        def batch(backend=backend):
            return _ours(K, d, n, backend).fit(X, arms, rewards, rng=0).predict(X)

        def online(backend=backend):
            agent, out = _ours(K, d, n, backend), []
            agent.partial_fit(X[:1], arms[:1], rewards[:1], rng=0)
            for i in range(1, rows):
                out.append(agent.predict(X[i:i + 1])[0])
                agent.partial_fit(X[i:i + 1], arms[i:i + 1], rewards[i:i + 1])
            return np.array(out)

        row[f"dpbandits_{backend}_batch_s"], ours_batch = _best(batch, repeat)
        row[f"dpbandits_{backend}_row_by_row_s"], ours_online = _best(online, repeat)
    if importlib.util.find_spec("mabwiser") is None:
        row["mabwiser"] = "skipped: MABWiser is not installed (pip install mabwiser)"
        return row

    def their_batch():
        mab = _theirs(K)
        mab.fit(arms, rewards, X)
        return np.asarray(mab.predict(X))

    def their_online():
        mab, out = _theirs(K), []
        mab.fit(arms[:1], rewards[:1], X[:1])
        for i in range(1, rows):
            out.append(mab.predict(X[i:i + 1]))
            mab.partial_fit(arms[i:i + 1], rewards[i:i + 1], X[i:i + 1])
        return np.array(out)

    row["mabwiser_batch_s"], theirs_batch = _best(their_batch, repeat)
    row["mabwiser_row_by_row_s"], theirs_online = _best(their_online, repeat)
    row["batch_speedup_vs_mabwiser"] = round(row["mabwiser_batch_s"]
                                             / row["dpbandits_auto_batch_s"], 2)
    row["row_by_row_speedup_vs_mabwiser"] = round(row["mabwiser_row_by_row_s"]
                                                  / row["dpbandits_auto_row_by_row_s"], 2)
    row["batch_arms_agree"] = float(np.mean(np.asarray(theirs_batch) == ours_batch))
    row["row_by_row_arms_agree"] = float(np.mean(np.asarray(theirs_online) == ours_online))
    return row


def bench(repeat: int = 3, rows: int = 300) -> dict:
    load = os.getloadavg()
    out = {"benchmark": "fit_predict", "repeat": repeat, "row_by_row_rows": rows,
           "load_before": load}
    if importlib.util.find_spec("mabwiser") is not None:
        from importlib import metadata

        out["mabwiser_version"] = metadata.version("mabwiser")
    if importlib.util.find_spec("sklearn") is None:
        out["skipped"] = "the datasets need scikit-learn (pip install 'dpbandits[datasets]')"
        return out
    out["datasets"] = [bench_dataset(name, repeat, rows) for name in DATASETS]
    out["load_after"] = os.getloadavg()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=300, help="rows of the row-by-row loop")
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.repeat, args.rows), indent=2))


if __name__ == "__main__":
    main()

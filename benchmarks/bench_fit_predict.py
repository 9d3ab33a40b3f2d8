"""``linucb``'s ``fit`` + ``predict`` on a logged stream against MABWiser's LinUCB (issue 28:
at least as fast as MABWiser in batch, the row-by-row lead kept).

The stream: every row of a dataset (digits: 1,797 x 64, K = 10; breast cancer: 569 x 30,
K = 2; scikit-learn's bundled copies) with a uniformly random logged arm (seed 0) and reward
1 when it is the row's class. Both libraries play the same rule (MABWiser's radius
``alpha = 1``: ``noise_std`` 1e-12, ``theta_bound`` 1, ``reg`` = ``l2_lambda`` = 1, see
docs/real-data.md) and the arms they predict are compared. Timed:

* ``batch``: ``fit`` on all rows, then ``predict`` on all rows (one call each);
* ``row_by_row``: ``partial_fit`` and ``predict`` one row at a time over the first
  ``--rows`` rows (the online use).

The cases take turns, ``--repeat`` rounds of one call each, so a change of the machine's load
hits all of them alike; each reports its minimum (``*_s``) and median (``*_median_s``).

MABWiser is optional: without it (``pip install mabwiser``) its columns say why they are
missing. Every timed call follows one untimed call (numba's kernels compiled or loaded);
``*_batch_first_s`` is that first call's time: in a fresh process, numba's import and its
kernels loaded from the on-disk cache, or compiled when the cache is empty (the first run
after an install or a change to the kernels). Prints one JSON object.

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


def _timed(fns: dict, repeat: int) -> dict:
    """``name -> (min time, median time, result, first call's time)`` of each function: one
    first call each (numba's kernels compile or load from their cache), then ``repeat``
    rounds calling every function once in turn, so a change of the machine's load hits all
    of them alike."""
    out, times = {}, {name: [] for name in fns}
    for name, fn in fns.items():
        start = time.perf_counter()
        result = fn()
        out[name] = result, time.perf_counter() - start
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: (min(times[name]), float(np.median(times[name])), *out[name])
            for name in fns}


def bench_dataset(name: str, repeat: int, rows: int) -> dict:
    X, arms, rewards, K = logged_stream(name)
    n, d = X.shape
    row: dict = {"dataset": name, "n": n, "d": d, "K": K}
    fns = {}
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

        fns[f"dpbandits_{backend}_batch"] = batch
        fns[f"dpbandits_{backend}_row_by_row"] = online
    have_mabwiser = importlib.util.find_spec("mabwiser") is not None
    if have_mabwiser:
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

        fns["mabwiser_batch"] = their_batch
        fns["mabwiser_row_by_row"] = their_online
    timed = _timed(fns, repeat)
    for key, (best, median, _, first) in timed.items():
        row[f"{key}_s"] = best
        row[f"{key}_median_s"] = median
        if key.endswith("_batch"):
            row[f"{key}_first_s"] = first
    if not have_mabwiser:
        row["mabwiser"] = "skipped: MABWiser is not installed (pip install mabwiser)"
        return row
    row["batch_speedup_vs_mabwiser"] = round(row["mabwiser_batch_s"]
                                             / row["dpbandits_auto_batch_s"], 2)
    row["row_by_row_speedup_vs_mabwiser"] = round(row["mabwiser_row_by_row_s"]
                                                  / row["dpbandits_auto_row_by_row_s"], 2)
    for mode in ("batch", "row_by_row"):
        ours, theirs = timed[f"dpbandits_auto_{mode}"][2], timed[f"mabwiser_{mode}"][2]
        row[f"{mode}_arms_agree"] = float(np.mean(np.asarray(theirs) == ours))
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

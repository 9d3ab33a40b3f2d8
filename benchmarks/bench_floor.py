"""The floor under the demo's three DP-UCB simulations (issue 37), against the agents.

What every round must do, timed alone at the demo's sizes, against the agent's simulation.

Every round of DP-UCB completes one tree node, whose noise is fresh, and releases a noisy
Gram matrix that must be factored once per replication. So per round and replication:

- ``dp-ucb-authors-code``: ``D (D + 1) / 2 + D`` standard normals (the symmetric ``Z`` and the
  noise of ``u``) and one symmetric indefinite solve (``dsysv``) of the ``D``-square
  ``G + Z`` with ``K + 1`` right-hand sides;
- ``dp-ucb`` (Gaussian nodes): ``n (n + 1) / 2`` normals (``n = D + 1``: the node of
  ``[phi; y]``) and one Cholesky factorization (``dpotrf``) of ``V_t`` plus its solve
  (``dpotrs``) with ``K + 1`` right-hand sides;
- ``dp-ucb`` (Wishart nodes): two Wishart draws (the node and the release's top-up), each
  ``n (n - 1) / 2`` normals, ``n`` chi-squares and ``U U^T`` (``dlauum``), and the same
  Cholesky factorization and solve.

The floor is these primitives alone, each in CPU seconds: the variates from numpy's
``Generator`` in blocks of rounds (as :class:`dpbandits.privacy.streams.ChunkedDraws` draws
them), the LAPACK routines from a compiled loop over rounds and replications on a fixed
well-conditioned matrix (copied in before each call, as the kernels form the release). The
agent's row is :func:`dpbandits.harness.simulate` on ``dpbandits/Figure5.1-v0`` (d = 50,
K = 2, so D = 100), CPU seconds of the whole process (its drawing thread included), after a
short warm-up run that compiles the kernels. ``ratio`` = agent / floor: what is left to take
out without changing the distribution of a draw or the factorization.

Usage: ``python -m benchmarks.bench_floor [--reps 10] [--horizon 10000]`` (the demo's small
preset). Prints one JSON object.
"""

from __future__ import annotations

import functools
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks._cli import run  # noqa: E402

ENV_ID = "dpbandits/Figure5.1-v0"
#: label -> (agent, params)
CASES = {
    "dp-ucb-authors-code": ("dp-ucb-authors-code", {}),
    "dp-ucb-gaussian": ("dp-ucb", {"noise": "gaussian", "calibration": "accountant"}),
    "dp-ucb-wishart": ("dp-ucb", {"noise": "wishart"}),
}
#: rounds per block of variates
_BLOCK = 64


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _variates(R: int, T: int, normals: int, chisquares: int, seed: int = 0) -> float:
    """CPU seconds to draw ``normals`` standard normals and ``chisquares`` chi-squares
    (df 50..150) per round and replication for ``T`` rounds, a block of rounds per call."""
    g = np.random.default_rng(seed)
    df = np.linspace(50.0, 150.0, max(chisquares, 1))[:chisquares]

    def draw():
        for start in range(0, T, _BLOCK):
            b = min(_BLOCK, T - start)
            g.standard_normal((b, R, normals))
            if chisquares:
                g.chisquare(np.broadcast_to(df, (b, R, chisquares)))
    return _cpu(draw)


@functools.cache
def _kernels():
    """The compiled loops over LAPACK calls (compiled once per process)."""
    import numba

    from dpbandits._lapack import chol_solve_upper, chol_upper, lauum_upper, sym_solve_upper

    @numba.njit(cache=False)
    def sym_solves(base, rhs, calls):  # pragma: no cover - compiled
        a, b = np.empty_like(base), np.empty_like(rhs)
        ipiv = np.zeros(base.shape[0], dtype=np.int32)
        work = np.zeros(64 * base.shape[0])
        for _ in range(calls):
            a[:] = base
            b[:] = rhs
            sym_solve_upper(a, b, ipiv, work)

    @numba.njit(cache=False)
    def chol_solves(base, rhs, calls):  # pragma: no cover - compiled
        a, b = np.empty_like(base), np.empty_like(rhs)
        for _ in range(calls):
            a[:] = base
            b[:] = rhs
            chol_upper(a)
            chol_solve_upper(a, b)

    @numba.njit(cache=False)
    def lauums(base, calls):  # pragma: no cover - compiled
        a = np.empty_like(base)
        for _ in range(calls):
            a[:] = base
            lauum_upper(a)

    return sym_solves, chol_solves, lauums


def _floor(case: str, R: int, T: int, D: int, K: int) -> dict:
    """CPU seconds of the primitives of ``case`` (module docstring) for ``R x T`` rounds."""
    sym_solves, chol_solves, lauums = _kernels()
    g = np.random.default_rng(1)
    x = g.standard_normal((D + 1, D + 1))
    spd = x @ x.T + (D + 1) * np.eye(D + 1)
    rhs = g.standard_normal((K + 1, D))
    V, n, calls = spd[:D, :D].copy(), D + 1, R * T
    sym_solves(V, rhs, 2), chol_solves(V, rhs, 2), lauums(spd, 2)  # compile
    if case == "dp-ucb-authors-code":
        out = {"variates": _variates(R, T, D * (D + 1) // 2 + D, 0),
               "dsysv": _cpu(lambda: sym_solves(V, rhs, calls))}
    elif case == "dp-ucb-gaussian":
        out = {"variates": _variates(R, T, n * (n + 1) // 2, 0),
               "dpotrf+dpotrs": _cpu(lambda: chol_solves(V, rhs, calls))}
    else:
        out = {"variates": 2 * _variates(R, T, n * (n - 1) // 2, n),
               "dlauum": 2 * _cpu(lambda: lauums(np.triu(spd), calls)),
               "dpotrf+dpotrs": _cpu(lambda: chol_solves(V, rhs, calls))}
    return {k: round(v, 2) for k, v in out.items()}


def _agent(name: str, params: dict, R: int, T: int) -> float:
    from dpbandits.harness import simulate

    simulate(ENV_ID, name, horizon=min(T, 50), n_reps=R, seed=0, agent_params=params)
    return _cpu(lambda: simulate(ENV_ID, name, horizon=T, n_reps=R, seed=0,
                                 agent_params=params))


def bench(reps: int = 10, horizon: int = 10_000) -> dict:
    import gymnasium

    import dpbandits.envs  # noqa: F401  (registers the environments)

    env = gymnasium.make(ENV_ID).unwrapped
    D, K = env.dim * env.n_arms, env.n_arms
    rows = {}
    for label, (name, params) in CASES.items():
        floor = _floor(label, reps, horizon, D, K)
        agent = _agent(name, params, reps, horizon)
        total = sum(floor.values())
        rows[label] = {"agent_cpu_s": round(agent, 2), "floor_cpu_s": round(total, 2),
                       "floor_parts": floor, "ratio": round(agent / total, 2)}
    return {"benchmark": "floor", "reps": reps, "horizon": horizon, "D": D,
            "load": os.getloadavg(), "cases": rows}


if __name__ == "__main__":
    run(bench, __doc__, reps=10, horizon=10_000)

"""Fingerprints of short fixed-seed runs of every component that draws privacy noise: a
sha256 of the arms, iterates and released arrays (and of every float array an agent holds
after its run). ``tests/test_noise_streams.py`` compares them with the values measured on the
code before the noise samplers were merged into :mod:`dpbandits.privacy.noise`, so a rerouted
component that kept its random stream is bit-identical.

Run ``python tests/_streams.py`` to print the current fingerprints."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

import numpy as np

from dpbandits.agents import agent_class, available_agents, make_agent
from dpbandits.optim import OPTIMIZERS
from dpbandits.testing import (
    _agent_stream,
    _batch_run,
    _play,
    _streaming_run,
    instance_for_checks,
    problem_for_checks,
)

R = 3


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _agent_run(agent) -> str:
    arms = _play(agent, R, 0, _agent_stream(agent, R, 0))[0]
    state = [v for _, v in sorted(vars(agent).items())
             if isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    return _digest(arms, *state)


def _optimizer_run(opt) -> str:
    problem = problem_for_checks(opt, n_reps=R)
    runner = _streaming_run if len(problem) == 2 else _batch_run
    return _digest(*runner(opt, R, 0, problem))


def _agents() -> dict[str, Callable[[], str]]:
    out: dict[str, Callable[[], str]] = {}
    for name in available_agents():
        out[f"agent:{name}"] = (lambda n=name: _agent_run(instance_for_checks(agent_class(n))))
    out["agent:dp-ucb-wishart"] = lambda: _agent_run(make_agent(
        "dp-ucb", n_arms=2, dim=3, horizon=64, noise="wishart", epsilon=1.0))
    out["agent:dp-hdb-gumbel"] = lambda: _agent_run(make_agent(
        "dp-hdb", n_arms=2, dim=5, horizon=100, calibration="accountant",
        optimizer_params={"selection": "gumbel"}))
    return out


def _optimizers() -> dict[str, Callable[[], str]]:
    out: dict[str, Callable[[], str]] = {}
    for name in sorted(OPTIMIZERS):
        out[f"optim:{name}"] = (lambda n=name: _optimizer_run(instance_for_checks(OPTIMIZERS[n])))
    out["optim:dp-pofw-gumbel"] = lambda: _optimizer_run(OPTIMIZERS["dp-pofw"](
        **{**dict(getattr(OPTIMIZERS["dp-pofw"], "_test_params", {})),
           "selection": "gumbel", "calibration": "accountant"}))
    return out


def _samplers() -> dict[str, Callable[[], str]]:
    from dpbandits.privacy import mechanisms as m
    from dpbandits.privacy.peeling import peel

    def g():
        return np.random.default_rng(2026)

    scores = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    return {
        "mech:laplace_noise": lambda: _digest(m.laplace_noise(g(), 0.7, (5, 3))),
        "mech:gaussian_noise": lambda: _digest(m.gaussian_noise(g(), 0.7, (5, 3))),
        # the law of (Z + Z^T)/sqrt 2 (formerly symmetric_gaussian_matrix(g, 0.7, 4, (2, 3)))
        "mech:symmetric_gaussian(goe)": lambda: _digest(m.symmetric_gaussian(
            g(), 4, sigma_off=0.7, sigma_diag=0.7 * math.sqrt(2.0), size=(2, 3))),
        "mech:wishart_matrix": lambda: _digest(m.wishart_matrix(g(), 4, 6.5, 0.3, (2, 3))),
        "mech:report_noisy_argmax": lambda: _digest(m.report_noisy_argmax(g(), scores, 0.5)),
        "mech:report_noisy_argmin": lambda: _digest(m.report_noisy_argmin(g(), scores, 0.5)),
        "mech:exponential_mechanism": lambda: _digest(
            m.exponential_mechanism(g(), scores, 0.5)),
        "mech:generalized_gaussian_noise": lambda: _digest(
            m.generalized_gaussian_noise(g(), 0.7, 1.5, 4, (3,))),
        "mech:peel": lambda: _digest(*(np.asarray(v) for v in vars(
            peel(g(), np.arange(24.0).reshape(3, 8) - 10.0, 3, 0.5)).values())),
        "offpolicy:release": lambda: _digest(_private_release(g())),
    }


def _private_release(rng) -> np.ndarray:
    from dpbandits.offpolicy.private import PrivateEstimator

    est = PrivateEstimator("ips", epsilon=1.0, delta=1e-5, max_weight=5.0)
    return est.release(np.array([0.25]), 100, rng, size=7)


def fingerprints() -> dict[str, Callable[[], str]]:
    """name -> a function computing that component's fingerprint."""
    return {**_agents(), **_optimizers(), **_samplers()}


if __name__ == "__main__":  # pragma: no cover - prints the table of the test
    for key, run in fingerprints().items():
        print(f'    "{key}": "{run()}",')

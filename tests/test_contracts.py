"""Every registered agent, optimizer and environment passes the contract checks of
``dpbandits.testing``, one pytest case per (component, named check) (new components are
picked up automatically, with the test sizes their classes declare), and the checks catch
broken components."""

from __future__ import annotations

import dp_accounting
import gymnasium
import numpy as np
import pytest
from _agents import RandomArms
from _extras import skip_without_extra

import dpbandits  # noqa: F401  (registers the environments)
from dpbandits.agents import agent_class, available_agents
from dpbandits.optim import OPTIMIZERS
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.testing import (
    CHECKS,
    ContractError,
    _is_private,
    agent_checks,
    check_agent,
    check_claims,
    check_env,
    check_fit_predict,
    check_optimizer,
    instance_for_checks,
    optimizer_checks,
    parametrize_with_checks,
)

R, D = 3, 5


def _components():
    """One instance of every registered agent and optimizer, built from its class's
    ``_test_params`` (new ones are picked up automatically)."""
    agents = [instance_for_checks(agent_class(name)) for name in available_agents()]
    return agents + [instance_for_checks(OPTIMIZERS[name]) for name in sorted(OPTIMIZERS)]


@parametrize_with_checks(_components(), n_reps=R)
def test_every_registered_component_passes(component, check):
    check(component)


def test_every_check_that_exists_runs_on_every_component():
    """One pytest case per (component, check): every agent gets every agent check (the
    privacy-only ones when private), every optimizer every optimizer check."""
    names = {c.name for c in CHECKS.values()}
    assert {"check_fit_then_predict", "check_privacy_claim", "check_adversarial_inputs",
            "check_optimizer_clone", "check_env_seeding"} <= names
    for component in _components():
        ran = {name for name, _ in (agent_checks(component) if hasattr(component, "n_arms")
                                    else optimizer_checks(component))}
        kind = "agent" if hasattr(component, "n_arms") else "optimizer"
        private = _is_private(component)
        want = {c.name for c in CHECKS.values()
                if kind in c.kinds and (private or not c.private)}
        assert ran == want, type(component).__name__


@pytest.mark.parametrize("env_id", sorted(e for e in gymnasium.registry
                                          if e.startswith("dpbandits/")))
def test_every_registered_environment_passes(env_id):
    skip_without_extra(env_id)
    check_env(env_id, n_reps=R)


# -- the checks can fail ------------------------------------------------------------------
class GlobalRandom(RandomArms):
    """Draws from numpy's global state instead of the rng it was given."""

    def act(self, contexts):
        return np.random.randint(0, self.n_arms, len(contexts))  # noqa: NPY002 (the bug)


class Sticky(RandomArms):
    """Keeps a round counter across reset: the second run starts where the first ended."""

    seen = 0

    def act(self, contexts):
        return np.full(len(contexts), (self.seen // 3) % 2)

    def _update(self, contexts, arms, rewards):
        self.seen += 1


class SeedBlind(RandomArms):
    """Claims privacy but its 'noise' ignores the seed."""

    def act(self, contexts):
        return (contexts[:, 0] > 0).astype(np.int64)

    @property
    def privacy(self):
        return PrivacyGuarantee(1.0, 1e-3, notion="JDP", basis="a theorem")


class Overclaimed(SeedBlind):
    """Its ledger supports far more than the epsilon it claims."""

    def act(self, contexts):
        return self.rng.integers(0, self.n_arms, len(contexts))

    @property
    def ledger(self):
        return dp_accounting.LaplaceDpEvent(noise_multiplier=0.1)


class NoBasis(Overclaimed):
    @property
    def ledger(self):
        return None

    @property
    def privacy(self):
        return PrivacyGuarantee(1.0, 1e-3, notion="JDP", basis=" ")


@pytest.mark.parametrize("cls, words", [
    (GlobalRandom, "same seed must reproduce"),
    (Sticky, "same seed must reproduce"),
    (SeedBlind, "must depend on its seed"),
    (Overclaimed, "above the claimed epsilon"),
    (NoBasis, "basis must name"),
])
def test_check_agent_catches_broken_agents(cls, words):
    with pytest.raises(ContractError, match=words):
        check_agent(cls(n_arms=2, dim=D, horizon=40))


class PredictActs(RandomArms):
    """predict acts on the agent itself: it advances the agent's generator."""

    def predict(self, contexts):
        return np.array([self.act(row[None])[0] for row in np.asarray(contexts)])


class FitSkipsRows(RandomArms):
    """fit learns from every other row only."""

    def _reset(self, n_reps, rng):
        super()._reset(n_reps, rng)
        self.total = np.zeros(n_reps)

    def act(self, contexts):  # what was learnt: ~T/2 = 20 on all 40 rows, ~10 on half
        return (self.total > 15.0).astype(np.int64)

    def _update(self, contexts, arms, rewards):
        self.total += rewards

    def fit(self, contexts, arms, rewards, *, rng):
        return super().fit(contexts[::2], arms[::2], rewards[::2], rng=rng)


class FitPastHorizon(RandomArms):
    """partial_fit learns the rows it can before refusing the rest."""

    def partial_fit(self, contexts, arms, rewards, *, rng=None):
        if rng is not None:
            self.reset(1, np.random.default_rng(rng))
        for t in range(len(contexts)):
            self.update(contexts[t:t + 1], arms[t:t + 1], rewards[t:t + 1])
        return self


@pytest.mark.parametrize("cls, words", [
    (PredictActs, "predict must leave the agent unchanged"),
    (FitSkipsRows, "fit then predict must equal"),
    (FitPastHorizon, "refused rows must not be learnt"),
])
def test_check_fit_predict_catches_broken_agents(cls, words):
    with pytest.raises(ContractError, match=words):
        check_fit_predict(cls(n_arms=2, dim=D, horizon=40))


def test_check_optimizer_catches_a_seed_blind_optimizer():
    from dpbandits.optim import DPPOFW

    class Frozen(DPPOFW):
        def reset(self, n_reps, rng):
            return super().reset(n_reps, np.random.default_rng(0))  # ignores rng

    with pytest.raises(ContractError, match="must depend on its seed"):
        check_optimizer(instance_for_checks(Frozen), n_reps=R)


def _naive_normalize_rows(x, q, bound):
    """The row normalization dp-screened-ls used before issue 25: ``sqrt(sum x_i^2)``."""
    norm = np.sqrt(np.einsum("...i,...i->...", x, x))
    safe = np.where(norm > 0, norm, 1.0)
    return x / safe[..., None] * bound, norm


def test_check_adversarial_inputs_catches_the_issue_25_violation(monkeypatch):
    """dp-screened-ls with its old normalization (squares of entries ~2^-537 underflow, so
    ||u|| = sqrt(d/2 + 1)) fails the adversarial check, on the rows with underflowing
    squares; with the certified primitive it passes (test above)."""
    from dpbandits.agents import screened_ls
    from dpbandits.testing import check_adversarial_inputs

    monkeypatch.setattr(screened_ls, "normalize_rows", _naive_normalize_rows)
    agent = instance_for_checks(agent_class("dp-screened-ls"))
    with pytest.raises(ContractError, match=r"'screen'.*underflowing squares.*above the "
                                            r"declared sensitivity"):
        check_adversarial_inputs(agent)


# -- claims that follow the noise (issue 34, item 3) ---------------------------------------
def _planned_beyond_agents_and_optimizers():
    """The Bayesian-optimization methods and the private off-policy estimators: the public
    classes exposing ``privacy`` that are neither agents nor optimizers."""
    from dpbandits import bo
    from dpbandits.offpolicy import PrivateEstimator

    box = [[0.0, 1.0]]
    return [
        bo.DPGIBO(mu=1.0, n_iters=5, clip_bound=1.0, batch_size=2),
        bo.GIBO(n_iters=5, batch_size=2),
        bo.ExactGradientDPGD(mu=1.0, n_iters=5, clip_bound=1.0),
        bo.PrivateRandomSearch(mu=1.0, n_candidates=10, bounds=box, loss_bounds=[0.0, 1.0]),
        bo.GPUCB(n_evals=5, bounds=box),
        *(PrivateEstimator(e, epsilon=1.0, delta=1e-6, max_weight=5.0)
          for e in ("ips", "snips", "dr")),
        PrivateEstimator("dr", epsilon=1.0, delta=1e-6, max_weight=5.0,
                         reward_model="disjoint"),
    ]


def test_check_claims_runs_on_every_agent_and_optimizer():
    assert CHECKS["check_claims_follow_noise"].kinds == ("agent", "optimizer")


@pytest.mark.parametrize("component", _planned_beyond_agents_and_optimizers(),
                         ids=lambda c: "-".join([type(c).__name__, *(
                             str(v) for v in (getattr(c, "estimator", None),
                                              getattr(c, "reward_model", None)) if v)]))
def test_claims_follow_the_noise_beyond_agents_and_optimizers(component):
    """Assigning a parameter is refused (the estimators) or fully applied (the BO methods
    re-plan); with_plan of a forged plan is flagged."""
    check_claims(component)


def test_check_claims_catches_a_claim_that_drifts_from_the_noise():
    from dpbandits.privacy.plan import NoisePlan, Planned, PlanView

    class Drifting(Planned):
        """epsilon may be assigned; the claim follows it, the noise does not."""

        def __init__(self, epsilon=1.0):
            self.epsilon = epsilon
            self._plan = NoisePlan("theorem", {"sigma": 1.0 / epsilon},
                                   PrivacyGuarantee(epsilon, 1e-3, notion="DP", basis="x"))

        @property
        def privacy(self):
            return PrivacyGuarantee(self.epsilon, 1e-3, notion="DP", basis="x")

    with pytest.raises(ContractError, match="epsilon=2.0 .* accepted but not applied"):
        check_claims(Drifting())

    class Trusting(Planned):
        """with_plan takes any plan as it is."""

        def __init__(self, epsilon=1.0):
            self._plan = NoisePlan("theorem", {"sigma": 1.0 / epsilon},
                                   PrivacyGuarantee(epsilon, 1e-3, notion="DP", basis="x"),
                                   dp_accounting.GaussianDpEvent(1.0 / epsilon))

        @PlanView
        def sigma(self):
            return self.plan.scales["sigma"]

        def with_plan(self, plan):
            twin = Trusting()
            twin._plan = plan
            return twin

    with pytest.raises(ContractError, match="forged plan .* still reports itself certified"):
        check_claims(Trusting())

"""The conventions users bring from scikit-learn (issue 35): ``get_params(deep=...)`` and
``sklearn.base.clone``, ``fit``/``partial_fit`` all-or-nothing, one warning when ``fit``
clips most rows, ``set_params`` without a change keeping the fitted state."""

from __future__ import annotations

import functools
import pickle
import warnings

import numpy as np
import pytest

from dpbandits.agents import ClippingWarning, agent_class, available_agents, make_agent

K, D, T = 3, 4, 120
#: agents that clip logged rows in fit and count it (the others normalize or trust the data)
CLIPPING = ["adac-oful", "dp-hdb", "dp-ucb", "fliphat", "ldp-linucb"]


def _agent(name: str, **kw):
    return make_agent(name, n_arms=K, dim=D, horizon=T, **kw)


def _log(n: int = T, scale: float = 0.3, seed: int = 0, agent=None):
    """A log of ``n`` rows with contexts of sup-norm <= ``scale`` (inside every agent's
    default bound for scale <= 0.5: l_2 norm <= 2 * scale in dimension 4); DP-HDB's forced
    rounds carry the forced arm."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-scale, scale, size=(n, D))
    arms = rng.integers(0, K, n)
    if agent is not None and hasattr(agent, "forced_steps"):
        forced = np.arange(min(n, agent.forced_steps))
        arms[forced] = forced // agent._t0
    rewards = rng.uniform(-0.5, 0.5, n)
    return x, arms, rewards


def _fitted(name: str, **kw):
    agent = _agent(name, **kw)
    x, arms, rewards = _log(T // 2, agent=agent)
    return agent.fit(x, arms, rewards, rng=1)


def _state(agent):
    """Everything the agent holds (estimates, counters, generators, labels), as plain
    values: a copy that later changes to the agent do not reach."""
    return _plain(pickle.loads(pickle.dumps(agent.__dict__)))


def _plain(value):
    """``value`` with arrays, generators and sets made comparable with ``==`` (arrays as
    their dtype, shape and bytes, so NaNs compare equal; sets sorted)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, set | frozenset):
        return sorted(map(repr, value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes()
                if value.dtype.kind != "O" else _plain(value.tolist()))
    if isinstance(value, functools.partial):
        return ("partial", value.func, _plain(value.args), _plain(value.keywords))
    if isinstance(value, np.random.Generator):
        return ("generator", _plain(value.bit_generator.state))
    if hasattr(value, "__dict__") and not callable(value):
        return (type(value).__name__, _plain(vars(value)))
    return value


# -- get_params / clone ----------------------------------------------------------------------

@pytest.mark.parametrize("name", available_agents())
def test_get_params_takes_deep_and_a_clone_is_an_equal_unfitted_agent(name):
    agent = _fitted(name)
    shallow = agent.get_params(deep=False)
    assert shallow.keys() == set(agent_class(name)._init_param_names()) & set(vars(agent))
    assert agent.get_params(deep=True) == agent.get_params() == shallow  # no nested components
    twin = type(agent)(**shallow)  # scikit-learn's clone, by hand
    assert twin.get_params(deep=False) == shallow and twin.n_reps_ is None


@pytest.mark.parametrize("name", available_agents())
def test_sklearn_clone_works_on_every_agent(name):
    base = pytest.importorskip("sklearn.base")
    agent = _fitted(name)
    twin = base.clone(agent)
    assert type(twin) is type(agent) and twin is not agent
    assert twin.get_params(deep=False) == agent.get_params(deep=False)
    assert twin.n_reps_ is None  # unfitted
    assert agent.n_reps_ == 1  # the original keeps its state


def test_get_params_deep_lists_a_nested_components_parameters():
    from dpbandits._params import Parameterized

    class Inner(Parameterized):
        def __init__(self, *, a: int = 1):
            self.a = a

    class Outer(Parameterized):
        def __init__(self, *, inner=None, b: int = 2):
            self.inner, self.b = inner, b

    inner = Inner(a=5)
    outer = Outer(inner=inner)
    assert outer.get_params(deep=False) == {"inner": inner, "b": 2}
    assert outer.get_params(deep=True) == {"inner": inner, "b": 2, "inner__a": 5}


# -- fit / partial_fit all-or-nothing --------------------------------------------------------

def test_dp_hdb_refuses_a_forced_sampling_break_before_learning_any_row():
    x, arms, rewards = _log()
    fresh = _agent("dp-hdb")
    bad = arms.copy()
    bad[fresh._t0 + 3] = K - 1  # the first rows follow forced sampling, a later one does not
    with pytest.raises(ValueError, match="forced sampling"):
        fresh.fit(x, bad, rewards, rng=0)
    assert fresh.n_reps_ is None and fresh.t_ == 0  # nothing learnt, nothing reset

    agent = _fitted("dp-hdb", t0=30)  # 60 of 90 forced rows; continue breaking them
    before, answer = _state(agent), agent.predict(x)
    more_x, more_arms, more_r = _log(T // 2, seed=3)
    more_arms[:] = (agent.t_ // agent._t0 + 1) % K
    assert agent.t_ < agent.forced_steps  # the continuation starts inside forced sampling
    with pytest.raises(ValueError, match="forced sampling"):
        agent.partial_fit(more_x, more_arms, more_r)
    assert _state(agent) == before
    np.testing.assert_array_equal(agent.predict(x), answer)


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize("name", available_agents())
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_fit_failing_part_way_leaves_the_agent_as_it_was(name, method, monkeypatch):
    """Whatever raises while the rows are being learnt (a numerical failure, an interrupt),
    the agent is restored: same state (pickled bytes) and the same predictions."""
    agent = _fitted(name)
    x, arms, rewards = _log(T // 4, seed=5, agent=None)
    if hasattr(agent, "forced_steps"):
        arms[:] = 0
        assert agent.t_ >= agent.forced_steps or method == "fit"
    before, answer = _state(agent), agent.predict(x)
    feed = type(agent)._feed

    def half_then_fail(self, xs, a, r):
        feed(self, xs[:5], a[:5], r[:5])
        raise _Boom("failed after 5 rows")

    monkeypatch.setattr(type(agent), "_feed", half_then_fail)
    if method == "fit":
        x2, arms2, r2 = _log(T // 4, seed=6, agent=agent)
        with pytest.raises(_Boom):
            agent.fit(x2, arms2, r2, rng=2)
    else:
        with pytest.raises(_Boom):
            agent.partial_fit(x, arms, rewards)
    monkeypatch.undo()
    assert _state(agent) == before
    np.testing.assert_array_equal(agent.predict(x), answer)


# -- clipping warning ------------------------------------------------------------------------

def test_the_agents_that_clip_data_declare_their_counters():
    assert [n for n in available_agents() if agent_class(n).clip_counters] == CLIPPING


@pytest.mark.parametrize("name", CLIPPING)
def test_fit_warns_once_in_one_line_when_clipping_changes_most_rows(name):
    agent = _agent(name)
    x, arms, rewards = _log(agent=agent)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.fit(100.0 * x, arms, rewards, rng=0)  # every row far outside the bounds
    found = [w for w in caught if issubclass(w.category, ClippingWarning)]
    assert len(found) == 1
    text = str(found[0].message)
    assert "\n" not in text and f"{T} of {T} rows" in text and "fit" in text


@pytest.mark.parametrize("name", CLIPPING)
def test_fit_within_the_bounds_does_not_warn(name):
    agent = _agent(name)
    x, arms, rewards = _log(agent=agent)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        agent.fit(x, arms, rewards, rng=0)
        agent.reset(1, np.random.default_rng(0))
        # a few clipped rows (a quarter: not most) do not warn either
        y = x.copy()
        y[: T // 4] *= 100.0
        agent.fit(y, arms, rewards, rng=0)


# -- set_params ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["dp-ucb", "linucb", "dp-hdb"])
def test_set_params_without_a_change_keeps_the_fitted_state(name):
    agent = _fitted(name)
    x, _, _ = _log(seed=9)
    before, answer = _state(agent), agent.predict(x)
    assert agent.set_params() is agent and _state(agent) == before
    same = {k: v for k, v in agent.get_params(deep=False).items() if k in ("horizon", "dim")}
    agent.set_params(**same)
    if "epsilon" in agent.get_params():
        agent.set_params(epsilon=int(agent.epsilon) if agent.epsilon == 1 else agent.epsilon)
    assert _state(agent) == before
    np.testing.assert_array_equal(agent.predict(x), answer)
    agent.set_params(horizon=T + 1)  # a real change re-builds: the fitted state is gone
    assert agent.n_reps_ is None and agent.horizon == T + 1


@pytest.mark.parametrize("name", ["dp-tofw", "noisy-sfw", "dp-gd", "private-sgd"])
def test_sklearn_clone_works_on_optimizers(name):
    """Optimizers share the parameter rule (``Parameterized``), so ``clone`` works there
    too."""
    base = pytest.importorskip("sklearn.base")
    from dpbandits.optim import OPTIMIZERS

    opt = OPTIMIZERS[name](**OPTIMIZERS[name]._test_params)
    twin = base.clone(opt)
    assert type(twin) is type(opt) and twin.get_params(deep=False) == opt.get_params(deep=False)


def test_sklearn_clone_works_on_a_private_estimator():
    base = pytest.importorskip("sklearn.base")
    from dpbandits.offpolicy import PrivateEstimator

    est = PrivateEstimator("ips", epsilon=1.0, delta=1e-5, max_weight=5.0,
                           reward_range=(0.0, 1.0))
    assert base.clone(est).get_params(deep=False) == est.get_params(deep=False)


@pytest.mark.parametrize("name", ["dp-ucb", "linucb"])
def test_set_params_validates_even_a_value_equal_to_the_current_one(name):
    # horizon=100.0 equals 100 but the constructor refuses a float horizon: so must set_params
    from dpbandits.agents import make_agent

    agent = make_agent(name, n_arms=3, dim=2, horizon=100)
    with pytest.raises(TypeError, match="horizon must be an integer"):
        agent.set_params(horizon=100.0)
    assert agent.horizon == 100 and type(agent.horizon) is int

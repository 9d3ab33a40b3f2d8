"""Agents outside the simulator: fit / partial_fit / predict on one logged stream (the
properties every registered agent must have are in dpbandits.testing.check_fit_predict)."""

import numpy as np
import pytest

from dpbandits.agents import make_agent
from dpbandits.envs import ClassificationBanditEnv

D, K, T = 4, 3, 50


def _log(n=T, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (n, D)), rng.integers(0, K, n), rng.uniform(0, 1, n)


def _iris_log(n, seed):
    """A uniform-random policy's log on the iris bandit: contexts, arms, rewards."""
    env = ClassificationBanditEnv("iris", horizon=n)
    x, _ = env.reset(seed=seed)
    arms = np.random.default_rng(seed + 1).integers(0, 3, n)
    X, R = np.empty((n, 4)), np.empty(n)
    for t in range(n):
        X[t] = x
        x, R[t], *_ = env.step(int(arms[t]))
    return X, arms, R, env.config


def test_linucb_fit_on_a_uniform_log_predicts_the_classes():
    """Learning from someone else's (uniform) arms: on iris, LinUCB fit on 600 logged rounds
    predicts the class of the 150 rows far above chance (1/3)."""
    X, arms, R, cfg = _iris_log(600, seed=0)
    agent = make_agent("linucb", n_arms=3, dim=4, horizon=600).fit(X, arms, R, rng=0)
    accuracy = np.mean(agent.predict(cfg.X) == cfg.labels)
    # a wrong fit (e.g. the arms ignored) is at chance: 1/3 +- 3 sd = 0.33 +- 0.12
    assert accuracy > 0.75


def test_a_private_agent_fit_keeps_its_guarantee_and_ledger():
    X, arms, R = _log()
    agent = make_agent("dp-ucb", n_arms=K, dim=D, horizon=T, epsilon=1.0,
                       calibration="accountant")
    privacy, ledger = agent.privacy, repr(agent.ledger)
    agent.fit(X, arms, R, rng=0)
    assert agent.privacy == privacy and repr(agent.ledger) == ledger and agent.t_ == T


def test_fit_restarts_and_a_refused_fit_keeps_the_previous_state():
    X, arms, R = _log()
    agent = make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X[:20], arms[:20], R[:20],
                                                                 rng=0)
    first = agent.predict(X)
    with pytest.raises(ValueError, match=r"51 rows after 0 already seen exceed horizon=50"):
        agent.fit(np.vstack([X, X[:1]]), np.append(arms, 0), np.append(R, 0.0), rng=0)
    assert agent.t_ == 20 and np.array_equal(agent.predict(X), first)
    agent.fit(X[20:], arms[20:], R[20:], rng=0)  # a new stream, not a continuation
    assert agent.t_ == 30


@pytest.mark.parametrize("change, words", [
    ({"contexts": np.zeros((T, D + 1))}, "contexts"),
    ({"contexts": np.full((T, D), np.nan)}, "finite"),
    ({"arms": np.full(T, K)}, r"arms must lie in \[0, 2\]"),
    ({"arms": np.zeros(T)}, "arms must be an integer array"),
    ({"arms": np.zeros(T - 1, dtype=int)}, "arms must be an integer array of shape"),
    ({"rewards": np.zeros(T + 1)}, "rewards"),
    ({"contexts": np.zeros((0, D)), "arms": np.zeros(0, int), "rewards": np.zeros(0)},
     "no rows"),
])
def test_fit_names_the_bad_argument(change, words):
    X, arms, R = _log()
    args = {"contexts": X, "arms": arms, "rewards": R, **change}
    agent = make_agent("linucb", n_arms=K, dim=D, horizon=T)
    with pytest.raises(ValueError, match=words) as info:
        agent.fit(args["contexts"], args["arms"], args["rewards"], rng=0)
    assert "LinUCB.fit" in str(info.value)
    assert agent.n_reps_ is None  # nothing happened


def test_partial_fit_rng_rules_and_one_stream_only():
    X, arms, R = _log()
    agent = make_agent("linucb", n_arms=K, dim=D, horizon=T)
    agent.partial_fit(X[:10], arms[:10], R[:10], rng=1)
    with pytest.raises(ValueError, match="rng must be omitted"):
        agent.partial_fit(X[10:], arms[10:], R[10:], rng=1)
    agent.reset(3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_reps=3"):
        agent.partial_fit(X, arms, R)
    with pytest.raises(ValueError, match="n_reps=3"):
        agent.predict(X)


def test_predict_checks_contexts():
    X, arms, R = _log()
    agent = make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X, arms, R, rng=0)
    with pytest.raises(ValueError, match=r"LinUCB.predict: contexts"):
        agent.predict(np.zeros((3, D + 1)))
    assert agent.predict(X[:1]).shape == (1,) and agent.predict(X).dtype == np.int64


def test_dp_hdb_refuses_a_log_that_breaks_its_forced_sampling():
    X, _, R = _log()
    agent = make_agent("dp-hdb", n_arms=K, dim=D, horizon=T, epsilon=1.0)
    with pytest.raises(ValueError, match="forced sampling"):
        agent.fit(X, np.full(T, K - 1), R, rng=0)


def test_without_rng_the_noise_comes_from_fresh_entropy_and_a_seed_reproduces():
    X, arms, R = _log()

    def released(**kw):
        agent = make_agent("dp-ucb", n_arms=K, dim=D, horizon=T, epsilon=1.0)
        return agent.fit(X, arms, R, **kw).decision_function(X)

    assert not np.array_equal(released(), released())  # two secret draws differ
    assert np.array_equal(released(rng=7), released(rng=7))
    first = make_agent("dp-ucb", n_arms=K, dim=D, horizon=T).partial_fit(X[:5], arms[:5], R[:5])
    assert first.t_ == 5  # the first partial_fit needs no rng either


def test_arm_labels_are_mapped_once_and_returned_by_predict():
    X, arms, R = _log()
    names = np.array(["red", "green", "blue"])
    plain = make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X, arms, R, rng=0)
    labelled = make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(
        X[:30], names[arms[:30]], R[:30], rng=0, arm_labels=names)
    labelled.partial_fit(X[30:], names[arms[30:]], R[30:])  # the kept labels map these
    assert labelled.predict(X).tolist() == names[plain.predict(X)].tolist()
    assert np.array_equal(labelled.decision_function(X), plain.decision_function(X))
    # string arms with exactly K distinct values: sorted into arm order
    inferred = make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X, names[arms], R, rng=0)
    assert inferred.arm_labels_.tolist() == ["blue", "green", "red"]
    bad = names[arms].astype(object)
    bad[17] = "purple"
    with pytest.raises(ValueError, match=r"arm 'purple' in row 17 is not one of the arm labels"):
        make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X, bad, R, arm_labels=names)
    with pytest.raises(ValueError, match=r"arm_labels must be 3 distinct labels"):
        make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X, arms, R, arm_labels=[1, 1, 2])
    with pytest.raises(ValueError, match=r"2 distinct values .* give arm_labels"):
        make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(X, names[arms % 2], R)
    with pytest.raises(ValueError, match=r"differ from the labels the stream started with"):
        labelled.partial_fit(X[:1], names[:1], R[:1], arm_labels=names[::-1])
    assert make_agent("linucb", n_arms=K, dim=D, horizon=T).fit(
        X, arms + 10, R, arm_labels=[10, 11, 12]).predict(X).min() >= 10


def _played(name, n, seed=0, **params):
    """An agent reset for one replication that has played ``n`` rounds of a synthetic log."""
    rng = np.random.default_rng(seed)
    x, r = rng.uniform(-1, 1, (n, D)), rng.normal(size=n)
    agent = make_agent(name, n_arms=K, dim=D, horizon=400, **params)
    agent.reset(1, np.random.default_rng(seed + 1))
    for t in range(n):
        a = agent.act(x[t:t + 1])
        agent.update(x[t:t + 1], a, r[t:t + 1] * (a == 1) + 0.1 * a)
    return agent


@pytest.mark.parametrize("name, params, rounds", [
    ("linucb", {}, 60), ("linucb", {"backend": "numpy"}, 60),
    ("greedy", {}, 1), ("greedy", {}, 60), ("greedy", {"link": "logistic"}, 60),
    ("dp-hdb", {}, 1), ("dp-hdb", {}, 300), ("dp-hdb", {"backend": "numpy"}, 300),
    ("dp-screened-ls", {}, 0), ("dp-screened-ls", {}, 300),
])
def test_batched_predict_equals_the_row_by_row_acts_bit_for_bit(name, params, rounds):
    import copy

    agent = _played(name, rounds, **params)
    x = np.random.default_rng(5).uniform(-1, 1, (400, D))
    x[1] = x[0]  # a repeated row and exact ties must follow the same path
    x[2] = 0.0
    assert agent._batch_act(x) is not None  # the batched path is the one tested
    twin = copy.deepcopy(agent)
    loop = np.array([twin.act(x[i:i + 1])[0] for i in range(len(x))])
    before = copy.deepcopy(agent.__dict__.get("_tie_rng"))
    assert np.array_equal(agent.predict(x), loop)
    assert np.array_equal(agent.predict(x), loop)  # the agent's generators did not move
    if before is not None:
        assert agent._tie_rng.random() == before.random()
    scores = agent._batch_scores(x)
    if scores is not None:
        rows = np.vstack([copy.deepcopy(agent)._batch_scores(x[i:i + 1]) for i in range(5)])
        assert np.array_equal(scores[:5], rows)


def test_decision_function_is_the_score_act_maximizes():
    agent = _played("linucb", 60)
    x = np.random.default_rng(6).uniform(-1, 1, (50, D))
    scores = agent.decision_function(x)
    assert scores.shape == (50, K)
    assert np.array_equal(scores[:1], agent.indices(x[:1]))
    assert np.array_equal(np.argmax(scores, axis=1), agent.predict(x))
    with pytest.raises(NotImplementedError, match="DPHDB has no per-arm score"):
        _played("dp-hdb", 10).decision_function(x)
    with pytest.raises(NotImplementedError, match="no per-arm score"):
        _played("greedy", 1).decision_function(x)  # its round-robin start


# -- linucb: fit replays the stream in one kernel call, predict answers all rows in one ------

def _stream(kind, n=200, d=6, k=3, seed=0):
    """A logged stream: ``"random"`` rows, or ``"adversarial"`` ones mixing tiny, huge, zero
    and negative-zero entries (and rewards of wild scales), where any change in the order of
    a sum shows in the last bits; ``"mixed"``: scales 1e-4 .. 1e4 only (the ridge statistics
    stay finite)."""
    rng = np.random.default_rng(seed)
    x, r = rng.standard_normal((n, d)), rng.standard_normal(n)
    if kind in ("adversarial", "mixed"):
        x *= 10.0 ** (rng.integers(-160, 150, (n, d)) if kind == "adversarial"
                      else rng.integers(-4, 5, (n, d)))
        x[rng.random((n, d)) < 0.15] = 0.0
        x[rng.random((n, d)) < 0.05] = -0.0
        if n > 7:
            x[7] = x[3]  # a repeated row
        r *= 10.0 ** (rng.integers(-100, 100, n) if kind == "adversarial"
                      else rng.integers(-4, 5, n))
    return x, rng.integers(0, k, n), r


def _loop(agent, x, a, r, seed=0):
    """``agent`` reset for one replication, then one ``update`` per row: the reference."""
    agent.reset(1, np.random.default_rng(seed))
    agent.arm_labels_ = None  # as fit sets it, so the two states pickle alike
    for t in range(len(x)):
        agent.update(x[t:t + 1], a[t:t + 1], r[t:t + 1])
    return agent


def _assert_same_state(got, want):
    """Every attribute equal bit for bit (NaN payloads included): each state array named
    for a readable failure, then the whole agent's pickle."""
    import pickle

    assert got.t_ == want.t_ and got.n_reps_ == want.n_reps_ == 1
    for name, arr in vars(want._state).items():
        if isinstance(arr, np.ndarray):
            mine = getattr(got._state, name)
            assert mine.dtype == arr.dtype and mine.tobytes() == arr.tobytes(), name
    assert pickle.dumps(got) == pickle.dumps(want)


def _rowwise_indices(agent, x):
    """The indices ``act`` computes, one row at a time (on a copy: act leaves a cache)."""
    import copy

    twin = copy.deepcopy(agent)
    return np.vstack([twin.indices(x[i:i + 1]) for i in range(len(x))])


@pytest.mark.parametrize("kind", ["random", "adversarial"])
@pytest.mark.parametrize("d, k", [(6, 3), (1, 2), (3, 2), (8, 3), (17, 4)])
def test_linucb_fit_equals_the_row_by_row_updates_bit_for_bit(kind, d, k):
    x, a, r = _stream(kind, d=d, k=k, seed=d)
    params = {"n_arms": k, "dim": d, "horizon": 250, "reg": 0.7}
    fitted = make_agent("linucb", **params).fit(x, a, r, rng=0)
    looped = _loop(make_agent("linucb", **params), x, a, r)
    _assert_same_state(fitted, looped)
    queries = np.vstack([x[:70], _stream(kind, n=80, d=d, k=k, seed=d + 1)[0]])
    scores = fitted.decision_function(queries)
    assert scores.tobytes() == looped.decision_function(queries).tobytes()
    assert scores.tobytes() == _rowwise_indices(looped, queries).tobytes()  # act's numbers
    assert np.array_equal(fitted.predict(queries), looped.predict(queries))


def test_linucb_fit_test_data_would_catch_a_reordered_sum():
    """The stream of the bit-for-bit test is sensitive to the order of its sums: the ridge
    inverse formed at once, ``inv(lam I + X_a^T X_a)`` (a matrix product), agrees with the
    fitted one to rounding but not in every bit, so a batched fit that summed in another
    order would fail that test."""
    x, a, r = _stream("random", d=6, k=3, seed=6)
    fitted = make_agent("linucb", n_arms=3, dim=6, horizon=250, reg=0.7).fit(x, a, r, rng=0)
    iu = np.triu_indices(6)
    for arm in range(3):
        xa = x[a == arm]
        direct = np.linalg.inv(0.7 * np.eye(6) + xa.T @ xa)[iu]
        np.testing.assert_allclose(fitted._state.P[0, arm], direct, rtol=1e-9, atol=1e-12)
        assert not np.array_equal(fitted._state.P[0, arm], direct)


def test_linucb_fit_uses_the_batched_replay_unless_the_update_is_overridden(monkeypatch):
    from dpbandits.agents.base import Agent
    from dpbandits.agents.references import LinUCB

    calls = []
    original = Agent._update_trusted

    def counted(self, *args):
        calls.append(type(self).__name__)
        return original(self, *args)

    monkeypatch.setattr(Agent, "_update_trusted", counted)
    x, a, r = _stream("random", n=40)
    params = {"n_arms": 3, "dim": 6, "horizon": 40}
    agent = make_agent("linucb", **params).fit(x, a, r, rng=0)
    assert calls == [] and agent.t_ == 40  # one kernel call, no per-row update
    make_agent("linucb", backend="numpy", **params).fit(x, a, r, rng=0)
    assert len(calls) == 40  # the numpy backend keeps the loop

    class Counting(LinUCB):  # a subclass's own _update must see every row
        def _update(self, contexts, arms, rewards):
            self.seen = getattr(self, "seen", 0) + 1
            super()._update(contexts, arms, rewards)

    sub = Counting(**params).fit(x, a, r, rng=0)
    assert sub.seen == 40 and sub.t_ == 40
    _assert_same_state(agent, _loop(make_agent("linucb", **params), x, a, r))


@pytest.mark.parametrize("kind", ["random", "adversarial"])
def test_linucb_partial_fit_halves_equal_fit_bit_for_bit(kind):
    x, a, r = _stream(kind)
    params = {"n_arms": 3, "dim": 6, "horizon": 200}
    whole = make_agent("linucb", **params).fit(x, a, r, rng=0)
    halves = make_agent("linucb", **params).partial_fit(x[:77], a[:77], r[:77], rng=0)
    halves.partial_fit(x[77:], a[77:], r[77:])
    _assert_same_state(halves, whole)
    # a stream started by reset(1, rng) and an act on its first row: that row's update reuses
    # act's V^-1 x (the cache), in the batched replay as in the loop
    started = make_agent("linucb", **params)
    started.reset(1, np.random.default_rng(0))
    started.act(x[:1])
    reference = make_agent("linucb", **params)
    reference.reset(1, np.random.default_rng(0))
    reference.act(x[:1])
    started.partial_fit(x, a, r)
    reference.arm_labels_ = None
    for t in range(len(x)):
        reference.update(x[t:t + 1], a[t:t + 1], r[t:t + 1])
    _assert_same_state(started, reference)


@pytest.mark.parametrize("d", [1, 3, 4, 9, 64])
@pytest.mark.parametrize("n", [1, 64, 150])
def test_linucb_batched_indices_are_acts_bit_for_bit(d, n):
    """decision_function's row kernel (rows in blocks of 64, the triangle four rows at a time
    and the last d mod 4 one at a time) gives every row exactly the index act computes for
    it alone."""
    for kind in ("random", "adversarial"):
        x, a, r = _stream(kind, d=d, k=4, seed=n)
        agent = make_agent("linucb", n_arms=4, dim=d, horizon=200).fit(x, a, r, rng=0)
        queries = _stream(kind, n=n, d=d, k=4, seed=n + 1)[0]
        assert (agent.decision_function(queries).tobytes()
                == _rowwise_indices(agent, queries).tobytes())


def _plain_symv(p, x):
    """The packed ``V^-1 x`` in plain Python, one row of the triangle at a time: the order
    of sums the kernels have always used (and the committed results were computed with)."""
    d = len(x)
    out = [0.0] * d
    q = 0
    for i in range(d):
        acc = p[q] * x[i]
        q += 1
        for j in range(i + 1, d):
            acc += p[q] * x[j]
            out[j] += p[q] * x[i]
            q += 1
        out[i] += acc
    return out


@pytest.mark.parametrize("d", [1, 3, 6, 9])
def test_linucb_kernels_keep_the_one_row_order_of_sums(d):
    """The kernels (the triangle four rows at a time, the rows of predict vectorized) give
    the numbers of a plain-Python transcription of the one-row-at-a-time algorithm, bit for
    bit: fitted state and indices, so no stream or committed result moves."""
    import math

    x, a, r = _stream("mixed", n=120, d=d, k=2, seed=d)
    agent = make_agent("linucb", n_arms=2, dim=d, horizon=120, reg=0.7).fit(x, a, r, rng=0)
    m = d * (d + 1) // 2
    diag = [i * d - i * (i - 1) // 2 for i in range(d)]
    P = [[1.0 / 0.7 if q in diag else 0.0 for q in range(m)] for _ in range(2)]
    theta, logdet = [[0.0] * d for _ in range(2)], [d * math.log(0.7)] * 2
    for t in range(len(x)):
        k, xt = a[t], list(x[t])
        u = _plain_symv(P[k], xt)
        xtu = xth = 0.0
        for j in range(d):
            xtu += xt[j] * u[j]
            xth += xt[j] * theta[k][j]
        denom = 1.0 + xtu
        g = (r[t] - xth) / denom
        q = 0
        for i in range(d):
            ui = u[i] / denom
            for j in range(i, d):
                P[k][q] -= ui * u[j]
                q += 1
            theta[k][i] += u[i] * g
        logdet[k] += math.log(denom)
    state = agent._state
    assert state.P[0].tobytes() == np.array(P).tobytes()
    assert state.theta[0].tobytes() == np.array(theta).tobytes()
    assert state.logdet[0].tobytes() == np.array(logdet).tobytes()
    queries = _stream("mixed", n=70, d=d, k=2, seed=d + 1)[0]
    c = agent._consts
    want = np.empty((70, 2))
    for i, xq in enumerate(queries):
        for k in range(2):
            u = _plain_symv(P[k], list(xq))
            quad = mean = 0.0
            for j in range(d):
                quad += xq[j] * u[j]
                mean += theta[k][j] * xq[j]
            beta = c[1] * math.sqrt(max(c[0] + logdet[k], 0.0)) + c[2]
            want[i, k] = mean + c[3] * beta * math.sqrt(max(quad, 0.0))
    assert agent.decision_function(queries).tobytes() == want.tobytes()

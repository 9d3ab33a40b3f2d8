"""Replay evaluation of a bandit policy on a logged uniform-random stream.

Li, Chu, Langford & Wang, "Unbiased offline evaluation of contextual-bandit-based news article
recommendation algorithms" (2011), Algorithm 3 ("Policy_Evaluator"): walk the log; at each
logged round ``(x, a, r)`` ask the policy for an arm given ``x`` and its history; if it
picks ``a``, reveal ``r``, append the round to the history and count it as the next
*accepted* round; otherwise discard the round (the policy learns nothing from it). When the
logging policy chose every arm with probability ``1/K`` independently of everything else,
the accepted rounds have the law of rounds played online by the policy (their Theorem 1), so
the reward per accepted round is unbiased for the policy's online reward. With any other
logging policy it is not, so the environment refuses such logs unless
``allow_nonuniform=True`` (then it warns with the reason).

Each replication walks its own uniformly random permutation of the whole log (one pass,
every logged round at most once), drawn from the replication's context stream (the seeding
scheme of :mod:`dpbandits.envs`: replication ``r`` of a vector env reset with ``seed=s`` is
the single env reset with ``seed=s + r``).

Two ways to drive it:

* **Gymnasium** (``step``): one logged round per step for every replication. The reward is
  the logged reward when the arm equals the logged action (``info["accepted"]``) and 0
  otherwise; a Gymnasium episode is one pass (``n_events`` steps). A user's own loop updates
  its policy only on accepted steps.
* **The harness** (``dpbandits.harness.simulate``): Algorithm 3 with ``horizon`` accepted
  rounds, the replications kept in step on accepted rounds (:meth:`ReplayCore.offer` and
  :meth:`ReplayCore.accept`): each agent update is one accepted round of every replication.
  There is no oracle (no theta*, no pseudo-regret); the harness reports cumulative reward,
  the number of logged rounds read, and the logged policy's mean reward as the reference.
"""

from __future__ import annotations

import math
import warnings

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from dpbandits._validation import check_int
from dpbandits.envs._core import (
    BanditEnvBase,
    BanditVectorEnvBase,
    check_action,
    check_normalization,
    normalize_rows,
)
from dpbandits.envs.logged import LoggedBandit, synthetic_log

__all__ = ["LogExhaustedError", "NonUniformLoggingWarning", "ReplayBanditEnv",
           "ReplayBanditVectorEnv", "ReplayCore", "default_replay_horizon"]

#: standard deviations of the accepted-round count kept in reserve by the default horizon
_RESERVE_SD = 4.0


class NonUniformLoggingWarning(UserWarning):
    """Replay runs on a log whose logging policy was not uniform: its rewards are biased."""


class LogExhaustedError(ValueError):
    """A replication read its whole pass over the log before reaching the horizon."""


def default_replay_horizon(log: LoggedBandit) -> int:
    """Accepted rounds a pass over ``log`` reaches with high probability, whatever the policy.

    Under uniform logging every logged round is accepted with probability ``p = 1/K``
    whatever the policy picks, so a pass accepts ``Binomial(n, p)`` rounds; the default keeps
    4 standard deviations in reserve: ``floor(n p - 4 sqrt(n p (1 - p)))`` (at least 1). For a
    non-uniform log ``p`` is the frequency of the rarest logged arm (a policy that always
    plays it is accepted least often).
    """
    n, K = log.n_rounds, log.n_arms
    p = 1.0 / K if log.is_uniform else float(np.bincount(log.actions, minlength=K).min()) / n
    return max(1, int(math.floor(n * p - _RESERVE_SD * math.sqrt(n * p * (1.0 - p)))))


class _ReplayConfig:
    def __init__(self, *, log, horizon, normalization, allow_nonuniform):
        if log is None:
            log = synthetic_log()[0]
        if not isinstance(log, LoggedBandit):
            raise TypeError(f"log must be a LoggedBandit (dpbandits.envs.LoggedBandit, or "
                            f"dpbandits.datasets.read_logged for a file), got "
                            f"{type(log).__name__}")
        if not isinstance(allow_nonuniform, bool | np.bool_):
            raise TypeError(f"allow_nonuniform must be a bool, got {allow_nonuniform!r}")
        self.allow_nonuniform = bool(allow_nonuniform)
        if not log.is_uniform:
            p = log.propensities
            why = (f"replay is unbiased only for a uniformly random logging policy (Li, Chu, "
                   f"Langford & Wang 2011, Theorem 1): every propensity must be 1/n_arms = "
                   f"{1 / log.n_arms:.6g}, but log {log.name!r} has propensities in "
                   f"[{p.min():.6g}, {p.max():.6g}]")
            if not self.allow_nonuniform:
                raise ValueError(f"{why}. Estimate fixed policies with "
                                 "dpbandits.offpolicy.ips/snips instead, or pass "
                                 "allow_nonuniform=True to replay it anyway (biased)")
            warnings.warn(f"{why}; the replayed rewards are biased towards the arms the "
                          "logging policy favoured", NonUniformLoggingWarning, stacklevel=4)
        self.log = log
        self.name = log.name
        self.normalization = check_normalization(normalization)
        self.X = np.ascontiguousarray(normalize_rows(log.contexts, self.normalization,
                                                     "logged context"))
        self.n_events, self.dim = self.X.shape
        self.n_arms = log.n_arms
        self.horizon = (default_replay_horizon(log) if horizon is None else
                        check_int("horizon (accepted rounds)", horizon, low=1,
                                  high=self.n_events))
        self.reference_reward = log.mean_reward
        if self.normalization is not None:
            self.obs_low, self.obs_high = -1.0, 1.0
        else:
            self.obs_low, self.obs_high = self.X.min(axis=0), self.X.max(axis=0)


class ReplayCore:
    """``R`` replications walking their own permutation of the log.

    ``pos[r]`` is the index (in replication ``r``'s pass) of the logged round currently
    offered; ``accepted[r]`` counts its accepted rounds. ``t`` counts Gymnasium steps
    (``None`` before the first reset).
    """

    def __init__(self, cfg: _ReplayConfig, n_reps: int):
        self.cfg = cfg
        self.n_reps = n_reps
        self.n_arms = cfg.n_arms
        self.dim = cfg.dim
        self.horizon = cfg.horizon
        self.n_events = cfg.n_events
        self._rows = np.arange(n_reps)
        self._A = cfg.log.actions
        self._Y = cfg.log.rewards
        self.t: int | None = None

    def reset(self, seqs) -> np.ndarray:
        """New passes; ``seqs`` holds one episode SeedSequence per replication (its context
        stream, child 1 of ``spawn(3)``, draws the permutation)."""
        N = self.n_events
        dtype = np.int32 if N < 2**31 else np.int64
        self.order = np.empty((self.n_reps, N), dtype=dtype)
        for r, seq in enumerate(seqs):
            self.order[r] = np.random.default_rng(seq.spawn(3)[1]).permutation(N)
        self.pos = np.zeros(self.n_reps, dtype=np.int64)
        self.accepted = np.zeros(self.n_reps, dtype=np.int64)
        self.t = 0
        return self.contexts()

    def _current(self) -> np.ndarray:
        return self.order[self._rows, np.minimum(self.pos, self.n_events - 1)]

    def contexts(self) -> np.ndarray:
        """Contexts (R, d) of the logged rounds currently offered."""
        return self.cfg.X[self._current()]

    # -- Gymnasium: one logged round per step --------------------------------------------------
    def step(self, arms: np.ndarray):
        """Offer every replication's current round to ``arms`` and move all to the next:
        ``(next_contexts, rewards, accepted, logged_actions)``."""
        idx = self._current()
        logged = self._A[idx]
        hit = arms == logged
        rewards = np.where(hit, self._Y[idx], 0.0)
        self.accepted += hit
        self.pos += 1
        self.t += 1
        return self.contexts(), rewards, hit, logged

    # -- the harness: Algorithm 3, replications in step on accepted rounds ----------------------
    def offer(self, arms: np.ndarray, pending: np.ndarray) -> np.ndarray:
        """Offer the current round of the ``pending`` replications to ``arms``; returns the
        replications whose arm equals the logged action (they keep their round until
        :meth:`accept`); the others discard theirs and move to the next one. Raises
        :class:`LogExhaustedError` when a pending replication has read its whole pass."""
        hit = pending & (arms == self._A[self._current()])
        miss = pending & ~hit
        self.pos += miss
        if miss.any() and self.pos.max() >= self.n_events:
            r = int(np.flatnonzero(self.pos >= self.n_events)[0])
            raise LogExhaustedError(
                f"replication {r} read all {self.n_events} logged rounds of its pass over log "
                f"{self.cfg.name!r} after {int(self.accepted[r])} accepted rounds, short of "
                f"horizon={self.horizon}: a pass accepts about n/K = "
                f"{self.n_events / self.n_arms:.0f} rounds under uniform logging; lower the "
                f"horizon (the default, {default_replay_horizon(self.cfg.log)}, keeps 4 "
                "standard deviations in reserve)")
        return hit

    def accept(self) -> np.ndarray:
        """Every replication's current round is accepted: its logged rewards (R,); all move
        to their next round."""
        rewards = self._Y[self._current()]
        self.accepted += 1
        self.pos += 1
        return rewards


_DOC = """
    Parameters
    ----------
    log : LoggedBandit, optional
        The logged data (default: ``synthetic_log()``, 30,000 uniform-random rounds, K = 3,
        d = 5). Read files with ``dpbandits.datasets.read_logged`` or ``load_obd``.
    horizon : int, optional
        Accepted rounds the harness plays (the agents' horizon; default
        :func:`default_replay_horizon`). A Gymnasium episode is one pass, ``n_events`` steps.
    normalization : {"linf", "l1", "l2", None}, default None
        Rescale every logged context to unit norm first (None: as logged).
    allow_nonuniform : bool, default False
        Replay a log whose propensities are not all ``1/K`` (biased; warns). Default False:
        such a log raises ``ValueError``.
"""


class ReplayBanditEnv(BanditEnvBase):
    __doc__ = ("""Replay of a logged uniform-random stream, one replication (``gymnasium.Env``).

    ``step(arm)`` offers the current logged round: ``reward`` is its logged reward if ``arm``
    is the logged action (``info["accepted"]``), else 0; ``info`` also holds
    ``logged_action`` and ``t``. Truncates after one pass (``n_events`` steps). No oracle.
""" + _DOC)

    reports_regret = False

    def __init__(self, log=None, *, horizon=None, normalization=None, allow_nonuniform=False,
                 render_mode=None):
        self.config = cfg = _ReplayConfig(log=log, horizon=horizon,
                                          normalization=normalization,
                                          allow_nonuniform=allow_nonuniform)
        self.n_events = cfg.n_events
        self._setup(ReplayCore(cfg, 1), cfg.obs_low, cfg.obs_high, render_mode)

    def step(self, action):
        core = self._core
        if core.t is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        if core.t >= core.n_events:
            raise gymnasium.error.ResetNeeded(
                f"step() called after the pass over the log ended ({core.n_events} logged "
                "rounds); call reset()")
        a = check_action(action, core.n_arms)
        obs, rewards, hit, logged = core.step(np.array([a]))
        info = {"accepted": bool(hit[0]), "logged_action": int(logged[0]), "t": core.t}
        return obs[0], float(rewards[0]), False, core.t == core.n_events, info


class ReplayBanditVectorEnv(BanditVectorEnvBase):
    __doc__ = ("""Replay of a logged uniform-random stream, ``num_envs = R`` replications, each
    its own random pass (``gymnasium.vector.VectorEnv``); replication r after
    ``reset(seed=s)`` equals ``ReplayBanditEnv`` after ``reset(seed=s + r)``. ``info`` holds
    ``accepted``, ``logged_action`` and ``t`` (R,) with Gymnasium's ``"_key"`` masks.
""" + _DOC)

    reports_regret = False

    def __init__(self, num_envs: int = 1, log=None, *, horizon=None, normalization=None,
                 allow_nonuniform=False, autoreset_mode="NextStep", render_mode=None):
        R = check_int("num_envs", num_envs, low=1)
        self.config = cfg = _ReplayConfig(log=log, horizon=horizon,
                                          normalization=normalization,
                                          allow_nonuniform=allow_nonuniform)
        self.n_events = cfg.n_events
        self._setup(ReplayCore(cfg, R), cfg.obs_low, cfg.obs_high, autoreset_mode,
                    render_mode)

    def _past_the_end(self) -> Exception:
        return gymnasium.error.ResetNeeded(
            f"step() called after the pass over the log ended ({self._core.n_events} logged "
            "rounds); call reset()")

    def _step(self, a: np.ndarray):
        core = self._core
        R = self.num_envs
        obs, rewards, hit, logged = core.step(a)
        mask = self._mask
        info = {"accepted": hit, "_accepted": mask, "logged_action": logged,
                "_logged_action": mask, "t": np.full(R, core.t, dtype=np.int64), "_t": mask}
        done = core.t == core.n_events
        truncated = np.full(R, done, dtype=np.bool_)
        if done:
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                info = {"final_obs": obs, "_final_obs": mask, "final_info": info,
                        "_final_info": mask}
                obs = self._reset_core([None] * R)
            else:
                self._needs_reset = True
        return obs, rewards, np.zeros(R, dtype=np.bool_), truncated, info

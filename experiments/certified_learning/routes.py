"""Route variants of ``dp-moment-ls`` measured for issue 26 and **not kept** (README of the
study, "Issue 26, second round"): prototypes to re-run the tuning comparisons, not
registered agents, not audited. They need the agent of commit {COMMIT} of branch
``i26-learner2`` (options ``rescreen_share`` and ``screen_play`` and the helpers these
subclasses call), which was reverted afterwards because no route beat the defaults.

* :class:`Candidates`: the second screening episode releases the moment and contrasts of
  rows renormalized on the ``max(2 s, d/2)`` coordinates the first release ranks highest
  (each coordinate carries more of the row's mass, as the fit's renormalization on ``S``);
  ``S`` from the two episodes' standardized estimates (weighted Stouffer, weight sqrt 2).
* :class:`PerArm`: the screening releases are per-arm moments and targets on every
  coordinate (the fitting release's mechanism, :func:`fit_sensitivity`), so the screening
  regression is per arm and unbiased under greedy play (whose arms see different regions).

``python -m experiments.certified_learning.routes '<json agents>' [instances] [reps]`` with
kinds ``candidates``, ``per-arm`` or a registry name (seeds 5000 + r, tuning instances).
"""

import json
import math
import sys

import numpy as np

from dpbandits.agents.moment_ls import MomentLS, _targets
from dpbandits.agents.screened_ls import _goe, fit_sensitivity
from dpbandits.geometry import normalize_rows
from dpbandits.harness.compare import compare
from experiments.certified_learning.instances import TUNE_SEED, TUNING, TUNING_MORE, problem_size
from experiments.certified_learning.tune_moment import SEGMENTS

INSTANCES = {**TUNING, **TUNING_MORE}
SQRT2 = math.sqrt(2.0)


def ridge_t(M, c, sig_m, sig_c, units, ridge, K):
    D = M.shape[-1]
    lam = max(ridge * 2.0 * sig_m * math.sqrt(units * D) / K, 1e-12)
    w, v = np.linalg.eigh(M / K)
    w = np.maximum(w, 0.0) + lam
    proj = np.einsum("rji,rkj->rki", v, c)
    theta = np.einsum("rij,rkj->rki", v, proj / w[:, None, :])
    spread = np.sqrt(np.einsum("rji,ri->rj", v**2, 1.0 / w**2))
    sd = sig_c * math.sqrt(units * (K - 1) / K) * spread
    return theta, np.maximum(sd, 1e-300)[:, None, :]


class Candidates(MomentLS):
    """dp-moment-ls whose second screening episode is renormalized on candidates."""

    def __init__(self, *, n_cand=None, frac=0.5, w2=SQRT2, play="ridge", **kw):
        super().__init__(**kw)
        self._nc = n_cand if n_cand is not None else max(2 * self._s, math.ceil(frac * self.dim))
        self._nc = min(self._nc, self.dim)
        self._w2 = w2
        self._cplay = play
        self._y_c = self._y_screen * math.sqrt(self._D / self._nc)

    def _reset(self, n, rng):
        super()._reset(n, rng)
        self._cand = None

    def _update(self, contexts, arms, rewards):
        if self._cand is None or self._support is not None:
            return super()._update(contexts, arms, rewards)
        rows = np.arange(contexts.shape[0])
        u, nc = normalize_rows(np.take_along_axis(contexts, self._cand, axis=1), 2.0, 1.0)
        y, clipped = _targets(rewards, (nc,), self._y_c)
        zero = nc == 0.0
        y = np.where(zero, 0.0, y)
        self._ssum2[rows, arms] += y[:, None] * u
        self._M2 += u[:, :, None] * u[:, None, :]
        self.n_clipped_rewards_ += clipped & ~zero
        self.n_zero_rows_ += zero
        if self.t_ + 1 == self._ends[self._episode]:
            if self.t_ + 1 < self.horizon:
                self._release_cand()
            self._episode += 1

    def _release_screen(self):
        super()._release_screen()
        if self._episode == 0 and self._n_screen == 2:
            sc = self._plan.scales
            theta, sd = ridge_t(self._M_released, self._c_released, sc["moment"], sc["contrast"],
                                1.0, self._ridge_screen, self.n_arms)
            t = theta / sd
            stat = np.abs(t[:, :, :self.dim]).max(axis=1)
            self._cand = np.sort(np.argsort(-stat, axis=1, kind="stable")[:, :self._nc], axis=1)
            R, K = t.shape[0], self.n_arms
            self._t1 = np.take_along_axis(t, self._cand[:, None, :].repeat(K, 1), axis=2)
            self._M2 = np.zeros((R, self._nc, self._nc))
            self._ssum2 = np.zeros((R, K, self._nc))

    def _release_cand(self):
        rng, sc, K = self._noise_rng, self._plan.scales, self.n_arms
        sig_c = sc["contrast"] * math.sqrt(self._D / self._nc)
        raw_c = self._ssum2 - self._ssum2.mean(axis=1, keepdims=True)
        g = rng.standard_normal(raw_c.shape) * sig_c
        c2 = raw_c + g - g.mean(axis=1, keepdims=True)
        M2 = self._M2 + _goe(rng, self._M2.shape, sc["moment"])
        theta2, sd2 = ridge_t(M2, c2, sc["moment"], sig_c, 1.0, self._ridge_screen, K)
        t = (self._t1 + self._w2 * theta2 / sd2) / math.sqrt(1 + self._w2**2)
        stat = np.abs(t).max(axis=1)
        R = t.shape[0]
        top = np.argsort(-stat, axis=1, kind="stable")[:, :self._s]
        self._support = np.sort(np.take_along_axis(self._cand, top, axis=1), axis=1)
        self._factors = np.zeros((R, self._D, 0))
        play = theta2
        if self._cplay == "threshold":
            play = theta2 * (np.abs(theta2 / sd2).max(axis=1) > self._tau_play)[:, None, :]
        elif self._cplay == "combined":
            play = theta2 * (stat > self._tau_play)[:, None, :]
        full = np.zeros((R, K, self._D))
        np.put_along_axis(full, self._cand[:, None, :].repeat(K, 1), play, axis=2)
        self._theta = full
        p = self._p
        self._sum = np.zeros((R, K, p))
        self._gram = np.zeros((R, K, p, p))
        self._b_released = np.zeros((R, K, p))
        self._gram_released = np.zeros((R, K, p, p))
        self._g_units = np.zeros(R)


class PerArm(MomentLS):
    """dp-moment-ls whose screening releases are per-arm moments and targets."""

    def __init__(self, *, pa_share=0.4, pa_ridge=1.0, **kw):
        super().__init__(**kw)
        g = pa_share
        k = self.multiplier
        unit = fit_sensitivity(1.0 / math.sqrt(g), 1.0 / math.sqrt(1.0 - g))
        self._sm = unit * k / math.sqrt(g) * math.sqrt(2.0)
        self._sb = unit * k / math.sqrt(1.0 - g) * 2.0 * self._y_screen
        self._pr = pa_ridge

    def _reset(self, n, rng):
        super()._reset(n, rng)
        R, K, D = n, self.n_arms, self._D
        self._Mk = np.zeros((R, K, D, D))
        self._Mk_rel = np.zeros((R, K, D, D))
        self._bk_rel = np.zeros((R, K, D))
        self._pa_units = 0

    def _update(self, contexts, arms, rewards):
        if self._support is None:
            rows = np.arange(contexts.shape[0])
            u, _ = normalize_rows(self._augment(contexts), 2.0, 1.0)
            self._Mk[rows, arms] += u[:, :, None] * u[:, None, :]
        return super()._update(contexts, arms, rewards)

    def _release_screen(self):
        rng = self._noise_rng
        self._Mk_rel += self._Mk + _goe(rng, self._Mk.shape, self._sm)
        self._bk_rel += self._ssum + rng.standard_normal(self._ssum.shape) * self._sb
        self._pa_units += 1
        self._Mk[:] = 0.0
        self._ssum[:] = 0.0
        self._M[:] = 0.0
        D = self._D
        lam = max(self._pr * 2.0 * self._sm * math.sqrt(self._pa_units * D), 1e-12)
        w, v = np.linalg.eigh(self._Mk_rel)
        w = np.maximum(w, 0.0) + lam
        proj = np.einsum("rkji,rkj->rki", v, self._bk_rel)
        theta = np.einsum("rkij,rkj->rki", v, proj / w)
        if self._screen_play == "threshold":
            spread = np.sqrt(np.einsum("rkji,rki->rkj", v**2, 1.0 / w**2))
            sd = self._sb * math.sqrt(self._pa_units) * spread
            theta = theta * (np.abs(theta) / sd > self._tau_play)
        self._theta = theta
        if self._episode + 1 == self._n_screen:
            stat_theta = theta
            self._support, self._factors = self._screen(stat_theta, 0.0)
            R, K, p = theta.shape[0], self.n_arms, self._p
            self._sum = np.zeros((R, K, p))
            self._gram = np.zeros((R, K, p, p))
            self._b_released = np.zeros((R, K, p))
            self._gram_released = np.zeros((R, K, p, p))
            self._g_units = np.zeros(R)






KINDS = {"candidates": Candidates, "per-arm": PerArm}


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    agents = json.loads(argv[0])
    insts = argv[1].split(",") if len(argv) > 1 and argv[1] else list(INSTANCES)
    reps = int(argv[2]) if len(argv) > 2 else 6
    out = {}
    for inst in insts:
        env_id, ep, _ = INSTANCES[inst]
        K, d = problem_size(ep)
        specs = {lab: (KINDS[kind](n_arms=K, dim=d, horizon=ep["horizon"], **prm)
                       if kind in KINDS else (kind, prm))
                 for lab, (kind, prm) in agents.items()}
        _, _, res = compare({"random": ("random", {}), **specs}, env_id, n_reps=reps,
                            seed=TUNE_SEED, env_params=ep)
        rate = res["random"].regret.mean()
        for lab in agents:
            r = res[lab]
            segs = [r.regret[:, a:b].mean() / rate
                    for a, b in zip(SEGMENTS[:-1], SEGMENTS[1:], strict=True)]
            out[(inst, lab)] = r.regret.mean() / rate
            print(f"{inst:22s} {lab:18s} {out[(inst, lab)]:.3f} | "
                  + " ".join(f"{s:.2f}" for s in segs), flush=True)
    for lab in agents:
        print(f"mean log ratio {lab:18s} "
              f"{np.mean([math.log(out[(i, lab)]) for i in insts]):+.3f}")


if __name__ == "__main__":
    main()

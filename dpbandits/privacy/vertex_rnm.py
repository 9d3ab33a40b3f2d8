"""Report-noisy-min over the ``2d`` vertices ``±e_j``, sampled exactly from a few random words.

The selection of DP-POFW (Han et al. 2022, Algorithm 2) returns ``argmin_i s_i + beta L_i`` with
scores ``s_i = dir_i`` (``i < d``, vertex ``+e_i``) and ``s_{d+j} = -dir_j`` (vertex ``-e_j``)
and ``L_i`` i.i.d. Laplace(0, 1). Only the index is released, so any sampler of *the index's
law* gives the same mechanism. This one draws far fewer variates than the ``2d`` Laplace
values (about 4 random words instead of ``2d`` exponentials when ``beta`` is large against
the score spread, as at every privacy level of the paper's figures).

Why it is exact. Write ``L_i = S_i E_i`` (fair sign, ``E_i ~ Exp(1)``; the Laplace law) and
``tau = min_i s_i = -M`` with ``M = max_j |dir_j|``, ``delta_i = (s_i - tau) / beta >= 0``.
The noisy score is below ``tau`` iff ``S_i = -1`` and ``E_i > delta_i``; call that set ``B``.
Given ``B``, memorylessness makes the noisy scores of ``B``'s members ``tau - beta E_i'`` with
``E_i'`` i.i.d. Exp(1), all below every non-member's: the argmin is uniform on ``B``. So:

1. the signs ``S_i`` are bits of the first ``ceil(2d / 64)`` words (bit ``i % 64`` of word
   ``i // 64`` set: ``S_i = -1``, a candidate);
2. the independent events ``X_i = {E_i <= delta_i}`` (``P = 1 - exp(-delta_i)``) are thinned
   from ``Y_i = {E_i <= delta_max}`` (``delta_max = 2M / beta``): the ``Y``-positions are a
   Bernoulli(``1 - exp(-delta_max)``) sequence, walked with geometric gaps
   ``floor(E / delta_max)``, ``E ~ Exp(1)`` (``P(gap >= k) = exp(-k delta_max)``); a
   candidate at such a position is excluded (``X_i``) with probability
   ``P(E <= delta_i | E <= delta_max) = expm1(-delta_i) / expm1(-delta_max)``, one uniform;
3. if candidates remain, the index is a uniform one of them, by rejection from ``nb``-bit
   fields of the words (exact): when at least half of the ``2d`` positions are candidates,
   a uniform position in ``[0, 2^nb)`` (``2^(nb-1) < 2d <= 2^nb``) is kept if it is a
   candidate; otherwise the ``k``-th candidate, ``k`` uniform in ``[0, count)`` the same way;
4. otherwise (``B`` empty: likely only when ``beta`` is small against the spread) every
   noisy score is drawn from its law given ``(S_i, X_i)`` — ``s_i + beta E`` for a positive
   sign, ``s_i - beta E`` with ``E`` truncated to ``[0, delta_i]`` by inversion for a negative
   one — and the argmin is taken.

Exponentials are ``-log(U)`` and uniforms ``U`` from the top 53 bits of a word (the 2^-53 grid
of numpy's own uniforms); ``E`` and the uniforms of steps 2-4 come in order from the words
after the sign words. A row's words: ``words`` (a fixed number per round, drawn ahead), then
``spill[s0:]`` (drawn on demand); the sampler returns ``-1`` when it would need more.

Exact up to the grid (a caveat every guarantee built on it states). The law above is exact
over the reals; the uniforms live on a 2^-53 grid (so every exponential is at most
``53 log 2 = 36.7``: an outcome that needs a larger one, e.g. a vertex winning against a
score gap above ``36.7 beta``, has probability exactly 0 instead of about 1e-16) and the
thresholds are computed in floating point. :func:`tv_slack` bounds the total-variation
distance between the sampled index and the exact one by coupling each grid uniform with the
continuous uniform in its cell (``m = 2d``, ``Delta = 2M / beta``; ``log``, ``log1p`` and
``expm1`` within 1 ulp, as glibc's are):

* step 2, each of at most ``m + 1`` gaps: the computed and exact gaps differ only when one
  of the ``m`` thresholds ``exp(-k Delta)`` lies in the uniform's cell (``2^-53``) or in the
  rounding window of ``q`` (relative error ``<= 2^-50``, a window ``<= 2^-50 sup x e^-x``
  wide in ``U``): ``9 m 2^-53`` per gap;
* step 2, each of at most ``m`` exclusions: the cell plus the threshold's absolute error
  (relative ``<= 8 * 2^-53`` of a number in ``[0, 1]``): ``9 * 2^-53``;
* step 3 is exact (uniform fields of raw bits, rejection);
* step 4: write each drawn value as ``s_i + beta l_i`` (``l_i`` the Laplace variate, ``|l_i|
  = e``). Its error against the exact value of the continuous uniform, in units of ``beta``,
  is at most ``2^-48 e^e + 2^-50 e + 2^-54 Delta`` (the cell: ``2^-53 e^e``; ``log``,
  ``log1p`` of ``1 + t`` near 0 and ``expm1``: ``2^-49 e^e`` and ``2^-51 e``; the sum with
  ``|s_i| <= M``: ``2^-54 Delta``), plus the cut at ``2^-53`` (mass ``2^-53``). The computed
  argmin differs from the exact one only if some value lies within twice its own error of
  the minimum of the others (the larger of the two errors of the swapped pair), which is
  independent of it; ``l_i`` has density ``e^-|l| / 2``, so this has probability at most
  ``2^-53 (2 Delta + 1000)`` per index (the ``e^e`` growth of the error against the
  ``e^-e`` decay of the density leaves a constant, ``<= 2^-47 e^2`` where the window is
  narrow, ``<= 2^-48`` where it is wide).

Summed, with generous constants (a bound, not an estimate; the union over thresholds counts
cells many times): ``eta = 2^-53 m (9 m + 2 Delta + 1018)``. A step that is ``eps``-DP in
exact arithmetic is therefore ``(eps, (1 + e^eps) eta)``-DP as sampled, and a run of ``n``
steps whose exact law is ``(eps, delta)``-DP is ``(eps, delta + (1 + e^eps) n eta_max)``-DP
(the couplings of the steps compose: the runs differ with probability at most ``n
eta_max``). ``beta`` must be positive and finite: a zero noise scale is no private
selection and is refused.

:func:`select_row` is the scalar reference (compiled by
:mod:`dpbandits.optim.streaming._pofw_kernels`, which alone imports numba); :func:`select_rows`
the numpy version over rows (same words, same numbers; the rare rows that need step 4 or more
words than ``words`` holds run through :func:`select_row`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import no_type_check

import numpy as np

__all__ = ["EMPTY", "Spill", "check_beta", "fixed_words", "select_row", "select_rows",
           "sign_words", "tv_slack"]

_U53 = 2.0**-53
_SH = np.uint64(11)
_ONE = np.uint64(1)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
#: An empty word buffer, ``select_row``'s spill argument when no words were spilled.
EMPTY = np.zeros(0, dtype=np.uint64)


def sign_words(d: int) -> int:
    """Words holding the ``2d`` sign bits."""
    return (2 * d + 63) // 64


def fixed_words(d: int) -> int:
    """Words per row and round drawn ahead: the signs plus 8 (the first exponential gap, the
    pick and three hits; more come from the spill)."""
    return sign_words(d) + 8


def tv_slack(d: int, dmax: float) -> float:
    """Bound on the total-variation distance between this module's sampled index and exact
    report-noisy-min over ``2d`` vertices, ``dmax = 2 max|dir| / beta`` (module docstring:
    ``2^-53 m (9 m + 2 dmax + 1018)``, ``m = 2d``)."""
    m = 2.0 * d
    return 2.0**-53 * m * (9.0 * m + 2.0 * dmax + 1018.0)


def check_beta(beta: float) -> float:
    """``beta`` as a positive finite float, else ``ValueError``: with a zero noise scale the
    thresholds are ``0/0`` (NaN) and the selection is neither private nor the argmin."""
    b = float(beta)
    if not (math.isfinite(b) and b > 0.0):
        raise ValueError(f"beta (the Laplace scale of report-noisy-min, relative to the "
                         f"radius) must be positive and finite, got {b}; a zero or "
                         "non-finite noise scale is no private selection")
    return b


def _popcount_swar(x):
    """Set bits of a uint64 (SWAR; uint64 arithmetic wraps: the compiled form of
    :func:`_popcount`)."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


def _bit_length(n):
    """Bits of a positive int: ``2^(b-1) <= n < 2^b``."""
    b = 0
    while n > 0:
        b += 1
        n >>= 1
    return b


def _lowest_bit(x):
    """Position of the lowest set bit of a nonzero uint64."""
    b = 0
    while not (x >> np.uint64(b)) & _ONE:
        b += 1
    return b


def _popcount(x):
    """Set bits of a uint64 (Python ints do not wrap)."""
    return int(x).bit_count()


@no_type_check  # compiled by numba with select_row
def _uniform_field(bound, in_cand, cand, words, spill, s0, c, avail):
    """``(v, c)`` for ``bound >= 2``: the first ``nb``-bit field ``v < bound`` of the next
    words (``2^(nb-1) < bound <= 2^nb``; with ``in_cand``, also a set bit of ``cand``), read
    from the lowest field of each word up, and the words used so far; ``(-1, c)`` if the
    words run out. Uniform on the accepted values (exact rejection): both uniform draws of
    step 3 of :func:`select_row`."""
    F = words.shape[0]
    nb = _bit_length(bound - 1)
    fmask = (_ONE << np.uint64(nb)) - _ONE
    while True:
        if c >= avail:
            return -1, c
        w = words[c] if c < F else spill[s0 + c - F]
        c += 1
        for a in range(64 // nb):
            v = np.int64((w >> np.uint64(a * nb)) & fmask)
            if v < bound and (not in_cand or ((cand[v >> 6] >> np.uint64(v & 63)) & _ONE) != 0):
                return v, c


@no_type_check  # compiled by numba, which infers its own types
def select_row(base: np.ndarray, inv: float, M: float, beta: float, words: np.ndarray,
               spill: np.ndarray, s0: int, cand: np.ndarray) -> tuple[int, int]:
    """Index in ``[0, 2d)`` of report-noisy-min with Laplace(``beta``) noise over the scores
    ``(+dir, -dir)``, ``dir_j = base[j] * inv`` and ``M = max_j |dir_j|`` (``beta > 0``), and
    the number of words used; ``(-1, n)`` if ``words`` then ``spill[s0:]`` run out.
    ``cand``: scratch of :func:`sign_words` uint64. Module docstring: the law and the words.
    """
    d = base.shape[0]
    m = 2 * d
    nw = (m + 63) // 64
    F = words.shape[0]
    avail = F + spill.shape[0] - s0
    for k in range(nw):
        cand[k] = words[k]
    rem = m - 64 * (nw - 1)
    if rem < 64:
        cand[nw - 1] &= (_ONE << np.uint64(rem)) - _ONE
    c = nw
    dmax = (2.0 * M) / beta
    if dmax > 0.0:
        den = 0.0
        pos = 0
        while pos < m:
            if c >= avail:
                return -1, c
            w = words[c] if c < F else spill[s0 + c - F]
            c += 1
            q = -math.log((float(w >> _SH) + 1.0) * _U53) / dmax
            if q >= m - pos:
                break
            pos += int(q)
            kw, bit = pos >> 6, np.uint64(pos & 63)
            if (cand[kw] >> bit) & _ONE:
                if c >= avail:
                    return -1, c
                w = words[c] if c < F else spill[s0 + c - F]
                c += 1
                if den == 0.0:
                    den = math.expm1(-dmax)
                s = base[pos] * inv if pos < d else -(base[pos - d] * inv)
                if float(w >> _SH) * _U53 < math.expm1(-((s + M) / beta)) / den:
                    cand[kw] &= ~(_ONE << bit)
            pos += 1
    count = 0
    for k in range(nw):
        count += _popcount(cand[k])
    if count > 0 and 2 * count >= m:
        # a uniform position, accepted if it is a candidate (at least half are): uniform
        # on the candidates; nb-bit fields of the words, 2^(nb-1) < m <= 2^nb
        return _uniform_field(m, True, cand, words, spill, s0, c, avail)
    if count > 0:
        # few candidates: the k-th of them, k uniform by rejection from nb-bit fields
        k = 0
        if count > 1:
            k, c = _uniform_field(count, False, cand, words, spill, s0, c, avail)
            if k < 0:
                return -1, c
        for kw in range(nw):
            x = cand[kw]
            n = _popcount(x)
            if k < n:
                for _ in range(k):
                    x &= x - _ONE
                return 64 * kw + _lowest_bit(x), c
            k -= n
    # B is empty: every noisy score from its law given (S_i, X_i)
    best = math.inf
    arg = 0
    for i in range(m):
        if c >= avail:
            return -1, c
        w = words[c] if c < F else spill[s0 + c - F]
        c += 1
        s = base[i] * inv if i < d else -(base[i - d] * inv)
        if (words[i >> 6] >> np.uint64(i & 63)) & _ONE:  # negative sign, excluded
            e = -math.log1p(float(w >> _SH) * _U53 * math.expm1(-((s + M) / beta)))
            val = s - beta * e
        else:
            val = s + beta * -math.log((float(w >> _SH) + 1.0) * _U53)
        if val < best:
            best = val
            arg = i
    return arg, c


def _u53(w: np.ndarray) -> np.ndarray:
    return (w >> _SH).astype(np.float64) * _U53


def select_rows(direction: np.ndarray, beta: float, words: np.ndarray, spill: Spill
                ) -> np.ndarray:
    """:func:`select_row` for every row of ``direction`` (R, d), with the row's ``words``
    (R, F) and the shared ``spill`` (a :class:`Spill`, rows served in order); returns the
    indices (R,); ``beta`` positive and finite (:func:`check_beta`). Vectorized over rows;
    rows that need step 4 or more than ``F`` words run through the scalar :func:`select_row`
    (plain Python), as the kernels do."""
    R, d = direction.shape
    m, nw, F = 2 * d, sign_words(d), words.shape[1]
    beta = check_beta(beta)
    M = np.abs(direction).max(axis=1)
    if not np.all(np.isfinite(M)):
        bad = int(np.flatnonzero(~np.isfinite(M))[0])
        raise ValueError(f"direction must be finite, got a NaN or inf in row {bad}")
    dmax = (2.0 * M) / beta
    cand = words[:, :nw].copy()
    rem = m - 64 * (nw - 1)
    if rem < 64:
        cand[:, -1] &= (_ONE << np.uint64(rem)) - _ONE
    c = np.full(R, nw, dtype=np.int64)
    pos = np.zeros(R, dtype=np.int64)
    slow = np.zeros(R, dtype=bool)
    den = np.expm1(-dmax)
    active = dmax > 0.0
    while True:
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        out = c[rows] >= F
        slow[rows[out]] = True
        active[rows[out]] = False
        rows = rows[~out]
        q = -np.log(((words[rows, c[rows]] >> _SH).astype(np.float64) + 1.0) * _U53)
        q /= dmax[rows]
        c[rows] += 1
        done = q >= m - pos[rows]
        active[rows[done]] = False
        rows, q = rows[~done], q[~done]
        p = pos[rows] + q.astype(np.int64)
        pos[rows] = p + 1
        active[rows[p + 1 >= m]] = False
        hit = ((cand[rows, p >> 6] >> (p & 63).astype(np.uint64)) & _ONE).astype(bool)
        hr, hp = rows[hit], p[hit]
        out = c[hr] >= F
        slow[hr[out]] = True
        active[hr[out]] = False
        hr, hp = hr[~out], hp[~out]
        u = _u53(words[hr, c[hr]])
        c[hr] += 1
        s = direction[hr, hp % d]
        s = np.where(hp < d, s, -s)
        excl = u < np.expm1(-((s + M[hr]) / beta)) / den[hr]
        hr, hp = hr[excl], hp[excl]
        cand[hr, hp >> 6] &= ~(_ONE << (hp & 63).astype(np.uint64))
    count = np.bitwise_count(cand).sum(axis=1, dtype=np.int64)
    slow |= count == 0
    idx = np.zeros(R, dtype=np.int64)
    # many candidates: a uniform position, kept if it is a candidate
    nbm = _bit_length(m - 1)
    fmask = (_ONE << np.uint64(nbm)) - _ONE
    todo = np.flatnonzero(~slow & (2 * count >= m))
    while todo.size:
        out = c[todo] >= F
        slow[todo[out]] = True
        todo = todo[~out]
        w = words[todo, c[todo]]
        c[todo] += 1
        got = np.full(todo.size, -1, dtype=np.int64)
        for a in range(64 // nbm):
            v = ((w >> np.uint64(a * nbm)) & fmask).astype(np.int64)
            ok = (got < 0) & (v < m)
            vv = np.where(ok, v, 0)
            ok &= ((cand[todo, vv >> 6] >> (vv & 63).astype(np.uint64)) & _ONE).astype(bool)
            got[ok] = v[ok]
        idx[todo] = got
        todo = todo[got < 0]
    # few candidates: the k-th, k uniform in [0, count)
    few = np.flatnonzero(~slow & (2 * count < m))
    k = np.zeros(few.size, dtype=np.int64)
    todo = np.flatnonzero(count[few] > 1)
    if todo.size:
        nb = np.zeros(few.size, dtype=np.int64)
        v = count[few] - 1
        while np.any(v > 0):
            nb += v > 0
            v >>= 1
        k[todo] = -1
        while todo.size:
            rows = few[todo]
            out = c[rows] >= F
            slow[rows[out]] = True
            todo, rows = todo[~out], rows[~out]
            w = words[rows, c[rows]]
            c[rows] += 1
            b = nb[todo].astype(np.uint64)
            per = 64 // nb[todo]
            got = np.full(todo.size, -1, dtype=np.int64)
            for a in range(int(per.max(initial=0))):
                v = ((w >> (np.uint64(a) * b)) & ((_ONE << b) - _ONE)).astype(np.int64)
                take = (got < 0) & (a < per) & (v < count[rows])
                got[take] = v[take]
            k[todo] = got
            todo = todo[got < 0]
    if few.size:
        bits = np.unpackbits(cand[few].astype("<u8").view(np.uint8), axis=1,
                             bitorder="little")[:, :m]
        idx[few] = np.argmax(np.cumsum(bits, axis=1, dtype=np.int64) > k[:, None], axis=1)
    scratch = np.empty(nw, dtype=np.uint64)
    late = []
    with np.errstate(over="ignore"):
        for r in np.flatnonzero(slow):
            i, _ = select_row(direction[r], 1.0, M[r], beta, words[r], EMPTY, 0, scratch)
            if i < 0:
                late.append(r)
            idx[r] = i
        for r in late:
            def sample(sp: np.ndarray, s0: int, r: int = int(r)) -> tuple[int, int]:
                return select_row(direction[r], 1.0, M[r], beta, words[r], sp, s0, scratch)

            idx[r] = spill.serve(sample, F)
    return idx


class Spill:
    """The words a row needs beyond its fixed ones, from a generator of its own, handed out
    in order: rows are served one after the other, each from where the last stopped."""

    BLOCK = 4096

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.buf = EMPTY
        self.pos = 0

    def refill(self) -> None:
        """Keep the unused words and append a fresh block."""
        self.buf = np.concatenate([self.buf[self.pos:],
                                   self.rng.bit_generator.random_raw(self.BLOCK)])
        self.pos = 0

    def serve(self, sample: Callable[[np.ndarray, int], tuple[int, int]], n_fixed: int
              ) -> int:
        """Run ``sample(buf, pos) -> (index, words used)`` until the words suffice; advance
        past the spill words it used."""
        while True:
            i, used = sample(self.buf, self.pos)
            if i >= 0:
                self.pos += max(0, used - n_fixed)
                return i
            self.refill()

"""Private top-``s`` selection by *peeling*, batched over replications.

The mechanism (Dwork, Su & Zhang 2018, "Differentially private false discovery rate
control"; used as the private hard-thresholding step of the noisy iterative hard
thresholding of Cai, Wang & Zhang 2021, "The cost of privacy", Algorithm 2, and of FLIPHAT,
Chakraborty, Roy & Basu, AISTATS 2025). For one vector ``v`` in ``R^D``:

1. ``S = {}``; for ``i = 1..s``: draw ``w ~ Laplace(0, b)^D`` and add
   ``j* = argmax_{j not in S} |v_j| + w_j`` to ``S`` (a report-noisy-max step);
2. draw ``w~ ~ Laplace(0, b)^s`` and release ``u`` with ``u_S = v_S + w~`` and ``u_j = 0``
   off ``S``.

Privacy, for inputs with ``||v(D) - v(D')||_inf <= lambda`` (the *l_inf sensitivity*, which
the caller must derive for its own query) and ``b = c * lambda`` (``c`` is the *noise
multiplier*):

* each report-noisy-max step is a report-noisy-max on the scores ``|v_j|``, each of
  sensitivity ``lambda`` and not monotone, so it is ``(2 / c)``-DP (Dwork & Roth 2014,
  Claim 3.9 with the factor 2 of non-monotone scores);
* each released value ``v_j + w~_j`` (``j`` fixed by the selection, a post-processing of
  the steps before) is a Laplace mechanism with sensitivity ``lambda``: ``(1 / c)``-DP.

One call is therefore the adaptive composition of ``s`` pure ``(2/c)``-DP steps and ``s``
Laplace mechanisms of scale ``c`` (relative to the sensitivity). :func:`peeling_event`
writes exactly that as dp_accounting events; :func:`peeling_epsilon` composes them with the
PLD accountant.

Calibration (:func:`peeling_noise_multiplier`) for ``count`` calls sharing ``(epsilon,
delta)`` (e.g. the ``M`` iterations of one N-IHT run):

* ``"theorem"`` — Cai, Wang & Zhang (2021), Lemma 3.3 (from Dwork, Su & Zhang): each call
  gets ``(epsilon/count, delta/count)`` (basic composition) and
  ``b = lambda * 2 sqrt(3 s ln(1/delta_call)) / epsilon_call``, i.e.
  ``c = 2 sqrt(3 s ln(count/delta)) * count / epsilon`` (:func:`peeling_scale_theorem` is the
  per-call formula). The lemma rests on advanced composition, which needs small per-step
  epsilons; at large epsilon the closed form does **not** certify the whole mechanism
  (e.g. ``epsilon = 10, delta = 0.1, s = 10``: the PLD accountant gives 11.7). The
  calibration therefore checks every per-call claim with the PLD accountant and raises
  where the closed form fails.
* ``"accountant"`` — the smallest ``c`` (within 0.1%) for which the PLD accountant
  certifies ``(epsilon, delta)`` for the ``count``-fold composition of the events above
  (about 1.5x less noise than the theorem at ``epsilon = 1, delta = 1e-5, s = 10``).

Randomness: every call draws fresh noise from the ``numpy.random.Generator`` it is given
(standard Laplace variates multiplied by the scale), ``s * (D + 1)`` variates per
replication whatever the data and scale, so that streams stay aligned across neighbouring
inputs and no noise is ever replayed (the authors' code re-used ``s - 1`` of the previous
call's selection-noise vectors through its PRNG-key chaining; FLIPHAT note, section 5c).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from dp_accounting import DpEvent
from numpy.typing import ArrayLike

from dpbandits._validation import (
    check_array,
    check_choice,
    check_delta,
    check_delta_open,
    check_epsilon,
    check_int,
    check_nonnegative,
    check_positive,
    check_rng,
)
from dpbandits.privacy.mechanisms import report_noisy_argmax, standard_laplace
from dpbandits.privacy.plan import check_calibration

__all__ = [
    "PeelResult",
    "hard_threshold",
    "peel",
    "peeling_scale_theorem",
    "peeling_event",
    "peeling_epsilon",
    "peeling_noise_multiplier",
    "CALIBRATIONS",
]

#: the calibrations of :func:`peeling_noise_multiplier` (``dpbandits.privacy.plan``'s
#: vocabulary; its aliases ``"paper"``/``"zcdp"`` and ``"pld"`` are accepted)
CALIBRATIONS = ("theorem", "accountant")


@dataclass(frozen=True)
class PeelResult:
    """Output of :func:`peel`.

    ``values`` (R, D): the released sparse vectors; ``support`` (R, s): the selected
    coordinates in selection order; ``scale`` (R,): the Laplace scale used per replication.
    """

    values: np.ndarray
    support: np.ndarray
    scale: np.ndarray


def _check_vectors(v) -> np.ndarray:
    arr = check_array("v", v, ndim=2)
    if arr.shape[1] < 1:
        raise ValueError(f"v must have shape (R, D) with D >= 1, got {arr.shape}")
    return arr


def _check_sparsity(s, dim: int) -> int:
    return check_int("s (sparsity)", s, low=1, high=dim)


def hard_threshold(v: ArrayLike, s: int) -> np.ndarray:
    """Exact hard thresholding ``H_s``: keep the ``s`` largest ``|v_j|`` of every row.

    ``v`` (R, D) -> (R, D). Ties go to the lowest index (the order in which :func:`peel`
    selects when its scale is 0, so ``peel`` with ``scale=0`` equals ``hard_threshold``).
    """
    v = _check_vectors(v)
    s = _check_sparsity(s, v.shape[1])
    keep = np.argsort(-np.abs(v), axis=1, kind="stable")[:, :s]
    out = np.zeros_like(v)
    rows = np.arange(v.shape[0])[:, None]
    out[rows, keep] = v[rows, keep]
    return out


def peel(rng: np.random.Generator, v: ArrayLike, s: int, scale: float | np.ndarray
         ) -> PeelResult:
    """Private top-``s`` selection of every row of ``v`` (module docstring, steps 1-2).

    Parameters
    ----------
    rng : numpy Generator; fresh noise is drawn on every call.
    v : (R, D) finite array, one vector per replication.
    s : int in [1, D].
    scale : float >= 0 or (R,) array >= 0 — the Laplace scale ``b`` per replication
        (``noise multiplier x l_inf sensitivity``). ``0`` gives exact hard thresholding.

    Returns a :class:`PeelResult`. The loop runs over the ``s`` peeling steps; each step is
    one vectorized operation over all replications and coordinates.
    """
    rng = check_rng(rng)
    v = _check_vectors(v)
    n_reps, dim = v.shape
    s = _check_sparsity(s, dim)
    if np.ndim(scale) == 0:
        b = np.full(n_reps, check_nonnegative("scale", float(scale)))
    else:
        b = check_array("scale", scale, shape=(n_reps,))
        if np.any(b < 0):
            raise ValueError(f"scale must be >= 0, got min {b.min()}")
    rows = np.arange(n_reps)
    absv = np.abs(v)
    taken = np.zeros((n_reps, dim), dtype=bool)
    support = np.empty((n_reps, s), dtype=np.int64)
    for i in range(s):
        j = report_noisy_argmax(rng, absv, b, exclude=taken)
        support[:, i] = j
        taken[rows, j] = True
    values = np.zeros_like(v)
    picked = rows[:, None], support
    values[picked] = v[picked] + b[:, None] * standard_laplace(rng, (n_reps, s),
                                                               method="inversion")
    return PeelResult(values=values, support=support, scale=b)


# ----------------------------------------------------------------------------- calibration
def peeling_scale_theorem(epsilon: float, delta: float, s: int, sensitivity: float) -> float:
    """Laplace scale of one peeling call at ``(epsilon, delta)`` (Cai, Wang & Zhang 2021,
    Lemma 3.3): ``b = sensitivity * 2 sqrt(3 s ln(1/delta)) / epsilon``.

    ``sensitivity`` is the l_inf sensitivity ``lambda`` of the peeled vector. The closed form
    is only checked (not assumed) by :func:`peeling_noise_multiplier`.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta_open(delta, why="for the peeling lemma")
    s = check_int("s (sparsity)", s, low=1)
    lam = check_nonnegative("sensitivity", sensitivity)
    if math.isinf(eps):
        return 0.0
    return lam * 2.0 * math.sqrt(3.0 * s * math.log(1.0 / dlt)) / eps


def peeling_event(noise_multiplier: float, s: int, count: int = 1) -> DpEvent:
    """dp_accounting event of ``count`` peeling calls with ``b = noise_multiplier * lambda``.

    Per call: ``s`` report-noisy-max steps, each pure ``(2 / noise_multiplier)``-DP
    (:func:`dpbandits.privacy.accounting.pure_dp_event`), and ``s`` Laplace mechanisms with
    scale ``noise_multiplier`` relative to the sensitivity
    (:func:`dpbandits.privacy.accounting.laplace_event`).
    """
    from dpbandits.privacy.accounting import compose, laplace_event, pure_dp_event

    c = check_positive("noise_multiplier", noise_multiplier)
    s = check_int("s (sparsity)", s, low=1)
    count = check_int("count", count, low=1)
    one = compose([pure_dp_event(2.0 / c, count=s), laplace_event(c, count=s)])
    return one if count == 1 else compose([one] * count)


def peeling_epsilon(noise_multiplier: float, s: int, delta: float, count: int = 1,
                    method: str = "pld") -> float:
    """epsilon at ``delta`` of ``count`` peeling calls (PLD accountant by default), computed
    now: a number that decides whether a calibration certifies is never read from the store."""
    from dpbandits.privacy.accounting import epsilon_of

    return float(epsilon_of(peeling_event(noise_multiplier, s, count), delta, method))


@lru_cache(maxsize=512)
def _multiplier(eps: float, dlt: float, s: int, count: int, calibration: str,
                method: str) -> float:
    from dpbandits.privacy.accounting import calibrate

    if calibration == "theorem":
        eps_call, dlt_call = eps / count, dlt / count
        c = peeling_scale_theorem(eps_call, dlt_call, s, 1.0)
        got = peeling_epsilon(c, s, dlt_call, 1, method)
        if got > eps_call * (1.0 + 1e-9):
            raise ValueError(
                f"calibration='theorem': the closed form of Cai, Wang & Zhang (2021, Lemma "
                f"3.3) does not certify (epsilon={eps_call:.4g}, delta={dlt_call:.3g}) per "
                f"peeling call at s={s} (the {method.upper()} accountant gives epsilon="
                f"{got:.4g}; the lemma's advanced composition needs small per-step epsilons);"
                " use calibration='accountant'")
        return c
    return calibrate(lambda c: peeling_event(c, s, count), eps, dlt, method=method,
                     rtol=1e-3)


def peeling_noise_multiplier(epsilon: float, delta: float, s: int, *, count: int = 1,
                             calibration: str = "accountant", method: str = "pld") -> float:
    """Noise multiplier ``c`` (``b = c * lambda``) making ``count`` peeling calls jointly
    ``(epsilon, delta)``-DP; see the module docstring for the two calibrations.

    ``calibration`` is ``"theorem"`` or ``"accountant"``, or one of the aliases of
    :data:`dpbandits.privacy.plan.ALIASES` (``"paper"``, ``"zcdp"``: the theorem; ``"pld"``:
    the accountant), which give the same multiplier; another value raises ``ValueError``
    naming the parameter, the value and the allowed values.
    ``epsilon = inf`` gives 0 (no noise). Results are cached (calibration runs the accountant).
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    s = check_int("s (sparsity)", s, low=1)
    count = check_int("count", count, low=1)
    calibration = check_calibration(calibration, CALIBRATIONS, "peeling_noise_multiplier")
    check_choice("method", method, {"pld", "rdp"})
    if math.isinf(eps):
        return 0.0
    check_delta_open(dlt, why="for a private peeling calibration")
    return _multiplier(eps, dlt, s, count, calibration, method)

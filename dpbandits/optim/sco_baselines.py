"""The DP-SCO baselines of seed 000's Table 5.1: NoisySFW, LocalMD and NoisySGD.

Batch optimizers (``fit(loss, X, y, rng, n_reps=None) -> BatchResult``) over the l_p ball
``C = {||theta||_p <= radius}``, batched over ``R`` replications (``X`` of shape ``(n, d)``
shared by all replications, or ``(R, n, d)``). Spec: ``reference/notes/sco-baselines.md``;
the original papers are

* **NoisySFW** — Bassily, Guzmán & Nandi, "Non-Euclidean differentially private stochastic
  convex optimization", COLT 2021 (seed 000's "Bassily et al. 2021b"), Algorithm 3;
* **LocalMD** — Asi, Feldman, Koren & Talwar, "Private stochastic convex optimization: optimal
  rates in l1 geometry", ICML 2021, Algorithm 6 calling Algorithm 5;
* **NoisySGD** — Bassily, Feldman, Guzmán & Talwar, "Stability of stochastic gradient descent
  on nonsmooth convex losses", NeurIPS 2020, Algorithm 2.

Clipping (part of every algorithm, always counted)
--------------------------------------------------
Every per-sample gradient is clipped to ``||g||_q <= L0`` (``q`` dual to ``p``; ``lipschitz``
parameter), so the sensitivities below hold for any data. NoisySFW additionally clips each
per-sample *difference* ``clip grad f(theta_t) - clip grad f(theta_{t-1})`` to
``L1 ||theta_t - theta_{t-1}||_p`` (``smoothness`` parameter): the smoothness bound that its
privacy proof uses would otherwise not survive the first clipping (radial clipping in a
non-Euclidean norm is only 2-Lipschitz). With data inside the bounds neither clip fires and the
algorithms are exactly the papers'. ``BatchResult.n_clipped`` counts the gradient clips,
``extra["n_diff_clipped"]`` the difference clips.

Privacy (replace-one neighbours; every iterate of the history is covered)
-------------------------------------------------------------------------
* NoisySFW: each sample enters exactly one noisy aggregate (first half ``B0`` once, then
  disjoint batches of the second half), so by parallel composition the output is
  ``(epsilon, delta)``-DP as soon as each aggregate is, and each aggregate uses the generalized
  Gaussian mechanism (seed 000 Lemma 2.1 = Bassily et al. 2021b) with
  ``sigma = s sqrt(2 kappa log(1/delta)) / epsilon`` for its l_q sensitivity ``s``:
  ``s0 = 2 L0 / |B0|`` and ``s = 2 L1 eta M / b`` (``M = 2 radius``). With ``|B0| = n/2`` and
  ``b = sqrt(n)/2`` these are the note's ``sigma_0 = 4 sqrt(2 kappa) L0 sqrt(log(1/delta))/(n eps)``
  and ``sigma = sqrt(32 kappa L1^2 M^2 eta^2 log(1/delta) / (n eps^2))``; for other ``n`` the
  actual (floored) batch sizes are used, which only adds noise. When the smooth norm is
  Euclidean (``q_plus = 2``: ``p = 2``, or small ``d``) the noise is an ordinary Gaussian; it
  is then checked with the exact Gaussian formula (Balle & Wang 2018) and raised if Lemma 2.1's
  value were too small. Otherwise, as for DP-TOFW, Lemma 2.1 is trusted only for
  ``epsilon <= 1`` (above, the guarantee is reported as not certified).
* LocalMD: Gaussian noise ``sigma_i = c L0 sqrt(d^{1-2/q} log(1/delta)) / (b_i eps_i)`` on
  the mean of ``b_i`` gradients sampled without replacement from the phase's ``n_i`` samples;
  the replace-one l_2 sensitivity of that mean is ``2 L0 d^{1/2-1/q} / b_i``
  (``||g||_2 <= d^{1/2-1/q} ||g||_q`` for ``q >= 2``), i.e. noise multiplier
  ``c sqrt(log(1/delta)) / (2 eps_i)``. Asi et al. prove privacy with the moments accountant and
  an unspecified constant ``c``; seed 000's comparison used ``c = 100``.
* NoisySGD: ``n^2`` steps, one index per step, Gaussian noise ``sigma`` per coordinate; the
  replace-one l_2 sensitivity of one clipped gradient is ``2 L0`` (``q <= 2`` so
  ``||g||_2 <= ||g||_q``). The paper's ``sigma = sqrt(8 L0^2 log(1/delta)) / epsilon``
  (``calibration="theorem"``) rests on the moments accountant of Abadi et al. (add/remove
  neighbours, Poisson sampling).

For LocalMD and NoisySGD the ledger is the sequence of subsampled Gaussian steps,
``SampledWithoutReplacementDpEvent(n, b, GaussianDpEvent(z))`` (one index per step is the
same as sampling one index without replacement), and the reported ``privacy`` is what
dp_accounting's RDP accountant certifies for that ledger under ``REPLACE_ONE`` neighbours
(Wang, Balle & Kasiviswanathan 2019, Theorem 27) — recomputable with
:func:`dpbandits.privacy.accounting.replace_one_rdp_epsilon` at
:data:`~dpbandits.privacy.accounting.SCO_BASELINE_ORDERS`. For NoisySGD with the paper's
sigma this is about 1.7 at a target of ``epsilon = 1``, ``delta = 1/n`` (the paper's
add/remove reasoning does not carry over to replace-one); ``calibration="accountant"``
instead finds the smallest sigma the accountant certifies for the target (about 1.6x the
paper's). LocalMD's phases use disjoint samples; its
ledger composes them sequentially anyway (conservative, and the budgets ``eps_i = 2^-i eps``
sum to less than ``eps``). NoisySFW's ledger is the one mechanism a sample enters (see
:meth:`NoisySFW.ledger_for`).

Randomness: every draw comes from the ``rng`` given to ``fit``; same seed => bit-identical
results (for NoisySGD, on the same backend).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import dp_accounting
import numpy as np
from dp_accounting import dp_event as _ev

from dpbandits._validation import (
    check_array,
    check_choice,
    check_delta,
    check_epsilon,
    check_int,
    check_p,
    check_positive,
    check_real,
    check_rng,
)
from dpbandits.geometry import (
    clip_to_norm,
    dual_exponent,
    lmo_lp_ball,
    lp_norm,
    noise_geometry,
    project_l2_ball,
    project_lp_ball,
)
from dpbandits.losses import GLMLoss, HuberLoss, Loss, make_loss
from dpbandits.optim import _noisy_sgd_kernel as _kernel
from dpbandits.optim.base import BatchOptimizer, BatchResult
from dpbandits.privacy import accounting
from dpbandits.privacy.accounting import SCO_BASELINE_ORDERS
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.mechanisms import (
    gaussian_mechanism_delta,
    gaussian_sigma_analytic,
    generalized_gaussian_noise,
)

__all__ = [
    "LocalMD",
    "LocalMDPhase",
    "NoisySFW",
    "NoisySFWSchedule",
    "NoisySGD",
    "local_md_phases",
    "noisy_sfw_schedule",
    "noisy_sgd_noise_multiplier",
    "noisy_sgd_step_size",
    "sample_without_replacement",
]

# Max float64 entries of a temporary block (per-sample gradients, pre-drawn noise).
_BLOCK_ENTRIES = 1 << 21


# =========================================================================== sampling
def sample_without_replacement(rng: np.random.Generator, n: int, b: int, size) -> np.ndarray:
    """``size`` independent uniform subsets of ``b`` distinct indices from ``range(n)``.

    Returns int64 of shape ``(*size, b)`` (the order inside a subset is random). Small ``b``
    (``b^2 <= 2n``): rows of ``b`` uniform draws with repeats are redrawn until distinct
    (rejection; accepted rows are uniform over distinct tuples, acceptance >= e^-1). Otherwise
    the ``b`` smallest of ``n`` uniform keys (``argpartition``).
    """
    rng = check_rng(rng)
    n = check_int("n", n, low=1)
    b = check_int("b", b, low=1, high=n)
    size = (size,) if isinstance(size, int | np.integer) else tuple(size)
    m = int(np.prod(size, dtype=np.int64))
    if b * b <= 2 * n:
        out = rng.integers(0, n, size=(m, b))
        todo = np.arange(m)
        while todo.size:
            s = np.sort(out[todo], axis=1)
            dup = np.any(s[:, 1:] == s[:, :-1], axis=1) if b > 1 else np.zeros(todo.size, bool)
            todo = todo[dup]
            if todo.size:
                out[todo] = rng.integers(0, n, size=(todo.size, b))
    else:
        keys = rng.random((m, n))
        out = np.argpartition(keys, b - 1, axis=1)[:, :b] if b < n else np.argsort(keys, axis=1)
        out = out.astype(np.int64)
    return out.reshape((*size, b))


# =========================================================================== data / loss
@dataclass(frozen=True)
class _Data:
    X: np.ndarray  # (Rx, n, d), Rx = 1 (shared) or R
    y: np.ndarray  # (Rx, n)
    R: int
    n: int
    d: int

    def block(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Samples ``start:stop`` of every replication: ``(Rx, k, d)``, ``(Rx, k)``."""
        return self.X[:, start:stop], self.y[:, start:stop]

    def rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-replication rows ``idx`` ``(R, k)``: ``(R, k, d)``, ``(R, k)``."""
        if self.X.shape[0] == 1:
            return self.X[0][idx], self.y[0][idx]
        r = np.arange(self.R)[:, None]
        return self.X[r, idx], self.y[r, idx]


def _prepare_data(X, y, n_reps) -> _Data:
    X = check_array("X", X)
    if X.ndim not in (2, 3):
        raise ValueError(f"X must have shape (n, d) or (R, n, d), got shape {X.shape}")
    if n_reps is not None:
        n_reps = check_int("n_reps", n_reps, low=1)
    if X.ndim == 2:
        R = 1 if n_reps is None else n_reps
        n, d = X.shape
        y = check_array("y", y)
        if y.shape != (n,):
            raise ValueError(f"y must have shape (n,) = ({n},) for X of shape {X.shape}, "
                             f"got {y.shape}")
        Xs, ys = X[None], y[None]
    else:
        R, n, d = X.shape
        if n_reps is not None and n_reps != R:
            raise ValueError(f"n_reps={n_reps} does not match X's replication axis R={R}")
        y = check_array("y", y)
        if y.shape != (R, n):
            raise ValueError(f"y must have shape (R, n) = ({R}, {n}) for X of shape {X.shape}, "
                             f"got {y.shape}")
        Xs, ys = X, y
    if n < 1 or d < 1:
        raise ValueError(f"X must have n >= 1 samples and d >= 1 features, got shape {X.shape}")
    return _Data(np.ascontiguousarray(Xs), np.ascontiguousarray(ys), int(R), int(n), int(d))


def _resolve_loss(loss) -> Loss:
    if isinstance(loss, str):
        return make_loss(loss)
    if isinstance(loss, Loss) or callable(getattr(loss, "gradient", None)):
        return loss
    raise TypeError(
        "loss must be a loss name ('squared', 'logistic', 'huber') or an object with a "
        f"gradient(theta, X, y) method (dpbandits.losses), got {type(loss).__name__}"
    )


def _clipped_grad_sum(loss, theta, Xb, yb, q, bound):
    """Sum over samples of gradients clipped to ``||g||_q <= bound`` and clip counts.

    ``theta`` (R, d); ``Xb`` (Rx, k, d), ``yb`` (Rx, k). Returns ``(R, d)``, ``(R,)``."""
    R, d = theta.shape
    k = Xb.shape[1]
    step = max(1, _BLOCK_ENTRIES // max(1, R * d))
    total = np.zeros((R, d))
    counts = np.zeros(R, dtype=np.int64)
    for s in range(0, k, step):
        g = loss.gradient(theta[:, None, :], Xb[:, s:s + step], yb[:, s:s + step])
        g = np.broadcast_to(g, (R, *g.shape[1:]))
        gc, was = clip_to_norm(g, q, bound)
        total += gc.sum(axis=1)
        counts += was.sum(axis=1)
    return total, counts


# =========================================================================== base class
class _SCOBaseline(BatchOptimizer):
    """Validation, per-``n`` guarantees and the result plumbing shared by the three."""

    _name = "SCO baseline"

    def _check_base(self, p_ok) -> None:
        self._p = p_ok(self.p)
        self._q = dual_exponent(self._p)
        self._radius = check_positive("radius", self.radius)
        self._eps = check_epsilon(self.epsilon)
        self._private = math.isfinite(self._eps)
        if self._private:
            self._delta = check_delta(self.delta)
            if self._delta == 0.0:
                raise ValueError(
                    f"delta must be in (0, 1) for a private run (epsilon={self._eps}) of "
                    f"{self._name}, got 0.0"
                )
        else:
            self._delta = 0.0 if self.delta is None else check_delta(self.delta)
        self._L0 = check_positive("lipschitz", self.lipschitz)
        self._lr = check_positive("lr_scale", self.lr_scale)
        self._fitted = None

    # -- guarantees -----------------------------------------------------------------
    def privacy_for(self, n: int, d: int) -> PrivacyGuarantee:  # pragma: no cover - abstract
        raise NotImplementedError

    def ledger_for(self, n: int, d: int) -> dp_accounting.DpEvent:  # pragma: no cover
        raise NotImplementedError

    def _require_fit(self) -> tuple[int, int]:
        if self._fitted is None:
            raise RuntimeError(
                f"{type(self).__name__}'s guarantee depends on the data-set size: call fit() "
                "first, or use privacy_for(n, d) / ledger_for(n, d)"
            )
        return self._fitted

    @property
    def privacy(self) -> PrivacyGuarantee:
        """Guarantee of the last ``fit`` (whole iterate history), replace-one neighbours."""
        return self.privacy_for(*self._require_fit())

    @property
    def ledger(self) -> dp_accounting.DpEvent:
        """Mechanism events of the last ``fit`` (see the module docstring)."""
        return self.ledger_for(*self._require_fit())

    def _accountant_guarantee(self, event, basis: str) -> PrivacyGuarantee:
        eps = accounting.replace_one_rdp_epsilon(event, self._delta, SCO_BASELINE_ORDERS)
        return PrivacyGuarantee(
            epsilon=eps, delta=self._delta, notion="DP", neighbouring="replace-one",
            basis=basis + f"; certified by dp_accounting RDP (replace-one) on the ledger: "
            f"epsilon={eps:.4g} at delta={self._delta:.3g} (target epsilon={self._eps:g})",
        )

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def _check_p_range(name_alg: str, low: float, low_open: bool, high: float):
    def check(p):
        v = check_p("p", p, low=low, low_open=low_open)
        if v > high:
            raise ValueError(f"p must be <= {high} for {name_alg}, got {v}")
        return v
    return check


def _elapsed(t0: float) -> float:
    return time.perf_counter() - t0


# =========================================================================== NoisySFW
@dataclass(frozen=True)
class NoisySFWSchedule:
    """Everything NoisySFW derives from ``(n, d)`` and its parameters (module docstring)."""

    n: int
    d: int
    n_first: int  # |B0| = floor(n / 2)
    batch_size: int  # b = floor(sqrt(n) / 2)
    n_rounds: int  # K = floor(sqrt(n)) - 1 variance-reduced rounds after theta_1
    eta: float  # lr_scale * log(n) / (2 sqrt(n))
    diameter: float  # M = 2 radius
    kappa: float
    q_plus: float
    plus_scale: float  # ||z||_+ = plus_scale * ||z||_{q_plus}
    sensitivity0: float  # 2 L0 / |B0|
    sensitivity: float  # 2 L1 eta M / b
    sigma0: float  # generalized-Gaussian sigma of the first aggregate (0 if not private)
    sigma: float  # ... of every later round
    sigma_over_sensitivity: float  # sqrt(2 kappa log(1/delta)) / eps (Lemma 2.1), or raised
    gaussian_branch: bool  # q_plus == 2: the noise is N(0, (sigma / plus_scale)^2 I)
    noise_multiplier: float  # Gaussian branch: std / l2 sensitivity (else nan)
    sigma_raised: bool  # Gaussian branch: Lemma 2.1's sigma was below the exact Gaussian one

    def to_dict(self) -> dict:
        return asdict(self)


def noisy_sfw_schedule(n, d, *, p, radius, epsilon, delta, lipschitz, smoothness,
                       lr_scale=1.0) -> NoisySFWSchedule:
    """NoisySFW's batch sizes, step and noise for ``n`` samples in dimension ``d``."""
    n = check_int("n", n, low=4)
    d = check_int("d", d, low=1)
    eps = check_epsilon(epsilon)
    n_first = n // 2
    batch = int(math.floor(math.sqrt(n) / 2.0))
    rounds = int(math.floor(math.sqrt(n))) - 1
    eta = lr_scale * math.log(n) / (2.0 * math.sqrt(n))
    if eta > 1.0:
        raise ValueError(
            f"lr_scale={lr_scale} gives the Frank-Wolfe step eta={eta:.4g} > 1 for n={n} "
            "(iterates would leave the constraint set); use a smaller lr_scale"
        )
    M = 2.0 * radius
    geo = noise_geometry(p, d)
    s0 = 2.0 * lipschitz / n_first
    s = 2.0 * smoothness * eta * M / batch
    gaussian = geo.q_plus == 2.0
    q = dual_exponent(p)
    # ||z||_2 <= c2 ||z||_q: the l_2 sensitivity of an l_q-bounded difference
    c2 = 1.0 if q <= 2.0 else float(d) ** (0.5 - (0.0 if math.isinf(q) else 1.0 / q))
    raised = False
    if math.isfinite(eps):
        ratio = math.sqrt(2.0 * geo.kappa * math.log(1.0 / delta)) / eps  # Lemma 2.1
        z = math.nan
        if gaussian:
            # Gaussian branch: the noise is N(0, (sigma/scale)^2 I), an ordinary Gaussian
            # mechanism; check it exactly (Balle & Wang 2018) and raise sigma if Lemma 2.1's
            # value were too small for (eps, delta) (never lower it).
            z = ratio / geo.scale / c2
            if gaussian_mechanism_delta(z, eps, 1.0) > delta:
                z = gaussian_sigma_analytic(eps, delta, 1.0)
                ratio = z * c2 * geo.scale
                raised = True
        sigma0, sigma = ratio * s0, ratio * s
    else:
        ratio, z, sigma0, sigma = 0.0, math.inf, 0.0, 0.0
    return NoisySFWSchedule(n, d, n_first, batch, rounds, eta, M, geo.kappa, geo.q_plus,
                            geo.scale, s0, s, sigma0, sigma, ratio, gaussian, z, raised)


# Lemma 2.1 is a tail bound whose Gaussian instance fails for large epsilon (see
# dpbandits.optim.dp_tofw); above this epsilon the generalized-Gaussian guarantee is reported
# as not certified, as DP-TOFW does.
_LEMMA_2_1_MAX_EPS = 1.0


class NoisySFW(_SCOBaseline):
    """Noisy stochastic Frank-Wolfe with variance reduction (Bassily et al. 2021b, Alg. 3).

    For ``1 < p <= 2``. The first half ``B0`` of the data gives ``grad_0`` = mean clipped
    gradient at ``theta_0 = 0`` + generalized-Gaussian noise (``sigma0``), and
    ``theta_1 = (1 - eta) theta_0 + eta LMO(grad_0)``. Then rounds ``t = 1..K``,
    ``K = floor(sqrt(n)) - 1``, over disjoint batches of ``b = floor(sqrt(n)/2)`` samples of
    the second half:
    ``grad += mean(clip grad f(theta_t) - clip grad f(theta_{t-1}))`` (each difference clipped
    to ``L1 ||theta_t - theta_{t-1}||_p``) ``+`` noise (``sigma``);
    ``theta_{t+1} = (1 - eta) theta_t + eta LMO(grad)``. Output: the last iterate.

    Parameters
    ----------
    p : float in (1, 2]
    radius : float > 0
        Constraint ``||theta||_p <= radius``; ``M = 2 radius``.
    epsilon, delta : target guarantee; ``epsilon = inf`` turns the noise off.
    lipschitz : float > 0
        ``L0``: per-sample gradients are clipped to ``||g||_q <= L0``.
    smoothness : float > 0
        ``L1``: per-sample differences are clipped to ``L1 ||theta_t - theta_{t-1}||_p``.
    lr_scale : float > 0
        Multiplies the paper's ``eta = log(n) / (2 sqrt(n))`` (must keep ``eta <= 1``).

    ``fit`` returns the iterates ``theta_0 .. theta_{K+1}`` as history (``history_steps`` = round
    index; ``extra["history_samples"]`` samples used so far, ``extra["history_time"]`` seconds
    since the start of ``fit``).
    """

    _name = "NoisySFW"

    def __init__(self, *, p=1.5, radius=1.0, epsilon=1.0, delta=None, lipschitz=1.0,
                 smoothness=1.0, lr_scale=1.0):
        self.p = p
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.lipschitz = lipschitz
        self.smoothness = smoothness
        self.lr_scale = lr_scale
        self._check_base(_check_p_range("NoisySFW", 1.0, True, 2.0))
        self._L1 = check_positive("smoothness", smoothness)

    def schedule(self, n, d) -> NoisySFWSchedule:
        """Batch sizes, step size and noise levels for ``n`` samples in dimension ``d``."""
        return noisy_sfw_schedule(n, d, p=self._p, radius=self._radius, epsilon=self._eps,
                                  delta=self._delta, lipschitz=self._L0,
                                  smoothness=self._L1, lr_scale=self._lr)

    def privacy_for(self, n, d) -> PrivacyGuarantee:
        """``(epsilon, delta)``-DP: generalized Gaussian mechanism per disjoint aggregate."""
        sch = self.schedule(n, d)
        if not self._private:
            return PrivacyGuarantee.non_private("NoisySFW without noise (epsilon = inf)")
        basis = (
            "Bassily, Guzman & Nandi 2021 Alg. 3 (NoisySFW): "
            + ("Gaussian mechanism (smooth norm l_2; exact check, Balle & Wang 2018)"
               if sch.gaussian_branch else
               f"generalized Gaussian mechanism (seed 000 Lemma 2.1, kappa={sch.kappa:.4g}, "
               f"||.||_+ = l_{sch.q_plus:.4g})")
            + f" on each of {sch.n_rounds + 1} aggregates over disjoint samples (parallel "
            "composition); sensitivities enforced by clipping"
        )
        if sch.gaussian_branch or self._eps <= _LEMMA_2_1_MAX_EPS:
            return PrivacyGuarantee(epsilon=self._eps, delta=self._delta, basis=basis)
        return PrivacyGuarantee(
            epsilon=self._eps, delta=self._delta, basis=basis, certified=False,
            caveat=(f"epsilon {self._eps:.3g} > {_LEMMA_2_1_MAX_EPS}: Lemma 2.1 (generalized "
                    "Gaussian mechanism) is not trusted there; its Gaussian instance fails "
                    "for large epsilon"),
        )

    def ledger_for(self, n, d) -> dp_accounting.DpEvent:
        """The one mechanism a sample enters (aggregates are over disjoint samples).

        Gaussian branch (``q_plus = 2``): a ``GaussianDpEvent`` with the noise multiplier
        relative to the l_2 sensitivity. Otherwise a
        :class:`~dpbandits.privacy.accounting.GeneralizedGaussianDpEvent`
        (no accountant supports it; the guarantee rests on Lemma 2.1).
        """
        sch = self.schedule(n, d)
        if not self._private:
            return _ev.NonPrivateDpEvent()
        if sch.gaussian_branch:
            return _ev.GaussianDpEvent(noise_multiplier=sch.noise_multiplier)
        return accounting.GeneralizedGaussianDpEvent(
            sch.sigma_over_sensitivity, sch.q_plus, sch.plus_scale, sch.kappa, self._eps,
            self._delta)

    def fit(self, loss, X, y, rng, n_reps=None) -> BatchResult:
        """Run NoisySFW on ``X`` ``(n, d)`` / ``(R, n, d)`` and ``y``; noise from ``rng``."""
        t0 = time.perf_counter()
        loss = _resolve_loss(loss)
        rng = check_rng(rng)
        data = _prepare_data(X, y, n_reps)
        R, n, d = data.R, data.n, data.d
        if n < 4:
            raise ValueError(f"NoisySFW needs n >= 4 samples, got n={n}")
        sch = self.schedule(n, d)
        p, q, r, eta, L0, L1 = self._p, self._q, self._radius, sch.eta, self._L0, self._L1

        def noise(sigma, size):
            if sigma == 0.0:
                return np.zeros((*size, d))
            # Z ~ G_{||.||_+}(0, sigma^2) with ||z||_+ = scale ||z||_{q+}: Z = W / scale,
            # W ~ G_{||.||_{q+}}(0, sigma^2), i.e. the l_{q+} sampler at sigma / scale.
            return generalized_gaussian_noise(rng, sigma / sch.plus_scale, sch.q_plus, d, size)

        K = sch.n_rounds
        n_clipped = np.zeros(R, dtype=np.int64)
        n_diff = np.zeros(R, dtype=np.int64)
        hist = np.zeros((R, K + 2, d))  # theta_0 = 0, theta_1, ..., theta_{K+1}
        samples = np.zeros(K + 2, dtype=np.int64)
        times = np.zeros(K + 2)

        theta_prev = np.zeros((R, d))
        Xb, yb = data.block(0, sch.n_first)
        gsum, cnt = _clipped_grad_sum(loss, theta_prev, Xb, yb, q, L0)
        n_clipped += cnt
        grad = gsum / sch.n_first + noise(sch.sigma0, (R,))
        theta = (1.0 - eta) * theta_prev + eta * lmo_lp_ball(grad, p, r)
        round_noise = noise(sch.sigma, (K, R))
        hist[:, 1] = theta
        samples[1] = sch.n_first
        times[1] = _elapsed(t0)
        start = sch.n_first
        b = sch.batch_size
        # Rounds t = 1 .. K (the authors' `for t in range(1, int(sqrt(n)))`), batch t being
        # samples [n_first + (t-1) b, n_first + t b) of the second half.
        for t in range(1, K + 1):
            Xb, yb = data.block(start, start + b)
            start += b
            g1 = np.broadcast_to(loss.gradient(theta[:, None, :], Xb, yb), (R, b, d))
            g0 = np.broadcast_to(loss.gradient(theta_prev[:, None, :], Xb, yb), (R, b, d))
            g1, w1 = clip_to_norm(g1, q, L0)
            g0, w0 = clip_to_norm(g0, q, L0)
            n_clipped += w1.sum(axis=1) + w0.sum(axis=1)
            diff = g1 - g0
            bound = L1 * lp_norm(theta - theta_prev, p)  # (R,)
            dn = lp_norm(diff, q)  # (R, b)
            over = dn > bound[:, None]
            if np.any(over):
                fac = np.where(over, bound[:, None] / np.where(over, dn, 1.0), 1.0)
                diff = diff * fac[..., None]
                n_diff += over.sum(axis=1)
            grad = grad + diff.mean(axis=1) + round_noise[t - 1]
            theta_prev, theta = theta, (1.0 - eta) * theta + eta * lmo_lp_ball(grad, p, r)
            hist[:, t + 1] = theta
            samples[t + 1] = start
            times[t + 1] = _elapsed(t0)
        self._fitted = (n, d)
        return BatchResult(
            theta=theta.copy(),
            history=hist,
            history_steps=np.arange(K + 2),
            privacy=self.privacy_for(n, d),
            n_clipped=n_clipped,
            n_gradient_evals=sch.n_first + 2 * sch.batch_size * K,
            extra={
                "schedule": sch.to_dict(),
                "n_diff_clipped": n_diff,
                "history_samples": samples,
                "history_time": times,
                "seconds": _elapsed(t0),
            },
        )


# =========================================================================== LocalMD
@dataclass(frozen=True)
class LocalMDPhase:
    """One phase ``i`` of LocalMD (Asi et al. 2021, Alg. 6 calling Alg. 5)."""

    index: int  # i = 1, 2, ...
    epsilon: float  # eps_i = 2^-i eps
    n_samples: int  # n_i = floor(2^-i n) fresh samples
    start: int  # first sample of the phase (phases use consecutive disjoint blocks)
    eta: float  # eta_i = 2^-4i eta
    batch_size: int  # b_i = floor(max(sqrt(n_i / log d), sqrt(d / eps_i)))
    n_steps: int  # T_i = floor(n_i^2 / b_i^2)
    sigma: float  # c L0 sqrt(d^(1-2/q) log(1/delta)) / (b_i eps_i)  (0 if not private)
    loc_radius: float  # 2 L0 eta_i n_i (p - 1)
    noise_multiplier: float  # sigma_i / replace-one l2 sensitivity = c sqrt(log(1/d))/(2 eps_i)

    def to_dict(self) -> dict:
        return asdict(self)


def local_md_phases(n, d, *, p, radius, epsilon, delta, lipschitz, lr_scale=1.0,
                    noise_constant=100.0) -> tuple[float, list[LocalMDPhase]]:
    """LocalMD's base step ``eta`` and its phases for ``n`` samples in dimension ``d``.

    ``eta = lr_scale (D / L0) min{1/sqrt((p-1) n), eps / sqrt(d log(1/delta) (1 + log d))}``
    with ``D = 2 radius``; phases ``i = 1 .. floor(log2 n)`` as in :class:`LocalMDPhase`,
    stopping before the first phase with ``T_i <= 1`` (its batch would be about as large as
    its data; all later phases are worse).
    """
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=2)
    eps = check_epsilon(epsilon)
    private = math.isfinite(eps)
    q = dual_exponent(p)
    D = 2.0 * radius
    log_d = math.log(d)
    cap = eps / math.sqrt(d * math.log(1.0 / delta) * (1.0 + log_d)) if private else math.inf
    eta = lr_scale * (D / lipschitz) * min(1.0 / math.sqrt((p - 1.0) * n), cap)
    phases = []
    start = 0
    for i in range(1, int(math.floor(math.log2(n))) + 1):
        eps_i = eps * 2.0**-i
        n_i = n >> i
        if n_i < 1:
            break
        b_i = max(1, int(math.floor(max(math.sqrt(n_i / log_d),
                                        math.sqrt(d / eps_i) if private else 0.0))))
        T_i = (n_i * n_i) // (b_i * b_i)
        if T_i <= 1:
            break
        if private:
            sigma = noise_constant * lipschitz * math.sqrt(
                d ** (1.0 - 2.0 / q) * math.log(1.0 / delta)) / (b_i * eps_i)
            z = noise_constant * math.sqrt(math.log(1.0 / delta)) / (2.0 * eps_i)
        else:
            sigma, z = 0.0, math.inf
        eta_i = eta * 2.0 ** (-4 * i)
        phases.append(LocalMDPhase(i, eps_i, n_i, start, eta_i, b_i, T_i, sigma,
                                   2.0 * lipschitz * eta_i * n_i * (p - 1.0), z))
        start += n_i
    return eta, phases


class LocalMD(_SCOBaseline):
    """Phased, localized noisy mirror descent (Asi et al. 2021, Alg. 6 calling Alg. 5).

    For ``1 < p <= 2``. Phase ``i`` (see :class:`LocalMDPhase`) starts at the previous
    phase's output ``x_{i-1}`` (``x_0 = 0``) and runs ``T_i`` steps of noisy stochastic mirror
    descent on its own ``n_i`` fresh samples: a mini-batch of ``b_i`` indices sampled without
    replacement, the mean of their clipped gradients plus ``N(0, sigma_i^2 I)``, and the mirror
    step of ``h(x) = ||x - x_{i-1}||_p^2 / (2 (p - 1))`` restricted to the localization ball
    ``||x - x_{i-1}||_p <= 2 L0 eta_i n_i (p - 1)``; its output is the average of its
    iterates. The mirror step is exact and closed form: with ``w = grad h`` (dual variable),
    ``w <- w - eta_i g``, then ``w`` is scaled down to ``||w||_q <= radius_i / (p - 1)`` and
    ``x = x_{i-1} + (p-1) ||w||_q^{2-q} sign(w) |w|^{q-1}`` (``h`` depends on ``||x - x_{i-1}||_p``
    only, so the Bregman projection onto the ball is radial).

    As in the note and the authors' code, the iterates are restricted to the localization
    ball only, not to the constraint set (``radius`` enters through ``D`` in ``eta``). Seed 000
    reports that LocalMD did not converge at any learning-rate scale; that is reproduced, not
    fixed.

    Parameters
    ----------
    p : float in (1, 2]
    radius, epsilon, delta, lipschitz, lr_scale : as for :class:`NoisySFW`
    noise_constant : float > 0
        ``c`` in ``sigma_i`` (seed 000's comparison: 100).

    History: phase outputs ``x_0 .. x_k`` (``history_steps`` = cumulative mirror steps).
    """

    _name = "LocalMD"

    def __init__(self, *, p=1.5, radius=1.0, epsilon=1.0, delta=None, lipschitz=1.0,
                 lr_scale=1.0, noise_constant=100.0):
        self.p = p
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.lipschitz = lipschitz
        self.lr_scale = lr_scale
        self.noise_constant = noise_constant
        self._check_base(_check_p_range("LocalMD", 1.0, True, 2.0))
        self._c = check_positive("noise_constant", noise_constant)

    def phases(self, n, d) -> tuple[float, list[LocalMDPhase]]:
        """Base step and phases for ``n`` samples in dimension ``d`` (:func:`local_md_phases`)."""
        return local_md_phases(n, d, p=self._p, radius=self._radius, epsilon=self._eps,
                               delta=self._delta, lipschitz=self._L0, lr_scale=self._lr,
                               noise_constant=self._c)

    def ledger_for(self, n, d) -> dp_accounting.DpEvent:
        """Per phase ``T_i`` sampled-without-replacement Gaussian steps (sequentially
        composed over phases although their samples are disjoint; conservative)."""
        if not self._private:
            return _ev.NonPrivateDpEvent()
        _, phases = self.phases(n, d)
        if not phases:
            return _ev.NoOpDpEvent()
        return _ev.ComposedDpEvent(events=[
            accounting.wor_gaussian_event(ph.n_samples, ph.batch_size, ph.noise_multiplier,
                                          ph.n_steps)
            for ph in phases
        ])

    def privacy_for(self, n, d) -> PrivacyGuarantee:
        """What the RDP accountant certifies for the ledger (replace-one)."""
        if not self._private:
            return PrivacyGuarantee.non_private("LocalMD without noise (epsilon = inf)")
        _, phases = self.phases(n, d)
        if not phases:
            return PrivacyGuarantee(
                epsilon=self._eps, delta=self._delta, basis="LocalMD ran no phase: the output "
                "(the zero vector) does not depend on the data")
        return self._accountant_guarantee(
            self.ledger_for(n, d),
            f"Asi, Feldman, Koren & Talwar 2021 Alg. 5/6 (LocalMD), noise constant "
            f"c={self._c:g}, {len(phases)} phases with eps_i = 2^-i eps",
        )

    def fit(self, loss, X, y, rng, n_reps=None) -> BatchResult:
        """Run LocalMD on ``X`` ``(n, d)`` / ``(R, n, d)`` and ``y``; all draws from ``rng``."""
        t0 = time.perf_counter()
        loss = _resolve_loss(loss)
        rng = check_rng(rng)
        data = _prepare_data(X, y, n_reps)
        R, n, d = data.R, data.n, data.d
        if d < 2:
            raise ValueError(f"LocalMD needs d >= 2 features (its batch size uses log d), "
                             f"got X with d={d}")
        eta, phases = self.phases(n, d)
        p, q, L0 = self._p, self._q, self._L0

        center = np.zeros((R, d))
        hist = np.zeros((R, len(phases) + 1, d))
        steps = np.zeros(len(phases) + 1, dtype=np.int64)
        times = np.zeros(len(phases) + 1)
        n_clipped = np.zeros(R, dtype=np.int64)
        evals = 0
        for k, ph in enumerate(phases, start=1):
            b, T = ph.batch_size, ph.n_steps
            w = np.zeros((R, d))  # dual variable grad h(x - center)
            u = np.zeros((R, d))  # x - center
            xsum = np.zeros((R, d))
            w_cap = ph.loc_radius / (p - 1.0)  # ||u||_p = (p-1) ||w||_q <= loc_radius
            chunk = max(1, _BLOCK_ENTRIES // (R * (b + d)))
            done = 0
            while done < T:
                c = min(chunk, T - done)
                idx = sample_without_replacement(rng, ph.n_samples, b, (R, c)) + ph.start
                nz = rng.standard_normal((R, c, d)) * ph.sigma if self._private else None
                for j in range(c):
                    Xb, yb = data.rows(idx[:, j])
                    g = loss.gradient((center + u)[:, None, :], Xb, yb)
                    g, was = clip_to_norm(g, q, L0)
                    n_clipped += was.sum(axis=1)
                    g = g.mean(axis=1)
                    if nz is not None:
                        g = g + nz[:, j]
                    w = w - ph.eta * g
                    wn = lp_norm(w, q)
                    over = wn > w_cap
                    if np.any(over):
                        w = w * np.where(over, w_cap / np.where(over, wn, 1.0), 1.0)[:, None]
                        wn = np.minimum(wn, w_cap)
                    u = _mirror_primal(w, wn, p, q)
                    xsum += center + u
                done += c
            center = xsum / T
            evals += T * b
            hist[:, k] = center
            steps[k] = steps[k - 1] + T
            times[k] = _elapsed(t0)
        self._fitted = (n, d)
        return BatchResult(
            theta=center.copy(),
            history=hist,
            history_steps=steps,
            privacy=self.privacy_for(n, d),
            n_clipped=n_clipped,
            n_gradient_evals=int(evals),
            extra={
                "eta": eta,
                "phases": [ph.to_dict() for ph in phases],
                "history_time": times,
                "seconds": _elapsed(t0),
            },
        )


def _mirror_primal(w: np.ndarray, wn: np.ndarray, p: float, q: float) -> np.ndarray:
    """``grad h*(w) = (p-1) ||w||_q^{2-q} sign(w) |w|^{q-1}``, written as
    ``(p-1) ||w||_q sign(w) (|w| / ||w||_q)^{q-1}`` (no overflow; 0 at w = 0)."""
    safe = np.where(wn > 0, wn, 1.0)[:, None]
    return (p - 1.0) * wn[:, None] * np.sign(w) * (np.abs(w) / safe) ** (q - 1.0)


# =========================================================================== NoisySGD
def noisy_sgd_step_size(n, d, *, radius, lipschitz, epsilon, delta, lr_scale=1.0) -> float:
    """``eta = lr_scale r / (L0 n max{sqrt(n), sqrt(d log(1/delta)) / eps})`` (constant)."""
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=1)
    eps = check_epsilon(epsilon)
    term = math.sqrt(d * math.log(1.0 / delta)) / eps if math.isfinite(eps) else 0.0
    return lr_scale * radius / (lipschitz * n * max(math.sqrt(n), term))


def noisy_sgd_noise_multiplier(n, n_steps, *, epsilon, delta, calibration="theorem") -> float:
    """Noise std of NoisySGD relative to the replace-one l_2 sensitivity ``2 L0``.

    ``"theorem"``: the paper's ``sigma = sqrt(8 L0^2 log(1/delta)) / eps``, i.e.
    ``sqrt(2 log(1/delta)) / eps``. ``"accountant"``: the smallest value (within 0.1%) for
    which the RDP accountant certifies ``(eps, delta)`` for ``n_steps`` steps sampling one of
    ``n`` indices (replace-one). ``inf`` when ``epsilon = inf`` (no noise).
    """
    n = check_int("n", n, low=1)
    n_steps = check_int("n_steps", n_steps, low=1)
    eps = check_epsilon(epsilon)
    check_choice("calibration", calibration, {"theorem", "accountant"})
    if not math.isfinite(eps):
        return math.inf
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    theorem = math.sqrt(2.0 * math.log(1.0 / delta)) / eps
    if calibration == "theorem":
        return theorem
    return accounting.wor_gaussian_multiplier(n, 1, n_steps, eps, delta,
                                              orders=SCO_BASELINE_ORDERS, start=theorem,
                                              lower=None, growth=1.5, rtol=1e-3)


def _loss_code(loss) -> tuple[int, float] | None:
    """Compiled-kernel code of ``loss`` (exact built-in types only), else None."""
    if type(loss) in _GLM_TYPES:
        return (_kernel.LOSS_SQUARED if loss.link_name == "identity" else _kernel.LOSS_LOGISTIC,
                0.0)
    if type(loss) is HuberLoss:
        return _kernel.LOSS_HUBER, float(loss.huber_delta)
    return None


def _glm_types():
    from dpbandits.losses import LogisticLoss, SquaredLoss

    return (GLMLoss, SquaredLoss, LogisticLoss)


_GLM_TYPES = _glm_types()
BACKENDS = frozenset({"auto", "numba", "numpy"})


class NoisySGD(_SCOBaseline):
    """Projected noisy SGD with ``n^2`` steps (Bassily et al. 2020, Alg. 2); for ``p >= 2``.

    Each step samples one index uniformly (with replacement across steps), clips its gradient
    to ``||g||_q <= L0``, adds ``N(0, sigma^2 I)`` and takes
    ``theta <- Proj_C(theta - eta (g + noise))`` (Euclidean projection onto the l_p ball; the
    l_inf box for ``p = inf``), with the constant step of :func:`noisy_sgd_step_size`. Output:
    the average of the iterates ``theta_1 .. theta_T``.

    Parameters
    ----------
    p : float in [2, inf]
        (``q <= 2``, so the l_2 sensitivity of a clipped gradient is at most ``2 L0``.)
    radius, epsilon, delta, lipschitz, lr_scale : as for :class:`NoisySFW`
    calibration : ``"theorem"`` (the paper's sigma) or ``"accountant"`` (smallest sigma the
        replace-one RDP accountant certifies for the target); see the module docstring.
    n_steps : int or None
        Number of steps ``T``; ``None`` means the paper's ``n^2``. The ledger counts the
        steps actually taken.
    n_history : int >= 1
        Number of evenly spaced checkpoints kept in the history (running averages;
        ``extra["iterates"]`` holds the raw iterates at the same steps).
    backend : ``"auto"`` (numba kernel when the loss and constraint allow it), ``"numba"``
        or ``"numpy"`` (vectorized over replications, a Python loop over steps). Both consume
        the same random stream and agree to rounding.
    """

    _name = "NoisySGD"

    def __init__(self, *, p=math.inf, radius=1.0, epsilon=1.0, delta=None, lipschitz=1.0,
                 lr_scale=1.0, calibration="theorem", n_steps=None, n_history=100,
                 backend="auto"):
        self.p = p
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.lipschitz = lipschitz
        self.lr_scale = lr_scale
        self.calibration = calibration
        self.n_steps = n_steps
        self.n_history = n_history
        self.backend = backend
        self._check_base(_check_p_range("NoisySGD", 2.0, False, math.inf))
        check_choice("calibration", calibration, {"theorem", "accountant"})
        if n_steps is not None:
            check_int("n_steps", n_steps, low=1)
        check_int("n_history", n_history, low=1)
        check_choice("backend", backend, BACKENDS)
        if backend == "numba" and not _kernel.HAVE_NUMBA:  # pragma: no cover
            raise ValueError("backend='numba' requested but numba is not installed")

    def _steps(self, n: int) -> int:
        return n * n if self.n_steps is None else int(self.n_steps)

    def step_size(self, n, d) -> float:
        """The constant step ``eta`` for ``n`` samples in dimension ``d``."""
        return noisy_sgd_step_size(n, d, radius=self._radius, lipschitz=self._L0,
                                   epsilon=self._eps, delta=self._delta, lr_scale=self._lr)

    def noise_multiplier(self, n) -> float:
        """``sigma / (2 L0)`` for ``n`` samples (see :func:`noisy_sgd_noise_multiplier`)."""
        return noisy_sgd_noise_multiplier(n, self._steps(n), epsilon=self._eps,
                                          delta=self._delta, calibration=self.calibration)

    def sigma(self, n) -> float:
        """Per-coordinate noise std ``sigma`` for ``n`` samples (0 when not private)."""
        return 2.0 * self._L0 * self.noise_multiplier(n) if self._private else 0.0

    def ledger_for(self, n, d=None) -> dp_accounting.DpEvent:
        """``T`` steps of a Gaussian on one index sampled from ``n`` (replace-one)."""
        n = check_int("n", n, low=1)
        if not self._private:
            return _ev.NonPrivateDpEvent()
        return accounting.wor_gaussian_event(n, 1, self.noise_multiplier(n), self._steps(n))

    def privacy_for(self, n, d=None) -> PrivacyGuarantee:
        """What the RDP accountant certifies for the ledger (replace-one)."""
        n = check_int("n", n, low=1)
        if not self._private:
            return PrivacyGuarantee.non_private("NoisySGD without noise (epsilon = inf)")
        if self.calibration == "theorem":
            basis = ("Bassily, Feldman, Guzman & Talwar 2020 Alg. 2 (NoisySGD), paper's noise "
                     "sigma^2 = 8 L0^2 log(1/delta)/eps^2 (argued with the add/remove moments "
                     "accountant)")
        else:
            basis = ("Bassily, Feldman, Guzman & Talwar 2020 Alg. 2 (NoisySGD), noise "
                     "calibrated by the replace-one RDP accountant")
        return self._accountant_guarantee(self.ledger_for(n), basis)

    def _resolve_backend(self, loss) -> str:
        compiled_ok = (_kernel.HAVE_NUMBA and _loss_code(loss) is not None
                       and (self._p == 2.0 or math.isinf(self._p)))
        if self.backend == "numba" and not compiled_ok:
            raise ValueError(
                "backend='numba' supports the squared, logistic and Huber losses with p = 2 "
                f"or p = inf; got loss {loss!r} with p={self._p} (use backend='numpy')"
            )
        if self.backend == "numpy" or not compiled_ok:
            return "numpy"
        return "numba"

    def _project(self, theta: np.ndarray) -> np.ndarray:
        if math.isinf(self._p):
            return np.clip(theta, -self._radius, self._radius)
        if self._p == 2.0:
            return project_l2_ball(theta, self._radius)
        return project_lp_ball(theta, self._p, self._radius)

    def fit(self, loss, X, y, rng, n_reps=None) -> BatchResult:
        """Run NoisySGD on ``X`` ``(n, d)`` / ``(R, n, d)`` and ``y``; all draws from ``rng``.

        Per chunk of steps the sample indices ``(R, c)`` are drawn first, then standard
        normals ``(R, c, d)`` (scaled by sigma when used); chunk boundaries depend only on
        ``(R, d, T, n_history)``.
        """
        t0 = time.perf_counter()
        loss = _resolve_loss(loss)
        rng = check_rng(rng)
        data = _prepare_data(X, y, n_reps)
        R, n, d = data.R, data.n, data.d
        backend = self._resolve_backend(loss)
        T = self._steps(n)
        eta = self.step_size(n, d)
        sigma = self.sigma(n)
        use_noise = self._private and sigma > 0.0
        q, L0 = self._q, self._L0

        m = min(int(self.n_history), T)
        checkpoints = [(k * T) // m for k in range(1, m + 1)]
        hist = np.zeros((R, m, d))
        iters = np.zeros((R, m, d))
        times = np.zeros(m)
        theta = np.zeros((R, d))
        acc = np.zeros((R, d))
        n_clipped = np.zeros(R, dtype=np.int64)
        chunk_max = max(1, _BLOCK_ENTRIES // (R * (d + 1)))

        if backend == "numba":
            code, hdelta = _loss_code(loss)
            proj = _kernel.PROJ_LINF if math.isinf(self._p) else _kernel.PROJ_L2
            xnorm = np.ascontiguousarray(lp_norm(data.X, q))
            dummy = np.zeros((1, 1, 1))

        # One reusable buffer for the standard normals (filled in place: no page faults);
        # the kernel / numpy step multiplies them by sigma.
        buf = np.empty(R * min(chunk_max, T) * d) if use_noise else None
        done = 0
        for k, stop in enumerate(checkpoints):
            while done < stop:
                c = min(chunk_max, stop - done)
                idx = rng.integers(0, n, size=(R, c))
                noise = None
                if use_noise:
                    noise = buf[: R * c * d].reshape(R, c, d)
                    rng.standard_normal(out=noise)
                if backend == "numba":
                    _kernel.sgd_chunk(theta, acc, data.X, data.y, xnorm, idx,
                                      dummy if noise is None else noise, use_noise, sigma, eta,
                                      L0, self._radius, proj, code, hdelta, n_clipped)
                else:
                    theta = self._numpy_chunk(loss, data, theta, acc, idx, noise, sigma, eta,
                                              n_clipped)
                done += c
            hist[:, k] = acc / done
            iters[:, k] = theta
            times[k] = _elapsed(t0)

        self._fitted = (n, d)
        return BatchResult(
            theta=acc / T,
            history=hist,
            history_steps=np.asarray(checkpoints, dtype=np.int64),
            privacy=self.privacy_for(n),
            n_clipped=n_clipped,
            n_gradient_evals=int(T),
            extra={
                "eta": eta,
                "sigma": sigma,
                "noise_multiplier": self.noise_multiplier(n) if self._private else math.inf,
                "n_steps": T,
                "backend": backend,
                "iterates": iters,
                "history_time": times,
                "seconds": _elapsed(t0),
            },
        )

    def _numpy_chunk(self, loss, data, theta, acc, idx, noise, sigma, eta, n_clipped
                     ) -> np.ndarray:
        """Plain-numpy steps (vectorized over replications); same maths as the kernel."""
        R = theta.shape[0]
        ridx = np.arange(R)
        for k in range(idx.shape[1]):
            i = idx[:, k]
            if data.X.shape[0] == 1:
                xr, yr = data.X[0, i], data.y[0, i]
            else:
                xr, yr = data.X[ridx, i], data.y[ridx, i]
            g = loss.gradient(theta, xr, yr)
            g, was = clip_to_norm(g, self._q, self._L0)
            n_clipped += was
            if noise is not None:
                g = g + sigma * noise[:, k]
            theta = self._project(theta - eta * g)
            acc += theta
        return theta

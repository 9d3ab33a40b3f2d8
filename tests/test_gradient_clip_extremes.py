"""The batch optimizers' per-sample gradient clip at the ends of the float range (issue 34,
item 1): a squared-loss residual ``psi = z - y`` near the float maximum with a tiny clip bound
made the factor ``target / (|psi| ||x||)`` subnormal, and the "clipped" gradient had exact
norm up to twice the bound (one-step DP-GD claiming (1, 1e-5) had exact epsilon 2.03). Every
path a fit can take is checked here in exact rational arithmetic: the oracle's full mean,
single samples and SVRG snapshots, NoisySGD's compiled kernel and its plain-Python twin, and
each optimizer's ``_contributions`` hook; DP-GD is checked through ``fit``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpbandits.geometry import gradient_rows
from dpbandits.losses import HuberLoss, LogisticLoss, SquaredLoss
from dpbandits.optim.batch import _noisy_sgd_kernel as kernel
from dpbandits.optim.batch.data import prepare_data
from dpbandits.optim.batch.dp_accmd import DPAccMD
from dpbandits.optim.batch.dp_gd import DPGD
from dpbandits.optim.batch.dp_svrg import DPSVRG, DPSVRGPlusPlus
from dpbandits.optim.batch.noisy_sgd import NoisySGD
from dpbandits.optim.batch.oracle import GradientOracle
from dpbandits.optim.batch.private_ftrl import PrivateFTRL
from dpbandits.optim.batch.private_sgd import PrivateSGD

BIG = 1.9 * 2.0**1023  # the review's residual: |psi| ||x|| is above target 2^1022
G = 2.0**-51  # the review's clip bound

# (X, y, bound) cases: the review's record, mixed scales, rows of extreme norm
CASES = [
    (np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), np.array([BIG, 0.0]), G),
    (np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), np.array([-BIG, BIG]), G),
    (np.array([[1e-300, 3e-301, 0.0], [5e-324, 5e-324, 0.0]]), np.array([-BIG, BIG]), 2.0**-800),
    (np.array([[1e308, -1e308, 1e308], [1.0, 2.0, 3.0]]), np.array([1e-300, -BIG]), 2.0**-700),
    (np.array([[3.0, 4.0, 0.0], [1e-200, 0.0, 1e-200]]), np.array([1e308, -1e308]), 1e-200),
]


# the same records at bounds the optimizers accept (dpbandits.optim.base.SCALE_RANGE)
OPT_CASES = CASES[:2] + [(X, y, 1e-100) for X, y, _ in CASES[2:]]


def exact_sq_norm(row) -> Fraction:
    return sum((Fraction(float(v)) ** 2 for v in row), Fraction(0))


def assert_rows_within(g: np.ndarray, bound: float) -> None:
    """Every row of ``g`` is finite with exact l_2 norm ``<= bound``."""
    g = np.asarray(g).reshape(-1, np.shape(g)[-1])
    assert np.all(np.isfinite(g))
    for row in g:
        assert exact_sq_norm(row) <= Fraction(bound) ** 2, (row, bound)


def test_the_reviews_record_is_clipped_to_its_bound():
    """x = e1, y = -/+1.9 2^1023, G = 2^-51: the clipped gradient is -/+G e1 up to the
    margin, not 1.9 G (as on main 84eca81)."""
    for sign in (1.0, -1.0):
        data = prepare_data(np.array([[1.0, 0.0]]), np.array([sign * BIG]), None)
        g, count = GradientOracle(SquaredLoss(), data, G).mean(np.zeros((1, 2)))
        assert count.tolist() == [1]
        assert_rows_within(g, G)
        assert -sign * g[0, 0] == pytest.approx(G, rel=1e-13)


@pytest.mark.parametrize("X,y,bound", CASES)
@pytest.mark.parametrize("loss", [SquaredLoss(), HuberLoss(1e300), LogisticLoss()],
                         ids=["squared", "huber", "logistic"])
def test_every_oracle_path_keeps_each_gradient_within_the_bound(X, y, bound, loss):
    if isinstance(loss, LogisticLoss):
        y = np.array([0.0, 1.0])
    data = prepare_data(X, y, None)
    oracle = GradientOracle(loss, data, bound)
    theta = np.array([[0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
    for th in theta:
        th = th[None]
        for i in range(X.shape[0]):  # one sample at a time: mean of one row
            single = GradientOracle(loss, prepare_data(X[i:i + 1], y[i:i + 1], None), bound)
            assert_rows_within(single.mean(th)[0], bound)
            assert_rows_within(single.snapshot(th).mean, bound)
        per_sample, _ = oracle.at_index(np.repeat(th, X.shape[0], 0), np.arange(X.shape[0]))
        assert_rows_within(per_sample, bound)
        snap = oracle.snapshot(np.repeat(th, X.shape[0], 0))
        assert_rows_within(snap.at_index(np.arange(X.shape[0]))[0], bound)


@pytest.mark.parametrize("X,y,bound", CASES)
@pytest.mark.parametrize("q,proj", [(2.0, kernel.PROJ_L2), (1.0, kernel.PROJ_LINF)])
def test_noisy_sgd_kernels_clip_each_step_within_the_bound(X, y, bound, q, proj):
    """One noiseless step from theta = 0 with eta = 1 and no projection moves theta by
    exactly minus the clipped gradient: compiled and plain Python alike."""
    rows = gradient_rows(X[None], q, bound)
    fns = [kernel.sgd_chunk_python] + ([kernel.sgd_chunk] if kernel.HAVE_NUMBA else [])
    for fn in fns:
        for i in range(X.shape[0]):
            theta, acc = np.zeros((1, 3)), np.zeros((1, 3))
            nc = np.zeros(1, dtype=np.int64)
            with np.errstate(over="ignore", invalid="ignore"):  # the Python twin's scalars
                fn(theta, acc, X[None], rows.rows, y[None], rows.norms, rows.unclipped,
                   rows.clipped, np.array([[i]]), np.zeros((1, 1, 3)), False, 0.0, 1.0, bound,
                   rows.limit, math.inf, proj, kernel.LOSS_SQUARED, 1.0, nc)
            step = -theta
            if q == 1.0:  # the l_inf clip of the dual norm of p = 1
                assert np.all(np.isfinite(step))
                assert max(abs(Fraction(float(v))) for v in step[0]) <= Fraction(bound)
            else:
                assert_rows_within(step, bound)


OPTIMIZERS = [
    lambda b: DPGD(1.0, 1e-5, n_iters=2, clip_norm=b),
    lambda b: DPAccMD(1.0, 1e-5, n_iters=2, clip_norm=b),
    lambda b: DPSVRG(1.0, 1e-5, clip_norm=b),
    lambda b: DPSVRGPlusPlus(1.0, 1e-5, clip_norm=b),
    lambda b: PrivateSGD(1.0, 1e-5, lipschitz=b),
    lambda b: NoisySGD(p=2.0, delta=1e-5, lipschitz=b,
                       backend="numba" if kernel.HAVE_NUMBA else "numpy"),
    lambda b: NoisySGD(p=2.0, delta=1e-5, lipschitz=b, backend="numpy"),
    lambda b: PrivateFTRL(1.0, 1e-5, lipschitz=b),
]


@pytest.mark.parametrize("make", OPTIMIZERS,
                         ids=["dp-gd", "dp-accmd", "dp-svrg", "dp-svrg++", "private-sgd",
                              "noisy-sgd-kernel", "noisy-sgd-numpy", "private-ftrl"])
@pytest.mark.parametrize("X,y,bound", OPT_CASES)
def test_each_optimizers_contributions_are_within_its_declared_sensitivity(make, X, y, bound):
    """The per-sample clipped gradients the privacy checks read (``_contributions``, the
    fits' own clipping) lie within half the declared replace-one sensitivity."""
    opt = make(bound)
    for theta in (np.zeros(3), np.array([1.0, -0.5, 2.0])):
        (c,) = opt._contributions(SquaredLoss(), X, y, theta)
        assert c.sensitivity == 2.0 * bound
        assert_rows_within(c.values, bound)


def test_one_noiseless_dp_gd_step_moves_by_the_clipped_gradient_through_fit():
    """``fit`` itself: theta_1 = -(g_1 + g_2) / 2 with step 1 from 0; the record with the
    huge residual contributes exactly -(theta_1 sum) * 2 (the other row is zero)."""
    X = np.array([[1.0, 0.0], [0.0, 0.0]])
    for y0 in (BIG, -BIG):
        opt = DPGD(math.inf, 1e-5, n_iters=1, step_size=1.0, clip_norm=G)
        res = opt.fit(SquaredLoss(), X, np.array([y0, 0.0]), np.random.default_rng(0))
        contribution = -2.0 * res.theta  # exact: powers of two
        assert_rows_within(contribution, G)
        assert res.n_clipped.tolist() == [1]

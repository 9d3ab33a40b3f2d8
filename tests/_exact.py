"""Exact norms for the tests of the clipping primitives: rationals for q in {1, 2, inf}, else
60 significant digits (far below the margins in play)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np


def exact_norm_at_most(row: np.ndarray, q: float, c: float) -> bool:
    """``||row||_q <= c`` decided exactly (rationals for q in {1, 2, inf}), else with
    60 significant digits (far below the margins in play)."""
    vals = [Fraction(float(v)) for v in row]
    if math.isinf(q):
        return max(abs(v) for v in vals) <= Fraction(c)
    if q == 1.0:
        return sum(abs(v) for v in vals) <= Fraction(c)
    if q == 2.0:
        return sum(v * v for v in vals) <= Fraction(c) ** 2
    with mpmath.workdps(60):
        s = mpmath.fsum(mpmath.power(abs(mpmath.mpf(float(v))), q) for v in row)
        return mpmath.power(s, 1 / mpmath.mpf(q)) <= mpmath.mpf(c)


def exact_norm(row: np.ndarray, q: float) -> float:
    with mpmath.workdps(60):
        if math.isinf(q):
            return float(max(abs(mpmath.mpf(float(v))) for v in row))
        s = mpmath.fsum(mpmath.power(abs(mpmath.mpf(float(v))), q) for v in row)
        return float(mpmath.power(s, 1 / mpmath.mpf(q)))

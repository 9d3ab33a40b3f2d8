"""The record every off-policy estimator returns."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PolicyEstimate"]


@dataclass(frozen=True)
class PolicyEstimate:
    """An off-policy value estimate: ``value`` with its ``std_error`` and the two-sided
    ``level`` interval ``[ci_low, ci_high]`` (``interval`` says how it was built) from ``n``
    logged rounds. ``estimator`` names the estimator; ``matched`` counts the rounds where the
    target policy puts mass on the logged action (``w_i > 0``); ``n_clipped`` the rounds whose
    weight the estimator changed (clipped IPS: ``w_i > max_weight``; Switch-DR: ``w_i >
    threshold``, correction dropped); ``interval_clipped`` whether the interval was cut to the
    reward range."""

    estimator: str
    value: float
    std_error: float
    ci_low: float
    ci_high: float
    level: float
    interval: str
    n: int
    matched: int
    n_clipped: int = 0
    interval_clipped: bool = False

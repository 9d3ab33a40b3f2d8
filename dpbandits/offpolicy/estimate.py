"""The record every off-policy estimator returns."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PolicyEstimate"]


@dataclass(frozen=True)
class PolicyEstimate:
    """An off-policy value estimate of a fixed target policy from logged rounds.

    Parameters
    ----------
    estimator : str
        The estimator's name (``"ips"``, ``"snips"``, ``"dr"``, ...).
    value : float
        The estimate.
    std_error : float
        Its standard error.
    ci_low, ci_high : float
        The two-sided ``level`` interval (sampling error).
    level : float
        Coverage of the interval, in (0, 1).
    interval : {"normal", "bootstrap", "bernstein"}
        How the interval was built.
    n : int
        Number of logged rounds.
    matched : int
        Rounds where the target policy puts mass on the logged action (``w_i > 0``).
    n_clipped : int, default 0
        Rounds whose weight the estimator changed (clipped IPS: ``w_i > max_weight``;
        Switch-DR: ``w_i > threshold``, correction dropped).
    interval_clipped : bool, default False
        Whether the interval was cut to the reward range.
    """

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

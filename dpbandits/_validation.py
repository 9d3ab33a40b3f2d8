"""Argument checks shared by every layer.

Each check raises ``ValueError``/``TypeError`` whose message names the parameter, the
offending value and what is allowed (CONTRIBUTING.md, "Rules every change keeps"). Nothing is
coerced silently.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Sequence
from typing import Any, TypeGuard, TypeVar

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

_T = TypeVar("_T")

#: what :func:`as_rng` accepts: an int seed, a SeedSequence or a Generator
SeedLike = int | np.integer | np.random.SeedSequence | np.random.Generator


def _is_real(value: object) -> TypeGuard[numbers.Real]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_real(name: str, value: object, *, low: float | None = None,
               high: float | None = None, low_open: bool = False, high_open: bool = False,
               allow_inf: bool = False) -> float:
    """Return ``value`` as float after checking it is a real number within the given range.

    ``low``/``high`` are inclusive unless ``low_open``/``high_open``. NaN is always rejected;
    infinities only when ``allow_inf``.
    """
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    if math.isinf(v) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v < low or (low_open and v == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low}, got {v}")
    if high is not None and (v > high or (high_open and v == high)):
        op = "<" if high_open else "<="
        raise ValueError(f"{name} must be {op} {high}, got {v}")
    return v


#: The range a bound that reaches a sensitivity may take: its square, its products with
#: another bound and the noise calibrated from them stay normal floats (no underflow to a
#: subnormal or 0, no overflow), with room for the calibration's constants.
BOUND_RANGE = (1e-75, 1e75)


def check_bound(name: str, value: object) -> float:
    """A bound on data (a norm, a reward, a radius) in :data:`BOUND_RANGE`: outside it the
    sensitivity or the noise computed from it would underflow or overflow."""
    lo, hi = BOUND_RANGE
    v = check_positive(name, value)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in [{lo:g}, {hi:g}] (outside, the sensitivity or "
                         f"the noise computed from it underflows or overflows), got {v!r}")
    return v


def check_range(name: str, value: object) -> tuple[float, float]:
    """A pair ``(low, high)`` of finite reals with ``low < high`` (a range of data)."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (low, high), got {value!r}")
    lo = check_real(f"{name}[0]", value[0])
    hi = check_real(f"{name}[1]", value[1])
    if not lo < hi:
        raise ValueError(f"{name} must have low < high, got ({lo}, {hi})")
    return lo, hi


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """A real number > 0 (optionally +inf)."""
    return check_real(name, value, low=0.0, low_open=True, allow_inf=allow_inf)


def check_nonnegative(name: str, value: object, *, allow_inf: bool = False) -> float:
    """A real number >= 0 (optionally +inf)."""
    return check_real(name, value, low=0.0, allow_inf=allow_inf)


def check_int(name: str, value: object, *, low: int | None = None,
              high: int | None = None) -> int:
    """An integer (numpy integers accepted, bools and floats rejected) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def check_epsilon(value: object, name: str = "epsilon") -> float:
    """Privacy parameter epsilon: > 0, +inf allowed (meaning 'no privacy')."""
    return check_positive(name, value, allow_inf=True)


def check_delta(value: object, name: str = "delta") -> float:
    """Privacy parameter delta in [0, 1)."""
    return check_real(name, value, low=0.0, high=1.0, high_open=True)


def check_delta_open(value: object, name: str = "delta", why: str = "") -> float:
    """Privacy parameter delta in the open interval (0, 1), for the mechanisms, conversions
    and private runs that need ``delta > 0``; ``why`` (e.g. "for the Gaussian mechanism")
    completes the error message."""
    d = check_delta(value, name)
    if d == 0.0:
        raise ValueError(f"{name} must be in (0, 1){' ' + why if why else ''}, got {d}")
    return d


def check_p(name: str, value: object, *, low: float = 1.0, low_open: bool = False) -> float:
    """An l_p exponent in [1, inf] (``low``/``low_open`` can tighten the lower end)."""
    return check_real(name, value, low=low, low_open=low_open, allow_inf=True)


def check_choice(name: str, value: _T, allowed: Collection[Any]) -> _T:
    """One of a fixed set of options."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value


#: integers of at most this magnitude are floats exactly (53-bit significand)
_EXACT_INT = 2**53


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def as_float64(name: str, value: ArrayLike) -> np.ndarray:
    """``value`` as a float64 array, converted exactly or refused: where data enters.

    float64 arrays pass as they are (not copied); bool, float16 and float32 convert exactly;
    integers (and long doubles) convert when every entry is a float64 exactly (a ``ValueError``
    names the first entry that is not, e.g. ``2^53 + 1``); any other dtype (complex, object,
    strings, dates) is refused with a ``TypeError`` naming ``name`` and the dtype, and so is a
    masked array (its masked-out entries would pass as data). The
    unvalidated numerical cores assume float64: float32 arithmetic misses a bound by a
    relative ``1e-7``, and ``abs`` of the int64 ``-2^63`` is negative.
    """
    if isinstance(value, np.ma.MaskedArray):  # asarray would keep the masked-out values
        raise TypeError(f"{name} must be a plain array, got a masked array; fill or drop the "
                        "masked entries first (e.g. value.filled(...) or value.compressed())")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be array-like of real numbers: {exc}") from None
    dt = arr.dtype
    if dt == np.float64:
        return arr
    allowed = "allowed: bool, integer or floating dtypes (converted to float64 exactly)"
    if dt.kind == "b" or (dt.kind == "f" and dt.itemsize <= 8):
        return arr.astype(np.float64)
    if dt.kind not in "iuf":
        raise TypeError(f"{name} must be array-like of real numbers, got dtype {dt}; {allowed}")
    out = arr.astype(np.float64)
    if dt.kind == "f":  # long double: exact when it comes back unchanged
        bad = (out.astype(dt) != arr) & ~np.isnan(arr)
    else:
        bad = (arr > _EXACT_INT) | (arr < -_EXACT_INT)
        if bad.any():  # large integers: exact when the float converts back unchanged
            f = out[bad]
            limit = 2.0**63 if dt.kind == "i" else 2.0**64
            back = np.where(f < limit, f, 0.0).astype(dt)
            bad[bad] = (f >= limit) | (back != arr[bad])
    if bad.any():
        i = _first(bad)
        where = f"{name}[{', '.join(map(str, i))}]" if arr.ndim else name
        raise ValueError(
            f"{where} = {arr[i]} (dtype {dt}) has no exact float64 value; {allowed}: "
            f"integers of magnitude at most 2^53 or otherwise exactly representable")
    return out


def check_array(name: str, value: ArrayLike, *, ndim: int | None = None,
                shape: Sequence[int | None] | None = None, finite: bool = True,
                dtype: DTypeLike = np.float64) -> np.ndarray:
    """Return ``value`` as an array of ``dtype``, checking dimension, shape and finiteness.

    ``shape`` may contain ``None`` for a free axis. Arrays are not copied when already of
    the right dtype. For ``float64`` (the default) the conversion is :func:`as_float64`'s:
    exact or refused.
    """
    if np.dtype(dtype) == np.float64:
        arr = as_float64(name, value)
    else:
        try:
            arr = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{name} must be array-like of {np.dtype(dtype).name}: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(
            want is not None and got != want for got, want in zip(arr.shape, shape, strict=True)
        ):
            want_txt = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want_txt}, got {arr.shape}")
    if finite and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator``; seeds are not silently accepted here (use ``as_rng``)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator, got {type(rng).__name__}; "
            "build one with numpy.random.default_rng(seed)"
        )
    return rng


def as_rng(seed_or_rng: SeedLike, name: str = "seed") -> np.random.Generator:
    """Generator from an int seed, a SeedSequence or an existing Generator (returned as is)."""
    if isinstance(seed_or_rng, np.random.Generator):
        return seed_or_rng
    if isinstance(seed_or_rng, np.random.SeedSequence):
        return np.random.default_rng(seed_or_rng)
    if isinstance(seed_or_rng, numbers.Integral) and not isinstance(seed_or_rng, bool):
        if seed_or_rng < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {seed_or_rng}")
        return np.random.default_rng(int(seed_or_rng))
    raise TypeError(
        f"{name} must be a non-negative int, a numpy SeedSequence or a Generator, "
        f"got {type(seed_or_rng).__name__}"
    )

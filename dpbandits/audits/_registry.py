"""The audit registry: one :class:`AuditSpec` per audited component (name -> callable)."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from threadpoolctl import threadpool_limits

from dpbandits._validation import check_choice, check_int
from dpbandits.privacy.audit import AuditResult

#: Per-audit confidence: a correct component is reported as a violation with probability
#: at most 1e-3 (the per-test failure probability recommended for CI).
CONFIDENCE = 0.999


@dataclass(frozen=True)
class AuditSpec:
    """A registered audit: ``spec(runs, seed, broken=False) -> AuditResult``.

    ``fast_runs``/``thorough_runs`` are the certification runs per neighbouring input of the
    two tiers (the fast tier still detects the broken variant). ``expected`` is the verdict a
    correct implementation gives (``"violation"`` for deliberate sanity checks and for
    published claims known to be false). ``has_broken`` is False for audits without a
    power check of their own (sanity checks that already expect a violation).
    """

    name: str
    func: Callable[[int, int, bool], AuditResult]
    fast_runs: int
    thorough_runs: int
    component: str
    canary: str
    broken_variant: str
    shows: str
    cannot_show: str
    expected: str = "consistent"
    has_broken: bool = True

    def __call__(self, runs: int | None = None, seed: int = 0, broken: bool = False
                 ) -> AuditResult:
        runs = self.fast_runs if runs is None else check_int("runs", runs, low=10)
        if broken and not self.has_broken:
            raise ValueError(f"audit {self.name!r} has no broken variant")
        # Single-threaded BLAS: the components do many tiny linear-algebra calls, which
        # threaded BLAS slows down by 10-100x on shared cores.
        with threadpool_limits(1):
            return self.func(runs, seed, broken)


#: name -> AuditSpec (callable ``(runs, seed, broken=False) -> AuditResult``)
AUDITS: dict[str, AuditSpec] = {}
#: components whose audit could not be registered (module missing), name -> reason
MISSING: dict[str, str] = {}


def register(name: str, *, fast_runs: int, thorough_runs: int, component: str, canary: str,
             broken_variant: str, shows: str, cannot_show: str, expected: str = "consistent",
             has_broken: bool = True):
    """Decorator registering ``func(runs, seed, broken) -> AuditResult`` under ``name``."""

    def deco(func):
        if name in AUDITS:
            raise ValueError(f"audit {name!r} is already registered")
        AUDITS[name] = AuditSpec(name=name, func=func, fast_runs=fast_runs,
                                 thorough_runs=thorough_runs, component=component,
                                 canary=canary, broken_variant=broken_variant, shows=shows,
                                 cannot_show=cannot_show, expected=expected,
                                 has_broken=has_broken)
        return func

    return deco


def select(names: Iterable[str] | None) -> list[str]:
    """Registered audit names matching ``names`` (exact names or shell patterns like
    ``"dp-ucb*"``), in registry order; ``None`` selects all."""
    if names is None:
        return list(AUDITS)
    if isinstance(names, str):
        names = [names]
    chosen: list[str] = []
    for pattern in names:
        hits = [n for n in AUDITS if fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            extra = ""
            missing = [m for m in MISSING if fnmatch.fnmatchcase(m, pattern)]
            if missing:
                extra = "; not available: " + ", ".join(f"{m} ({MISSING[m]})" for m in missing)
            close = difflib.get_close_matches(pattern, list(AUDITS), n=3, cutoff=0.5)
            hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close
                    else "; see --list")
            raise ValueError(f"unknown audit {pattern!r}{hint}{extra}")
        chosen += [h for h in hits if h not in chosen]
    return [n for n in AUDITS if n in chosen]


def run_audits(names=None, tier: str = "fast", seed: int = 0, *, power: bool = False
               ) -> list[AuditResult]:
    """Run the selected audits.

    Parameters
    ----------
    names : iterable of audit names or patterns (``None``: every registered audit).
    tier : ``"fast"`` (the default test run's counts) or ``"thorough"``.
    seed : base seed; every audit uses it as given (fixed seeds, reproducible tables).
    power : also run each audit's broken variant (the power check), right after it.
    """
    check_choice("tier", tier, {"fast", "thorough"})
    check_int("seed", seed, low=0)
    results = []
    for name in select(names):
        spec = AUDITS[name]
        runs = spec.fast_runs if tier == "fast" else spec.thorough_runs
        results.append(spec(runs, seed, False))
        if power and spec.has_broken:
            results.append(spec(runs, seed, True))
    return results

"""Peak resident memory of the process over a block of code, sampled by a background thread.

``tracemalloc`` measures Python allocations exactly but slows numpy-heavy loops several-fold;
sampling the resident set size (``/proc/self/statm``) every few milliseconds costs nothing
measurable and reports what the operating system sees: the whole process, interpreter and
libraries included. Where ``/proc`` is absent, the process's lifetime peak
(``resource.getrusage``) is reported instead.
"""

from __future__ import annotations

import os
import resource
import sys
import threading

_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else None


def current_rss_mb() -> float | None:
    """Resident set size of this process in MiB (None where /proc is unavailable)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_MB
    except (OSError, ValueError, IndexError, TypeError):
        return None


def lifetime_peak_rss_mb() -> float:
    """Peak resident set size of this process since it started, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes vs KiB


class PeakRSS:
    """Context manager: ``peak_mb`` is the largest resident set size seen inside the block.

    A daemon thread samples every ``interval`` seconds; the samples at entry and exit are
    always taken, so a block shorter than the interval is still measured.
    """

    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.peak_mb: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        rss = current_rss_mb()
        if rss is not None and (self.peak_mb is None or rss > self.peak_mb):
            self.peak_mb = rss

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> PeakRSS:
        self._sample()
        if self.peak_mb is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        if self.peak_mb is None:
            self.peak_mb = lifetime_peak_rss_mb()

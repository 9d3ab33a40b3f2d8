"""Settings shared by the whole suite."""

import os
import platform
import sys
import tempfile

# One floating-point dispatch, as scripts/_env.sh sets it (the golden digests were recorded
# with numpy's AVX2 loops and OpenBLAS's Haswell kernels); set before numpy loads, so that a
# bare `python -m pytest` on an AVX-512 machine and the xdist workers get it too.
if platform.machine() == "x86_64" and "numpy" not in sys.modules:
    try:
        with open("/proc/cpuinfo") as _cpu:
            _avx2 = " avx2 " in _cpu.read().replace("\n", " ")
    except OSError:
        _avx2 = False
    if _avx2:
        os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512_ICL AVX512_SPR")
        os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")

from hypothesis import HealthCheck, settings

# Property tests are checks of correctness, not of speed: no per-example deadline and no
# "data generation too slow" health check, whose verdicts depend on how busy the machine is;
# derandomized, so a run is reproducible (the same examples every time).
settings.register_profile("dpbandits", deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dpbandits")

# Noise searches keep their numbers between processes (privacy/accounting/_certificate_store.py):
# the suite and the processes it starts share one fresh folder, never the user's cache.
if "DPBANDITS_CACHE_DIR" not in os.environ:
    os.environ["DPBANDITS_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpbandits-test-cache-")

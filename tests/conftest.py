"""Settings shared by the whole suite."""

import os
import tempfile

from hypothesis import HealthCheck, settings

# Property tests are checks of correctness, not of speed: no per-example deadline and no
# "data generation too slow" health check, whose verdicts depend on how busy the machine is;
# derandomized, so a run is reproducible (the same examples every time).
settings.register_profile("dpbandits", deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dpbandits")

# Certificates persist between processes (privacy/accounting/_certificate_store.py): the suite
# and the processes it starts share one fresh folder, never the user's cache.
if "DPBANDITS_CACHE_DIR" not in os.environ:
    os.environ["DPBANDITS_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpbandits-test-cache-")

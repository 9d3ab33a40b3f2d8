"""Settings shared by the whole suite."""

from hypothesis import HealthCheck, settings

# Property tests are checks of correctness, not of speed: no per-example deadline and no
# "data generation too slow" health check, whose verdicts depend on how busy the machine is;
# derandomized, so a run is reproducible (the same examples every time).
settings.register_profile("dpbandits", deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dpbandits")

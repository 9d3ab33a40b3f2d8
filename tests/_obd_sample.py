"""The real Open Bandit Dataset sample for the tests that read it."""

import os

import pytest

from dpbandits.datasets import OBD_DOWNLOAD, OBD_ENV, obd_source


def real_sample():
    """The real sample's source; skips (fails on CI, whose .ci/run downloads it) without it."""
    try:
        return obd_source()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide the Open Bandit Dataset sample (.ci/run downloads it "
                        f"and sets {OBD_ENV}): {exc}")
        pytest.skip(f"no Open Bandit Dataset sample: fetch it with `{OBD_DOWNLOAD}` and set "
                    f"{OBD_ENV}=DIR")

"""Skip a test whose environment needs an optional extra that is not installed (CI installs
every extra: ``.ci/run``)."""

import importlib.util

import pytest

from dpbandits.envs import NEEDS_EXTRA

#: optional dependency group -> the module it installs
_MODULE = {"datasets": "sklearn"}


def skip_without_extra(env_id: str) -> None:
    """``pytest.skip`` with the reason when ``env_id`` needs an extra that is absent."""
    extra = NEEDS_EXTRA.get(env_id)
    if extra is not None and importlib.util.find_spec(_MODULE[extra]) is None:
        pytest.skip(f"{env_id} needs the optional extra {extra!r} "
                    f"(pip install 'dpbandits[{extra}]')")

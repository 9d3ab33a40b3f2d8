"""The small sample of the Open Bandit Dataset as a ``LoggedBandit``.

Saito, Aihara, Matsutani & Narita, "Open Bandit Dataset and Pipeline: Towards Realistic and
Reproducible Off-Policy Evaluation" (2021): fashion recommendations logged on an e-commerce
site by two policies, uniform random (``"random"``) and Bernoulli Thompson sampling
(``"bts"``), in three campaigns (``"all"``: 80 items, ``"men"``: 34, ``"women"``: 46). The
``obp`` package ships 10,000 rounds of each pair under ``obp/dataset/obd/POLICY/CAMPAIGN/``:
``CAMPAIGN.csv`` (an unnamed index column, ``timestamp``, ``item_id`` (the arm),
``position`` (1-3, where the item was shown), ``click`` (the reward), ``propensity_score``
(the logging policy's probability of that item at that position), the categorical
``user_feature_0 .. 3`` (hashed strings) and ``user-item_affinity_0 .. K-1``), and
``item_context.csv`` (not used here).

:func:`load_obd` reads that layout, without installing or importing ``obp``, from

* ``obp``'s source distribution (``obp-0.5.7.tar.gz``) or a wheel (a zip) -- the file itself or
  the folder it was downloaded to. One command fetches it on any Python (obp 0.5.7 itself
  needs Python < 3.11; PyPI has only its source distribution, which is read, never built or
  installed)::

      python -m pip download obp==0.5.7 --no-deps --ignore-requires-python -d ~/obd

* a folder laid out as ``obp/dataset/obd`` (``POLICY/CAMPAIGN/CAMPAIGN.csv``), or one
  ``CAMPAIGN.csv`` file;
* by default (``path=None``): the path in the environment variable ``DPBANDITS_OBD`` (any of
  the above), else the ``dataset/obd`` folder of an installed ``obp`` (found, not imported).

It sorts the rounds by timestamp and builds the context: the one-hot encoding of the four
user features (every category seen in the file, sorted; each row has exactly four ones),
optionally followed by the affinity scores and a one-hot position.

With K = 34-80 arms, replay accepts only about one logged round in K (~125-300 accepted
rounds from 10,000): too few to learn from. The sample is for off-policy estimates of fixed
policies (:mod:`dpbandits.offpolicy`); the ``"random"`` logs also replay unbiasedly.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits._validation import check_choice
from dpbandits.envs.logged import LoggedBandit
from dpbandits.errors import MissingExtraError

__all__ = ["OBD_CAMPAIGNS", "OBD_DOWNLOAD", "OBD_ENV", "OBD_POLICIES", "load_obd",
           "obd_source", "obp_data_dir"]

#: campaign -> number of items (arms)
OBD_CAMPAIGNS = {"all": 80, "men": 34, "women": 46}
OBD_POLICIES = ("random", "bts")
#: environment variable naming the default sample (a folder, an obp archive or its folder)
OBD_ENV = "DPBANDITS_OBD"
#: the one command that fetches the sample (obp's source distribution) on any Python
OBD_DOWNLOAD = "python -m pip download obp==0.5.7 --no-deps --ignore-requires-python -d DIR"
_REQUIRED = ("timestamp", "item_id", "position", "click", "propensity_score")
_ARCHIVES = (".tar.gz", ".tgz", ".whl", ".zip")


def obp_data_dir() -> Path:
    """``obp/dataset/obd`` of the installed ``obp`` package (found without importing it)."""
    spec = importlib.util.find_spec("obp")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            f"no Open Bandit Dataset sample: {OBD_ENV} is not set and obp is not installed. "
            f"Fetch it with `{OBD_DOWNLOAD}` and pass path=DIR (or set {OBD_ENV}=DIR); a "
            "folder laid out as obp/dataset/obd or one CAMPAIGN.csv also works")
    root = Path(next(iter(spec.submodule_search_locations))) / "dataset" / "obd"
    if not root.is_dir():
        raise FileNotFoundError(f"the installed obp package has no dataset directory at "
                                f"{str(root)!r}")
    return root


def obd_source(path: str | os.PathLike[str] | None = None) -> Path:
    """Where :func:`load_obd` reads the sample: ``path``, else ``$DPBANDITS_OBD``, else the
    installed ``obp``'s ``dataset/obd`` folder. A folder holding an obp archive (a ``pip
    download`` folder) resolves to the archive (the newest name if several)."""
    if path is None:
        env = os.environ.get(OBD_ENV)
        if not env:
            return obp_data_dir()
        path, origin = env, f"${OBD_ENV}"
    else:
        origin = "path"
    root = Path(path).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"{origin}={str(path)!r} does not exist; it must be an obp "
                                f"archive (fetch one with `{OBD_DOWNLOAD}`), the folder holding "
                                "it, a folder laid out as obp/dataset/obd or one CAMPAIGN.csv")
    if root.is_dir() and not any((root / p).is_dir() for p in OBD_POLICIES):
        archives = sorted(f for f in root.iterdir()
                          if f.name.startswith("obp-") and f.name.endswith(_ARCHIVES))
        if archives:
            return archives[-1]
    return root


def _archive_member(archive: Path, campaign: str, behavior_policy: str) -> bytes:
    """The bytes of ``obp/dataset/obd/POLICY/CAMPAIGN/CAMPAIGN.csv`` inside an sdist or wheel."""
    tail = f"obp/dataset/obd/{behavior_policy}/{campaign}/{campaign}.csv"
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n == tail or n.endswith("/" + tail)]
            if names:
                return z.read(names[0])
    else:
        with tarfile.open(archive, "r:*") as t:
            for member in t:
                if member.isfile() and (member.name == tail or member.name.endswith("/" + tail)):
                    handle = t.extractfile(member)
                    if handle is not None:
                        return handle.read()
    raise FileNotFoundError(f"archive {str(archive)!r} holds no {tail!r}; expected obp's source "
                            f"distribution or wheel (fetch it with `{OBD_DOWNLOAD}`)")


def _read_csv(campaign: str, behavior_policy: str, path) -> tuple[pd.DataFrame, str]:
    """The sample's frame and a description of where it came from."""
    root = obd_source(path)
    if root.is_file() and root.name.endswith(_ARCHIVES):
        raw = _archive_member(root, campaign, behavior_policy)
        where = f"{root}!{behavior_policy}/{campaign}/{campaign}.csv"
        return pd.read_csv(io.BytesIO(raw), index_col=0), where
    if root.is_file():
        return pd.read_csv(root, index_col=0), str(root)
    file = root / behavior_policy / campaign / f"{campaign}.csv"
    if not file.is_file():
        raise FileNotFoundError(
            f"no Open Bandit Dataset file at {str(file)!r}: path must be an obp archive or the "
            f"folder holding it (`{OBD_DOWNLOAD}`), a file CAMPAIGN.csv, or a directory laid "
            "out as obp's dataset/obd (POLICY/CAMPAIGN/CAMPAIGN.csv)")
    return pd.read_csv(file, index_col=0), str(file)


def _one_hot(column: pd.Series) -> np.ndarray:
    values = column.astype(str).to_numpy()
    categories = np.unique(values)
    return (values[:, None] == categories[None, :]).astype(np.float64)


def load_obd(campaign: str = "all", *, behavior_policy: str = "random",
             path: str | os.PathLike[str] | None = None, affinity: bool = False,
             position: bool = False) -> LoggedBandit:
    """The Open Bandit Dataset sample of ``campaign`` logged by ``behavior_policy``.

    ``path``: obp's source distribution or wheel, the folder ``pip download`` put it in, a
    directory laid out as obp's ``dataset/obd`` or one ``CAMPAIGN.csv`` file (default:
    :func:`obd_source`: ``$DPBANDITS_OBD``, else an installed ``obp``'s copy).
    Arms are ``item_id`` in ``{0, ..., K - 1}`` (K of :data:`OBD_CAMPAIGNS`), rewards
    ``click``, propensities ``propensity_score``;
    contexts as in the module docstring (``affinity``/``position`` append those features).
    Rounds are sorted by timestamp (stable), so ``log.subset(slice(0, m))`` is the first
    ``m`` rounds in time.
    """
    check_choice("campaign", campaign, tuple(OBD_CAMPAIGNS))
    check_choice("behavior_policy", behavior_policy, OBD_POLICIES)
    for flag, value in (("affinity", affinity), ("position", position)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, got {value!r}")
    data, file = _read_csv(campaign, behavior_policy, path)
    users = sorted(c for c in data.columns if c.startswith("user_feature_"))
    missing = [c for c in _REQUIRED if c not in data.columns] + ([] if users else
                                                                 ["user_feature_*"])
    if missing:
        raise ValueError(f"Open Bandit Dataset file {file!r}: missing column(s) {missing}; "
                         f"the layout needs {list(_REQUIRED)} and user_feature_0 .. 3")
    data = data.sort_values("timestamp", kind="stable")
    parts = [_one_hot(data[c]) for c in users]
    if affinity:
        cols = sorted((c for c in data.columns if c.startswith("user-item_affinity_")),
                      key=lambda c: int(c.rsplit("_", 1)[1]))
        parts.append(data[cols].to_numpy(dtype=np.float64))
    if position:
        parts.append(_one_hot(data["position"]))
    return LoggedBandit(
        np.hstack(parts), data["item_id"].to_numpy(), data["click"].to_numpy(),
        data["propensity_score"].to_numpy(), OBD_CAMPAIGNS[campaign],
        name=f"obd/{behavior_policy}/{campaign}",
        columns={"actions": "item_id", "rewards": "click",
                 "propensities": "propensity_score"})

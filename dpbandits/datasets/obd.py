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

:func:`load_obd` reads that layout from an installed ``obp`` (``pip install
'dpbandits[obd]'``; the package is located without importing it) or from a directory or
file the user gives, sorts the rounds by timestamp and builds the context: the one-hot
encoding of the four user features (every category seen in the file, sorted; each row has
exactly four ones), optionally followed by the affinity scores and a one-hot position.

With K = 34-80 arms, replay accepts only about one logged round in K (~125-300 accepted
rounds from 10,000): too few to learn from. The sample is for off-policy estimates of fixed
policies (:mod:`dpbandits.datasets.offpolicy`); the ``"random"`` logs also replay unbiasedly.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandits._validation import check_choice
from dpbandits.envs.logged import LoggedBandit
from dpbandits.errors import MissingExtraError

__all__ = ["OBD_CAMPAIGNS", "OBD_POLICIES", "load_obd", "obp_data_dir"]

#: campaign -> number of items (arms)
OBD_CAMPAIGNS = {"all": 80, "men": 34, "women": 46}
OBD_POLICIES = ("random", "bts")
_REQUIRED = ("timestamp", "item_id", "position", "click", "propensity_score")


def obp_data_dir() -> Path:
    """``obp/dataset/obd`` of the installed ``obp`` package (found without importing it)."""
    spec = importlib.util.find_spec("obp")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            "the Open Bandit Dataset sample ships with the obp package, which is not "
            "installed: pip install 'dpbandits[obd]', or pass path= to a copy of its "
            "obp/dataset/obd directory (or to one CAMPAIGN.csv)")
    root = Path(next(iter(spec.submodule_search_locations))) / "dataset" / "obd"
    if not root.is_dir():
        raise FileNotFoundError(f"the installed obp package has no dataset directory at "
                                f"{str(root)!r}")
    return root


def _csv_path(campaign: str, behavior_policy: str, path) -> Path:
    root = obp_data_dir() if path is None else Path(path)
    if root.is_file():
        return root
    file = root / behavior_policy / campaign / f"{campaign}.csv"
    if not file.is_file():
        raise FileNotFoundError(
            f"no Open Bandit Dataset file at {str(file)!r}: path must be a file "
            f"CAMPAIGN.csv or a directory laid out as obp's dataset/obd "
            f"(POLICY/CAMPAIGN/CAMPAIGN.csv)")
    return file


def _one_hot(column: pd.Series) -> np.ndarray:
    values = column.astype(str).to_numpy()
    categories = np.unique(values)
    return (values[:, None] == categories[None, :]).astype(np.float64)


def load_obd(campaign: str = "all", *, behavior_policy: str = "random",
             path: str | os.PathLike[str] | None = None, affinity: bool = False,
             position: bool = False) -> LoggedBandit:
    """The Open Bandit Dataset sample of ``campaign`` logged by ``behavior_policy``.

    ``path``: a directory laid out as obp's ``dataset/obd`` or one ``CAMPAIGN.csv`` file
    (default: the installed ``obp``'s copy). Arms are ``item_id`` in ``{0, ..., K - 1}``
    (K of :data:`OBD_CAMPAIGNS`), rewards ``click``, propensities ``propensity_score``;
    contexts as in the module docstring (``affinity``/``position`` append those features).
    Rounds are sorted by timestamp (stable), so ``log.subset(slice(0, m))`` is the first
    ``m`` rounds in time.
    """
    check_choice("campaign", campaign, tuple(OBD_CAMPAIGNS))
    check_choice("behavior_policy", behavior_policy, OBD_POLICIES)
    for flag, value in (("affinity", affinity), ("position", position)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, got {value!r}")
    file = _csv_path(campaign, behavior_policy, path)
    data = pd.read_csv(file, index_col=0)
    users = sorted(c for c in data.columns if c.startswith("user_feature_"))
    missing = [c for c in _REQUIRED if c not in data.columns] + ([] if users else
                                                                 ["user_feature_*"])
    if missing:
        raise ValueError(f"Open Bandit Dataset file {str(file)!r}: missing column(s) {missing}; "
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

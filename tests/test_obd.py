"""The Open Bandit Dataset loader on small files written here in the layout obp ships
(obp/dataset/obd/POLICY/CAMPAIGN/CAMPAIGN.csv), found by path, inside obp archives (sdist,
wheel), through $DPBANDITS_OBD or in a stand-in obp package; and on the real sample, which
CI downloads (.ci/run) and a developer fetches with OBD_DOWNLOAD."""

import importlib
import importlib.util
import tarfile
import zipfile

import numpy as np
import pandas as pd
import pytest
from _obd_sample import real_sample

from dpbandits.datasets import (
    OBD_CAMPAIGNS,
    OBD_ENV,
    load_log,
    load_obd,
    obd_source,
    obp_data_dir,
)
from dpbandits.envs.replay import default_replay_horizon


def _obd_frame(campaign="men", n=300, seed=0, policy="random"):
    """A file in the OBD layout: unnamed index, timestamp, item_id, position, click,
    propensity_score, hashed user features, user-item affinities."""
    rng = np.random.default_rng(seed)
    K = OBD_CAMPAIGNS[campaign]
    frame = pd.DataFrame({
        "timestamp": pd.date_range("2019-11-24", periods=n, freq="min", tz="UTC")
                       .astype(str)[rng.permutation(n)],
        "item_id": rng.integers(0, K, n),
        "position": rng.integers(1, 4, n),
        "click": (rng.random(n) < 0.05).astype(int),
        "propensity_score": 1.0 / K if policy == "random" else rng.uniform(0.001, 0.2, n),
    })
    for j, levels in enumerate((3, 5, 9, 8)):
        hashes = [f"{(j * 97 + k) * 2654435761 % 2**64:032x}" for k in range(levels)]
        frame[f"user_feature_{j}"] = np.array(hashes)[rng.integers(0, levels, n)]
    for k in range(K):
        frame[f"user-item_affinity_{k}"] = rng.integers(0, 3, n).astype(float)
    return frame


def _write(root, frame, campaign="men", policy="random"):
    folder = root / policy / campaign
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{campaign}.csv")  # with the unnamed index column, as obp's
    pd.DataFrame({"item_id": range(OBD_CAMPAIGNS[campaign])}).to_csv(
        folder / "item_context.csv")
    return folder / f"{campaign}.csv"


def test_the_layout_is_read_sorted_by_time_with_one_hot_user_features(tmp_path):
    frame = _obd_frame()
    _write(tmp_path, frame)
    log = load_obd("men", path=tmp_path)
    order = np.argsort(frame["timestamp"].to_numpy(), kind="stable")
    np.testing.assert_array_equal(log.actions, frame["item_id"].to_numpy()[order])
    np.testing.assert_array_equal(log.rewards, frame["click"].to_numpy()[order])
    assert log.n_arms == 34 and log.n_rounds == 300 and log.is_uniform
    assert log.name == "obd/random/men"
    n_levels = sum(frame[f"user_feature_{j}"].nunique() for j in range(4))
    assert log.dim == n_levels
    np.testing.assert_array_equal(log.contexts.sum(axis=1), 4.0)  # one level per feature
    first = frame.iloc[order[0]]
    levels0 = np.unique(frame["user_feature_0"].astype(str))
    assert log.contexts[0, int(np.flatnonzero(levels0 == first["user_feature_0"])[0])] == 1.0
    full = load_obd("men", path=tmp_path, affinity=True, position=True)
    assert full.dim == n_levels + 34 + 3
    np.testing.assert_array_equal(full.contexts[:, n_levels:n_levels + 34],
                                  frame[[f"user-item_affinity_{k}" for k in range(34)]]
                                  .to_numpy()[order])
    # a path to the file itself works too
    file_log = load_obd("men", path=tmp_path / "random" / "men" / "men.csv")
    np.testing.assert_array_equal(file_log.contexts, log.contexts)


def test_replay_of_80_arms_accepts_about_one_round_in_80(tmp_path):
    _write(tmp_path, _obd_frame("all", n=10_000), campaign="all")
    log = load_obd("all", path=tmp_path)
    # n/K = 125 accepted rounds in a pass, 4 sd in reserve: 80
    assert default_replay_horizon(log) == int(np.floor(125 - 4 * np.sqrt(125 * 79 / 80)))


def test_obp_archives_and_their_download_folder_are_read_like_the_folder(tmp_path, monkeypatch):
    frame = _obd_frame("women", n=200, seed=3)
    _write(tmp_path / "src" / "obp-0.5.7" / "obp" / "dataset" / "obd", frame, campaign="women")
    folder = load_obd("women", path=tmp_path / "src" / "obp-0.5.7" / "obp" / "dataset" / "obd")
    sdist = tmp_path / "dl" / "obp-0.5.7.tar.gz"
    sdist.parent.mkdir()
    with tarfile.open(sdist, "w:gz") as t:
        t.add(tmp_path / "src" / "obp-0.5.7", arcname="obp-0.5.7")
    wheel = tmp_path / "whl" / "obp-0.5.7-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as z:
        for f in (tmp_path / "src" / "obp-0.5.7").rglob("*.csv"):
            z.write(f, f.relative_to(tmp_path / "src" / "obp-0.5.7").as_posix())
    for source in (sdist, sdist.parent, wheel, wheel.parent):
        log = load_obd("women", path=source)
        np.testing.assert_array_equal(log.contexts, folder.contexts)
        np.testing.assert_array_equal(log.actions, folder.actions)
        np.testing.assert_array_equal(log.rewards, folder.rewards)
    assert obd_source(sdist.parent) == sdist
    monkeypatch.setenv(OBD_ENV, str(sdist.parent))  # the default source, also for the CLI
    np.testing.assert_array_equal(load_obd("women").rewards, folder.rewards)
    assert load_log("obd:random/women").n_rounds == 200
    with pytest.raises(FileNotFoundError, match=r"holds no 'obp/dataset/obd/random/men/men.csv'"):
        load_obd("men")
    monkeypatch.setenv(OBD_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=r"\$DPBANDITS_OBD=.*nowhere' does not exist"):
        load_obd("men")


def test_a_stand_in_obp_package_is_found_without_importing_it(tmp_path, monkeypatch):
    monkeypatch.delenv(OBD_ENV, raising=False)
    pkg = tmp_path / "site" / "obp"
    (pkg / "dataset" / "obd").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('obp must not be imported')\n")
    _write(pkg / "dataset" / "obd", _obd_frame("women"), campaign="women")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    assert obp_data_dir() == pkg / "dataset" / "obd"
    log = load_obd("women")
    assert log.n_arms == 46 and log.n_rounds == 300
    assert load_log("obd:women").n_rounds == 300
    assert load_log("obd:random/women").name == "obd/random/women"


def test_a_missing_sample_says_how_to_get_it(monkeypatch):
    monkeypatch.delenv(OBD_ENV, raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ModuleNotFoundError, match=r"pip download obp==0.5.7 --no-deps "
                                                  r"--ignore-requires-python -d DIR.*path=DIR"):
        load_obd("men")


def test_malformed_files_are_refused_with_the_column(tmp_path):
    frame = _obd_frame()
    _write(tmp_path / "a", frame.drop(columns="propensity_score"))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['propensity_score'\]"):
        load_obd("men", path=tmp_path / "a")
    bad = frame.copy()
    bad.loc[5, "item_id"] = 34  # men has items 0-33
    _write(tmp_path / "b", bad)
    with pytest.raises(ValueError, match=r"column 'item_id' row \d+ is 34; actions must be arms "
                                         r"in the declared set \{0, ..., 33\}"):
        load_obd("men", path=tmp_path / "b")
    bad = frame.copy()
    bad.loc[3, "propensity_score"] = 0.0
    _write(tmp_path / "c", bad)
    with pytest.raises(ValueError, match=r"column 'propensity_score' row \d+ is 0.0"):
        load_obd("men", path=tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="POLICY/CAMPAIGN/CAMPAIGN.csv"):
        load_obd("women", path=tmp_path / "a")
    with pytest.raises(ValueError, match="campaign"):
        load_obd("kids", path=tmp_path / "a")


def test_the_thompson_sampling_log_is_not_uniform(tmp_path):
    _write(tmp_path, _obd_frame(policy="bts"), policy="bts")
    log = load_obd("men", behavior_policy="bts", path=tmp_path)
    assert not log.is_uniform


@pytest.mark.parametrize("campaign", ["all", "men", "women"])
def test_the_real_sample_of_obp(campaign):
    source = real_sample()
    log = load_obd(campaign, path=source)
    assert log.n_rounds == 10_000 and log.n_arms == OBD_CAMPAIGNS[campaign] and log.is_uniform
    np.testing.assert_array_equal(log.contexts.sum(axis=1), 4.0)
    # the click rates of the sample (Saito et al. 2021 report about 0.4% for the random logs)
    assert log.rewards.sum() == {"all": 38, "men": 46, "women": 46}[campaign]
    bts = load_obd(campaign, behavior_policy="bts", path=source)
    assert bts.n_rounds == 10_000 and not bts.is_uniform

"""``dpbandits list`` prints the built-in rows from ``catalogue.json`` without building
anything: the file must be what building every environment and agent gives."""

import importlib.util
import json

import gymnasium
import pytest

from dpbandits.cli import main
from dpbandits.envs.classification import ClassificationBanditVectorEnv
from dpbandits.errors import missing_dataset_extra
from dpbandits.harness import catalogue, listing


def test_catalogue_file_is_what_building_every_builtin_gives():
    assert json.loads(listing.CATALOGUE_FILE.read_text()) == catalogue.builtin_catalogue(), (
        "catalogue.json is stale: run python -m dpbandits.harness.catalogue and commit it")


def test_listed_rows_are_the_built_rows():
    # the dynamic rows (gymnasium and every agent imported here) of the built-in ids, as
    # they are on this machine, equal the rows list prints from the file
    built_envs = {row["id"]: row for row in catalogue.env_rows()}
    built_agents = {row["name"]: row for row in catalogue.agent_rows()}
    listed_envs, listed_agents = listing.env_rows(), listing.agent_rows()
    assert [row["id"] for row in listed_envs] == sorted(built_envs)
    assert [row["name"] for row in listed_agents] == sorted(built_agents)
    for row in listed_envs:
        assert row == built_envs[row["id"]]
    for row in listed_agents:
        assert row == built_agents[row["name"]]


def test_a_dataset_without_scikit_learn_says_it_is_not_available(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sklearn" else real(name, *a))
    rows = {row["id"]: row for row in listing.env_rows()}
    digits = rows["dpbandits/DigitsBandit-v0"]
    assert (digits["K"], digits["d"], digits["T"]) == ("-", "-", "-")
    assert digits["description"] == listing.short(
        f"not available: {missing_dataset_extra('digits')}", 94)
    assert rows["dpbandits/IrisBandit-v0"]["K"] == 3  # iris ships with dpbandits


def test_a_plugin_environment_is_built_and_listed(capsys):
    vector = f"{ClassificationBanditVectorEnv.__module__}:{ClassificationBanditVectorEnv.__name__}"
    gymnasium.register("catalogue-test/Iris-v0", vector_entry_point=vector,
                       kwargs={"dataset": "iris", "horizon": 77})
    try:
        assert main(["list"]) == 0
        line = next(ln for ln in capsys.readouterr().out.splitlines()
                    if "catalogue-test/Iris-v0" in ln)
        assert "K=3" in line and "T=77" in line
    finally:
        del gymnasium.registry["catalogue-test/Iris-v0"]


@pytest.mark.parametrize("name", ["dp-ucb", "linucb"])
def test_the_listed_notion_is_the_agents(name):
    from dpbandits.agents import make_agent

    privacy = make_agent(name, n_arms=3, dim=4, horizon=50).privacy
    notion = "not private" if privacy is None else privacy.notion
    row = next(row for row in listing.agent_rows() if row["name"] == name)
    assert row["privacy"] == notion

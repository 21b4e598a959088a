"""Where each question's facts come from, as its task file records them, and the `--facts map`
filter (facts.keep_facts) that the run's switch applies to the loaded episodes."""
from __future__ import annotations

import dataclasses

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.questions.answers import KINDS
from cityseeker_ros.core.tasks.questions.facts import FACT_SETTINGS, MAP, RENDERER, facts_of, keep_facts, sources

from .conftest import street_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return street_world(tmp_path_factory.mktemp("w") / "highstreet")


def test_every_kind_states_its_facts_and_only_colours_and_storeys_are_the_renderers():
    for kind in KINDS:
        facts = facts_of(kind)
        assert facts and all(set(f) == {"fact", "source", "from"} for f in facts)
        made = {f["fact"] for f in facts if f["source"] == RENDERER}
        assert made == ({"facade colour"} if kind == "colour" else {"storeys"} if kind == "floors" else set()), kind
    with pytest.raises(ValueError, match="unknown question kind 'smell'"):
        facts_of("smell")


def test_every_generated_question_records_its_facts(street_tasks):
    for t in street_tasks.document["tasks"]:
        assert t["details"]["facts"] == facts_of(t["details"]["kind"])
    world = street_tasks.document["world"]
    renderer = sum(t["details"]["kind"] in ("colour", "floors") for t in street_tasks.document["tasks"])
    assert world["facts"] == {"map": len(street_tasks.document["tasks"]) - renderer, "renderer": renderer}


def test_keep_facts_map_drops_exactly_the_renderers_questions(world):
    episodes = world.episodes
    kept = keep_facts(episodes, "map")
    assert kept and len(kept) < len(episodes)
    assert {e.details["kind"] for e in kept} == set(KINDS) - {"colour", "floors"}
    assert keep_facts(episodes, "all") == list(episodes)
    assert all(sources(e.details) == {MAP} for e in kept)


def test_a_task_file_without_facts_falls_back_to_its_kinds_facts(world):
    colour = next(e for e in world.episodes if e.details["kind"] == "colour")
    name = next(e for e in world.episodes if e.details["kind"] == "name")
    bare = [dataclasses.replace(e, details={k: v for k, v in e.details.items() if k != "facts"})
            for e in (colour, name)]
    assert [e.details["kind"] for e in keep_facts(bare, "map")] == ["name"]
    # A recorded renderer fact wins over the kind's: a name question that says a fact is made is dropped.
    marked = dataclasses.replace(name, details={**name.details, "facts": [{"fact": "x", "source": RENDERER}]})
    assert keep_facts([marked], "map") == []


def test_keep_facts_reads_other_shapes_and_refuses_an_unknown_setting():
    rows = [{"kind": "name"}, {"kind": "floors"}]
    assert keep_facts(rows, "map", details_of=lambda r: r) == [{"kind": "name"}]
    assert FACT_SETTINGS == ("all", "map")
    with pytest.raises(ConfigError, match=r"^--facts 'maps': choose one of all, map"):
        keep_facts(rows, "maps", details_of=lambda r: r)

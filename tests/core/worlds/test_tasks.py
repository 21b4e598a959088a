"""WorldTask generation on the hand-made line world, where every valid start can be counted."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.worlds.needs import LATENT, NEEDS, Need, brand_needs, nearest
from cityseeker_ros.core.worlds.tasks import TaskSettings, generate_tasks, why_no_tasks

THIRSTY = next(n for n in NEEDS if n.request == "I am thirsty")
COFFEE = next(n for n in NEEDS if n.request == "coffee shop")


def test_tasks_follow_the_papers_construction(line_world):
    graph, scene = line_world
    tasks = generate_tasks("lineville", graph, scene.pois, TaskSettings(per_need=50)).tasks
    actions = ActionModel(graph)
    assert tasks
    by_id = {p.id: p for p in scene.pois}
    for t in tasks:
        need = next(n for n in NEEDS + tuple(brand_needs(scene.pois)) if n.request == t.request)
        assert 5 <= t.steps <= 25
        assert t.reference_path[0] == t.start and t.reference_path[-1] == t.target
        assert by_id[t.target_poi].visible_nodes[0] == t.target
        assert actions.route_executable(t.reference_path)
        others = [p for p in scene.pois if need.satisfied_by(p) and p.id != t.target_poi]
        assert not any(set(p.visible_nodes) & set(t.reference_path) for p in others)
        # the target is strictly the nearest satisfying place from the start
        hops = actions.hops_from(t.start)
        assert all(hops[p.visible_nodes[0]] > t.steps for p in others)


def test_thirsty_starts_are_exactly_the_nodes_nearer_the_cafe_or_the_shop(line_world):
    graph, scene = line_world
    tasks = generate_tasks("lineville", graph, scene.pois, TaskSettings(per_need=100), needs=[THIRSTY]).tasks
    starts = {target: sorted(int(t.start[1:]) for t in tasks if t.target == target) for target in ("n05", "n30")}
    # cafe at n30 is nearer for s >= 18; 5..25 hops: 18..25 and 35..39.
    assert starts["n30"] == list(range(18, 26)) + list(range(35, 40))
    # shop at n05 is nearer for s <= 17: 10..17 (s = 0 is 5 hops away too).
    assert starts["n05"] == [0] + list(range(10, 18))


def test_no_task_when_the_world_lacks_the_place(line_world):
    graph, scene = line_world
    need = nearest("cinema", LATENT, ("amenity=cinema",))
    result = generate_tasks("lineville", graph, scene.pois, needs=[need])
    assert result.tasks == [] and result.satisfying_pois == {"cinema": 0} and result.category_targets == {}


def test_generation_is_seeded_and_the_split_has_its_stated_size(line_world):
    graph, scene = line_world
    settings = TaskSettings(seed=3, per_need=4, test_per_category=2)
    a = generate_tasks("lineville", graph, scene.pois, settings)
    b = generate_tasks("lineville", graph, scene.pois, settings)
    assert a.to_json() == b.to_json()
    for counts in a.counts("test").values():
        assert counts <= 2
    assert sum(a.counts("test").values()) + sum(a.counts("dev").values()) == len(a.tasks)
    assert len({t.id for t in a.tasks}) == len(a.tasks)
    other = generate_tasks("lineville", graph, scene.pois, TaskSettings(seed=4, per_need=4, test_per_category=2))
    assert [t.start for t in other.tasks] != [t.start for t in a.tasks]


def test_category_targets_hold_every_satisfying_place(line_world):
    graph, scene = line_world
    result = generate_tasks("lineville", graph, scene.pois, TaskSettings(per_need=3))
    assert result.category_targets["I am thirsty"] == ["n05", "n30"]
    assert result.category_targets["restroom"] == ["n38"]


def test_needs_match_classes_brands_and_attributes(line_world):
    _, scene = line_world
    cafe, shop, toilets = scene.pois
    assert COFFEE.satisfied_by(cafe) and not COFFEE.satisfied_by(shop)
    brand = brand_needs(scene.pois)
    assert [n.request for n in brand] == ["7-Eleven"] and brand[0].satisfied_by(shop)
    accessible = next(n for n in NEEDS if n.request == "wheelchair-accessible restroom")
    assert accessible.satisfied_by(toilets)
    outdoor = next(n for n in NEEDS if n.request == "café with outdoor seating")
    assert outdoor.satisfied_by(cafe) and not outdoor.satisfied_by(shop)
    assert not Need("x", LATENT, "x", names=r"mcdonald").satisfied_by(cafe)


@pytest.mark.parametrize("settings", [TaskSettings(min_steps=0), TaskSettings(min_steps=9, max_steps=8),
                                      TaskSettings(per_need=0), TaskSettings(test_per_category=0)])
def test_bad_settings_name_the_field(line_world, settings):
    graph, scene = line_world
    with pytest.raises(ConfigError, match="tasks:"):
        generate_tasks("lineville", graph, scene.pois, settings)


def test_why_no_tasks_names_the_cause(line_world):
    from cityseeker_ros.core.streets.graph import StreetGraph
    from tests.core.worlds.conftest import line_graph, poi

    graph, scene = line_world
    islands = StreetGraph(graph.nodes.values(), [], name="islands")
    assert why_no_tasks(islands, scene.pois).startswith("no streets: 40 street nodes and no walkable edge")
    assert why_no_tasks(graph, []).startswith("no satisfying places: none of the 0 places")
    short = line_graph(4)
    cafe = [poi("node/1", "amenity=cafe", [0])]
    assert generate_tasks("short", short, cafe).tasks == []
    assert why_no_tasks(short, cafe) == ("routes too short: each of the 4 nodes is at most 3 step(s) from a "
                                         "satisfying place, and a task needs 5..25 steps")
    assert why_no_tasks(short, cafe, TaskSettings(min_steps=2, max_steps=2), needs=[THIRSTY]).startswith(
        "no usable routes")

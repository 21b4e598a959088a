"""The synthetic world must be indistinguishable in format from a CitySeeker release city.

The files are parsed here directly (not through the dataset loader), so these tests pin the
format itself: anything the loader relies on is checked against the raw JSON.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from cityseeker_ros.core.datasets import synthetic
from cityseeker_ros.core.datasets.synthetic import WORLD_FILES, synthesize_world
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import circular_difference, geodesic_m
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES


def read(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def file_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def stage_routes(ep: dict) -> list[list[dict]]:
    return [ep[k]["route"] for k in ("stage1_route", "stage2_route") if k in ep]


def street_graph(folder: Path) -> StreetGraph:
    """A StreetGraph from the raw files. Coordinates exist only on route nodes (as in the
    release); other nodes get the origin, which the action model never looks at."""
    coords = {p["filename"]: (p["latitude"], p["longitude"])
              for ep in read(folder, "question.json") for p in ep["complete_route"]}
    origin = tuple(read(folder, "world.json")["params"]["origin"])
    nodes: dict[str, Node] = {}
    edges = []
    for rec in read(folder, "connections.json"):
        for side in ("start", "end"):
            name = rec[f"{side}_filename"]
            nodes.setdefault(name, Node(name, *coords.get(name, origin), rec[f"{side}_heading"],
                                        tuple(rec[f"{side}_walkable_headings"])))
        edges.append(Edge(rec["start_filename"], rec["end_filename"], rec["edge_azimuth"],
                          rec["edge_distance"]))
    return StreetGraph(nodes.values(), edges)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return synthesize_world(tmp_path_factory.mktemp("synthetic") / "gridtown")


@pytest.fixture(scope="module")
def questions(world) -> list[dict]:
    return read(world, "question.json")


@pytest.fixture(scope="module")
def connections(world) -> list[dict]:
    return read(world, "connections.json")


def test_same_arguments_give_identical_bytes(tmp_path):
    a = synthesize_world(tmp_path / "a", seed=7)
    b = synthesize_world(tmp_path / "b", seed=7)
    assert file_bytes(a) == file_bytes(b)
    assert sorted(file_bytes(a)) == sorted(WORLD_FILES)


def test_bytes_do_not_depend_on_the_process_hash_seed(tmp_path):
    """Python randomises str hashes per process; set order must never reach the output."""
    code = ("import sys; from pathlib import Path; "
            "from cityseeker_ros.core.datasets.synthetic import synthesize_world; "
            "synthesize_world(Path(sys.argv[1]), seed=3)")
    root = Path(__file__).resolve().parents[3]
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "-c", code, str(tmp_path / hash_seed)], check=True,
                       cwd=root, env=env)
    assert file_bytes(tmp_path / "1") == file_bytes(tmp_path / "2")
    assert file_bytes(tmp_path / "1") == file_bytes(synthesize_world(tmp_path / "here", seed=3))


def test_different_seed_gives_different_world(tmp_path):
    a = file_bytes(synthesize_world(tmp_path / "a", seed=1))
    b = file_bytes(synthesize_world(tmp_path / "b", seed=2))
    assert a["connections.json"] != b["connections.json"]
    assert a["question.json"] != b["question.json"]


def test_default_size_and_speed(tmp_path, world, questions, connections):
    nodes = {r["start_filename"] for r in connections}
    assert 200 <= len(nodes) <= 600
    assert 30 <= len(questions) <= 40
    t0 = time.perf_counter()
    synthesize_world(tmp_path / "timed")
    assert time.perf_counter() - t0 < 2.0


def test_world_metadata(world):
    meta = read(world, "world.json")
    assert meta["format"] == "cityseeker-release"
    assert meta["synthetic"] is True
    assert meta["generator"] == "cityseeker_ros.core.datasets.synthetic"
    assert meta["generator_version"] == 1
    assert meta["seed"] == 0
    assert meta["params"]["blocks"] == 6 and meta["params"]["origin"] == [43.7384, 7.4246]
    shops = meta["shops"]
    assert all(kind in shops for stages in meta["requests"].values() for kinds in stages
               for kind in kinds)
    owners = [n for nodes in shops.values() for n in nodes]
    assert len(owners) == len(set(owners))  # one shop per node


def test_records_have_release_fields_in_release_order(questions, connections):
    assert list(connections[0]) == ["start_filename", "start_walkable_headings", "start_heading",
                                    "end_filename", "end_walkable_headings", "end_heading",
                                    "edge_azimuth", "edge_distance"]
    single = ["folder", "question_idx", "question", "idx", "from", "to", "total_weight",
              "total_steps", "complete_route", "difficulty", "category", "city"]
    for ep in questions:
        if ep["category"] == "question2":
            assert list(ep) == single[:8] + ["stage1_route", "stage2_route"] + single[8:]
            for key in ("stage1_route", "stage2_route"):
                assert list(ep[key]) == ["from", "to", "service", "weight", "steps", "route"]
        else:
            assert list(ep) == single
        assert ep["city"] == "gridtown"
        assert all(list(p) == ["filename", "latitude", "longitude"] for p in ep["complete_route"])
    assert len({ep["question_idx"] for ep in questions}) == len(questions)
    names = {r["start_filename"] for r in connections}
    assert all(len(n) == 12 and n.endswith(".jpg") and n[:8].isdigit() for n in names)


def test_one_strongly_connected_component_and_not_a_full_lattice(world, connections):
    g = nx.DiGraph((r["start_filename"], r["end_filename"]) for r in connections)
    assert nx.number_strongly_connected_components(g) == 1
    # A full 6x6-block lattice with 5 hops per side has 7*7 + 2*7*6*4 = 385 nodes.
    assert g.number_of_nodes() < 385


def test_removing_streets_never_disconnects_the_city(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "REMOVED_STREET_FRACTION", 0.45)
    for seed in range(3):
        folder = synthesize_world(tmp_path / f"w{seed}", seed=seed, episodes_per_category=1)
        g = nx.DiGraph((r["start_filename"], r["end_filename"])
                       for r in read(folder, "connections.json"))
        assert nx.number_strongly_connected_components(g) == 1


def test_every_edge_has_its_reverse(connections):
    edges = {(r["start_filename"], r["end_filename"]): r for r in connections}
    assert len(edges) == len(connections)  # no duplicate records
    for (a, b), rec in edges.items():
        back = edges.get((b, a))
        assert back is not None, f"{a}->{b} has no reverse"
        assert abs(abs(circular_difference(back["edge_azimuth"], rec["edge_azimuth"])) - 180) < 0.01


def test_bearings_are_not_axis_aligned(connections):
    axes = (0, 90, 180, 270)
    assert all(min(abs(circular_difference(r["edge_azimuth"], a)) for a in axes) > 2
               for r in connections)


def test_walkable_headings_look_like_the_providers(connections):
    """Jittered off the street azimuths, unsorted, sometimes negative; one per out-edge."""
    out: dict[str, list[float]] = {}
    node: dict[str, tuple[float, list[float]]] = {}
    for r in connections:
        out.setdefault(r["start_filename"], []).append(r["edge_azimuth"])
        for side in ("start", "end"):
            attrs = (r[f"{side}_heading"], r[f"{side}_walkable_headings"])
            assert node.setdefault(r[f"{side}_filename"], attrs) == attrs  # consistent per node
    jitters = []
    for name, (heading, walkable) in node.items():
        assert len(walkable) == len(out[name])
        assert min(abs(circular_difference(heading, az)) for az in out[name]) < 1e-9
        for az in out[name]:
            jitters.append(min(abs(circular_difference(h, az)) for h in walkable))
    assert max(jitters) <= 3.0 and sum(j > 0.01 for j in jitters) > len(jitters) / 2
    assert any(h < 0 for _, w in node.values() for h in w)
    assert any([h % 360 for h in w] != sorted(h % 360 for h in w) for _, w in node.values())
    assert all(-20 < h < 360 for _, w in node.values() for h in w)


def test_every_category_present(questions):
    assert {ep["category"] for ep in questions} == set(CATEGORY_NAMES)
    for code in CATEGORY_NAMES:
        assert sum(ep["category"] == code for ep in questions) == 4


def test_every_route_is_executable_under_the_action_model(world, questions):
    actions = ActionModel(street_graph(world))
    for ep in questions:
        route = [p["filename"] for p in ep["complete_route"]]
        assert actions.route_executable(route), ep["question_idx"]
        for stage in stage_routes(ep):
            assert actions.route_executable([p["filename"] for p in stage])


def test_every_stage_is_a_shortest_path_to_the_nearest_satisfying_node(world, questions):
    meta = read(world, "world.json")
    g = street_graph(world).to_networkx()
    for ep in questions:
        legs = stage_routes(ep) or [ep["complete_route"]]
        wanted = meta["requests"][ep["folder"]]
        assert len(legs) == len(wanted)
        for leg, kinds in zip(legs, wanted):
            names = [p["filename"] for p in leg]
            satisfying = set().union(*(meta["shops"][k] for k in kinds))
            assert names[-1] in satisfying and not satisfying & set(names[:-1])
            dist = nx.single_source_dijkstra_path_length(g, names[0], weight="length")
            length = sum(g.edges[a, b]["length"] for a, b in zip(names, names[1:]))
            # Lengths here are Web-Mercator units, which rank equal-metre grid paths a few
            # millimetres apart; a real detour is at least two hops (tens of metres) longer.
            assert length == pytest.approx(dist[names[-1]], abs=0.1)
            assert length <= min(dist[t] for t in satisfying) + 0.1


def test_steps_and_difficulty_follow_the_release_convention(questions):
    """Release quirk: single-stage total_steps counts route nodes, two-stage counts hops."""
    labels = {"easy": range(3, 11), "medium": range(11, 19), "hard": range(19, 25)}
    for ep in questions:
        route = [p["filename"] for p in ep["complete_route"]]
        assert route[0] == ep["from"] and route[-1] == ep["to"]
        assert 5 <= ep["total_steps"] <= 24
        assert ep["total_steps"] in labels[ep["difficulty"]]
        if ep["category"] == "question2":
            s1, s2 = ep["stage1_route"], ep["stage2_route"]
            n1 = [p["filename"] for p in s1["route"]]
            n2 = [p["filename"] for p in s2["route"]]
            assert route == n1 + n2[1:]
            assert s1["from"] == ep["from"] and s1["to"] == n1[-1] == s2["from"] == n2[0]
            assert s2["to"] == ep["to"] and s1["to"] != s2["to"]
            assert (s1["steps"], s2["steps"]) == (len(n1) - 1, len(n2) - 1)
            assert ep["total_steps"] == s1["steps"] + s2["steps"] == len(route) - 1
            assert ep["total_weight"] == s1["weight"] + s2["weight"]
        else:
            assert ep["total_steps"] == len(route)
    assert {ep["difficulty"] for ep in questions} == set(labels)


def test_distances_round_trip_to_geodesic_metres(questions, connections):
    units = {(r["start_filename"], r["end_filename"]): r["edge_distance"] for r in connections}
    hops = 0
    for ep in questions:
        route = ep["complete_route"]
        for a, b in zip(route, route[1:]):
            metres = geodesic_m(a["latitude"], a["longitude"], b["latitude"], b["longitude"])
            stored = units[a["filename"], b["filename"]]
            assert abs(stored * math.cos(math.radians(a["latitude"])) - metres) < 0.01
            assert stored > metres  # Web-Mercator units overstate metres away from the equator
            hops += 1
        names = [p["filename"] for p in route]
        assert ep["total_weight"] == pytest.approx(sum(units[h] for h in zip(names, names[1:])))
    assert hops > 100


def test_refuses_to_overwrite_a_folder_it_did_not_write(tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match=re.escape(str(target))):
        synthesize_world(target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]

    world = synthesize_world(tmp_path / "world")
    (world / "extra.json").write_text("{}")  # no longer only what the generator writes
    with pytest.raises(ConfigError, match="refusing"):
        synthesize_world(world)
    assert (world / "extra.json").exists()


def test_replaces_a_previous_synthetic_world_and_fills_an_empty_folder(tmp_path):
    world = synthesize_world(tmp_path / "world", seed=1)
    synthesize_world(world, seed=2)
    assert read(world, "world.json")["seed"] == 2
    assert file_bytes(world) == file_bytes(synthesize_world(tmp_path / "fresh", seed=2))
    (tmp_path / "empty").mkdir()
    assert sorted(file_bytes(synthesize_world(tmp_path / "empty"))) == sorted(WORLD_FILES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "fresh", "world"]  # no temp left


def test_a_crash_while_writing_leaves_the_old_world_or_none(tmp_path, monkeypatch):
    world = synthesize_world(tmp_path / "world", seed=1)
    before = file_bytes(world)
    calls = []
    real_dumps = json.dumps

    def failing_dumps(obj, **kwargs):  # the second file of the folder fails to serialise and write
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_dumps(obj, **kwargs)

    monkeypatch.setattr(synthetic.json, "dumps", failing_dumps)
    with pytest.raises(OSError):
        synthesize_world(world, seed=2)
    calls.clear()
    with pytest.raises(OSError):
        synthesize_world(tmp_path / "new", seed=2)
    monkeypatch.undo()
    assert file_bytes(world) == before
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["world"]


@pytest.mark.parametrize("kwargs", [dict(blocks=1), dict(block_nodes=0), dict(spacing_m=0.0),
                                    dict(origin=(89.0, 0.0)), dict(episodes_per_category=0),
                                    dict(city=" ")])
def test_bad_parameters_are_config_errors(tmp_path, kwargs):
    with pytest.raises(ConfigError):
        synthesize_world(tmp_path / "w", **kwargs)
    assert not (tmp_path / "w").exists()

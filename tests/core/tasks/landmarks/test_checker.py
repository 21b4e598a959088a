"""The independent checker (checker.py: its own code, the raw OSM extract and the world's files,
never the generator) finds no false fact and no goal its words leave vague on every packaged
world and on the synthetic extract; and each wrong goal the extract provokes, it catches."""
from __future__ import annotations

import copy
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from cityseeker_ros.core.worlds.osm_sources import PACKAGED_SOURCES, default_cache_dir, fetch_source
from tests.core.tasks.landmarks.checker import PIN_RADIUS_M, WORDS, check_world, fact_problems, step_for
from tests.core.tasks.landmarks.gridtown import write_osm


def _build(source: str, out: Path, families: list[str]) -> None:
    from cityseeker_ros.core.worlds.build import build_world

    build_world(source, out, name=out.name, families=families, stream=io.StringIO())


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> tuple[Path, Path]:
    """The synthetic extract (gridtown.write_osm) built by the project's builder."""
    root = tmp_path_factory.mktemp("synth")
    osm = write_osm(root / "gridtown.osm")
    _build(str(osm), root / "gridtown", ["landmarks"])
    return root / "gridtown", osm


def test_the_synthetic_extract_has_no_false_fact_and_every_goal_pinned(synth):
    folder, osm = synth
    report = check_world(folder, osm)
    assert report.problems == []
    assert report.tasks == 120 and report.facts > 1000
    assert max(report.radius_m) <= PIN_RADIUS_M and min(report.consistent) >= 1
    world = json.loads((folder / "tasks.landmarks.json").read_text())["world"]
    # What the extract provokes happened: goals seen by one landmark only, mostly too vague to keep
    # (the east district sees only the Radio Mast), and a name two water towers share is no landmark.
    ambiguity = world["goal_ambiguity"]
    assert ambiguity["described_by_landmarks"]["1"] > 3 * ambiguity["pinned_by_landmarks"]["1"] > 0
    assert ambiguity["described"]["radius_m"]["max"] > 200 >= PIN_RADIUS_M >= ambiguity["pinned"]["radius_m"]["max"]
    assert "Water Tower" not in world["landmark_names"] and len(world["landmark_names"]) == 5
    assert ambiguity["limits"].startswith("5 landmarks; ")


def _mutated(synth, tmp_path, change) -> list[str]:
    """The checker's problems with the synthetic world after `change(folder)` edits a copy."""
    folder, osm = synth
    copy_ = tmp_path / folder.name
    shutil.copytree(folder, copy_)
    change(copy_)
    return check_world(copy_, osm).problems


def _edit(folder: Path, name: str, fn) -> None:
    path = folder / name
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _regenerate(folder: Path, **settings) -> None:
    """What a wrong generator would write: the project's generator on the (edited) scene.json."""
    from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks
    from cityseeker_ros.core.worlds.folder import load_graph
    from cityseeker_ros.core.worlds.scene import Scene

    scene = Scene.from_json(json.loads((folder / "scene.json").read_text()))
    doc = generate_landmark_tasks("gridtown", load_graph(folder), scene, LandmarkTaskSettings(**settings)).document
    (folder / "tasks.landmarks.json").write_text(json.dumps(doc))


def test_a_wrong_direction_word_is_caught(synth, tmp_path):
    def flip(doc):
        task = doc["tasks"][0]
        rel = task["details"]["goal_relations"][0]
        opposite = WORDS[(WORDS.index(rel["direction"]) + 4) % 8]
        task["instruction"] = task["instruction"].replace(f"m {rel['direction']} of {rel['landmark_name']}",
                                                          f"m {opposite} of {rel['landmark_name']}", 1)
        rel["direction"] = opposite

    problems = _mutated(synth, tmp_path, lambda f: _edit(f, "tasks.landmarks.json", flip))
    assert any(re.search(r"goal vs .*: \S+: the map's bearing", p) for p in problems)


def test_relations_computed_from_a_moved_landmark_are_caught(synth, tmp_path):
    """The builder moved no landmark; one that did (as the question builder moved a sign onto a
    wall) states relations true of the moved point and false by the map."""
    def move(folder):
        def shift(scene):
            mast = next(m for m in scene["landmarks"] if m["name"] == "Radio Mast")
            mast["lon"] += 60.0 / 74_500.0  # ~60 m east
        _edit(folder, "scene.json", shift)
        _regenerate(folder)

    problems = _mutated(synth, tmp_path, move)
    assert any("Radio Mast: 6" in p and "from where the map puts it" in p for p in problems)
    assert any("vs Radio Mast" in p and "the map's" in p for p in problems)


def test_a_landmark_whose_name_another_feature_carries_is_caught(synth, tmp_path):
    """A builder that kept one of the two water towers (as it once did) names no one place."""
    def keep_one(folder):
        def add(scene):
            graph = json.loads((folder / "graph.json").read_text())
            from tests.core.tasks.landmarks.gridtown import point
            lat, lon = point(-250.0, -250.0)
            seen = [n["id"] for n in graph["nodes"] if abs(n["lat"] - lat) < 0.004 and abs(n["lon"] - lon) < 0.006]
            scene["landmarks"].append({**scene["landmarks"][0], "id": "node/106", "name": "Water Tower",
                                       "lat": lat, "lon": lon, "visible_nodes": seen})
        _edit(folder, "scene.json", add)
        _regenerate(folder)

    problems = _mutated(synth, tmp_path, keep_one)
    assert any(p.startswith("landmark Water Tower: the name is also carried by 1 other") for p in problems)


def test_a_goal_whose_words_fit_far_away_nodes_is_caught(synth, tmp_path):
    def vague(folder):
        _regenerate(folder, pin_radius_m=1000.0)  # the rule off ...
        _edit(folder, "tasks.landmarks.json",  # ... and the file claiming it on
              lambda d: d["world"]["goal_ambiguity"].update(pin_radius_m=PIN_RADIUS_M))

    problems = _mutated(synth, tmp_path, vague)
    assert any(re.search(r"the words fit \d+ street nodes up to \d+ m from the goal", p) for p in problems)
    assert not any("the map's" in p for p in problems)  # every fact still true: vague, not false


def test_a_seen_landmark_left_out_or_an_unseen_one_named_is_caught(synth, tmp_path):
    def drop(doc):
        task = next(t for t in doc["tasks"] if len(t["details"]["goal_relations"]) >= 3)
        rels = task["details"]["goal_relations"]
        goal_text, sep, rest = task["instruction"].partition(" Landmarks: ")
        last = f"about {rels[-1]['distance_m']} m {rels[-1]['direction']} of {rels[-1]['landmark_name']}"
        task["instruction"] = goal_text.replace(f" and {last}", "").replace(", about", " and about", 1) \
            if len(rels) == 3 else goal_text.replace(f", {last}", "")
        task["instruction"] += sep + rest
        rels.pop()

    problems = _mutated(synth, tmp_path, lambda f: _edit(f, "tasks.landmarks.json", drop))
    assert any("leaves out" in p for p in problems)

    def add(doc):
        scene = json.loads((synth[0] / "scene.json").read_text())
        for task in doc["tasks"]:
            unseen = [m for m in scene["landmarks"] if task["target"] not in m["visible_nodes"]]
            if unseen:
                m = unseen[0]
                goal = next(n for n in json.loads((synth[0] / "graph.json").read_text())["nodes"]
                            if n["id"] == task["target"])
                from tests.core.tasks.landmarks.checker import truth
                bearing, dist = truth((m["lat"], m["lon"]), (goal["lat"], goal["lon"]))
                word, metres = WORDS[int(bearing / 45.0 + 0.5) % 8], int(round(dist / step_for(dist)) * step_for(dist))
                goal_text, sep, rest = task["instruction"].partition(" Landmarks: ")
                task["instruction"] = goal_text[:-1] + f" and about {metres} m {word} of {m['name']}." + sep + rest
                task["details"]["goal_relations"].append(
                    {**task["details"]["goal_relations"][0], "landmark": m["id"], "landmark_name": m["name"],
                     "direction": word, "distance_m": metres})
                return

    problems = _mutated(synth, tmp_path / "b", lambda f: _edit(f, "tasks.landmarks.json", add))
    assert any("not seen from the goal" in p for p in problems)
    assert not any("the map's" in p for p in problems)  # the added words are true, only not PReP's R1


def test_a_missing_landmark_pair_is_caught(synth, tmp_path):
    def drop(doc):
        task = doc["tasks"][0]
        goal_text, sep, rest = task["instruction"].partition(" Landmarks: ")
        task["instruction"] = goal_text + sep + "; ".join(rest.rstrip(".").split("; ")[1:]) + "."

    problems = _mutated(synth, tmp_path, lambda f: _edit(f, "tasks.landmarks.json", drop))
    assert any("landmark pairs not related once each" in p for p in problems)


def test_a_wrong_record_of_the_fitting_nodes_is_caught(synth, tmp_path):
    def lie(doc):
        doc["tasks"][0]["details"]["consistent_nodes"] = doc["tasks"][0]["details"]["consistent_nodes"][:1] + ["n00000"]

    problems = _mutated(synth, tmp_path, lambda f: _edit(f, "tasks.landmarks.json", lie))
    assert any(re.search(r"records \d+ nodes fitting its words, the map gives \d+", p) for p in problems)


def test_the_checker_refuses_a_wrong_word_by_its_own_geometry():
    """fact_problems itself: the opposite word, or a distance 200 m off, is false."""
    landmark, goal = (48.0, 2.0), (48.0027, 2.0)  # ~300 m north
    assert fact_problems(landmark, goal, 300, "north") == []
    assert fact_problems(landmark, goal, 300, "south") and fact_problems(landmark, goal, 500, "north")
    assert fact_problems(landmark, goal, 300, "north-east")  # 0 degrees against 45: out of the sector
    assert fact_problems(landmark, goal, 280, "north") == [] and fact_problems(landmark, goal, 250, "north")


@pytest.fixture(scope="module", params=sorted(PACKAGED_SOURCES))
def packaged(request, packaged_world) -> tuple[str, Path, Path]:
    """Each packaged extract built by the project's builder with every family (the session's)."""
    name = request.param
    return name, packaged_world(name), fetch_source(name, default_cache_dir())


def test_every_packaged_world_has_no_false_fact_and_every_goal_pinned(packaged):
    name, folder, pbf = packaged
    meta = json.loads((folder / "world.json").read_text())
    report = check_world(folder, pbf)  # the landmarks of every world, its goals where it has them
    assert report.problems == [], f"{name}: {report.problems[:5]}"
    if not (folder / "tasks.landmarks.json").is_file():
        # Too few landmarks: the world says so, with how many it has.
        assert re.search(r"no landmark goals: (no landmarks|\d landmarks?) \(.*\); landmark goals need at least 3",
                         json.dumps(meta)), f"{name}: no landmark goals and no reason in world.json"
        assert report.tasks == 0
        return
    assert report.tasks == 120 and report.facts > 1000
    assert max(report.radius_m) <= PIN_RADIUS_M


def test_the_gridtown_scene_words_are_true_in_memory(grid_world, generated):
    """The hand-made scene (no extract): every stated relation true by the scene's own points."""
    graph, scene = grid_world
    by_name = {m.name: m for m in scene.landmarks}
    problems = []
    for task in copy.deepcopy(generated.document["tasks"]):
        goal = graph.nodes[task["target"]]
        for r in task["details"]["goal_relations"]:
            m = by_name[r["landmark_name"]]
            problems += fact_problems((m.lat, m.lon), (goal.lat, goal.lon), r["distance_m"], r["direction"])
            assert r["distance_tolerance_m"] == step_for(r["distance_m"]) / 2.0
    assert problems == []


def test_the_build_says_how_the_landmarks_limit_the_goals(synth):
    """The build's summary and world.json carry the task file's `goal_ambiguity.limits` sentence."""
    folder, _ = synth
    limits = json.loads((folder / "tasks.landmarks.json").read_text())["world"]["goal_ambiguity"]["limits"]
    meta = json.loads((folder / "world.json").read_text())
    assert limits and meta["families"]["landmarks"]["goal_limits"] == limits

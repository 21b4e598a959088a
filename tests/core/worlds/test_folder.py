"""World folders: written atomically, loaded by the benchmark's --data, bad files named."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.datasets import city_folders, load_dataset
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.worlds.folder import OSM_CREDIT, load_graph, load_scene, read_metadata, write_world
from cityseeker_ros.core.worlds.tasks import TaskSettings, generate_tasks


@pytest.fixture
def world_dir(tmp_path, line_world):
    graph, scene = line_world
    tasks = generate_tasks("lineville", graph, scene.pois, TaskSettings(per_need=3, test_per_category=2))
    return write_world(tmp_path / "lineville", name="lineville", graph=graph, scene=scene, tasks=tasks,
                       metadata={"credit": OSM_CREDIT, "builder": {"name": "test", "version": "0"}})


def test_round_trip(world_dir, line_world):
    graph, scene = line_world
    assert city_folders(world_dir) == [("world", world_dir)]
    world = load_dataset(world_dir)[0]
    assert world.city == "lineville" and world.synthetic and world.root == world_dir
    loaded = load_graph(world_dir)
    assert loaded.nodes == graph.nodes and loaded.edges == graph.edges
    assert load_scene(world_dir) == scene
    tasks = json.loads((world_dir / "tasks.json").read_text())["tasks"]
    assert len(world.episodes) == sum(t["split"] == "test" for t in tasks) > 0
    assert world.category_targets["I am thirsty"] == frozenset({"n05", "n30"})
    meta = read_metadata(world_dir)
    assert meta["credit"] == OSM_CREDIT and meta["imagery"].startswith("synthetic")
    assert meta["counts"]["nodes"] == 40


def test_oracle_solves_every_generated_task(world_dir, tmp_path):
    summary = Benchmark(BenchmarkConfig(data=str(world_dir), policy="oracle")).run(tmp_path / "run", progress=False)
    assert summary["overall"]["tce"] == 100.0


def test_refuses_to_overwrite_a_folder_that_is_not_a_world(tmp_path, line_world):
    graph, scene = line_world
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not lose me")
    tasks = generate_tasks("x", graph, scene.pois)
    with pytest.raises(ConfigError, match="not a cityseeker world"):
        write_world(precious, name="x", graph=graph, scene=scene, tasks=tasks, metadata={})
    assert (precious / "thesis.tex").read_text() == "do not lose me"


@pytest.mark.parametrize("file, edit, message", [
    ("tasks.json", None, "tasks.json: missing"),
    ("graph.json", "{", "graph.json: invalid JSON at line 1"),
    ("graph.json", "[" * 100_000, "graph.json: JSON nested too deeply"),
    ("tasks.json", '{"tasks": ' * 50_000, "tasks.json: JSON nested too deeply"),
    ("world.json", {"format": "cityseeker-world", "format_version": 99, "name": "x"}, "format_version 99"),
    ("graph.json", {"nodes": [{"id": "a", "lat": "north", "lon": 0, "heading": 0, "walkable_headings": []}],
                    "edges": []}, "nodes\\[0\\].*lat"),
    ("graph.json", {"nodes": [], "edges": [{"source": "a", "target": "b", "azimuth": 0, "length_m": 1}]},
     "edges\\[0\\].*source"),
])
def test_bad_files_are_named(world_dir, file, edit, message):
    path = world_dir / file
    if edit is None:
        path.unlink()
    else:
        path.write_text(edit if isinstance(edit, str) else json.dumps(edit))
    with pytest.raises(DataError, match=message):
        load_dataset(world_dir)


def test_a_task_on_an_unknown_node_is_named(world_dir):
    path = world_dir / "tasks.json"
    doc = json.loads(path.read_text())
    first = next(i for i, t in enumerate(doc["tasks"]) if t["split"] == "test")
    doc["tasks"][first]["reference_path"][2] = "nowhere"
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=rf"tasks\[{first}\].*reference_path\[2\].*'nowhere'"):
        load_dataset(world_dir)


def _edit(world_dir, name, change):
    path = world_dir / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("name, change, message", [
    ("graph.json", lambda d: d["edges"].append(dict(d["edges"][3], azimuth=d["edges"][3]["azimuth"] + 10)),
     r"record edges\[78\]: field 'azimuth': edge n02 -> n01 contradicts edges\[3\] \(azimuth 270.0, length_m 20.0\)"),
    ("graph.json", lambda d: d["edges"].append(dict(d["edges"][3], length_m=25.0)),
     r"edges\[78\]: field 'length_m': edge n02 -> n01 contradicts edges\[3\]"),
    ("graph.json", lambda d: d["edges"].append(dict(d["edges"][3])), r"edges\[78\]: .*repeats edges\[3\]"),
    ("graph.json", lambda d: d["nodes"].append(dict(d["nodes"][7], lat=1.0)),
     r"nodes\[40\]: field 'id': node 'n07' again \(also nodes\[7\]\)"),
    ("tasks.json", lambda d: d["tasks"].append(dict(d["tasks"][0], split="dev")),
     r"tasks\[\d+\]: field 'id': task id 'lineville-0000' again \(also tasks\[0\]\)"),
    ("tasks.json", lambda d: [t.__setitem__("split", "dev") for t in d["tasks"]],
     r"tasks.json: field 'tasks': no tasks in the 'test' split"),
    ("tasks.json", lambda d: d.__setitem__("tasks", []), r"no tasks in the 'test' split \(of 0 tasks\)"),
])
def test_records_that_would_be_lost_are_named(world_dir, name, change, message, capsys):
    _edit(world_dir, name, change)
    with pytest.raises(DataError, match=message) as info:
        load_dataset(world_dir)
    assert main(["validate", str(world_dir)]) == 1  # validate lists it instead of stopping
    assert f"error: {info.value}" in capsys.readouterr().out

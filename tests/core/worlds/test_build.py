"""Real OSM worlds end to end: the packaged Monaco and Helsinki extracts through the builder,
the task generator, the world folder, the benchmark, the renderer and the CLI."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from cityseeker_ros.cli import main
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.streets.geodesy import initial_bearing_deg
from cityseeker_ros.core.tasks.episode import PAPER_CATEGORIES
from cityseeker_ros.core.worlds.build import build_world
from cityseeker_ros.core.worlds.folder import FILES, OSM_CREDIT, load_scene, read_metadata


def test_monaco_has_tasks_in_all_seven_categories(monaco_dir):
    meta = read_metadata(monaco_dir)
    assert meta["credit"] == OSM_CREDIT and meta["source"]["sha256"].startswith("1fdee8b7")
    assert meta["builder"]["name"] == "osm" and meta["imagery"].startswith("synthetic")
    test = meta["counts"]["tasks"]["test"]
    assert set(test) == set(PAPER_CATEGORIES) and all(n > 0 for n in test.values())
    world = load_dataset(monaco_dir)[0]
    assert len(world.episodes) == sum(test.values())
    assert all(5 <= len(e.reference_path) - 1 <= 25 for e in world.episodes)


def test_rebuilding_writes_identical_files(monaco_dir, tmp_path):
    """monaco_dir is the session's build with every family; the rebuild makes the needs family
    only (the others take minutes), so world.json, which lists the families, is compared without them."""
    again = tmp_path / "monaco"
    build_world("monaco", again, name="monaco", families=["needs"], stream=io.StringIO())
    for name in FILES:
        if name == "world.json":
            continue
        assert (again / name).read_bytes() == (monaco_dir / name).read_bytes(), name
    rebuilt, shared = (json.loads((folder / "world.json").read_text()) for folder in (again, monaco_dir))
    assert rebuilt.pop("families") == {} and shared.pop("families")
    assert rebuilt == shared


def test_oracle_solves_every_task_and_baselines_run(monaco_dir, tmp_path):
    oracle = Benchmark(BenchmarkConfig(data=str(monaco_dir), policy="oracle")).run(tmp_path / "o", progress=False)
    assert oracle["overall"]["tce"] == 100.0 and oracle["overall"]["solvable"] == 100.0
    for policy in ("random", "forward"):
        summary = Benchmark(BenchmarkConfig(data=str(monaco_dir), policy=policy, seeds=[0, 1])).run(
            tmp_path / policy, progress=False)
        assert summary["overall"]["episodes"] == oracle["overall"]["episodes"]
        assert 0.0 <= summary["overall"]["tcp50"] < 100.0


def test_a_known_sign_is_read_at_its_node(monaco_dir):
    world = load_dataset(monaco_dir)[0]
    starbucks = next(p for p in load_scene(monaco_dir).pois if p.brand == "Starbucks")
    node = world.graph.nodes[starbucks.visible_nodes[0]]
    heading = initial_bearing_deg(node.lat, node.lon, starbucks.lat, starbucks.lon)
    view = make_view_source("rendered", world).render(node.id, heading)
    sign = next(s for s in view.signs if s.poi_id == starbucks.id)
    assert sign.text == "Starbucks" and sign.legible and sign.distance_m < 50
    x0, y0, x1, y1 = sign.bbox
    assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 480
    assert view.image.shape == (480, 640, 3)
    away = make_view_source("rendered", world).render(node.id, heading + 180.0)
    assert starbucks.id not in {s.poi_id for s in away.signs}


def test_cut_panoramas_match_rendered_views(monaco_dir, tmp_path):
    """A folder of rendered equirectangular panoramas, read back through the panorama-folder
    source, gives the same picture as rendering the perspective view directly."""
    world = load_dataset(monaco_dir)[0]
    episode = world.episodes[0]
    node = world.graph.nodes[episode.start]
    rendered = make_view_source("rendered", world, {"fov_deg": 120.0, "width": 512, "height": 256})
    Image.fromarray(rendered.renderer.panorama(node.id, width=4096, height=2048).image).save(
        tmp_path / f"{node.id}.png")
    folder = make_view_source("panorama-folder", world,
                              {"folder": str(tmp_path), "fov_deg": 120.0, "width": 512, "height": 256})
    headings = list(node.walkable_headings)
    for direct, cut in zip(rendered.images(node, headings), folder.images(node, headings)):
        diff = np.abs(direct.astype(int) - cut.astype(int)).mean()
        assert diff < 12.0, diff


def test_helsinki_builds_with_tasks(packaged_world):
    meta = read_metadata(packaged_world("helsinki"))
    test = meta["counts"]["tasks"]["test"]
    assert meta["osm"]["nodes"] > 1000 and meta["osm"]["pois"] > 500
    assert sum(test.values()) > 50 and len(test) >= 6


@pytest.mark.parametrize(("source", "brand"), [
    ("kotka", None),  # Finnish signs, no chains: a suburb
    ("manhattan", "Starbucks"),  # US chains on a small clip
])
def test_more_packaged_extracts_build_with_tasks(packaged_world, source, brand):
    folder = packaged_world(source)
    meta = read_metadata(folder)
    assert meta["source"]["package"] and sum(meta["counts"]["tasks"]["test"].values()) >= 30
    pois = json.loads((folder / "scene.json").read_text())["pois"]
    assert len(pois) >= 40 and (brand is None or any(p["brand"] == brand for p in pois))


def the_error(err: str) -> str:
    """The one error line of a failed build; the lines before it may only be the build's phases
    (progress on stderr), never a traceback or a second message."""
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("cityseeker: error:"), err
    assert all(line.startswith(("world build: ", "question tasks made: ")) for line in lines[:-1]), err
    return lines[-1]


@pytest.mark.parametrize("args, message", [
    (["world", "build", "{tmp}/missing.osm.pbf", "--out", "{tmp}/w"], "missing.osm.pbf: no such file"),
    (["world", "build", "{tmp}/corrupt.osm.pbf", "--out", "{tmp}/w"], "corrupt.osm.pbf: not a readable OSM file"),
    (["world", "build", "monaco", "--bbox", "7.46,43.70,7.47,43.71", "--out", "{tmp}/w"],
     "no walkable streets inside bbox"),
    (["world", "build", "atlantis", "--out", "{tmp}/w"],
     "neither a packaged extract \\(helsinki, kotka, manhattan, monaco\\)"),
])
def test_bad_sources_get_one_clear_line(tmp_path, capsys, args, message):
    (tmp_path / "corrupt.osm.pbf").write_bytes(b"\x00\x00\x00\x0dnot a pbf at all" * 10)
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = the_error(capsys.readouterr().err)
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "w").exists()


def test_a_panorama_folder_with_missing_or_broken_images_is_named(monaco_dir, tmp_path, capsys):
    world = load_dataset(monaco_dir)[0]
    start = world.episodes[0].start
    (tmp_path / f"{start}.jpg").write_bytes(b"this is not a jpeg")
    out = tmp_path / "run"
    base = ["benchmark", "--data", str(monaco_dir), "--policy", "random", "--views", "panorama-folder",
            "--view-param", f"folder={tmp_path}", "--out", str(out), "--no-progress"]
    assert main(base + ["--view-param", "check=all"]) == 2
    assert "graph nodes" in capsys.readouterr().err
    folder = make_view_source("panorama-folder", world, {"folder": str(tmp_path)})
    with pytest.raises(Exception, match=f"{start}.jpg: unreadable image"):
        folder.images(world.graph.nodes[start], [0.0])


def test_cli_builds_renders_and_reports(monaco_dir, tmp_path, capsys):
    node = load_dataset(monaco_dir)[0].episodes[0].start
    assert main(["world", "render", str(monaco_dir), "--node", node, "--out", str(tmp_path / "v.png")]) == 0
    assert Image.open(tmp_path / "v.png").size == (640, 480)
    assert main(["world", "render", str(monaco_dir), "--node", node, "--panorama", "--size", "1024x512",
                 "--out", str(tmp_path / "p.png")]) == 0
    assert Image.open(tmp_path / "p.png").size == (1024, 512)
    out = tmp_path / "run"
    assert main(["benchmark", "--data", str(monaco_dir), "--policy", "random", "--views", "rendered",
                 "--limit", "4", "--out", str(out), "--no-progress"]) == 0
    assert main(["report", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "What the agent saw" in html and html.count("data:image/jpeg;base64,") >= 4
    assert json.loads((out / "config.json").read_text())["views"] == "rendered"


def _town(tmp_path):
    from tests.core.worlds.test_osm import town_xml

    path = tmp_path / "town.osm"
    path.write_text(town_xml(), encoding="utf-8")
    return path


@pytest.mark.parametrize("source, bbox, reason", [
    ("monaco", "7.42435,43.73815,7.42485,43.73865", "routes too short: each of the 4 nodes is at most 2 step"),
    ("{town}", "-0.0003,-0.0003,0.0003,0.0003", "no satisfying places: none of the 0 places"),
])
def test_a_world_without_tasks_is_an_error_that_says_why_and_writes_nothing(tmp_path, capsys, monaco_pbf,
                                                                           source, bbox, reason):
    """Before, these wrote a world of 0 tasks and exited 0; a benchmark on it ran 0 episodes."""
    town = _town(tmp_path)
    out = tmp_path / "worlds" / "w"
    args = ["world", "build", source.format(town=town), f"--bbox={bbox}", "--out", str(out)]
    assert main(args) == 2
    err = the_error(capsys.readouterr().err)
    assert "no task of any family can be made inside bbox" in err and reason in err, err
    assert "landmarks: no landmarks" in err and "questions: " in err  # every family says why
    assert not (tmp_path / "worlds").exists()  # no folder, no temporary sibling
    assert main(["world", "build", str(town), "--out", str(out)]) == 0  # the whole town has tasks
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(args) == 2  # a failed rebuild leaves the earlier world as it was
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["w"]


def test_thin_data_is_printed_and_recorded_and_the_time_includes_the_tasks(tmp_path, capsys):
    """The hand-made town has two buildings and two POIs along ~0.07 km² of streets, all heights
    tagged: the build warns about buildings, POIs and tasks, not heights, in world.json and on
    the terminal."""
    out = tmp_path / "w"
    assert main(["world", "build", str(_town(tmp_path)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    meta = read_metadata(out)
    density = meta["density"]
    assert 0.06 <= density["area_km2"] <= 0.08  # 100 m squares on the two 220 m streets
    assert density["pois_per_km2"] == pytest.approx(2 / density["area_km2"], rel=0.01)
    assert density["heights_guessed_share"] == 0.0 and set(density["tasks_per_category"]) == set(PAPER_CATEGORIES)
    warnings = meta["warnings"]
    assert [w.split(":")[1].split()[1] for w in warnings] == ["buildings", "POIs", "than", "of", "landmarks",
                                                                 "places"]
    assert warnings[4].startswith("no landmark goals: no landmarks") and warnings[5].startswith("no questions: ")
    empty = density["empty_horizon"]  # two buildings: most start views show nothing above the horizon
    assert empty["views"] > 0 and empty["share"] > 0.1 and "above the horizon" in warnings[3]
    assert all(f"warning: {w}" in printed for w in warnings)
    total = float(printed.split(" in ")[1].split(" s;")[0])
    osm_s, tasks_s = (float(v) for v in printed.split("time: ")[1].split(" s tasks")[0].split(" s OSM + "))
    assert total >= osm_s + tasks_s - 0.1


def test_dense_monaco_has_no_density_warning(monaco_dir):
    meta = read_metadata(monaco_dir)
    assert meta["density"]["buildings_per_km2"] > 200 and meta["density"]["pois_per_km2"] > 50
    assert not [w for w in meta["warnings"] if "per km²" in w], meta["warnings"]

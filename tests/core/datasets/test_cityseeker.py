"""The CitySeeker release loader, on the real HongKong_6 sample and on broken copies of a tiny city."""
from __future__ import annotations

import json
import math
import random

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.datasets.cityseeker import load_city
from cityseeker_ros.core.datasets.problems import Problems
from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.streets.geodesy import geodesic_m
from tests.conftest import tiny_layout, write_city


def test_real_city_matches_measured_facts(hk6_world):
    w = hk6_world
    assert (len(w.graph), len(w.graph.edges), len(w.episodes)) == (3601, 7926, 177)
    assert w.city == "hongkong6" and not w.synthetic
    assert len({e.episode_id for e in w.episodes}) == 177
    assert {e.category for e in w.episodes} >= {"Basic POI", "Brand-Specific", "Transportation Hub",
                                                "Latent POI", "Abstract Demand", "Inclusive Infrastructure",
                                                "Semantic Preference", "Two-Stage"}
    executable = sum(w.actions.route_executable(e.reference_path) for e in w.episodes) / len(w.episodes)
    assert 0.50 < executable < 0.60  # DESIGN.md: about 55% of routes execute hop by hop
    assert all(0 <= h < 360 for n in w.graph.nodes.values() for h in n.walkable_headings)
    assert max(e.length_m for e in w.graph.edges) < 20.0  # 20 Web-Mercator units is < 20 m at 22 deg N


def test_two_stage_episodes_keep_their_stage_goal(hk6_world):
    ep = next(e for e in hk6_world.episodes if e.episode_id == "hongkong6-132")
    assert ep.category == "Two-Stage"
    assert ep.stage_goals == ("00002698",) and ep.target == "00002696"
    assert ep.waypoints == ("00002698", "00002696")


def test_recovered_coordinates_match_held_out_route_points(hk6, tmp_path):
    """Drop every third episode, so the nodes only they carry lose their coordinates, and
    check that propagation along edges puts them back within 2 m (DESIGN.md's figure)."""
    questions = json.loads((hk6 / "question.json").read_text())

    def points(q):
        return q["complete_route"] + q.get("stage1_route", {}).get("route", []) \
            + q.get("stage2_route", {}).get("route", [])

    truth = {p["filename"][:-4]: (p["latitude"], p["longitude"]) for q in questions for p in points(q)}
    kept = [q for i, q in enumerate(questions) if i % 3]
    held_out = set(truth) - {p["filename"][:-4] for q in kept for p in points(q)}
    folder = tmp_path / "HongKong_6"
    folder.mkdir()
    (folder / "connections.json").symlink_to(hk6 / "connections.json")
    (folder / "question.json").write_text(json.dumps(kept))
    partial = load_city(folder)
    errors = [geodesic_m(*truth[n], partial.graph.nodes[n].lat, partial.graph.nodes[n].lon) for n in held_out]
    assert len(errors) > 100
    assert max(errors) < 2.0, max(errors)


def test_tiny_city_loads_with_exact_values(tiny_world):
    g = tiny_world.graph
    assert set(g.nodes) == {f"0000000{i}" for i in range(5)}
    assert g.nodes["00000002"].walkable_headings == (270.0, 90.0)  # -90 normalised, order kept
    assert math.isclose(g.distance_m("00000000", "00000003"), 60.0, abs_tol=1e-6)
    two = tiny_world.episodes[1]
    assert (two.stage_goals, two.target) == (("00000002",), "00000004")
    assert tiny_world.category_targets == {"convenience store": frozenset({"00000003"}),
                                           "pharmacy and bank": frozenset({"00000004"})}


def _broken(tmp_path, mutate):
    edges, episodes = tiny_layout()
    mutate(edges, episodes)
    return write_city(tmp_path / "Broken_1", edges, episodes)


@pytest.mark.parametrize("mutate, file, record, field", [
    (lambda e, q: e[3].pop("edge_azimuth"), "connections.json", 3, "edge_azimuth"),
    (lambda e, q: e[2].__setitem__("edge_distance", float("nan")), "connections.json", 2, "edge_distance"),
    (lambda e, q: e[1].__setitem__("start_walkable_headings", [90, "x"]), "connections.json", 1,
     "start_walkable_headings"),
    (lambda e, q: e[0].__setitem__("edge_distance", -1), "connections.json", 0, "edge_distance"),
    (lambda e, q: q[0].__setitem__("complete_route", []), "question.json", 0, "complete_route"),
    (lambda e, q: q[1].__setitem__("to", "99999999.jpg"), "question.json", 1, "to"),
    (lambda e, q: q[0]["complete_route"][1].__setitem__("filename", "77777777.jpg"), "question.json", 0,
     "complete_route[1].filename"),
    (lambda e, q: q[0]["complete_route"][2].__setitem__("latitude", float("inf")), "question.json", 0,
     "complete_route[2].latitude"),
    (lambda e, q: q[1].pop("question"), "question.json", 1, "question"),
    (lambda e, q: q[0].__setitem__("category", "question3"), "question.json", 0, "category"),
    (lambda e, q: q[1].__setitem__("difficulty", "extreme"), "question.json", 1, "difficulty"),
    (lambda e, q: q[1].__setitem__("question_idx", 0), "question.json", 1, "question_idx"),
    (lambda e, q: q[0].__setitem__("from", "00000001.jpg"), "question.json", 0, "complete_route"),
    (lambda e, q: q[1]["stage1_route"].pop("to"), "question.json", 1, "stage1_route.to"),
    (lambda e, q: q[1]["stage2_route"]["route"][0].pop("longitude"), "question.json", 1,
     "stage2_route.route[0].longitude"),
    # Ids that only differ before they are written as text, or cities that mix in one folder.
    (lambda e, q: q[1].__setitem__("question_idx", "0"), "question.json", 1, "question_idx"),
    (lambda e, q: q[1].update(question_idx="0", city="Tiny Town"), "question.json", 1, "question_idx"),
    (lambda e, q: q[1].__setitem__("city", "othertown"), "question.json", 1, "city"),
    # A second record of one directed edge that contradicts the first.
    (lambda e, q: e.append(dict(e[2], edge_azimuth=e[2]["edge_azimuth"] + 5.0)), "connections.json", 8,
     "edge_azimuth"),
    (lambda e, q: e.append(dict(e[2], edge_distance=21.5)), "connections.json", 8, "edge_distance"),
])
def test_malformed_records_name_file_record_and_field(tmp_path, mutate, file, record, field):
    folder = _broken(tmp_path, mutate)
    with pytest.raises(DataError) as info:
        load_city(folder)
    err = info.value
    assert err.file.endswith(file) and err.record == record and err.field == field, str(err)
    assert file in str(err) and f"record {record}" in str(err) and field in str(err)


def test_bad_json_names_line_and_column(tmp_path):
    folder = write_city(tmp_path / "Bad_1", *tiny_layout())
    (folder / "question.json").write_text('[{"folder": "x",\n  "question": }]')
    with pytest.raises(DataError, match=r"question.json: invalid JSON at line 2 column 15"):
        load_city(folder)
    (folder / "question.json").write_text('{"not": "a list"}')
    with pytest.raises(DataError, match="expected a JSON array"):
        load_city(folder)


def test_unrecoverable_nodes_are_dropped_with_a_counted_warning(tmp_path, caplog):
    edges, episodes = tiny_layout()
    island = {"start_filename": "00000008.jpg", "start_walkable_headings": [0.0], "start_heading": 0.0,
              "end_filename": "00000009.jpg", "end_walkable_headings": [180.0], "end_heading": 0.0,
              "edge_azimuth": 0.0, "edge_distance": 20.0}
    back = dict(island, start_filename="00000009.jpg", end_filename="00000008.jpg", edge_azimuth=180.0)
    world = load_city(write_city(tmp_path / "Island_1", edges + [island, back], episodes))
    assert "00000008" not in world.graph and len(world.graph) == 5
    assert "2 of 7 nodes are not connected to any route node" in caplog.text


def test_validate_reports_every_problem_and_exit_code(tmp_path, capsys, hk6):
    def mutate(e, q):
        e[0]["edge_azimuth"] = None
        q[1]["category"] = "question3"

    assert main(["validate", str(_broken(tmp_path, mutate))]) == 1
    out = capsys.readouterr().out
    assert "connections.json: record 0: field 'edge_azimuth'" in out
    assert "question.json: record 1: field 'category'" in out
    assert "2 error(s)" in out
    assert main(["validate", str(hk6)]) == 0
    out = capsys.readouterr().out
    assert "3601 nodes, 7926 edges, 177 episodes" in out and "0 error(s)" in out


def test_folder_of_cities_and_missing_data(tmp_path):
    edges, episodes = tiny_layout()
    write_city(tmp_path / "all" / "TinyTown_1", edges, episodes)
    other = [dict(q, city="othertown") for q in episodes]
    write_city(tmp_path / "all" / "OtherTown_2", edges, other)
    worlds = load_dataset(tmp_path / "all")
    assert [w.city for w in worlds] == ["othertown", "tinytown"]
    ids = [e.episode_id for w in worlds for e in w.episodes]
    assert len(ids) == len(set(ids)) == 4
    with pytest.raises(ConfigError, match="no such directory"):
        load_dataset(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no city folder"):
        load_dataset(tmp_path / "empty")
    with pytest.raises(ConfigError, match="unknown dataset 'osm'; known: cityseeker"):
        load_dataset(tmp_path / "all", dataset="osm")


def test_non_strict_loading_skips_bad_records(tmp_path):
    def mutate(e, q):
        q[0]["complete_route"] = "nope"

    problems = Problems(strict=False)
    world = load_city(_broken(tmp_path, mutate), problems)
    assert [e.episode_id for e in world.episodes] == ["tinytown-1"]
    assert len(problems.errors) == 1


def test_fuzzed_json_never_raises_anything_but_data_error(tmp_path):
    """Random corruptions of valid records: the loader either loads or raises DataError."""
    rng = random.Random(7)
    junk = [None, "", "x", -1, 1e400, [], {}, [1, 2], True, {"a": 1}]
    for trial in range(150):
        edges, episodes = tiny_layout()
        target = rng.choice([edges, episodes])
        rec = rng.choice(target)
        key = rng.choice(list(rec))
        rec[key] = rng.choice(junk)
        folder = write_city(tmp_path / f"Fuzz_{trial}", edges, episodes)
        try:
            load_city(folder)
        except DataError as exc:
            assert str(exc).startswith(str(folder))


@pytest.mark.parametrize("file", ["question.json", "connections.json"])
def test_an_empty_file_is_an_error_not_a_city_without_episodes(tmp_path, file):
    folder = write_city(tmp_path / "Empty_1", *tiny_layout())
    (folder / file).write_text("[]")
    with pytest.raises(DataError, match=rf"{file}: no (edges|episodes): the list is empty"):
        load_city(folder)
    (folder / file).write_text("")
    with pytest.raises(DataError, match=rf"{file}: invalid JSON at line 1 column 1"):
        load_city(folder)


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000, "nested too deeply"),
    ('[{"a": ' * 50_000, "nested too deeply"),
    ("[" + "7" * 10_000 + "]", "invalid JSON value"),
    ('["\\ud800 lone surrogate"' + "]", "expected an object"),  # read, cleaned, then judged
])
@pytest.mark.parametrize("file", ["question.json", "connections.json", "world.json"])
def test_unreadable_json_is_one_data_error_naming_the_file(tmp_path, file, text, message):
    folder = write_city(tmp_path / "Deep_1", *tiny_layout())
    (folder / file).write_text(text)
    if file == "world.json" and message == "expected an object":
        message = "expected a JSON object"
    with pytest.raises(DataError, match=message) as info:
        load_dataset(folder)
    assert info.value.file == str(folder / file)


def test_an_edge_given_twice_alike_is_kept_once_with_a_counted_warning(tmp_path, caplog):
    edges, episodes = tiny_layout()
    world = load_city(write_city(tmp_path / "Twice_1", edges + [dict(edges[2]), dict(edges[5])], episodes))
    assert len(world.graph.edges) == 8
    assert "2 edge records repeat an earlier edge exactly" in caplog.text


def _city_with(folder, **city_of_record):
    edges, episodes = tiny_layout()
    for index, city in city_of_record.items():
        episodes[int(index[1:])]["city"] = city
    return write_city(folder, edges, episodes)


def test_cities_that_collide_across_folders_are_errors_naming_the_folder_and_record(tmp_path):
    _city_with(tmp_path / "a" / "TinyTown_1")
    _city_with(tmp_path / "a" / "TinyTown_2", r0="Tiny Town", r1="TINYTOWN")  # one city, spelt apart
    with pytest.raises(DataError, match=r"TinyTown_2: field 'city': city 'tinytown' is also the city of .*TinyTown_1"):
        load_dataset(tmp_path / "a")
    _city_with(tmp_path / "b" / "OtherTown_1", r0="othertown", r1="othertown")
    _city_with(tmp_path / "b" / "TinyTown_2", r0="tinytown", r1="othertown")  # its record 1 is othertown-1
    with pytest.raises(DataError, match=r"TinyTown_2/question.json: record 1: field 'city'"):
        load_dataset(tmp_path / "b")


def test_validate_reports_every_lost_record_by_file_record_and_field(tmp_path, capsys):
    """Each of these loaded with 0 errors before, and the benchmark dropped or ran nothing."""
    edges, episodes = tiny_layout()
    episodes[1]["question_idx"] = "0"
    write_city(tmp_path / "all" / "TinyTown_1", edges + [dict(edges[0], edge_distance=99.0)], episodes)
    _city_with(tmp_path / "all" / "TinyTown_2")
    write_city(tmp_path / "all" / "Empty_3", *tiny_layout())
    (tmp_path / "all" / "Empty_3" / "question.json").write_text("[]")
    write_city(tmp_path / "all" / "Deep_4", *tiny_layout())
    (tmp_path / "all" / "Deep_4" / "connections.json").write_text("[" * 100_000)
    assert main(["validate", str(tmp_path / "all")]) == 1
    out = capsys.readouterr().out
    assert "TinyTown_1/connections.json: record 8: field 'edge_distance'" in out
    assert "TinyTown_1/question.json: record 1: field 'question_idx': episode id 'tinytown-0' again" in out
    assert "TinyTown_2: field 'city'" in out
    assert "Empty_3/question.json: no episodes: the list is empty" in out
    assert "Deep_4/connections.json: JSON nested too deeply" in out
    assert "Traceback" not in out

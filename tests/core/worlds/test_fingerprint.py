"""A world build is skipped when its inputs have not changed, and never trusts a half-written world."""
from __future__ import annotations

import io
import json
import time

import pytest

from cityseeker_ros.core.worlds import build as build_module
from cityseeker_ros.core.worlds.build import build_world
from cityseeker_ros.core.worlds.fingerprint import FINGERPRINT_FILE
from cityseeker_ros.core.worlds.tasks import TaskSettings
from tests.core.worlds.test_osm import town_xml


@pytest.fixture
def town(tmp_path):
    path = tmp_path / "town.osm"
    path.write_text(town_xml(), encoding="utf-8")
    return path


def _no_build(*args, **kwargs):
    raise AssertionError("the world was built again")


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_rerun_with_the_same_inputs_builds_nothing_and_says_so(town, tmp_path, monkeypatch):
    out = tmp_path / "w"
    first = build_world(str(town), out, stream=io.StringIO())
    assert "up_to_date" not in first and (out / FINGERPRINT_FILE).is_file()
    before = _files(out)
    monkeypatch.setattr(build_module, "build_osm_world", _no_build)
    started = time.perf_counter()
    again = build_world(str(town), out, stream=io.StringIO())
    assert time.perf_counter() - started < 5.0
    record = json.loads((out / FINGERPRINT_FILE).read_text())
    assert again["up_to_date"] == f"world up to date ({out}), built {record['built_at']}; nothing to do"
    assert record["built_at"].endswith(" UTC") and again["built_at"] == record["built_at"]
    assert _files(out) == before  # not even the fingerprint is rewritten


@pytest.mark.parametrize("change", [
    {"tasks": TaskSettings(seed=1)},
    {"tasks": TaskSettings(per_need=3)},
    {"families": ["needs"]},
    {"spacing_m": 25.0},
    {"name": "other"},
    {"bbox": (-0.003, -0.003, 0.003, 0.003)},
])
def test_a_changed_parameter_rebuilds(town, tmp_path, change):
    out = tmp_path / "w"
    build_world(str(town), out, stream=io.StringIO())
    assert "up_to_date" not in build_world(str(town), out, stream=io.StringIO(), **change)
    # and the new inputs are now the up-to-date ones
    assert "up_to_date" in build_world(str(town), out, stream=io.StringIO(), **change)


def test_a_changed_extract_or_package_version_rebuilds(town, tmp_path, monkeypatch):
    out = tmp_path / "w"
    build_world(str(town), out, stream=io.StringIO())
    town.write_text(town_xml().replace("Cafe Uno", "Cafe Due"), encoding="utf-8")  # same path, new bytes
    assert "up_to_date" not in build_world(str(town), out, stream=io.StringIO())
    assert "Cafe Due" in (out / "scene.json").read_text(encoding="utf-8")
    monkeypatch.setattr(build_module, "__version__", "99.0.0")
    assert "up_to_date" not in build_world(str(town), out, stream=io.StringIO())
    monkeypatch.setattr(build_module, "BUILDER_VERSION", "99")
    assert "up_to_date" not in build_world(str(town), out, stream=io.StringIO())


def test_force_rebuilds(town, tmp_path):
    out = tmp_path / "w"
    build_world(str(town), out, stream=io.StringIO())
    assert "up_to_date" not in build_world(str(town), out, force=True, stream=io.StringIO())


def test_a_build_that_crashed_before_its_fingerprint_is_not_up_to_date(town, tmp_path, monkeypatch):
    """The folder swap succeeded but the process died before the fingerprint: the files may be
    whole, but nothing vouches for them, so the next run builds again."""
    out = tmp_path / "w"
    build_world(str(town), out, stream=io.StringIO())

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "write_fingerprint", crash)
    with pytest.raises(KeyboardInterrupt):
        build_world(str(town), out, tasks=TaskSettings(seed=1), stream=io.StringIO())
    assert not (out / FINGERPRINT_FILE).exists()  # the swap took the earlier fingerprint with the earlier world
    monkeypatch.undo()
    for tasks in (TaskSettings(seed=1), TaskSettings()):  # neither the crashed inputs nor the earlier ones
        monkeypatch.setattr(build_module, "build_osm_world", _no_build)
        with pytest.raises(AssertionError, match="built again"):
            build_world(str(town), out, tasks=tasks, stream=io.StringIO())
        monkeypatch.undo()


@pytest.mark.parametrize("damage", ["truncate", "delete", "add", "garble_fingerprint"])
def test_a_world_changed_after_its_build_is_not_up_to_date(town, tmp_path, damage):
    out = tmp_path / "w"
    build_world(str(town), out, stream=io.StringIO())
    if damage == "truncate":  # a file cut short (a full disk, a copy stopped half-way)
        text = (out / "tasks.json").read_bytes()
        (out / "tasks.json").write_bytes(text[: len(text) // 2])
    elif damage == "delete":
        (out / "graph.json").unlink()
    elif damage == "add":
        (out / "tasks.other.json").write_text("{}", encoding="utf-8")
    else:
        (out / FINGERPRINT_FILE).write_text("{not json", encoding="utf-8")
    assert "up_to_date" not in build_world(str(town), out, stream=io.StringIO())
    assert "up_to_date" in build_world(str(town), out, stream=io.StringIO())


def test_each_phase_says_its_counts(town, tmp_path):
    said = io.StringIO()
    build_world(str(town), tmp_path / "w", stream=said)
    lines = said.getvalue().splitlines()
    phases = ["world build: town from town.osm", "world build: read town.osm:", "world build: street graph:",
              "world build: scene:", "world build: needs tasks:", "world build: landmarks tasks:",
              "world build: questions tasks:", "world build: task-start views rendered: done,"]
    for phase, line in zip(phases, lines):
        assert line.startswith(phase), (phase, lines)
    assert len(lines) == len(phases), lines
    assert " streets, " in lines[1] and " nodes, " in lines[2] and " POIs, " in lines[3]
    views = lines[-1].split("done, ")[1].split(" views")[0]
    done, total = (int(v) for v in views.split("/"))
    assert done == total > 0


def test_the_command_says_up_to_date_and_force_builds_again(town, tmp_path, capsys):
    from cityseeker_ros.cli import main

    out = tmp_path / "w"
    assert main(["world", "build", str(town), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("wrote world ")
    assert main(["world", "build", str(town), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"world up to date ({out})")
    assert main(["world", "build", str(town), "--out", str(out), "--force"]) == 0
    assert capsys.readouterr().out.startswith("wrote world ")



def test_world_tasks_with_the_build_s_inputs_keeps_the_world_up_to_date(tmp_path):
    """`world tasks` rewrites a family's file as the build wrote it (it wrote another JSON layout,
    so the build after docs/tasks.md's `world tasks` rebuilt the whole world: 4 minutes)."""
    from cityseeker_ros.core.worlds.build import add_family_tasks
    from tests.core.tasks.landmarks.gridtown import write_osm

    osm, out = write_osm(tmp_path / "gridtown.osm"), tmp_path / "w"
    build_world(str(osm), out, families=["needs", "landmarks"], stream=io.StringIO())
    assert (out / "tasks.landmarks.json").is_file()
    before = _files(out)
    add_family_tasks(out, ["landmarks"])
    assert _files(out) == before
    assert "up_to_date" in build_world(str(osm), out, families=["needs", "landmarks"], stream=io.StringIO())

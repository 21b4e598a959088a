"""The camera demo end to end on the tiny world: a rendered 360° drive read back from a real
video file, localised from noisy fixes, cut per heading, decided and turned into guidance."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.demo import camera
from tests.core.sensing.camera.conftest import write_tiny_world


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    return write_tiny_world(tmp_path_factory.mktemp("demo") / "tinyville")


def test_demo_renders_a_drive_and_guides_at_every_node(world_dir, tmp_path, capsys):
    drive = camera.render_drive(world_dir, tmp_path, route=["n0", "n1", "n2", "n3"], width=128, fps=5.0)
    assert drive.frames == 76 and drive.video.stat().st_size > 0  # a fix every 0.8 m over 60 m, plus the last node
    records = camera.run_pipeline(world_dir, drive.video, drive.fixes, tmp_path / "guidance.jsonl", "forward",
                                  view_width=64, view_height=48)
    guided = [r for r in records if "guidance" in r]
    assert [r["node"] for r in guided] == ["n0", "n1", "n2", "n3"]  # one view set per arrival
    lines = [json.loads(line) for line in (tmp_path / "guidance.jsonl").read_text().splitlines()]
    assert lines == guided
    n1 = guided[1]
    assert [v["heading"] for v in n1["views"]] == [270.0, 90.0, 0.0]
    assert all(v["shape"] == [48, 64, 3] for v in n1["views"])
    # walking east with "forward": keep going east, straight ahead of the device, 20 m to n2
    g = n1["guidance"]
    assert g["action"] == "move" and g["next_node"] == "n2" and g["heading_deg"] == 90.0
    assert abs(g["relative_deg"]) < 15 and g["direction"] == "FRONT"
    assert g["distance_m"] == pytest.approx(20.0, abs=0.1)
    assert "node n1: Go straight ahead" in capsys.readouterr().out


def test_demo_bad_route_is_named(world_dir, tmp_path):
    with pytest.raises(ConfigError, match="unknown: \\['nowhere'\\]"):
        camera.render_drive(world_dir, tmp_path, route=["n0", "nowhere"])

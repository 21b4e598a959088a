"""load_safety_config: the one reader of the vehicle's safety file, shared by the vehicle bridge
(its gate) and the supervisor in mode seek (its geofence). Every error names the file and the
field; the file may hold the mapping bare or under `safety:`."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety import CircleFence, PolygonFence
from cityseeker_ros.core.vehicles.safety.config import load_safety_config

REPO = Path(__file__).resolve().parents[4]


def test_the_shipped_example_loads_with_its_geofence():
    config = load_safety_config(str(REPO / "config" / "safety.yaml"))
    assert isinstance(config.geofence, CircleFence) and config.geofence.radius_m == 300.0
    assert config.geofence.contains(43.7384, 7.4246) and not config.geofence.contains(43.7484, 7.4246)
    assert config.max_altitude_m == 30.0 and config.heartbeat_timeout_s == 0.5


def test_a_bare_mapping_and_json_load_too(tmp_path):
    path = tmp_path / "fence.json"
    path.write_text('{"geofence": {"polygon": [[0, 0], [0, 0.001], [0.001, 0.001]]}}')
    assert isinstance(load_safety_config(str(path)).geofence, PolygonFence)


@pytest.mark.parametrize("text, field", [
    ("safety:\n  geofence:\n    circle:\n      center: [43.7, 7.4]\n      radius_m: -5\n",
     "safety.geofence.circle.radius_m must be a positive number"),
    ("safety:\n  decision_timeout_s: 2\n", "safety.geofence is required"),
    ("safety:\n  geofence: {circle: {center: [0, 0], radius_m: 5}}\n  max_sped_m_s: 2\n",
     "unknown field.*max_sped_m_s"),
    ("safety: [1, 2\n", "not YAML/JSON"),
    ("- 1\n", "safety must be a mapping"),
    ("safety:\n  geofence: {circle: {center: [0, 0], radius_m: 5}}\n  fence_breach_action: explode\n",
     "safety.fence_breach_action must be one of report, hold, rtl, land"),
])
def test_errors_name_the_file_and_the_field(tmp_path, text, field):
    path = tmp_path / "safety.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"^safety_config {path}: .*{field}"):
        load_safety_config(str(path))


def test_a_missing_file_is_named():
    with pytest.raises(ConfigError, match="^safety_config /no/such/safety.yaml: cannot read"):
        load_safety_config("/no/such/safety.yaml")


def test_the_fence_breach_action_comes_from_the_file(tmp_path):
    path = tmp_path / "safety.yaml"
    path.write_text("safety:\n  geofence: {circle: {center: [0, 0], radius_m: 5}}\n  fence_breach_action: rtl\n")
    assert load_safety_config(str(path)).fence_breach_action == "rtl"
    path.write_text("safety:\n  geofence: {circle: {center: [0, 0], radius_m: 5}}\n")
    assert load_safety_config(str(path)).fence_breach_action == "hold"


# -- a file that is not a safety file: one line naming the file and what is wrong --------------------

FENCE = "safety:\n  geofence: {circle: {center: [0, 0], radius_m: 50}}\n"
RANDOM_BYTES = bytes(random.Random(7).randrange(256) for _ in range(512))
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00"


@pytest.mark.parametrize("content, what", [
    (RANDOM_BYTES, "not UTF-8 text"),
    (PNG, "not UTF-8 text .*byte 0x89 at offset 0"),
    (FENCE.encode("utf-16"), "UTF-16 text.*save it as UTF-8"),
    (b"safety:\n  geofence: \xff\xfe\n", "not UTF-8 text .*byte 0xff at offset 20"),
    (b"safety:\n  geofence:\x00 {}\n", "not YAML/JSON: .*line 2, column 12"),
    (b"", "empty"),
    (b"  \n# only a comment\n", "empty"),
    (b"- 1\n- 2\n", "safety must be a mapping, got \\[1, 2\\]"),
    (b"42\n", "safety must be a mapping, got 42"),
    (b"safety:\n  geofence:\n    circle: {center: [0, 0]\n  max_altitude_m: 30\n", "not YAML/JSON: .*line 4"),
    (b"safety: {geofence: {circle: {center: [0, 0], radius_m: 50}}, max_altitude_m: 30, max_altitude_m: 300}\n",
     "duplicate key max_altitude_m .*line 1"),
    (b"safety:\n  geofence: {circle: {center: [0, 0], radius_m: 50}}\n  1: 2\n", "unknown field\\(s\\) 1 "),
    (b"safety:\n  geofence: {circle: {center: [0, 0], radius_m: 50}}\n  max_altitude_m: 1" + b"0" * 400 + b"\n",
     "safety.max_altitude_m must be a positive number from 1 to 120 m"),
    (b"safety:\n  geofence: {circle: {center: [0, 1" + b"0" * 400 + b"], radius_m: 50}}\n",
     "safety.geofence.circle.center must be \\[lat, lon\\]"),
    (b"safety:\n  geofence: {circle: {center: [0, 0], radius_m: true}}\n",
     "safety.geofence.circle.radius_m must be a positive number"),
])
def test_a_file_that_is_no_safety_file_gets_one_line_naming_it(tmp_path, content, what):
    path = tmp_path / "safety.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=f"^safety_config {path}: .*{what}") as caught:
        load_safety_config(str(path))
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400, str(caught.value)


def test_a_folder_or_a_huge_file_is_named_too(tmp_path):
    with pytest.raises(ConfigError, match=f"^safety_config {tmp_path}: cannot read"):
        load_safety_config(str(tmp_path))
    path = tmp_path / "safety.yaml"
    path.write_text(FENCE + "#" * 2_000_000 + "\n")
    with pytest.raises(ConfigError, match=f"^safety_config {path}: .*bytes; a safety file is a few hundred"):
        load_safety_config(str(path))


def test_a_utf8_file_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / "safety.yaml"
    path.write_bytes(FENCE.encode("utf-8-sig"))
    assert load_safety_config(str(path)).geofence.radius_m == 50.0


# -- bounds: each number in its range, refused with the key, the value and the range ------------------

@pytest.mark.parametrize("key, value, allowed", [
    ("max_altitude_m", 500, "a positive number from 1 to 120 m above home"),
    ("max_altitude_m", 0.5, "from 1 to 120 m above home"),
    ("min_altitude_m", -1000, "a number from -100 to 120 m above home"),
    ("max_speed_m_s", 50, "from 0.1 to 20 m/s"),
    ("max_speed_m_s", 0, "from 0.1 to 20 m/s"),
    ("max_vertical_speed_m_s", 12, "from 0.1 to 5 m/s"),
    ("max_yaw_rate_deg_s", 720, "from 1 to 180 deg/s"),
    ("decision_timeout_s", 3600, "from 0.2 to 60 s"),
    ("decision_timeout_s", 0.01, "from 0.2 to 60 s"),
    ("heartbeat_timeout_s", 1e6, "from 0.2 to 10 s"),
    ("heartbeat_timeout_s", -1, "from 0.2 to 10 s"),
    ("rtl_battery_fraction", 0.01, "a fraction between 0 and 1 \\(or null: never\\), from 0.1 to 0.9"),
    ("rtl_battery_fraction", 0.95, "from 0.1 to 0.9"),
])
def test_a_number_out_of_its_range_is_refused_naming_key_value_and_range(tmp_path, key, value, allowed):
    path = tmp_path / "safety.yaml"
    path.write_text(f"{FENCE}  {key}: {value}\n")
    line = f"^safety_config {path}: safety.{key} must be (.*)?{allowed} \\(.+\\), got {value}$"
    with pytest.raises(ConfigError, match=line):
        load_safety_config(str(path))


@pytest.mark.parametrize("geofence, what", [
    ("{circle: {center: [43.7, 7.4], radius_m: 1.0e+9}}",
     "safety.geofence.circle.radius_m must be a positive number from 1 to 10000 m .*, got 1000000000.0$"),
    ("{circle: {center: [43.7, 7.4], radius_m: 0.2}}", "safety.geofence.circle.radius_m must be .*got 0.2$"),
    ("{polygon: [[0, 0], [0, 179], [80, 0]]}",
     "safety.geofence.polygon\\[\\d\\] lies \\d+ m from the polygon's centre .*at most 10000 m"),
    ("{polygon: [[43.70, 7.40], [43.70, 7.60], [43.90, 7.60]]}", "safety.geofence.polygon\\[\\d\\] lies"),
])
def test_an_absurd_fence_is_refused(tmp_path, geofence, what):
    path = tmp_path / "safety.yaml"
    path.write_text(f"safety:\n  geofence: {geofence}\n")
    with pytest.raises(ConfigError, match=f"^safety_config {path}: {what}"):
        load_safety_config(str(path))


def test_the_widest_allowed_fence_and_the_range_ends_load(tmp_path):
    path = tmp_path / "safety.yaml"
    path.write_text("safety:\n  geofence: {circle: {center: [43.7, 7.4], radius_m: 10000}}\n"
                    "  max_altitude_m: 120\n  min_altitude_m: -100\n  max_speed_m_s: 20\n  decision_timeout_s: 60\n"
                    "  rtl_battery_fraction: 0.1\n  heartbeat_timeout_s: null\n")
    config = load_safety_config(str(path))
    assert config.geofence.radius_m == 10_000 and config.max_altitude_m == 120 and config.min_altitude_m == -100
    path.write_text("safety:\n  geofence: {polygon: [[43.70, 7.40], [43.70, 7.50], [43.77, 7.45]]}\n")
    assert isinstance(load_safety_config(str(path)).geofence, PolygonFence)  # about 8 km across


def test_the_end_action_comes_from_the_file_as_the_monitor_reads_it(tmp_path):
    path = tmp_path / "safety.yaml"
    path.write_text(f"{FENCE}  end_action: land\n")
    assert load_safety_config(str(path)).end_action == "land"
    path.write_text(f"{FENCE}  end_action: terminate\n")
    with pytest.raises(ConfigError, match=f"^safety_config {path}: safety.end_action must be one of hold, land, rtl, "
                                          "got 'terminate'$"):
        load_safety_config(str(path))

"""load_safety_config: the one reader of the vehicle's safety file, shared by the vehicle bridge
(its gate) and the supervisor in mode seek (its geofence). Every error names the file and the
field; the file may hold the mapping bare or under `safety:`."""
from __future__ import annotations

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

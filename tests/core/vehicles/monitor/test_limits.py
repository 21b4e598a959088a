"""The monitor's own reader of the safety file: the same format as the bridge's, its own code."""
from __future__ import annotations

import dataclasses
import json

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.monitor.geometry import Circle, Polygon, offset
from cityseeker_ros.core.vehicles.monitor.limits import DEFAULTS, limits_from_dict, load_limits
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.geofence import geofence_from_dict

CIRCLE = {"circle": {"center": [47.397742, 8.545594], "radius_m": 100.0}}
L_SHAPE = [[47.0, 8.0], [47.0, 8.002], [47.001, 8.002], [47.001, 8.001], [47.002, 8.001], [47.002, 8.0]]


def test_the_defaults_are_the_safety_files():
    fields = {f.name: f.default for f in dataclasses.fields(SafetyConfig)}
    assert DEFAULTS == {k: fields[k] for k in DEFAULTS}


def test_the_shipped_safety_file_reads(tmp_path):
    limits = load_limits("config/safety.yaml")
    assert isinstance(limits.area, Circle) and limits.max_altitude_m == 30.0 and limits.end_action == "hold"


def test_a_json_file_and_a_polygon(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"geofence": {"polygon": L_SHAPE}, "max_speed_m_s": 2, "end_action": "rtl"}))
    limits = load_limits(path)
    assert isinstance(limits.area, Polygon) and limits.max_speed_m_s == 2.0 and limits.end_action == "rtl"


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x02binary", "binary data"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"geofence: [unclosed", "not YAML/JSON"),
    (b"max_speed_m_s: 3", "geofence is required"),
    (b"- 1\n- 2", "expected a mapping"),
    (b"geofence: {circle: {center: [47, 8], radius_m: -1}}", "radius_m must be a positive"),
    (b"geofence: {circle: {center: [147, 8], radius_m: 10}}", "center must be [lat, lon]"),
    (b"geofence: {square: 1}", "exactly one of 'circle' or 'polygon'"),
    (b"geofence: {polygon: [[47, 8], [47, 9]]}", "at least 3"),
    (b"geofence: {circle: {center: [47, 8], radius_m: 10}}\nmax_speed_m_s: .nan", "max_speed_m_s must be a finite"),
    (b"geofence: {circle: {center: [47, 8], radius_m: 10}}\nmin_altitude_m: 50", "must be below max_altitude_m"),
    (b"geofence: {circle: {center: [47, 8], radius_m: 10}}\nend_action: terminate", "end_action must be one of"),
])
def test_bad_files_are_one_line_naming_the_file(tmp_path, content, message):
    path = tmp_path / "safety.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        load_limits(path)
    text = str(err.value)
    assert message in text and str(path) in text and "\n" not in text


def test_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_limits(tmp_path / "none.yaml")


@pytest.mark.parametrize("fence", [CIRCLE, {"polygon": L_SHAPE}])
def test_the_geometry_agrees_with_the_bridges_to_the_tolerance(fence):
    """Written apart from the bridge's geofence, they must still agree on where the edge is (to centimetres)."""
    ours = limits_from_dict({"geofence": fence}).area
    theirs = geofence_from_dict(fence, 30.0)
    lat0, lon0 = (47.397742, 8.545594) if "circle" in fence else (47.001, 8.001)
    for east in range(-200, 201, 23):
        for north in range(-200, 201, 29):
            lat, lon = offset(lat0, lon0, east, north)
            assert ours.outside_by_m(lat, lon) == pytest.approx(theirs.outside_by_m(lat, lon), abs=0.05)

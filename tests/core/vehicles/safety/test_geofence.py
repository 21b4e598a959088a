"""Geofences (circle and polygon, ceiling) and SafetyConfig validation naming the bad field."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety import CircleFence, PolygonFence, SafetyCode, SafetyConfig
from tests.conftest import M_PER_DEG
from tests.core.vehicles.safety.conftest import CIRCLE, M_PER_DEG_LAT


def ll(x_east: float, y_north: float) -> tuple[float, float]:
    return y_north / M_PER_DEG_LAT, x_east / M_PER_DEG


def test_circle_contains_and_measures_how_far_outside():
    fence = CircleFence(0.0, 0.0, 100.0, max_altitude_m=40.0)
    assert fence.contains(*ll(60.0, 79.0)) and fence.contains(*ll(100.0, 0.0))
    assert not fence.contains(*ll(0.0, 130.0))
    assert fence.outside_by_m(*ll(0.0, 130.0)) == pytest.approx(30.0, abs=0.01)


def test_goals_outside_the_fence_or_above_the_ceiling_are_refused():
    fence = CircleFence(0.0, 0.0, 100.0, max_altitude_m=40.0)
    assert fence.check_goal(*ll(50.0, 0.0), 39.0).ok
    outside = fence.check_goal(*ll(-150.0, 0.0), 10.0)
    assert (outside.ok, outside.code) == (False, SafetyCode.OUTSIDE_GEOFENCE)
    assert "50.0 m outside the circle geofence" in outside.reason
    high = fence.check_goal(*ll(50.0, 0.0), 40.5)
    assert (high.ok, high.code, high.reason) == (False, SafetyCode.ABOVE_MAX_ALTITUDE,
                                                 "goal altitude 40.5 m is above the 40 m ceiling")


def test_concave_polygon_in_either_winding():
    """An L: 0-100 m east by 0-40 m north, plus 0-40 m east by 40-100 m north."""
    corners = [(0, 0), (100, 0), (100, 40), (40, 40), (40, 100), (0, 100)]
    for points in (corners, corners[::-1]):
        fence = PolygonFence([ll(x, y) for x, y in points], max_altitude_m=30.0)
        assert fence.contains(*ll(90.0, 10.0)) and fence.contains(*ll(10.0, 90.0))
        assert fence.contains(*ll(99.99, 20.0)) and fence.outside_by_m(*ll(100.5, 20.0)) == pytest.approx(0.5, abs=0.01)
        assert not fence.contains(*ll(80.0, 80.0))  # in the notch
        assert fence.outside_by_m(*ll(80.0, 80.0)) == pytest.approx(40.0, abs=0.05)
        assert fence.check_goal(*ll(80.0, 80.0)).code is SafetyCode.OUTSIDE_GEOFENCE


def test_config_defaults_and_polygon():
    cfg = SafetyConfig.from_dict({"geofence": {"polygon": [[0, 0], [0, 0.001], [0.001, 0.001]]},
                                  "heartbeat_timeout_s": None, "max_altitude_m": 25})
    assert isinstance(cfg.geofence, PolygonFence) and cfg.geofence.max_altitude_m == 25.0
    assert cfg.heartbeat_timeout_s is None and cfg.decision_timeout_s == 3.0
    assert cfg.limits.max_altitude_m == 25.0


@pytest.mark.parametrize("patch, field", [
    ({"geofence": None}, "safety.geofence must have exactly one"),
    ({"geofence": {**CIRCLE, "polygon": []}}, "safety.geofence must have exactly one"),
    ({"geofence": {"circle": {"center": [0, 0], "radius_m": -1}}}, "safety.geofence.circle.radius_m"),
    ({"geofence": {"circle": {"center": [0, 0]}}}, "safety.geofence.circle must have"),
    ({"geofence": {"circle": {"center": [95, 0], "radius_m": 5}}}, "safety.geofence.circle.center"),
    ({"geofence": {"polygon": [[0, 0], [0, 1]]}}, "safety.geofence.polygon must be a list of at least 3"),
    ({"geofence": {"polygon": [[0, 0], [0, 200], [1, 1]]}}, r"safety.geofence.polygon\[1\]"),
    ({"geofence": {"polygon": [[0, 0], [0.001, 0.001], [0, 0.001], [0.001, 0]]}}, "cross itself"),
    ({"decision_timeout_s": "fast"}, "safety.decision_timeout_s must be a positive number"),
    ({"max_speed_m_s": 0}, "safety.max_speed_m_s"),
    ({"max_altitude_m": float("inf")}, "safety.max_altitude_m"),
    ({"heartbeat_timeout_s": True}, "safety.heartbeat_timeout_s"),
    ({"max_sped_m_s": 2}, "unknown field.*max_sped_m_s"),
])
def test_config_errors_name_the_field(patch, field):
    with pytest.raises(ConfigError, match=field):
        SafetyConfig.from_dict({"geofence": CIRCLE, **patch})


def test_config_requires_a_geofence():
    with pytest.raises(ConfigError, match="safety.geofence is required"):
        SafetyConfig.from_dict({"decision_timeout_s": 1})
    with pytest.raises(ConfigError, match="safety must be a mapping"):
        SafetyConfig.from_dict([])

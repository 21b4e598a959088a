"""Teleport and fly motion modes against the protocol fake of AirSim's RPC server (not the
simulator): for a known anchor and goal, the right NED coordinates and yaw go over the wire."""
import math

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink
from cityseeker_ros.core.vehicles.airsim.frames import quat_from_yaw
from cityseeker_ros.core.vehicles.airsim.motion import MOTION_MODES, GeoPose, make_motion_mode
from tests.core.vehicles.airsim.fake_airsim import quat_yaw, yaw_of

ANCHOR = Anchor(lat=43.7384, lon=7.4246, alt=40.0)
D = 100.0 / math.sqrt(2.0)  # 100 m to the north-east: 70.71 m north and 70.71 m east


def goal_ne(anchor: Anchor, heading: float, alt: float = 42.5) -> GeoPose:
    lat, lon = destination(anchor.lat, anchor.lon, 45.0, 100.0)
    return GeoPose(lat, lon, alt, heading)


@pytest.fixture
def link(fake, client_name):
    with AirSimLink("127.0.0.1", fake.port, client=client_name) as connected:
        yield connected


def orientation(pose: dict) -> dict:
    return {k: pose["orientation"][k] for k in ("w_val", "x_val", "y_val", "z_val")}


def quat_dict(yaw: float) -> dict:
    q = quat_from_yaw(yaw)
    return {"w_val": q.w, "x_val": 0.0, "y_val": 0.0, "z_val": q.z}


def test_registry_names():
    assert MOTION_MODES.names() == ["fly", "teleport"]


@pytest.mark.parametrize("offset, xy, yaw_deg", [(0.0, (D, D), 90.0), (90.0, (D, -D), 0.0)])
def test_teleport_sends_ned_pose(fake, link, offset, xy, yaw_deg):
    anchor = Anchor(ANCHOR.lat, ANCHOR.lon, ANCHOR.alt, yaw_offset_deg=offset)
    mode = make_motion_mode("teleport", link, anchor)
    mode.go_to(goal_ne(anchor, heading=90.0))  # face east, 2.5 m above the origin
    pose, ignore_collision, _ = fake.params("simSetVehiclePose")[-1]
    assert (pose["position"]["x_val"], pose["position"]["y_val"]) == pytest.approx(xy, abs=0.01)
    assert pose["position"]["z_val"] == pytest.approx(-2.5)
    assert orientation(pose) == pytest.approx(quat_dict(math.radians(yaw_deg)))
    assert ignore_collision is True
    assert fake.methods() == ["ping", "simSetVehiclePose"]  # no arming, no flight controller


def test_teleport_turns_in_place(fake, link):
    mode = make_motion_mode("teleport", link, ANCHOR)
    mode.go_to(goal_ne(ANCHOR, heading=0.0))
    mode.turn_to(270.0)
    first, second = (p[0] for p in fake.params("simSetVehiclePose"))
    assert second["position"] == first["position"]
    assert orientation(second) == pytest.approx(quat_dict(-math.pi / 2))


def test_teleport_turn_before_any_goal_keeps_current_position(fake, link):
    fake.position = {"x_val": 5.0, "y_val": 6.0, "z_val": -7.0}
    make_motion_mode("teleport", link, ANCHOR).turn_to(180.0)
    assert fake.params("simSetVehiclePose")[0][0]["position"] == pytest.approx(fake.position)


def test_altitude_override_sets_height_above_origin(fake, link):
    mode = make_motion_mode("teleport", link, ANCHOR, altitude_m=30.0)
    mode.go_to(goal_ne(ANCHOR, heading=0.0, alt=1000.0))
    assert fake.params("simSetVehiclePose")[0][0]["position"]["z_val"] == pytest.approx(-30.0)


def test_fly_moves_then_turns_at_the_capped_rate(fake, link):
    fake.orientation = quat_yaw(math.radians(10.0))
    mode = make_motion_mode("fly", link, ANCHOR, max_speed_mps=4.0, max_yaw_rate_dps=20.0, timeout_s=60.0)
    mode.go_to(goal_ne(ANCHOR, heading=100.0))
    assert fake.methods() == ["ping", "enableApiControl", "armDisarm", "moveToPosition", "simGetVehiclePose",
                              "rotateByYawRate", "rotateToYaw"]
    assert fake.params("enableApiControl")[0][0] is True and fake.params("armDisarm")[0][0] is True
    x, y, z, velocity, timeout = fake.params("moveToPosition")[0][:5]
    assert (x, y) == pytest.approx((D, D), abs=0.01)
    assert (z, velocity, timeout) == pytest.approx((-2.5, 4.0, 60.0))
    rate, duration = fake.params("rotateByYawRate")[0][:2]
    assert (rate, duration) == pytest.approx((20.0, 90.0 / 20.0))  # 10 -> 100 degrees, clockwise
    yaw_deg, timeout, margin = fake.params("rotateToYaw")[0][:3]
    assert (yaw_deg, timeout, margin) == pytest.approx((100.0, 60.0, 2.0))
    assert math.degrees(yaw_of(fake.orientation)) == pytest.approx(100.0)


def test_fly_turns_the_short_way_in_the_map_frame(fake, link):
    anchor = Anchor(ANCHOR.lat, ANCHOR.lon, ANCHOR.alt, yaw_offset_deg=-90.0)  # map +x points west
    fake.orientation = quat_yaw(math.radians(170.0))  # map yaw 170 = compass 80
    mode = make_motion_mode("fly", link, anchor, max_yaw_rate_dps=30.0)
    mode.turn_to(320.0)  # compass 320 = map yaw 410 = 50 degrees: 120 degrees counter-clockwise
    rate, duration = fake.params("rotateByYawRate")[0][:2]
    assert (rate, duration) == pytest.approx((-30.0, 4.0))
    assert fake.params("rotateToYaw")[0][0] == pytest.approx(50.0)
    mode.turn_to(321.0)  # within the margin after a small turn: no rate-limited leg
    assert len(fake.params("rotateByYawRate")) == 1 and len(fake.params("rotateToYaw")) == 2
    assert fake.methods().count("armDisarm") == 1


@pytest.mark.parametrize("params, field", [({"max_speed_mps": 0}, "max_speed_mps"),
                                           ({"max_yaw_rate_dps": -5}, "max_yaw_rate_dps"),
                                           ({"timeout_s": "soon"}, "timeout_s"),
                                           ({"altitude_m": "high"}, "altitude_m"),
                                           ({"speed": 3}, "bad parameters")])
def test_fly_config_errors_name_the_field(link, params, field):
    with pytest.raises(ConfigError, match=field):
        make_motion_mode("fly", link, ANCHOR, **params)


def test_unknown_mode_lists_known(link):
    with pytest.raises(ConfigError, match="known: fly, teleport"):
        make_motion_mode("hover", link, ANCHOR)

"""The "airsim" view source against the protocol fake of AirSim's RPC server, not the simulator:
the camera turns (simSetCameraPose, relative to the body), the vehicle never moves, and the
camera is back on its mount afterwards. The fake composes body and camera poses itself (its own
quaternion product), so the frame math here is checked against an independent implementation."""
import math
import subprocess
import sys

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views import VIEW_SOURCES, make_view_source
from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.streets.graph import Node, StreetGraph
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError, MotionRefused
from cityseeker_ros.core.vehicles.airsim.frames import Quaternion, quat_multiply, quat_to_matrix, wrap_pi
from cityseeker_ros.core.vehicles.airsim.views import CameraPose, camera_pose_for
from tests.core.vehicles.airsim.fake_airsim import MOUNT, camera_image, qmul, quat_yaw, vec, yaw_of

ANCHOR = {"lat": 43.7384, "lon": 7.4246, "alt": 40.0}
HEADINGS = (0.0, 90.0, 200.0, 316.0)  # even degrees: the fake's red channel is heading / 2
VEHICLE_YAWS = (0.0, 37.0, -90.0, 180.0, 250.0)  # 250: yawed well away from north


def world_with_node_north_of_anchor(distance_m: float = 50.0) -> tuple[World, Node]:
    lat, lon = destination(ANCHOR["lat"], ANCHOR["lon"], 0.0, distance_m)
    node = Node("n1", lat, lon, heading=0.0, walkable_headings=(0.0, 90.0, 200.0))
    return World("airsimtown", StreetGraph([node], []), [], {}), node


def make(fake, client_name, anchor=None, **params):
    world, _ = world_with_node_north_of_anchor()
    return make_view_source("airsim", world, {"anchor": anchor or ANCHOR, "port": fake.port, "client": client_name,
                                              "settle_s": 0, **params})


def shot_yaws_deg(fake) -> list[float]:
    return [math.degrees(yaw_of(pose["orientation"])) for _, pose in fake.shots]


def same_angles(got_deg, expected_deg) -> bool:
    return len(got_deg) == len(expected_deg) and all(
        abs(wrap_pi(math.radians(g - e))) < 1e-8 for g, e in zip(got_deg, expected_deg))


def approx_pose(pose, expected) -> bool:
    return all(pose[part][k] == pytest.approx(expected[part][k], abs=1e-9) for part in expected for k in expected[part])


def test_registered_without_importing_a_client_library():
    code = ("import sys, cityseeker_ros.core.sensing.views as v; assert 'airsim' in v.VIEW_SOURCES; "
            "print(sorted(m for m in ('airsim', 'cosysairsim', 'msgpackrpc', 'rclpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert "airsim" in VIEW_SOURCES


@pytest.mark.parametrize("yaw_offset_deg", [0.0, 30.0])
@pytest.mark.parametrize("vehicle_yaw_deg", VEHICLE_YAWS)
def test_views_here_turn_the_camera_and_never_the_vehicle(fake, client_name, vehicle_yaw_deg, yaw_offset_deg):
    """For each vehicle yaw: zero vehicle calls, one shot per heading at that compass heading
    (through the anchor's map rotation), the camera at its mount while it turns, then restored."""
    fake.position, fake.orientation = vec(12.0, -7.0, -3.0), quat_yaw(math.radians(vehicle_yaw_deg))
    before = (dict(fake.position), dict(fake.orientation))
    anchor = {**ANCHOR, "yaw_offset_deg": yaw_offset_deg}
    source = make(fake, client_name, anchor)
    try:
        views = source.images_here(HEADINGS)
    finally:
        source.close()
    assert fake.vehicle_calls() == [] and (fake.position, fake.orientation) == before
    assert "simGetVehiclePose" in fake.methods() and fake.methods().count("simGetImages") == len(HEADINGS)
    map_yaws = [(h - yaw_offset_deg) % 360.0 for h in HEADINGS]
    assert same_angles(shot_yaws_deg(fake), map_yaws)
    for view, yaw in zip(views, map_yaws):
        assert view.dtype == np.uint8 and np.array_equal(view, camera_image(math.radians(yaw)))
    mount_world = [pose["position"] for _, pose in fake.shots]  # at the mount, 0.30 m ahead of the body
    body = quat_to_matrix(Quaternion(*(fake.orientation[k] for k in ("w_val", "x_val", "y_val", "z_val"))))
    ahead = np.array([12.0, -7.0, -3.0]) + body @ [0.30, 0.0, 0.0]
    assert all([p["x_val"], p["y_val"], p["z_val"]] == pytest.approx(ahead, abs=1e-9) for p in mount_world)
    assert fake.methods()[-1] == "simSetCameraPose" and approx_pose(fake.cameras["front"], MOUNT)


@pytest.mark.parametrize("vehicle_yaw_deg", VEHICLE_YAWS)
def test_views_at_a_node_put_the_camera_there_not_the_vehicle(fake, client_name, vehicle_yaw_deg):
    """The in-process benchmark's call: the camera is placed at the node at eye height (relative to
    a vehicle parked elsewhere) and turned; the vehicle stays where it is."""
    world, node = world_with_node_north_of_anchor()
    fake.position, fake.orientation = vec(-20.0, 15.0, 0.0), quat_yaw(math.radians(vehicle_yaw_deg))
    source = make_view_source("airsim", world, {"anchor": ANCHOR, "port": fake.port, "client": client_name,
                                                "settle_s": 0, "altitude_m": 3.0})
    try:
        views = source.images(node, node.walkable_headings)
    finally:
        source.close()
    assert fake.vehicle_calls() == [] and fake.position == vec(-20.0, 15.0, 0.0)
    assert same_angles(shot_yaws_deg(fake), [0.0, 90.0, 200.0])
    for view, heading in zip(views, node.walkable_headings):
        assert np.array_equal(view, camera_image(math.radians(heading)))
    for _, pose in fake.shots:  # AirSim NED: 50 m north of the origin, 3 m above it
        assert (pose["position"]["x_val"], pose["position"]["y_val"], pose["position"]["z_val"]) == \
            pytest.approx((50.0, 0.0, -3.0), abs=0.01)
    assert approx_pose(fake.cameras["front"], MOUNT)
    described = source.describe()
    assert described["name"] == "airsim" and described["synthetic"] is True and described["moves"] == "camera"
    assert described["anchor"]["lat"] == ANCHOR["lat"] and described["altitude_m"] == 3.0
    assert described["client"] == client_name


def test_a_tilted_mount_and_body_keep_the_mount_pose_and_level_views(fake, client_name):
    """A camera mounted 20 degrees down and 90 degrees right, on a body pitched 10 degrees: each
    view keeps the mount's 20 degrees against the horizon, looks along its heading, and the mount
    pose (not an identity) is what is restored."""
    def axis_angle(axis, deg):
        s = math.sin(math.radians(deg) / 2)
        return {"w_val": math.cos(math.radians(deg) / 2), "x_val": axis[0] * s, "y_val": axis[1] * s,
                "z_val": axis[2] * s}
    mount = {"position": vec(0.1, 0.2, 0.05),
             "orientation": qmul(axis_angle((0, 0, 1), 90), axis_angle((0, 1, 0), -20))}
    fake.cameras["front"] = {k: dict(v) for k, v in mount.items()}
    fake.orientation = qmul(axis_angle((0, 0, 1), 140), axis_angle((0, 1, 0), 10))
    source = make(fake, client_name)
    try:
        source.images_here(HEADINGS)
    finally:
        source.close()
    assert fake.vehicle_calls() == []
    for (_, pose), heading in zip(fake.shots, HEADINGS):
        q = Quaternion(*(pose["orientation"][k] for k in ("w_val", "x_val", "y_val", "z_val")))
        forward = quat_to_matrix(q) @ [1.0, 0.0, 0.0]  # NED: z down, so looking down is +z
        assert same_angles([math.degrees(math.atan2(forward[1], forward[0]))], [heading])
        assert math.degrees(math.asin(forward[2])) == pytest.approx(20.0, abs=1e-6)
    assert approx_pose(fake.cameras["front"], mount)


@pytest.mark.parametrize("vehicle_yaw_deg", [-179.0, -45.0, 0.0, 63.0, 179.0])
@pytest.mark.parametrize("heading_yaw_deg", [-120.0, 0.0, 90.0, 180.0])
def test_camera_pose_for_a_level_vehicle_is_the_yaw_relative_to_the_body(vehicle_yaw_deg, heading_yaw_deg):
    """For a level body and a level mount, the relative attitude is a pure yaw of heading minus
    body yaw, wrapped, and composing it with the body gives the heading (frames.py helpers)."""
    level = CameraPose((0.3, 0.0, 0.0), Quaternion(1.0, 0.0, 0.0, 0.0))
    q_v = Quaternion(math.cos(math.radians(vehicle_yaw_deg) / 2), 0.0, 0.0, math.sin(math.radians(vehicle_yaw_deg) / 2))
    pose = camera_pose_for(math.radians(heading_yaw_deg), (1.0, 2.0, 3.0), q_v, level)
    rel = math.atan2(2 * pose.orientation.w * pose.orientation.z, 1 - 2 * pose.orientation.z ** 2)
    assert abs(wrap_pi(rel - math.radians(heading_yaw_deg - vehicle_yaw_deg))) < 1e-9
    assert pose.orientation.x == pytest.approx(0.0, abs=1e-12) and pose.orientation.y == pytest.approx(0.0, abs=1e-12)
    world = quat_to_matrix(quat_multiply(q_v, pose.orientation)) @ [1.0, 0.0, 0.0]
    assert abs(wrap_pi(math.atan2(world[1], world[0]) - math.radians(heading_yaw_deg))) < 1e-9
    assert pose.position == (0.3, 0.0, 0.0)


def test_a_failed_view_set_still_restores_the_camera(fake, client_name):
    fake.orientation = quat_yaw(math.radians(250.0))
    fake.fail = {"simGetImages"}
    source = make(fake, client_name)
    try:
        with pytest.raises(AirSimError, match="simGetImages"):
            source.images_here(HEADINGS)
    finally:
        source.close()
    assert fake.vehicle_calls() == []
    assert fake.methods()[-1] == "simSetCameraPose" and approx_pose(fake.cameras["front"], MOUNT)


def test_the_view_link_refuses_every_motion_call(fake, client_name):
    """Belt and braces to the static guard (test_motion_callers.py): the view source's link has a
    shut motion gate, so even a motion call made through it never reaches the vehicle."""
    source = make(fake, client_name)
    try:
        for call in (lambda: source.link.set_pose((0.0, 0.0, -2.0), 1.0), source.link.take_control,
                     lambda: source.link.move_to((5.0, 0.0, -2.0), 1.0, 1.0),
                     lambda: source.link.rotate_to(1.0, 1.0, 2.0), lambda: source.link.rotate_at_rate(10.0, 1.0)):
            with pytest.raises(MotionRefused):
                call()
    finally:
        source.close()
    assert fake.vehicle_calls() == [] and fake.methods() == ["ping"]


def test_empty_headings_touch_nothing(fake, client_name):
    world, node = world_with_node_north_of_anchor()
    source = make_view_source("airsim", world, {"anchor": ANCHOR, "port": fake.port, "client": client_name})
    assert source.images(node, []) == [] and source.images_here([]) == []
    source.close()
    assert fake.methods() == ["ping"]


@pytest.mark.parametrize("params, match", [({}, "needs anchor"),
                                           ({"anchor": {"lat": 43.0}}, "'lon'"),
                                           ({"anchor": ANCHOR, "settle_s": -1}, "settle_s"),
                                           ({"anchor": ANCHOR, "motion": "fly"}, "never moves the vehicle"),
                                           ({"anchor": ANCHOR, "colour": "red"}, "bad parameters: unknown colour")])
def test_config_errors(params, match):
    world, _ = world_with_node_north_of_anchor()
    with pytest.raises(ConfigError, match=match):
        make_view_source("airsim", world, params)

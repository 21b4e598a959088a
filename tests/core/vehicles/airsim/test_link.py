"""AirSimLink through the real client library against a protocol fake of AirSim's RPC server
(tests/core/vehicles/airsim/fake_airsim.py), not the simulator: the wire format, struct field names and
our decoding are what these tests check."""
import math
import socket

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import geodesic_m, initial_bearing_deg
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.client import AirSimLink, load_client_module
from cityseeker_ros.core.vehicles.airsim.errors import AirSimError
from cityseeker_ros.core.vehicles.airsim.frames import quat_from_yaw, yaw_from_quat
from tests.core.vehicles.airsim.fake_airsim import HEIGHT, WIDTH, FakeAirSim, camera_image, quat_yaw, vec

ANCHOR = Anchor(lat=43.7384, lon=7.4246, alt=40.0)


def link_to(fake: FakeAirSim, client_name: str, **kwargs) -> AirSimLink:
    return AirSimLink("127.0.0.1", fake.port, client=client_name, **kwargs).connect()


def test_ping_over_the_wire(fake, client_name):
    with link_to(fake, client_name) as link:
        assert link.ping() is True
    assert fake.methods() == ["ping", "ping"]


@pytest.mark.parametrize("compress, raw_order, channels", [(True, "bgr", 3), (False, "bgr", 3), (False, "rgb", 3),
                                                           (False, "bgr", 4)])
def test_scene_decodes_to_rgb(client_name, compress, raw_order, channels):
    fake = FakeAirSim(raw_order=raw_order, channels=channels)
    try:
        fake.orientation = quat_yaw(math.radians(100.0))
        with link_to(fake, client_name, raw_channel_order=raw_order) as link:
            frame = link.grab("front", compress=compress)
    finally:
        fake.close()
    expected = camera_image(math.radians(100.0))
    assert frame.rgb.dtype == np.uint8 and frame.rgb.shape == (HEIGHT, WIDTH, 3)
    assert np.array_equal(frame.rgb, expected)
    assert frame.rgb[0, 0, 0] == 50 and frame.rgb[0, 0, 2] == 200  # red really is red
    assert frame.timestamp_s == pytest.approx(fake.timestamp_ns * 1e-9)
    request = fake.params("simGetImages")[0][0][0]
    assert (request["camera_name"], request["image_type"], request["compress"]) == ("front", 0, compress)


def test_depth_perspective_comes_in_the_same_call(fake, client_name):
    with link_to(fake, client_name) as link:
        frame = link.grab("front", depth=True)
    assert frame.depth_m.shape == (HEIGHT, WIDTH) and frame.depth_m.dtype == np.float32
    assert frame.depth_m[0, 0] == pytest.approx(1.0) and frame.depth_m[-1, -1] == pytest.approx(50.0)
    requests = fake.params("simGetImages")[0][0]
    assert [(r["image_type"], r["pixels_as_float"], r["compress"]) for r in requests] == [(0, False, True),
                                                                                          (2, True, False)]


def test_multirotor_state_becomes_enu_kinematics(fake, client_name):
    fake.position, fake.velocity = vec(30.0, 40.0, -5.0), vec(1.0, 2.0, -0.5)
    fake.orientation = quat_yaw(math.radians(30.0))
    with link_to(fake, client_name) as link:
        k = link.kinematics(ANCHOR)
    assert k.position_enu == pytest.approx((40.0, 30.0, 5.0))
    assert k.velocity_enu == pytest.approx((2.0, 1.0, 0.5))
    assert k.heading_deg == pytest.approx(30.0)
    assert math.degrees(yaw_from_quat(k.orientation_enu)) == pytest.approx(60.0)
    assert k.alt == pytest.approx(45.0)
    assert geodesic_m(ANCHOR.lat, ANCHOR.lon, k.lat, k.lon) == pytest.approx(50.0, abs=0.01)
    assert initial_bearing_deg(ANCHOR.lat, ANCHOR.lon, k.lat, k.lon) == pytest.approx(math.degrees(math.atan2(40, 30)))
    assert k.timestamp_s == pytest.approx(fake.timestamp_ns * 1e-9)
    assert fake.methods()[-1] == "getMultirotorState"


def test_vehicle_pose_with_a_turned_map(fake, client_name):
    anchor = Anchor(lat=ANCHOR.lat, lon=ANCHOR.lon, alt=0.0, yaw_offset_deg=90.0)  # map +x points east
    fake.position, fake.orientation = vec(10.0, 0.0, -2.0), quat_yaw(0.0)
    with link_to(fake, client_name) as link:
        k = link.kinematics(anchor, from_pose=True)
        position, yaw = link.pose_ned()
    assert k.position_enu == pytest.approx((10.0, 0.0, 2.0))
    assert k.velocity_enu == (0.0, 0.0, 0.0)
    assert k.heading_deg == pytest.approx(90.0)
    assert initial_bearing_deg(anchor.lat, anchor.lon, k.lat, k.lon) == pytest.approx(90.0)
    assert np.allclose(position, [10.0, 0.0, -2.0]) and yaw == pytest.approx(0.0)
    assert fake.methods()[-2:] == ["simGetVehiclePose", "simGetVehiclePose"]


def test_set_pose_sends_airsim_pose_struct(fake, client_name):
    with link_to(fake, client_name) as link:
        link.set_pose([1.0, 2.0, -3.0], math.radians(90.0))
    pose, ignore_collision, vehicle = fake.params("simSetVehiclePose")[0]
    assert pose["position"] == {"x_val": 1.0, "y_val": 2.0, "z_val": -3.0}
    expected = quat_from_yaw(math.radians(90.0))
    assert {k: pose["orientation"][k] for k in ("w_val", "x_val", "y_val", "z_val")} == pytest.approx(
        {"w_val": expected.w, "x_val": 0.0, "y_val": 0.0, "z_val": expected.z})
    assert ignore_collision is True and vehicle == ""


def test_refused_connection_names_host_and_port(client_name):
    with socket.socket() as s:  # a port that was free a moment ago and has no listener now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(AirSimError, match=f"cannot reach AirSim at 127.0.0.1:{port}"):
        AirSimLink("127.0.0.1", port, client=client_name).connect()


def test_server_error_names_the_call(fake, client_name):
    fake.fail.add("simGetImages")
    with link_to(fake, client_name) as link, pytest.raises(AirSimError, match=f"simGetImages at 127.0.0.1:{fake.port}"):
        link.grab("front")


def test_unconnected_link_says_so(client_name):
    with pytest.raises(AirSimError, match="not connected"):
        AirSimLink("127.0.0.1", 1, client=client_name).ping()


def test_client_choice():
    with pytest.raises(ConfigError, match="must be one of auto"):
        load_client_module("unreal")
    assert load_client_module("auto").__name__ in ("airsim", "cosysairsim")
    with pytest.raises(ConfigError, match="raw_channel_order"):
        AirSimLink(raw_channel_order="bgra")

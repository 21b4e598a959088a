"""The "airsim" view source (yaw in place) against the protocol fake of AirSim's RPC server, not
the simulator: one pose per heading at the node, one RGB view per heading."""
import math
import subprocess
import sys

import numpy as np
import pytest

from cityseeker_ros.core.episode import World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.geodesy import destination
from cityseeker_ros.core.graph import Node, StreetGraph
from cityseeker_ros.core.views import VIEW_SOURCES, make_view_source
from tests.core.airsim.fake_airsim import camera_image, yaw_of

ANCHOR = {"lat": 43.7384, "lon": 7.4246, "alt": 40.0}


def world_with_node_north_of_anchor(distance_m: float = 50.0) -> tuple[World, Node]:
    lat, lon = destination(ANCHOR["lat"], ANCHOR["lon"], 0.0, distance_m)
    node = Node("n1", lat, lon, heading=0.0, walkable_headings=(0.0, 90.0, 200.0))
    return World("airsimtown", StreetGraph([node], []), [], {}), node


def test_registered_without_importing_a_client_library():
    code = ("import sys, cityseeker_ros.core.views as v; assert 'airsim' in v.VIEW_SOURCES; "
            "print(sorted(m for m in ('airsim', 'cosysairsim', 'msgpackrpc', 'rclpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert "airsim" in VIEW_SOURCES


def test_one_view_per_heading_by_yawing_in_place(fake, client_name):
    world, node = world_with_node_north_of_anchor()
    source = make_view_source("airsim", world, {"anchor": ANCHOR, "port": fake.port, "client": client_name,
                                                "settle_s": 0, "altitude_m": 3.0})
    try:
        views = source.images(node, node.walkable_headings)
    finally:
        source.close()
    assert len(views) == 3
    for view, heading in zip(views, node.walkable_headings):
        assert view.dtype == np.uint8 and view.shape == (6, 8, 3)
        assert np.array_equal(view, camera_image(math.radians(heading)))
    poses = [p[0] for p in fake.params("simSetVehiclePose")]
    assert len(poses) == 3 and all(p["position"] == poses[0]["position"] for p in poses)
    assert (poses[0]["position"]["x_val"], poses[0]["position"]["y_val"]) == pytest.approx((50.0, 0.0), abs=0.01)
    assert poses[0]["position"]["z_val"] == pytest.approx(-3.0)
    assert [math.degrees(yaw_of(p["orientation"])) % 360 for p in poses] == pytest.approx([0.0, 90.0, 200.0])
    assert fake.methods().count("simGetImages") == 3
    described = source.describe()
    assert described["name"] == "airsim" and described["synthetic"] is True
    assert described["motion"] == "teleport" and described["anchor"]["lat"] == ANCHOR["lat"]
    assert described["altitude_m"] == 3.0 and described["client"] == client_name


def test_fly_motion_through_the_view_source(fake, client_name):
    world, node = world_with_node_north_of_anchor()
    source = make_view_source("airsim", world, {"anchor": ANCHOR, "port": fake.port, "client": client_name,
                                                "settle_s": 0, "motion": "fly",
                                                "motion_params": {"max_yaw_rate_dps": 90.0}})
    try:
        views = source.images(node, [90.0, 180.0])
    finally:
        source.close()
    assert [int(v[0, 0, 0]) for v in views] == [45, 90]  # the fake's red channel is heading / 2
    assert fake.methods().count("moveToPosition") == 1 and fake.methods().count("rotateToYaw") == 2
    assert "simSetVehiclePose" not in fake.methods()


def test_empty_headings_touch_nothing(fake, client_name):
    world, node = world_with_node_north_of_anchor()
    source = make_view_source("airsim", world, {"anchor": ANCHOR, "port": fake.port, "client": client_name})
    assert source.images(node, []) == []
    source.close()
    assert fake.methods() == ["ping"]


@pytest.mark.parametrize("params, match", [({}, "needs anchor"),
                                           ({"anchor": {"lat": 43.0}}, "'lon'"),
                                           ({"anchor": ANCHOR, "settle_s": -1}, "settle_s"),
                                           ({"anchor": ANCHOR, "colour": "red"}, "bad parameters")])
def test_config_errors(params, match):
    world, _ = world_with_node_north_of_anchor()
    with pytest.raises(ConfigError, match=match):
        make_view_source("airsim", world, params)

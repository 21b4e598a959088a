"""The geographic anchor: lat/lon/alt <-> AirSim NED and compass <-> AirSim yaw."""
import math

import numpy as np
import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination, geodesic_m, initial_bearing_deg
from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
from cityseeker_ros.core.vehicles.airsim.frames import IDENTITY, quat_from_yaw, yaw_from_quat

MONACO = dict(lat=43.7384, lon=7.4246, alt=40.0)


@pytest.mark.parametrize("yaw_offset", [0.0, 37.5, -90.0])
@pytest.mark.parametrize("azimuth", [0.0, 45.0, 90.0, 135.0, 180.0, 225.0, 270.0, 315.0])
def test_round_trip_within_a_centimetre_at_two_km(azimuth, yaw_offset):
    anchor = Anchor(**MONACO, yaw_offset_deg=yaw_offset)
    lat, lon = destination(anchor.lat, anchor.lon, azimuth, 2000.0)
    xyz = anchor.geo_to_airsim(lat, lon, 52.5)
    assert xyz[2] == pytest.approx(-12.5)  # 12.5 m above the origin is z = -12.5 (down)
    back = anchor.airsim_to_geo(*xyz)
    assert geodesic_m(lat, lon, back[0], back[1]) < 0.01
    assert back[2] == pytest.approx(52.5)


@pytest.mark.parametrize("azimuth", [10.0, 100.0, 200.0, 300.0])
def test_plane_keeps_geodesic_distance_and_bearing(azimuth):
    anchor = Anchor(**MONACO)
    lat, lon = destination(anchor.lat, anchor.lon, azimuth, 1500.0)
    x, y, _ = anchor.geo_to_airsim(lat, lon, anchor.alt)
    assert math.hypot(x, y) == pytest.approx(geodesic_m(anchor.lat, anchor.lon, lat, lon), abs=0.01)
    assert math.degrees(math.atan2(y, x)) % 360 == pytest.approx(initial_bearing_deg(anchor.lat, anchor.lon, lat, lon),
                                                                  abs=1e-6)


def test_north_is_x_and_east_is_y_without_offset():
    anchor = Anchor(**MONACO)
    assert np.allclose(anchor.geo_to_airsim(*destination(anchor.lat, anchor.lon, 0.0, 100.0), 40.0), [100, 0, 0],
                       atol=0.01)
    assert np.allclose(anchor.geo_to_airsim(*destination(anchor.lat, anchor.lon, 90.0, 100.0), 40.0), [0, 100, 0],
                       atol=0.01)


def test_yaw_offset_turns_the_map():
    anchor = Anchor(**MONACO, yaw_offset_deg=90.0)  # the map's +x points east
    east = anchor.geo_to_airsim(*destination(anchor.lat, anchor.lon, 90.0, 100.0), 40.0)
    north = anchor.geo_to_airsim(*destination(anchor.lat, anchor.lon, 0.0, 100.0), 40.0)
    assert np.allclose(east, [100, 0, 0], atol=0.01)
    assert np.allclose(north, [0, -100, 0], atol=0.01)
    assert np.allclose(anchor.airsim_to_enu([100.0, 0.0, -2.0]), [100, 0, 2])
    assert anchor.heading_to_yaw(90.0) == pytest.approx(0.0)
    assert anchor.heading_to_yaw(0.0) == pytest.approx(-math.pi / 2)
    assert anchor.yaw_to_heading(0.0) == pytest.approx(90.0)
    # an AirSim-identity attitude faces the map's +x, i.e. east: ROS yaw 0
    assert yaw_from_quat(anchor.airsim_quat_to_enu(IDENTITY)) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("offset", [0.0, 12.0, -150.0])
@pytest.mark.parametrize("heading", [0.0, 45.0, 90.0, 180.0, 271.5, 359.9])
def test_heading_round_trips(heading, offset):
    anchor = Anchor(**MONACO, yaw_offset_deg=offset)
    assert anchor.yaw_to_heading(anchor.heading_to_yaw(heading)) == pytest.approx(heading)
    enu_yaw = yaw_from_quat(anchor.airsim_quat_to_enu(quat_from_yaw(anchor.heading_to_yaw(heading))))
    assert math.degrees(enu_yaw) % 360 == pytest.approx((90.0 - heading) % 360, abs=1e-9)


def test_from_config_accepts_ints_and_defaults():
    anchor = Anchor.from_config({"lat": 43, "lon": 7.5})
    assert anchor == Anchor(43.0, 7.5, 0.0, 0.0)
    assert Anchor.from_config({**MONACO, "yaw_offset_deg": -12}) == Anchor(**MONACO, yaw_offset_deg=-12.0)


@pytest.mark.parametrize("config, field", [
    ({"lon": 7.0}, "'lat'"),
    ({"lat": 43.0}, "'lon'"),
    ({"lat": "43.7", "lon": 7.0}, "'lat'"),
    ({"lat": 43.0, "lon": 7.0, "alt": None}, "'alt'"),
    ({"lat": 43.0, "lon": 7.0, "alt": float("nan")}, "'alt'"),
    ({"lat": 43.0, "lon": 7.0, "yaw_offset_deg": True}, "'yaw_offset_deg'"),
    ({"lat": 95.0, "lon": 7.0}, "'lat'"),
    ({"lat": 43.0, "lon": 181.0}, "'lon'"),
    ({"lat": 43.0, "lon": 7.0, "altitude": 3}, "altitude"),
    ([43.0, 7.0], "mapping"),
])
def test_from_config_names_the_bad_field(config, field):
    with pytest.raises(ConfigError, match=field):
        Anchor.from_config(config)

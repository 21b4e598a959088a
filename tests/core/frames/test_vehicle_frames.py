import math

import pytest

from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
from cityseeker_ros.core.frames.transforms import yaw_quaternion
from cityseeker_ros.core.frames.vehicle_frames import Fix, FrameNames, OdomPose, VehicleFrames

ORIGIN = GeoOrigin(43.7384, 7.4246)
M_PER_DEG_LAT = 111_132.0  # near 43.7° N, within 0.1 %


def test_bridge_state_puts_base_link_at_the_fix_and_keeps_odom_continuous():
    frames = VehicleFrames(MapFrame(ORIGIN))
    # the link's odometry origin (home) lies 100 m north of the world's origin
    home_lat = ORIGIN.lat + 100.0 / M_PER_DEG_LAT
    frames.on_odometry(OdomPose(1, (0.0, 0.0, 0.0), yaw_quaternion(0.3)))
    assert frames.map_to_odom is None  # no fix of that instant yet
    frames.on_fix(Fix(1, home_lat, ORIGIN.lon))
    base = frames.base_in_map()
    assert base.translation[1] == pytest.approx(100.0, rel=2e-3) and abs(base.translation[0]) < 1e-6
    assert base.yaw == pytest.approx(0.3)  # the odometry's heading is kept
    # 10 m east in odometry, and the fix agrees
    frames.on_odometry(OdomPose(2, (10.0, 0.0, 2.0), yaw_quaternion(0.0)))
    east_lon = ORIGIN.lon + 10.0 / (M_PER_DEG_LAT * math.cos(math.radians(ORIGIN.lat)))
    frames.on_fix(Fix(2, home_lat, east_lon))
    base = frames.base_in_map()
    assert base.translation == pytest.approx((10.0, 100.0, 2.0), abs=0.2)
    assert frames.odom_to_base.translation == (10.0, 0.0, 2.0)  # odom -> base_link is the odometry as it is
    assert frames.map_to_odom.translation == pytest.approx((0.0, 100.0, 0.0), abs=0.2)


def test_drift_moves_map_to_odom_not_odom_to_base_link():
    frames = VehicleFrames(MapFrame(ORIGIN))
    frames.on_odometry(OdomPose(5, (50.0, 0.0, 0.0), yaw_quaternion(math.pi / 2)))
    frames.on_fix(Fix(5, ORIGIN.lat, ORIGIN.lon))  # the fix says: at the origin
    base = frames.base_in_map()
    assert base.translation == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)
    assert frames.odom_to_base.translation == (50.0, 0.0, 0.0)
    assert frames.map_to_odom.apply((50.0, 0.0, 0.0)) == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)


def test_a_fix_of_another_instant_or_without_a_position_changes_nothing():
    frames = VehicleFrames(MapFrame(ORIGIN))
    frames.on_odometry(OdomPose(10, (0.0, 0.0, 0.0), yaw_quaternion(0.0)))
    assert frames.on_fix(Fix(11, ORIGIN.lat, ORIGIN.lon)) is None
    assert frames.on_fix(Fix(10, math.nan, math.nan)) is None
    assert frames.map_to_odom is None and frames.base_in_map() is None
    tolerant = VehicleFrames(MapFrame(ORIGIN), match_tolerance_ns=5)
    tolerant.on_odometry(OdomPose(10, (0.0, 0.0, 0.0), yaw_quaternion(0.0)))
    assert tolerant.on_fix(Fix(14, ORIGIN.lat, ORIGIN.lon)) is not None


def test_replay_pose_is_in_map_and_odom_coincides():
    frames = VehicleFrames(MapFrame(ORIGIN), FrameNames("world", "odom", "walker"))
    map_to_odom, odom_to_base = frames.on_map_pose(7, 12.0, -4.0, 1.0)
    assert map_to_odom.translation == (0.0, 0.0, 0.0) and map_to_odom.parent == "world"
    assert odom_to_base.child == "walker"
    assert frames.base_in_map().translation == (12.0, -4.0, 0.0)


def test_frame_names_must_differ():
    with pytest.raises(ValueError, match="three different"):
        FrameNames("map", "map", "base_link")

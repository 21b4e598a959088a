"""REP-105 frames of a run without ROS: the world's geographic origin as the ENU `map` frame,
`odom` and `base_link` from a vehicle's state or a replay's pose, the bounded path history, the
static camera mounts, and the street graph and target area as geometry in `map`. The ROS side
(nodes/frames.py) only turns these records into messages."""
from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
from cityseeker_ros.core.frames.transforms import Transform, TransformTree
from cityseeker_ros.core.frames.vehicle_frames import VehicleFrames

__all__ = ["GeoOrigin", "MapFrame", "Transform", "TransformTree", "VehicleFrames"]

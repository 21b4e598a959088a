"""Live cameras for camera_ingest: frame sources by name and the arrival logic that turns a
localised vehicle into one view set per node visit. rclpy-free; importing this package
registers every built-in source (client libraries load only when a source is made)."""
from cityseeker_ros.core.sensing.camera import equirect, rig, rosbag, topic, video, world
from cityseeker_ros.core.sensing.camera.equirect import EquirectFrameSource
from cityseeker_ros.core.sensing.camera.rig import RigFrameSource
from cityseeker_ros.core.sensing.camera.rosbag import RosbagFrameSource
from cityseeker_ros.core.sensing.camera.source import (
    FRAME_SOURCES,
    CameraSource,
    FrameError,
    FrameSource,
    make_frame_source,
)
from cityseeker_ros.core.sensing.camera.topic import TopicFrameSource
from cityseeker_ros.core.sensing.camera.video import VideoFrameSource
from cityseeker_ros.core.sensing.camera.view_set import ArrivalTrigger, RunTask, ViewSetBuilder
from cityseeker_ros.core.sensing.camera.world import AirSimFrameSource, ReplayFrameSource

__all__ = ["FRAME_SOURCES", "AirSimFrameSource", "ArrivalTrigger", "CameraSource", "EquirectFrameSource",
           "FrameError", "FrameSource", "ReplayFrameSource", "RigFrameSource", "RosbagFrameSource", "RunTask",
           "TopicFrameSource", "VideoFrameSource", "ViewSetBuilder", "equirect", "make_frame_source", "rig",
           "rosbag", "topic", "video", "world"]

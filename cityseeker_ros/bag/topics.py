"""What a bag of the stack holds: the default topics, their message types, and the QoS kind each
is published with (cityseeker_ros.ros.qos), kept here without rclpy so evaluators and the CLI
can read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

QosKind = Literal["state", "images", "diagnostics", "camera"]

STRING = "std_msgs/msg/String"
COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"
CLOCK_TOPIC, CLOCK_TYPE = "/clock", "rosgraph_msgs/msg/Clock"

REPLAY_EPISODE = "/streetview_replay/episode"
REPLAY_VIEWS = "/streetview_replay/views"
REPLAY_IMAGES = "/streetview_replay/images"
SUPERVISOR_VIEWS = "/supervisor/views"
DECISIONS = "/vlm_decision/decision"


@dataclass(frozen=True)
class TopicSpec:
    name: str
    msgtype: str  # ROS 2 form: pkg/msg/Type
    qos: QosKind = "state"


# Everything a benchmark or live run publishes that an evaluation needs; /diagnostics is left
# out (name it with --topics to record it), /tf is not used by the stack.
DEFAULT_TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(REPLAY_VIEWS, STRING),
    TopicSpec(REPLAY_IMAGES, COMPRESSED_IMAGE, "images"),
    TopicSpec(REPLAY_EPISODE, STRING),
    TopicSpec("/streetview_replay/fix", "sensor_msgs/msg/NavSatFix"),
    TopicSpec("/streetview_replay/pose", "geometry_msgs/msg/PoseStamped"),
    TopicSpec("/streetview_replay/path", "nav_msgs/msg/Path"),
    TopicSpec("/streetview_replay/action", STRING),
    TopicSpec(DECISIONS, STRING),
    TopicSpec(SUPERVISOR_VIEWS, STRING),
    TopicSpec("/supervisor/action", STRING),
    TopicSpec("/supervisor/command", STRING),
    TopicSpec("/supervisor/guidance", STRING),
    TopicSpec("/supervisor/episode", STRING),
    TopicSpec("/supervisor/outcome", STRING),
)

# Topics outside the default list whose type and QoS are known anyway.
KNOWN_TOPICS: dict[str, TopicSpec] = {s.name: s for s in (
    *DEFAULT_TOPICS,
    TopicSpec("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", "diagnostics"),
    TopicSpec("/supervisor/heartbeat", "std_msgs/msg/Header"),
    TopicSpec("/graph_localiser/location", STRING),
    TopicSpec("/camera_ingest/views", STRING),
    TopicSpec("/camera_ingest/images", COMPRESSED_IMAGE, "images"),
    TopicSpec("/airsim_bridge/fix", "sensor_msgs/msg/NavSatFix"),
    TopicSpec("/airsim_bridge/odom", "nav_msgs/msg/Odometry"),
    TopicSpec("/airsim_bridge/safety", STRING),
)}


def topic_spec(name: str, msgtype: Optional[str] = None) -> Optional[TopicSpec]:
    """The spec of `name`: the known one (with `msgtype` overriding its type), one of the given
    type with STATE QoS, or None when the type must come from the graph."""
    known = KNOWN_TOPICS.get(name)
    if known is not None:
        return known if msgtype is None else TopicSpec(name, msgtype, known.qos)
    return TopicSpec(name, msgtype) if msgtype else None


def normalise_topic(name: str) -> str:
    """Absolute topic names only: a bag has no namespace to resolve relative ones against."""
    name = name.strip()
    return name if name.startswith("/") else f"/{name}"

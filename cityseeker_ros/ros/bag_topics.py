"""What a bag of the stack holds: the default topics, their message types, and the QoS kind each
is published with (cityseeker_ros.ros.qos), kept here without rclpy so evaluators and the CLI
can read it."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Literal, Optional

QosKind = Literal["state", "images", "diagnostics", "camera"]

STRING = "std_msgs/msg/String"  # bags recorded before the typed interfaces: JSON records
CI = "cityseeker_interfaces/msg/"
VIEW_SET, DECISION, EPISODE = CI + "ViewSet", CI + "Decision", CI + "Episode"
DECIDE_GOAL = "cityseeker_interfaces/action/Decide_Goal"
IMAGE, COMPRESSED_IMAGE = "sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage"
CLOCK_TOPIC, CLOCK_TYPE = "/clock", "rosgraph_msgs/msg/Clock"

REPLAY_EPISODE = "/streetview_replay/episode"
REPLAY_VIEWS = "/streetview_replay/views"
REPLAY_IMAGES = "/streetview_replay/images"  # raw Image; png/jpeg on REPLAY_IMAGES + "/compressed"
SUPERVISOR_VIEWS = "/supervisor/decide_goal"  # each Decide goal sent: a view set with its prompt context
DECISIONS = "/decision/decision"
FLIGHT_RULE_VIOLATIONS = "/vehicle_bridge/flight_rule_violations"
TF_TOPICS, TF_MESSAGE = ("/tf", "/tf_static"), "tf2_msgs/msg/TFMessage"
DIAGNOSTIC_ARRAY = "diagnostic_msgs/msg/DiagnosticArray"


@dataclass(frozen=True)
class TopicSpec:
    name: str
    msgtype: str  # ROS 2 form: pkg/msg/Type
    qos: QosKind = "state"


# Everything a benchmark or live run publishes that an evaluation needs, and what a viewer needs to
# play it back (the frames node's REP-105 frames: nodes/frames.py); /diagnostics is left out (name it
# with --topics to record it). /tf and /tf_static only where tf2_msgs is installed (a ROS install's,
# or vendor/tf2_msgs built by `pip install -e .`): a recorder cannot subscribe a type it has no class for.
DEFAULT_TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(REPLAY_VIEWS, VIEW_SET),
    TopicSpec(REPLAY_IMAGES, IMAGE, "images"),
    TopicSpec(f"{REPLAY_IMAGES}/compressed", COMPRESSED_IMAGE, "images"),
    TopicSpec(REPLAY_EPISODE, EPISODE),
    TopicSpec("/streetview_replay/fix", "sensor_msgs/msg/NavSatFix"),
    TopicSpec("/streetview_replay/pose", "geometry_msgs/msg/PoseStamped"),
    TopicSpec("/streetview_replay/path", "nav_msgs/msg/Path"),
    TopicSpec("/streetview_replay/action", CI + "WorldAction"),
    TopicSpec(DECISIONS, DECISION),
    TopicSpec(SUPERVISOR_VIEWS, DECIDE_GOAL),
    TopicSpec("/supervisor/command", CI + "MotionCommand"),
    TopicSpec("/supervisor/guidance", CI + "Guidance"),
    TopicSpec("/supervisor/episode", EPISODE),
    TopicSpec("/supervisor/outcome", CI + "Outcome"),
    # each flight-rule violation the vehicle bridge's monitor found (nodes/vehicle_bridge.py)
    TopicSpec(FLIGHT_RULE_VIOLATIONS, DIAGNOSTIC_ARRAY),
    TopicSpec("/frames/odom", "nav_msgs/msg/Odometry"),
    TopicSpec("/frames/path", "nav_msgs/msg/Path"),
    TopicSpec("/frames/markers", "visualization_msgs/msg/MarkerArray"),
    TopicSpec("/frames/origin", CI + "GeoPoint"),
    *((TopicSpec(TF_TOPICS[0], TF_MESSAGE), TopicSpec(TF_TOPICS[1], TF_MESSAGE))
      if importlib.util.find_spec("tf2_msgs") is not None else ()),
)

# Topics outside the default list whose type and QoS are known anyway.
KNOWN_TOPICS: dict[str, TopicSpec] = {s.name: s for s in (
    *DEFAULT_TOPICS,
    TopicSpec("/diagnostics", DIAGNOSTIC_ARRAY, "diagnostics"),
    TopicSpec("/supervisor/heartbeat", "std_msgs/msg/Header"),
    TopicSpec("/supervisor/status", CI + "SupervisorStatus"),
    TopicSpec("/graph_localiser/location", CI + "Location"),
    TopicSpec("/camera_ingest/views", VIEW_SET),
    TopicSpec("/camera_ingest/images", IMAGE, "images"),
    TopicSpec("/camera_ingest/images/compressed", COMPRESSED_IMAGE, "images"),
    TopicSpec("/airsim_bridge/fix", "sensor_msgs/msg/NavSatFix"),
    TopicSpec("/airsim_bridge/odom", "nav_msgs/msg/Odometry"),
    TopicSpec("/airsim_bridge/safety", CI + "SafetyStatus"),
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

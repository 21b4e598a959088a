"""A drone in AirSim walks the street graph: the same decision and supervisor nodes as the
benchmark, with the vehicle behind a safety gate.

    ros2 launch cityseeker_ros airsim.launch.py data:=worlds/monaco host:=127.0.0.1 \
        anchor:='{"lat": 43.7384, "lon": 7.4246}' safety_config:=config/safety.yaml motion:=fly policy:=vlm ...

airsim_bridge turns /supervisor/command goals into AirSim motion (teleport or fly) only while
the supervisor's heartbeat is alive, inside the geofence and limits of `safety_config`, and
holds on a lost decision or /estop; graph_localiser snaps its fix to the graph; camera_ingest
turns the vehicle's camera (never the vehicle) for one view per walkable direction. sim/airsim/settings.json is the
matching camera setup.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = {
    "data": ("", "world folder whose street graph the drone flies"),
    "out": ("runs/airsim", "output folder of episodes.jsonl / summary.json"),
    "host": ("127.0.0.1", "AirSim RPC host"),
    "port": ("41451", "AirSim RPC port"),
    "anchor": ("", "JSON world-to-AirSim anchor: the world lat/lon of AirSim's origin"),
    "motion": ("teleport", "teleport (reproducible) or fly (moveToPosition under the limits)"),
    "safety_config": ("", "YAML safety config: geofence, limits, watchdog, heartbeat (required to fly)"),
    "altitude_m": ("0.0", "goal altitude above home"),
    "camera_params": ("{}", "JSON settings of the airsim frame source (host, port, camera, anchor...)"),
    "policy": ("random", "policy: random, ocr-embed, vlm..."),
    "policy_params": ("{}", "JSON object of policy settings"),
    "backend": ("", "VLM backend"),
    "model": ("", "model folder or served model name"),
    "strategies": ("[]", "JSON list of BCR strategies"),
    "limit": ("1", "tasks to fly, in dataset order"),
}


def config(name):
    return os.path.join(get_package_share_directory("cityseeker_ros"), "config", name)


def text(name):
    return ParameterValue(LaunchConfiguration(name), value_type=str)


def number(name, kind=int):
    return ParameterValue(LaunchConfiguration(name), value_type=kind)


def generate_launch_description():
    run = {"data": text("data"), "policy": text("policy"), "policy_params": text("policy_params"),
           "backend": text("backend"), "model": text("model"), "strategies": text("strategies"),
           "limit": number("limit")}
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=doc)
          for name, (default, doc) in ARGUMENTS.items()),
        Node(package="cityseeker_ros", executable="airsim_bridge", name="airsim_bridge",
             parameters=[config("airsim_bridge.yaml"),
                         {"host": text("host"), "port": number("port"), "anchor": text("anchor"),
                          "motion": text("motion"), "safety_config": text("safety_config")}],
             remappings=[("command", "/supervisor/command"), ("heartbeat", "/supervisor/heartbeat")]),
        Node(package="cityseeker_ros", executable="graph_localiser", name="graph_localiser",
             parameters=[config("graph_localiser.yaml"), {"data": text("data")}],
             remappings=[("fix", "/airsim_bridge/fix")]),
        Node(package="cityseeker_ros", executable="camera_ingest", name="camera_ingest",
             parameters=[config("camera_ingest.yaml"),
                         {"data": text("data"), "source": "airsim", "source_params": text("camera_params")}],
             remappings=[("location", "/graph_localiser/location"), ("episode", "/supervisor/episode")]),
        Node(package="cityseeker_ros", executable="vlm_decision", name="vlm_decision", respawn=True,
             parameters=[config("vlm_decision.yaml"),
                         {"policy": text("policy"), "policy_params": text("policy_params"),
                          "backend": text("backend"), "model": text("model")}],
             remappings=[("views", "/supervisor/views"), ("images", "/camera_ingest/images")]),
        Node(package="cityseeker_ros", executable="supervisor", name="supervisor",
             parameters=[config("supervisor.yaml"),
                         {**run, "mode": "live", "world_node": "/camera_ingest",
                          "altitude_m": number("altitude_m", float)}]),
        Node(package="cityseeker_ros", executable="evaluator", name="evaluator", respawn=True,
             parameters=[config("evaluator.yaml"), {**run, "out": text("out")}]),
    ])

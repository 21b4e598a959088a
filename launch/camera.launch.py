"""A walking user with a camera (a phone, a 360° camera, a video file) and AR guidance.

    ros2 launch cityseeker_ros camera.launch.py data:=worlds/monaco fix_topic:=/phone/fix \
        source:=equirect source_params:='{"source": "video", "params": {"uri": "rtsp://phone/live"}}' \
        policy:=ocr-embed

graph_localiser snaps the GNSS fix to the street graph, camera_ingest cuts one view per
walkable direction at every node the user reaches, vlm_decision chooses, and the supervisor
(live mode) publishes /supervisor/guidance (direction relative to the device heading, distance
to the next corner, the reason) for the AR device, and records each task like a benchmark.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = {
    "data": ("", "world or CitySeeker folder whose street graph the user walks"),
    "out": ("runs/camera", "output folder of episodes.jsonl / summary.json"),
    "fix_topic": ("/fix", "the device's sensor_msgs/NavSatFix"),
    "source": ("video", "frame source: video, equirect, rig, replay, rosbag, airsim"),
    "source_params": ("{}", "JSON object of the frame source's settings"),
    "policy": ("ocr-embed", "policy: ocr-embed, vlm, random..."),
    "policy_params": ("{}", "JSON object of policy settings"),
    "backend": ("", "VLM backend: transformers or openai"),
    "model": ("", "model folder or served model name"),
    "strategies": ("[]", "JSON list of BCR strategies"),
    "limit": ("1", "tasks from the dataset to walk, in order"),
    "max_steps": ("35", "step budget"),
    "decision_timeout_s": ("10.0", "no decision within this long: hold and say why"),
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
           "limit": number("limit"), "max_steps": number("max_steps")}
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=doc)
          for name, (default, doc) in ARGUMENTS.items()),
        Node(package="cityseeker_ros", executable="graph_localiser", name="graph_localiser",
             parameters=[config("graph_localiser.yaml"), {"data": text("data")}],
             remappings=[("fix", LaunchConfiguration("fix_topic"))]),
        Node(package="cityseeker_ros", executable="camera_ingest", name="camera_ingest",
             parameters=[config("camera_ingest.yaml"),
                         {"data": text("data"), "source": text("source"), "source_params": text("source_params"),
                          "max_steps": number("max_steps")}],
             remappings=[("location", "/graph_localiser/location"), ("episode", "/supervisor/episode")]),
        Node(package="cityseeker_ros", executable="vlm_decision", name="vlm_decision", respawn=True,
             parameters=[config("vlm_decision.yaml"),
                         {"policy": text("policy"), "policy_params": text("policy_params"),
                          "backend": text("backend"), "model": text("model")}],
             remappings=[("views", "/supervisor/views"), ("images", "/camera_ingest/images")]),
        Node(package="cityseeker_ros", executable="supervisor", name="supervisor",
             parameters=[config("supervisor.yaml"),
                         {**run, "mode": "live", "world_node": "/camera_ingest",
                          "decision_timeout_s": number("decision_timeout_s", float)}]),
        Node(package="cityseeker_ros", executable="evaluator", name="evaluator", respawn=True,
             parameters=[config("evaluator.yaml"), {**run, "out": text("out")}]),
    ])

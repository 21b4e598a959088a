"""The benchmark world over ROS 2: streetview_replay, vlm_decision, supervisor and evaluator.

    ros2 launch cityseeker_ros benchmark.launch.py data:=/data/HongKong_6 out:=/runs/hk6 \
        policy:=vlm backend:=openai model:=qwen2.5-vl-7b policy_params:='{"base_url": "http://vllm:8000/v1"}' \
        strategies:='["B1", "R3"]' seeds:='[0, 1, 2]'

Writes OUT/episodes.jsonl and OUT/summary.json exactly as `cityseeker benchmark` does;
`cityseeker run benchmark` starts the same nodes where `ros2 launch` is not installed.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = {
    "data": ("", "dataset folder (a CitySeeker city or a world built by `cityseeker world build`)"),
    "dataset": ("auto", "dataset format: auto, cityseeker or world"),
    "out": ("runs/ros", "output folder of episodes.jsonl / summary.json"),
    "policy": ("random", "policy: random, forward, ocr-embed, vlm, oracle..."),
    "policy_params": ("{}", "JSON object of policy settings"),
    "backend": ("", "VLM backend: transformers or openai"),
    "model": ("", "model folder or served model name"),
    "strategies": ("[]", 'JSON list of BCR strategies, e.g. ["B1", "oracle:B2", "R3"]'),
    "rounds": ("1", "rounds per episode"),
    "seeds": ("[0]", "seeds, a list"),
    "limit": ("0", "first N episodes only (0: all)"),
    "max_steps": ("35", "step budget"),
    "views": ("", "view source: rendered, panorama-folder, airsim ('' headings only)"),
    "view_params": ("{}", "JSON object of view source settings"),
    "memory": ("", "SQLite memory of a supervised run ('' with strategies: set one)"),
}


def config(name):
    return os.path.join(get_package_share_directory("cityseeker_ros"), "config", name)


def text(name):
    return ParameterValue(LaunchConfiguration(name), value_type=str)


def number(name):
    return ParameterValue(LaunchConfiguration(name), value_type=int)


def generate_launch_description():
    run = {"data": text("data"), "dataset": text("dataset"), "policy": text("policy"),
           "policy_params": text("policy_params"), "backend": text("backend"), "model": text("model"),
           "strategies": text("strategies"), "rounds": number("rounds"), "seeds": LaunchConfiguration("seeds"),
           "limit": number("limit"), "max_steps": number("max_steps"), "views": text("views"),
           "view_params": text("view_params"), "memory": text("memory")}
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=doc)
          for name, (default, doc) in ARGUMENTS.items()),
        Node(package="cityseeker_ros", executable="streetview_replay", name="streetview_replay",
             parameters=[config("streetview_replay.yaml"),
                         {"data": text("data"), "dataset": text("dataset"), "max_steps": number("max_steps"),
                          "views": text("views"), "view_params": text("view_params")}]),
        Node(package="cityseeker_ros", executable="vlm_decision", name="vlm_decision", respawn=True,
             parameters=[config("vlm_decision.yaml"),
                         {"policy": text("policy"), "policy_params": text("policy_params"),
                          "backend": text("backend"), "model": text("model"), "data": text("data")}],
             remappings=[("views", "/supervisor/views"), ("images", "/streetview_replay/images")]),
        Node(package="cityseeker_ros", executable="supervisor", name="supervisor",
             parameters=[config("supervisor.yaml"), run]),
        Node(package="cityseeker_ros", executable="evaluator", name="evaluator", respawn=True,
             parameters=[config("evaluator.yaml"), {**run, "out": text("out")}]),
    ])

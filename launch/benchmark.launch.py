"""The benchmark world over ROS 2: streetview_replay, decision, supervisor and evaluator.

    ros2 launch cityseeker_ros benchmark.launch.py data:=/data/HongKong_6 out:=/runs/hk6 \
        policy:=vlm backend:=openai model:=qwen2.5-vl-7b policy_params:='{"base_url": "http://vllm:8000/v1"}' \
        strategies:='["B1", "R3"]' seeds:=3

Writes OUT/episodes.jsonl and OUT/summary.json exactly as `cityseeker benchmark` does;
`cityseeker run benchmark` starts the same nodes where `ros2 launch` is not installed. The
arguments are the run settings of cityseeker_ros/ros/run_config.py (`ros2 launch ... --show-args`).
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from cityseeker_ros.ros import launch_actions

KIND = "benchmark"


def generate_launch_description():
    return LaunchDescription([*launch_actions.arguments(KIND), OpaqueFunction(function=nodes)])


def nodes(context):
    """The node set `cityseeker run benchmark` starts, from these launch arguments."""
    return [launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context)]

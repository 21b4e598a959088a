"""Replay a recorded run through the stack and decide every recorded step again.

    ros2 launch cityseeker_ros bag_eval.launch.py bag:=runs/hk6.bag out_bag:=runs/hk6-ocr.bag policy:=ocr-embed

The player publishes the recorded view sets and images (with /clock), a fresh decision
node with `policy` answers each, and the recorder writes its decisions beside the replayed
topics (`cityseeker run bag` starts the same processes). Then, without ROS:

    cityseeker bag eval runs/hk6.bag --data DATA                       # re-score the recorded run
    cityseeker bag eval runs/hk6.bag --data DATA --redecide ocr-embed  # agreement per step
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from cityseeker_ros.ros import launch_actions

KIND = "bag"


def generate_launch_description():
    return LaunchDescription([*launch_actions.arguments(KIND), OpaqueFunction(function=nodes)])


def nodes(context):
    """The node set `cityseeker run bag` starts, from these launch arguments."""
    return [launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context)]

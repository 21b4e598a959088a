"""Seek at run time: the camera node set with the supervisor serving the Seek action.

    ros2 launch cityseeker_ros seek.launch.py data:=worlds/monaco out:=runs/seek policy:=ocr-embed \
        source:=replay walker:=sim
    ros2 action send_goal /supervisor/seek cityseeker_interfaces/action/Seek "{need: 'I am thirsty'}" --feedback

The nodes of camera.launch.py (the arguments are its run settings, cityseeker_ros/ros/run_config.py)
with the supervisor in mode seek and no evaluator (node_sets.seek_nodes): it runs no dataset
task, each Seek goal is a need sought from where the walker or device stands (docs/seek.md).
`walker:=sim` adds the simulated walker behind the vehicle bridge (with the safety file, if given);
without it the fixes come from the device on fix_topic.
`cityseeker seek` starts the same nodes and sends one goal.
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from cityseeker_ros.ros import launch_actions, node_sets, run_config

KIND = "camera"


def generate_launch_description():
    return LaunchDescription([*launch_actions.arguments(KIND), OpaqueFunction(function=nodes)])


def nodes(context):
    """The node set `cityseeker seek` starts, from these launch arguments."""
    run = run_config.from_launch(KIND, dict(context.launch_configurations))
    return [launch_actions.action(spec) for spec in node_sets.seek_nodes(run)]

"""A walking user with a camera (a phone, a 360° camera, a video file) and AR guidance.

    ros2 launch cityseeker_ros camera.launch.py data:=worlds/monaco out:=runs/walk fix_topic:=/phone/fix \
        source:=equirect source_params:='{"source": "video", "params": {"uri": "rtsp://phone/live"}}' \
        policy:=ocr-embed limit:=1

graph_localiser snaps the GNSS fix to the street graph, camera_ingest cuts one view per
walkable direction at every node the user reaches, decision chooses, and the supervisor
(live mode) publishes /supervisor/guidance (direction relative to the device heading, distance
to the next corner, the reason) for the AR device, and records each task like a benchmark.
`cityseeker run camera` starts the same nodes; the arguments are the run settings of
cityseeker_ros/ros/run_config.py.
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from cityseeker_ros.ros import launch_actions

KIND = "camera"


def generate_launch_description():
    return LaunchDescription([*launch_actions.arguments(KIND), OpaqueFunction(function=nodes)])


def nodes(context):
    """The node set `cityseeker run camera` starts, from these launch arguments."""
    return [launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context)]

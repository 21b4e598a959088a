"""A drone in AirSim walks the street graph: the same decision and supervisor nodes as the
benchmark, with the vehicle behind a safety gate.

    ros2 launch cityseeker_ros airsim.launch.py data:=worlds/monaco out:=runs/drone host:=127.0.0.1 \
        anchor:='{"lat": 43.7384, "lon": 7.4246}' safety_config:=config/safety.yaml motion:=fly policy:=vlm ...

airsim_bridge turns /supervisor/command goals into AirSim motion (teleport or fly) only while
the supervisor's heartbeat is alive, inside the geofence and limits of `safety_config`, and
holds on a lost decision or /estop; graph_localiser snaps its fix to the graph; camera_ingest
turns the vehicle's camera (never the vehicle) for one view per walkable direction.
sim/airsim/settings.json is the matching camera setup. `cityseeker run airsim` starts the same
nodes; the arguments are the run settings of cityseeker_ros/ros/run_config.py.
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from cityseeker_ros.ros import launch_actions

KIND = "airsim"


def generate_launch_description():
    return LaunchDescription([*launch_actions.arguments(KIND), OpaqueFunction(function=nodes)])


def nodes(context):
    """The node set `cityseeker run airsim` starts, from these launch arguments."""
    return [launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context)]

"""A vehicle walks the street graph: the same decision and supervisor nodes as the benchmark, with
the vehicle behind its safety gate, whatever its link (docs/vehicles.md).

    ros2 launch cityseeker_ros vehicle.launch.py data:=worlds/monaco out:=runs/drone policy:=ocr-embed \
        link:=mavlink connection:=udp://127.0.0.1:14540 safety_config:=config/safety.yaml source:=replay
    ros2 launch cityseeker_ros vehicle.launch.py data:=worlds/monaco out:=runs/drone policy:=vlm link:=airsim \
        link_params:='{"anchor": {"lat": 43.7384, "lon": 7.4246}, "motion": "fly"}' safety_config:=config/safety.yaml

vehicle_bridge turns /supervisor/command goals into the link's motion only while the supervisor's
heartbeat is alive, inside the geofence and limits of `safety_config`, and holds on a lost
decision, a lost link or /estop; graph_localiser snaps its fix to the graph; camera_ingest takes
the views (the airsim link: turns the vehicle's camera, never the vehicle). `cityseeker run
vehicle` starts the same nodes; the arguments are the run settings of cityseeker_ros/ros/run_config.py.
"""
from launch import LaunchDescription
from launch.actions import OpaqueFunction

from cityseeker_ros.ros import launch_actions

KIND = "vehicle"


def generate_launch_description():
    return LaunchDescription([*launch_actions.arguments(KIND), OpaqueFunction(function=nodes)])


def nodes(context):
    """The node set `cityseeker run vehicle` starts, from these launch arguments."""
    return [launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context)]

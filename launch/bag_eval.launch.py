"""Replay a recorded run through the stack and decide every recorded step again.

    ros2 launch cityseeker_ros bag_eval.launch.py bag:=runs/hk6.bag out_bag:=runs/hk6-ocr.bag policy:=ocr-embed

The player publishes the recorded view sets and images (with /clock), a fresh vlm_decision
node with `policy` answers each, and the recorder writes its decisions beside the replayed
topics. Then, without ROS:

    cityseeker bag eval runs/hk6.bag --data DATA                       # re-score the recorded run
    cityseeker bag eval runs/hk6.bag --data DATA --redecide ocr-embed  # agreement per step
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = {
    "bag": ("", "the recorded bag folder"),
    "out_bag": ("", "bag to record the new decisions into"),
    "rate": ("1.0", "playback rate: 1 recorded timing, higher faster, 0 as fast as acknowledged"),
    "views_topic": ("/supervisor/views", "recorded view sets to decide: /supervisor/views (with BCR context) "
                    "or /streetview_replay/views"),
    "images_topic": ("/streetview_replay/images", "recorded images of those view sets"),
    "policy": ("random", "the policy that decides again"),
    "policy_params": ("{}", "JSON object of policy settings"),
    "backend": ("", "VLM backend"),
    "model": ("", "model folder or served model name"),
}


def text(name):
    return ParameterValue(LaunchConfiguration(name), value_type=str)


def generate_launch_description():
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=doc)
          for name, (default, doc) in ARGUMENTS.items()),
        Node(package="cityseeker_ros", executable="vlm_decision", name="vlm_decision",
             parameters=[{"policy": text("policy"), "policy_params": text("policy_params"),
                          "backend": text("backend"), "model": text("model"), "autostart": True}],
             remappings=[("views", LaunchConfiguration("views_topic")),
                         ("images", LaunchConfiguration("images_topic"))]),
        ExecuteProcess(cmd=["python3", "-m", "cityseeker_ros.bag.recorder", LaunchConfiguration("out_bag"),
                            "--topics", "/vlm_decision/decision", LaunchConfiguration("views_topic"),
                            LaunchConfiguration("images_topic")], output="screen"),
        ExecuteProcess(cmd=["python3", "-m", "cityseeker_ros.bag.player", LaunchConfiguration("bag"),
                            "--rate", LaunchConfiguration("rate"), "--clock",
                            "--topics", LaunchConfiguration("views_topic"), LaunchConfiguration("images_topic")],
                       output="screen"),
    ])

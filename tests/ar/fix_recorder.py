"""Benchmark helper, run as its own ROS process: `python -m tests.ar.fix_recorder TOPIC`.

Prints each NavSatFix on TOPIC as one line, "MONOTONIC LAT LON", the moment it arrives: the
console's e-stop benchmark (benchmarks/console_estop.py) reads when the simulated walker behind
the vehicle bridge stopped moving from these, in the same monotonic clock as the press (Linux's
CLOCK_MONOTONIC is one clock for every process)."""
from __future__ import annotations

import sys
import time

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix

from cityseeker_ros.ros import qos


def main() -> None:
    rclpy.init()
    node = Node("console_fix_recorder")

    def on_fix(msg: NavSatFix) -> None:
        print(f"{time.monotonic():.6f} {msg.latitude:.9f} {msg.longitude:.9f}", flush=True)

    node.create_subscription(NavSatFix, sys.argv[1], on_fix, qos.STATE)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.try_shutdown()


if __name__ == "__main__":
    main()

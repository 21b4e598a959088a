"""What anyone on the DDS domain reads of a node's parameter: `python -m tests.ros.parameter_query
NODE NAME` prints the string value as JSON (the node's get_parameters service, as `ros2 param get`)."""
from __future__ import annotations

import json
import sys

import rclpy
from rcl_interfaces.srv import GetParameters


def main(node_name: str, parameter: str) -> int:
    rclpy.init()
    node = rclpy.create_node("parameter_query")
    try:
        client = node.create_client(GetParameters, f"{node_name}/get_parameters")
        if not client.wait_for_service(timeout_sec=30.0):
            print(f"no {node_name}/get_parameters service", file=sys.stderr)
            return 1
        future = client.call_async(GetParameters.Request(names=[parameter]))
        rclpy.spin_until_future_complete(node, future, timeout_sec=30.0)
        if future.result() is None:
            print("no answer", file=sys.stderr)
            return 1
        print(json.dumps(future.result().values[0].string_value))
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

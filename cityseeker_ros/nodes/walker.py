"""The walker node: a simulated walking user with a GNSS receiver (core.vehicles.sim.SimulatedWalker), so
the camera and Seek paths run end to end with no hardware.

It publishes a NavSatFix on `fix` at `fix_rate_hz` and takes the supervisor's motion commands on
`command` (remap it to /supervisor/command): it teleports (speed_m_s 0) or walks to each goal and
stops where it stands on a hold. It starts at `start` ("lat,lon"), at `start_node`, or at the
first episode's start of the world in `data`.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.sim import SimulatedWalker
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.convert_vehicle import command_from_msg
from cityseeker_ros.ros.parameters import WALKER, declare, world_parameter
from cityseeker_ros.ros.schema import CommandMsg
from cityseeker_ros.ros.spin import spin

# The supervisor's ~/command: its message type and how a core Command is read from it (one place
# to change when that topic's type does).
COMMAND_TYPE = typed.msg_type(CommandMsg)


def read_command(msg: Any):
    return command_from_msg(typed.from_ros(msg))


def start_position(p: dict[str, Any]) -> tuple[float, float]:
    """(lat, lon) from the start, start_node or data parameters; errors name the parameter."""
    if p["start"]:
        try:
            lat, lon = (float(v) for v in str(p["start"]).split(","))
        except ValueError:
            raise ConfigError(f"parameter start: expected \"lat,lon\" in degrees, got {p['start']!r}") from None
        return lat, lon
    world = world_parameter(p["data"], p["dataset"], p["city"])
    node_id = p["start_node"] or (world.episodes[0].start if world.episodes else "")
    if node_id not in world.graph.nodes:
        raise ConfigError(f"parameter start_node: {node_id!r} is not a node of {world.city}'s street graph"
                          if node_id else f"parameter start_node is required: {world.city} has no episodes")
    node = world.graph.nodes[node_id]
    return node.lat, node.lon


class WalkerNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("walker", **kwargs)
        declare(self, WALKER)
        p = {spec.name: self.get_parameter(spec.name).value for spec in WALKER}
        rate = float(p["fix_rate_hz"])
        if not (math.isfinite(rate) and rate > 0):
            raise ConfigError(f"parameter fix_rate_hz must be > 0, got {p['fix_rate_hz']!r}")
        speed = float(p["speed_m_s"])
        lat, lon = start_position(p)
        self.walker = SimulatedWalker(lat, lon, speed_m_s=speed if speed > 0 else None, noise_m=float(p["noise_m"]),
                                      seed=int(p["seed"]))
        self._frame_id = p["frame_id"]
        self._fix_pub = self.create_publisher(NavSatFix, "fix", qos.STATE)
        self.create_subscription(COMMAND_TYPE, "command", self._on_command, qos.STATE)
        self.create_timer(1.0 / rate, self._publish_fix)
        self.get_logger().info(f"walking from ({lat:.6f}, {lon:.6f}), "
                               f"{'teleporting' if speed <= 0 else f'{speed:g} m/s'}")

    def _on_command(self, msg: Any) -> None:
        try:
            command = read_command(msg)
        except (ValidationError, ValueError) as exc:
            self.get_logger().warning(f"ignored a malformed command: {exc}")
            return
        self.walker.command(command)

    def _publish_fix(self) -> None:
        lat, lon = self.walker.fix()
        stamp = convert.stamp_from_msg(self.get_clock().now().to_msg())
        self._fix_pub.publish(convert.navsatfix(lat, lon, stamp, self._frame_id))


def main(args=None) -> None:
    spin(WalkerNode, "walker", args)


if __name__ == "__main__":
    main()

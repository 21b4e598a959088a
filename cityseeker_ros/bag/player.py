"""Play a bag into live topics: `python -m cityseeker_ros.bag.player BAG [--rate R] [--clock [HZ]]`.

The recorded CDR bytes are published unchanged, at the recorded pace divided by `--rate`
(0: as fast as the subscribers take them). QoS per topic is the stack's (cityseeker_ros.ros.qos):
state topics reliable and transient-local like the nodes that published them, so a node started
during playback still gets the latched state. A reliable publisher holds few messages
(STATE keeps one), so before publishing the next message on a topic the player waits until
every subscriber has acknowledged the previous one (bounded by `--ack-timeout`): fast playback
drops nothing that a subscriber was there to receive. With `--clock` it publishes
rosgraph_msgs/Clock on /clock from the recorded timestamps, before every message and at HZ in
between, for nodes running with use_sim_time.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any, Optional

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from cityseeker_ros.bag.arguments import add_play_arguments
from cityseeker_ros.bag.recorder import message_class
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.ros import qos
from cityseeker_ros.ros.bag_storage import BagReader
from cityseeker_ros.ros.bag_topics import CLOCK_TOPIC, KNOWN_TOPICS, normalise_topic
from cityseeker_ros.ros.spin import ros_process

CLOCK_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)  # what rosbag2 publishes /clock with


def topic_qos(topic: str, offered: Sequence[Any]) -> QoSProfile:
    """The stack's profile for a known topic; for others, STATE unless the recording shows a
    best-effort publisher (a reliable publisher would still serve every subscriber)."""
    spec = KNOWN_TOPICS.get(topic)
    kind = spec.qos if spec is not None else "state"
    if kind == "images":
        return qos.view_images(max([8, *(int(getattr(q, "depth", 1)) for q in offered)]))
    if kind == "diagnostics":
        return qos.DIAGNOSTICS
    if kind == "camera":
        return qos.CAMERA
    return qos.STATE


class BagPlayerNode(Node):
    def __init__(self, reader: BagReader, topics: Optional[Sequence[str]], rate: float, clock_hz: Optional[float],
                 ack_timeout_s: float, **kwargs: Any) -> None:
        super().__init__("bag_player", **kwargs)
        self._reader, self._rate, self._clock_hz = reader, rate, clock_hz
        self._ack_timeout = Duration(seconds=ack_timeout_s)
        available = reader.topics
        chosen = list(available) if not topics else [normalise_topic(t) for t in topics]
        missing = [t for t in chosen if t not in available]
        if missing:
            raise ConfigError(f"{reader.path}: no topic {', '.join(missing)} in the bag; it has "
                              f"{', '.join(sorted(available))}")
        self._topics = chosen
        self._outputs = {t: self.create_publisher(message_class(available[t]), t,
                                                     topic_qos(t, reader.offered_qos(t))) for t in chosen}
        self._pending: set[str] = set()  # topics whose last message may not be acknowledged yet
        self._clock_pub = self.create_publisher(Clock, CLOCK_TOPIC, CLOCK_QOS) if clock_hz is not None else None
        self.published = 0

    def wait_for_subscribers(self, timeout_s: float, subscribers: int = 1) -> list[str]:
        """Spin until every topic has `subscribers` subscribers (a recorder, and the node that
        consumes them); the topics still short of them."""
        deadline = time.monotonic() + timeout_s
        while True:
            lonely = [t for t, p in self._outputs.items() if p.get_subscription_count() < subscribers]
            if not lonely or time.monotonic() >= deadline:
                return lonely
            rclpy.spin_once(self, timeout_sec=0.05)

    def _publish_clock(self, recorded_ns: int) -> None:
        if self._clock_pub is not None:
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(int(recorded_ns), 1_000_000_000)
            self._clock_pub.publish(msg)

    def _sleep_until(self, wall: float, recorded_start: int, wall_start: float) -> None:
        """Wait for `wall` (monotonic) while publishing the clock at HZ and serving the node."""
        while True:
            now = time.monotonic()
            if now >= wall:
                return
            step = min(wall - now, 1.0 / self._clock_hz if self._clock_hz else 0.05)
            rclpy.spin_once(self, timeout_sec=step)
            if self._clock_hz:
                self._publish_clock(recorded_start + int((time.monotonic() - wall_start) * self._rate * 1e9))

    def play(self) -> int:
        wall_start = time.monotonic()
        recorded_start: Optional[int] = None
        for message in self._reader.messages(self._topics):
            if recorded_start is None:
                recorded_start = message.timestamp_ns
            if self._rate > 0:
                due = wall_start + (message.timestamp_ns - recorded_start) / 1e9 / self._rate
                self._sleep_until(due, recorded_start, wall_start)
            publisher = self._outputs[message.topic]
            if message.topic in self._pending:
                publisher.wait_for_all_acked(self._ack_timeout)
            self._publish_clock(message.timestamp_ns)
            publisher.publish(message.data)
            self._pending.add(message.topic)
            self.published += 1
        for topic in self._pending:  # the last messages reach their subscribers before we leave
            self._outputs[topic].wait_for_all_acked(self._ack_timeout)
        return self.published


def build_parser(prog: str = "python -m cityseeker_ros.bag.player") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Publish a bag's messages with their recorded timing.")
    add_play_arguments(parser)
    return parser


def play(args: argparse.Namespace) -> int:
    """Play in this process (which must have the ROS environment)."""
    if args.rate < 0:
        raise ConfigError(f"--rate must be >= 0 (0: as fast as possible), got {args.rate}")
    reader = BagReader(args.bag)
    try:
        with ros_process("bag play", exit_on_config_error=False) as nodes:
            node = BagPlayerNode(reader, args.topics, args.rate, args.clock, args.ack_timeout)
            nodes.append(node)
            if args.wait_for_subscribers > 0:
                lonely = node.wait_for_subscribers(args.wait_for_subscribers, args.subscribers)
                if lonely:
                    node.get_logger().warning(f"fewer than {args.subscribers} subscriber(s) on {', '.join(lonely)} "
                                              f"after {args.wait_for_subscribers:g} s")
            started = time.monotonic()
            count = node.play()
            print(f"played {count} messages from {args.bag} in {time.monotonic() - started:.2f} s", flush=True)
    finally:
        reader.close()
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return play(args)
    except CitySeekerError as exc:
        print(f"bag play: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

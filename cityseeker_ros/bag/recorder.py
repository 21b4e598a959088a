"""Record topics into a rosbag2 bag: `python -m cityseeker_ros.bag.recorder OUT [--topics ...]`.

A node with raw subscriptions: what DDS delivers is written as is, stamped with its receive
time (as `ros2 bag record` does). Topics with a known type (cityseeker_ros.ros.bag_topics) are
subscribed at once, reliable and transient-local, so the latched state the stack publishes
(episode, view set, decision) is captured even when it was published before the recorder
started. Topics of unknown type are subscribed when a publisher appears on the graph, with its
type; a subscription whose QoS a publisher cannot serve (a best-effort or volatile publisher)
is replaced by one matching what every publisher offers. SIGINT, SIGTERM or `--duration`
stop it: the bag is finished with everything received and moved into place.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from typing import Any, Optional

import rclpy
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from cityseeker_ros.bag.arguments import add_record_arguments
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.ros.bag_storage import BagWriter, QosOffer
from cityseeker_ros.ros.bag_topics import DEFAULT_TOPICS, TopicSpec, normalise_topic, topic_spec
from cityseeker_ros.ros.spin import ros_process

DEPTH = 1000  # a burst of view images or a slow disk never drops what arrived
DISCOVERY_PERIOD_S = 0.2


def message_class(msgtype: str) -> Any:
    """pkg/msg/Type -> the message class (rosidl_runtime_py is not on PyPI); an action's parts
    too: pkg/action/Name_Goal, _Result, _Feedback (Name.Goal...) and _FeedbackMessage."""
    try:
        package, kind, name = msgtype.split("/")
        module = importlib.import_module(f"{package}.{kind}")
        if kind == "action" and not hasattr(module, name):
            action, part = name.rsplit("_", 1)
            holder = getattr(module, action)
            return getattr(holder.Impl, part) if part == "FeedbackMessage" else getattr(holder, part)
        return getattr(module, name)
    except (ValueError, ImportError, AttributeError):
        raise ConfigError(f"message type {msgtype}: no Python message package installed for it") from None


def subscription_qos(reliable: bool, transient_local: bool) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=DEPTH,
                      reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if transient_local else DurabilityPolicy.VOLATILE)


class BagRecorderNode(Node):
    def __init__(self, writer: BagWriter, topics: Sequence[tuple[str, Optional[TopicSpec]]], **kwargs: Any) -> None:
        super().__init__("bag_recorder", **kwargs)
        self._writer = writer
        self._wanted = dict(topics)  # name -> spec (None: type from the graph)
        self._subs: dict[str, tuple[Any, bool, bool]] = {}  # name -> (subscription, reliable, transient_local)
        self.received = 0
        for name, spec in topics:
            if spec is not None:
                self._subscribe(name, spec.msgtype, True, True, [])
        self.create_timer(DISCOVERY_PERIOD_S, self._discover)

    def _subscribe(self, name: str, msgtype: str, reliable: bool, transient_local: bool,
                   offers: list[QosOffer]) -> None:
        cls = message_class(msgtype)
        self._writer.add_topic(name, msgtype, offers or [QosOffer(reliable, transient_local)])
        events = SubscriptionEventCallbacks(matched=lambda info, topic=name: self._on_matched(topic, info))
        sub = self.create_subscription(cls, name, lambda data, topic=name: self._on_message(topic, data),
                                       subscription_qos(reliable, transient_local), raw=True,
                                       event_callbacks=events)
        self._subs[name] = (sub, reliable, transient_local)
        self.get_logger().info(f"subscribed {name} [{msgtype}] "
                               f"{'reliable' if reliable else 'best-effort'}/"
                               f"{'transient-local' if transient_local else 'volatile'}")

    def _discover(self) -> None:
        for name, spec in self._wanted.items():
            infos = self.get_publishers_info_by_topic(name)
            if not infos:
                continue
            types = sorted({i.topic_type for i in infos})
            msgtype = spec.msgtype if spec is not None else types[0]
            if msgtype not in types:
                self.get_logger().warning(f"{name}: publishers offer {types}, recording {msgtype} as configured",
                                          once=True)
                continue
            reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
            transient = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
            current = self._subs.get(name)
            if current is not None and (current[1] <= reliable and current[2] <= transient):
                continue  # every publisher can serve the subscription we have
            if current is not None:
                self.destroy_subscription(current[0])
                self.get_logger().info(f"{name}: a publisher offers less, resubscribing to match it")
            offers = [QosOffer(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE,
                               i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL,
                               max(1, int(i.qos_profile.depth))) for i in infos]
            self._subscribe(name, msgtype, reliable, transient, offers)

    def _on_matched(self, topic: str, info: Any) -> None:
        """Say when a publisher is connected: discovery can take seconds on a loaded host, and
        whoever starts the run can wait for this line rather than lose its first messages."""
        if info.current_count_change > 0:
            self.get_logger().info(f"matched {topic}: {info.current_count} publisher(s)")

    def _on_message(self, topic: str, data: bytes) -> None:
        self._writer.write(topic, self.get_clock().now().nanoseconds, data)
        self.received += 1


def parse_topics(names: Optional[Sequence[str]]) -> list[tuple[str, Optional[TopicSpec]]]:
    """--topics entries `NAME` or `NAME:pkg/msg/Type`; none: the default topics."""
    if not names:
        return [(s.name, s) for s in DEFAULT_TOPICS]
    topics: dict[str, Optional[TopicSpec]] = {}
    for entry in names:
        name, _, msgtype = entry.partition(":")
        name = normalise_topic(name)
        if msgtype and msgtype.count("/") != 2:
            raise ConfigError(f"--topics {entry}: a type is written pkg/msg/Type")
        topics[name] = topic_spec(name, msgtype or None)
    return list(topics.items())


def build_parser(prog: str = "python -m cityseeker_ros.bag.recorder") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Record the stack's topics into a rosbag2 bag "
                                     "(stop with Ctrl-C; the bag is finished and moved into place).")
    add_record_arguments(parser)
    return parser


def record(args: argparse.Namespace) -> int:
    """Run the recorder in this process (which must have the ROS environment)."""
    topics = parse_topics(args.topics)
    if args.duration is not None and args.duration <= 0:
        raise ConfigError(f"--duration must be > 0 s, got {args.duration}")
    writer = BagWriter(args.out, args.storage)
    try:
        with ros_process("bag record", exit_on_config_error=False) as nodes:
            node = BagRecorderNode(writer, topics)
            nodes.append(node)
            node.get_logger().info(f"recording {len(topics)} topics to {args.out} ({args.storage})")
            deadline = None if args.duration is None else time.monotonic() + args.duration
            while rclpy.ok() and (deadline is None or time.monotonic() < deadline):
                rclpy.spin_once(node, timeout_sec=0.1)
    except BaseException:
        writer.abort()
        raise
    path = writer.close()
    total = sum(writer.counts.values())
    print(f"wrote {path}: {total} messages on {sum(1 for c in writer.counts.values() if c)} topics", flush=True)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return record(args)
    except CitySeekerError as exc:
        print(f"bag record: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

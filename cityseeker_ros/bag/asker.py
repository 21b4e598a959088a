"""Ask a decision node about played view sets: `python -m cityseeker_ros.bag.asker VIEWS_TOPIC
[--action /decision/decide]`.

The decision node answers Decide goals, not a topic, so re-deciding a bag needs a client in
the supervisor's place, with the supervisor's client (ros/decide_client.py): this node takes
every view set played on VIEWS_TOPIC (a world node's cityseeker_interfaces/ViewSet, or the
supervisor's recorded Decide goals, which keep their prompt context) and sends it as a goal,
one at a time in the order played, so no view set is skipped however fast the bag plays. The
decision node publishes each answer on its `~/decision` topic for the recorder. A rejected goal
(the node not configured yet) is sent again after RETRY_S. Callbacks only queue and send;
nothing waits in them.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Optional

from action_msgs.msg import GoalStatus
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from cityseeker_interfaces.action import Decide
from cityseeker_interfaces.msg import ViewSet
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros.bag_topics import DECIDE_GOAL, KNOWN_TOPICS, VIEW_SET, normalise_topic
from cityseeker_ros.ros.decide_client import DecideClient
from cityseeker_ros.ros.spin import spin

RETRY_S = 0.5
EVERY_VIEW_SET = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10_000, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL)


class AskerNode(Node):
    def __init__(self, views_topic: str, action: str) -> None:
        super().__init__("bag_asker")
        spec = KNOWN_TOPICS.get(views_topic)
        msgtype = spec.msgtype if spec is not None else VIEW_SET
        if msgtype not in (VIEW_SET, DECIDE_GOAL):
            raise ConfigError(f"{views_topic} carries {msgtype}, not view sets ({VIEW_SET} or {DECIDE_GOAL})")
        self._goals: deque[Decide.Goal] = deque()
        self._busy = False
        self._retry_at = 0.0
        self._asked = self._answered = 0
        self._client = DecideClient(self, action)
        # Deep, so a view set played while the last one is still being queued is kept, not replaced.
        self.create_subscription(Decide.Goal if msgtype == DECIDE_GOAL else ViewSet,
                                 views_topic, self._on_view_set, EVERY_VIEW_SET)
        self.create_timer(0.1, self._send)
        self.get_logger().info(f"asking {action} about the view sets on {views_topic}")

    def _on_view_set(self, msg: Any) -> None:
        goal = msg if isinstance(msg, Decide.Goal) else Decide.Goal(view_set=msg)
        if not goal.view_set.done:
            self._goals.append(goal)
            self._send()

    def _send(self) -> None:
        if self._busy or not self._goals or time.monotonic() < self._retry_at or not self._client.server_is_ready():
            return
        self._busy = True
        self._client.send_goal_async(self._goals[0]).add_done_callback(self._on_response)

    def _on_response(self, future) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            self._busy, self._retry_at = False, time.monotonic() + RETRY_S
            return
        self._asked += 1
        handle.get_result_async().add_done_callback(self._on_result)

    def _on_result(self, future) -> None:
        response = future.result()
        self._busy = False
        if response is not None and response.status == GoalStatus.STATUS_SUCCEEDED:
            self._goals.popleft()
            self._answered += 1
        else:  # aborted (the node cleaned up): ask again
            self._retry_at = time.monotonic() + RETRY_S
        self._send()


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cityseeker_ros.bag.asker", description=__doc__.split("\n\n")[0])
    parser.add_argument("views_topic", help="played view sets (ViewSet, or the supervisor's Decide goals)")
    parser.add_argument("--action", default="/decision/decide", help="the Decide action to ask")
    args, ros_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    topic, action = normalise_topic(args.views_topic), args.action
    spin(lambda: AskerNode(topic, action), "bag_asker", ["bag_asker", *ros_args])


if __name__ == "__main__":
    main()

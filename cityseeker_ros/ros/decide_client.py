"""The one `Decide` action client, for the supervisor node and the bag asker: it takes only what
they use, the goal's acceptance, its result, and cancel.

Why not rclpy's ActionClient: it also subscribes to the action's status topic, which the server
publishes about three times a goal (accepted, executing, done) as an array of every goal it
still keeps. Each message wakes the client's executor and is decoded in Python (23 us a goal in
the array), on the loop's critical path, although the supervisor never reads a status: it has
its own decision timeout. The wire is the action's own (ROS 2 design, "Actions"): the
`_action/send_goal`, `_action/get_result` and `_action/cancel_goal` services of the same
`Decide` types, so the decision node stays a plain ActionServer and any other action client
(`ros2 action send_goal`) works beside this one. Feedback is not subscribed either.
"""
from __future__ import annotations

import uuid
from typing import Optional

from action_msgs.msg import GoalInfo
from action_msgs.srv import CancelGoal
from rclpy.node import Node
from rclpy.task import Future
from unique_identifier_msgs.msg import UUID

from cityseeker_interfaces.action import Decide


class DecideGoalHandle:
    """An answered goal request: `accepted`, and (if accepted) its result and cancel."""

    def __init__(self, client: DecideClient, goal_id: UUID, accepted: bool) -> None:
        self.client, self.goal_id, self.accepted = client, goal_id, accepted
        self._result: Optional[Future] = None

    def get_result_async(self) -> Future:
        """The GetResult response (`status`, `result`), as rclpy's ClientGoalHandle gives it;
        asked once, so calling again returns the same future."""
        if self._result is None:
            request = Decide.Impl.GetResultService.Request(goal_id=self.goal_id)
            self._result = self.client._get_result.call_async(request)
        return self._result

    def cancel_goal_async(self) -> Future:
        """Ask the server to cancel the goal; the future holds its CancelGoal response."""
        return self.client._cancel.call_async(CancelGoal.Request(goal_info=GoalInfo(goal_id=self.goal_id)))


class DecideClient:
    """Goals to the `Decide` action server named `action_name` (e.g. /decision/decide)."""

    def __init__(self, node: Node, action_name: str) -> None:
        base = f"{action_name.rstrip('/')}/_action"
        self._send_goal = node.create_client(Decide.Impl.SendGoalService, f"{base}/send_goal")
        self._get_result = node.create_client(Decide.Impl.GetResultService, f"{base}/get_result")
        self._cancel = node.create_client(CancelGoal, f"{base}/cancel_goal")

    def server_is_ready(self) -> bool:
        return (self._send_goal.service_is_ready() and self._get_result.service_is_ready()
                and self._cancel.service_is_ready())

    def send_goal_async(self, goal: Decide.Goal) -> Future:
        """Send `goal` under a fresh goal id; the future completes with a DecideGoalHandle once
        the server answers."""
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        request = Decide.Impl.SendGoalService.Request(goal_id=goal_id, goal=goal)
        handle = Future()
        sent = self._send_goal.call_async(request)
        sent.add_done_callback(lambda f: handle.set_result(
            DecideGoalHandle(self, goal_id, bool(f.result().accepted)) if f.result() is not None else None))
        return handle


"""Test helper, run as its own ROS process: `python episode_driver.py PLAN.json OUT.json`.

It stands in for the supervisor node: it makes lifecycle transitions on the decision node,
selects episodes on the replay node, asks the decision node's Decide action about the replay's
current view set (a goal per view set, sent again when rejected), forwards each decision to the
replay's action topic, and writes what it saw as JSON for the
test to check. Everything happens in this script's main loop (spin_once); callbacks only
record, or send without waiting, so no callback ever waits on a service.

PLAN.json: {"replay": "/streetview_replay", "decision": "/decision", "steps": [op, ...]}
with ops:
  {"op": "state"}                                      the decision node's lifecycle state
  {"op": "transition", "name": "configure"}            configure|activate|deactivate|cleanup
  {"op": "decision_params", "params": {...}}           set parameters on the decision node
  {"op": "episode", "episode": 0, "seed": 7}           select, run to the end, report
      optional "hold_at_step": k, "resume_file": F, "after_resume": ["configure", "activate"]:
      stop forwarding at step k, write F + ".held", wait for F to exist (the test restarts a
      node meanwhile), make the transitions, then go on
  {"op": "reset_while_inactive", "wait_s": 1.5}        restart via ~/reset; count decisions
  {"op": "expect_decision", "timeout_s": 10}           a decision for the current view set?
  {"op": "repeat_goal"}                                 one more Decide goal for the current view set:
                                                       its decision (the node must not decide again)
  {"op": "cancel_goal"}                                 a goal for the current view set, cancelled once
                                                       accepted: its final status
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rclpy
from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.srv import SetParameters, SetParametersAtomically
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import CompressedImage, Image
from std_srvs.srv import Trigger

from cityseeker_interfaces.action import Decide
from cityseeker_ros.core.loop.view_set import Answer, ViewSet
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.schema import ActionMsg, EpisodeMsg, as_dict

TRANSITIONS = {"configure": Transition.TRANSITION_CONFIGURE, "activate": Transition.TRANSITION_ACTIVATE,
               "deactivate": Transition.TRANSITION_DEACTIVATE, "cleanup": Transition.TRANSITION_CLEANUP}
GOALS = {"configure": "inactive", "activate": "active", "deactivate": "inactive", "cleanup": "unconfigured"}


class EpisodeDriver(Node):
    def __init__(self, replay: str, decision: str) -> None:
        super().__init__("episode_driver")
        self.episode: EpisodeMsg | None = None
        self.view_set: ViewSet | None = None
        self.view_sets: dict[str, ViewSet] = {}
        self.decisions: dict[str, Answer] = {}
        self.images: dict[tuple[int, int, str], str] = {}  # (sec, nanosec, frame) -> sha256 of the RGB pixels
        self.image_formats: dict[tuple[int, int, str], str] = {}  # the same keys -> convert.wire_format
        self.max_run = 0  # the newest run seen on any topic
        self.lost_replies = 0  # service replies that never came (the request was repeated)
        self.create_subscription(typed.msg_type(EpisodeMsg), f"{replay}/episode", self._on_episode, qos.STATE)
        self.create_subscription(typed.msg_type(ViewSet), f"{replay}/views", self._on_views, qos.STATE)
        for image_format in ("raw", "png"):  # whichever image_format the world node sends
            self.create_subscription(convert.image_message_type(image_format),
                                     convert.image_topic(f"{replay}/images", image_format), self._on_image,
                                     qos.view_images(8))
        self.decide = ActionClient(self, Decide, f"{decision}/decide")
        self.asked: set[str] = set()  # view set ids with a goal in flight or answered
        self.action_pub = self.create_publisher(typed.msg_type(ActionMsg), f"{replay}/action", qos.STATE)
        self.select = self.create_client(SetParametersAtomically, f"{replay}/set_parameters_atomically")
        self.reset = self.create_client(Trigger, f"{replay}/reset")
        self.change_state = self.create_client(ChangeState, f"{decision}/change_state")
        self.get_state = self.create_client(GetState, f"{decision}/get_state")
        self.decision_params = self.create_client(SetParameters, f"{decision}/set_parameters")

    def _on_episode(self, msg: Any) -> None:
        self.episode = typed.from_ros(msg)
        if self.episode.task is not None:
            self.max_run = max(self.max_run, self.episode.task.run)

    def _on_views(self, msg: Any) -> None:
        self.view_set = typed.from_ros(msg)
        self.view_sets[self.view_set.view_set_id] = self.view_set
        self.max_run = max(self.max_run, self.view_set.task.run)

    def _on_image(self, msg: Image | CompressedImage) -> None:
        pixels = convert.image_from_msg(msg)
        digest = hashlib.sha256(pixels.tobytes() + str(pixels.shape).encode()).hexdigest()
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
        self.images[key], self.image_formats[key] = digest, convert.wire_format(msg)

    def ask(self, view_set: ViewSet) -> None:
        """A Decide goal for `view_set` unless one is in flight or answered; a rejected goal (the
        node unconfigured) is forgotten, so the next call sends it again."""
        if view_set.view_set_id in self.asked or not self.decide.server_is_ready():
            return
        self.asked.add(view_set.view_set_id)
        goal = Decide.Goal(view_set=typed.view_set_to_ros(view_set), context=typed.context_to_ros(None))
        self.decide.send_goal_async(goal).add_done_callback(lambda f: self._on_goal(view_set.view_set_id, f))

    def _on_goal(self, view_set_id: str, future) -> None:
        handle = future.result()
        if not handle.accepted:
            self.asked.discard(view_set_id)
            return
        handle.get_result_async().add_done_callback(lambda f: self._on_result(view_set_id, f))

    def _on_result(self, view_set_id: str, future) -> None:
        response = future.result()
        if response.status != GoalStatus.STATUS_SUCCEEDED:
            self.asked.discard(view_set_id)
            return
        self.decisions[view_set_id] = typed.decision_from_ros(response.result.decision)

    # -- plumbing ------------------------------------------------------------------------------

    def spin_until(self, done: Callable[[], bool], timeout_s: float, step: Callable[[], None] = lambda: None) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            step()
            if done():
                return True
            rclpy.spin_once(self, timeout_sec=0.02)
        return done()

    def call(self, client, request, timeout_s: float = 60.0, attempt_s: float = 5.0,
             done_anyway: Callable[[], bool] | None = None):
        """The reply, or None when it was lost but `done_anyway` shows the request took effect.

        A request sent just as a server appears can lose its reply (the server has not yet
        matched our reply reader, more likely on a loaded machine), so each attempt waits
        `attempt_s` and is repeated. Requests that are not idempotent pass `done_anyway`."""
        deadline = time.monotonic() + timeout_s
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError(f"service {client.srv_name} not available")
        while time.monotonic() < deadline:
            future = client.call_async(request)
            rclpy.spin_until_future_complete(self, future, timeout_sec=max(0.1, min(attempt_s,
                                                                                    deadline - time.monotonic())))
            if future.done():
                return future.result()
            client.remove_pending_request(future)
            self.lost_replies += 1
            if done_anyway is not None and done_anyway():
                return None
        raise TimeoutError(f"service {client.srv_name} did not answer within {timeout_s} s")

    def state_label(self) -> str:
        return self.call(self.get_state, GetState.Request()).current_state.label

    # -- ops -----------------------------------------------------------------------------------

    def op_state(self, step: dict[str, Any]) -> dict[str, Any]:
        return {"state": self.state_label()}

    def op_transition(self, step: dict[str, Any]) -> dict[str, Any]:
        request = ChangeState.Request()
        request.transition.id = TRANSITIONS[step["name"]]
        goal = GOALS[step["name"]]
        reply = self.call(self.change_state, request, timeout_s=step.get("timeout_s", 60.0), attempt_s=10.0,
                          done_anyway=lambda: self.state_label() == goal)
        state = self.state_label()
        # A retried transition is refused when the lost first attempt already made it.
        success = bool(reply is not None and reply.success) or state == goal
        return {"success": success, "state": state}

    def op_decision_params(self, step: dict[str, Any]) -> dict[str, Any]:
        request = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg()
                                                    for k, v in step["params"].items()])
        results = self.call(self.decision_params, request).results
        return {"success": all(r.successful for r in results), "reasons": [r.reason for r in results]}

    def op_episode(self, step: dict[str, Any]) -> dict[str, Any]:
        # The replay latches its episode state: wait for it, so the run we start is recognisable.
        self.spin_until(lambda: self.episode is not None, 60.0)
        before = self.max_run
        request = SetParametersAtomically.Request(parameters=[
            Parameter("episode", value=step["episode"]).to_parameter_msg(),
            Parameter("seed", value=int(step["seed"])).to_parameter_msg()])
        reply = self.call(self.select, request, done_anyway=lambda: self.spin_until(lambda: self.max_run > before, 1.0))
        if reply is not None and not reply.result.successful:
            return {"selected": False, "reason": reply.result.reason}
        if not self.spin_until(lambda: self.episode is not None and self.episode.task is not None
                               and self.episode.task.run > before and self.episode.task.seed == int(step["seed"]),
                               60.0):
            return {"selected": True, "started": False}
        run = self.episode.task.run
        forwarded: list[str] = []
        hold_at = step.get("hold_at_step")
        resumed_at: list[int] = []

        def forward() -> None:
            current = self.view_set
            if current is None or current.done or current.task.run != run or current.view_set_id in forwarded:
                return
            if hold_at is not None and current.step >= hold_at and not resumed_at:
                self.hold(step)
                resumed_at.append(len(forwarded))
                return
            if current.view_set_id not in self.decisions:
                self.ask(current)
                return
            decision = self.decisions[current.view_set_id]
            action = ActionMsg(view_set_id=current.view_set_id, action=decision.action, error=decision.error)
            self.action_pub.publish(typed.to_ros(action))
            forwarded.append(current.view_set_id)

        ended = self.spin_until(lambda: self.episode.task.run == run and self.episode.status == "ended",
                                step.get("timeout_s", 120.0), forward)
        view_sets = [v for v in self.view_sets.values() if v.task.run == run]
        return {
            "selected": True, "started": True, "ended": ended, "run": run,
            "resumed_after_decisions": resumed_at[0] if resumed_at else None,
            "episode": as_dict(self.episode),
            "decisions": [as_dict(self.decisions[i]) for i in forwarded],
            "view_sets": [{**as_dict(v), "image_sha256": [self.images.get((v.stamp.sec, v.stamp.nanosec, f))
                                                          for f in v.image_frames()],
                           "image_formats": [self.image_formats.get((v.stamp.sec, v.stamp.nanosec, f))
                                             for f in v.image_frames()]} for v in view_sets],
        }

    def hold(self, step: dict[str, Any]) -> None:
        resume = Path(step["resume_file"])
        Path(f"{resume}.held").write_text(self.view_set.view_set_id if self.view_set else "")
        self.spin_until(resume.exists, float(step.get("hold_timeout_s", 60.0)))
        # The crashed node's endpoints linger in discovery until its lease expires, so the first
        # requests may reach no live server: `call` repeats them until the new node answers.
        self.state_label()
        for name in step.get("after_resume", []):
            self.op_transition({"name": name})

    def op_reset_while_inactive(self, step: dict[str, Any]) -> dict[str, Any]:
        before = self.max_run
        response = self.call(self.reset, Trigger.Request(),
                             done_anyway=lambda: self.spin_until(lambda: self.max_run > before, 1.0))
        started = self.spin_until(lambda: self.view_set is not None and self.view_set.task.run > before, 60.0)
        view_set_id = self.view_set.view_set_id if self.view_set is not None else None
        self.spin_until(lambda: False, float(step.get("wait_s", 1.5)), self.ask_current)
        return {"reset": response is None or response.success, "started": started,
                "view_set_id": view_set_id, "decided": view_set_id in self.decisions}

    def ask_current(self) -> None:
        if self.view_set is not None and not self.view_set.done:
            self.ask(self.view_set)

    def goal_for_current(self) -> Any:
        """Send a Decide goal for the current view set and wait for it to be accepted."""
        goal = Decide.Goal(view_set=typed.view_set_to_ros(self.view_set), context=typed.context_to_ros(None))
        future = self.decide.send_goal_async(goal)
        rclpy.spin_until_future_complete(self, future, timeout_sec=10.0)
        handle = future.result()
        assert handle is not None and handle.accepted, "goal not accepted"
        return handle

    def op_repeat_goal(self, step: dict[str, Any]) -> dict[str, Any]:
        result = self.goal_for_current().get_result_async()
        rclpy.spin_until_future_complete(self, result, timeout_sec=10.0)
        response = result.result()
        return {"status": response.status, "view_set_id": self.view_set.view_set_id,
                "decision": as_dict(typed.decision_from_ros(response.result.decision)),
                "first": as_dict(self.decisions[self.view_set.view_set_id])}

    def op_cancel_goal(self, step: dict[str, Any]) -> dict[str, Any]:
        handle = self.goal_for_current()
        cancel = handle.cancel_goal_async()
        rclpy.spin_until_future_complete(self, cancel, timeout_sec=10.0)
        result = handle.get_result_async()
        rclpy.spin_until_future_complete(self, result, timeout_sec=10.0)
        return {"status": result.result().status if result.done() else None}

    def op_expect_decision(self, step: dict[str, Any]) -> dict[str, Any]:
        view_set_id = self.view_set.view_set_id if self.view_set is not None else None
        decided = self.spin_until(lambda: view_set_id in self.decisions, float(step.get("timeout_s", 10.0)),
                                  self.ask_current)
        return {"view_set_id": view_set_id, "decided": decided}


def main() -> None:
    plan = json.loads(open(sys.argv[1]).read())
    rclpy.init()
    node = EpisodeDriver(plan.get("replay", "/streetview_replay"), plan.get("decision", "/decision"))
    results: list[dict[str, Any]] = []
    try:
        for step in plan["steps"]:
            started = time.perf_counter()
            outcome = getattr(node, f"op_{step['op']}")(step)
            results.append({"op": step["op"], "wall_s": round(time.perf_counter() - started, 3),
                            "lost_replies": node.lost_replies, **outcome})
    finally:
        with open(sys.argv[2], "w") as out:
            json.dump(results, out, indent=1)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()

"""A blocking Python client of the supervisor's `Seek` action, in the style of
nav2_simple_commander: `Seeker().seek("I am thirsty", max_steps=20, feedback=print)` returns the
result once the goal ends; `start()` + `done()` + `cancel()` drive it step by step.

It needs rclpy, so it runs in a ROS process (on a pip-only machine: one started with
`ros.env.ros_env()`, as `cityseeker seek` starts `python -m cityseeker_ros.nodes.seek_client`).
Every wait spins this client's own executor; nothing blocks a callback.

    python -m cityseeker_ros.nodes.seek_client "I am thirsty" --max-steps 20 [--json OUT.json]

A goal the server refuses ends at once with outcome `rejected`, its `code` (busy, estop,
off_graph, outside_geofence, bad_need, ...) and reason; the command prints them and exits 3
(0: the goal ran its course: arrived, answered, or its budget spent; 1: it ended otherwise:
cancelled, failed; 2: no server or no answer in time; 4: a pilot took the vehicle; 5: the vehicle
bridge lost its link). The lines it prints are ros/seek_outcome.py's.
"""
from __future__ import annotations

import argparse
import math
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, Optional

import rclpy
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from cityseeker_interfaces.action import Seek
from cityseeker_ros.ros.seek_outcome import EXIT_ERROR, SeekOutcome, SeekStep, exit_code, write_json

OUTCOMES = {Seek.Result.FOUND: "found", Seek.Result.BUDGET: "budget", Seek.Result.CANCELLED: "cancelled",
            Seek.Result.FAILED: "failed", Seek.Result.REJECTED: "rejected", Seek.Result.ANSWERED: "answered",
            Seek.Result.PILOT_OVERRIDE: "pilot_override", Seek.Result.LINK_LOST: "link_lost"}
STATUSES = {GoalStatus.STATUS_SUCCEEDED: "succeeded", GoalStatus.STATUS_ABORTED: "aborted",
            GoalStatus.STATUS_CANCELED: "canceled"}
ACTIONS = {0: "move", 1: "stop", 2: "back", 3: "answer"}  # AgentAction kinds
NOT_READY = "not_ready"  # the rejection code of a server still starting (nodes/supervisor_actions.py)
__all__ = ["SeekError", "SeekOutcome", "SeekStep", "Seeker", "main"]  # SeekOutcome, SeekStep: ros/seek_outcome.py


class SeekError(RuntimeError):
    """No server, a goal the server did not accept, or no result in time."""


class Stopped(BaseException):
    """SIGTERM: the process that started this one is stopping it (`cityseeker seek` when a node
    failed or its --timeout passed). Like Ctrl-C an active goal is cancelled, but a goal not
    yet sent is no news: the starter says what went wrong."""


def _stopped(signum: int, frame: Any) -> None:
    raise Stopped()


def _number(value: float) -> Optional[float]:
    return float(value) if math.isfinite(value) else None


def step_of(msg: Any) -> SeekStep:
    return SeekStep(msg.step, msg.steps_left, msg.node, ACTIONS.get(msg.action.kind, str(msg.action.kind)),
                    _number(msg.heading_deg), msg.direction, msg.reason, msg.distance_m,
                    _number(msg.position.latitude), _number(msg.position.longitude))


def outcome_of(status: int, msg: Any, feedback: list[SeekStep]) -> SeekOutcome:
    view = msg.answer_view
    return SeekOutcome(STATUSES.get(status, str(status)), OUTCOMES.get(msg.outcome, str(msg.outcome)), msg.code,
                       msg.reason, msg.node, _number(msg.position.latitude), _number(msg.position.longitude),
                       list(msg.path), msg.steps, msg.distance_m, feedback, answer=msg.answer or None,
                       answer_view=([view.index, view.heading_deg, view.relative] if view.index >= 0 else None))


class Seeker:
    """One Seek goal at a time against `server`. Owns an rclpy node (and initialises rclpy when
    nobody has); `close()` (or `with`) destroys it."""

    def __init__(self, server: str = "/supervisor/seek", node_name: str = "seeker") -> None:
        self._owns_rclpy = not rclpy.ok()
        if self._owns_rclpy:  # Ctrl-C stays a KeyboardInterrupt, so a caller can still cancel
            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        self.node = Node(node_name)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.client = ActionClient(self.node, Seek, server)
        self.server = server
        self._handle: Any = None
        self._result: Any = None
        self._feedback: list[SeekStep] = []
        self._on_feedback: Optional[Callable[[SeekStep], None]] = None

    def wait_until_ready(self, timeout_s: float = 60.0, probe_s: float = 2.0) -> None:
        """Until the server has answered a goal and its result. `server_is_ready` only says that
        this client sees the server's endpoints; until the server also sees this client's, its
        answers are dropped ("failed to send response (timeout)" in its log) and a goal sent then
        is lost to us. A goal with an empty need is always refused, so it is the probe, sent
        again every `probe_s` until both answers come."""
        deadline = time.monotonic() + timeout_s
        while not self.client.server_is_ready():
            if time.monotonic() > deadline:
                raise SeekError(f"no Seek action server on {self.server} after {timeout_s:g} s")
            self.executor.spin_once(timeout_sec=0.1)
        while True:
            try:
                sent = self.client.send_goal_async(Seek.Goal(need=""))
                self._spin_until(sent, probe_s, "a readiness probe")
                self._spin_until(sent.result().get_result_async(), probe_s, "a readiness probe's result")
                return
            except SeekError:
                if time.monotonic() > deadline:
                    raise SeekError(f"{self.server} answered no goal within {timeout_s:g} s") from None

    def start(self, need: str, max_steps: int = 0, preempt: bool = False,
              feedback: Optional[Callable[[SeekStep], None]] = None, timeout_s: float = 10.0,
              family: str = "") -> None:
        """Send the goal and wait until the server took it (a refusal then comes as the result).
        `family`: a landmark goal or a question instead of a need ('' or needs: a need)."""
        self._feedback, self._on_feedback, self._result = [], feedback, None
        goal = Seek.Goal(need=need, max_steps=int(max_steps), preempt=bool(preempt), family=family)
        sent = self.client.send_goal_async(goal, feedback_callback=self._feedback_callback)
        self._spin_until(sent, timeout_s, "the goal's acceptance")
        self._handle = sent.result()
        if not self._handle.accepted:
            raise SeekError(f"{self.server} did not accept the goal")
        self._result = self._handle.get_result_async()

    @property
    def sent(self) -> bool:
        """A goal was sent and taken (its result comes, or has come)."""
        return self._handle is not None

    @property
    def feedback(self) -> list[SeekStep]:
        """The current goal's feedback so far."""
        return list(self._feedback)

    @property
    def finished(self) -> bool:
        """The current goal has ended (its result is in)."""
        return self._result is not None and self._result.done()

    def done(self) -> bool:
        """Spin once; whether the goal has ended."""
        self.executor.spin_once(timeout_sec=0.05)
        return self.finished

    def cancel(self) -> None:
        """Ask the server to cancel (it holds the vehicle); the result still comes. Safe to call
        from a feedback callback."""
        if self._handle is not None:
            self._handle.cancel_goal_async()

    def result(self, timeout_s: Optional[float] = None) -> SeekOutcome:
        """Wait for the goal's end."""
        if self._result is None:
            raise SeekError("no goal was started")
        self._spin_until(self._result, timeout_s, "the result")
        response = self._result.result()
        return outcome_of(response.status, response.result, list(self._feedback))

    def seek(self, need: str, max_steps: int = 0, preempt: bool = False,
             feedback: Optional[Callable[[SeekStep], None]] = None, timeout_s: Optional[float] = None,
             ready_timeout_s: float = 120.0, family: str = "") -> SeekOutcome:
        """Send the goal and block until it ends. A server still starting (its decision node
        not active yet) refuses with `not_ready`: the goal is sent again until `ready_timeout_s`."""
        deadline = time.monotonic() + ready_timeout_s
        self.wait_until_ready(ready_timeout_s)
        while True:
            self.start(need, max_steps, preempt, feedback, family=family)
            outcome = self.result(timeout_s)
            if not (outcome.rejected and outcome.code == NOT_READY) or time.monotonic() > deadline:
                return outcome
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                self.executor.spin_once(timeout_sec=0.1)

    def close(self) -> None:
        self.client.destroy()
        self.executor.remove_node(self.node)
        self.node.destroy_node()
        if self._owns_rclpy:
            rclpy.try_shutdown()

    def __enter__(self) -> Seeker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _feedback_callback(self, msg: Any) -> None:
        step = step_of(msg.feedback)
        self._feedback.append(step)
        if self._on_feedback is not None:
            self._on_feedback(step)

    def _spin_until(self, future: Any, timeout_s: Optional[float], what: str) -> None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not future.done():
            if deadline is not None and time.monotonic() > deadline:
                raise SeekError(f"no answer from {self.server} for {what} within {timeout_s:g} s")
            self.executor.spin_once(timeout_sec=0.1)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cityseeker_ros.nodes.seek_client",
                                     description="Send one Seek goal, print its feedback and result.")
    parser.add_argument("need", help="the need in words, e.g. 'I am thirsty'")
    parser.add_argument("--max-steps", type=int, default=0, help="step budget (0: the server's)")
    parser.add_argument("--preempt", action="store_true", help="replace an active goal")
    parser.add_argument("--family", default="", help="task family of the goal: needs (default), landmarks or "
                        "questions")
    parser.add_argument("--server", default="/supervisor/seek", help="the Seek action (default /supervisor/seek)")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the server")
    parser.add_argument("--timeout", type=float, help="seconds to wait for the result (default: none)")
    parser.add_argument("--json", help="also write the result as JSON to this file")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stopped)
    seeker = Seeker(args.server)
    try:
        try:
            outcome = seeker.seek(args.need, args.max_steps, args.preempt,
                                  feedback=lambda s: print(s.line(), flush=True), timeout_s=args.timeout,
                                  ready_timeout_s=args.wait, family=args.family)
        except (KeyboardInterrupt, Stopped) as stop:  # the vehicle holds: cancel, then report how it ended
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop is enough; the starter kills if it must
            if not seeker.sent:  # nothing to cancel (e.g. the node set stopped while starting)
                if isinstance(stop, KeyboardInterrupt):
                    print("seek: interrupted before a goal was sent", file=sys.stderr)
                return EXIT_ERROR
            print("cancelling: the vehicle holds", flush=True)
            seeker.cancel()
            outcome = seeker.result(10.0)
    except SeekError as exc:
        print(f"seek: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        seeker.close()
    print(f"result: {outcome.line()}", flush=True)
    if args.json:
        write_json(outcome, args.json)
    return exit_code(outcome)


if __name__ == "__main__":
    sys.exit(main())

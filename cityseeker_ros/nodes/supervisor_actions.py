"""The supervisor's action servers: `Seek` on /supervisor/seek (mode seek: a need given at run
time, sought live from where the vehicle stands) and `RunEpisode` on /supervisor/run_episode
(mode episodes: one dataset task on the replay world per goal). The loops the goals drive are
core (core.loop.seek_server.SeekServerSession, core.loop.episode_server.EpisodeServerLoop): they
check each goal, run it and say why they refuse one; this module only converts goals, cancels
and the e-stop topic into calls on them, and their feedback and results into action messages.
The supervisor node attaches it with `serve()`.

A goal the core refuses is accepted and at once aborted, its result carrying the core's code and
one-line reason (Seek: outcome REJECTED, `code` and `reason`; RunEpisode: `episode.error`
"rejected (CODE): ..."): rclpy's GoalResponse.REJECT cannot carry text, and a result reaches
every client, `ros2 action send_goal` included. The same line goes to the node's log.

Cancel: the cancel callback calls the core's cancel at once (no waiting in a callback), which
sends the HOLD motion command before the callback returns; the vehicle's safety gate still
filters every command. Everything runs on the node's single-threaded executor: the execute
callbacks are coroutines that await an rclpy Future the loop's result completes.
"""
from __future__ import annotations

import json
import math
from typing import Any, Optional

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from cityseeker_interfaces.action import RunEpisode, Seek
from cityseeker_interfaces.msg import AgentAction, GeoPoint, Metric, Outcome, View
from cityseeker_interfaces.msg import Episode as EpisodeMsg
from cityseeker_ros.core.loop.episode_server import EpisodeServerLoop, EpisodeStep
from cityseeker_ros.core.loop.live_loop import LiveLoop
from cityseeker_ros.core.loop.seek import SeekFeedback, SeekRequest, SeekResult
from cityseeker_ros.core.loop.seek_server import SeekServerSession
from cityseeker_ros.core.loop.served import ForwardingOutputs
from cityseeker_ros.core.loop.state_machine import EpisodeLoop
from cityseeker_ros.core.loop.view_set import EpisodeBrief
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode, World
from cityseeker_ros.core.tasks.family import family_of_record
from cityseeker_ros.ros import qos, typed

ESTOP_TOPIC = "/estop"  # std_msgs/Bool, as the vehicle bridges hear it
# The core's end (core.loop.seek.OUTCOMES) as the result's outcome; stalled, estop and error are FAILED.
OUTCOME_OF = {"stopped": Seek.Result.FOUND, "budget": Seek.Result.BUDGET, "cancelled": Seek.Result.CANCELLED,
              "answered": Seek.Result.ANSWERED, "pilot_override": Seek.Result.PILOT_OVERRIDE,
              "link_lost": Seek.Result.LINK_LOST}


# -- messages -------------------------------------------------------------------------------------


def geo(lat: float, lon: float) -> GeoPoint:
    return GeoPoint(latitude=float(lat), longitude=float(lon), altitude=math.nan)


def agent_action(action: Optional[Action], kind: str = "") -> AgentAction:
    """A core Action (or, without one, the step's kind: move, back or stop) as AgentAction."""
    if action is None:
        code = {"move": AgentAction.MOVE, "back": AgentAction.BACK}.get(kind, AgentAction.STOP)
        return AgentAction(kind=code, index=-1)
    return typed.action_to_ros(action)


def seek_feedback(feedback: SeekFeedback, steps_left: int, action: Optional[Action],
                  fix: tuple[Optional[float], Optional[float]]) -> Seek.Feedback:
    lat, lon = fix
    return Seek.Feedback(
        node=feedback.node, step=feedback.step, steps_left=steps_left,
        action=agent_action(action, feedback.action),
        heading_deg=float(feedback.heading_deg) if feedback.heading_deg is not None else math.nan,
        direction=feedback.direction or "", reason=feedback.reason, distance_m=float(feedback.distance_m),
        position=geo(lat, lon) if lat is not None and lon is not None else geo(math.nan, math.nan))


def seek_result(result: SeekResult, world: World, position: tuple[float, float]) -> Seek.Result:
    lat, lon = position
    nodes = world.graph.nodes
    return Seek.Result(
        outcome=OUTCOME_OF.get(result.outcome, Seek.Result.FAILED), code=result.outcome, node=result.node,
        position=geo(lat, lon), path=list(result.path),
        path_geo=[geo(nodes[n].lat, nodes[n].lon) for n in result.path], steps=result.steps,
        distance_m=float(result.distance_m), reason=result.message, answer=result.answer or "",
        answer_view=(View(index=result.answer_view[0], heading_deg=float(result.answer_view[1]),
                          relative=result.answer_view[2]) if result.answer_view is not None else View(index=-1)))


def rejected_seek(code: str, reason: str) -> Seek.Result:
    """A refused goal: nothing moved, so no node, path or position."""
    return Seek.Result(outcome=Seek.Result.REJECTED, code=code, position=geo(math.nan, math.nan), reason=reason)


def _action_code(entry: Any) -> int:
    if entry is None:
        return EpisodeMsg.ACTION_STOP
    return int(entry) if isinstance(entry, int) else EpisodeMsg.ACTION_BACK


def episode_result(record: dict[str, Any], world: World, episode: Episode, round: int) -> RunEpisode.Result:
    """The episodes.jsonl record (exactly as an in-process run writes it) as a RunEpisode result."""
    nodes = world.graph.nodes
    metrics = [Metric(name=k, value=float(v)) for k, v in record.get("metrics", {}).items()
               if isinstance(v, (int, float))]
    task = typed.task_to_ros(EpisodeBrief.of(episode, int(record["seed"]), run=0, round=round))
    solvable = record.get("solvable")
    msg = EpisodeMsg(status=EpisodeMsg.ENDED, has_task=True, task=task, path=list(record["path"]),
                     actions=[_action_code(a) for a in record.get("actions", [])], steps=int(record["steps"]),
                     end_reason=record["end_reason"], error=str(record.get("error") or ""),
                     path_geo=[geo(nodes[n].lat, nodes[n].lon) for n in record["path"]],
                     solvable=(EpisodeMsg.SOLVABLE_UNKNOWN if solvable is None else
                               EpisodeMsg.SOLVABLE_YES if solvable else EpisodeMsg.SOLVABLE_NO),
                     metrics=metrics, answer=str(record.get("answer") or ""))
    success = float(record.get("metrics", {}).get(family_of_record(record).success_metric, 0)) >= 100
    outcome = Outcome(index=0, total=1, episode_id=episode.episode_id, seed=int(record["seed"]), round=round,
                      end_reason=record["end_reason"], success=success,
                      metrics=metrics, record_json=json.dumps(record))
    return RunEpisode.Result(episode=msg, outcome=outcome)


def rejected_episode(code: str, reason: str) -> RunEpisode.Result:
    return RunEpisode.Result(episode=EpisodeMsg(status=EpisodeMsg.IDLE, end_reason="rejected",
                                                error=f"rejected ({code}): {reason}"),
                             outcome=Outcome(end_reason="rejected"))


# -- the servers ----------------------------------------------------------------------------------


def _uuid(goal_handle: Any) -> bytes:
    return bytes(goal_handle.goal_id.uuid)


def _accept(goal_request: Any) -> GoalResponse:
    """Every goal is accepted: a refused one is aborted with its reason (module docstring)."""
    return GoalResponse.ACCEPT


class EStopInput:
    """A live loop's e-stop mirrors ESTOP_TOPIC (true latches, false releases the source), heard
    from transient-local and volatile publishers alike, and is cleared by `~/reset_estop`; the
    vehicle bridge's own gate still stops the vehicle on its own latch."""

    def __init__(self, node: Any, loop: LiveLoop) -> None:
        self.loop = loop
        for profile in (qos.ESTOP, qos.ESTOP_VOLATILE):
            node.create_subscription(Bool, ESTOP_TOPIC, self._on_estop, profile)
        node.create_service(Trigger, "~/reset_estop", self._on_reset_estop)

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self.loop.trigger_estop(ESTOP_TOPIC, "e-stop topic true")
        else:
            self.loop.release_estop(ESTOP_TOPIC)

    def _on_reset_estop(self, request: Any, response: Any) -> Any:
        response.success, response.message = self.loop.reset_estop()
        return response


class SeekServer:
    """Seek goals on `~/seek` into calls on a SeekServerSession."""

    def __init__(self, node: Any, session: SeekServerSession, outputs: ForwardingOutputs) -> None:
        self.node, self.session = node, session
        outputs.listener = self
        self._goals: dict[str, tuple[Any, Future]] = {}  # core goal id -> (goal handle, result future)
        self._ids: dict[bytes, str] = {}  # action goal uuid -> core goal id
        self._server = ActionServer(node, Seek, "~/seek", execute_callback=self._execute, goal_callback=_accept,
                                    cancel_callback=self._cancel)

    async def _execute(self, goal_handle: Any) -> Seek.Result:
        goal = goal_handle.request
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            return Seek.Result(outcome=Seek.Result.CANCELLED, code="cancelled", position=geo(math.nan, math.nan),
                               reason="cancelled before it started")
        answer = self.session.submit_from_fix(SeekRequest(goal.need, goal.max_steps, goal.preempt,
                                                          goal.family or DEFAULT_FAMILY))
        if not answer.accepted or answer.goal_id is None:
            return self._reject(goal_handle, answer.code, answer.reason)
        future = Future()
        self._goals[answer.goal_id] = (goal_handle, future)
        self._ids[_uuid(goal_handle)] = answer.goal_id
        self.node.get_logger().info(f"seek goal {answer.goal_id}: {answer.reason}")
        try:
            result: SeekResult = await future
        finally:
            self._ids.pop(_uuid(goal_handle), None)
            self._goals.pop(answer.goal_id, None)
        msg = seek_result(result, self.session.world, self.session.where_ended(result))
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif msg.outcome in (Seek.Result.FOUND, Seek.Result.BUDGET, Seek.Result.ANSWERED):
            goal_handle.succeed()
        else:  # preempted, stalled, e-stop, a pilot's takeover, a lost link, a failed decision
            goal_handle.abort()
        return msg

    def _reject(self, goal_handle: Any, code: str, reason: str) -> Seek.Result:
        """ABORTED (never SUCCEEDED), so `ros2 action send_goal` says the goal failed. An empty
        need is how `SeekClient.wait_until_ready` probes the server: logged, but not as a warning."""
        log = self.node.get_logger()
        probe = code == "bad_need" and not str(goal_handle.request.need).strip()
        (log.debug if probe else log.warning)(f"seek goal rejected ({code}): {reason}")
        goal_handle.abort()
        return rejected_seek(code, reason)

    def _cancel(self, goal_handle: Any) -> CancelResponse:
        """Hold now: the core sends the HOLD command and ends the goal before this returns. A goal
        not started yet is cancelled when its turn comes; one that has just ended keeps its result."""
        goal_id = self._ids.get(_uuid(goal_handle))
        if goal_id is None or self.session.cancel_goal(goal_id, "cancelled by the client"):
            return CancelResponse.ACCEPT
        return CancelResponse.REJECT

    # -- from the session (ForwardingOutputs.listener) -----------------------------------------

    def feedback(self, feedback: SeekFeedback) -> None:
        entry = self._goals.get(feedback.goal_id)
        if entry is not None:
            entry[0].publish_feedback(seek_feedback(feedback, self.session.steps_left(feedback.step),
                                                    self.session.last_action, self.session.fix_now()))

    def result(self, result: SeekResult) -> None:
        entry = self._goals.pop(result.goal_id, None)
        if entry is not None:
            entry[1].set_result(result)

    def outcome(self, record: dict[str, Any]) -> None:
        """A seek writes no benchmark record."""


class RunEpisodeServer:
    """RunEpisode goals on `~/run_episode` into tasks of an EpisodeServerLoop."""

    def __init__(self, node: Any, loop: EpisodeServerLoop, outputs: ForwardingOutputs) -> None:
        self.node, self.loop = node, loop
        outputs.listener = self
        loop.on_step = self._step
        self._active: Optional[tuple[Any, Future]] = None
        self._server = ActionServer(node, RunEpisode, "~/run_episode", execute_callback=self._execute,
                                    goal_callback=_accept, cancel_callback=self._cancel)

    async def _execute(self, goal_handle: Any) -> RunEpisode.Result:
        goal = goal_handle.request
        refused = self.loop.refusal(goal.episode_id, goal.round, goal.max_steps, self._active is not None)
        if refused is not None or goal_handle.is_cancel_requested:
            code, reason = refused or ("cancelled", "cancelled before it started")
            self.node.get_logger().warning(f"run_episode goal rejected ({code}): {reason}")
            goal_handle.canceled() if goal_handle.is_cancel_requested else goal_handle.abort()
            return rejected_episode(code, reason)
        future = Future()
        self._active = (goal_handle, future)
        world, episode = self.loop.episodes[goal.episode_id]
        try:
            self.loop.run_task(goal.episode_id, int(goal.seed))
            record: dict[str, Any] = await future
        finally:
            self._active = None
        msg = episode_result(record, world, episode, int(goal.round))
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return msg

    def _cancel(self, goal_handle: Any) -> CancelResponse:
        if self._active is not None and self._active[0] is goal_handle:
            self.loop.cancel("cancelled by the client")
        return CancelResponse.ACCEPT

    def _step(self, step: EpisodeStep) -> None:
        if self._active is not None:
            self._active[0].publish_feedback(RunEpisode.Feedback(
                step=step.step, steps_left=step.steps_left, node=step.node, action=agent_action(step.action),
                rationale=step.rationale, distance_m=float(step.distance_m),
                decision_latency_s=float(step.decision_latency_s)))

    def outcome(self, record: dict[str, Any]) -> None:
        if self._active is not None and not self._active[1].done():
            self._active[1].set_result(record)

    def feedback(self, feedback: SeekFeedback) -> None:
        """Not a seek."""

    def result(self, result: SeekResult) -> None:
        """Not a seek."""


def serve(node: Any, loop: EpisodeLoop) -> Optional[SeekServer | RunEpisodeServer]:
    """The e-stop input of a live loop, and the action server of `loop` on `node`; None for a
    loop no server drives (one whose outputs are not ForwardingOutputs has nobody to hear its
    goals' feedback)."""
    if isinstance(loop, LiveLoop) and loop.estop is not None:
        EStopInput(node, loop)
    if isinstance(loop, SeekServerSession) and isinstance(loop.outputs, ForwardingOutputs):
        return SeekServer(node, loop, loop.outputs)
    if isinstance(loop, EpisodeServerLoop) and isinstance(loop.outputs, ForwardingOutputs):
        return RunEpisodeServer(node, loop, loop.outputs)
    return None

"""The supervisor's action servers: `Seek` on /supervisor/seek (mode seek: a need given at run
time, sought live from where the vehicle stands) and `RunEpisode` on /supervisor/run_episode
(mode episodes: one dataset task on the replay world per goal). The episode loops are core
(`SeekSession`, `ReplayLoop`); this module only converts goals into calls on them, and their
feedback and results into action messages. The supervisor node attaches it with `serve()`.

A goal the core refuses (an empty or over-long need, another goal active without preempt, a
latched e-stop, no fix, off the street graph, outside the geofence, the decision node not yet
active, an unknown episode) is accepted and at once aborted, its result carrying the core's
code and one-line reason (Seek: outcome REJECTED, `code` and `reason`; RunEpisode:
`episode.error` "rejected (CODE): ..."): rclpy's GoalResponse.REJECT cannot carry text, and a
result reaches every client, `ros2 action send_goal` included. The same line goes to the node's
log. Nothing moves for a rejected goal. The geofence is the one of the `safety_config` file the
vehicle bridge's gate reads (core.vehicles.safety.config.load_safety_config), given to the supervisor too.

Cancel: the cancel callback calls the core's `cancel` at once (no waiting in a callback), which
sends the HOLD motion command before the callback returns; the vehicle's safety gate still
filters every command. Everything runs on the node's single-threaded executor: the execute
callbacks are coroutines that await an rclpy Future the loop's result completes.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from cityseeker_interfaces.action import RunEpisode, Seek
from cityseeker_interfaces.msg import AgentAction, GeoPoint, Metric, Outcome
from cityseeker_interfaces.msg import Episode as EpisodeMsg
from cityseeker_interfaces.msg import Task as TaskMsg
from cityseeker_ros.core.agents.memory.store import MemoryStore
from cityseeker_ros.core.agents.policies.base import Decision
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.guidance import guide_action
from cityseeker_ros.core.loop.replay import ReplayLoop
from cityseeker_ros.core.loop.run_plan import RunPlan, SeededEpisode
from cityseeker_ros.core.loop.seek import (
    SeekFeedback,
    SeekOutputs,
    SeekRequest,
    SeekResult,
    SeekSession,
    path_length_m,
)
from cityseeker_ros.core.loop.state_machine import EpisodeLoop, Outputs, ViewSet
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.ros import qos

SEEK, EPISODES = "seek", "episodes"
MODES = (SEEK, EPISODES)  # the supervisor modes this module serves
FIX_MAX_AGE_S = 5.0  # a goal needs a fix at most this old to place the vehicle on the graph
OUTCOME_OF = {"stopped": Seek.Result.FOUND, "budget": Seek.Result.BUDGET, "cancelled": Seek.Result.CANCELLED}
NOT_READY = "the supervisor is starting: the decision node is not active yet"


# -- the loops' outputs, passed on to the node and to the action server --------------------------


class ForwardingOutputs(SeekOutputs):
    """Every output to `inner` (the node's messages); feedback, results and task outcomes also to
    `listener` (the action server), set once it exists."""

    def __init__(self, inner: Outputs) -> None:
        self.inner = inner
        self.listener: Any = None

    def feedback(self, feedback: SeekFeedback) -> None:
        if self.listener is not None:
            self.listener.feedback(feedback)

    def result(self, result: SeekResult) -> None:
        if self.listener is not None:
            self.listener.result(result)

    def outcome(self, index: int, total: int, record: dict[str, Any]) -> None:
        self.inner.outcome(index, total, record)
        if self.listener is not None:
            self.listener.outcome(record)


def _forward(name: str) -> Callable[..., None]:
    def forward(self: ForwardingOutputs, *args: Any, **kwargs: Any) -> None:
        getattr(self.inner, name)(*args, **kwargs)
    forward.__name__ = name
    return forward


for _name in ("select", "ask", "act", "command", "guidance", "progress", "task_started", "task_ended", "status",
              "log"):
    setattr(ForwardingOutputs, _name, _forward(_name))


# -- the loops ------------------------------------------------------------------------------------


class RosSeekSession(SeekSession):
    """A SeekSession that keeps what a goal and its feedback need from the node's inputs: the
    latest fix (a goal starts from it) and the action behind each step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fix: Optional[tuple[float, float, float]] = None  # lat, lon, when (monotonic)
        self.last_action: Optional[Action] = None

    def location(self, lat: Optional[float], lon: Optional[float], node: Optional[str], on_node: bool) -> None:
        if lat is not None and lon is not None:
            self.fix = (lat, lon, self.clock())
        super().location(lat, lon, node, on_node)

    @property
    def budget(self) -> int:
        """The active goal's step budget."""
        return self._max_steps()

    def fix_now(self) -> tuple[Optional[float], Optional[float]]:
        """The latest fix, or (None, None) when there is none younger than FIX_MAX_AGE_S."""
        if self.fix is None or self.clock() - self.fix[2] > FIX_MAX_AGE_S:
            return None, None
        return self.fix[0], self.fix[1]

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        self.last_action = action
        super()._send(view_set, action, reason, confidence)


@dataclass(frozen=True)
class EpisodeStep:
    """One step of a RunEpisode goal, as its feedback says it."""

    step: int
    steps_left: int
    node: str  # after the step
    action: Action
    rationale: str
    distance_m: float
    decision_latency_s: float


class EpisodeServerLoop(ReplayLoop):
    """A replay loop with no plan of its own: `run_task` starts one task (all its rounds, as the
    in-process benchmark runs it); `cancel` ends it through the world node, like a failed
    decision does. `on_step` hears every step."""

    def __init__(self, config: BenchmarkConfig, worlds: Sequence[World], memory: Optional[MemoryStore],
                 supervisor: Optional[BcrPolicy], outputs: Outputs, decision_timeout_s: float,
                 select_timeout_s: float) -> None:
        super().__init__(config, RunPlan(config, [], memory), supervisor, outputs, decision_timeout_s,
                         select_timeout_s)
        self.memory = memory
        self.episodes: dict[str, tuple[World, Episode]] = {e.episode_id: (w, e) for w in worlds for e in w.episodes}
        self.on_step: Callable[[EpisodeStep], None] = lambda step: None
        self.cancel_reason: Optional[str] = None
        self._walked: list[str] = []
        self._asked_at: Optional[float] = None

    @property
    def busy(self) -> bool:
        return self.session is not None

    def run_task(self, episode_id: str, seed: int) -> None:
        world, episode = self.episodes[episode_id]
        self.plan, self.done = RunPlan(self.config, [SeededEpisode(world, episode, seed)], self.memory), 0
        self.state = "starting"
        self.start()

    def cancel(self, reason: str) -> bool:
        """End the running task: the view set awaiting a decision (or the next one) is answered
        with an error, and the world node ends the episode with it."""
        if self.session is None:
            return False
        self.cancel_reason = reason
        if self._pending is not None:
            view_set, self._pending = self._pending[0], None
            self.outputs.act(view_set.view_set_id, None, reason)
        return True

    def decision(self, view_set_id: str, decision: Optional[Decision], records: list[dict[str, Any]],
                 error: Optional[str] = None) -> None:
        pending = self._pending
        self._asked_at = pending[1] if pending is not None and pending[0].view_set_id == view_set_id else None
        super().decision(view_set_id, decision, records, error)

    def _begin(self, task: SeededEpisode, round: int) -> None:
        self.cancel_reason, self._walked, self._asked_at = None, [task.episode.start], None
        super()._begin(task, round)

    def _ask_or_act(self, view_set: ViewSet) -> None:
        if self.cancel_reason is not None:
            self.outputs.act(view_set.view_set_id, None, self.cancel_reason)
            return
        self._asked_at = None
        super()._ask_or_act(view_set)

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        super()._send(view_set, action, reason, confidence)
        assert self.session is not None
        world = self.session.world
        try:
            after = guide_action(world.graph, view_set.node, action, view_set.facing, reason, confidence,
                                 world.actions).next_node or view_set.node
        except ConfigError:  # an invalid move: the world refuses it and the agent stays
            after = view_set.node
        if after != self._walked[-1]:
            self._walked.append(after)
        latency = self.clock() - self._asked_at if self._asked_at is not None else 0.0
        steps_left = view_set.observation.steps_left
        taken = 0 if action.is_stop else 1  # a stop is a decision, not a step
        self.on_step(EpisodeStep(view_set.step + taken, max(0, steps_left - taken), after, action, reason,
                                 path_length_m(world.graph, self._walked), latency))


def make_loop(mode: str, config: BenchmarkConfig, worlds: Sequence[World], memory: Optional[MemoryStore],
              supervisor: Optional[BcrPolicy], outputs: Outputs, *, decision_timeout_s: float,
              select_timeout_s: float, stall_timeout_s: float, altitude_m: float,
              safety_config: str = "") -> EpisodeLoop:
    """The loop of a served mode, its outputs passed on to `outputs` and to the action server.
    Mode seek: `safety_config` ('' none) is the vehicle's safety file, whose geofence a goal's
    start must lie in; a bad file fails here, naming the file and the field."""
    forwarding = ForwardingOutputs(outputs)
    if mode == SEEK:
        if len(worlds) != 1:
            raise ConfigError(f"mode seek: parameter data must hold one world (the street graph the vehicle is "
                              f"on), got {len(worlds)}: {', '.join(w.city for w in worlds)}")
        geofence = load_safety_config(safety_config).geofence if safety_config else None
        return RosSeekSession(worlds[0], config, forwarding, decision_timeout_s=decision_timeout_s,
                              stall_timeout_s=stall_timeout_s, altitude_m=altitude_m, estop=EStop(),
                              geofence=geofence)
    if mode == EPISODES:
        return EpisodeServerLoop(config, worlds, memory, supervisor, forwarding, decision_timeout_s,
                                 select_timeout_s)
    raise ConfigError(f"parameter mode: {mode!r} is not served by an action server ({', '.join(MODES)})")


# -- messages -------------------------------------------------------------------------------------


def geo(lat: float, lon: float) -> GeoPoint:
    return GeoPoint(latitude=float(lat), longitude=float(lon), altitude=math.nan)


def agent_action(action: Optional[Action], kind: str = "") -> AgentAction:
    """A core Action (or, without one, the step's kind: move, back or stop) as AgentAction."""
    if action is None:
        code = {"move": AgentAction.MOVE, "back": AgentAction.BACK}.get(kind, AgentAction.STOP)
        return AgentAction(kind=code, index=-1)
    if action.is_stop:
        return AgentAction(kind=AgentAction.STOP, index=-1)
    if action.back_to is not None:
        return AgentAction(kind=AgentAction.BACK, index=-1, back_to=action.back_to)
    return AgentAction(kind=AgentAction.MOVE, index=int(action.index if action.index is not None else -1))


def seek_feedback(feedback: SeekFeedback, budget: int, action: Optional[Action],
                  fix: tuple[Optional[float], Optional[float]]) -> Seek.Feedback:
    lat, lon = fix
    return Seek.Feedback(
        node=feedback.node, step=feedback.step, steps_left=max(0, budget - feedback.step),
        action=agent_action(action, feedback.action),
        heading_deg=float(feedback.heading_deg) if feedback.heading_deg is not None else math.nan,
        direction=feedback.direction or "", reason=feedback.reason, distance_m=float(feedback.distance_m),
        position=geo(lat, lon) if lat is not None and lon is not None else geo(math.nan, math.nan))


def seek_result(result: SeekResult, world: World, fix: tuple[Optional[float], Optional[float]]) -> Seek.Result:
    lat, lon = fix if fix[0] is not None else (result.lat, result.lon)
    nodes = world.graph.nodes
    return Seek.Result(
        outcome=OUTCOME_OF.get(result.outcome, Seek.Result.FAILED), code=result.outcome, node=result.node,
        position=geo(lat, lon), path=list(result.path),
        path_geo=[geo(nodes[n].lat, nodes[n].lon) for n in result.path], steps=result.steps,
        distance_m=float(result.distance_m), reason=result.message)


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
    task = TaskMsg(episode_id=episode.episode_id, city=episode.city, category=episode.category,
                   difficulty=episode.difficulty, instruction=episode.instruction, request=episode.request,
                   start=episode.start, seed=int(record["seed"]), round=round)
    solvable = record.get("solvable")
    msg = EpisodeMsg(status=EpisodeMsg.ENDED, has_task=True, task=task, path=list(record["path"]),
                     actions=[_action_code(a) for a in record.get("actions", [])], steps=int(record["steps"]),
                     end_reason=record["end_reason"], error=str(record.get("error") or ""),
                     path_geo=[geo(nodes[n].lat, nodes[n].lon) for n in record["path"]],
                     solvable=(EpisodeMsg.SOLVABLE_UNKNOWN if solvable is None else
                               EpisodeMsg.SOLVABLE_YES if solvable else EpisodeMsg.SOLVABLE_NO),
                     metrics=metrics)
    outcome = Outcome(index=0, total=1, episode_id=episode.episode_id, seed=int(record["seed"]), round=round,
                      end_reason=record["end_reason"], success=float(record.get("metrics", {}).get("tcp50", 0)) >= 100,
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


class SeekServer:
    """Seek goals on `~/seek` into calls on a RosSeekSession. The session's e-stop mirrors
    /estop (std_msgs/Bool, as the vehicle bridges hear it: true latches, false releases the
    source) and is cleared by `~/reset_estop`, so no goal starts, and an active one ends held,
    while it is latched; the bridge's own gate still stops the vehicle on its own latch."""

    def __init__(self, node: Any, session: RosSeekSession, outputs: ForwardingOutputs) -> None:
        self.node, self.session = node, session
        outputs.listener = self
        self._goals: dict[str, tuple[Any, Future]] = {}  # core goal id -> (goal handle, result future)
        self._ids: dict[bytes, str] = {}  # action goal uuid -> core goal id
        self._server = ActionServer(node, Seek, "~/seek", execute_callback=self._execute, goal_callback=_accept,
                                    cancel_callback=self._cancel)
        node.create_subscription(Bool, "/estop", self._on_estop, qos.ESTOP)
        node.create_service(Trigger, "~/reset_estop", self._on_reset_estop)

    def _on_estop(self, msg: Bool) -> None:
        estop = self.session.estop
        assert estop is not None
        if msg.data:
            estop.trigger("/estop", "e-stop topic true", held=True)
            self.session.tick()  # ends an active goal now, held
        else:
            estop.release("/estop")

    def _on_reset_estop(self, request: Any, response: Any) -> Any:
        assert self.session.estop is not None
        check = self.session.estop.reset()
        response.success, response.message = check.ok, check.reason or "e-stop reset"
        return response

    async def _execute(self, goal_handle: Any) -> Seek.Result:
        goal = goal_handle.request
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            return Seek.Result(outcome=Seek.Result.CANCELLED, code="cancelled", position=geo(math.nan, math.nan),
                               reason="cancelled before it started")
        if self.session.state == "starting":
            return self._reject(goal_handle, "not_ready", NOT_READY)
        if self.session.fix is None:  # never had one: the localiser is starting (a lost fix is no_fix)
            return self._reject(goal_handle, "not_ready", "no location from the localiser yet")
        answer = self.session.submit(SeekRequest(goal.need, goal.max_steps, goal.preempt), *self.session.fix_now())
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
        msg = seek_result(result, self.session.world, self.session.fix_now())
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif msg.outcome in (Seek.Result.FOUND, Seek.Result.BUDGET):
            goal_handle.succeed()
        else:  # preempted, stalled, e-stop, a failed decision
            goal_handle.abort()
        return msg

    def _reject(self, goal_handle: Any, code: str, reason: str) -> Seek.Result:
        """ABORTED (never SUCCEEDED), so `ros2 action send_goal` says the goal failed."""
        self.node.get_logger().warning(f"seek goal rejected ({code}): {reason}")
        goal_handle.abort()
        return rejected_seek(code, reason)

    def _cancel(self, goal_handle: Any) -> CancelResponse:
        """Hold now: the core sends the HOLD command and ends the goal before this returns. A goal
        not started yet is cancelled when its turn comes; one that has just ended keeps its result."""
        goal_id = self._ids.get(_uuid(goal_handle))
        if goal_id is None:
            return CancelResponse.ACCEPT
        if self.session.active != goal_id:
            return CancelResponse.REJECT
        self.session.cancel("cancelled by the client")
        return CancelResponse.ACCEPT

    # -- from the session (ForwardingOutputs.listener) -----------------------------------------

    def feedback(self, feedback: SeekFeedback) -> None:
        entry = self._goals.get(feedback.goal_id)
        if entry is not None:
            entry[0].publish_feedback(seek_feedback(feedback, self.session.budget, self.session.last_action,
                                                    self.session.fix_now()))

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

    def _check(self, goal: Any) -> Optional[tuple[str, str]]:
        config = self.loop.config
        if self.loop.state == "starting":
            return "not_ready", NOT_READY
        if self._active is not None or self.loop.busy:
            return "busy", "another RunEpisode goal is running: cancel it or wait for its result"
        if goal.episode_id not in self.loop.episodes:
            return "bad_episode", f"episode_id {goal.episode_id!r} is not a task of {config.data}"
        if goal.round != 0:
            return "bad_round", (f"round {goal.round}: a goal runs a task's rounds in order from round 0 "
                                 f"(the run has {config.rounds})")
        if goal.max_steps not in (0, config.max_steps):
            return "bad_budget", (f"max_steps {goal.max_steps}: the replay world's budget is fixed at "
                                  f"{config.max_steps} (0: that budget)")
        return None

    async def _execute(self, goal_handle: Any) -> RunEpisode.Result:
        goal = goal_handle.request
        refused = self._check(goal)
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
    """The action server of `loop` (from `make_loop`) on `node`; None for a loop no server drives."""
    if isinstance(loop, RosSeekSession) and isinstance(loop.outputs, ForwardingOutputs):
        return SeekServer(node, loop, loop.outputs)
    if isinstance(loop, EpisodeServerLoop) and isinstance(loop.outputs, ForwardingOutputs):
        return RunEpisodeServer(node, loop, loop.outputs)
    return None

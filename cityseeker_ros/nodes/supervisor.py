"""The supervisor node: runs a benchmark's episodes (or, live, a vehicle's) over ROS.

The episode loop is core: `ReplayLoop` (core.loop.replay) when the world node keeps the
episode and takes actions, `LiveLoop` (core.loop.live_loop) when the world is real. This
node converts view sets, decisions, episode states and locations into calls on the loop, and the
loop's outputs back into messages: a `Decide` goal (the view set with its prompt context) to the
decision node's `<decision_node>/decide` action, actions on `<world>/action` (replay), motion
commands on `~/command`, AR guidance on `~/guidance` and the walked episode on `~/episode`
(live), each task's record on `~/outcome` for the evaluator, `~/status`, markers, and the log.

No decision within `decision_timeout_s`: the goal is cancelled and the loop holds (nothing
moves: no action, and a HOLD command for a vehicle) and says why on `~/status`, the log and
/diagnostics; the goal is sent again whenever none is in flight (a rejected one after
GOAL_RETRY_S), so a restarted decision node gets it (when this node manages the decision node it
configures and activates a restarted one), and the episode resumes where it stopped (its record
lists the hold). The decision node decides a view set once, so a repeated goal never draws
twice from a policy's random stream. `~/heartbeat` beats while the node runs: vehicle
bridges move only while it is alive. Live, a vehicle under way that makes no progress for
`stall_timeout_s` ends the episode as "stalled" (core.loop.live).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Optional

from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.srv import SetParametersAtomically
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Header
from visualization_msgs.msg import MarkerArray

from cityseeker_interfaces.action import Decide
from cityseeker_ros.core.agents.memory import make_memory_store
from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.benchmark import run_tasks
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.loop.episode_server import EpisodeServerLoop
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.live import check_stall_timeout
from cityseeker_ros.core.loop.live_loop import LiveLoop
from cityseeker_ros.core.loop.replay import ReplayLoop
from cityseeker_ros.core.loop.run_plan import RunPlan
from cityseeker_ros.core.loop.seek_server import SeekServerSession
from cityseeker_ros.core.loop.served import ForwardingOutputs
from cityseeker_ros.core.loop.session import make_bcr_policy
from cityseeker_ros.core.loop.state_machine import (
    EpisodeLoop,
    LiveProgress,
    Outputs,
    SupervisorStatus,
    WorldEpisode,
)
from cityseeker_ros.core.loop.view_set import EpisodeBrief, ViewSet
from cityseeker_ros.core.sensing.localisation import Localisation, LocalisationStatus
from cityseeker_ros.core.tasks.environment import Action, EndReason, Trajectory
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.vehicles.bridge import BridgeStatus
from cityseeker_ros.core.vehicles.safety.commands import Command
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.nodes import supervisor_actions
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, markers, qos, typed
from cityseeker_ros.ros.convert_vehicle import command_to_msg
from cityseeker_ros.ros.decide_client import DecideClient
from cityseeker_ros.ros.parameters import SUPERVISOR, declare, run_config
from cityseeker_ros.ros.schema import (
    ActionMsg,
    CommandMsg,
    EpisodeMsg,
    OutcomeMsg,
)
from cityseeker_ros.ros.spin import spin

# replay: the world node keeps the episode and takes actions (a benchmark); live: the world is real,
# view sets come from camera_ingest, and each decision becomes a motion goal and AR guidance; seek
# (live) and episodes (replay): no plan, goals of the Seek / RunEpisode action (core.loop.seek_server,
# core.loop.episode_server; their servers: nodes/supervisor_actions.py).
MODES = ("replay", "live", "seek", "episodes")
# The transition that brings a lifecycle node in this state closer to active.
LIFECYCLE = {"unconfigured": ("configure", Transition.TRANSITION_CONFIGURE),
             "inactive": ("activate", Transition.TRANSITION_ACTIVATE)}
GOAL_RETRY_S = 0.5  # a rejected Decide goal (the decision node not configured yet) is sent again after this



# The vehicle bridge's SafetyStatus (nodes/vehicle_bridge.py `~/safety`): remap it for a bridge of another name.
VEHICLE_SAFETY_TOPIC = "/vehicle_bridge/safety"

class SupervisorNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("supervisor", **kwargs)
        declare(self, SUPERVISOR)
        p = {spec.name: self.get_parameter(spec.name).value for spec in SUPERVISOR}
        self._config, keys = run_config(p)
        if p["mode"] not in MODES:
            raise ConfigError(f"parameter mode must be one of {', '.join(MODES)}, got {p['mode']!r}")
        self._live = p["mode"] in ("live", "seek")
        self._altitude_m = float(p["altitude_m"])
        worlds = load_dataset(Path(self._config.data), self._config.dataset, family=self._config.family)
        self._worlds = {w.city: w for w in worlds}
        if not keys:
            keys = [(self._worlds[c].episodes[i].episode_id, s) for c, i, s in run_tasks(self._config, self._worlds)]
        memory = None
        if self._config.supervised:
            if not self._config.memory:
                raise ConfigError("parameter memory is required with strategies or rounds > 1: an SQLite file")
            memory = make_memory_store("sqlite", path=self._config.memory)
        plan = RunPlan.from_keys(self._config, worlds, keys, memory)
        supervisor = make_bcr_policy(self._config, memory) if memory is not None else None
        self._decision_timeout_s = float(p["decision_timeout_s"])
        self._select_timeout_s = float(p["select_timeout_s"])
        self._stall_timeout_s = check_stall_timeout(p["stall_timeout_s"])
        self._manage = bool(p["manage_decision_node"])
        self._frame_id = p["frame_id"]
        world, decision = p["world_node"].rstrip("/"), p["decision_node"].rstrip("/")

        self._lifecycle_call: Optional[tuple[Any, Any, float]] = None  # (client, future, sent at) in flight
        self._last_lifecycle_check = 0.0
        self._refused = 0  # transitions the decision node refused in a row: the next try waits longer
        self._retry_at = 0.0  # no transition is asked for before this (monotonic)
        self._finalized_reported = False
        self._graph_city: Optional[str] = None

        self._decide = DecideClient(self, f"{decision}/decide")  # no status subscription: see its module
        self._goal: Optional[DecideGoal] = None  # the Decide goal in flight
        self._goal_retry_at = 0.0  # monotonic: no goal is sent before this
        self._goal_pub = self.create_publisher(Decide.Goal, "~/decide_goal", qos.STATE)
        self._status_pub = self.create_publisher(typed.msg_type(SupervisorStatus), "~/status", qos.STATE)
        self._outcome_pub = self.create_publisher(typed.msg_type(OutcomeMsg), "~/outcome", qos.OUTCOMES)
        self._heartbeat_pub = self.create_publisher(Header, "~/heartbeat", qos.HEARTBEAT)
        self._command_pub = self.create_publisher(typed.msg_type(CommandMsg), "~/command", qos.STATE)
        self._guidance_pub = self.create_publisher(typed.msg_type(Guidance), "~/guidance", qos.STATE)
        self._episode_pub = self.create_publisher(typed.msg_type(EpisodeMsg), "~/episode", qos.STATE)
        self._markers_pub = self.create_publisher(MarkerArray, "~/markers", qos.STATE)
        self._graph_pub = self.create_publisher(MarkerArray, "~/graph_markers", qos.STATE)
        self._action_pub = self.create_publisher(typed.msg_type(ActionMsg), f"{world}/action", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.create_subscription(typed.msg_type(ViewSet), f"{world}/views", self._on_views, qos.STATE)
        self.create_subscription(typed.msg_type(EpisodeMsg), f"{world}/episode", self._on_episode, qos.STATE)
        if self._live:
            self.create_subscription(typed.msg_type(Localisation), f"{p['localiser_node'].rstrip('/')}/location",
                                     self._on_location, qos.STATE)
            self.create_subscription(typed.msg_type(BridgeStatus), VEHICLE_SAFETY_TOPIC, self._on_vehicle_safety,
                                     qos.STATE)
        self._select = self.create_client(SetParametersAtomically, f"{world}/set_parameters_atomically")
        self._get_state = self.create_client(GetState, f"{decision}/get_state")
        self._change_state = self.create_client(ChangeState, f"{decision}/change_state")
        self.create_timer(1.0 / float(p["heartbeat_rate_hz"]), self._tick)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)
        outputs = RosOutputs(self)
        self._loop: EpisodeLoop
        if p["mode"] == "seek":
            self._loop = SeekServerSession.for_worlds(
                worlds, self._config, ForwardingOutputs(outputs), safety_config=p["safety_config"],
                decision_timeout_s=self._decision_timeout_s, stall_timeout_s=self._stall_timeout_s,
                altitude_m=self._altitude_m)
        elif p["mode"] == "episodes":
            self._loop = EpisodeServerLoop(self._config, worlds, memory, supervisor, ForwardingOutputs(outputs),
                                           self._decision_timeout_s, self._select_timeout_s)
        elif self._live:
            self._loop = LiveLoop(self._config, plan, supervisor, outputs, self._decision_timeout_s,
                                  self._stall_timeout_s, self._altitude_m, estop=EStop())
        else:
            self._loop = ReplayLoop(self._config, plan, supervisor, outputs, self._decision_timeout_s,
                                    self._select_timeout_s)
        self._loop.note("waiting for the decision node" if self._manage else "")
        self._actions = supervisor_actions.serve(self, self._loop)
        self.get_logger().info(f"{len(plan.tasks)} tasks x {self._config.rounds} round(s), "
                               f"policy {self._config.policy}, strategies "
                               f"{[s['name'] for s in self._config.strategies] or 'none'}")

    def _now_msg(self) -> Any:
        return self.get_clock().now().to_msg()

    def _stamp(self) -> Stamp:
        return convert.stamp_from_msg(self._now_msg())

    # -- inputs: messages into calls on the loop -----------------------------------------------

    def _received(self, msg: Any, what: str) -> Any:
        """The message's core value, or None (logged) when it is malformed."""
        try:
            return typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed {what}: {exc}")
            return None

    def _on_views(self, msg: Any) -> None:
        view_set: Optional[ViewSet] = self._received(msg, "view set")
        if view_set is None:
            return
        self._loop.view_set(view_set)

    def _on_episode(self, msg: Any) -> None:
        episode: Optional[EpisodeMsg] = self._received(msg, "episode state")
        if episode is None:
            return
        if not isinstance(self._loop, ReplayLoop):
            return
        task, trajectory = episode.task, None
        if episode.status == "ended" and episode.end_reason is not None:
            trajectory = Trajectory(path=list(episode.path), headings=list(episode.actions),
                                    end_reason=EndReason(episode.end_reason), error=episode.error,
                                    answer=episode.answer)
        self._loop.world_episode(WorldEpisode(task.run if task else None, task.episode_id if task else None,
                                              task.seed if task else None, trajectory))

    def _on_location(self, msg: Any) -> None:
        if not isinstance(self._loop, LiveLoop):
            return
        location: Optional[Localisation] = self._received(msg, "location")
        if location is None:
            return
        self._loop.location(location.lat, location.lon, location.node_id,
                            location.status == LocalisationStatus.ON_NODE)

    def _on_vehicle_safety(self, msg: Any) -> None:
        """The vehicle bridge's status: a pilot who takes over, or a link lost, ends the episode
        under way (a Seek: PILOT_OVERRIDE, LINK_LOST) and nothing leaves until it is over."""
        if not isinstance(self._loop, LiveLoop):
            return
        status: Optional[BridgeStatus] = self._received(msg, "safety status")
        if status is None:
            return
        self._loop.vehicle_status(status.code, status.reason)

    # -- the Decide action ---------------------------------------------------------------------

    def _ask(self, view_set_id: str, goal: Decide.Goal) -> None:
        """A new question: any goal still in flight is for an older view set (cancelled)."""
        self._drop_goal()
        self._goal = DecideGoal(view_set_id, goal)
        self._goal_retry_at = 0.0
        self._send_goal()

    def _send_goal(self) -> None:
        goal = self._goal
        if goal is None or goal.sent_at is not None or time.monotonic() < self._goal_retry_at:
            return
        if not self._decide.server_is_ready():
            return
        goal.sent_at = time.monotonic()
        goal.tries += 1
        future = self._decide.send_goal_async(goal.goal)
        future.add_done_callback(lambda f, goal=goal: self._on_goal_response(goal, f))

    def _on_goal_response(self, goal: DecideGoal, future) -> None:
        if goal is not self._goal:  # dropped meanwhile: cancel it if it was accepted
            handle = future.result()
            if handle is not None and handle.accepted:
                handle.cancel_goal_async()
            return
        handle = future.result()
        if handle is None or not handle.accepted:
            self.get_logger().warning(f"the decision node rejected the goal for view set {goal.view_set_id} "
                                      f"(try {goal.tries}): see its log; sending it again")
            goal.sent_at, self._goal_retry_at = None, time.monotonic() + GOAL_RETRY_S
            return
        goal.handle = handle
        handle.get_result_async().add_done_callback(lambda f, goal=goal: self._on_result(goal, f))

    def _on_result(self, goal: DecideGoal, future) -> None:
        response = future.result()
        if goal is not self._goal:
            return
        if response is None or response.status != GoalStatus.STATUS_SUCCEEDED:
            goal.sent_at, goal.handle = None, None  # aborted (the node cleaned up): ask again
            self._goal_retry_at = time.monotonic() + GOAL_RETRY_S
            return
        self._goal = None
        try:
            answer = typed.decision_from_ros(response.result.decision)
        except ValueError as exc:
            self.get_logger().error(f"the decision for view set {goal.view_set_id} is malformed: {exc}")
            self._loop.decision(goal.view_set_id, None, [], f"malformed decision: {str(exc).splitlines()[0]}")
            return
        self._loop.answer(answer)

    def _drop_goal(self) -> None:
        """Cancel the goal in flight (the decision node keeps a decision it completes anyway)."""
        goal, self._goal = self._goal, None
        if goal is not None and goal.handle is not None:
            goal.handle.cancel_goal_async()

    def _check_goal(self, now: float) -> None:
        """The goal in flight: cancelled once older than decision_timeout_s (its node may have
        died), then sent again, so a restarted node gets it; none once the loop asks nothing."""
        goal = self._goal
        if goal is None:
            return
        if self._loop.pending_view_set != goal.view_set_id:
            self._drop_goal()
            return
        if goal.sent_at is not None and now - goal.sent_at > self._decision_timeout_s:
            if goal.handle is not None:
                goal.handle.cancel_goal_async()
            goal.sent_at, goal.handle = None, None
        self._send_goal()

    # -- timers --------------------------------------------------------------------------------

    def _tick(self) -> None:
        now = time.monotonic()
        self._heartbeat_pub.publish(Header(stamp=self._now_msg(), frame_id=self._loop.state))
        if self._loop.state == "starting":
            if not self._manage:
                self._loop.start()
            elif now - self._last_lifecycle_check > 0.5:
                self._check_decision_node(now)
            return
        self._loop.tick()
        self._check_goal(now)
        if self._manage and self._loop.overdue and now - self._last_lifecycle_check > 1.0:
            self._check_decision_node(now)

    # -- the decision node's lifecycle ---------------------------------------------------------

    def _check_decision_node(self, now: float) -> None:
        """Bring the decision node to active: at start, and after it restarted. A refused
        transition is tried again after 1, 2, 4... up to 30 s; a node that finalized itself
        (a configuration error, which it also exits on) is never asked again."""
        self._last_lifecycle_check = now
        if now < self._retry_at:
            return
        if self._lifecycle_call is not None:
            client, future, sent_at = self._lifecycle_call
            if now - sent_at < 5.0:
                return
            # A request to a node that has just died is never answered: give up on it after 5 s.
            client.remove_pending_request(future)
            self._lifecycle_call = None
        if self._get_state.service_is_ready():
            self._call_lifecycle(self._get_state, GetState.Request(), self._on_decision_state)

    def _call_lifecycle(self, client, request, done) -> None:
        future = client.call_async(request)
        self._lifecycle_call = (client, future, time.monotonic())
        future.add_done_callback(done)

    def _on_decision_state(self, future) -> None:
        self._lifecycle_call = None
        result = future.result()
        label = result.current_state.label if result is not None else ""
        if label == "finalized":  # configuring it failed for good: see its log (it exits)
            if not self._finalized_reported:
                self._finalized_reported = True
                reason = "the decision node finalized itself after a configuration error: see its log"
                self.get_logger().error(reason)
                self._loop.note(reason)
            return
        self._finalized_reported = False  # a node answering in any other state is a fresh start
        if label in LIFECYCLE:
            name, transition = LIFECYCLE[label]
            request = ChangeState.Request()
            request.transition.id = transition
            self.get_logger().info(f"decision node is {label}: {name}")
            self._call_lifecycle(self._change_state, request, self._on_transition)
            return
        if label == "active" and self._loop.state == "starting":
            self._loop.start()

    def _on_transition(self, future) -> None:
        self._lifecycle_call = None
        result = future.result()
        if result is None or not result.success:
            self._refused += 1
            wait = min(30.0, 2.0 ** (self._refused - 1))
            self._retry_at = time.monotonic() + wait
            self.get_logger().error(f"the decision node refused a transition ({self._refused} in a row): "
                                    f"see its log; asking again in {wait:g} s")
        else:
            self._refused, self._retry_at = 0, 0.0
        self._last_lifecycle_check = 0.0  # look again at once (a refusal: once the wait is over)

    # -- reporting -----------------------------------------------------------------------------

    def _publish_status(self) -> None:
        self._status_pub.publish(typed.status_to_ros(self._loop.status(), self._stamp()))

    def _publish_diagnostics(self) -> None:
        status = self._loop.status()
        level = "warn" if status.state == "holding" else "ok"
        values = {k: v for k, v in asdict(status).items() if k != "reason"}
        publish_diagnostics(self, self._diag_pub, "supervisor", level, status.reason or status.state, values)


@dataclass
class DecideGoal:
    """The Decide goal for the view set the loop waits on, and where it stands."""

    view_set_id: str
    goal: Decide.Goal
    sent_at: Optional[float] = None  # monotonic; None: not in flight (to be sent)
    handle: Any = None  # DecideGoalHandle once accepted
    tries: int = 0


class RosOutputs(Outputs):
    """The loop's outputs as the node's messages."""

    def __init__(self, node: SupervisorNode) -> None:
        self.node = node

    def select(self, episode_id: str, seed: int) -> None:
        request = SetParametersAtomically.Request(parameters=[
            Parameter("episode", value=episode_id).to_parameter_msg(),
            Parameter("seed", value=seed).to_parameter_msg()])
        self.node._select.call_async(request).add_done_callback(self._on_selected)

    def _on_selected(self, future) -> None:
        result = future.result()
        if result is not None and not result.result.successful:
            self.node.get_logger().error(f"the world node refused the episode: {result.result.reason}")

    def ask(self, view_set: ViewSet, context: PromptContext, round: int) -> None:
        forward = replace(view_set, task=replace(view_set.task, round=round), context=context)
        goal = Decide.Goal(view_set=typed.view_set_to_ros(forward), context=typed.context_to_ros(context),
                           timeout_s=self.node._decision_timeout_s)
        self.node._ask(view_set.view_set_id, goal)
        self.node._goal_pub.publish(goal)  # what was asked, for bags (bag_eval re-decides from it): after
        # the goal, so this copy's publish is not on the step's critical path

    def act(self, view_set_id: str, action: Optional[Action], error: Optional[str] = None) -> None:
        msg = ActionMsg(view_set_id=view_set_id, action=action, error=error)
        self.node._action_pub.publish(typed.to_ros(msg))

    def command(self, command: Command, reason: str, view_set_id: Optional[str] = None) -> None:
        stamp = convert.stamp_from_msg(self.node._now_msg())
        msg = command_to_msg(command, stamp, reason, view_set_id)
        self.node._command_pub.publish(typed.to_ros(msg))

    def guidance(self, guidance: Guidance, view_set: ViewSet) -> None:
        stamp = convert.stamp_from_msg(self.node._now_msg())
        self.node._guidance_pub.publish(typed.to_ros(convert.guidance_msg(guidance, view_set, stamp)))

    def progress(self, progress: LiveProgress) -> None:
        task = EpisodeBrief.of(progress.episode, progress.seed, progress.run, progress.round)
        msg = EpisodeMsg(status=progress.status, task=task)
        traj = progress.trajectory
        if traj is not None:
            msg.path, msg.actions, msg.steps = list(traj.path), list(traj.headings), traj.steps
            msg.end_reason = traj.end_reason.value if traj.end_reason else None
            msg.error = traj.error
        stamp = convert.stamp_from_msg(self.node._now_msg())
        self.node._episode_pub.publish(typed.episode_to_ros(msg, stamp))

    def task_started(self, world: World, episode: Episode) -> None:
        node = self.node
        if world.city != node._graph_city:
            node._graph_city = world.city
            node._graph_pub.publish(markers.graph_markers(world, node._now_msg(), node._frame_id))
        node._markers_pub.publish(markers.episode_markers(world, episode, [episode.start], node._now_msg(),
                                                          node._frame_id))

    def task_ended(self, world: World, episode: Episode, path: list[str]) -> None:
        self.node._markers_pub.publish(markers.episode_markers(world, episode, path, self.node._now_msg(),
                                                               self.node._frame_id))

    def outcome(self, index: int, total: int, record: dict[str, Any]) -> None:
        self.node._outcome_pub.publish(typed.to_ros(OutcomeMsg(index=index, total=total, record=record)))

    def status(self, status: SupervisorStatus) -> None:
        self.node._status_pub.publish(typed.status_to_ros(status, self.node._stamp()))

    def log(self, level: str, message: str) -> None:
        logger = self.node.get_logger()  # one call per severity: rclpy ties a severity to its call site
        if level == "error":
            logger.error(message)
        elif level == "warning":
            logger.warning(message)
        else:
            logger.info(message)


def main(args=None) -> None:
    spin(SupervisorNode, "supervisor", args)


if __name__ == "__main__":
    main()

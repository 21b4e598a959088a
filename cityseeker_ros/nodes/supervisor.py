"""The supervisor: runs a benchmark's episodes over ROS with the BCR strategies of the core.

For each task of the run plan it selects the episode on the world node, turns each view set into
either an action of its own (a retraced hop, a followed hint) or a request to the decision node
(the view set with its prompt context on `~/views`), turns each decision into an action for the
world, and when the world says the episode ended, publishes the same record an in-process run
writes on `~/outcome` for the evaluator.

No decision within `decision_timeout_s`: it holds (nothing moves: no action, and a HOLD command
for a vehicle), says why on `~/status`, the log and /diagnostics, and — when it manages the
decision node — configures and activates a restarted one; the episode resumes where it stopped
and its record lists the hold. `~/heartbeat` beats while the node runs: vehicle bridges move only
while it is alive. Live, a vehicle under way that makes no progress for `stall_timeout_s` ends
the episode as "stalled" (core.supervisor.live), said on `~/status` and the log.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from pydantic import ValidationError
from rcl_interfaces.srv import SetParametersAtomically
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Header, String
from visualization_msgs.msg import MarkerArray

from cityseeker_ros.core.benchmark import run_tasks
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.environment import Action, EndReason, Observation, Trajectory
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.geodesy import geodesic_m
from cityseeker_ros.core.guidance import guide_action
from cityseeker_ros.core.memory import make_memory_store
from cityseeker_ros.core.policies.base import Decision
from cityseeker_ros.core.supervisor.live import LiveEpisode, check_stall_timeout
from cityseeker_ros.core.supervisor.run_plan import RunPlan
from cityseeker_ros.core.supervisor.session import EpisodeSession, Hold, make_supervisor
from cityseeker_ros.nodes.common import publish_diagnostics, spin
from cityseeker_ros.ros import convert, markers, qos
from cityseeker_ros.ros.parameters import SUPERVISOR, declare, run_config
from cityseeker_ros.ros.schema import (
    ActionMsg,
    CommandMsg,
    DecisionMsg,
    EpisodeMsg,
    GoalField,
    HoldField,
    LocationMsg,
    OutcomeMsg,
    SupervisorStatusMsg,
    ViewSetMsg,
    parse,
)

# The transition that brings a lifecycle node in this state closer to active.
# replay: the world node keeps the episode and takes actions (a benchmark); live: the world is real,
# view sets come from camera_ingest, and each decision becomes a motion goal and AR guidance.
MODES = ("replay", "live")
LIFECYCLE = {"unconfigured": ("configure", Transition.TRANSITION_CONFIGURE),
             "inactive": ("activate", Transition.TRANSITION_ACTIVATE)}


class SupervisorNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("supervisor", **kwargs)
        declare(self, SUPERVISOR)
        p = {spec.name: self.get_parameter(spec.name).value for spec in SUPERVISOR}
        self._config, keys = run_config(p)
        if p["mode"] not in MODES:
            raise ConfigError(f"parameter mode must be one of {', '.join(MODES)}, got {p['mode']!r}")
        self._live = p["mode"] == "live"
        self._altitude_m = float(p["altitude_m"])
        worlds = load_dataset(Path(self._config.data), self._config.dataset)
        self._worlds = {w.city: w for w in worlds}
        if not keys:
            keys = [(self._worlds[c].episodes[i].episode_id, s) for c, i, s in run_tasks(self._config, self._worlds)]
        memory = None
        if self._config.supervised:
            if not self._config.memory:
                raise ConfigError("parameter memory is required with strategies or rounds > 1: an SQLite file")
            memory = make_memory_store("sqlite", path=self._config.memory)
        self._plan = RunPlan.from_keys(self._config, worlds, keys, memory)
        self._supervisor = make_supervisor(self._config, memory) if memory is not None else None
        self._decision_timeout_s = float(p["decision_timeout_s"])
        self._select_timeout_s = float(p["select_timeout_s"])
        self._stall_timeout_s = check_stall_timeout(p["stall_timeout_s"])
        self._manage = bool(p["manage_decision_node"])
        self._frame_id = p["frame_id"]
        world, decision = p["world_node"].rstrip("/"), p["decision_node"].rstrip("/")

        self._state = "starting"
        self._reason = "waiting for the decision node" if self._manage else ""
        self._session: Optional[EpisodeSession] = None
        self._run = 0  # the world node's run of the current task; 0 while selecting
        self._max_run = 0  # the newest run seen from the world node
        self._select_floor = 0  # the newest run before the current selection: the selected one is newer
        self._selected_at = 0.0
        self._latest_views: Optional[ViewSetMsg] = None
        self._latest_episode: Optional[EpisodeMsg] = None
        self._handled: Optional[str] = None  # view set id last acted on
        self._view_set_times: list[float] = []  # when each view set of this round was acted on
        self._pending: Optional[tuple[ViewSetMsg, Observation, float]] = None  # asked, sent at
        self._hold_since: Optional[float] = None
        self._holds = 0
        self._done = 0
        self._episode: Optional[LiveEpisode] = None  # live mode: the episode as the vehicle walks it
        self._goal: Optional[tuple[CommandMsg, float]] = None  # live: the goal under way, last sent at
        self._announced = False  # live: the run is published (the vehicle has reached the start)
        self._live_runs = 0
        self._lifecycle_call: Optional[tuple[Any, Any, float]] = None  # (client, future, sent at) in flight
        self._last_lifecycle_check = 0.0
        self._refused = 0  # transitions the decision node refused in a row: the next try waits longer
        self._retry_at = 0.0  # no transition is asked for before this (monotonic)
        self._finalized_reported = False

        self._views_pub = self.create_publisher(String, "~/views", qos.STATE)
        self._status_pub = self.create_publisher(String, "~/status", qos.STATE)
        self._outcome_pub = self.create_publisher(String, "~/outcome", qos.OUTCOMES)
        self._heartbeat_pub = self.create_publisher(Header, "~/heartbeat", qos.HEARTBEAT)
        self._command_pub = self.create_publisher(String, "~/command", qos.STATE)
        self._guidance_pub = self.create_publisher(String, "~/guidance", qos.STATE)
        self._episode_pub = self.create_publisher(String, "~/episode", qos.STATE)
        self._markers_pub = self.create_publisher(MarkerArray, "~/markers", qos.STATE)
        self._graph_pub = self.create_publisher(MarkerArray, "~/graph_markers", qos.STATE)
        self._graph_city: Optional[str] = None
        self._action_pub = self.create_publisher(String, f"{world}/action", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.create_subscription(String, f"{world}/views", self._on_views, qos.STATE)
        self.create_subscription(String, f"{world}/episode", self._on_episode, qos.STATE)
        self.create_subscription(String, f"{decision}/decision", self._on_decision, qos.STATE)
        if self._live:
            self.create_subscription(String, f"{p['localiser_node'].rstrip('/')}/location", self._on_location,
                                     qos.STATE)
        self._select = self.create_client(SetParametersAtomically, f"{world}/set_parameters_atomically")
        self._get_state = self.create_client(GetState, f"{decision}/get_state")
        self._change_state = self.create_client(ChangeState, f"{decision}/change_state")
        self.create_timer(1.0 / float(p["heartbeat_rate_hz"]), self._tick)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)
        self._publish_status()
        self.get_logger().info(f"{len(self._plan.tasks)} tasks x {self._config.rounds} round(s), "
                               f"policy {self._config.policy}, strategies "
                               f"{[s['name'] for s in self._config.strategies] or 'none'}")

    # -- the run -------------------------------------------------------------------------------

    def _start_next(self) -> None:
        current = self._plan.current()
        if current is None:
            self._session, self._state, self._reason = None, "finished", f"{self._done} tasks done"
            self.get_logger().info(f"finished: {self._done} tasks")
            self._publish_status()
            return
        task, round = current
        self._session = EpisodeSession(task.world, task.episode, task.seed, round, self._config, self._supervisor)
        self._run, self._handled, self._pending = 0, None, None
        self._state, self._reason = "selecting", ""
        self._view_set_times = []
        if self._live:
            self._live_runs += 1
            self._run, self._state = self._live_runs, "running"
            # The run is announced (and the camera looks) only once the vehicle is at the start, so
            # nothing is captured, or turned in place, on the way there.
            self._episode = LiveEpisode(task.episode.start, self._config.max_steps, self._stall_timeout_s)
            self._announced = False
            start = task.world.graph.nodes[task.episode.start]
            self._publish_command(GoalField(lat=start.lat, lon=start.lon, alt_m=self._altitude_m),
                                  f"to the start of episode {task.episode.episode_id}")
        else:
            self._select_episode()
        stamp = self.get_clock().now().to_msg()
        if task.world.city != self._graph_city:
            self._graph_city = task.world.city
            self._graph_pub.publish(markers.graph_markers(task.world, stamp, self._frame_id))
        self._markers_pub.publish(markers.episode_markers(task.world, task.episode, [task.episode.start], stamp,
                                                          self._frame_id))
        self._publish_status()

    def _select_episode(self) -> None:
        assert self._session is not None
        self._selected_at, self._select_floor = time.monotonic(), self._max_run
        request = SetParametersAtomically.Request(parameters=[
            Parameter("episode", value=self._session.episode.episode_id).to_parameter_msg(),
            Parameter("seed", value=self._session.seed).to_parameter_msg()])
        self._select.call_async(request).add_done_callback(self._on_selected)

    def _on_selected(self, future) -> None:
        result = future.result()
        if result is not None and not result.result.successful:
            self.get_logger().error(f"the world node refused the episode: {result.result.reason}")

    def _advance(self) -> None:
        """Act on whatever the newest messages allow: recognise the selected run, act on a new
        view set, or finish the episode."""
        session = self._session
        if session is None:
            return
        views, episode = self._latest_views, self._latest_episode
        if self._run == 0:
            for task in (views.task if views else None, episode.task if episode else None):
                if (task is not None and task.run > self._select_floor and task.episode_id == session.episode.episode_id
                        and task.seed == session.seed):
                    self._run, self._state = task.run, "running" if self._hold_since is None else "holding"
            if self._run == 0:
                return
        if episode is not None and episode.task is not None and episode.task.run == self._run \
                and episode.status == "ended":
            self._finish(episode)
        elif views is not None and views.task.run == self._run and not views.done \
                and views.view_set_id != self._handled:
            self._act_on(views)

    def _act_on(self, view_set: ViewSetMsg) -> None:
        assert self._session is not None
        self._handled = view_set.view_set_id
        self._view_set_times.append(time.monotonic())
        if self._episode is not None:
            if not self._episode.arrive(view_set.node) or self._pending is not None:
                return  # still at the node acted on: the vehicle has not arrived anywhere new
            self._goal = None
            self._publish_live_episode("running")
            if self._episode.done:
                self._finish_live()
                return
        obs = convert.view_set_to_observation(view_set)
        ask = self._session.observe(obs)
        if isinstance(ask, Action):
            self._send(view_set, ask)
            return
        task = view_set.task.model_copy(update={"round": self._session.round})
        forward = view_set.model_copy(update={"task": task, "context": asdict(ask)})
        self._pending = (forward, obs, time.monotonic())
        self._views_pub.publish(convert.to_string(forward))
        self._publish_status()

    def _on_decision_ready(self, decision: DecisionMsg) -> None:
        assert self._session is not None and self._pending is not None
        view_set, obs, asked_at = self._pending
        self._pending = None
        if self._hold_since is not None:
            held = time.monotonic() - asked_at
            self._session.held(Hold(view_set.step, view_set.view_set_id, round(held, 3), self._reason))
            self.get_logger().info(f"resumed: a decision came after {held:.1f} s")
            self._hold_since, self._state, self._reason = None, "running", ""
        if decision.error is not None:
            self._session.decisions.extend(decision.records)
            if self._episode is not None:
                self._episode.fail(decision.error)
                self._finish_live()
            else:
                self._action_pub.publish(convert.to_string(ActionMsg(view_set_id=view_set.view_set_id,
                                                                     error=decision.error)))
            return
        assert decision.action is not None
        core = Decision(convert.action_from_field(decision.action), decision.confidence, decision.rationale)
        action = self._session.decided(obs, core, decision.records)
        self._send(view_set, action, decision.rationale, decision.confidence)

    def _send(self, view_set: ViewSetMsg, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        """To the world node (replay); or, live, as a motion goal and AR guidance (a stop holds)."""
        if self._episode is None:
            msg = ActionMsg(view_set_id=view_set.view_set_id, action=convert.action_to_field(action))
            self._action_pub.publish(convert.to_string(msg))
            return
        assert self._session is not None
        world = self._session.world
        try:
            guidance = guide_action(world.graph, view_set.node, action, view_set.facing, reason, confidence,
                                    world.actions)
        except ConfigError as exc:  # an index the node does not have: the decision cannot be followed
            self._episode.fail(str(exc))
            self._finish_live()
            return
        stamp = convert.stamp_from_msg(self.get_clock().now().to_msg())
        self._guidance_pub.publish(convert.to_string(convert.guidance_msg(guidance, view_set, stamp)))
        self._episode.act(action, guidance.next_node)
        if guidance.next_node is None:
            self._publish_command(HoldField(), guidance.text, view_set.view_set_id)
            self._finish_live()
            return
        there = world.graph.nodes[guidance.next_node]
        goal = GoalField(lat=there.lat, lon=there.lon, alt_m=self._altitude_m, heading_deg=guidance.heading_deg)
        self._publish_command(goal, guidance.text, view_set.view_set_id)

    def _publish_command(self, command: Any, reason: str, view_set_id: Optional[str] = None) -> None:
        """A goal is sent again every second until the vehicle arrives somewhere new (a bridge
        that started late or lost it still gets it; a bridge's watchdog sees a live supervisor);
        a hold replaces it."""
        stamp = convert.stamp_from_msg(self.get_clock().now().to_msg())
        msg = CommandMsg(stamp=stamp, command=command, reason=reason, view_set_id=view_set_id)
        self._command_pub.publish(convert.to_string(msg))
        self._goal = (msg, time.monotonic()) if isinstance(command, GoalField) else None

    def _repeat_goal(self, now: float) -> None:
        if self._goal is not None and self._pending is None and now - self._goal[1] >= 1.0:
            msg = self._goal[0]
            self._publish_command(msg.command, msg.reason, msg.view_set_id)

    def _publish_live_episode(self, status: str) -> None:
        assert self._session is not None and self._episode is not None
        session, traj = self._session, self._episode.trajectory
        task = convert.task_from_episode(session.episode, session.seed, self._run, session.round)
        msg = EpisodeMsg(status=status, task=task)
        if traj is not None:
            msg.path, msg.actions, msg.steps = list(traj.path), list(traj.headings), traj.steps
            msg.end_reason = traj.end_reason.value if traj.end_reason else None
            msg.error = traj.error
        self._episode_pub.publish(convert.to_string(msg))

    def _on_stalled(self) -> None:
        """Live: no progress for stall_timeout_s. Hold the vehicle, end the episode as stalled,
        and say why on the log and ~/status (the reason stays until the state changes)."""
        assert self._session is not None and self._episode is not None and self._episode.trajectory is not None
        reason = f"episode {self._session.episode.episode_id} seed {self._session.seed}: " \
                 f"{self._episode.trajectory.error}"
        self.get_logger().warning(reason)
        self._publish_command(HoldField(), reason)
        self._finish_live()
        self._reason = f"{self._reason}; {reason}" if self._reason else reason
        self._publish_status()

    def _finish_live(self) -> None:
        assert self._episode is not None and self._episode.trajectory is not None
        self._publish_live_episode("ended")
        self._pending = None
        self._complete(self._episode.trajectory)

    def _finish(self, episode: EpisodeMsg) -> None:
        assert episode.end_reason is not None
        self._complete(Trajectory(path=list(episode.path), headings=list(episode.actions),
                                  end_reason=EndReason(episode.end_reason), error=episode.error))

    def _complete(self, trajectory: Trajectory) -> None:
        assert self._session is not None
        session = self._session
        record = session.record(trajectory)
        self._markers_pub.publish(markers.episode_markers(session.world, session.episode, trajectory.path,
                                                          self.get_clock().now().to_msg(), self._frame_id))
        self._log_loop_period()
        final = self._plan.finish(record)
        if final is not None:
            self._outcome_pub.publish(convert.to_string(OutcomeMsg(index=self._done, total=len(self._plan.tasks),
                                                                   record=final)))
            self._done += 1
            self.get_logger().info(f"{final['episode_id']} seed {final['seed']}: {final['end_reason']} after "
                                   f"{final['steps']} steps ({self._done}/{len(self._plan.tasks)})")
        self._start_next()

    def _log_loop_period(self) -> None:
        """Seconds from one view set to the next (decision, action and world step included): the
        loop's pace, logged per episode for operators and benchmarks/ros_loop.py."""
        times = self._view_set_times
        periods = sorted(b - a for a, b in zip(times, times[1:]))
        if periods:
            p50, p95 = periods[len(periods) // 2], periods[min(len(periods) - 1, int(0.95 * len(periods)))]
            self.get_logger().info(f"loop: {len(periods)} steps, period p50 {1000 * p50:.2f} ms "
                                   f"p95 {1000 * p95:.2f} ms")

    # -- inputs --------------------------------------------------------------------------------

    def _on_views(self, msg: String) -> None:
        try:
            self._latest_views = parse(ViewSetMsg, msg.data)
        except ValidationError as exc:
            self.get_logger().warning(f"ignored a malformed view set: {exc.errors()[:1]}")
            return
        self._max_run = max(self._max_run, self._latest_views.task.run)
        self._advance()

    def _on_episode(self, msg: String) -> None:
        try:
            self._latest_episode = parse(EpisodeMsg, msg.data)
        except ValidationError as exc:
            self.get_logger().warning(f"ignored a malformed episode state: {exc.errors()[:1]}")
            return
        if self._latest_episode.task is not None:
            self._max_run = max(self._max_run, self._latest_episode.task.run)
        self._advance()

    def _on_location(self, msg: String) -> None:
        """Live: the distance to the goal under way is the episode's progress (core.supervisor.live);
        the run is announced once the vehicle stands on the task's start node."""
        if self._episode is None or self._session is None:
            return
        try:
            location = parse(LocationMsg, msg.data)
        except ValidationError as exc:
            self.get_logger().warning(f"ignored a malformed location: {exc.errors()[:1]}")
            return
        goal = self._goal[0].command if self._goal is not None else None
        if isinstance(goal, GoalField) and location.lat is not None and location.lon is not None:
            self._episode.approach(geodesic_m(location.lat, location.lon, goal.lat, goal.lon))
        if self._announced:
            return
        if location.status == "on-node" and location.node == self._session.episode.start:
            self._announced = True
            self._publish_live_episode("running")

    def _on_decision(self, msg: String) -> None:
        try:
            decision = parse(DecisionMsg, msg.data)
        except ValidationError as exc:
            self.get_logger().warning(f"ignored a malformed decision: {exc.errors()[:1]}")
            return
        if self._pending is not None and decision.view_set_id == self._pending[0].view_set_id:
            self._on_decision_ready(decision)

    # -- timers --------------------------------------------------------------------------------

    def _tick(self) -> None:
        now = time.monotonic()
        self._heartbeat_pub.publish(Header(stamp=self.get_clock().now().to_msg(), frame_id=self._state))
        if self._state == "starting":
            if not self._manage:
                self._start_next()
            elif now - self._last_lifecycle_check > 0.5:
                self._check_decision_node(now)
            return
        if self._state == "selecting" and self._run == 0 and now - self._selected_at > self._select_timeout_s:
            self.get_logger().warning(f"episode {self._session.episode.episode_id if self._session else '?'} "
                                      f"not started after {self._select_timeout_s:g} s: selecting again")
            self._select_episode()
        if self._live:
            if self._episode is not None and self._episode.check_stall():
                self._on_stalled()
                return
            self._repeat_goal(now)
        if self._pending is not None and now - self._pending[2] > self._decision_timeout_s:
            if self._hold_since is None:
                self._hold_since, self._holds = now, self._holds + 1
                self._state = "holding"
                self._reason = (f"no decision for view set {self._pending[0].view_set_id} within "
                                f"{self._decision_timeout_s:g} s: holding")
                self.get_logger().warning(self._reason)
                self._publish_status()
                if self._live:
                    self._publish_command(HoldField(), self._reason)
            if self._manage and now - self._last_lifecycle_check > 1.0:
                self._check_decision_node(now)

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
                self._reason = "the decision node finalized itself after a configuration error: see its log"
                self.get_logger().error(self._reason)
                self._publish_status()
            return
        self._finalized_reported = False  # a node answering in any other state is a fresh start
        if label in LIFECYCLE:
            name, transition = LIFECYCLE[label]
            request = ChangeState.Request()
            request.transition.id = transition
            self.get_logger().info(f"decision node is {label}: {name}")
            self._call_lifecycle(self._change_state, request, self._on_transition)
            return
        if label == "active" and self._state == "starting":
            self._start_next()

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

    def _status(self) -> SupervisorStatusMsg:
        current = self._plan.current()
        task, round = current if current is not None else (None, None)
        pending = self._pending[0].step if self._pending is not None else None
        return SupervisorStatusMsg(state=self._state, reason=self._reason, done=self._done,
                                   total=len(self._plan.tasks), holds=self._holds,
                                   episode_id=task.episode.episode_id if task else None,
                                   seed=task.seed if task else None, round=round, step=pending)

    def _publish_status(self) -> None:
        self._status_pub.publish(convert.to_string(self._status()))

    def _publish_diagnostics(self) -> None:
        status = self._status()
        level = "warn" if status.state == "holding" else "ok"
        values = {k: v for k, v in status.model_dump().items() if k not in ("kind", "version", "reason")}
        publish_diagnostics(self, self._diag_pub, "supervisor", level, status.reason or status.state, values)


def main(args=None) -> None:
    spin(SupervisorNode, "supervisor", args)


if __name__ == "__main__":
    main()

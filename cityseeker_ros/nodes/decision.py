"""The decision maker as a lifecycle node: any registered policy, the VLM included.

configure: make the policy and `prepare()` it (a VLM loads its model here), subscribe to the
view sets and images: raw sensor_msgs/Image on `images` and CompressedImage on
`images/compressed` (after remapping `images`, as image_transport names them), so any
`image_format` of the world or camera node is understood without a setting here. A
configuration error (a bad parameter, missing data, a model server that cannot be reached) is
final: the transition ends in `finalized`, so a lifecycle manager
stops asking, and the process exits with one line and CONFIG_ERROR_EXIT (ros/spin.py) so a
runner stops the run; any other failure leaves it `unconfigured`, to be tried again.

Decisions are a `Decide` action on `~/decide` (cityseeker_interfaces/action/Decide): a goal
carries a view set and its prompt context, the result the decision; each answer is also
published on `~/decision` (cityseeker_interfaces/msg/Decision) for bags and monitors. Goals are
rejected while unconfigured; accepted while inactive, they wait: activate starts deciding,
deactivate stops starting new decisions (one in progress finishes, its answer waits for the
next activation), cleanup aborts every waiting goal.

A decision runs on one worker thread, never in a callback: the executor keeps serving
transitions, goals, cancels and images while a model thinks. The worker hands each result back
through a guard condition, so goals are answered on the executor thread. Every view set is
decided at most once (a policy's random stream advances per decision, so deciding twice would
change the episode): a goal for a view set already decided, or being decided, gets that
decision; so a client that cancelled on its timeout and asks again loses nothing. Cancelling a
goal abandons it; the policy cannot be interrupted, so its answer is kept for a repeat.
"""
from __future__ import annotations

import queue
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from pydantic import ValidationError
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.task import Future
from sensor_msgs.msg import CompressedImage, Image

from cityseeker_interfaces.action import Decide
from cityseeker_interfaces.msg import Decision as DecisionRos
from cityseeker_ros.core.agents.policies import Policy, make_policy
from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.infra.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.infra.redact import redact, redact_text
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.loop.view_set import Answer, ViewSet
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.parameters import VLM_DECISION, declare, json_parameter, policy_params
from cityseeker_ros.ros.spin import spin

ImageKey = tuple[tuple[int, int], str]  # ((sec, nanosec) of the view set's stamp, frame id)
REMEMBERED = 64  # decisions kept for goals that repeat a view set (a client's retry)
IMAGE_STAMPS = 8  # stamps whose images are kept before any goal names them
FEEDBACK_AFTER_S = 0.5  # goals waiting this long get feedback, every 0.25 s


def _key(stamp: Stamp) -> tuple[int, int]:
    return stamp.sec, stamp.nanosec


def _context(view_set: ViewSet) -> Optional[PromptContext]:
    """The view set's prompt context with empty slots as None; None when it has none."""
    context = view_set.context
    if context is None:
        return None
    return PromptContext(**{k: v or None for k, v in vars(context).items()})


@dataclass
class Waiting:
    """A view set some goals wait on: decided once, every goal answered with the decision."""

    view_set: ViewSet
    since: float  # monotonic: when the first goal for it came (the image timeout counts from here)
    futures: list[Future] = field(default_factory=list)  # one per goal, completed with the answer
    handles: list[ServerGoalHandle] = field(default_factory=list)  # the goals, for feedback


class DecisionNode(LifecycleNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("decision", **kwargs)
        declare(self, VLM_DECISION)
        self._policy: Optional[Policy] = None
        self._policy_name = ""
        self._worlds: dict[str, World] = {}  # privileged policies only
        self._episodes: dict[str, Episode] = {}
        self._worker: Optional[ThreadPoolExecutor] = None
        self._results: queue.SimpleQueue[Answer] = queue.SimpleQueue()
        self._guard = None
        self._decision_pub = self.create_publisher(DecisionRos, "~/decision", qos.STATE)
        self._subscriptions: list[Any] = []
        self._timer = None
        self._active = False
        self._config_error: Optional[str] = None
        self.fatal = Future()  # completed with a configuration error: ros/spin.spin_nodes exits
        self._waiting: OrderedDict[str, Waiting] = OrderedDict()  # view set id -> goals, oldest first
        self._goal_futures: dict[bytes, Future] = {}  # goal id -> its future in `_waiting`
        self._reset_state()
        # result_timeout 1 s, not rclpy's 900: the status array the server publishes about three
        # times a goal lists every goal still kept, and an rclpy ActionClient decodes it in Python
        # each time (2 ms at 180 goals). The supervisor does not subscribe to it (ros/decide_client.py)
        # but other clients may. Clients ask for the result at acceptance, and a repeated goal gets
        # the stored decision, so nothing needs it longer.
        self._server = ActionServer(self, Decide, "~/decide", self._execute, goal_callback=self._on_goal,
                                    cancel_callback=self._on_cancel, result_timeout=1)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.create_timer(float(self.get_parameter("diagnostics_period_s").value), self._publish_diagnostics)
        if self.get_parameter("autostart").value:
            self._autostart = self.create_timer(0.0, self._start_up)

    def _start_up(self) -> None:
        """autostart: configure, then activate, once the executor runs (as a lifecycle manager would)."""
        self.destroy_timer(self._autostart)
        if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    def _reset_state(self) -> None:
        self._abort_waiting()
        self._images: dict[ImageKey, convert.ViewImageMsg] = {}
        self._in_flight: Optional[str] = None  # view set id being decided
        self._decided: OrderedDict[str, Answer] = OrderedDict()  # the last REMEMBERED answers
        self._held: list[Answer] = []  # decided while inactive: answered on activation
        self._episode_key: Optional[tuple] = None
        self._published = 0
        self._last_latency_s: Optional[float] = None
        self._last_error: Optional[str] = None

    # -- lifecycle -----------------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self._policy_name = str(self.get_parameter("policy").value)
            param = self.get_parameter
            params = policy_params(json_parameter("policy_params", param("policy_params").value),
                                   str(param("backend").value), str(param("model").value))
            redact(params)  # learns the credentials, so a message quoting one is masked in logs
            policy = make_policy(self._policy_name, **params)
            if policy.privileged:
                self._load_world()
            policy.prepare()
        except (CitySeekerError, ValueError) as exc:  # configuration: trying again cannot help
            self._worlds, self._episodes = {}, {}
            self._config_error = f"configure failed: {redact_text(str(exc))}"
            return TransitionCallbackReturn.ERROR  # -> on_error -> finalized
        except Exception as exc:  # a crash while loading (out of memory...): may pass on a retry
            self._worlds, self._episodes = {}, {}
            self.get_logger().error(f"configure failed ({type(exc).__name__}): {redact_text(str(exc))}; "
                                    "staying unconfigured")
            return TransitionCallbackReturn.FAILURE
        self._policy = policy
        self._reset_state()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decide")
        self._guard = self.create_guard_condition(self._publish_results)
        # the views and the node's panorama (one frame more): as deep as the world node keeps them
        images_qos = qos.view_images(int(self.get_parameter("max_views").value) + 1)
        images = self.resolve_topic_name("images")  # remapped, so the compressed topic follows it
        self._subscriptions = [
            self.create_subscription(Image, convert.image_topic(images, "raw"), self._on_image, images_qos),
            self.create_subscription(CompressedImage, convert.image_topic(images, "png"), self._on_image, images_qos),
        ]
        self._timer = self.create_timer(0.25, self._check_images_timeout)
        self.get_logger().info(f"configured: policy {self._policy_name} "
                               f"({'uses' if policy.uses_images else 'ignores'} images)")
        return super().on_configure(state)

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """A configuration error finalizes the node and ends the process (after this transition
        is answered); any other error returns it to unconfigured."""
        if self._config_error is None:
            return super().on_error(state)
        if not self.fatal.done():
            self.fatal.set_result(self._config_error)
        return TransitionCallbackReturn.FAILURE

    def _load_world(self) -> None:
        data = str(self.get_parameter("data").value)
        if not data:
            raise ConfigError(f"policy {self._policy_name} is privileged: set the data parameter to its dataset")
        worlds = load_dataset(Path(data), str(self.get_parameter("dataset").value),
                              family=str(self.get_parameter("family").value))
        self._worlds = {w.city: w for w in worlds}
        self._episodes = {e.episode_id: e for w in worlds for e in w.episodes}

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)  # enables the lifecycle publisher
        self._active = True
        held, self._held = self._held, []
        for result in held:
            self._answer(result)
        self._maybe_decide()
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._active = False
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return super().on_cleanup(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._active = False
        self._release()
        return super().on_shutdown(state)

    def _release(self) -> None:
        """Wait for a decision in progress (a model cannot be freed mid-generation), then drop
        the subscriptions, the publisher and the policy."""
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        for sub in self._subscriptions:
            self.destroy_subscription(sub)
        self._subscriptions = []
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        if self._guard is not None:
            self.destroy_guard_condition(self._guard)
            self._guard = None
        close = getattr(self._policy, "close", None)
        if callable(close):
            close()
        self._policy = None
        self._worlds, self._episodes = {}, {}
        self._reset_state()

    # -- inputs --------------------------------------------------------------------------------

    def _on_goal(self, goal: Decide.Goal) -> GoalResponse:
        """Accept a well-formed view set while configured; the reason for a rejection is logged."""
        if self._policy is None:
            self.get_logger().warning("rejected a Decide goal: the node is not configured")
            return GoalResponse.REJECT
        try:
            view_set = typed.view_set_from_ros(goal.view_set, goal.context)
        except (ValidationError, ValueError) as exc:
            self.get_logger().warning(f"rejected a malformed Decide goal: {str(exc).splitlines()[0]}")
            return GoalResponse.REJECT
        if view_set.done:
            self.get_logger().warning(f"rejected a Decide goal: view set {view_set.view_set_id} is done")
            return GoalResponse.REJECT
        # Start deciding now, while the acceptance travels back and the goal's execution is
        # scheduled: the answer is often ready by the time the client asks for it.
        if view_set.view_set_id not in self._decided and view_set.view_set_id not in self._waiting:
            self._waiting[view_set.view_set_id] = Waiting(view_set, time.monotonic())
            self._prune_images()
            self._maybe_decide()
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle: ServerGoalHandle) -> CancelResponse:
        """Always accepted: the goal stops waiting at once (a decision in progress still ends,
        and is kept for a repeat of the goal)."""
        future = self._goal_futures.pop(bytes(goal_handle.goal_id.uuid), None)
        if future is not None and not future.done():
            future.set_result(None)
        # A view set nobody waits for any more is not decided (its random draw is not spent).
        for view_set_id, waiting in list(self._waiting.items()):
            if view_set_id != self._in_flight and waiting.futures and all(f.done() for f in waiting.futures):
                del self._waiting[view_set_id]
        return CancelResponse.ACCEPT

    async def _execute(self, goal_handle: ServerGoalHandle) -> Decide.Result:
        """Waits (without blocking the executor) for the view set's decision."""
        view_set = typed.view_set_from_ros(goal_handle.request.view_set, goal_handle.request.context)
        future, goal_id = Future(), bytes(goal_handle.goal_id.uuid)
        self._goal_futures[goal_id] = future
        known = self._decided.get(view_set.view_set_id)
        if known is not None and self._active:
            future.set_result(known)
        else:
            waiting = self._waiting.get(view_set.view_set_id)
            if waiting is None:
                waiting = self._waiting[view_set.view_set_id] = Waiting(view_set, time.monotonic())
                self._prune_images()
            waiting.futures.append(future)
            waiting.handles.append(goal_handle)
            self._maybe_decide()
        result: Optional[Answer] = await future
        self._goal_futures.pop(goal_id, None)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            return Decide.Result()
        if result is None:  # cleaned up or shut down while waiting
            goal_handle.abort()
            return Decide.Result()
        goal_handle.succeed()
        return Decide.Result(decision=typed.decision_to_ros(result))

    def _abort_waiting(self) -> None:
        waiting, self._waiting = getattr(self, "_waiting", OrderedDict()), OrderedDict()
        for entry in waiting.values():
            for future in entry.futures:
                if not future.done():
                    future.set_result(None)

    def _prune_images(self) -> None:
        """Images older than every view set waiting are never needed again; before a goal
        names them, the images of the newest IMAGE_STAMPS stamps are kept."""
        if self._waiting:
            oldest = min(_key(w.view_set.stamp) for w in self._waiting.values())
            self._images = {k: v for k, v in self._images.items() if k[0] >= oldest}
        stamps = sorted({k[0] for k in self._images})
        if len(stamps) > IMAGE_STAMPS + len(self._waiting):
            keep = set(stamps[-(IMAGE_STAMPS + len(self._waiting)):])
            self._images = {k: v for k, v in self._images.items() if k[0] in keep}

    def _on_image(self, msg: convert.ViewImageMsg) -> None:
        stamp = _key(convert.stamp_from_msg(msg.header.stamp))
        self._images[(stamp, msg.header.frame_id)] = msg
        self._prune_images()
        self._maybe_decide()

    def _needs_images(self) -> bool:
        return self._policy is not None and self._policy.uses_images

    def _missing_images(self, view_set: ViewSet) -> list[str]:
        if not self._needs_images():
            return []
        return [f for f in view_set.image_frames() if (_key(view_set.stamp), f) not in self._images]

    # -- deciding ------------------------------------------------------------------------------

    def _maybe_decide(self) -> None:
        """Start deciding the oldest waiting view set whose images are complete (the node active,
        nothing in progress); a goal for a view set already decided gets its decision."""
        if not self._active or self._worker is None or self._in_flight is not None:
            return
        for view_set_id in list(self._waiting):
            if view_set_id in self._decided:
                self._answer(self._decided[view_set_id])
        view_set = next((w.view_set for w in self._waiting.values() if not self._missing_images(w.view_set)), None)
        if view_set is None:
            return
        stamp = _key(view_set.stamp)
        images = {f: self._images[(stamp, f)] for f in view_set.image_frames()} if self._needs_images() else {}
        self._in_flight = view_set.view_set_id
        future = self._worker.submit(self._decide, view_set, images)
        future.add_done_callback(self._handback)

    def _handback(self, future) -> None:  # on the worker thread
        self._results.put(future.result())
        guard = self._guard
        if guard is not None:
            guard.trigger()

    def _decide(self, view_set: ViewSet, images: dict[str, convert.ViewImageMsg]) -> Answer:
        """On the worker thread: the only place the policy is touched after configure. A failure
        ends the episode, as in the in-process benchmark (same error text)."""
        start = time.perf_counter()
        policy = self._policy
        try:
            assert policy is not None
            task = view_set.task
            if task.key() != self._episode_key:
                episode = self._episodes.get(task.episode_id) if policy.privileged else task.episode()
                if episode is None:
                    raise ConfigError(f"episode {task.episode_id} is not in the data parameter's dataset")
                world = self._worlds.get(episode.city) if policy.privileged else None
                self._episode_key = task.key()
                policy.reset(episode, episode_rng(task.seed, task.episode_id, task.round), world)
            decoded = convert.view_set_images(view_set, images)  # the panorama decodes only if shown
            logged = len(policy.step_records())
            decision = policy.decide(convert.view_set_to_observation(view_set, decoded), _context(view_set))
            return Answer.of(view_set, decision, self._policy_name, time.perf_counter() - start,
                             policy.step_records()[logged:], policy.episode_extras())
        except Exception as exc:
            return Answer.failed(view_set, redact_text(f"{type(exc).__name__}: {exc}"), self._policy_name,
                                 time.perf_counter() - start)

    def _publish_results(self) -> None:  # guard condition: on the executor thread
        while True:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                break
            self._in_flight = None
            self._last_latency_s, self._last_error = result.latency_s, result.error
            if self._active:
                self._answer(result)
            else:
                self._held.append(result)
        self._maybe_decide()

    def _answer(self, result: Answer) -> None:
        """Remember `result`, answer every goal waiting on its view set, and publish it."""
        self._decided[result.view_set_id] = result
        while len(self._decided) > REMEMBERED:
            self._decided.popitem(last=False)
        waiting = self._waiting.pop(result.view_set_id, None)
        if waiting is None:
            return
        for future in waiting.futures:
            if not future.done():
                future.set_result(result)
        # After the goals' results (their tasks were scheduled first): the copy for bags and
        # monitors is not on the step's critical path.
        if self.executor is not None:
            self.executor.create_task(self._publish_decision, result)
        else:
            self._publish_decision(result)
        self._prune_images()

    def _publish_decision(self, result: Answer) -> None:
        self._decision_pub.publish(typed.decision_to_ros(result))
        self._published += 1

    def _check_images_timeout(self) -> None:
        """Answer a view set whose images never came with an error rather than waiting forever;
        tell the goals that have waited FEEDBACK_AFTER_S or more how long, and at which stage
        (none on the fast path: a feedback message per goal would cost every client a wake-up)."""
        timeout = float(self.get_parameter("image_timeout_s").value)
        now = time.monotonic()
        for waiting in self._waiting.values():
            if now - waiting.since >= FEEDBACK_AFTER_S:
                stage = "deciding" if waiting.view_set.view_set_id == self._in_flight else "queued"
                for handle in waiting.handles:
                    if handle.is_active and not handle.is_cancel_requested:
                        handle.publish_feedback(Decide.Feedback(stage=stage, elapsed_s=now - waiting.since))
        if not self._active:
            return
        for waiting in list(self._waiting.values()):
            view_set = waiting.view_set
            if view_set.view_set_id == self._in_flight:
                continue
            missing = self._missing_images(view_set)
            if missing and time.monotonic() - waiting.since > timeout:
                error = f"images {missing} of view set {view_set.view_set_id} did not arrive within {timeout:g} s"
                self.get_logger().error(error)
                self._answer(Answer.failed(view_set, error, self._policy_name, 0.0))

    def _publish_diagnostics(self) -> None:
        state = "active" if self._active else "configured" if self._policy is not None else "unconfigured"
        level = "error" if self._last_error else "ok"
        values = {"state": state, "policy": self._policy_name, "decisions": self._published,
                  "deciding": self._in_flight or "", "last_latency_s": self._last_latency_s}
        publish_diagnostics(self, self._diag_pub, "decision", level, self._last_error or state, values)


def main(args=None) -> None:
    spin(DecisionNode, "decision", args)


if __name__ == "__main__":
    main()

"""The decision maker as a lifecycle node: any registered policy, the VLM included.

configure: make the policy and `prepare()` it (a VLM loads its model here), subscribe to the
view sets and images. A configuration error (a bad parameter, missing data, a model server
that cannot be reached) is final: the transition ends in `finalized`, so a lifecycle manager
stops asking, and the process exits with one line and CONFIG_ERROR_EXIT (nodes/common.py) so a
runner stops the run; any other failure leaves it `unconfigured`, to be tried again.
activate: decisions flow on `~/decision`; deactivate: view sets are
still received and kept, nothing is published; cleanup: the policy is released.

A decision runs on one worker thread, never in a callback: the executor keeps serving
transitions, parameters and incoming view sets while a model thinks. The worker hands each
result back through a guard condition, so publishing happens on the executor thread.
Every view set is decided at most once (a policy's random stream advances per decision, so
deciding twice would change the episode); a result that is ready while the node is inactive
is published on the next activation.
"""
from __future__ import annotations

import queue
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from pydantic import ValidationError
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.task import Future
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String

from cityseeker_ros.core.benchmark import episode_rng
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.episode import Episode, World
from cityseeker_ros.core.errors import CitySeekerError, ConfigError
from cityseeker_ros.core.policies import Policy, make_policy
from cityseeker_ros.core.policies.base import PromptContext
from cityseeker_ros.core.redact import redact, redact_text
from cityseeker_ros.nodes.common import publish_diagnostics, spin
from cityseeker_ros.ros import convert, qos
from cityseeker_ros.ros.parameters import VLM_DECISION, declare, json_parameter, policy_params
from cityseeker_ros.ros.schema import DecisionMsg, Stamp, ViewSetMsg, parse

ImageKey = tuple[tuple[int, int], str]  # ((sec, nanosec) of the view set's stamp, frame id)


def _key(stamp: Stamp) -> tuple[int, int]:
    return stamp.sec, stamp.nanosec


class VlmDecisionNode(LifecycleNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("vlm_decision", **kwargs)
        declare(self, VLM_DECISION)
        self._policy: Optional[Policy] = None
        self._policy_name = ""
        self._worlds: dict[str, World] = {}  # privileged policies only
        self._episodes: dict[str, Episode] = {}
        self._worker: Optional[ThreadPoolExecutor] = None
        self._results: queue.SimpleQueue[DecisionMsg] = queue.SimpleQueue()
        self._guard = None
        self._decision_pub = None
        self._subscriptions: list[Any] = []
        self._timer = None
        self._active = False
        self._config_error: Optional[str] = None
        self.fatal = Future()  # completed with a configuration error: common.spin_nodes exits
        self._reset_state()
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
        self._latest: Optional[ViewSetMsg] = None  # the newest view set received
        self._latest_seen_at = 0.0
        self._images: dict[ImageKey, CompressedImage] = {}
        self._in_flight: Optional[str] = None  # view set id being decided
        self._decided: set[str] = set()  # view set ids whose decision was taken (published or held)
        self._held: Optional[DecisionMsg] = None  # decided while inactive
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
        self._decision_pub = self.create_lifecycle_publisher(String, "~/decision", qos.STATE)
        max_views = int(self.get_parameter("max_views").value)
        self._subscriptions = [
            self.create_subscription(String, "views", self._on_view_set, qos.STATE),
            # the views and the node's panorama (one frame more): as deep as the world node keeps them
            self.create_subscription(CompressedImage, "images", self._on_image, qos.view_images(max_views + 1)),
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
        worlds = load_dataset(Path(data), str(self.get_parameter("dataset").value))
        self._worlds = {w.city: w for w in worlds}
        self._episodes = {e.episode_id: e for w in worlds for e in w.episodes}

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)  # enables the lifecycle publisher
        self._active = True
        if self._held is not None:
            self._publish(self._held)
            self._held = None
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
        if self._decision_pub is not None:
            self.destroy_lifecycle_publisher(self._decision_pub)
            self._decision_pub = None
        close = getattr(self._policy, "close", None)
        if callable(close):
            close()
        self._policy = None
        self._worlds, self._episodes = {}, {}
        self._reset_state()

    # -- inputs --------------------------------------------------------------------------------

    def _on_view_set(self, msg: String) -> None:
        try:
            view_set = parse(ViewSetMsg, msg.data)
        except ValidationError as exc:
            self.get_logger().warning(f"ignored a malformed view set: {exc.errors()[:1]}")
            return
        self._latest, self._latest_seen_at = view_set, time.monotonic()
        # Images of older view sets will never be needed again.
        self._images = {k: v for k, v in self._images.items() if k[0] >= _key(view_set.stamp)}
        self._maybe_decide()

    def _on_image(self, msg: CompressedImage) -> None:
        stamp = _key(convert.stamp_from_msg(msg.header.stamp))
        if self._latest is not None and stamp < _key(self._latest.stamp):
            return  # an older view set's
        self._images[(stamp, msg.header.frame_id)] = msg
        self._maybe_decide()

    def _needs_images(self) -> bool:
        return self._policy is not None and self._policy.uses_images

    def _missing_images(self, view_set: ViewSetMsg) -> list[str]:
        if not self._needs_images():
            return []
        return [f for f in view_set.image_frames() if (_key(view_set.stamp), f) not in self._images]

    # -- deciding ------------------------------------------------------------------------------

    def _maybe_decide(self) -> None:
        """Start deciding the newest view set if it is complete, undecided and the node active."""
        view_set = self._latest
        if (not self._active or self._worker is None or view_set is None or view_set.done
                or self._in_flight is not None or view_set.view_set_id in self._decided
                or self._missing_images(view_set)):
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

    def _decide(self, view_set: ViewSetMsg, images: dict[str, CompressedImage]) -> DecisionMsg:
        """On the worker thread: the only place the policy is touched after configure. A failure
        ends the episode, as in the in-process benchmark (same error text)."""
        start = time.perf_counter()
        policy = self._policy
        try:
            assert policy is not None
            task = view_set.task
            if task.key() != self._episode_key:
                episode = self._episodes.get(task.episode_id) if policy.privileged else convert.episode_from_task(task)
                if episode is None:
                    raise ConfigError(f"episode {task.episode_id} is not in the data parameter's dataset")
                world = self._worlds.get(episode.city) if policy.privileged else None
                self._episode_key = task.key()
                policy.reset(episode, episode_rng(task.seed, task.episode_id, task.round), world)
            decoded = convert.view_set_images(view_set, images)  # the panorama decodes only if shown
            logged = len(policy.step_records())
            context = PromptContext(**view_set.context) if view_set.context else None
            decision = policy.decide(convert.view_set_to_observation(view_set, decoded), context)
            msg = convert.decision_to_msg(decision, view_set, self._policy_name, time.perf_counter() - start)
            msg.records = policy.step_records()[logged:]
            return msg
        except Exception as exc:
            return convert.failed_decision_msg(redact_text(f"{type(exc).__name__}: {exc}"), view_set,
                                               self._policy_name, time.perf_counter() - start)

    def _publish_results(self) -> None:  # guard condition: on the executor thread
        while True:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                break
            self._in_flight = None
            self._decided.add(result.view_set_id)
            self._last_latency_s, self._last_error = result.latency_s, result.error
            if self._active:
                self._publish(result)
            else:
                self._held = result
        self._maybe_decide()

    def _publish(self, result: DecisionMsg) -> None:
        assert self._decision_pub is not None
        self._decision_pub.publish(convert.to_string(result))
        self._published += 1

    def _check_images_timeout(self) -> None:
        """Answer a view set whose images never came with an error rather than waiting forever."""
        view_set, timeout = self._latest, float(self.get_parameter("image_timeout_s").value)
        if (not self._active or view_set is None or view_set.done or self._in_flight is not None
                or view_set.view_set_id in self._decided):
            return
        missing = self._missing_images(view_set)
        if missing and time.monotonic() - self._latest_seen_at > timeout:
            error = f"images {missing} of view set {view_set.view_set_id} did not arrive within {timeout:g} s"
            self.get_logger().error(error)
            self._decided.add(view_set.view_set_id)
            self._publish(convert.failed_decision_msg(error, view_set, self._policy_name, 0.0))

    def _publish_diagnostics(self) -> None:
        state = "active" if self._active else "configured" if self._policy is not None else "unconfigured"
        level = "error" if self._last_error else "ok"
        values = {"state": state, "policy": self._policy_name, "decisions": self._published,
                  "deciding": self._in_flight or "", "last_latency_s": self._last_latency_s}
        publish_diagnostics(self, self._diag_pub, "decision", level, self._last_error or state, values)


def main(args=None) -> None:
    spin(VlmDecisionNode, "vlm_decision", args)


if __name__ == "__main__":
    main()

"""The benchmark world over ROS 2: one core Environment on a dataset's street graph.

Publishes the view set of the current node (`~/views`, cityseeker_interfaces/ViewSet; its images as
`image_format` says: raw sensor_msgs/Image on `~/images` by default, CompressedImage on
`~/images/compressed` for png or jpeg; the node's panorama among them where the view source
has one and the `panorama` parameter is on), the pose (`~/fix`, `~/pose`, `~/path`) and the episode state
(`~/episode`, cityseeker_interfaces/Episode); applies actions that answer the current view set
(`~/action`, cityseeker_interfaces/WorldAction). Selecting an
episode is setting the `episode` and `seed` parameters (atomically when both change:
`ros2 param set`, or the standard SetParametersAtomically service); `~/reset`
(std_srvs/Trigger) restarts the selected episode. docs/ros_interfaces.md has the contract.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path as PathMsg
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import NavSatFix
from std_srvs.srv import Trigger

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.view_set import EpisodeBrief, ViewSet, view_frame_id
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.tasks.environment import Environment, Observation
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.family import family_of
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.parameters import STREETVIEW_REPLAY, declare, json_parameter
from cityseeker_ros.ros.schema import ActionMsg, EpisodeMsg, MapOrigin
from cityseeker_ros.ros.spin import spin


class StreetviewReplayNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("streetview_replay", **kwargs)
        declare(self, STREETVIEW_REPLAY)
        p = {spec.name: self.get_parameter(spec.name).value for spec in STREETVIEW_REPLAY}
        if not p["data"]:
            raise ConfigError("parameter data is required: a dataset folder")
        if p["image_format"] not in convert.IMAGE_FORMATS:
            raise ConfigError(f"parameter image_format must be one of {', '.join(convert.IMAGE_FORMATS)}, "
                              f"got {p['image_format']!r}")
        self._max_steps, self._max_invalid = int(p["max_steps"]), int(p["max_invalid_retries"])
        self._dtw_threshold_m = float(p["dtw_threshold_m"])
        self._image_format, self._jpeg_quality = p["image_format"], int(p["jpeg_quality"])
        self._max_views, self._frame_id = int(p["max_views"]), p["frame_id"]
        self._panorama = bool(p["panorama"])

        worlds = load_dataset(Path(p["data"]), p["dataset"], family=p["family"])
        self._episodes: list[tuple[World, Episode]] = [(w, e) for w in worlds for e in w.episodes]
        self._index = {e.episode_id: i for i, (_, e) in enumerate(self._episodes)}
        view_params = json_parameter("view_params", p["view_params"])
        self._sources = {w.city: make_view_source(p["views"], w, view_params) if p["views"] else None
                         for w in worlds}

        self._env: Optional[Environment] = None
        self._world: Optional[World] = None
        self._task: Optional[EpisodeBrief] = None
        self._view_set: Optional[ViewSet] = None
        self._poses: list[PoseStamped] = []
        self._poses_step = -1  # the step of the last pose on the path (retries repeat a step)
        self._run = self._seq = self._last_stamp_ns = 0
        self._ignored_actions = 0

        self._views_pub = self.create_publisher(typed.msg_type(ViewSet), "~/views", qos.STATE)
        self._images_pub = self.create_publisher(convert.image_message_type(self._image_format),
                                                 convert.image_topic("~/images", self._image_format),
                                                 qos.view_images(self._max_views + 1))
        self._episode_pub = self.create_publisher(typed.msg_type(EpisodeMsg), "~/episode", qos.STATE)
        self._fix_pub = self.create_publisher(NavSatFix, "~/fix", qos.STATE)
        self._pose_pub = self.create_publisher(PoseStamped, "~/pose", qos.STATE)
        self._path_pub = self.create_publisher(PathMsg, "~/path", qos.STATE)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.create_subscription(typed.msg_type(ActionMsg), "~/action", self._on_action, qos.STATE)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)

        first = self._resolve(p["episode"])  # an unknown episode fails at start-up
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._on_parameters_set)
        if first is None:
            self._publish_episode("idle")
        else:
            self._start(first, int(p["seed"]))

    # -- selection -----------------------------------------------------------------------------

    def _resolve(self, value: Any) -> Optional[int]:
        """An episode parameter value -> index in load order; '' -> None (idle)."""
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ConfigError(f"episode must be an episode id or an index, got {value!r}")
        if isinstance(value, str) and value in self._index:
            return self._index[value]
        if isinstance(value, int) or value.strip().isdigit():
            index = int(value)
            if 0 <= index < len(self._episodes):
                return index
            raise ConfigError(f"episode index {index} is out of range: {len(self._episodes)} episodes")
        examples = ", ".join(list(self._index)[:3])
        raise ConfigError(f"unknown episode id {value!r} (ids look like: {examples})")

    def _validate_parameters(self, params) -> SetParametersResult:
        for param in params:
            if param.name == "episode":
                try:
                    self._resolve(param.value)
                except ConfigError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _on_parameters_set(self, params) -> None:
        if any(param.name in ("episode", "seed") for param in params):
            self._start_selected()

    def _start_selected(self) -> Optional[EpisodeBrief]:
        index = self._resolve(self.get_parameter("episode").value)
        if index is None:
            self._env = self._task = self._view_set = None
            self._publish_episode("idle")
            return None
        self._start(index, int(self.get_parameter("seed").value))
        return self._task

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        task = self._start_selected()
        response.success = task is not None
        response.message = (f"run {task.run}: episode {task.episode_id}, seed {task.seed}" if task is not None
                            else "no episode selected: set the episode parameter")
        return response

    # -- the episode ---------------------------------------------------------------------------

    def _start(self, index: int, seed: int) -> None:
        world, episode = self._episodes[index]
        self._run += 1
        self._world, self._poses, self._poses_step = world, [], -1
        self._task = EpisodeBrief.of(episode, seed, self._run)
        self._env = Environment(world, max_steps=self._max_steps, max_invalid_retries=self._max_invalid,
                                views=self._sources[world.city])
        self.get_logger().info(f"run {self._run}: episode {episode.episode_id} seed {seed}")
        try:
            observation = self._env.reset(episode)
        except Exception as exc:  # a view source that cannot serve the start node
            if self._env.trajectory is None:
                raise
            self._env.fail(f"{type(exc).__name__}: {exc}")
            self._end(None)
            return
        self._publish_episode("running")
        if self._env.done:  # a budget of 0 steps
            self._end(observation)
        else:
            self._publish_or_fail(observation)

    def _on_action(self, msg: Any) -> None:
        try:
            action: ActionMsg = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed action: {exc}")
            return
        env, current = self._env, self._view_set
        if env is None or env.done or current is None or action.view_set_id != current.view_set_id:
            self._ignored_actions += 1  # stale, repeated, or for another run
            return
        if action.error is not None:
            env.fail(action.error)
            self._end(None)
            return
        try:
            result = env.step(action.action)
        except Exception as exc:  # the view source failed at the next node
            env.fail(f"{type(exc).__name__}: {exc}")
            self._end(None)
            return
        if result.done:
            self._end(result.observation)
        else:  # the view set first: the supervisor waits for it, and the episode's path is for monitors
            self._publish_or_fail(result.observation)
            if not env.done:  # the panorama failed: _end has published the episode
                self._publish_episode("running")

    def _publish_or_fail(self, observation: Observation) -> None:
        """Publish the observation with its panorama; a view source that cannot make the
        panorama ends the episode with the error, as the stop prompt's failure would in process."""
        try:
            panorama = self._panorama_of(observation)
        except Exception as exc:
            assert self._env is not None
            self._env.fail(f"{type(exc).__name__}: {exc}")
            self._end(None)
            return
        self._publish_observation(observation, panorama)

    def _panorama_of(self, observation: Observation) -> Optional[np.ndarray]:
        """The node's panorama, made only when it is sent: `panorama` off (the runner's setting for
        policies that never show it) costs nothing per step."""
        if not self._panorama or observation.panorama is None:
            return None
        return observation.panorama.get()

    def _end(self, observation: Optional[Observation]) -> None:
        """Publish the final pose, a `done` view set (nothing to decide) and the outcome."""
        assert self._env is not None and self._task is not None and self._world is not None
        stamp = self._next_stamp()
        if observation is not None:
            final = replace(convert.observation_to_view_set(observation, self._task, self._next_view_set_id(), stamp,
                                                            done=True), views=())
        elif self._view_set is not None:
            final = replace(self._view_set, view_set_id=self._next_view_set_id(), stamp=stamp, views=(),
                            panorama=None, done=True)
        else:
            final = None
        if final is not None:
            self._view_set = final
            self._views_pub.publish(typed.to_ros(final))
            self._publish_pose(final, stamp)
        self._publish_episode("ended")
        traj = self._env.trajectory
        self.get_logger().info(f"run {self._task.run} ended: {traj.end_reason.value} after {traj.steps} steps")

    # -- publishing ----------------------------------------------------------------------------

    def _next_stamp(self):
        """Strictly increasing stamps: they key the images of a view set."""
        ns = max(self.get_clock().now().nanoseconds, self._last_stamp_ns + 1)
        self._last_stamp_ns = ns
        return convert.stamp_from_ns(ns)

    def _next_view_set_id(self) -> str:
        self._seq += 1
        assert self._task is not None
        return f"{self._task.episode_id}/run{self._task.run}/{self._seq}"

    def _publish_observation(self, observation: Observation, panorama: Optional[np.ndarray] = None) -> None:
        assert self._task is not None
        stamp = self._next_stamp()
        view_set = convert.observation_to_view_set(observation, self._task, self._next_view_set_id(), stamp,
                                                   panorama=panorama)
        views = sum(1 for v in view_set.views if v.frame_id is not None)
        if views > self._max_views:
            self.get_logger().warning(f"{views} views exceed max_views={self._max_views}: a late subscriber "
                                      "may miss images; raise max_views on both nodes")
        for view in observation.views:
            if view.image is not None:
                self._images_pub.publish(convert.image_to_msg(view.image, stamp, view_frame_id(view.index),
                                                              self._image_format, self._jpeg_quality))
        if view_set.panorama is not None:  # one more frame of the same view set
            self._images_pub.publish(convert.image_to_msg(panorama, stamp, view_set.panorama.frame_id,
                                                          self._image_format, self._jpeg_quality))
        self._view_set = view_set
        self._views_pub.publish(typed.to_ros(view_set))
        self._publish_pose(view_set, stamp)

    def _publish_pose(self, view_set: ViewSet, stamp) -> None:
        assert self._world is not None
        self._fix_pub.publish(convert.navsatfix(view_set.lat, view_set.lon, stamp, self._frame_id))
        east, north = (float(v) for v in self._world.graph.frame.to_xy(view_set.lat, view_set.lon))
        pose = convert.pose_stamped(east, north, view_set.facing, stamp, self._frame_id)
        self._pose_pub.publish(pose)
        if view_set.step > self._poses_step:
            self._poses.append(pose)
            self._poses_step = view_set.step
        self._path_pub.publish(convert.path_msg(self._poses, stamp, self._frame_id))

    def _publish_episode(self, status: str) -> None:
        msg = EpisodeMsg(status=status, task=self._task if status != "idle" else None)
        env, world = self._env, self._world
        if status != "idle" and env is not None and env.trajectory is not None and world is not None:
            traj = env.trajectory
            msg.path, msg.actions, msg.steps = list(traj.path), list(traj.headings), traj.steps
            msg.path_latlon = [[round(world.graph.nodes[n].lat, 7), round(world.graph.nodes[n].lon, 7)]
                               for n in traj.path]
            msg.map_origin = MapOrigin(lat=world.graph.frame.lat0, lon=world.graph.frame.lon0)
            if status == "ended":
                episode = env.episode
                msg.end_reason, msg.error, msg.answer = traj.end_reason.value, traj.error, traj.answer
                family = family_of(episode)
                msg.solvable = world.solvable(episode, family.budget(episode, self._max_steps))
                msg.metrics = family.score(world, episode, traj, msg.solvable, dtw_threshold_m=self._dtw_threshold_m)
        self._episode_pub.publish(typed.episode_to_ros(msg, convert.stamp_from_ns(self.get_clock().now().nanoseconds)))

    def _publish_diagnostics(self) -> None:
        env, task = self._env, self._task
        status = "idle" if env is None else "ended" if env.done else "running"
        values = {"status": status, "episodes": len(self._episodes), "run": self._run,
                  "view_sets": self._seq, "ignored_actions": self._ignored_actions}
        if task is not None:
            values.update(episode=task.episode_id, seed=task.seed)
        if env is not None and env.trajectory is not None:
            values.update(step=env.trajectory.steps, node=env.trajectory.path[-1])
        level = "error" if env is not None and env.trajectory is not None and env.trajectory.error else "ok"
        publish_diagnostics(self, self._diag_pub, "replay", level, status, values)


def main(args=None) -> None:
    spin(StreetviewReplayNode, "streetview_replay", args)


if __name__ == "__main__":
    main()

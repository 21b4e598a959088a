"""A live camera as the decision node's eyes: one view set per node arrival.

Subscribes to `location` (Location from graph_localiser) and `episode` (EpisodeMsg: the
supervisor's running task; until one runs nothing is published and diagnostics say so). When the
vehicle arrives at a node it asks the frame source (core.camera, chosen by `source`) for the view
of every walkable heading and publishes `~/views` (ViewSet, qos.STATE) and its images
(qos.view_images; `image_format` as streetview_replay's: raw Image on `~/images`, png or jpeg
CompressedImage on `~/images/compressed`) with exactly streetview_replay's contract, so decision
cannot tell a live camera from the replay. A "topic" camera is fed from `frames`
(sensor_msgs/Image) and `frames/compressed` (CompressedImage) with qos.CAMERA (keep-last 1).
"""
from __future__ import annotations

from typing import Any, Optional

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.view_set import EpisodeBrief, ViewSet, view_frame_id
from cityseeker_ros.core.sensing.camera import FrameError, RunTask, TopicFrameSource, ViewSetBuilder, make_frame_source
from cityseeker_ros.core.sensing.camera.rosbag import image_to_rgb
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.tasks.environment import Observation
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import convert, qos, typed
from cityseeker_ros.ros.parameters import CAMERA_INGEST, declare, json_parameter, world_parameter
from cityseeker_ros.ros.schema import EpisodeMsg
from cityseeker_ros.ros.spin import spin


class CameraIngestNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("camera_ingest", **kwargs)
        declare(self, CAMERA_INGEST)
        p = {spec.name: self.get_parameter(spec.name).value for spec in CAMERA_INGEST}
        if p["image_format"] not in convert.IMAGE_FORMATS:
            raise ConfigError(f"parameter image_format must be one of {', '.join(convert.IMAGE_FORMATS)}, "
                              f"got {p['image_format']!r}")
        self._image_format, self._jpeg_quality = p["image_format"], int(p["jpeg_quality"])
        self._max_views = int(p["max_views"])
        world = world_parameter(p["data"], p["dataset"], p["city"], p["family"]) if p["data"] else None
        self._source = make_frame_source(p["source"], world, json_parameter("source_params", p["source_params"]))
        self._builder = ViewSetBuilder(self._source, world, int(p["max_steps"]))
        self._task: Optional[EpisodeBrief] = None
        self._seq = self._last_stamp_ns = self._errors = 0
        self._last_error = ""
        self._last_status = "no location yet"

        self._views_pub = self.create_publisher(typed.msg_type(ViewSet), "~/views", qos.STATE)
        self._images_pub = self.create_publisher(convert.image_message_type(self._image_format),
                                                 convert.image_topic("~/images", self._image_format),
                                                 qos.view_images(self._max_views))
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.create_subscription(typed.msg_type(EpisodeMsg), "episode", self._on_episode, qos.STATE)
        self.create_subscription(typed.msg_type(Localisation), "location", self._on_location, qos.STATE)
        topics = [c for c in self._source.cameras() if isinstance(c, TopicFrameSource)]
        for i, camera in enumerate(topics):
            base = "frames" if len(topics) == 1 else f"frames_{i}"
            self.create_subscription(Image, base, lambda m, c=camera: self._on_frame(c, m, "sensor_msgs/msg/Image"),
                                     qos.CAMERA)
            self.create_subscription(CompressedImage, f"{base}/compressed",
                                     lambda m, c=camera: self._on_frame(c, m, "sensor_msgs/msg/CompressedImage"),
                                     qos.CAMERA)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)
        self.get_logger().info(f"frame source {p['source']}: waiting for a running episode on `episode`")

    def _on_frame(self, camera: TopicFrameSource, msg: Any, msgtype: str) -> None:
        try:
            rgb = image_to_rgb(msg, msgtype)
        except (ValueError, OSError) as exc:
            self._fail(f"bad camera frame: {exc}")
            return
        camera.push(rgb, msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)

    def _on_episode(self, msg: Any) -> None:
        try:
            episode: EpisodeMsg = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed episode: {exc}")
            return
        task = episode.task if episode.status == "running" else None
        if task is None:
            self._task = None
            self._builder.start(None)
            return
        run = RunTask((task.episode_id, task.seed, task.round, task.run), task.episode_id, task.instruction)
        if self._builder.start(run):
            self._task = task
            self.get_logger().info(f"run {task.run}: episode {task.episode_id}")

    def _on_location(self, msg: Any) -> None:
        try:
            loc = typed.location_from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed location: {exc}")
            return
        self._last_status = f"{loc.status.value} {loc.node_id or ''}".strip()
        try:
            observation = self._builder.offer(loc)
        except FrameError as exc:  # no frame or heading yet: the next fix retries
            self._fail(str(exc))
            return
        except Exception as exc:  # a device or simulator failed; keep serving, say why
            self._fail(f"{type(exc).__name__}: {exc}")
            return
        if observation is not None:
            self._publish(observation)

    def _fail(self, reason: str) -> None:
        self._errors += 1
        if reason != self._last_error:
            self.get_logger().warning(reason)
        self._last_error = reason

    def _next_stamp(self):
        """Strictly increasing stamps: they key the images of a view set."""
        ns = max(self.get_clock().now().nanoseconds, self._last_stamp_ns + 1)
        self._last_stamp_ns = ns
        return convert.stamp_from_ns(ns)

    def _publish(self, observation: Observation) -> None:
        assert self._task is not None
        self._seq += 1
        stamp = self._next_stamp()
        view_set_id = f"{self._task.episode_id}/run{self._task.run}/camera{self._seq}"
        view_set = convert.observation_to_view_set(observation, self._task, view_set_id, stamp)
        if len(view_set.image_frames()) > self._max_views:
            self.get_logger().warning(f"{len(view_set.image_frames())} views exceed max_views={self._max_views}")
        for view in observation.views:
            if view.image is not None:
                self._images_pub.publish(convert.image_to_msg(view.image, stamp, view_frame_id(view.index),
                                                              self._image_format, self._jpeg_quality))
        self._views_pub.publish(typed.to_ros(view_set))
        self._last_error = ""
        self._publish_diagnostics()

    def _publish_diagnostics(self) -> None:
        values: dict[str, Any] = {"source": self._source.name, "view_sets": self._seq, "errors": self._errors,
                                  "location": self._last_status, "step": self._builder.step}
        if self._task is None:
            level, message = "warn", "waiting for a running episode on `episode`: nothing is published"
        elif self._builder.exhausted:
            level, message = "warn", f"step budget of {self._builder.max_steps} steps used up"
        elif self._last_error:
            level, message = "warn", self._last_error
        else:
            level, message = "ok", f"running episode {self._task.episode_id}"
        if self._task is not None:
            values.update(episode=self._task.episode_id, run=self._task.run)
        publish_diagnostics(self, self._diag_pub, "camera", level, message, values)

    def destroy_node(self) -> None:
        self._source.close()
        super().destroy_node()


def main(args=None) -> None:
    spin(CameraIngestNode, "camera_ingest", args)


if __name__ == "__main__":
    main()

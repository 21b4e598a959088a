"""Every node's parameters in one table: name, default, description, whether it may change
while the node runs. Nodes declare exactly these (with descriptors); config/*.yaml, the docs
and the launch files' static check read the same table without importing rclpy."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cityseeker_ros.core.environment import DEFAULT_MAX_STEPS
from cityseeker_ros.core.metrics import DEFAULT_DTW_THRESHOLD_M


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str
    read_only: bool = True  # fixed once the node has started (or, for lifecycle nodes, configured)
    dynamic_typing: bool = False  # accepts more than the default's type (an index or an id)

    def descriptor(self):
        """rcl_interfaces/ParameterDescriptor (a pure-Python message class; no rclpy needed)."""
        from rcl_interfaces.msg import ParameterDescriptor

        return ParameterDescriptor(name=self.name, description=self.description, read_only=self.read_only,
                                   dynamic_typing=self.dynamic_typing)


STREETVIEW_REPLAY = (
    ParamSpec("data", "", "dataset folder: one CitySeeker city or world folder, or a folder of them"),
    ParamSpec("dataset", "auto", "dataset format: auto, cityseeker or world"),
    ParamSpec("episode", "", "episode to run: an episode id or an index in load order; '' waits idle. "
              "Setting it (with seed, atomically if both change) starts a new run",
              read_only=False, dynamic_typing=True),
    ParamSpec("seed", 0, "seed of the run; with the episode id it seeds the decision node's policy",
              read_only=False),
    ParamSpec("max_steps", DEFAULT_MAX_STEPS, "step budget per episode"),
    ParamSpec("max_invalid_retries", 2, "invalid actions in a row before the episode ends"),
    ParamSpec("dtw_threshold_m", DEFAULT_DTW_THRESHOLD_M, "d_th of the standard nDTW, metres"),
    ParamSpec("views", "", "view source name (panorama-folder, rendered, airsim...); '' sends headings only"),
    ParamSpec("view_params", "{}", "JSON object of the view source's settings"),
    ParamSpec("image_format", "jpeg", "view image encoding on the wire: jpeg, or png (lossless: decisions "
              "on images then match an in-process run bit for bit)"),
    ParamSpec("jpeg_quality", 90, "JPEG quality, 1-100"),
    ParamSpec("max_views", 8, "images kept per view set on the images topic (history depth)"),
    ParamSpec("frame_id", "map", "frame of the pose and path topics"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

VLM_DECISION = (
    ParamSpec("policy", "random", "policy name from the core registry (random, forward, vlm, ocr-embed...)",
              read_only=False),
    ParamSpec("policy_params", "{}", "JSON object of the policy's settings (backend, model...)", read_only=False),
    ParamSpec("data", "", "dataset folder, needed only by privileged policies (oracle)", read_only=False),
    ParamSpec("dataset", "auto", "dataset format of `data`", read_only=False),
    ParamSpec("max_views", 8, "images kept per view set on the images subscription (history depth)",
              read_only=False),
    ParamSpec("image_timeout_s", 10.0, "a view set whose images have not all arrived by then is answered "
              "with an error", read_only=False),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

# Node names as the executables name them by default (and config/<name>.yaml's top-level key).
NODES: dict[str, tuple[ParamSpec, ...]] = {
    "streetview_replay": STREETVIEW_REPLAY,
    "vlm_decision": VLM_DECISION,
}


def declare(node, specs: tuple[ParamSpec, ...]) -> None:
    """Declare every parameter of `specs` on an rclpy node, with its descriptor."""
    for spec in specs:
        node.declare_parameter(spec.name, spec.default, spec.descriptor())

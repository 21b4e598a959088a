"""Every node's parameters in one table: name, default, description, whether it may change
while the node runs. Nodes declare exactly these (with descriptors); config/*.yaml, the docs
and the launch files' static check read the same table without importing rclpy."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.vlm.policy import merge_backend_shorthands
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.evaluation.metrics import DEFAULT_DTW_THRESHOLD_M
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.live import DEFAULT_STALL_TIMEOUT_S
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, World
from cityseeker_ros.ros import secret_params

# The view images' wire format between the world or camera node and the decision node: the one
# default of the nodes' image_format parameter and of a run's image_format setting
# (ros/run_config.py). Lossless, so decisions on images over DDS match an in-process run.
VIEW_IMAGE_FORMAT = "raw"


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


# Settings several nodes load a dataset with, spelled and described once.
DATASET = ParamSpec("dataset", "auto", "dataset format: auto, cityseeker or world")
FAMILY = ParamSpec("family", DEFAULT_FAMILY, "task family whose episodes run: needs, landmarks, questions "
                   "(core/tasks/family.py)")
CITY = ParamSpec("city", "", "which city of `data` when it holds several; '' takes the only one")

STREETVIEW_REPLAY = (
    ParamSpec("data", "", "dataset folder: one CitySeeker city or world folder, or a folder of them"),
    DATASET,
    FAMILY,
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
    ParamSpec("image_format", VIEW_IMAGE_FORMAT, "view image format on the wire: raw (sensor_msgs/Image rgb8, "
              "the cheapest between processes), png (lossless) or jpeg (lossy) as CompressedImage on "
              "images/compressed"),
    ParamSpec("jpeg_quality", 90, "JPEG quality, 1-100"),
    ParamSpec("max_views", 8, "images kept per view set on the images topic (history depth)"),
    ParamSpec("panorama", True, "send the node's panorama with each view set where the view source has one "
              "(the VLM's stop prompt shows it); false skips making it, for policies that never look at it"),
    ParamSpec("frame_id", "map", "frame of the pose and path topics"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

VLM_DECISION = (
    ParamSpec("policy", "random", "policy name from the core registry (random, forward, vlm, ocr-embed...)",
              read_only=False),
    ParamSpec("policy_params", "{}", "JSON object of the policy's settings (backend, model...)", read_only=False),
    ParamSpec("backend", "", "VLM backend (shorthand for policy_params backend; '' leaves it)", read_only=False),
    ParamSpec("model", "", "model path or served model name (shorthand for policy_params model)", read_only=False),
    ParamSpec("data", "", "dataset folder, needed only by privileged policies (oracle)", read_only=False),
    ParamSpec("dataset", "auto", "dataset format of `data`", read_only=False),
    ParamSpec("family", DEFAULT_FAMILY, "task family of the episodes of `data` a privileged policy reads",
              read_only=False),
    ParamSpec("max_views", 8, "images kept per view set on the images subscription (history depth)",
              read_only=False),
    ParamSpec("image_timeout_s", 10.0, "a view set whose images have not all arrived by then is answered "
              "with an error", read_only=False),
    ParamSpec("autostart", False, "configure and activate at start-up, for runs without a supervisor to manage "
              "the lifecycle (bag_eval)"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

# A benchmark run's settings (core BenchmarkConfig), shared by the supervisor and the evaluator so
# both derive the same run id, strategies and config.json as `cityseeker benchmark`.
RUN = (
    ParamSpec("data", "", "dataset folder: one CitySeeker city or world folder, or a folder of them"),
    DATASET,
    FAMILY,
    ParamSpec("policy", "random", "the decision node's policy name (recorded; chooses how hints are followed)"),
    ParamSpec("policy_params", "{}", "JSON object of the policy's settings (recorded in config.json)"),
    ParamSpec("backend", "", "VLM backend (shorthand for policy_params backend; '' leaves it)"),
    ParamSpec("model", "", "model path or served model name (shorthand for policy_params model)"),
    ParamSpec("seeds", [0], "seeds to run every episode with"),
    ParamSpec("limit", 0, "run only the first N episodes (0: all)"),
    ParamSpec("per_category", 0, "only the first N episodes of each category of each city (0: all); limit then "
              "cuts that list"),
    ParamSpec("facts", "all", "questions: all, or map: only those whose every fact is the map's"),
    ParamSpec("tasks", "", "JSON list of [episode_id, seed] pairs to run, in order; '' = episodes x seeds "
              "(the runner passes the tasks a resumed run still needs)"),
    ParamSpec("max_steps", DEFAULT_MAX_STEPS, "step budget per episode (must match the world node's)"),
    ParamSpec("max_invalid_retries", 2, "invalid actions in a row before the episode ends (the world node's)"),
    ParamSpec("dtw_threshold_m", DEFAULT_DTW_THRESHOLD_M, "d_th of the standard nDTW, metres"),
    ParamSpec("views", "", "view source name of the run ('' headings only), recorded in config.json"),
    ParamSpec("view_params", "{}", "JSON object of the view source's settings"),
    ParamSpec("strategies", "[]", "JSON list of BCR strategies: \"B1\", \"oracle:B2\", \"R3:k=3\" or "
              "{\"name\": \"B2\", \"oracle\": true}"),
    ParamSpec("rounds", 1, "rounds per episode (C and R strategies remember earlier rounds)"),
    ParamSpec("max_backtracks", 3, "backtracks per round at most"),
    ParamSpec("follow_hints", "auto", "auto, prompt or force: how a B3 hint reaches the policy"),
    ParamSpec("memory", "", "SQLite memory file of a supervised run (required with strategies or rounds > 1)"),
)

SUPERVISOR = RUN + (
    ParamSpec("mode", "replay", "replay (a benchmark: each decision is an action for the world node) or live "
              "(view sets come from camera_ingest; each decision becomes a motion goal on ~/command for a "
              "vehicle bridge and AR guidance on ~/guidance for a walking user), seek (live; no plan: each goal of the "
              "~/seek action is a need sought from where the vehicle stands) or episodes (replay; no plan: each "
              "goal of the ~/run_episode action runs one task)"),
    ParamSpec("world_node", "/streetview_replay", "node serving view sets (views, images, episode, action)"),
    ParamSpec("decision_node", "/decision", "the lifecycle decision node"),
    ParamSpec("localiser_node", "/graph_localiser", "live: the graph localiser, whose location says when the "
              "vehicle has reached a task's start"),
    ParamSpec("manage_decision_node", True, "configure and activate the decision node, also after it restarts"),
    ParamSpec("decision_timeout_s", 10.0, "no decision within this long: hold, report, and wait for the node"),
    ParamSpec("select_timeout_s", 10.0, "repeat an episode selection the world node has not started by then"),
    ParamSpec("stall_timeout_s", DEFAULT_STALL_TIMEOUT_S, "live: a vehicle under way that neither arrives nor "
              "comes 1 m closer to its goal for this long ends the episode as 'stalled'"),
    ParamSpec("heartbeat_rate_hz", 10.0, "rate of ~/heartbeat; vehicles move only while it is alive"),
    ParamSpec("altitude_m", 0.0, "goal altitude above home in vehicle mode (a drone's cruise height)"),
    ParamSpec("safety_config", "", "mode seek: the vehicle's safety file (core.vehicles.safety.SafetyConfig, as the "
              "vehicle bridge reads it); a goal from a position outside its geofence is rejected "
              "(outside_geofence); '' none (only a bridge's gate enforces a fence); other modes ignore it"),
    ParamSpec("frame_id", "map", "frame of the markers"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

EVALUATOR = RUN + (
    ParamSpec("out", "", "output folder: episodes.jsonl, summary.json and config.json, as `cityseeker benchmark`"),
    ParamSpec("supervisor_node", "/supervisor", "node publishing the outcomes"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

# The vehicle bridge (nodes/vehicle_bridge.py): one node for every vehicle link (core.vehicles.link.LINKS).
# What is particular to a link (AirSim's host, port, anchor and motion; MAVLink's connection; the
# walker's start) is in `link_params`; docs/vehicles.md lists each link's.
VEHICLE_BRIDGE = (
    ParamSpec("link", "walker", "vehicle link: airsim, mavlink or walker (core.vehicles.link.LINKS)"),
    ParamSpec("link_params", "{}", "JSON object of the link's settings, e.g. mavlink "
              '{"connection": "udp://127.0.0.1:14540", "flavour": "px4", "takeoff_alt_m": 10}; airsim '
              '{"host": "127.0.0.1", "port": 41451, "anchor": {"lat": .., "lon": ..}, "motion": "fly", '
              '"camera": "front"}; walker {"data": DIR, "start_node": "n1", "speed_m_s": 0} (docs/vehicles.md)'),
    ParamSpec("safety_config", "", "YAML/JSON file of the safety gate (core.vehicles.safety.SafetyConfig: geofence, "
              "limits, decision_timeout_s, heartbeat_timeout_s, rtl_battery_fraction); required for a flying link "
              "(mavlink, airsim fly); '' on the walker or airsim teleport: the e-stop only"),
    ParamSpec("estop_action", "hold", "what the vehicle does on an e-stop: hold or land (cutting the motors is "
              "~/terminate, with its confirmation)"),
    ParamSpec("estop_state_file", "", "file that keeps a latched e-stop across restarts until ~/reset_estop "
              "('' = $ROS_HOME/cityseeker/<node>.estop.json; `cityseeker run vehicle` uses OUT/ros/)"),
    ParamSpec("terminate_confirmation", "", "set to \"CUT MOTORS\" right before calling ~/terminate (which cuts "
              "the motors: the vehicle falls); every call clears it", read_only=False),
    ParamSpec("connect_timeout_s", 3.0, "how long one connection attempt waits for the vehicle"),
    ParamSpec("reconnect_period_s", 2.0, "seconds between reconnection attempts while the link is down"),
    ParamSpec("link_timeout_s", 0.5, "a vehicle state older than this counts as a lost link (the bridge holds)"),
    ParamSpec("velocity_period_s", 0.5, "a velocity command is re-sent this often while it stands"),
    ParamSpec("state_rate_hz", 10.0, "rate of ~/fix and ~/odom"),
    ParamSpec("image_rate_hz", 2.0, "rate of ~/image (and ~/depth) when the link has a camera (airsim: "
              "link_params camera)"),
    ParamSpec("image_format", "jpeg", "~/image encoding: raw (sensor_msgs/Image rgb8), or jpeg/png "
              "(sensor_msgs/CompressedImage)"),
    ParamSpec("frame_id", "map", "odometry frame: ENU metres about the link's origin (REP 103)"),
    ParamSpec("child_frame_id", "base_link", "vehicle body frame (FLU), also the fix and camera frame"),
    ParamSpec("safety_period_s", 1.0, "~/safety is republished this often, and on every change"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
    ParamSpec("command_max_age_s", 2.0, "a goal or velocity stamped further than this from the bridge's clock "
              "(older, or ahead) is refused, not flown (0.05 to 10 s); the supervisor stamps each command, its "
              "goal repeat included, as it sends it"),
    ParamSpec("monitor", True, "run the independent flight-rules monitor (core/vehicles/monitor) beside the "
              "bridge wherever safety_config is given on a flying link (mavlink, airsim fly) or the walker: it "
              "reads what went to the vehicle and what it reported, and each violation is logged, published on "
              "~/flight_rule_violations and /diagnostics, and trips the e-stop; false turns it off"),
    ParamSpec("monitor_report_file", "", "the monitor's JSON report, written when the node stops ('' = beside "
              "the e-stop state file, <node>.flight_rules.json; `cityseeker run vehicle` puts it in OUT/ros/)"),
)

GRAPH_LOCALISER = (
    ParamSpec("data", "", "dataset folder with the street graph: a CitySeeker city or world folder, or several"),
    DATASET,
    FAMILY,
    CITY,
    ParamSpec("input", "fix", "what to localise: fix (sensor_msgs/NavSatFix on `fix`) or odom (nav_msgs/Odometry "
              "on `odom`)"),
    ParamSpec("odom_origin", "", "'lat,lon' of the odometry frame's (0, 0); '' is the street graph's map origin "
              "(the plane streetview_replay's ~/pose uses)"),
    ParamSpec("snap_radius_m", 15.0, "within this distance of its node the vehicle is on-node"),
    ParamSpec("hysteresis_m", 5.0, "another node must be closer by this much to take over (no flicker)"),
    ParamSpec("hysteresis_fraction", 0.5, "the margin is at most this fraction of the distance between the two "
              "nodes, so a node nearer than hysteresis_m stays reachable"),
    ParamSpec("arrival_radius_m", 2.0, "the goal node takes over once the vehicle is within this distance of it "
              "(or nearest to it) and within snap_radius_m: about the GNSS noise"),
    ParamSpec("supervisor_node", "/supervisor", "its `~/command` goals name the node the vehicle was sent to "
              "(the goal hint); '' localises on position alone"),
    ParamSpec("off_graph_m", 30.0, "farther than this from every node the vehicle is off-graph"),
    ParamSpec("confirm_fixes", 3, "consecutive fixes another node must win before it takes over"),
    ParamSpec("min_motion_m", 2.0, "motion needed before the bearing of motion is taken as the heading"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

CAMERA_INGEST = (
    ParamSpec("source", "replay", "frame source name (video, equirect, rig, rosbag, replay, airsim, topic)"),
    ParamSpec("source_params", "{}", "JSON object of the frame source's settings"),
    ParamSpec("data", "", "dataset folder with the street graph (needed by replay; gives node positions)"),
    DATASET,
    FAMILY,
    CITY,
    ParamSpec("max_steps", DEFAULT_MAX_STEPS, "view sets per run at most (the step budget)"),
    ParamSpec("image_format", VIEW_IMAGE_FORMAT, "view image format on the wire: raw (sensor_msgs/Image rgb8), "
              "png (lossless) or jpeg (lossy) as CompressedImage on images/compressed"),
    ParamSpec("jpeg_quality", 90, "JPEG quality, 1-100"),
    ParamSpec("max_views", 8, "images kept per view set on the images topic (history depth)"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

FRAMES = (
    ParamSpec("source", "replay", "what moves base_link: replay (the world's ~/pose) or vehicle (a vehicle "
              "bridge's ~/fix and ~/odom, any link)"),
    ParamSpec("data", "", "dataset folder with the street graph: its origin is `map`'s, its graph the markers"),
    DATASET,
    FAMILY,
    CITY,
    ParamSpec("origin", "", "'lat,lon[,alt]' of `map` when no data is given (a vehicle without a world)"),
    ParamSpec("replay_node", "/streetview_replay", "the benchmark world node (source replay)"),
    ParamSpec("vehicle_node", "/vehicle_bridge", "the vehicle bridge node (source vehicle)"),
    ParamSpec("episode_topic", "/streetview_replay/episode", "Episode topic whose task's target is drawn "
              "(/supervisor/episode on a live run); '' draws no target"),
    ParamSpec("map_frame", "map", "world-fixed ENU frame at the geographic origin (REP 105)"),
    ParamSpec("odom_frame", "odom", "continuous odometry frame (REP 105)"),
    ParamSpec("base_frame", "base_link", "vehicle body frame, FLU (REP 103)"),
    ParamSpec("cameras", "[]", "JSON list of camera mounts on base_link: {frame_id, xyz [m], rpy_deg}; each is "
              "a static transform, with <frame_id>_optical below it"),
    ParamSpec("target_radius_m", 15.0, "radius of the target area's ring"),
    ParamSpec("path_max_poses", 2000, "poses kept on ~/path (the oldest go first)"),
    ParamSpec("path_min_spacing_m", 0.5, "a pose nearer than this to the last one replaces it"),
    ParamSpec("fix_match_tolerance_s", 0.0, "a fix and an odometry this close in stamp are one instant (the "
              "bridge stamps both alike)"),
    ParamSpec("tf_period_s", 0.1, "the newest map -> odom -> base_link is sent again, stamped now, when nothing "
              "newer went out for this long: /tf is volatile, and a viewer that starts late or a replayed walker "
              "standing still must still find the vehicle"),
    ParamSpec("diagnostics_period_s", 1.0, "seconds between /diagnostics reports"),
)

# Node names as the executables name them by default (and config/<name>.yaml's top-level key).
NODES: dict[str, tuple[ParamSpec, ...]] = {
    "streetview_replay": STREETVIEW_REPLAY,
    "graph_localiser": GRAPH_LOCALISER,
    "frames": FRAMES,
    "camera_ingest": CAMERA_INGEST,
    "decision": VLM_DECISION,
    "vehicle_bridge": VEHICLE_BRIDGE,
    "supervisor": SUPERVISOR,
    "evaluator": EVALUATOR,
}


def world_parameter(data: str, dataset: str, city: str, family: str = DEFAULT_FAMILY) -> World:
    """The world the data, dataset and city parameters name: the one world of `data`, or the
    one named `city`; the parameter is named when wrong."""
    if not data:
        raise ConfigError("parameter data is required: a dataset folder with the street graph")
    worlds = load_dataset(Path(data), dataset, family=family)
    if city:
        chosen = [w for w in worlds if w.city == city]
        if not chosen:
            raise ConfigError(f"parameter city: {city!r} is not in {data}; cities: "
                              f"{', '.join(w.city for w in worlds)}")
        return chosen[0]
    if len(worlds) != 1:
        raise ConfigError(f"parameter city is required: {data} holds {len(worlds)} cities "
                          f"({', '.join(w.city for w in worlds)})")
    return worlds[0]


def json_parameter(name: str, text: str, kind: type = dict) -> Any:
    """A JSON-valued string parameter ('' is empty), with the credentials the parameter holds
    masked put back from the process environment (ros/secret_params.py); errors name the parameter."""
    text = secret_params.restore(name, text)
    try:
        value = json.loads(text) if text else kind()
    except json.JSONDecodeError as exc:
        raise ConfigError(f"parameter {name}: not JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, kind):
        raise ConfigError(f"parameter {name}: expected a JSON {'object' if kind is dict else kind.__name__}, "
                          f"got {text!r}")
    return value


def policy_params(params: dict[str, Any], backend: Optional[str], model: Optional[str]) -> dict[str, Any]:
    """policy_params with the backend and model shorthands merged as the CLI's --backend and
    --model are; a string parameter or launch argument spells "not given" as ''."""
    return merge_backend_shorthands(params, backend or None, model or None)


def run_config(values: dict[str, Any]) -> tuple[BenchmarkConfig, list[tuple[str, int]]]:
    """A RUN table's values -> the run's BenchmarkConfig and explicit tasks ([] = episodes x seeds).
    Errors name the parameter."""
    from cityseeker_ros.core.strategies import parse_strategy

    def parsed(name: str, kind: type = dict) -> Any:
        return json_parameter(name, values[name], kind)

    strategies = [parse_strategy(s) if isinstance(s, str) else s for s in parsed("strategies", list)]
    tasks = parsed("tasks", list)
    if not all(isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], int)
               for t in tasks):
        raise ConfigError(f"parameter tasks: expected [[episode_id, seed], ...], got {values['tasks']!r}")
    if not values["data"]:
        raise ConfigError("parameter data is required: a dataset folder")
    config = BenchmarkConfig(
        data=values["data"], policy=values["policy"], dataset=values["dataset"], family=values["family"],
        policy_params=policy_params(parsed("policy_params"), values["backend"], values["model"]),
        seeds=[int(s) for s in values["seeds"]],
        max_steps=int(values["max_steps"]), max_invalid_retries=int(values["max_invalid_retries"]),
        limit=int(values["limit"]) or None, per_category=int(values["per_category"]) or None,
        facts=str(values["facts"]), dtw_threshold_m=float(values["dtw_threshold_m"]),
        views=values["views"] or None, view_params=parsed("view_params"), strategies=strategies,
        rounds=int(values["rounds"]), max_backtracks=int(values["max_backtracks"]),
        follow_hints=values["follow_hints"], memory=values["memory"] or None)
    config.validate()
    return config, [(t[0], t[1]) for t in tasks]


def declare(node, specs: tuple[ParamSpec, ...]) -> None:
    """Declare every parameter of `specs` on an rclpy node, with its descriptor. A value given
    for a parameter the node does not declare (a typo in a params file or a `-p`) would be
    ignored silently by rclpy, so it is refused here, listing the known parameters."""
    for spec in specs:
        node.declare_parameter(spec.name, spec.default, spec.descriptor())
    # rclpy keeps the node's overrides (params files, -p) in this attribute; it has no public getter.
    unknown_parameters(node.get_name(), getattr(node, "_parameter_overrides", {}), node.has_parameter, specs)


def unknown_parameters(node_name: str, overrides, declared, specs: tuple[ParamSpec, ...]) -> None:
    """Raise ConfigError naming the overridden parameters that are neither declared (by `specs`
    or by rclpy itself: use_sim_time...) nor QoS overrides."""
    unknown = sorted(name for name in overrides if not declared(name) and not name.startswith("qos_overrides."))
    if unknown:
        raise ConfigError(f"{node_name}: unknown parameter(s) {', '.join(unknown)}; known: "
                          f"{', '.join(spec.name for spec in specs)}")

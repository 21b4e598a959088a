"""One run of `cityseeker run benchmark|camera|vehicle|bag` or `ros2 launch cityseeker_ros
<kind>.launch.py`, as one typed object.

`SETTINGS` is the single table of a run's settings. Each has one name: the launch argument, the
RunConfig (or core BenchmarkConfig) field and, with dashes, the CLI flag (`decision_timeout_s`,
`--decision-timeout-s`); JSON-object settings are given on the command line one KEY=VALUE at a
time under the flag the table names (`source_params` <- `--source-param`). The CLI options
of the run subcommands and the launch files' DeclareLaunchArgument lists are generated from it,
and `node_sets.nodes(run)` turns a RunConfig into the node set both start, so `ros2 launch` and
`cityseeker run` cannot drift apart (tests/test_launch.py compares them).

It lives in the ROS layer because it describes ROS node sets, and it imports neither rclpy nor
launch: the CLI, the runner and the launch files all load it in a plain interpreter.
Defaults of settings that are node parameters come from ros/parameters.py, so a node started
by hand, by the runner or by launch gets the same one.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.evaluation.config import MEMORY_FILE, BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.key_value import key_value_argument
from cityseeker_ros.ros import parameters

KINDS = ("benchmark", "camera", "vehicle", "bag")
WORLD_RUNS = ("benchmark", "camera", "vehicle")  # runs over a dataset's tasks, written to `out`
LIVE_RUNS = ("camera", "vehicle")


def _default(table: tuple[parameters.ParamSpec, ...], name: str) -> Any:
    return next(spec.default for spec in table if spec.name == name)


@dataclass
class RunConfig:
    """Everything a node set needs beyond the run's core BenchmarkConfig (`benchmark`; for a
    bag run it carries only the policy, its parameters and `data`)."""

    kind: str
    benchmark: BenchmarkConfig
    out: str = ""
    decision_timeout_s: float = _default(parameters.SUPERVISOR, "decision_timeout_s")
    image_format: str = parameters.VIEW_IMAGE_FORMAT
    frames: bool = True  # the frames node (node_sets: where something moves base_link)
    # camera
    source: str = "video"
    source_params: dict[str, Any] = field(default_factory=dict)
    fix_topic: str = "/fix"
    walker: str = ""  # "" (fixes from a device) or "sim" (the vehicle bridge with the walker link)
    # the vehicle (nodes/vehicle_bridge.py): its link's own settings are in link_params
    link: str = ""
    link_params: dict[str, Any] = field(default_factory=dict)
    connection: str = ""  # shorthand for link_params connection (mavlink)
    safety_config: str = _default(parameters.VEHICLE_BRIDGE, "safety_config")
    estop_action: str = _default(parameters.VEHICLE_BRIDGE, "estop_action")
    altitude_m: float = _default(parameters.SUPERVISOR, "altitude_m")
    camera_params: dict[str, Any] = field(default_factory=dict)
    # bag
    bag: str = ""
    out_bag: str = ""
    rate: float = 1.0
    views_topic: str = "/supervisor/decide_goal"
    images_topic: str = "/streetview_replay/images"

    def vehicle_params(self) -> dict[str, Any]:
        """link_params with the connection shorthand merged."""
        return {**self.link_params, **({"connection": self.connection} if self.connection else {})}


# -- parsing one launch argument (a string) into the setting's type ------------------------------

def json_object(name: str, text: str) -> dict[str, Any]:
    return parameters.json_parameter(name, text, dict)


def _strategies(name: str, text: str) -> list[Any]:
    from cityseeker_ros.core.strategies import parse_strategy

    return [parse_strategy(s) if isinstance(s, str) else s for s in parameters.json_parameter(name, text, list)]


def _seeds(name: str, text: str) -> list[int]:
    count = _integer(name, text)
    if count < 1:
        raise ConfigError(f"{name}: the number of seeds must be >= 1, got {text!r}")
    return list(range(count))


def _integer(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{name}: expected an integer, got {text!r}") from None


def _number(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{name}: expected a number, got {text!r}") from None


def _text(name: str, text: str) -> str:
    return text


SWITCH = {"true": True, "on": True, "1": True, "false": False, "off": False, "0": False}


def switch(text: str) -> bool:
    """A switch's value; on the command line argparse names the flag when this raises ValueError."""
    try:
        return SWITCH[text.strip().lower()]
    except KeyError:
        raise ValueError(text) from None


def _switch(name: str, text: str) -> bool:
    try:
        return switch(text)
    except ValueError:
        raise ConfigError(f"{name}: expected on or off (true or false), got {text!r}") from None


def _optional_text(name: str, text: str) -> Optional[str]:
    return text or None


def _optional_integer(name: str, text: str) -> Optional[int]:
    return _integer(name, text) if text else None


Parse = Callable[[str, str], Any]


@dataclass(frozen=True)
class Setting:
    """One setting of a run: where it applies, how a launch argument string becomes its value,
    and its CLI spelling where that differs in form from `--name-with-dashes`."""

    name: str
    kinds: tuple[str, ...]
    description: str
    parse: Parse = _text
    required: tuple[str, ...] = ()  # the kinds that cannot run without it
    flag: str = ""  # the CLI flag when it is not --name-with-dashes (a repeatable KEY=VALUE form)
    in_benchmark: bool = False  # a field of core BenchmarkConfig

    @property
    def shared_flag(self) -> bool:
        """Given on the command line by the options `cityseeker benchmark` shares (cli.py), not
        by the run subcommand's own."""
        return self.in_benchmark or self.name in ("out", "backend", "model")

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def default(self) -> Any:
        """The typed default: the BenchmarkConfig or RunConfig field's (seeds: their number)."""
        owner = BenchmarkConfig if self.in_benchmark else RunConfig
        spec = next((f for f in fields(owner) if f.name == self.name), None)
        if spec is None:  # backend, model: shorthands for policy_params entries
            return None
        if spec.default is MISSING and spec.default_factory is MISSING:  # required (data, policy)
            return None
        value = spec.default_factory() if spec.default is MISSING else spec.default  # type: ignore[misc]
        return len(value) if self.name == "seeds" else value

    def default_text(self) -> str:
        """The default as a launch argument string (None and empty are '')."""
        value = self.default()
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


W, ALL = WORLD_RUNS, KINDS
SETTINGS: tuple[Setting, ...] = (
    Setting("data", ALL, "dataset folder: a CitySeeker city or a world built by `cityseeker world build` (bag: "
            "only for a privileged policy)", required=W, in_benchmark=True),
    Setting("dataset", W, "dataset format: auto, cityseeker or world", in_benchmark=True),
    Setting("family", W, "task family: needs, landmarks or questions (core/tasks/family.py)", in_benchmark=True),
    Setting("out", W, "output folder of episodes.jsonl and summary.json (node logs in OUT/ros)", required=W),
    Setting("policy", ALL, "policy name: random, forward, ocr-embed, vlm, oracle...", required=ALL,
            in_benchmark=True),
    Setting("policy_params", ALL, "JSON object of the policy's settings", json_object, flag="--param",
            in_benchmark=True),
    Setting("backend", ALL, "VLM backend: transformers or openai (shorthand for policy_params backend)"),
    Setting("model", ALL, "model folder or served model name (shorthand for policy_params model)"),
    Setting("seeds", W, "number of seeds: every task runs with seeds 0..N-1", _seeds, in_benchmark=True),
    Setting("limit", W, "only the first N episodes ('' all)", _optional_integer, in_benchmark=True),
    Setting("per_category", W, "only the first N episodes of each category of each city ('' all); limit then "
            "cuts that list", _optional_integer, in_benchmark=True),
    Setting("facts", W, "questions: all, or map: only those whose every fact is the map's", in_benchmark=True),
    Setting("max_steps", W, "step budget per episode", _integer, in_benchmark=True),
    Setting("dtw_threshold_m", W, "d_th of the standard nDTW, metres", _number, in_benchmark=True),
    Setting("views", W, "view source: rendered, panorama-folder, airsim ('' headings only)", _optional_text,
            in_benchmark=True),
    Setting("view_params", W, "JSON object of the view source's settings", json_object, flag="--view-param",
            in_benchmark=True),
    Setting("strategies", W, 'JSON list of BCR strategies, e.g. ["B1", "oracle:B2", "R3"]', _strategies,
            flag="--strategy", in_benchmark=True),
    Setting("rounds", W, "rounds per episode", _integer, in_benchmark=True),
    Setting("max_backtracks", W, "backtracks per round at most", _integer, in_benchmark=True),
    Setting("follow_hints", W, "auto, prompt or force: how a B3 hint reaches the policy", in_benchmark=True),
    Setting("memory", W, "SQLite memory of a supervised run ('' = OUT/memory.sqlite)", _optional_text,
            in_benchmark=True),
    Setting("decision_timeout_s", W, "seconds without a decision before the supervisor holds and reports",
            _number),
    Setting("image_format", W, "view image format on the wire from the world or camera node to the decision "
            "node: raw, png (lossless) or jpeg (ros/convert.py)"),
    Setting("frames", W, "on or off: the frames node (REP-105 map, odom, base_link on /tf, odometry, path and "
            "markers for RViz and Foxglove) following the replayed walker or the vehicle bridge; a camera run on a "
            "real device has no odometry to follow and gets none", _switch),
    Setting("source", ("camera", "vehicle"), "frame source: video, equirect, rig, replay, rosbag, airsim, topic "
            "(vehicle: the airsim link's camera is the airsim source, camera_params)"),
    Setting("source_params", ("camera", "vehicle"), "JSON object of the frame source's settings", json_object,
            flag="--source-param"),
    Setting("fix_topic", ("camera",), "the device's sensor_msgs/NavSatFix topic"),
    Setting("walker", ("camera",), "sim: a simulated walker (the vehicle bridge with the walker link) gives the "
            "fixes and follows the motion goals, for a run with no hardware; '' (default): a real device"),
    Setting("link", ("vehicle",), "vehicle link: airsim, mavlink or walker (docs/vehicles.md)", required=("vehicle",)),
    Setting("link_params", ("vehicle",), "JSON object of the link's settings: airsim host, port, anchor, motion, "
            "camera...; mavlink connection, flavour, system_id, takeoff_alt_m; walker start, speed_m_s",
            json_object, flag="--link-param"),
    Setting("connection", ("vehicle",), "the autopilot's MAVLink connection, e.g. udp://127.0.0.1:14540 "
            "(shorthand for link_params connection)"),
    Setting("safety_config", ("camera", "vehicle"), "YAML safety file: geofence, limits (vehicle: the bridge's "
            "gate, required for a flying link, and the Seek supervisor's fence; camera: only a seek, which gives it "
            "to the supervisor and the walker's bridge; a camera run without seek refuses it)"),
    Setting("estop_action", ("vehicle",), "what the vehicle does on an e-stop: hold or land"),
    Setting("altitude_m", ("vehicle",), "goal altitude above home, metres", _number),
    Setting("camera_params", ("vehicle",), "JSON object of the airsim frame source's settings (camera...)",
            json_object, flag="--camera-param"),
    Setting("bag", ("bag",), "the recorded bag to play", required=("bag",), flag="bag"),
    Setting("out_bag", ("bag",), "bag to record the new decisions into (new)", required=("bag",)),
    Setting("rate", ("bag",), "playback rate: 1 recorded timing, higher faster, 0 as fast as acknowledged",
            _number),
    Setting("views_topic", ("bag",), "recorded view sets to decide again: /supervisor/decide_goal (with BCR context) "
            "or /streetview_replay/views"),
    Setting("images_topic", ("bag",), "recorded images of those view sets"),
)
BY_NAME = {s.name: s for s in SETTINGS}


def settings(kind: str) -> tuple[Setting, ...]:
    """The settings of one kind of run, in table order; an unknown kind lists the known ones."""
    if kind not in KINDS:
        raise ConfigError(f"unknown run kind {kind!r}; known: {', '.join(KINDS)}")
    return tuple(s for s in SETTINGS if kind in s.kinds)


def from_settings(kind: str, values: Mapping[str, Any]) -> RunConfig:
    """A RunConfig from typed values by setting name (the CLI's, or parsed launch arguments);
    missing ones take their default. Unknown or missing required settings are refused, naming
    them and the known ones."""
    known = settings(kind)
    names = [s.name for s in known]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} for {kind} runs; known: {', '.join(names)}")
    missing = [s.name for s in known if kind in s.required and values.get(s.name) in (None, "")]
    if missing:
        raise ConfigError(f"{kind} runs need {', '.join(missing)}")
    typed = {s.name: (values[s.name] if values.get(s.name) is not None else s.default()) for s in known}
    policy_params = parameters.policy_params(typed.get("policy_params") or {}, typed.get("backend"),
                                             typed.get("model"))
    core = {s.name: typed[s.name] for s in known if s.in_benchmark and typed[s.name] is not None}
    if "seeds" in core and isinstance(core["seeds"], int):
        core["seeds"] = list(range(core["seeds"]))
    benchmark = BenchmarkConfig(**{"data": "", **core, "policy_params": policy_params})
    run_fields = {f.name for f in fields(RunConfig)}
    run = RunConfig(kind=kind, benchmark=benchmark,
                    **{k: v for k, v in typed.items() if k in run_fields and k not in ("kind", "benchmark")})
    return checked(run)


def from_launch(kind: str, arguments: Mapping[str, str]) -> RunConfig:
    """A RunConfig from `ros2 launch` arguments (strings, as LaunchContext.launch_configurations
    holds them); a bad value names its argument, an unknown argument is refused listing the known."""
    known = {s.name: s for s in settings(kind)}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ConfigError(f"unknown launch argument(s) {', '.join(unknown)} for {kind}.launch.py; "
                          f"known: {', '.join(known)}")
    return from_settings(kind, {name: known[name].parse(name, text) for name, text in arguments.items()
                                if text != "" or kind in known[name].required})


def checked(run: RunConfig) -> RunConfig:
    """Refuse what no node could start with, before any process starts."""
    if run.kind in WORLD_RUNS:
        run.benchmark.validate()
        if run.benchmark.supervised and run.benchmark.memory is None:  # as `cityseeker benchmark` does
            run.benchmark.memory = str((Path(run.out) / MEMORY_FILE).resolve())
    if run.kind == "camera" and run.walker not in ("", "sim"):
        raise ConfigError(f"walker must be '' (a real device) or sim, got {run.walker!r}")
    if run.kind in LIVE_RUNS and run.safety_config:  # the nodes check it too; this fails before any starts
        from cityseeker_ros.core.vehicles.safety.config import load_safety_config

        load_safety_config(run.safety_config)
    if run.kind == "vehicle" or run.link:
        check_vehicle(run)
    return run


def check_vehicle(run: RunConfig) -> None:
    """The vehicle's link, its settings and the safety file a flying link needs (the bridge
    refuses to start without one; this says so before any process starts)."""
    from cityseeker_ros.core.vehicles.bridge import ESTOP_ACTIONS
    from cityseeker_ros.core.vehicles.safety.bounds import check_link_params
    from cityseeker_ros.core.vehicles.safety.config import load_safety_config
    from cityseeker_ros.ros import vehicle_link

    params = run.vehicle_params()
    vehicle_link.check_link_name(run.link)
    safety = load_safety_config(run.safety_config) if run.safety_config else None
    if run.link != "walker":  # the walker's start needs its world, which the node set adds
        vehicle_link.check(run.link, params, safety=safety)
    else:
        check_link_params(run.link, params)
    if vehicle_link.flying(run.link, params) and not run.safety_config:
        raise ConfigError(f"safety_config is required for the {run.link} link (it flies): a YAML file with at "
                          "least a geofence (config/safety.yaml is an example)")
    if run.estop_action not in ESTOP_ACTIONS:
        raise ConfigError(f"estop_action must be one of {', '.join(ESTOP_ACTIONS)}, got {run.estop_action!r}")


def launch_arguments(kind: str) -> list[tuple[str, Optional[str], str]]:
    """(name, default or None for a required one, description) of each launch argument."""
    return [(s.name, None if kind in s.required else s.default_text(), s.description) for s in settings(kind)]


# `cityseeker seek`: the camera node set's own settings a Seek uses, and its defaults where they
# differ from a camera run's (the documented use needs no hardware: the world rendered as the
# camera). The walker, the budget and the start are the command's own options (cli.py).
SEEK_SETTINGS = ("source", "source_params", "fix_topic", "safety_config", "decision_timeout_s", "frames")
SEEK_VEHICLE = ("link", "link_params", "estop_action", "altitude_m", "camera_params")  # from --vehicle
SEEK_DEFAULTS = {"source": "replay"}


def seek_config(benchmark: BenchmarkConfig, values: Mapping[str, Any]) -> RunConfig:
    """The RunConfig of `cityseeker seek`: a camera run whose node set serves Seek goals
    (node_sets.seek_nodes), from its BenchmarkConfig (the world, the policy) and SEEK_SETTINGS,
    `walker` and `out` by name (None: the default). `out` is only where node logs go ('' : a
    temporary folder). Not checked here: launcher.plan_seek checks the goal first, as the
    server would, then the rest (`checked`)."""
    known = (*SEEK_SETTINGS, *SEEK_VEHICLE, "walker", "out")
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} for a seek; known: {', '.join(known)}")
    typed = {name: values[name] for name in known if values.get(name) is not None}
    kind = "vehicle" if typed.get("link", "walker") != "walker" else "camera"  # the walker: a camera run's
    return RunConfig(kind=kind, benchmark=benchmark, **{**SEEK_DEFAULTS, **typed})


def with_benchmark(kind: str, benchmark: BenchmarkConfig, values: Mapping[str, Any]) -> RunConfig:
    """A world run from the CLI: the BenchmarkConfig its shared options made, and the values
    of the run's own settings by name (None: the default). Unknown names are refused."""
    own = {s.name: s for s in settings(kind) if not s.in_benchmark and s.name not in ("backend", "model")}
    unknown = sorted(set(values) - set(own))
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} for {kind} runs; known: {', '.join(own)}")
    missing = [name for name, s in own.items() if kind in s.required and values.get(name) in (None, "")]
    if missing:
        raise ConfigError(f"{kind} runs need {', '.join(missing)}")
    typed = {name: s.default() if values.get(name) is None else values[name] for name, s in own.items()}
    return checked(RunConfig(kind=kind, benchmark=benchmark, **typed))


# -- the command line ------------------------------------------------------------------------------

def add_cli_options(parser: Any, kind: str, names: Optional[tuple[str, ...]] = None,
                    defaults: Optional[Mapping[str, Any]] = None) -> None:
    """The run subcommand's own options, from the table (a world run's shared benchmark options
    come from cli.py's `_benchmark_options`). JSON-object settings take repeatable KEY=VALUE.
    `names`: only these settings (`cityseeker seek`'s SEEK_SETTINGS); `defaults`: the defaults
    its help states where they are not the table's (the command applies them)."""
    for s in settings(kind):
        if (s.shared_flag and kind in WORLD_RUNS) or (names is not None and s.name not in names):
            continue
        default = (defaults or {}).get(s.name, s.default())
        shown = s.default_text() if s.name not in (defaults or {}) else str(default)
        help_text = s.description + ("" if default in (None, "", {}, []) else f" (default {shown})")
        if not s.cli_flag.startswith("--"):
            parser.add_argument(s.name, help=s.description)
        elif s.parse is json_object:
            parser.add_argument(s.cli_flag, dest=s.name, action="append", type=key_value_argument, metavar="KEY=VALUE",
                                help=s.description + " (repeatable)")
        else:
            kind_of = {_integer: int, _number: float, _switch: switch}.get(s.parse, str)
            parser.add_argument(s.cli_flag, dest=s.name, type=kind_of,
                                required=kind in s.required and s.name not in (defaults or {}), help=help_text)


def cli_values(args: Any, kind: str) -> dict[str, Any]:
    """The run's settings from parsed CLI arguments, by name: repeated KEY=VALUE become an
    object; a world run's shared benchmark options are left to its BenchmarkConfig."""
    values: dict[str, Any] = {}
    for s in settings(kind):
        if (s.shared_flag and kind in WORLD_RUNS) or not hasattr(args, s.name):
            continue
        value = getattr(args, s.name)
        values[s.name] = dict(value or []) if s.parse is json_object else value
    return values

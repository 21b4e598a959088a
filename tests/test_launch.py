"""The launch files start exactly the node sets `cityseeker run` starts.

ROS 2's `launch` and `launch_ros` packages are not on PyPI, so they cannot be installed here.
Each launch file is instead evaluated with a minimal fake of the part of their API that launch
files use (LaunchDescription, DeclareLaunchArgument, OpaqueFunction, ExecuteProcess,
LaunchConfiguration, Node, ParameterValue), with the signatures of the real classes: every
Node's package, executable, name, parameter files, parameters, remappings and respawn, and
every ExecuteProcess's command, are collected and compared with the node set the runner builds
from the equivalent `cityseeker run` command line. A launch file edited by hand so that it
disagrees on any node, parameter or remapping fails here, naming the difference.
"""
from __future__ import annotations

import importlib.util
import itertools
import re
import sys
import types
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from cityseeker_ros.cli import build_parser, run_config_of
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros import node_sets, run_config
from cityseeker_ros.ros.parameters import NODES
from cityseeker_ros.ros.runner import NodeSpec

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "launch"
LAUNCH_FILES = {"benchmark": "benchmark.launch.py", "camera": "camera.launch.py", "vehicle": "vehicle.launch.py",
                "bag": "bag_eval.launch.py"}
SCRIPTS = dict(re.findall(r'"(\w+) = (cityseeker_ros\.nodes\.\w+):main"', (REPO / "setup.py").read_text()))
_fresh = itertools.count()


# -- a minimal fake of launch / launch_ros ---------------------------------------------------------

class LaunchDescription:
    def __init__(self, initial_entities=None):
        self.entities = list(initial_entities or [])


class DeclareLaunchArgument:
    def __init__(self, name, *, default_value=None, description=None, choices=None, **kwargs):
        self.name, self.default_value, self.description = name, default_value, description


class OpaqueFunction:
    def __init__(self, *, function, args=None, kwargs=None, **rest):
        self.function, self.args, self.kwargs = function, list(args or []), dict(kwargs or {})


class ExecuteProcess:
    def __init__(self, *, cmd, name=None, cwd=None, env=None, additional_env=None, output="log", respawn=False,
                 **kwargs):
        self.cmd, self.name, self.respawn = cmd, name, respawn
        self.additional_env = dict(additional_env or {})


class LaunchConfiguration:
    def __init__(self, variable_name, *, default=None):
        self.variable_name = variable_name

    def perform(self, context):
        return context.launch_configurations[self.variable_name]


class Node(ExecuteProcess):
    def __init__(self, *, executable, package=None, name=None, namespace=None, exec_name=None, parameters=None,
                 remappings=None, ros_arguments=None, arguments=None, respawn=False, output="log",
                 additional_env=None, **kwargs):
        super().__init__(cmd=[executable], name=name, output=output, respawn=respawn, additional_env=additional_env)
        self.package, self.executable = package, executable
        self.parameters, self.remappings = list(parameters or []), list(remappings or [])


class ParameterValue:
    def __init__(self, value, *, value_type=None):
        self.value, self.value_type = value, value_type


def fake_modules() -> dict[str, types.ModuleType]:
    def module(name: str, **attrs: Any) -> types.ModuleType:
        made = types.ModuleType(name)
        made.__dict__.update(attrs)
        return made

    return {"launch": module("launch", LaunchDescription=LaunchDescription),
            "launch.actions": module("launch.actions", DeclareLaunchArgument=DeclareLaunchArgument,
                                     OpaqueFunction=OpaqueFunction, ExecuteProcess=ExecuteProcess),
            "launch.substitutions": module("launch.substitutions", LaunchConfiguration=LaunchConfiguration),
            "launch_ros": module("launch_ros"),
            "launch_ros.actions": module("launch_ros.actions", Node=Node),
            "launch_ros.parameter_descriptions": module("launch_ros.parameter_descriptions",
                                                        ParameterValue=ParameterValue)}


@pytest.fixture(autouse=True)
def fake_launch(monkeypatch):
    for name, module in fake_modules().items():
        monkeypatch.setitem(sys.modules, name, module)


# -- what a launch file and the runner start, in one comparable form -------------------------------

@dataclass(frozen=True)
class Started:
    name: str
    package: str
    executable: str
    files: tuple[str, ...]  # parameter files, by file name
    params: tuple[tuple[str, Any], ...]  # the values the node gets: its files', then the explicit ones
    remaps: tuple[tuple[str, str], ...]
    respawn: bool
    cmd: tuple[str, ...] = ()  # a tool process's command line


def _value(context, value: Any) -> Any:
    if isinstance(value, ParameterValue):  # as launch_ros: value_type converts the performed text
        inner = _value(context, value.value)
        return value.value_type(inner) if value.value_type in (str, int, float) else inner
    if isinstance(value, LaunchConfiguration):
        return value.perform(context)
    return value


def launched(path: Path, arguments: dict[str, str]) -> list[Started]:
    """Evaluate a launch file as `ros2 launch` does with `arguments` (undeclared ones included,
    as ros2 launch passes them on): what it starts."""
    spec = importlib.util.spec_from_file_location(f"launch_file_{next(_fresh)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    context = types.SimpleNamespace(launch_configurations={})
    started: list[Started] = []

    def visit(entity: Any) -> None:
        if isinstance(entity, DeclareLaunchArgument):
            if entity.name not in arguments and entity.default_value is None:
                raise ConfigError(f"launch argument {entity.name!r} is required")
            context.launch_configurations.setdefault(entity.name, entity.default_value)
        elif isinstance(entity, OpaqueFunction):
            for child in entity.function(context, *entity.args, **entity.kwargs) or []:
                visit(child)
        elif isinstance(entity, Node):
            files = tuple(Path(p).name for p in entity.parameters if isinstance(p, (str, Path)))
            for p in entity.parameters:
                if isinstance(p, (str, Path)):
                    assert Path(p).is_file(), p
            params: dict[str, Any] = {}
            for p in entity.parameters:  # in order: later files and dicts win, as in launch_ros
                params.update(file_values(Path(p), entity.name) if isinstance(p, (str, Path)) else
                              {k: _value(context, v) for k, v in p.items()})
            remaps = tuple((_value(context, a), _value(context, b)) for a, b in entity.remappings)
            started.append(Started(entity.name, entity.package, entity.executable, files,
                                   tuple(sorted(params.items())), remaps, bool(entity.respawn)))
        elif isinstance(entity, ExecuteProcess):
            cmd = tuple(str(_value(context, c)) for c in entity.cmd)
            name = entity.name or cmd[cmd.index("-m") + 1]
            started.append(Started(name, "", "", (), (), (), bool(entity.respawn), cmd))
        else:
            raise AssertionError(f"{path.name}: the fake launch API does not know {type(entity).__name__}")

    description = module.generate_launch_description()
    context.launch_configurations.update(arguments)
    for entity in description.entities:
        visit(entity)
    return started


def file_values(path: Path, node: str) -> dict[str, Any]:
    """A params file's values for `node`."""
    return yaml.safe_load(path.read_text())[node]["ros__parameters"]


def runner_started(specs: list[NodeSpec]) -> list[Started]:
    """The runner's node set in the same form: the values each node ends up with, its defaults
    file overlaid with the run's parameters (NodeSpec.ros_args passes both, in that order)."""
    return [Started(s.name, "", "", (), (), (), s.respawn, tuple(s.command())) if s.argv is not None else
            Started(s.name, "cityseeker_ros", s.executable, (s.defaults_file.name,),
                    tuple(sorted({**file_values(s.defaults_file, s.name), **s.params}.items())), tuple(s.remaps),
                    s.respawn) for s in specs]


def differences(launch: list[Started], runner: list[Started]) -> list[str]:
    """Every way the launch file's node set differs from the runner's, one line each."""
    found: list[str] = []
    by_name = {s.name: s for s in runner}
    names = [s.name for s in launch]
    found += [f"{n}: started {names.count(n)} times by the launch file" for n in sorted(set(names))
              if names.count(n) > 1]
    found += [f"{n}: started by the runner, not by the launch file" for n in by_name if n not in names]
    for mine in launch:
        theirs = by_name.get(mine.name)
        if theirs is None:
            found.append(f"{mine.name}: started by the launch file, not by the runner")
            continue
        for what in ("package", "executable", "files", "respawn", "cmd"):
            if getattr(mine, what) != getattr(theirs, what):
                found.append(f"{mine.name}: {what} {getattr(mine, what)!r} (launch) != {getattr(theirs, what)!r}")
        ours, other = dict(mine.params), dict(theirs.params)
        for key in sorted(set(ours) | set(other)):
            if ours.get(key, "(unset)") != other.get(key, "(unset)"):
                found.append(f"{mine.name}: parameter {key} {ours.get(key, '(unset)')!r} (launch) != "
                             f"{other.get(key, '(unset)')!r} (runner)")
        ours_r, other_r = dict(mine.remaps), dict(theirs.remaps)
        for key in sorted(set(ours_r) | set(other_r)):
            if ours_r.get(key) != other_r.get(key):
                found.append(f"{mine.name}: remapping {key} -> {ours_r.get(key)} (launch) != {other_r.get(key)} "
                             "(runner)")
    return found


def runner_node_set(argv: list[str]) -> list[Started]:
    """What `cityseeker run ARGV` starts (a fresh run: the launch file has no resume plan, so
    the supervisor's `tasks` are its default, every episode x seed)."""
    return runner_started(node_sets.nodes(run_config_of(build_parser().parse_args(["run", *argv]))))


# -- the cases: the same run as launch arguments and as a command line ----------------------------

CASE_IDS = ["benchmark-defaults", "benchmark-every-setting", "benchmark-memory-in-out", "camera-defaults",
            "camera-settings", "vehicle-defaults", "vehicle-settings", "vehicle-mavlink", "bag-defaults",
            "bag-settings"]


def cases(data: Path, out: Path) -> dict[str, tuple[str, dict[str, str], list[str]]]:
    """id: (kind, launch arguments, the same run's `cityseeker run` arguments)."""
    d, o = str(data), str(out)
    return dict(zip(CASE_IDS, [
        ("benchmark", {"data": d, "out": o, "policy": "random"},
         ["benchmark", "--data", d, "--out", o, "--policy", "random"]),
        ("benchmark", {"data": d, "out": o, "policy": "vlm", "backend": "openai", "model": "m", "dataset": "world",
                       "policy_params": '{"base_url": "http://h:8000/v1", "max_new_tokens": 32}',
                       "strategies": '["B1", "R3"]', "seeds": "3", "limit": "2", "per_category": "1",
                       "max_steps": "20", "views": "rendered", "view_params": '{"blur_sigma": 1.5}', "rounds": "2",
                       "max_backtracks": "2", "follow_hints": "prompt", "memory": str(out / "m.sqlite"),
                       "dtw_threshold_m": "30", "decision_timeout_s": "3.5", "image_format": "png"},
         ["benchmark", "--data", d, "--out", o, "--policy", "vlm", "--backend", "openai", "--model", "m",
          "--dataset", "world", "--param", "base_url=http://h:8000/v1", "--param", "max_new_tokens=32",
          "--strategy", "B1", "--strategy", "R3", "--seeds", "3", "--limit", "2", "--per-category", "1",
          "--max-steps", "20", "--views", "rendered", "--view-param", "blur_sigma=1.5", "--rounds", "2",
          "--max-backtracks", "2", "--follow-hints", "prompt", "--memory", str(out / "m.sqlite"),
          "--dtw-threshold-m", "30", "--decision-timeout-s", "3.5", "--image-format", "png"]),
        ("benchmark", {"data": d, "out": o, "policy": "random", "strategies": '["B1"]', "rounds": "2"},
         ["benchmark", "--data", d, "--out", o, "--policy", "random", "--strategy", "B1", "--rounds", "2"]),
        ("camera", {"data": d, "out": o, "policy": "ocr-embed"},
         ["camera", "--data", d, "--out", o, "--policy", "ocr-embed"]),
        ("camera", {"data": d, "out": o, "policy": "oracle", "source": "replay",
                    "source_params": '{"views": "rendered"}', "fix_topic": "/phone/fix", "limit": "1",
                    "decision_timeout_s": "2.0", "image_format": "jpeg"},
         ["camera", "--data", d, "--out", o, "--policy", "oracle", "--source", "replay", "--source-param",
          "views=rendered", "--fix-topic", "/phone/fix", "--limit", "1", "--decision-timeout-s", "2",
          "--image-format", "jpeg"]),
        ("vehicle", {"data": d, "out": o, "policy": "random", "link": "airsim",
                     "link_params": '{"anchor": {"lat": 43.7384, "lon": 7.4246}}'},
         ["vehicle", "--data", d, "--out", o, "--policy", "random", "--link", "airsim", "--link-param",
          'anchor={"lat": 43.7384, "lon": 7.4246}']),
        ("vehicle", {"data": d, "out": o, "policy": "random", "link": "airsim",
                     "link_params": '{"anchor": {"lat": 43.7384, "lon": 7.4246}, "host": "10.0.0.2", "port": 41452, '
                                    '"motion": "fly"}',
                     "safety_config": "config/safety.yaml", "estop_action": "land",
                     "altitude_m": "2.5", "camera_params": '{"camera": "front", "settle_s": 0}',
                     "decision_timeout_s": "1.5"},
         ["airsim", "--data", d, "--out", o, "--policy", "random", "--link-param",
          'anchor={"lat": 43.7384, "lon": 7.4246}', "--link-param", "host=10.0.0.2", "--link-param", "port=41452",
          "--link-param", "motion=fly", "--safety-config", "config/safety.yaml", "--estop-action", "land",
          "--altitude-m", "2.5", "--camera-param", "camera=front", "--camera-param", "settle_s=0",
          "--decision-timeout-s", "1.5"]),
        ("vehicle", {"data": d, "out": o, "policy": "ocr-embed", "link": "mavlink",
                     "connection": "udp://127.0.0.1:14540", "link_params": '{"flavour": "px4"}',
                     "safety_config": "config/safety.yaml", "source": "replay",
                     "source_params": '{"views": "rendered"}', "altitude_m": "10"},
         ["vehicle", "--data", d, "--out", o, "--policy", "ocr-embed", "--link", "mavlink", "--connection",
          "udp://127.0.0.1:14540", "--link-param", "flavour=px4", "--safety-config", "config/safety.yaml",
          "--source", "replay", "--source-param", "views=rendered", "--altitude-m", "10"]),
        ("bag", {"bag": "runs/a.bag", "out_bag": "runs/b.bag", "policy": "forward"},
         ["bag", "runs/a.bag", "--out-bag", "runs/b.bag", "--policy", "forward"]),
        ("bag", {"bag": "runs/a.bag", "out_bag": "runs/b.bag", "policy": "oracle", "data": d, "rate": "2.0",
                 "views_topic": "/streetview_replay/views", "images_topic": "/cam/images",
                 "policy_params": '{"k": 1}', "model": "m"},
         ["bag", "runs/a.bag", "--out-bag", "runs/b.bag", "--policy", "oracle", "--data", d, "--rate", "2",
          "--views-topic", "/streetview_replay/views", "--images-topic", "/cam/images", "--param", "k=1",
          "--model", "m"]),
    ], strict=True))




@pytest.mark.parametrize("case", CASE_IDS)
def test_each_launch_file_starts_the_runners_node_set(tmp_path, case):
    kind, arguments, argv = cases(tmp_path / "data", tmp_path / "out")[case]
    launch = launched(LAUNCH / LAUNCH_FILES[kind], arguments)
    runner = runner_node_set(argv)
    assert launch, "starts nothing"
    assert differences(launch, runner) == []
    assert [s.name for s in launch] == [s.name for s in runner]


@pytest.mark.parametrize("kind", sorted(LAUNCH_FILES))
def test_every_node_is_an_installed_executable_with_declared_parameters(tmp_path, kind):
    _, arguments, _ = cases(tmp_path / "data", tmp_path / "out")[f"{kind}-defaults"]
    for started in launched(LAUNCH / LAUNCH_FILES[kind], arguments):
        if started.cmd:
            module = started.cmd[started.cmd.index("-m") + 1]
            assert find_spec(module) is not None, module
            continue
        assert started.package == "cityseeker_ros" and started.executable in SCRIPTS, started.executable
        unknown = {k for k, _ in started.params} - {s.name for s in NODES[started.executable]}
        assert not unknown, f"{started.executable} declares no parameter {sorted(unknown)}"


@pytest.mark.parametrize("kind", sorted(LAUNCH_FILES))
def test_launch_arguments_are_the_run_settings(kind):
    module_path = LAUNCH / LAUNCH_FILES[kind]
    spec = importlib.util.spec_from_file_location(f"launch_file_{next(_fresh)}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    declared = [e for e in module.generate_launch_description().entities if isinstance(e, DeclareLaunchArgument)]
    assert [a.name for a in declared] == [s.name for s in run_config.settings(kind)]
    required = {a.name for a in declared if a.default_value is None}
    assert required == {s.name for s in run_config.settings(kind) if kind in s.required}


def test_the_four_launch_files_exist():  # and seek.launch.py (tests/ros/test_seek_launch.py); vehicle replaced airsim
    assert {p.name for p in LAUNCH.glob("*.launch.py")} == set(LAUNCH_FILES.values()) | {"seek.launch.py"}


def test_an_unknown_launch_argument_stops_the_launch_listing_the_known(tmp_path):
    _, arguments, _ = cases(tmp_path / "data", tmp_path / "out")["benchmark-defaults"]
    with pytest.raises(ConfigError, match=r"unknown launch argument\(s\) dtw_threshold for benchmark.launch.py; "
                                          r"known: data, dataset, family, out, policy, .*dtw_threshold_m"):
        launched(LAUNCH / "benchmark.launch.py", {**arguments, "dtw_threshold": "30"})


def test_a_bad_launch_argument_is_named(tmp_path):
    _, arguments, _ = cases(tmp_path / "data", tmp_path / "out")["vehicle-defaults"]
    with pytest.raises(ConfigError, match="parameter link_params: not JSON"):
        launched(LAUNCH / "vehicle.launch.py", {**arguments, "link_params": "43.7,7.4"})
    with pytest.raises(ConfigError, match="decision_timeout_s: expected a number, got 'soon'"):
        launched(LAUNCH / "vehicle.launch.py", {**arguments, "decision_timeout_s": "soon"})
    with pytest.raises(ConfigError, match="safety_config is required for the mavlink link"):
        launched(LAUNCH / "vehicle.launch.py", {**arguments, "link": "mavlink", "link_params": "",
                                                "connection": "udp://127.0.0.1:14540"})


# -- drift: a copy of a launch file edited by hand is caught, and named ----------------------------

BUILD = "launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context)"


def drifted(tmp_path: Path, kind: str, build: Optional[str] = None, extra: str = "") -> Path:
    """A copy of a launch file whose node list is built by `build` instead (and `extra` code)."""
    text = (LAUNCH / LAUNCH_FILES[kind]).read_text()
    assert BUILD in text
    copy = tmp_path / LAUNCH_FILES[kind]
    copy.write_text("from dataclasses import replace\n" + text.replace(BUILD, build or BUILD) + extra)
    return copy


@pytest.mark.parametrize("build, named", [
    ("launch_actions.action(replace(spec, remaps=spec.remaps[:1]) if spec.name == 'decision' else spec) "
     "for spec in launch_actions.node_set(KIND, context)",
     "decision: remapping images -> None (launch) != /streetview_replay/images (runner)"),
    ("launch_actions.action(replace(spec, params={**spec.params, 'max_steps': 10}) "
     "if spec.name == 'streetview_replay' else spec) for spec in launch_actions.node_set(KIND, context)",
     "streetview_replay: parameter max_steps 10 (launch) != 35 (runner)"),
    ("launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context) if spec.name != 'evaluator'",
     "evaluator: started by the runner, not by the launch file"),
    ("launch_actions.action(replace(spec, respawn=False)) for spec in launch_actions.node_set(KIND, context)",
     "decision: respawn False (launch) != True"),
])
def test_a_launch_file_that_drifts_from_the_runner_fails_naming_the_difference(tmp_path, build, named):
    kind, arguments, argv = cases(tmp_path / "data", tmp_path / "out")["benchmark-defaults"]
    runner = runner_node_set(argv)
    assert differences(launched(drifted(tmp_path, kind), arguments), runner) == []  # the copy itself agrees
    found = differences(launched(drifted(tmp_path, kind, build), arguments), runner)
    assert named in found, found


def test_a_hand_written_node_added_to_a_launch_file_is_caught(tmp_path):
    """The old way of writing launch files: a Node with its own parameters and remappings."""
    kind, arguments, argv = cases(tmp_path / "data", tmp_path / "out")["camera-defaults"]
    hand = ('launch_actions.action(spec) for spec in launch_actions.node_set(KIND, context) '
            'if spec.name != "graph_localiser"] + [Node(package="cityseeker_ros", executable="graph_localiser", '
            'name="graph_localiser", parameters=[launch_actions.action(launch_actions.node_set(KIND, context)[0])'
            '.parameters[0], {"data": LaunchConfiguration("data"), "dataset": "cityseeker"}])')
    copy = drifted(tmp_path, kind, hand, "\nfrom launch_ros.actions import Node\n"
                                         "from launch.substitutions import LaunchConfiguration\n")
    found = differences(launched(copy, arguments), runner_node_set(argv))
    assert "graph_localiser: remapping fix -> None (launch) != /fix (runner)" in found, found
    assert "graph_localiser: parameter dataset 'cityseeker' (launch) != 'auto' (runner)" in found, found


@pytest.mark.parametrize("case", ["benchmark-defaults", "bag-defaults"])
def test_launched_processes_get_the_runners_environment(tmp_path, monkeypatch, case):
    """ros/env.py: the runner's environment (ros_env) binds every DDS socket to loopback unless
    the network switch is on, and keeps large blocks in the heap unless the user's environment
    says otherwise; every node and tool process a launch file starts gets the same (launch files
    once applied no DDS profile at all, so the loopback promise held for `cityseeker run` only)."""
    from cityseeker_ros.ros import launch_actions
    from cityseeker_ros.ros.env import DDS_ENV, MALLOC_ENV, NETWORK_SWITCH, ros_env

    _, _, argv = cases(tmp_path / "data", tmp_path / "out")[case]
    specs = node_sets.nodes(run_config_of(build_parser().parse_args(["run", *argv])))
    for key in [*MALLOC_ENV, NETWORK_SWITCH, "FASTDDS_DEFAULT_PROFILES_FILE"]:
        monkeypatch.delenv(key, raising=False)
    runner = {k: v for k, v in ros_env().items() if k in MALLOC_ENV or k in DDS_ENV}
    assert {k: runner[k] for k in MALLOC_ENV} == MALLOC_ENV
    assert runner["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SYSTEM_DEFAULT"  # with the loopback-only profile
    assert runner["FASTDDS_DEFAULT_PROFILES_FILE"].endswith("config/fastdds_profile.xml")
    assert [launch_actions.action(s).additional_env for s in specs] == [runner] * len(specs)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "1")
    monkeypatch.setenv(NETWORK_SWITCH, "1")
    assert ros_env()["MALLOC_MMAP_THRESHOLD_"] == "1"
    for spec in specs:
        env = launch_actions.action(spec).additional_env
        assert "MALLOC_MMAP_THRESHOLD_" not in env
        assert env["FASTDDS_DEFAULT_PROFILES_FILE"].endswith("config/fastdds_network_profile.xml")


def test_launched_nodes_hold_no_credential_in_a_parameter(tmp_path):
    """Parameters are readable by anyone on the DDS domain: a launch file's nodes get theirs
    masked and the real values in their environment, as the runner's do."""
    from cityseeker_ros.ros import launch_actions, secret_params

    canary = "CANARY-5e2a-launch"
    argv = ["run", "benchmark", "--data", str(tmp_path), "--policy", "vlm", "--backend", "openai", "--model", "m",
            "--backend-param", f'extra_body={{"api_key": "{canary}"}}', "--out", str(tmp_path / "out")]
    specs = node_sets.nodes(run_config_of(build_parser().parse_args(argv)))
    def parameters(node) -> str:
        return repr({k: getattr(v, "value", v) for k, v in node.parameters[1].items()})

    decision = launch_actions.action(next(s for s in specs if s.name == "decision"))
    assert canary not in parameters(decision) and "***" in parameters(decision)
    assert canary in decision.additional_env[secret_params.SECRETS_ENV]
    others = [launch_actions.action(s) for s in specs if s.name != "decision"]
    assert all(canary not in parameters(n) for n in others)

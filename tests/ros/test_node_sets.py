"""The runner's node sets: what each node is told, without starting any."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cityseeker_ros.cli import build_parser, run_config_of
from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, Latency
from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.environment import Environment, move
from cityseeker_ros.ros import node_sets, run_config
from cityseeker_ros.ros.parameters import NODES, VIEW_IMAGE_FORMAT

VLM = {"backend": "openai", "model": "m"}


@pytest.mark.parametrize("policy, params, views, sent", [
    ("vlm", VLM, "panorama-folder", True),  # stop_view panorama, the default: the stop prompt shows it
    ("vlm", {**VLM, "stop_view": "panorama"}, "rendered", True),
    ("vlm", {**VLM, "stop_view": "views"}, "panorama-folder", False),
    ("vlm", VLM, None, False),  # no view source: nothing to make it from
    ("ocr-embed", {}, "panorama-folder", False),  # reads the views only
    ("forward", {}, "panorama-folder", False),
    ("random", {}, "rendered", False),
    ("oracle", {}, "rendered", False),
])
def test_the_world_node_makes_panoramas_only_for_a_policy_that_shows_them(tmp_path, policy, params, views, sent):
    config = BenchmarkConfig(data=str(tmp_path), policy=policy, policy_params=params, views=views)
    replay = node_sets.nodes(run_config.RunConfig("benchmark", config, out=str(tmp_path)))[0]
    assert replay.module.endswith("streetview_replay")
    assert replay.params["panorama"] is sent


def cli_run(*argv: str) -> run_config.RunConfig:
    return run_config_of(build_parser().parse_args(["run", *argv]))


@pytest.mark.parametrize("kind, argv, node, parameter, value", [
    # one spelling from the command line to the node parameter
    ("benchmark", ("--dtw-threshold-m", "30"), "supervisor", "dtw_threshold_m", 30.0),
    ("benchmark", ("--dtw-threshold-m", "30"), "streetview_replay", "dtw_threshold_m", 30.0),
    ("benchmark", ("--dtw-threshold-m", "30"), "evaluator", "dtw_threshold_m", 30.0),
    ("benchmark", ("--decision-timeout-s", "2.5"), "supervisor", "decision_timeout_s", 2.5),
    ("camera", ("--decision-timeout-s", "2.5"), "supervisor", "decision_timeout_s", 2.5),
    ("vehicle", ("--decision-timeout-s", "2.5"), "supervisor", "decision_timeout_s", 2.5),
    ("vehicle", ("--altitude-m", "4"), "supervisor", "altitude_m", 4.0),
    ("benchmark", ("--per-category", "2"), "supervisor", "per_category", 2),
    ("benchmark", ("--image-format", "jpeg"), "streetview_replay", "image_format", "jpeg"),
    ("camera", ("--image-format", "png"), "camera_ingest", "image_format", "png"),
    ("vehicle", ("--image-format", "png"), "camera_ingest", "image_format", "png"),
    # the defaults come from one place
    ("benchmark", (), "streetview_replay", "image_format", VIEW_IMAGE_FORMAT),
    ("camera", (), "camera_ingest", "image_format", VIEW_IMAGE_FORMAT),
    ("camera", (), "supervisor", "decision_timeout_s", 10.0),
    # the old spellings still parse (argparse takes an unambiguous prefix) into the one setting
    ("benchmark", ("--dtw-threshold", "30"), "supervisor", "dtw_threshold_m", 30.0),
    ("camera", ("--decision-timeout", "1"), "supervisor", "decision_timeout_s", 1.0),
])
def test_a_setting_reaches_its_node_parameter_under_its_one_name(tmp_path, kind, argv, node, parameter, value):
    extra = ("--link", "walker") if kind == "vehicle" else ()
    run = cli_run(kind, "--data", str(tmp_path), "--policy", "random", "--out", str(tmp_path / "out"), *extra, *argv)
    spec = next(n for n in node_sets.nodes(run) if n.name == node)
    assert spec.params[parameter] == value
    assert parameter in {s.name for s in NODES[spec.executable]}


def test_every_run_setting_has_one_spelling_on_the_command_line(tmp_path):
    """Each setting's flag is `--name-with-dashes` (JSON objects: the KEY=VALUE flag the table
    names), and the run subcommands know no other spelling of a setting."""
    parser = build_parser()
    subcommands = parser._subparsers._group_actions[0].choices["run"]._subparsers._group_actions[0].choices
    for kind in run_config.KINDS:
        flags = {f for action in subcommands[kind]._actions for f in action.option_strings}
        dests = {action.dest for action in subcommands[kind]._actions}
        for setting in run_config.settings(kind):
            if setting.cli_flag.startswith("--"):
                assert setting.cli_flag in flags, (kind, setting.name)
            else:
                assert setting.name in dests, (kind, setting.name)
        old = {"--dtw-threshold", "--decision-timeout", "--altitude", "--anchor", "--host", "--motion"}
        assert not old & flags, kind


def test_an_airsim_runs_camera_gets_the_bridges_host_port_and_anchor(tmp_path):
    run = cli_run("vehicle", "--data", str(tmp_path), "--policy", "random", "--out", str(tmp_path / "o"),
                  "--link", "airsim", "--link-param", 'anchor={"lat": 1, "lon": 2}', "--link-param", "host=h",
                  "--link-param", "port=7", "--camera-param", "camera=front")
    by_name = {n.name: n for n in node_sets.nodes(run)}
    assert json.loads(by_name["camera_ingest"].params["source_params"]) == {
        "host": "h", "port": 7, "anchor": {"lat": 1, "lon": 2}, "camera": "front"}
    bridge = by_name["vehicle_bridge"].params
    assert bridge["link"] == "airsim" and json.loads(bridge["link_params"])["anchor"] == {"lat": 1, "lon": 2}
    assert bridge["estop_state_file"].endswith("o/ros/vehicle_bridge.estop.json")
    assert by_name["graph_localiser"].remaps == (("fix", "/vehicle_bridge/fix"),)


def test_every_vehicle_bridge_gets_the_safety_file_and_a_flying_link_needs_one(tmp_path):
    """Before, a Seek on AirSim gave the safety file to the supervisor only: the bridge flew
    unguarded. Now the bridge of a run or a seek always gets it, and a flying link without one
    is refused before anything starts (the node refuses too: tests/ros/test_vehicle_bridge.py)."""
    safety = str(Path(__file__).resolve().parents[2] / "config" / "safety.yaml")
    base = ("--data", str(tmp_path), "--policy", "random", "--out", str(tmp_path / "o"))
    fly = ("--link", "airsim", "--link-param", 'anchor={"lat": 1, "lon": 2}', "--link-param", "motion=fly")
    run = cli_run("vehicle", *base, *fly, "--safety-config", safety)
    for made in (node_sets.nodes(run), node_sets.seek_nodes(run)):
        by_name = {n.name: n for n in made}
        assert by_name["vehicle_bridge"].params["safety_config"] == safety
    assert {n.name: n for n in node_sets.seek_nodes(run)}["supervisor"].params["safety_config"] == safety
    walker = cli_run("camera", *base, "--walker", "sim", "--safety-config", safety)
    assert {n.name: n for n in node_sets.seek_nodes(walker)}["vehicle_bridge"].params["safety_config"] == safety
    with pytest.raises(ConfigError, match="safety_config is required for the airsim link"):
        cli_run("vehicle", *base, *fly)
    with pytest.raises(ConfigError, match="safety_config is required for the mavlink link"):
        cli_run("vehicle", *base, "--link", "mavlink", "--connection", "udp://127.0.0.1:14540")


def test_a_launch_file_leaves_the_task_list_to_the_supervisor_and_the_runner_passes_its_plan(tmp_path):
    run = cli_run("benchmark", "--data", str(tmp_path), "--policy", "random", "--out", str(tmp_path))
    supervisor = lambda tasks: next(n for n in node_sets.nodes(run, tasks) if n.name == "supervisor")  # noqa: E731
    assert supervisor(None).params["tasks"] == ""
    assert json.loads(supervisor([("e1", 0)]).params["tasks"]) == [["e1", 0]]


def test_unknown_settings_are_refused_listing_the_known(tmp_path):
    known = ", ".join(s.name for s in run_config.settings("bag"))
    with pytest.raises(ConfigError, match=rf"unknown setting\(s\) ratee for bag runs; known: {known}$"):
        run_config.from_settings("bag", {"bag": "b", "out_bag": "o", "policy": "forward", "ratee": 2.0})
    config = BenchmarkConfig(data=str(tmp_path), policy="random")
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) dtw_threshold for camera runs; known: out, "):
        run_config.with_benchmark("camera", config, {"out": "o", "dtw_threshold": 30})
    with pytest.raises(ConfigError, match=r"unknown run kind 'drone'; known: benchmark, camera, vehicle, bag"):
        run_config.settings("drone")


def test_required_settings_and_bad_values_are_named(tmp_path):
    with pytest.raises(ConfigError, match="bag runs need out_bag"):
        run_config.from_settings("bag", {"bag": "b", "policy": "forward"})
    with pytest.raises(ConfigError, match="vehicle runs need link"):
        run_config.with_benchmark("vehicle", BenchmarkConfig(data=str(tmp_path), policy="random"), {"out": "o"})
    with pytest.raises(ConfigError, match="seeds: the number of seeds must be >= 1, got '0'"):
        run_config.from_launch("benchmark", {"data": str(tmp_path), "out": "o", "policy": "random", "seeds": "0"})
    with pytest.raises(ConfigError, match="unknown policy 'randm'; known: "):
        run_config.from_launch("benchmark", {"data": str(tmp_path), "out": "o", "policy": "randm"})


def test_launch_defaults_are_the_command_lines():
    """A launch argument left out and a flag left out give the same value."""
    from cityseeker_ros.cli import BENCHMARK_DEFAULTS

    cli_names = {"policy_params": "param", "view_params": "view_param", "strategies": "strategy"}
    for setting in run_config.settings("benchmark"):
        if setting.in_benchmark and setting.name not in ("data", "policy"):
            cli_default = BENCHMARK_DEFAULTS[cli_names.get(setting.name, setting.name)]
            assert setting.default() == cli_default, setting.name


def test_a_safety_config_reaches_only_a_seeks_supervisor_and_a_camera_run_refuses_it(tmp_path):
    """Only the seek supervisor reads the geofence; a camera run that took the flag would look fenced
    and not be, so it is refused, naming the setting."""
    safety = str(Path(__file__).resolve().parents[2] / "config" / "safety.yaml")
    run = cli_run("camera", "--data", str(tmp_path), "--policy", "random", "--out", str(tmp_path / "o"),
                  "--safety-config", safety)
    with pytest.raises(ConfigError, match="safety_config"):
        node_sets.nodes(run)
    seek = {n.name: n for n in node_sets.seek_nodes(run)}
    assert seek["supervisor"].params["safety_config"] == safety
    assert seek["supervisor"].params["mode"] == "seek"


class Unreadable(Backend):
    """Answers every request with text no parser reads: each step runs every prompt it would,
    then falls back, with no reply script to keep in step with the mode and profile."""

    name = "unreadable"

    def generate(self, requests):
        return [Generation("no", Latency(preprocess_s=0.0, generate_s=0.0)) for _ in requests]

    def describe(self):
        return {"name": self.name}


class CountingPanorama:
    def __init__(self) -> None:
        self.gets = 0

    def get(self):
        self.gets += 1
        return np.zeros((8, 16, 3), np.uint8)


@pytest.mark.parametrize("mode, stop_view, profile", [
    (mode, stop_view, profile) for mode in ("two-call", "single-call") for stop_view in ("panorama", "views")
    for profile in ("improved", "paper") if not (mode == "single-call" and profile == "paper")])
def test_a_panorama_is_shipped_exactly_when_the_policy_shows_one(tiny_world, tmp_path, mode, stop_view, profile):
    """single-call with the default stop_view once made the world node render and send a
    2048x1024 panorama every step that no prompt showed (252 ms a step over ROS)."""
    params = {"mode": mode, "stop_view": stop_view, "prompt_profile": profile}
    panorama = CountingPanorama()
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    obs = replace(env.step(move(0)).observation, panorama=panorama)
    VlmPolicy(backend_instance=Unreadable(), **params).act(obs)
    config = BenchmarkConfig(data=str(tmp_path), policy="vlm", policy_params={**VLM, **params}, views="rendered")
    replay = node_sets.nodes(run_config.RunConfig("benchmark", config, out=str(tmp_path)))[0]
    assert replay.params["panorama"] is (panorama.gets > 0)
    assert (panorama.gets > 0) is (mode == "two-call" and stop_view == "panorama")  # the cases the loop covers


def test_the_frames_node_follows_the_replayed_walker_or_the_vehicle_bridge(tiny_city, tmp_path):
    """Where something moves base_link there is a frames node: the benchmark's replayed walker,
    the vehicle bridge of a vehicle run, of a camera run or seek with the simulated walker; a camera
    on a real device (a fix, no odometry) has none. `--frames off` leaves it out everywhere."""
    base = ("--data", str(tiny_city), "--policy", "random", "--out", str(tmp_path / "o"))
    world = {"data": str(tiny_city.resolve()), "dataset": "auto", "family": "needs"}
    declared = {s.name for s in NODES["frames"]}

    def frames(made):
        found = [n for n in made if n.name == node_sets.FRAMES]
        assert len(found) <= 1 and (not found or set(found[0].params) <= declared)
        return found[0].params if found else None

    assert frames(node_sets.nodes(cli_run("benchmark", *base))) == {
        **world, "source": "replay", "replay_node": "/streetview_replay", "episode_topic": "/streetview_replay/episode"}
    vehicle = {**world, "source": "vehicle", "vehicle_node": "/vehicle_bridge", "episode_topic": "/supervisor/episode"}
    for run in (cli_run("vehicle", *base, "--link", "walker"), cli_run("camera", *base, "--walker", "sim")):
        assert frames(node_sets.nodes(run)) == vehicle
        assert frames(node_sets.seek_nodes(run)) == vehicle
    device = cli_run("camera", *base)
    assert frames(node_sets.nodes(device)) is None and frames(node_sets.seek_nodes(device)) is None
    for kind, extra in (("benchmark", ()), ("vehicle", ("--link", "walker")), ("camera", ("--walker", "sim"))):
        off = cli_run(kind, *base, *extra, "--frames", "off")
        assert off.frames is False and frames(node_sets.nodes(off)) is None, kind
        if kind != "benchmark":
            assert frames(node_sets.seek_nodes(off)) is None, kind


def test_a_benchmark_over_several_cities_has_no_frames_node(tiny_city, tmp_path):
    """`map` is one city's origin, and the frames node refuses data of several cities without a
    city: such a benchmark starts without it rather than failing."""
    import shutil

    data = tmp_path / "two"
    for name in ("TinyTown_1", "TinyTown_2"):
        shutil.copytree(tiny_city, data / name)
    run = cli_run("benchmark", "--data", str(data), "--policy", "random", "--out", str(tmp_path / "o"))
    assert node_sets.FRAMES not in [n.name for n in node_sets.nodes(run)]


def test_the_frames_switch_parses_on_and_off_and_names_a_bad_value(tmp_path, capsys):
    arguments = {"data": str(tmp_path), "out": "o", "policy": "random"}
    assert run_config.from_launch("benchmark", {**arguments, "frames": "false"}).frames is False
    assert run_config.from_launch("benchmark", {**arguments, "frames": "on"}).frames is True
    assert run_config.from_launch("benchmark", arguments).frames is True
    with pytest.raises(ConfigError, match="frames: expected on or off"):
        run_config.from_launch("benchmark", {**arguments, "frames": "maybe"})
    with pytest.raises(SystemExit):
        cli_run("benchmark", "--data", str(tmp_path), "--policy", "random", "--out", "o", "--frames", "maybe")
    assert "--frames: invalid switch value: 'maybe'" in capsys.readouterr().err

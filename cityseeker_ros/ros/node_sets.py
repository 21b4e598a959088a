"""The node sets `cityseeker run` starts: the same nodes, parameters and wiring as the launch
files in launch/ (tests/test_launch.py checks that both name the same executables)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cityseeker_ros.core.benchmark import BenchmarkConfig
from cityseeker_ros.core.policies import POLICIES
from cityseeker_ros.ros.runner import NodeSpec

REPLAY, DECISION, SUPERVISOR, EVALUATOR = "streetview_replay", "vlm_decision", "supervisor", "evaluator"
LOCALISER, CAMERA, BRIDGE = "graph_localiser", "camera_ingest", "airsim_bridge"


def run_params(config: BenchmarkConfig) -> dict[str, Any]:
    """The RUN parameter table's values for a BenchmarkConfig (ros/parameters.py reads them back)."""
    return {
        "data": str(Path(config.data).resolve()), "dataset": config.dataset, "policy": config.policy,
        "policy_params": json.dumps(config.policy_params), "seeds": list(config.seeds), "limit": config.limit or 0,
        "max_steps": config.max_steps, "max_invalid_retries": config.max_invalid_retries,
        "dtw_threshold_m": float(config.dtw_threshold_m), "views": config.views or "",
        "view_params": json.dumps(config.view_params), "strategies": json.dumps(config.strategies),
        "rounds": config.rounds, "max_backtracks": config.max_backtracks, "follow_hints": config.follow_hints,
        "memory": config.memory or "",
    }


def benchmark_nodes(config: BenchmarkConfig, out: Path, tasks: list[tuple[str, int]], *,
                    decision_timeout_s: float = 10.0) -> list[NodeSpec]:
    """World, decision, supervisor and evaluator for a benchmark run. Images travel as PNG, so a
    policy that reads them decides on the same pixels as in process."""
    policy = POLICIES.get(config.policy)
    run = run_params(config)
    views = config.views if getattr(policy, "uses_images", True) and config.views else ""
    return [
        NodeSpec(REPLAY, "cityseeker_ros.nodes.streetview_replay", {
            "data": run["data"], "dataset": config.dataset, "max_steps": config.max_steps,
            "max_invalid_retries": config.max_invalid_retries, "dtw_threshold_m": run["dtw_threshold_m"],
            "views": views, "view_params": run["view_params"], "image_format": "png",
            "panorama": bool(views) and _shows_panorama(policy, config.policy_params)}),
        _decision(config, run, f"/{REPLAY}/images"),
        NodeSpec(SUPERVISOR, "cityseeker_ros.nodes.supervisor", {
            **run, "tasks": json.dumps([list(t) for t in tasks]), "decision_timeout_s": float(decision_timeout_s)}),
        NodeSpec(EVALUATOR, "cityseeker_ros.nodes.evaluator", {**run, "out": str(Path(out).resolve())}, respawn=True),
    ]


def _shows_panorama(policy: Any, params: dict[str, Any]) -> bool:
    """Send panoramas only to a policy that may show them; a factory that cannot say gets them."""
    shows = getattr(policy, "shows_panorama", None)
    return bool(shows(dict(params))) if callable(shows) else True


def _decision(config: BenchmarkConfig, run: dict[str, Any], images: str) -> NodeSpec:
    privileged = getattr(POLICIES.get(config.policy), "privileged", False)
    return NodeSpec(DECISION, "cityseeker_ros.nodes.vlm_decision", {
        "policy": config.policy, "policy_params": run["policy_params"], "data": run["data"] if privileged else "",
        "dataset": config.dataset}, remaps=(("views", f"/{SUPERVISOR}/views"), ("images", images)), respawn=True)


def _live_nodes(config: BenchmarkConfig, out: Path, tasks: list[tuple[str, int]], source: str,
                source_params: dict[str, Any], fix_topic: str, decision_timeout_s: float,
                altitude_m: float = 0.0) -> list[NodeSpec]:
    """Localiser, camera, decision, supervisor (live) and evaluator: the camera and AirSim runs."""
    run = run_params(config)
    return [
        NodeSpec(LOCALISER, "cityseeker_ros.nodes.graph_localiser", {"data": run["data"], "dataset": config.dataset},
                 remaps=(("fix", fix_topic),)),
        NodeSpec(CAMERA, "cityseeker_ros.nodes.camera_ingest", {
            "data": run["data"], "dataset": config.dataset, "source": source,
            "source_params": json.dumps(source_params), "max_steps": config.max_steps, "image_format": "png"},
            remaps=(("location", f"/{LOCALISER}/location"), ("episode", f"/{SUPERVISOR}/episode"))),
        _decision(config, run, f"/{CAMERA}/images"),
        NodeSpec(SUPERVISOR, "cityseeker_ros.nodes.supervisor", {
            **run, "tasks": json.dumps([list(t) for t in tasks]), "mode": "live", "world_node": f"/{CAMERA}",
            "decision_timeout_s": float(decision_timeout_s), "altitude_m": float(altitude_m)}),
        NodeSpec(EVALUATOR, "cityseeker_ros.nodes.evaluator", {**run, "out": str(Path(out).resolve())}, respawn=True),
    ]


def camera_nodes(config: BenchmarkConfig, out: Path, tasks: list[tuple[str, int]], *, source: str,
                 source_params: dict[str, Any], fix_topic: str = "/fix",
                 decision_timeout_s: float = 10.0) -> list[NodeSpec]:
    """camera.launch.py's nodes: a walking user's camera and GNSS, AR guidance on /supervisor/guidance."""
    return _live_nodes(config, out, tasks, source, source_params, fix_topic, decision_timeout_s)


def airsim_nodes(config: BenchmarkConfig, out: Path, tasks: list[tuple[str, int]], *, bridge: dict[str, Any],
                 camera_params: dict[str, Any], altitude_m: float = 0.0,
                 decision_timeout_s: float = 10.0) -> list[NodeSpec]:
    """airsim.launch.py's nodes: the bridge (behind its safety gate) and the live node set."""
    # The e-stop latch lives with the run: a restarted bridge, or runner on the same OUT, stays latched.
    bridge = {"estop_state_file": str(Path(out).resolve() / "ros" / f"{BRIDGE}.estop.json"), **bridge}
    bridge_node = NodeSpec(BRIDGE, "cityseeker_ros.nodes.airsim_bridge", bridge,
                           remaps=(("command", f"/{SUPERVISOR}/command"), ("heartbeat", f"/{SUPERVISOR}/heartbeat")))
    return [bridge_node, *_live_nodes(config, out, tasks, "airsim", camera_params, f"/{BRIDGE}/fix",
                                      decision_timeout_s, altitude_m)]


PLAYER, RECORDER = "bag_player", "bag_recorder"


def bag_nodes(bag: Path, out_bag: Path, policy: str, policy_params: dict[str, Any], *, rate: float = 1.0,
              views_topic: str = "/supervisor/views", images_topic: str = "/streetview_replay/images",
              data: str = "") -> list[NodeSpec]:
    """bag_eval.launch.py's processes: a fresh decision node answers the played view sets, the
    recorder keeps its decisions with the view sets they answer."""
    privileged = getattr(POLICIES.get(policy), "privileged", False)
    return [
        NodeSpec(DECISION, "cityseeker_ros.nodes.vlm_decision", {
            "policy": policy, "policy_params": json.dumps(policy_params), "data": data if privileged else "",
            "autostart": True},
            remaps=(("views", views_topic), ("images", images_topic))),
        NodeSpec(RECORDER, "cityseeker_ros.bag.recorder",
                 argv=(str(out_bag), "--topics", f"/{DECISION}/decision", views_topic, images_topic)),
        NodeSpec(PLAYER, "cityseeker_ros.bag.player",
                 argv=(str(bag), "--rate", str(rate), "--clock", "--topics", views_topic, images_topic,
                       "--wait-for-subscribers", "10"), finite=True),
    ]

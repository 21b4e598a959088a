"""The node sets of a run: `nodes(run)` is what `cityseeker run KIND` starts and what
launch/KIND.launch.py builds its Node actions from (tests/test_launch.py evaluates the launch
files and compares every node, parameter and remapping with these).

The frames node (REP-105 map -> odom -> base_link for RViz and Foxglove) follows whatever moves:
the replayed walker of a benchmark, or the vehicle bridge of a vehicle run, of a camera run or seek
with the simulated walker, and of a seek on a vehicle. A camera run on a real device reports a fix
and no odometry, so it has no base_link to follow and gets none. `run.frames` (on by default)
leaves it out."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.datasets import city_folders
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros.parameters import VIEW_IMAGE_FORMAT
from cityseeker_ros.ros.run_config import RunConfig
from cityseeker_ros.ros.runner import NodeSpec

REPLAY, DECISION, SUPERVISOR, EVALUATOR = "streetview_replay", "decision", "supervisor", "evaluator"
LOCALISER, CAMERA, BRIDGE = "graph_localiser", "camera_ingest", "vehicle_bridge"
FRAMES = "frames"


def run_params(config: BenchmarkConfig) -> dict[str, Any]:
    """The RUN parameter table's values for a BenchmarkConfig (ros/parameters.py reads them back)."""
    return {
        "data": str(Path(config.data).resolve()), "dataset": config.dataset, "family": config.family,
        "policy": config.policy,
        "policy_params": json.dumps(config.policy_params), "seeds": list(config.seeds), "limit": config.limit or 0,
        "per_category": config.per_category or 0, "facts": config.facts,
        "max_steps": config.max_steps, "max_invalid_retries": config.max_invalid_retries,
        "dtw_threshold_m": float(config.dtw_threshold_m), "views": config.views or "",
        "view_params": json.dumps(config.view_params), "strategies": json.dumps(config.strategies),
        "rounds": config.rounds, "max_backtracks": config.max_backtracks, "follow_hints": config.follow_hints,
        "memory": config.memory or "",
    }


def nodes(run: RunConfig, tasks: Optional[list[tuple[str, int]]] = None) -> list[NodeSpec]:
    """The node set of `run`. `tasks` is the runner's plan of what a resumed run still needs;
    None (a launch file) leaves the supervisor to run every episode x seed."""
    config, out = run.benchmark, Path(run.out)
    if run.kind == "benchmark":
        return benchmark_nodes(config, out, tasks, decision_timeout_s=run.decision_timeout_s,
                               image_format=run.image_format, frames=run.frames)
    if run.kind == "camera":
        if run.safety_config:  # only a seek's supervisor reads it; a camera run must not look fenced
            raise ConfigError("safety_config bounds where a Seek goal may start, and a camera run serves none: "
                              "use `cityseeker seek` or seek.launch.py, or drop it")
        if run.walker == "sim":  # the simulated walker behind the vehicle bridge: its fixes are the bridge's
            return vehicle_nodes(run, tasks, link="walker", link_params={**walker_params(config), **run.link_params},
                                 safety_config="")
        return camera_nodes(config, out, tasks, source=run.source, source_params=run.source_params,
                            fix_topic=run.fix_topic, decision_timeout_s=run.decision_timeout_s,
                            image_format=run.image_format)
    if run.kind == "vehicle":
        params = run.vehicle_params()
        if run.link == "walker":
            params = {**walker_params(config), **params}
        return vehicle_nodes(run, tasks, link=run.link, link_params=params, safety_config=run.safety_config)
    return bag_nodes(Path(run.bag), Path(run.out_bag), config.policy, config.policy_params, rate=run.rate,
                     views_topic=run.views_topic, images_topic=run.images_topic, data=config.data)


def _tasks(tasks: Optional[list[tuple[str, int]]]) -> str:
    return "" if tasks is None else json.dumps([list(t) for t in tasks])


def benchmark_nodes(config: BenchmarkConfig, out: Path, tasks: Optional[list[tuple[str, int]]], *,
                    decision_timeout_s: float = 10.0, image_format: str = VIEW_IMAGE_FORMAT,
                    frames: bool = True) -> list[NodeSpec]:
    """World, decision, supervisor and evaluator for a benchmark run, and the frames of the
    replayed walker (`frames`, where the data is one city). Images travel in `image_format` (by
    default lossless), so a policy that reads them decides on the same pixels as in process."""
    policy = POLICIES.get(config.policy)
    run = run_params(config)
    views = config.views if getattr(policy, "uses_images", True) and config.views else ""
    replayed = [replay_frames(config)] if frames and _one_city(config) else []
    return [
        NodeSpec(REPLAY, "cityseeker_ros.nodes.streetview_replay", {
            "data": run["data"], "dataset": config.dataset, "family": config.family, "max_steps": config.max_steps,
            "max_invalid_retries": config.max_invalid_retries, "dtw_threshold_m": run["dtw_threshold_m"],
            "views": views, "view_params": run["view_params"], "image_format": image_format,
            "panorama": bool(views) and _shows_panorama(policy, config.policy_params)}),
        _decision(config, run, f"/{REPLAY}/images"),
        NodeSpec(SUPERVISOR, "cityseeker_ros.nodes.supervisor", {
            **run, "tasks": _tasks(tasks), "decision_timeout_s": float(decision_timeout_s)}),
        NodeSpec(EVALUATOR, "cityseeker_ros.nodes.evaluator", {**run, "out": str(Path(out).resolve())}, respawn=True),
        *replayed,
    ]


def _one_city(config: BenchmarkConfig) -> bool:
    """`map` is one city's origin: a benchmark over several cities (each replayed in its own
    graph's frame) gets no frames node. A folder no format reads is left to the world node to name."""
    try:
        return len(city_folders(Path(config.data), config.dataset)) == 1
    except ConfigError:
        return True


def replay_frames(config: BenchmarkConfig) -> NodeSpec:
    """The frames of the replayed walker: `map` at the world's origin, base_link at its pose, the
    running episode's target drawn."""
    return NodeSpec(FRAMES, "cityseeker_ros.nodes.frames", {
        "source": "replay", **walker_params(config), "replay_node": f"/{REPLAY}",
        "episode_topic": f"/{REPLAY}/episode"})


def vehicle_frames(config: BenchmarkConfig) -> NodeSpec:
    """The frames of the vehicle behind the bridge (any link): `map` at the world's origin,
    base_link where the bridge's fix and odometry put it, the supervisor's task drawn."""
    return NodeSpec(FRAMES, "cityseeker_ros.nodes.frames", {
        "source": "vehicle", **walker_params(config), "vehicle_node": f"/{BRIDGE}",
        "episode_topic": f"/{SUPERVISOR}/episode"})


def _shows_panorama(policy: Any, params: dict[str, Any]) -> bool:
    """Send panoramas only to a policy that may show them; a factory that cannot say gets them."""
    shows = getattr(policy, "shows_panorama", None)
    return bool(shows(dict(params))) if callable(shows) else True


def _decision(config: BenchmarkConfig, run: dict[str, Any], images: str) -> NodeSpec:
    privileged = getattr(POLICIES.get(config.policy), "privileged", False)
    return NodeSpec(DECISION, "cityseeker_ros.nodes.decision", {
        "policy": config.policy, "policy_params": run["policy_params"], "data": run["data"] if privileged else "",
        "dataset": config.dataset, "family": config.family},
        remaps=(("views", f"/{SUPERVISOR}/views"), ("images", images)), respawn=True)


def _live_nodes(config: BenchmarkConfig, out: Path, tasks: Optional[list[tuple[str, int]]], source: str,
                source_params: dict[str, Any], fix_topic: str, decision_timeout_s: float,
                altitude_m: float = 0.0, image_format: str = VIEW_IMAGE_FORMAT) -> list[NodeSpec]:
    """Localiser, camera, decision, supervisor (live) and evaluator: the camera and AirSim runs."""
    run = run_params(config)
    return [
        NodeSpec(LOCALISER, "cityseeker_ros.nodes.graph_localiser", {"data": run["data"], "dataset": config.dataset,
                                                                      "family": config.family},
                 remaps=(("fix", fix_topic),)),
        NodeSpec(CAMERA, "cityseeker_ros.nodes.camera_ingest", {
            "data": run["data"], "dataset": config.dataset, "family": config.family, "source": source,
            "source_params": json.dumps(source_params), "max_steps": config.max_steps,
            "image_format": image_format},
            remaps=(("location", f"/{LOCALISER}/location"), ("episode", f"/{SUPERVISOR}/episode"))),
        _decision(config, run, f"/{CAMERA}/images"),
        NodeSpec(SUPERVISOR, "cityseeker_ros.nodes.supervisor", {
            **run, "tasks": _tasks(tasks), "mode": "live", "world_node": f"/{CAMERA}",
            "decision_timeout_s": float(decision_timeout_s), "altitude_m": float(altitude_m)}),
        NodeSpec(EVALUATOR, "cityseeker_ros.nodes.evaluator", {**run, "out": str(Path(out).resolve())}, respawn=True),
    ]


def camera_nodes(config: BenchmarkConfig, out: Path, tasks: Optional[list[tuple[str, int]]], *, source: str,
                 source_params: dict[str, Any], fix_topic: str = "/fix", decision_timeout_s: float = 10.0,
                 image_format: str = VIEW_IMAGE_FORMAT) -> list[NodeSpec]:
    """camera.launch.py's nodes: a walking user's camera and GNSS, AR guidance on /supervisor/guidance."""
    return _live_nodes(config, out, tasks, source, source_params, fix_topic, decision_timeout_s,
                       image_format=image_format)


def walker_params(config: BenchmarkConfig) -> dict[str, Any]:
    """The walker link's world (its start: the first task's, unless plan_seek places it); the
    frames node's too (`map` at its origin)."""
    return {"data": str(Path(config.data).resolve()), "dataset": config.dataset, "family": config.family}


def vehicle_nodes(run: RunConfig, tasks: Optional[list[tuple[str, int]]], *, link: str, link_params: dict[str, Any],
                  safety_config: str) -> list[NodeSpec]:
    """vehicle.launch.py's nodes: the vehicle bridge (behind its safety gate, with the run's safety
    file) and the live node set, whose localiser snaps the bridge's fix. The airsim link's camera is
    the camera node's source; any other link's camera is the run's frame source."""
    config, out = run.benchmark, Path(run.out)
    bridge = {"link": link, "link_params": json.dumps(link_params),
              "safety_config": str(Path(safety_config).resolve()) if safety_config else "",
              "estop_action": run.estop_action,
              # The e-stop latch lives with the run: a restarted bridge, or runner on the same OUT, stays latched.
              "estop_state_file": str(out.resolve() / "ros" / f"{BRIDGE}.estop.json")}
    bridge_node = NodeSpec(BRIDGE, "cityseeker_ros.nodes.vehicle_bridge", bridge,
                           remaps=(("command", f"/{SUPERVISOR}/command"), ("heartbeat", f"/{SUPERVISOR}/heartbeat")))
    if link == "airsim":
        source = "airsim"
        source_params = {**{k: link_params[k] for k in ("host", "port", "anchor") if k in link_params},
                         **run.camera_params}
    else:
        source, source_params = run.source, run.source_params
    return [bridge_node, *_live_nodes(config, out, tasks, source, source_params, f"/{BRIDGE}/fix",
                                      run.decision_timeout_s, run.altitude_m, run.image_format),
            *([vehicle_frames(config)] if run.frames else [])]


def seek_nodes(run: RunConfig) -> list[NodeSpec]:
    """A camera or vehicle run's nodes serving Seek goals: the supervisor in mode seek (no plan;
    core.loop.seek_server) and no evaluator, since a seek writes no benchmark record. The run's
    safety file goes to both the supervisor (its geofence bounds where a goal may start) and the
    vehicle bridge (its gate guards every motion); a flying link without one is refused."""
    if run.kind not in ("camera", "vehicle"):
        raise ValueError(f"a seek runs on a camera or vehicle node set, not {run.kind!r}")
    safety = str(Path(run.safety_config).resolve()) if run.safety_config else ""
    if run.kind == "camera" and run.walker == "sim":
        made = vehicle_nodes(run, [], link="walker", link_params={**walker_params(run.benchmark), **run.link_params},
                             safety_config=safety)
    elif run.kind == "camera":
        made = nodes(replace(run, safety_config=""), [])  # a device: no bridge here to guard
    else:
        made = nodes(run, [])
    return [replace(n, params={**n.params, "mode": "seek", "tasks": "", "safety_config": safety})
            if n.name == SUPERVISOR else n for n in made if n.name != EVALUATOR]


AR_SERVER = "ar_server"


def ar_nodes(run: RunConfig, origin: tuple[float, float], server_argv: tuple[str, ...]) -> list[NodeSpec]:
    """`cityseeker ar`'s processes: a device's Seek node set (seek_nodes with the `topic` frame
    source) whose device is the AR server (cityseeker_ros/ar/): camera_ingest reads its frames, and
    graph_localiser its fixes with the phone's compass heading, as odometry around `origin` (a
    NavSatFix has no heading, and a phone camera cannot be oriented without one); then the server."""
    if run.kind != "camera" or run.walker or run.source != "topic":
        raise ValueError("an AR trial is a camera run of the topic source with no simulated walker")
    made = []
    for n in seek_nodes(run):
        if n.name == LOCALISER:
            n = replace(n, params={**n.params, "input": "odom", "odom_origin": f"{origin[0]!r},{origin[1]!r}"},
                        remaps=(("odom", f"/{AR_SERVER}/odom"),))
        elif n.name == CAMERA:
            n = replace(n, remaps=(*n.remaps, ("frames", f"/{AR_SERVER}/frames"),
                                   ("frames/compressed", f"/{AR_SERVER}/frames/compressed")))
        made.append(n)
    return [*made, NodeSpec(AR_SERVER, "cityseeker_ros.ar.serve", argv=server_argv)]


PLAYER, RECORDER, ASKER = "bag_player", "bag_recorder", "bag_asker"


def bag_nodes(bag: Path, out_bag: Path, policy: str, policy_params: dict[str, Any], *, rate: float = 1.0,
              views_topic: str = "/supervisor/decide_goal", images_topic: str = "/streetview_replay/images",
              data: str = "") -> list[NodeSpec]:
    """bag_eval.launch.py's processes: a fresh decision node answers the played view sets, the
    recorder keeps its decisions with the view sets they answer."""
    privileged = getattr(POLICIES.get(policy), "privileged", False)
    return [
        NodeSpec(DECISION, "cityseeker_ros.nodes.decision", {
            "policy": policy, "policy_params": json.dumps(policy_params), "data": data if privileged else "",
            "autostart": True},
            remaps=(("images", images_topic),)),
        # the decision node is a Decide action server: this client asks it about each played view set
        NodeSpec(ASKER, "cityseeker_ros.bag.asker", argv=(views_topic, "--action", f"/{DECISION}/decide")),
        NodeSpec(RECORDER, "cityseeker_ros.bag.recorder",
                 argv=(str(out_bag), "--topics", f"/{DECISION}/decision", views_topic, images_topic)),
        # plays once both the recorder and the asker (views) or the decision node (images) listen
        NodeSpec(PLAYER, "cityseeker_ros.bag.player",
                 argv=(str(bag), "--rate", str(rate), "--clock", "--topics", views_topic, images_topic,
                       "--wait-for-subscribers", "10", "--subscribers", "2"), finite=True),
    ]

"""A vehicle link from the vehicle bridge's `link` and `link_params` (the node's parameters, a run's
settings, `cityseeker seek --vehicle`): one place that knows each link's settings, so the node,
the runner and the seek checks build and check links the same way. No rclpy here.

- `walker` (core.vehicles.sim.WalkerLink): `data`, `dataset`, `city`, `start` ("lat,lon"),
  `start_node` ('' with neither: the first task's start), `speed_m_s` (0 teleports), `noise_m`,
  `seed`, `follow_goals`;
- `mavlink` (core.vehicles.mavlink): `connection` (udp://HOST:PORT, tcp://..., serial://DEV:BAUD),
  `flavour` (auto, px4, ardupilot), `system_id`, `takeoff_alt_m`, and the link's other keywords;
  `home` [lat, lon, alt] places the odometry origin (else the first position);
- `airsim` (core.vehicles.airsim): `host`, `port`, `client`, `vehicle`, `rpc_timeout_s`,
  `motion_timeout_s`, `probe_timeout_s`, `raw_channel_order`, `anchor` (required), `motion`
  (teleport, fly), `motion_params`, `state_from_pose`, `camera`, `depth`.

Every number among them has a range (core/vehicles/safety/bounds.py, one table per link): `check`
refuses one outside with a line naming the key, the value and the range, and, given the safety
file, a take-off height or a fixed goal height outside its floor and ceiling.
"""
from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.link import LINKS, VehicleLink
from cityseeker_ros.core.vehicles.safety.bounds import (
    Altitudes,
    check_link_params,
    check_link_within_safety,
    takeoff_height_problem,
)

VEHICLE_LINKS = ("airsim", "mavlink", "walker")
# The vehicle bridge's lines for the person running the stack (what it waits for: the autopilot's
# heartbeat, arming, takeoff, the control mode): `cityseeker seek` and `run vehicle` print the node's
# log lines that start with this (ros/launcher.py's BridgeSays), for a flying link.
SAID = "vehicle: "
Origin = tuple[float, float, float]  # lat, lon, alt: odometry's ENU origin and the fix altitude's datum


@dataclass
class VehicleSetup:
    """A link made from its settings, and what the node publishing it needs to know."""

    link: VehicleLink
    origin: Optional[Origin]  # None: the vehicle's first position
    flying: bool  # leaves the ground: the bridge refuses to start without a safety file
    camera: str = ""
    depth: bool = False
    grab: Optional[Callable[[str, bool], Any]] = None  # (camera, depth) -> CameraFrame, on the caller's thread


WALKER_KEYS = ("data", "dataset", "family", "city", "start", "start_node", "speed_m_s", "noise_m", "seed",
               "follow_goals")
AIRSIM_KEYS = ("host", "port", "client", "vehicle", "rpc_timeout_s", "motion_timeout_s", "probe_timeout_s",
               "raw_channel_order", "anchor", "motion", "motion_params", "state_from_pose", "camera", "depth")


def _known(name: str, params: Mapping[str, Any], keys: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(keys))
    if unknown:
        raise ConfigError(f"link_params for the {name} link: unknown key(s) {', '.join(unknown)}; known: "
                          f"{', '.join(keys)}")


def check_link_name(name: str) -> None:
    if name not in VEHICLE_LINKS:
        close = difflib.get_close_matches(name, VEHICLE_LINKS, n=1)
        raise ConfigError(f"unknown vehicle link {name!r}; known: {', '.join(VEHICLE_LINKS)}"
                          + (f" (did you mean {close[0]}?)" if close else ""))


def flying(name: str, params: Mapping[str, Any]) -> bool:
    """Whether this link flies (and so needs a safety file): MAVLink always, AirSim unless teleported."""
    return name == "mavlink" or (name == "airsim" and params.get("motion", "teleport") != "teleport")


def check(name: str, params: Mapping[str, Any], safety: Optional[Altitudes] = None) -> None:
    """Everything that can be checked without opening the link: names, keys, and each number
    against its range (core.vehicles.safety.bounds); with the safety file (a SafetyConfig), the
    heights the link flies to against its floor and ceiling too."""
    check_link_name(name)
    if name == "walker":
        _known(name, params, WALKER_KEYS)
        check_link_params(name, params)
        walker_start(params)
    elif name == "airsim":
        _known(name, params, AIRSIM_KEYS)
        from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
        from cityseeker_ros.core.vehicles.airsim.motion import MOTION_MODES

        if not params.get("anchor"):
            raise ConfigError('link_params anchor is required for the airsim link: {"lat": .., "lon": .., '
                              '"alt": 0, "yaw_offset_deg": 0}')
        Anchor.from_config(params["anchor"])
        motion = params.get("motion", "teleport")
        mode = MOTION_MODES.get(motion)
        check_link_params(name, params)
        _known_motion_params(motion, mode, params.get("motion_params") or {})
    else:
        connection = params.get("connection", params.get("endpoint"))
        if not connection:
            raise ConfigError("link_params connection is required for the mavlink link, e.g. udp://127.0.0.1:14540")
        from cityseeker_ros.core.vehicles.mavlink.transport import parse_endpoint

        parse_endpoint(connection)
        keys = _mavlink_keys()
        if keys is not None:
            _known(name, params, keys)
        check_link_params(name, params)
    if safety is not None:
        check_link_within_safety(name, params, safety)


def _mavlink_keys() -> Optional[tuple[str, ...]]:
    """MavlinkLink's keywords and the link_params of its own; None without pymavlink (making the
    link then fails with the install line)."""
    try:
        from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
    except ImportError:
        return None
    own = [p for p in inspect.signature(MavlinkLink).parameters if p != "endpoint"]
    return ("connection", "endpoint", "home", *own)


def _known_motion_params(motion: str, mode: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """The AirSim motion mode's keywords: an unknown one would fail only at the first move."""
    keys = list(inspect.signature(mode).parameters)[2:]  # after (link, anchor)
    unknown = sorted(str(k) for k in params if k not in keys)
    if unknown:
        raise ConfigError(f"link_params motion_params: unknown key(s) {', '.join(unknown)} for motion {motion}; "
                          f"known: {', '.join(keys)}")


def walker_start(params: Mapping[str, Any]) -> tuple[float, float]:
    """(lat, lon) from the walker's start, start_node or data; errors name the key."""
    start = params.get("start")
    if start:
        try:
            lat, lon = (float(v) for v in str(start).split(","))
        except ValueError:
            raise ConfigError(f"link_params start: expected \"lat,lon\" in degrees, got {start!r}") from None
        if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
            raise ConfigError(f"link_params start: not a position: {start!r}")
        return lat, lon
    from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
    from cityseeker_ros.ros.parameters import world_parameter

    world = world_parameter(str(params.get("data", "")), str(params.get("dataset", "auto")),
                            str(params.get("city", "")), str(params.get("family", DEFAULT_FAMILY)))
    node_id = params.get("start_node") or (world.episodes[0].start if world.episodes else "")
    if node_id not in world.graph.nodes:
        raise ConfigError(f"link_params start_node: {node_id!r} is not a node of {world.city}'s street graph"
                          if node_id else f"link_params start_node is required: {world.city} has no episodes")
    node = world.graph.nodes[node_id]
    return node.lat, node.lon


def make_vehicle(name: str, params: Mapping[str, Any], *, velocity_period_s: float = 0.5,
                 safety: Optional[Altitudes] = None) -> VehicleSetup:
    """The link `name` made from `params` (not connected: the bridge connects it); with the safety
    file, a take-off height (given or the link's default) above its ceiling is refused here."""
    check(name, params, safety)
    params = dict(params)
    if name == "walker":
        from cityseeker_ros.core.vehicles.sim.walker import SimulatedWalker

        lat, lon = walker_start(params)
        speed = float(params.get("speed_m_s", 0.0))
        follow = params.get("follow_goals")
        walker = SimulatedWalker(lat, lon, speed_m_s=speed if speed > 0 else None,
                                 noise_m=float(params.get("noise_m", 0.0)), seed=int(params.get("seed", 0)),
                                 follow_goals=None if follow is None else int(follow))
        return VehicleSetup(LINKS.create("walker", walker=walker), (lat, lon, 0.0), flying=False)
    if name == "mavlink":
        home = params.pop("home", None)
        connection = params.pop("connection", None) or params.pop("endpoint")
        link = LINKS.create("mavlink", endpoint=connection, **params)
        problem = None if safety is None else takeoff_height_problem(getattr(link, "takeoff_alt_m", None), safety)
        if problem is not None:
            raise ConfigError(f"link_params {problem}")
        origin = None if home is None else tuple(float(v) for v in home)
        return VehicleSetup(link, origin, flying=True)  # type: ignore[arg-type]
    return _airsim(params, velocity_period_s)


def _airsim(params: dict[str, Any], velocity_period_s: float) -> VehicleSetup:
    from cityseeker_ros.core.vehicles.airsim.anchor import Anchor
    from cityseeker_ros.core.vehicles.airsim.client import load_client_module
    from cityseeker_ros.core.vehicles.airsim.link import AirSimVehicleLink, BridgeLink

    client = params.get("client", "auto")
    load_client_module(client)  # a missing client library fails now, with the install line
    anchor = Anchor.from_config(params["anchor"])
    motion = params.get("motion", "teleport")

    def connection(role: str) -> BridgeLink:
        timeout = params.get("motion_timeout_s", 600.0) if role == "motion" else params.get("rpc_timeout_s", 5.0)
        return BridgeLink(params.get("host", "127.0.0.1"), int(params.get("port", 41451)), client=client,
                          vehicle=params.get("vehicle", ""), timeout_s=float(timeout),
                          connect_timeout_s=float(params.get("probe_timeout_s", 2.0)),
                          raw_channel_order=params.get("raw_channel_order", "bgr")).connect()

    link = AirSimVehicleLink(anchor, connection, motion, params.get("motion_params") or {}, velocity_period_s,
                             bool(params.get("state_from_pose", False)))
    return VehicleSetup(link, (anchor.lat, anchor.lon, anchor.alt), flying=motion != "teleport",
                        camera=str(params.get("camera", "")), depth=bool(params.get("depth", False)),
                        grab=lambda camera, depth: link.grab(camera, depth=depth))


def parse_vehicle(spec: str) -> tuple[str, dict[str, Any]]:
    """`cityseeker seek --vehicle`: walker, mavlink:CONNECTION (mavlink:udp://127.0.0.1:14540) or
    airsim[:HOST[:PORT]]; the link name and its params."""
    name, _, rest = spec.partition(":")
    check_link_name(name)
    if name == "walker":
        if rest:
            raise ConfigError(f"--vehicle {spec}: the walker takes no address (its start is --start)")
        return name, {}
    if name == "mavlink":
        if not rest:
            raise ConfigError(f"--vehicle {spec}: give the connection, e.g. mavlink:udp://127.0.0.1:14540")
        from cityseeker_ros.core.vehicles.mavlink.transport import parse_endpoint

        try:
            parse_endpoint(rest)
        except Exception as exc:  # noqa: BLE001 - a LinkError, named with the flag
            raise ConfigError(f"--vehicle {spec}: {exc}") from None
        return name, {"connection": rest}
    host, _, port = rest.partition(":")
    params: dict[str, Any] = {"host": host} if host else {}
    if port:
        if not port.isdigit():
            raise ConfigError(f"--vehicle {spec}: expected airsim:HOST:PORT, port a number")
        params["port"] = int(port)
    return name, params

"""The allowed range of every number in the safety file and in the vehicle links' settings, one
table per source, each range with the reason for it. A value outside is refused before anything
connects, with one line naming the key, the value and the range: a typo (a fence radius of 1e9 m,
a take-off to 45 m under a 30 m ceiling, a link-loss time of -1 s) must never reach a vehicle.

The tables are the documentation: docs/vehicles.md copies them, and tests/core/vehicles/safety/
test_bounds.py holds every shipped config inside them.
"""
from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Union

from cityseeker_ros.core.infra.errors import ConfigError

Number = Union[int, float]


@dataclass(frozen=True)
class Bound:
    """Inclusive range [low, high] of one setting, its unit and why those ends."""

    low: float
    high: float
    unit: str
    why: str
    integer: bool = False

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.integer:
            return f"from {int(self.low)} to {int(self.high)}{unit}"
        return f"from {self.low:g} to {self.high:g}{unit}"


# -- the safety file (core.vehicles.safety.config), keys as written under `safety:` ------------------
SAFETY_BOUNDS: dict[str, Bound] = {
    "geofence.circle.radius_m": Bound(
        1.0, 10_000.0, "m", "under 1 m is inside GNSS error; 10 km is past any line of sight, and the circle "
        "goes up to the autopilot as a 16-sided polygon that wraps and distorts for absurd radii"),
    "geofence.polygon": Bound(
        0.0, 10_000.0, "m from the polygon's centre, the mean of its vertices",
        "as a circle's radius: the fence is tested in a local plane that is exact only over a few km"),
    "max_altitude_m": Bound(
        1.0, 120.0, "m above home", "120 m is the ceiling for small drones in the EU's open category, and "
        "about the US's 400 ft, 122 m; under 1 m nothing can take off"),
    "min_altitude_m": Bound(
        -100.0, 120.0, "m above home", "the floor, and below max_altitude_m: 100 m below home reaches the "
        "street from a roof or a hillside launch; lower is a typo"),
    "max_speed_m_s": Bound(
        0.1, 20.0, "m/s", "20 m/s, 72 km/h, is past any street-level search, and a multirotor needs tens "
        "of metres to stop from it; under 0.1 m/s the vehicle never arrives"),
    "max_vertical_speed_m_s": Bound(
        0.1, 5.0, "m/s", "PX4's and ArduPilot's default climb limits are 3 and 2.5 m/s; faster descents "
        "risk the vortex ring state"),
    "max_yaw_rate_deg_s": Bound(
        1.0, 180.0, "deg/s", "a half-turn a second already blurs the camera's frames; under 1 deg/s a "
        "turn takes minutes"),
    "decision_timeout_s": Bound(
        0.2, 60.0, "s", "under 0.2 s one late message of a 10 Hz command stream holds the vehicle; over "
        "60 s a velocity command flies on for a minute with no new decision"),
    "heartbeat_timeout_s": Bound(
        0.2, 10.0, "s", "the supervisor beats at 10 Hz: under 0.2 s one late beat holds the vehicle; "
        "over 10 s it flies on that long after the supervisor died"),
    "rtl_battery_fraction": Bound(
        0.1, 0.9, "", "under 10 % a multirotor's voltage sags too far to fly home; over 90 % it "
        "returns right after take-off"),
}

# -- link_params of each vehicle link (ros/vehicle_link.py) -----------------------------------------
MAVLINK_BOUNDS: dict[str, Bound] = {
    "takeoff_alt_m": Bound(
        1.0, 120.0, "m above home", "and within the safety file's floor and ceiling; under 1 m the vehicle "
        "sits in its own ground effect and the autopilot may not see it airborne; 120 m as max_altitude_m"),
    "setpoint_hz": Bound(
        2.0, 50.0, "Hz", "PX4 takes OFFBOARD only from a setpoint stream faster than 2 Hz; over 50 Hz "
        "setpoints fill most of a 57600-baud telemetry radio"),
    "keepalive_s": Bound(
        0.2, 2.0, "s", "the bridge renews it on each safety tick, 20 a second: under 0.2 s a few late "
        "ticks stop the stream; over 2 s a stalled stack keeps its last setpoint streaming that long"),
    "prestream_s": Bound(
        0.2, 5.0, "s", "PX4 refuses OFFBOARD until a setpoint stream runs: under 0.2 s it has seen at "
        "most two setpoints at 10 Hz; over 5 s every take-control waits that long"),
    "link_loss_s": Bound(
        0.3, 5.0, "s", "telemetry comes at 10 Hz: under 0.3 s one lost datagram reports a loss on a healthy "
        "link; over 5 s the stack flies blind too long before it holds"),
    "command_timeout_s": Bound(
        0.1, 3.0, "s", "per try: a telemetry radio's round trip takes up to 0.1 s; over 3 s a hold the "
        "autopilot did not hear is retried too late"),
    "command_retries": Bound(
        0, 20, "", "with command_timeout_s, at most 10 s in all (below); 0 sends once", integer=True),
    "system_id": Bound(1, 255, "", "a MAVLink system id; 0 is broadcast", integer=True),
    "component_id": Bound(1, 255, "", "a MAVLink component id; 0 is every component", integer=True),
    "source_system": Bound(1, 255, "", "this stack's MAVLink system id (255: a ground station)", integer=True),
    "source_component": Bound(1, 255, "", "this stack's MAVLink component id; 0 is every component",
                              integer=True),
}
# command_timeout_s x (command_retries + 1): how long an unacknowledged hold, land or mode change
# may go on before the link reports it failed and the bridge escalates.
MAVLINK_COMMAND_BUDGET_S = 10.0
HOME_ALT_BOUND = Bound(-500.0, 9_000.0, "m above sea level", "from the Dead Sea shore to above any airfield")

AIRSIM_BOUNDS: dict[str, Bound] = {
    "port": Bound(1, 65_535, "", "a TCP port", integer=True),
    "rpc_timeout_s": Bound(
        0.1, 30.0, "s", "a hold, a state or an image RPC; over 30 s a hung simulator blocks the hold that long"),
    "motion_timeout_s": Bound(
        1.0, 3_600.0, "s", "a blocking move answers on arrival: an hour crosses the largest fence at walking pace"),
    "probe_timeout_s": Bound(0.1, 60.0, "s", "the first connect; over a minute is a simulator that is not there"),
}
AIRSIM_ANCHOR_BOUNDS: dict[str, Bound] = {
    "alt": HOME_ALT_BOUND,
    "yaw_offset_deg": Bound(-360.0, 360.0, "deg", "a compass bearing; more than a turn is a typo"),
}
AIRSIM_MOTION_BOUNDS: dict[str, Bound] = {
    "altitude_m": Bound(
        -100.0, 120.0, "m above the anchor", "every goal's height: within the safety file's floor and ceiling"),
    "max_speed_mps": SAFETY_BOUNDS["max_speed_m_s"],
    "max_yaw_rate_dps": SAFETY_BOUNDS["max_yaw_rate_deg_s"],
    "yaw_margin_deg": Bound(0.1, 45.0, "deg", "how close a turn ends; over 45 deg it does not face the goal"),
    "timeout_s": Bound(1.0, 3_600.0, "s", "as motion_timeout_s"),
}

WALKER_BOUNDS: dict[str, Bound] = {
    "speed_m_s": Bound(
        0.0, 20.0, "m/s", "0 teleports; as the flying limit: faster skips street nodes between two fixes"),
    "noise_m": Bound(
        0.0, 50.0, "m", "GNSS jitter: 50 m is worse than a receiver in a street canyon gives"),
    "seed": Bound(0, 2**32 - 1, "", "numpy's generators take a non-negative seed", integer=True),
    "follow_goals": Bound(0, 1_000_000, "", "goals before the walker stops listening", integer=True),
}

LINK_BOUNDS: dict[str, dict[str, Bound]] = {"mavlink": MAVLINK_BOUNDS, "airsim": AIRSIM_BOUNDS,
                                            "walker": WALKER_BOUNDS}


def _short_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxstring = r.maxother = r.maxlong = 60
    r.maxlist, r.maxdict = 6, 4
    return r


_SHORT = _short_repr()


def shown(value: Any) -> str:
    """A value in an error line: its repr, cut short (a whole binary blob is no help)."""
    return _SHORT.repr(value)


def is_number(value: Any) -> bool:
    """A finite real number (not a bool, not an int too big for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def in_bounds(key: str, value: Any, bound: Bound, *, noun: str = "") -> Number:
    """`value` as a float (an int for an integer bound) or ConfigError naming `key`, the value and
    the range. `noun` replaces "a number" / "a positive number" / "an integer" in the line."""
    ok = is_number(value) and (not bound.integer or isinstance(value, int)) and bound.low <= value <= bound.high
    if not ok:
        what = noun or ("an integer" if bound.integer else "a positive number" if bound.low > 0 else "a number")
        why = f" ({bound.why})" if bound.why else ""
        raise ConfigError(f"{key} must be {what} {bound.describe()}{why}, got {shown(value)}")
    return int(value) if bound.integer else float(value)


def check_table(prefix: str, params: Mapping[str, Any], table: Mapping[str, Bound],
                skip_none: tuple[str, ...] = ()) -> dict[str, Number]:
    """Every key of `params` that `table` bounds, checked; `prefix` names where they came from."""
    out: dict[str, Number] = {}
    for key, bound in table.items():
        if key in params and not (params[key] is None and key in skip_none):
            out[key] = in_bounds(f"{prefix}{key}", params[key], bound)
    return out


def check_link_params(name: str, params: Mapping[str, Any]) -> None:
    """The numbers in one link's `link_params`, each against its link's table (errors say
    `link_params KEY ...`); the nested AirSim anchor and motion_params too."""
    check_table("link_params ", params, LINK_BOUNDS.get(name, {}), skip_none=("system_id", "component_id",
                                                                               "follow_goals"))
    if name == "mavlink":
        timeout = params.get("command_timeout_s", 0.5)  # MavlinkLink's defaults (test_bounds holds them so)
        retries = params.get("command_retries", 5)
        if timeout * (retries + 1) > MAVLINK_COMMAND_BUDGET_S:
            raise ConfigError(f"link_params command_timeout_s x (command_retries + 1) = {timeout:g} x {retries + 1} "
                              f"= {timeout * (retries + 1):g} s must be at most {MAVLINK_COMMAND_BUDGET_S:g} s "
                              "(an unacknowledged hold is reported failed within that)")
        if "home" in params:
            home = params["home"]
            if not (isinstance(home, (list, tuple)) and len(home) == 3 and all(map(is_number, home))
                    and abs(home[0]) <= 90 and abs(home[1]) <= 180):
                raise ConfigError(f"link_params home must be [lat, lon, alt] (degrees, degrees, metres above sea "
                                  f"level), got {shown(home)}")
            in_bounds("link_params home[2]", home[2], HOME_ALT_BOUND)
    if name == "airsim":
        if isinstance(params.get("anchor"), Mapping):
            check_table("link_params anchor.", params["anchor"], AIRSIM_ANCHOR_BOUNDS)
        motion_params = params.get("motion_params")
        if motion_params is not None:
            if not isinstance(motion_params, Mapping):
                raise ConfigError(f"link_params motion_params must be a mapping, got {shown(motion_params)}")
            check_table("link_params motion_params.", motion_params, AIRSIM_MOTION_BOUNDS, skip_none=("altitude_m",))


class Altitudes(Protocol):
    """What a height is checked against: a SafetyConfig or the gate's Limits."""

    max_altitude_m: float
    min_altitude_m: float


def takeoff_height_problem(takeoff_alt_m: Optional[float], limits: Altitudes) -> Optional[str]:
    """Why a take-off to `takeoff_alt_m` (metres above home) would leave the safety file's floor
    and ceiling, or None when it stays within them (or the link has no take-off height)."""
    if takeoff_alt_m is None:
        return None
    if not is_number(takeoff_alt_m):
        return f"takeoff_alt_m must be a number of metres above home, got {shown(takeoff_alt_m)}"
    if takeoff_alt_m > limits.max_altitude_m:
        return (f"takeoff_alt_m {takeoff_alt_m:g} m is above the safety file's ceiling max_altitude_m "
                f"{limits.max_altitude_m:g} m: the take-off would climb through it")
    if takeoff_alt_m < limits.min_altitude_m:
        return (f"takeoff_alt_m {takeoff_alt_m:g} m is below the safety file's floor min_altitude_m "
                f"{limits.min_altitude_m:g} m")
    return None


def check_takeoff_height(takeoff_alt_m: Optional[float], limits: Altitudes) -> None:
    """ConfigError when a take-off to `takeoff_alt_m` would leave the floor or ceiling of `limits`
    (a SafetyConfig or Limits): for whoever holds both the link and the safety file."""
    problem = takeoff_height_problem(takeoff_alt_m, limits)
    if problem is not None:
        raise ConfigError(problem)


def check_link_within_safety(name: str, params: Mapping[str, Any], limits: Altitudes) -> None:
    """The heights a link's settings fly to, against the safety file's floor and ceiling: the
    MAVLink take-off height and AirSim's fixed goal height (motion_params.altitude_m)."""
    if name == "mavlink" and "takeoff_alt_m" in params:
        problem = takeoff_height_problem(params["takeoff_alt_m"], limits)
        if problem is not None:
            raise ConfigError(f"link_params {problem}")
    motion_params = params.get("motion_params") if name == "airsim" else None
    altitude = motion_params.get("altitude_m") if isinstance(motion_params, Mapping) else None
    if is_number(altitude) and not limits.min_altitude_m <= altitude <= limits.max_altitude_m:
        raise ConfigError(f"link_params motion_params.altitude_m {altitude:g} m lies outside the safety file's "
                          f"floor and ceiling ({limits.min_altitude_m:g} to {limits.max_altitude_m:g} m): every "
                          "goal would fly there")

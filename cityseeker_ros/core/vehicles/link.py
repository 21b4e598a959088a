"""The contract every vehicle link keeps (MAVLink, AirSim, the simulated walker), after MAVSDK's
plugins: connect, telemetry, arm/takeoff/hold/land/return, position and velocity setpoints, a
geofence. A link only translates; whether a motion is allowed is decided before it is called
(the safety gate in the bridge that owns the link), so a link never refuses for safety reasons of
its own, except that it never takes control back from a pilot who took it (`PilotOverride`).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.core.infra.registry import Registry

# What the autopilot does when the vehicle leaves the uploaded fence (each link maps these onto
# its autopilot's own parameter values).
BREACH_ACTIONS = ("report", "hold", "rtl", "land")


class LinkError(CitySeekerError):
    """The vehicle is unreachable or refused a request; one line naming the endpoint or request and why."""


class StreamStopped(LinkError):
    """The link's own setpoint stream stopped because its owner's keepalive went stale (a stalled
    control loop): the link itself is fine, and the owner's next word must be a stop, not a reconnect
    (which would leave the vehicle to the autopilot's offboard-loss failsafe meanwhile)."""


class PilotOverride(LinkError):
    """The autopilot left the stack's mode by itself (an RC mode switch or its own failsafe): the link
    sends no motion until the owner calls `take_control()` again."""


@dataclass(frozen=True)
class Heard:
    """One source of heartbeats on the link."""

    system_id: int
    component_id: int
    autopilot: str  # "px4", "ardupilot", "none" (a ground station, a camera) or "autopilot <n>"
    vehicle_type: str
    heartbeats: int

    def __str__(self) -> str:
        return (f"system {self.system_id} component {self.component_id} ({self.autopilot} {self.vehicle_type}, "
                f"{self.heartbeats} heartbeat{'s' if self.heartbeats != 1 else ''})")


@dataclass(frozen=True)
class ConnectReport:
    """What `connect()` heard: the vehicle it chose and everything else on the link."""

    endpoint: str  # as described to a user, e.g. "udp://127.0.0.1:14540 (listening)"
    autopilot: str  # the flavour the link speaks: "px4" or "ardupilot"
    system_id: int
    component_id: int
    vehicle_type: str
    heartbeats: int  # from the chosen vehicle, until connect returned
    heard: tuple[Heard, ...]  # every source heard, the chosen one included
    protocol: int  # MAVLink wire version (2) or 0 where the link is not MAVLink
    elapsed_s: float

    def summary(self) -> str:
        return (f"{self.autopilot} {self.vehicle_type} system {self.system_id} component {self.component_id} "
                f"on {self.endpoint}: {self.heartbeats} heartbeat(s) in {self.elapsed_s:.2f} s")


@dataclass(frozen=True)
class VehicleState:
    """One telemetry snapshot. Angles in degrees; `heading_deg` is the compass heading (clockwise from
    north, like `Goal.heading_deg`), `yaw_deg` the same direction in ROS ENU (counter-clockwise from
    east, REP 103). Position is None until the vehicle has reported one."""

    lat: Optional[float]
    lon: Optional[float]
    alt_m: Optional[float]  # above home (take-off point)
    heading_deg: Optional[float]
    roll_deg: Optional[float]
    pitch_deg: Optional[float]
    yaw_deg: Optional[float]
    velocity_enu: tuple[float, float, float]  # m/s east, north, up
    armed: bool
    mode: str  # the autopilot's own name, e.g. "OFFBOARD", "AUTO.LOITER", "GUIDED"
    in_control: bool  # the link holds control and the vehicle is in the mode the stack commands
    battery_fraction: Optional[float]  # 0..1, None when the vehicle does not say
    autopilot_time_s: Optional[float]  # the autopilot's clock (time since boot)
    heartbeat_age_s: float  # since the last heartbeat (inf before the first)
    link_lost: bool
    # The mode the vehicle is in when the stack did not ask for it (a pilot's switch, the autopilot's
    # own failsafe), None while it is in a mode the stack asked for or one the autopilot moves to by
    # itself on the way (PX4's takeoff ends in AUTO.LOITER), or still in the previous one while a
    # request is pending. Links without modes (the walker, AirSim) always say None. The bridge's
    # control-authority machine (core/vehicles/authority.py) treats it as a pilot's takeover in any state.
    foreign_mode: Optional[str] = None

    @property
    def position_known(self) -> bool:
        return self.lat is not None and self.lon is not None and self.alt_m is not None


@dataclass(frozen=True)
class Capabilities:
    """What a link can do; the bridge hides or refuses what is False instead of calling it."""

    arm: bool = False
    takeoff: bool = False
    go_to: bool = False
    velocity: bool = False
    hold: bool = False
    land: bool = False
    rtl: bool = False
    fence: bool = False
    take_control: bool = False  # the vehicle has a mode that the stack must enter and can lose
    terminate: bool = False  # the link can cut the motors (flight termination); never an e-stop default
    # The link itself says when the vehicle is in a mode the stack did not ask for (VehicleState.foreign_mode,
    # PilotOverride); a link that does not is judged by the bridge from in_control while commanding.
    reports_foreign_mode: bool = False


@dataclass(frozen=True)
class Fence:
    """An inclusion polygon on the ground, a ceiling above home, and what the autopilot does on a breach."""

    polygon: tuple[tuple[float, float], ...]  # (lat, lon) vertices, not closed
    max_alt_m: float
    breach_action: str = "hold"

    def __post_init__(self) -> None:
        if len(self.polygon) < 3:
            raise LinkError(f"a fence polygon needs at least 3 vertices; got {len(self.polygon)}")
        for lat, lon in self.polygon:
            if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
                raise LinkError(f"fence vertex ({lat}, {lon}) is not a latitude, longitude pair")
        if not (math.isfinite(self.max_alt_m) and self.max_alt_m > 0):
            raise LinkError(f"fence ceiling must be a positive number of metres; got {self.max_alt_m}")
        if self.breach_action not in BREACH_ACTIONS:
            raise LinkError(f"fence breach action must be one of {', '.join(BREACH_ACTIONS)}; "
                            f"got {self.breach_action!r}")


class VehicleLink(ABC):
    """One vehicle behind one connection. Calls block until the vehicle accepted the request (or
    raise `LinkError`); motion calls return as soon as the setpoint is sent."""

    name = "vehicle"

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    def set_owner_gate(self, allows: Callable[[], bool]) -> None:
        """The owner's word on motion, asked right before each message that moves the vehicle, on the
        link's own threads too (MAVLink's setpoint stream). It must not block: a link may ask it under
        its own lock."""
        self._owner_gate = allows

    def owner_allows(self) -> bool:
        gate: Optional[Callable[[], bool]] = getattr(self, "_owner_gate", None)
        return gate is None or gate()

    @abstractmethod
    def connect(self, timeout_s: float = 3.0) -> ConnectReport:
        """Open the connection and wait at most `timeout_s` for the vehicle."""

    @abstractmethod
    def state(self) -> VehicleState: ...

    @property
    @abstractmethod
    def link_lost(self) -> bool:
        """Nothing heard from the vehicle for longer than the link's limit (about a second)."""

    @abstractmethod
    def arm(self) -> None: ...

    @abstractmethod
    def takeoff(self, alt_m: Optional[float] = None, timeout_s: float = 30.0) -> None:
        """Climb to `alt_m` above home (None: the link's configured height); waits until there,
        at most `timeout_s` (0: return once the vehicle accepted)."""

    def take_control(self) -> None:
        """Enter the mode in which the stack commands the vehicle (PX4 OFFBOARD, ArduPilot GUIDED);
        the only way back after a `PilotOverride`. Links without such a mode need nothing."""
        return None

    def operator_takes_control(self) -> None:
        """An operator gave the stack control back after a pilot took it: the next stop from the
        owner may end the pilot's mode. Without this, a stop sent in a race with a pilot's switch
        (the bridge had not yet seen it) must not take the vehicle from the pilot."""
        return None

    def keepalive(self) -> None:
        """The owner's control loop is alive; links that stream setpoints stop when it is not."""
        return None

    @abstractmethod
    def go_to(self, lat: float, lon: float, alt_m: float, heading_deg: Optional[float] = None,
              speed_m_s: Optional[float] = None) -> None: ...

    @abstractmethod
    def velocity(self, east_m_s: float, north_m_s: float, up_m_s: float = 0.0,
                 yaw_rate_deg_s: float = 0.0) -> None:
        """ENU velocity (REP 103); yaw rate positive counter-clockwise."""

    @abstractmethod
    def hold(self) -> None:
        """Stop and keep position with the vehicle's own hold (loiter, brake)."""

    @abstractmethod
    def land(self) -> None: ...

    @abstractmethod
    def return_to_launch(self) -> None: ...

    def terminate(self) -> None:
        """Cut the motors now (flight termination: the vehicle falls). Only the bridge calls it, and
        only on an explicit, confirmed request."""
        raise LinkError(f"the {self.name} link cannot cut the motors")

    def flown_altitude_m(self, alt_m: float) -> float:
        """The altitude above home the vehicle will really fly for a goal at `alt_m` (a link may fly
        every goal at one configured height); the bridge checks this one against the ceiling and floor."""
        return alt_m

    def upload_fence(self, polygon: Sequence[tuple[float, float]], max_alt_m: float,
                     breach_action: str = "hold") -> Fence:
        raise LinkError(f"the {self.name} link cannot upload a geofence to the vehicle")

    def read_fence(self) -> Fence:
        raise LinkError(f"the {self.name} link cannot read a geofence from the vehicle")

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> VehicleLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


LinkFactory = Callable[..., VehicleLink]
LINKS: Registry[LinkFactory] = Registry("vehicle link")

"""Decoded MAVLink messages, both directions, as the monitor's observations. The stack's messages are
told from the vehicle's by source system (the stack's is 255 by default); mode numbers are the
autopilots' own (PX4 px4_custom_mode.h, ArduCopter mode.h), kept here rather than borrowed from the
link, so that the oracle does not share the code it judges (a test holds the two tables equal)."""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.monitor.geometry import offset
from cityseeker_ros.core.vehicles.monitor.observations import (
    ARM,
    DISARM,
    HOLD,
    LAND,
    MODE,
    POSITION,
    RTL,
    SPEED,
    TAKEOFF,
    TERMINATE,
    VELOCITY,
    Observation,
    Reported,
    Sent,
)


def _px4(main: int, sub: int = 0) -> int:
    return main << 16 | sub << 24


PX4_MODES = {"MANUAL": _px4(1), "ALTCTL": _px4(2), "POSCTL": _px4(3), "AUTO.READY": _px4(4, 1),
             "AUTO.TAKEOFF": _px4(4, 2), "AUTO.LOITER": _px4(4, 3), "AUTO.MISSION": _px4(4, 4),
             "AUTO.RTL": _px4(4, 5), "AUTO.LAND": _px4(4, 6), "AUTO.FOLLOW_TARGET": _px4(4, 8),
             "AUTO.PRECLAND": _px4(4, 9), "ACRO": _px4(5), "OFFBOARD": _px4(6), "STABILIZED": _px4(7)}
ARDUCOPTER_MODES = {"STABILIZE": 0, "ACRO": 1, "ALT_HOLD": 2, "AUTO": 3, "GUIDED": 4, "LOITER": 5, "RTL": 6,
                    "CIRCLE": 7, "LAND": 9, "DRIFT": 11, "SPORT": 13, "FLIP": 14, "AUTOTUNE": 15, "POSHOLD": 16,
                    "BRAKE": 17, "THROW": 18, "AVOID_ADSB": 19, "GUIDED_NOGPS": 20, "SMART_RTL": 21}
MODES = {"px4": PX4_MODES, "ardupilot": ARDUCOPTER_MODES}
CONTROL_MODES = {"px4": "OFFBOARD", "ardupilot": "GUIDED"}
# What a mode change to each mode means (hold, land, return); anything else is a plain mode change.
MODE_KINDS = {"AUTO.LOITER": HOLD, "AUTO.LAND": LAND, "AUTO.PRECLAND": LAND, "AUTO.RTL": RTL,
              "BRAKE": HOLD, "LOITER": HOLD, "POSHOLD": HOLD, "LAND": LAND, "RTL": RTL, "SMART_RTL": RTL}
MAX_PENDING = 2000  # messages held while the autopilot is unknown; past this they are judged without it
AUTOPILOTS = {mavlink.MAV_AUTOPILOT_PX4: "px4", mavlink.MAV_AUTOPILOT_ARDUPILOTMEGA: "ardupilot"}

_IGNORE_POSITION, _IGNORE_VELOCITY = 1 | 2 | 4, 8 | 16 | 32
_RELATIVE = {mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT}
_AMSL = {mavlink.MAV_FRAME_GLOBAL, mavlink.MAV_FRAME_GLOBAL_INT}
_BODY = {mavlink.MAV_FRAME_BODY_NED, mavlink.MAV_FRAME_BODY_OFFSET_NED, mavlink.MAV_FRAME_BODY_FRD}
_OFFSET = {mavlink.MAV_FRAME_LOCAL_OFFSET_NED, mavlink.MAV_FRAME_BODY_OFFSET_NED}


def mode_name(flavour: Optional[str], custom_mode: int) -> str:
    for name, number in MODES.get(flavour or "", {}).items():
        if number == custom_mode:
            return name
    if flavour == "px4":
        return f"PX4 main {custom_mode >> 16 & 0xFF} sub {custom_mode >> 24 & 0xFF}"
    return f"custom mode {custom_mode}"


def frame_name(frame: int) -> str:
    entry = mavlink.enums["MAV_FRAME"].get(frame)
    return entry.name.removeprefix("MAV_FRAME_").lower() if entry else f"frame {frame}"


class MavlinkObserver:
    """`observe(msg, t)`: the observations one decoded message makes (often none).

    flavour: "px4", "ardupilot" or None (from the vehicle's first HEARTBEAT's autopilot field).
    stack_system / stack_component: the source of the stack's messages (component None: any).
    vehicle_system: the autopilot's system id (None: the first autopilot heard).
    """

    def __init__(self, flavour: Optional[str] = None, stack_system: int = 255, stack_component: Optional[int] = None,
                 vehicle_system: Optional[int] = None) -> None:
        if flavour is not None and flavour not in MODES:
            raise ValueError(f"flavour must be one of {', '.join(MODES)} or None, got {flavour!r}")
        self.flavour = flavour
        self.stack_system, self.stack_component = stack_system, stack_component
        self.vehicle_system = vehicle_system
        self.counts: Counter[str] = Counter()  # "stack TYPE", "vehicle TYPE", "other TYPE"
        self.home_amsl_m: Optional[float] = None
        self.home: Optional[tuple[float, float]] = None
        self._pos: Optional[tuple[float, float]] = None
        self._heading_deg: Optional[float] = None
        self._pending: list[tuple[Any, float]] = []

    @property
    def control_mode(self) -> Optional[str]:
        return CONTROL_MODES.get(self.flavour or "")

    def observe(self, msg: Any, t: float) -> list[Observation]:
        """Until the vehicle's first heartbeat names its autopilot, messages wait (a mode number or a takeoff
        height means nothing without it); then they come out in order, at their own times."""
        if self.flavour is None:
            autopilot = msg.get_type() == "HEARTBEAT" and AUTOPILOTS.get(msg.autopilot) is not None and (
                self.vehicle_system in (None, msg.get_srcSystem()))
            if not autopilot and len(self._pending) < MAX_PENDING:
                self._pending.append((msg, t))
                return []
            if autopilot:  # who the vehicle is, and its autopilot, before the messages that waited for it
                self.vehicle_system, self.flavour = msg.get_srcSystem(), AUTOPILOTS[msg.autopilot]
            pending, self._pending = self._pending, []
            return [o for m, tm in (*pending, (msg, t)) for o in self._observe(m, tm)]
        return self._observe(msg, t)

    def _observe(self, msg: Any, t: float) -> list[Observation]:
        kind = msg.get_type()
        if kind == "BAD_DATA":
            self.counts["bad data"] += 1
            return []
        system, component = msg.get_srcSystem(), msg.get_srcComponent()
        if system == self.stack_system and self.stack_component in (None, component):
            self.counts[f"stack {kind}"] += 1
            return self._from_stack(msg, kind, t)
        if kind == "HEARTBEAT" and self.vehicle_system is None and msg.autopilot != mavlink.MAV_AUTOPILOT_INVALID \
                and msg.type != mavlink.MAV_TYPE_GCS:
            self.vehicle_system = system
        if system == self.vehicle_system:
            self.counts[f"vehicle {kind}"] += 1
            return self._from_vehicle(msg, kind, t)
        self.counts[f"other {kind}"] += 1
        return []

    # -- the vehicle ---------------------------------------------------------------------------------
    def _from_vehicle(self, msg: Any, kind: str, t: float) -> list[Observation]:
        if kind == "HEARTBEAT":
            if msg.autopilot == mavlink.MAV_AUTOPILOT_INVALID or msg.type == mavlink.MAV_TYPE_GCS:
                return []  # a companion or camera component of the same system
            if self.flavour is None:
                self.flavour = AUTOPILOTS.get(msg.autopilot)
            mode = mode_name(self.flavour, msg.custom_mode)
            return [Reported(t, mode=mode, armed=bool(msg.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED))]
        if kind == "GLOBAL_POSITION_INT":
            lat, lon = msg.lat / 1e7, msg.lon / 1e7
            self.home_amsl_m = (msg.alt - msg.relative_alt) / 1000.0
            self._pos = (lat, lon)
            if msg.hdg != 65535:
                self._heading_deg = msg.hdg / 100.0
            return [Reported(t, lat=lat, lon=lon, alt_m=msg.relative_alt / 1000.0,
                             velocity_enu=(msg.vy / 100.0, msg.vx / 100.0, -msg.vz / 100.0))]
        if kind == "SYS_STATUS" and msg.battery_remaining >= 0:  # -1: the autopilot does not know
            return [Reported(t, battery=msg.battery_remaining / 100.0)]
        if kind == "HOME_POSITION":
            self.home = (msg.latitude / 1e7, msg.longitude / 1e7)
            self.home_amsl_m = msg.altitude / 1000.0
        return []

    # -- the stack -----------------------------------------------------------------------------------
    def _addressed(self, msg: Any) -> bool:
        target = getattr(msg, "target_system", 0)
        return target == 0 or self.vehicle_system is None or target == self.vehicle_system

    def _from_stack(self, msg: Any, kind: str, t: float) -> list[Observation]:
        if not self._addressed(msg):
            return []
        if kind in ("SET_POSITION_TARGET_GLOBAL_INT", "SET_POSITION_TARGET_LOCAL_NED"):
            return self._setpoint(msg, kind, t)
        if kind in ("COMMAND_LONG", "COMMAND_INT"):
            return self._command(msg, kind, t)
        if kind == "SET_MODE" and msg.base_mode & mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED:
            return [self._mode_change(mode_name(self.flavour, msg.custom_mode), t)]
        return []

    def _mode_change(self, mode: str, t: float) -> Sent:
        if mode in MODE_KINDS:
            return Sent(t, MODE_KINDS[mode], mode=mode)
        return Sent(t, MODE, mode=mode, control_mode=mode == self.control_mode)

    def _alt_above_home(self, alt: float, frame: int) -> Optional[float]:
        if frame in _RELATIVE:
            return alt
        if frame in _AMSL:
            return None if self.home_amsl_m is None else alt - self.home_amsl_m
        return None  # terrain-relative and the like: not known here

    def _to_enu(self, north: float, east: float, down: float, frame: int) -> Optional[tuple[float, float, float]]:
        if frame in _BODY:
            if self._heading_deg is None:
                return None
            yaw = math.radians(self._heading_deg)  # body x forward, y right: rotate by the heading
            north, east = north * math.cos(yaw) - east * math.sin(yaw), north * math.sin(yaw) + east * math.cos(yaw)
        return east, north, -down

    def _setpoint(self, msg: Any, kind: str, t: float) -> list[Observation]:
        mask, frame = msg.type_mask, msg.coordinate_frame
        velocity = None
        if not mask & _IGNORE_VELOCITY:
            velocity = self._to_enu(msg.vx, msg.vy, msg.vz, frame)
        if mask & _IGNORE_POSITION:
            if mask & _IGNORE_VELOCITY:
                return []  # acceleration or yaw only
            return [Sent(t, VELOCITY, velocity_enu=velocity, frame=frame_name(frame))]
        if kind == "SET_POSITION_TARGET_GLOBAL_INT":
            return [Sent(t, POSITION, lat=msg.lat_int / 1e7, lon=msg.lon_int / 1e7,
                         alt_m=self._alt_above_home(msg.alt, frame), velocity_enu=velocity, frame=frame_name(frame))]
        # local: north, east, down from the local origin (taken as home) or, for offset frames, from here
        origin = self._pos if frame in _OFFSET else (self.home or self._pos)
        enu = self._to_enu(msg.x, msg.y, msg.z, frame)
        lat = lon = None
        if origin is not None and enu is not None:
            lat, lon = offset(origin[0], origin[1], enu[0], enu[1])
        alt = None if enu is None or frame in _OFFSET else enu[2]
        return [Sent(t, POSITION, lat=lat, lon=lon, alt_m=alt, velocity_enu=velocity, frame=frame_name(frame))]

    def _command(self, msg: Any, kind: str, t: float) -> list[Observation]:
        c = msg.command
        if c == mavlink.MAV_CMD_COMPONENT_ARM_DISARM:
            return [Sent(t, ARM if msg.param1 >= 0.5 else DISARM)]
        if c == mavlink.MAV_CMD_DO_SET_MODE:
            if not int(msg.param1) & mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED:
                return []
            custom = (int(msg.param2) << 16 | int(msg.param3) << 24) if self.flavour == "px4" else int(msg.param2)
            return [self._mode_change(mode_name(self.flavour, custom), t)]
        if c == mavlink.MAV_CMD_NAV_TAKEOFF:
            alt, lat, lon = self._command_position(msg, kind, takeoff=True)
            return [Sent(t, TAKEOFF, lat=lat, lon=lon, alt_m=alt)]
        if c == mavlink.MAV_CMD_DO_REPOSITION:
            alt, lat, lon = self._command_position(msg, kind, takeoff=False)
            if lat is None:
                return []
            return [Sent(t, POSITION, lat=lat, lon=lon, alt_m=alt, frame="do_reposition")]
        if c == mavlink.MAV_CMD_NAV_LOITER_UNLIM:
            return [Sent(t, HOLD, mode=self._flavour_mode(HOLD))]
        if c == mavlink.MAV_CMD_NAV_LAND:
            return [Sent(t, LAND, mode=self._flavour_mode(LAND))]
        if c == mavlink.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            return [Sent(t, RTL, mode=self._flavour_mode(RTL))]
        if c == mavlink.MAV_CMD_DO_FLIGHTTERMINATION and msg.param1 >= 0.5:
            return [Sent(t, TERMINATE)]
        if c == mavlink.MAV_CMD_DO_CHANGE_SPEED:
            return [Sent(t, SPEED, speed_m_s=msg.param2)]
        return []

    def _flavour_mode(self, kind: str) -> str:
        """The mode a hold / land / return command puts each autopilot in ("" if not known)."""
        return {"px4": {HOLD: "AUTO.LOITER", LAND: "AUTO.LAND", RTL: "AUTO.RTL"},
                "ardupilot": {HOLD: "LOITER", LAND: "LAND", RTL: "RTL"}}.get(self.flavour or "", {}).get(kind, "")

    def _command_position(self, msg: Any, kind: str, takeoff: bool
                          ) -> tuple[Optional[float], Optional[float], Optional[float]]:
        """(alt above home, lat, lon) of a takeoff or reposition; lat/lon None when left to "here"."""
        if kind == "COMMAND_INT":
            lat, lon = (msg.x / 1e7, msg.y / 1e7) if (msg.x or msg.y) else (None, None)
            return self._alt_above_home(msg.z, msg.frame), lat, lon
        lat, lon = msg.param5, msg.param6
        given = math.isfinite(lat) and math.isfinite(lon) and (lat or lon)
        # COMMAND_LONG has no frame: PX4 takes the takeoff altitude above sea level, ArduPilot above home
        amsl = not takeoff or self.flavour == "px4"
        alt = msg.param7 if math.isfinite(msg.param7) and self.flavour is not None else None
        if alt is not None and amsl:
            alt = None if self.home_amsl_m is None else alt - self.home_amsl_m
        return alt, (lat if given else None), (lon if given else None)

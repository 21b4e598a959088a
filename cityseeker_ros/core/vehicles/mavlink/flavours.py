"""PX4 and ArduPilot (copter): what their modes are called in HEARTBEAT.custom_mode, the mode the stack
flies in, how each puts a parameter value in PARAM_VALUE's float, and their fence parameters. The link
and the shipped simulator both read this table, so the numbers are checked against the autopilots'
documentation in tests/core/vehicles/mavlink/test_flavours.py, not against each other.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Optional

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import LinkError

INT, REAL = "int", "float"


def _px4_mode(main: int, sub: int = 0) -> int:
    """PX4 packs its commander state as custom_mode = main << 16 | sub << 24 (px4_custom_mode.h)."""
    return main << 16 | sub << 24


@dataclass(frozen=True)
class Flavour:
    name: str
    autopilot_id: int  # HEARTBEAT.autopilot
    modes: dict[str, int]  # name -> custom_mode
    control_mode: str  # where the stack commands the vehicle
    hold_mode: str
    land_mode: str
    rtl_mode: str
    takeoff_mode: Optional[str]  # the mode a takeoff command needs first (None: the command switches itself)
    takeoff_shows: str  # the mode the vehicle reports while it climbs after MAV_CMD_NAV_TAKEOFF
    needs_stream: bool  # the control mode is refused without setpoints already streaming
    # Modes the autopilot moves on to by itself once the asked one is done (PX4's takeoff ends in a
    # loiter, a return ends in a landing): not a pilot's doing, so not foreign.
    successors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # SET_POSITION_TARGET_GLOBAL_INT with both position and velocity set: the velocity is flown as a
    # feed-forward (PX4 offboard; ArduCopter GUIDED since 4.1, type mask 0x0DC0).
    position_feedforward: bool = True
    param_types: dict[str, str] = field(default_factory=dict)  # parameters this stack sets: name -> INT/REAL
    int_param_type: int = mavlink.MAV_PARAM_TYPE_INT32
    bytewise_params: bool = False  # integers travel as their bytes in the float (PX4), else cast (ArduPilot)
    fence_action_param: str = ""
    fence_actions: dict[str, int] = field(default_factory=dict)  # BREACH_ACTIONS -> parameter value
    fence_alt_param: str = ""
    fence_enable: tuple[tuple[str, int], ...] = ()  # set after the rest, in this order

    def custom_mode(self, mode: str) -> int:
        try:
            return self.modes[mode]
        except KeyError:
            raise LinkError(f"{self.name} has no mode {mode!r}; known: {', '.join(self.modes)}") from None

    def mode_name(self, custom_mode: int) -> str:
        for name, value in self.modes.items():
            if value == custom_mode:
                return name
        if self.name == "px4":
            return f"main {custom_mode >> 16 & 0xFF} sub {custom_mode >> 24 & 0xFF}"
        return f"mode {custom_mode}"

    def set_mode_params(self, mode: str) -> tuple[float, float, float]:
        """MAV_CMD_DO_SET_MODE's param1..3: PX4 takes main and sub mode apart, ArduPilot the number."""
        value = self.custom_mode(mode)
        base = float(mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED)
        if self.name == "px4":
            return base, float(value >> 16 & 0xFF), float(value >> 24 & 0xFF)
        return base, float(value), 0.0

    def takeoff_param7(self, alt_m: float, home_amsl_m: float) -> float:
        """MAV_CMD_NAV_TAKEOFF's altitude: PX4 wants metres above mean sea level, ArduPilot above home."""
        return home_amsl_m + alt_m if self.name == "px4" else alt_m

    def encode_param(self, name: str, value: float) -> tuple[float, int]:
        """PARAM_SET's (param_value, param_type) for a parameter the stack sets."""
        kind = self.param_types.get(name, REAL)
        if kind == REAL:
            return float(value), mavlink.MAV_PARAM_TYPE_REAL32
        if self.bytewise_params:
            return struct.unpack("<f", struct.pack("<i", int(value)))[0], self.int_param_type
        return float(int(value)), self.int_param_type

    def decode_param(self, value: float, param_type: int) -> float:
        if param_type == mavlink.MAV_PARAM_TYPE_REAL32 or not self.bytewise_params:
            return float(value)
        return float(struct.unpack("<i", struct.pack("<f", value))[0])

    def fence_params(self, max_alt_m: float, breach_action: str) -> list[tuple[str, float]]:
        return [(self.fence_action_param, self.fence_actions[breach_action]), (self.fence_alt_param, max_alt_m),
                *self.fence_enable]

    def fence_action_name(self, value: float) -> str:
        for name, number in self.fence_actions.items():
            if number == int(value):
                return name
        raise LinkError(f"the vehicle's {self.fence_action_param} is {value:g}, a breach action the stack "
                        f"does not set (it sets {', '.join(f'{k}={v}' for k, v in self.fence_actions.items())})")


PX4 = Flavour(
    name="px4",
    autopilot_id=mavlink.MAV_AUTOPILOT_PX4,
    modes={"MANUAL": _px4_mode(1), "ALTCTL": _px4_mode(2), "POSCTL": _px4_mode(3),
           "AUTO.READY": _px4_mode(4, 1), "AUTO.TAKEOFF": _px4_mode(4, 2), "AUTO.LOITER": _px4_mode(4, 3),
           "AUTO.MISSION": _px4_mode(4, 4), "AUTO.RTL": _px4_mode(4, 5), "AUTO.LAND": _px4_mode(4, 6),
           "AUTO.FOLLOW_TARGET": _px4_mode(4, 8), "AUTO.PRECLAND": _px4_mode(4, 9), "ACRO": _px4_mode(5),
           "OFFBOARD": _px4_mode(6), "STABILIZED": _px4_mode(7)},
    control_mode="OFFBOARD", hold_mode="AUTO.LOITER", land_mode="AUTO.LAND", rtl_mode="AUTO.RTL",
    takeoff_mode=None, takeoff_shows="AUTO.TAKEOFF", needs_stream=True,
    successors={"AUTO.TAKEOFF": ("AUTO.LOITER",), "AUTO.RTL": ("AUTO.LAND",)},
    param_types={"GF_ACTION": INT, "GF_MAX_VER_DIST": REAL, "COM_OBL_RC_ACT": INT, "COM_OF_LOSS_T": REAL},
    int_param_type=mavlink.MAV_PARAM_TYPE_INT32, bytewise_params=True,
    # GF_ACTION: 0 none, 1 warning, 2 hold, 3 return, 4 terminate, 5 land
    fence_action_param="GF_ACTION", fence_actions={"report": 1, "hold": 2, "rtl": 3, "land": 5},
    fence_alt_param="GF_MAX_VER_DIST",
)

# ArduCopter mode numbers (ArduCopter/mode.h); the dialect's COPTER_MODE_* enum holds the same numbers.
ARDUPILOT = Flavour(
    name="ardupilot",
    autopilot_id=mavlink.MAV_AUTOPILOT_ARDUPILOTMEGA,
    modes={"STABILIZE": 0, "ACRO": 1, "ALT_HOLD": 2, "AUTO": 3, "GUIDED": 4, "LOITER": 5, "RTL": 6, "CIRCLE": 7,
           "LAND": 9, "DRIFT": 11, "SPORT": 13, "FLIP": 14, "AUTOTUNE": 15, "POSHOLD": 16, "BRAKE": 17,
           "THROW": 18, "AVOID_ADSB": 19, "GUIDED_NOGPS": 20, "SMART_RTL": 21},
    control_mode="GUIDED", hold_mode="BRAKE", land_mode="LAND", rtl_mode="RTL",
    takeoff_mode="GUIDED", takeoff_shows="GUIDED", needs_stream=False,
    successors={"RTL": ("LAND",)},
    param_types={"FENCE_ACTION": INT, "FENCE_ALT_MAX": REAL, "FENCE_ENABLE": INT, "FENCE_TYPE": INT,
                 "FS_GCS_ENABLE": INT},
    int_param_type=mavlink.MAV_PARAM_TYPE_INT8, bytewise_params=False,
    # FENCE_ACTION: 0 report only, 1 RTL or land, 2 always land, 3 SmartRTL or RTL or land, 4 brake or land
    fence_action_param="FENCE_ACTION", fence_actions={"report": 0, "hold": 4, "rtl": 1, "land": 2},
    fence_alt_param="FENCE_ALT_MAX",
    # FENCE_TYPE bits: 1 maximum altitude, 2 circle, 4 polygon; enabled last, once the rest is in place
    fence_enable=(("FENCE_TYPE", 5), ("FENCE_ENABLE", 1)),
)

FLAVOURS = {flavour.name: flavour for flavour in (PX4, ARDUPILOT)}


def flavour_named(name: str) -> Flavour:
    try:
        return FLAVOURS[name]
    except KeyError:
        raise LinkError(f"unknown autopilot flavour {name!r}; known: {', '.join(FLAVOURS)}") from None


def autopilot_name(autopilot_id: int) -> str:
    for flavour in FLAVOURS.values():
        if flavour.autopilot_id == autopilot_id:
            return flavour.name
    return "none" if autopilot_id == mavlink.MAV_AUTOPILOT_INVALID else f"autopilot {autopilot_id}"


def vehicle_type_name(mav_type: int) -> str:
    entry = mavlink.enums["MAV_TYPE"].get(mav_type)
    return entry.name.removeprefix("MAV_TYPE_").lower() if entry else f"type {mav_type}"


def result_name(result: int) -> str:
    entry = mavlink.enums["MAV_RESULT"].get(result)
    return entry.name if entry else f"MAV_RESULT {result}"


def heading_from_yaw(yaw_rad: float) -> float:
    """ATTITUDE.yaw (NED, radians, clockwise from north) as a compass heading in [0, 360)."""
    return math.degrees(yaw_rad) % 360.0

"""The MAVLink parameter protocol for the few parameters the stack sets: PARAM_SET until the vehicle
echoes the value in PARAM_VALUE, and PARAM_REQUEST_READ by name. Values travel in the flavour's own
encoding (PX4 puts an integer's bytes in the float, ArduPilot casts)."""
from __future__ import annotations

import math
from typing import Optional

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.connection import MavlinkConnection
from cityseeker_ros.core.vehicles.mavlink.flavours import Flavour


def _id(name: str) -> bytes:
    return name.encode("ascii")[:16]


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def set_param(conn: MavlinkConnection, flavour: Flavour, name: str, value: float, timeout_s: float,
              retries: int) -> float:
    system, component = _target(conn)
    wire, param_type = flavour.encode_param(name, value)
    kept: Optional[float] = None  # what the vehicle echoed instead, if it echoed at all
    with conn.inbox("PARAM_VALUE") as box:
        for _ in range(retries + 1):
            conn.send(mavlink.MAVLink_param_set_message(system, component, _id(name), wire, param_type))
            echo = box.wait(lambda m: m.param_id == name, timeout_s)
            while echo is not None:
                got = flavour.decode_param(echo.param_value, echo.param_type)
                if _same(got, value):
                    return got
                kept = got
                echo = box.wait(lambda m: m.param_id == name, timeout_s)  # an older echo; the next may agree
    if kept is not None:
        raise LinkError(f"{flavour.name} kept {name} = {kept:g} after {retries + 1} tries of setting it to {value:g}")
    raise LinkError(f"{flavour.name} did not answer PARAM_SET {name} = {value:g} with PARAM_VALUE after "
                    f"{retries + 1} tries: the stack confirms every parameter it sets (does this firmware have it?)")


def get_param(conn: MavlinkConnection, flavour: Flavour, name: str, timeout_s: float, retries: int) -> float:
    system, component = _target(conn)
    with conn.inbox("PARAM_VALUE") as box:
        for _ in range(retries + 1):
            conn.send(mavlink.MAVLink_param_request_read_message(system, component, _id(name), -1))
            echo = box.wait(lambda m: m.param_id == name, timeout_s)
            if echo is not None:
                return flavour.decode_param(echo.param_value, echo.param_type)
    raise LinkError(f"{flavour.name} did not send parameter {name} after {retries + 1} tries; "
                    "does this firmware have it?")


def _target(conn: MavlinkConnection) -> tuple[int, int]:
    if conn.target is None:
        raise LinkError("not connected: call connect() first")
    return conn.target

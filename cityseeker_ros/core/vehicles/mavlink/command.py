"""The MAVLink command protocol: COMMAND_LONG, resent with a rising `confirmation` until a COMMAND_ACK
comes back, and a refusal turned into one line with the autopilot's own STATUSTEXT reasons.

The caller passes the send function, so motion commands go through the link's one gated send.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import LinkError
from cityseeker_ros.core.vehicles.mavlink.connection import MavlinkConnection, Message
from cityseeker_ros.core.vehicles.mavlink.flavours import result_name

REASON_GRACE_S = 0.3  # STATUSTEXT reasons may trail a refusal's COMMAND_ACK by a few packets


@dataclass(frozen=True)
class Outcome:
    result: int
    texts: tuple[str, ...]  # STATUSTEXT heard while the command was pending

    @property
    def accepted(self) -> bool:
        return self.result == mavlink.MAV_RESULT_ACCEPTED

    def refusal(self, what: str) -> str:
        reasons = "; ".join(dict.fromkeys(t.strip() for t in self.texts if t.strip()))
        return f"{what} refused ({result_name(self.result)}){': ' + reasons if reasons else ''}"


def command_name(command: int) -> str:
    entry = mavlink.enums["MAV_CMD"].get(command)
    return entry.name if entry else f"MAV_CMD {command}"


def run_command(conn: MavlinkConnection, send: Callable[[Message], None], command: int, params: Sequence[float],
                timeout_s: float, retries: int) -> Outcome:
    """Send until acknowledged; IN_PROGRESS extends the wait. Raises LinkError when nothing answers."""
    if conn.target is None:
        raise LinkError("not connected: call connect() first")
    system, component = conn.target
    values = [float(p) for p in params] + [0.0] * (7 - len(params))
    with conn.inbox("COMMAND_ACK", "STATUSTEXT") as box:
        for attempt in range(retries + 1):
            send(mavlink.MAVLink_command_long_message(system, component, command, min(attempt, 255), *values))
            deadline = time.monotonic() + timeout_s
            while True:
                ack = box.wait(lambda m: m.get_type() == "COMMAND_ACK" and m.command == command,
                               deadline - time.monotonic())
                if ack is None:
                    break  # resend
                if ack.result == mavlink.MAV_RESULT_IN_PROGRESS:
                    deadline = time.monotonic() + timeout_s
                    continue
                if ack.result != mavlink.MAV_RESULT_ACCEPTED:
                    box.wait(lambda m: False, REASON_GRACE_S)  # collect the reasons that follow
                return Outcome(ack.result, tuple(box.texts()))
    raise LinkError(f"{command_name(command)}: no COMMAND_ACK from system {system} after {retries + 1} tries "
                    f"in {(retries + 1) * timeout_s:.1f} s; is the link up?")

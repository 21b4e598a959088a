"""The geofence on the autopilot: inclusion-polygon vertices through the MAVLink mission protocol with
mission type FENCE (both PX4 and ArduPilot take fences this way), and the ceiling and breach action as
the flavour's parameters (PX4 GF_MAX_VER_DIST / GF_ACTION; ArduPilot FENCE_ALT_MAX / FENCE_ACTION, then
FENCE_TYPE and FENCE_ENABLE). Read back the same way, so a test can hold the vehicle's copy against
what was sent.
"""
from __future__ import annotations

from pymavlink.dialects.v20 import ardupilotmega as mavlink

from cityseeker_ros.core.vehicles.link import Fence, LinkError
from cityseeker_ros.core.vehicles.mavlink.connection import MavlinkConnection, Message
from cityseeker_ros.core.vehicles.mavlink.flavours import Flavour
from cityseeker_ros.core.vehicles.mavlink.params import get_param, set_param

FENCE = mavlink.MAV_MISSION_TYPE_FENCE
VERTEX = mavlink.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION
REQUESTS = ("MISSION_REQUEST_INT", "MISSION_REQUEST")


def _target(conn: MavlinkConnection) -> tuple[int, int]:
    if conn.target is None:
        raise LinkError("not connected: call connect() first")
    return conn.target


def _mission_result(result: int) -> str:
    entry = mavlink.enums["MAV_MISSION_RESULT"].get(result)
    return entry.name if entry else f"MAV_MISSION_RESULT {result}"


def vertex_items(system: int, component: int, polygon: tuple[tuple[float, float], ...]) -> list[Message]:
    """One MISSION_ITEM_INT per vertex; param1 is the polygon's vertex count, as both autopilots expect."""
    return [mavlink.MAVLink_mission_item_int_message(
        system, component, seq, mavlink.MAV_FRAME_GLOBAL, VERTEX, 0, 0, float(len(polygon)), 0.0, 0.0, 0.0,
        int(round(lat * 1e7)), int(round(lon * 1e7)), 0.0, FENCE) for seq, (lat, lon) in enumerate(polygon)]


def upload_items(conn: MavlinkConnection, items: list[Message], timeout_s: float, retries: int) -> None:
    """MISSION_COUNT, then answer each MISSION_REQUEST(_INT) until MISSION_ACK; resend what is awaited on
    silence, since either side's packets can be lost."""
    system, component = _target(conn)
    count = mavlink.MAVLink_mission_count_message(system, component, len(items), FENCE)
    last: Message = count
    silences = 0
    with conn.inbox(*REQUESTS, "MISSION_ACK") as box:
        conn.send(count)
        while True:
            msg = box.wait(lambda m: m.mission_type == FENCE, timeout_s)
            if msg is None:
                silences += 1
                if silences > retries:
                    raise LinkError(f"fence upload: the vehicle went silent after {retries + 1} tries "
                                    f"({len(items)} vertices)")
                conn.send(last)
                continue
            silences = 0
            if msg.get_type() == "MISSION_ACK":
                if msg.type != mavlink.MAV_MISSION_ACCEPTED:
                    raise LinkError(f"fence upload refused ({_mission_result(msg.type)})")
                if last is count and items:
                    continue  # an ACK left over from an earlier upload
                return
            if not 0 <= msg.seq < len(items):
                raise LinkError(f"fence upload: the vehicle asked for item {msg.seq} of {len(items)}")
            last = items[msg.seq]
            conn.send(last)


def download_items(conn: MavlinkConnection, timeout_s: float, retries: int) -> list[Message]:
    system, component = _target(conn)
    with conn.inbox("MISSION_COUNT", "MISSION_ITEM_INT") as box:
        total = None
        for _ in range(retries + 1):
            conn.send(mavlink.MAVLink_mission_request_list_message(system, component, FENCE))
            answer = box.wait(lambda m: m.get_type() == "MISSION_COUNT" and m.mission_type == FENCE, timeout_s)
            if answer is not None:
                total = answer.count
                break
        if total is None:
            raise LinkError(f"fence download: no MISSION_COUNT after {retries + 1} tries")
        items = []
        for seq in range(total):
            for _ in range(retries + 1):
                conn.send(mavlink.MAVLink_mission_request_int_message(system, component, seq, FENCE))
                item = box.wait(lambda m, s=seq: m.get_type() == "MISSION_ITEM_INT" and m.mission_type == FENCE
                                and m.seq == s, timeout_s)
                if item is not None:
                    items.append(item)
                    break
            else:
                raise LinkError(f"fence download: item {seq} of {total} never came after {retries + 1} tries")
        conn.send(mavlink.MAVLink_mission_ack_message(system, component, mavlink.MAV_MISSION_ACCEPTED, FENCE))
    return items


def upload_fence(conn: MavlinkConnection, flavour: Flavour, fence: Fence, timeout_s: float, retries: int) -> None:
    system, component = _target(conn)
    upload_items(conn, vertex_items(system, component, fence.polygon), timeout_s, retries)
    for name, value in flavour.fence_params(fence.max_alt_m, fence.breach_action):
        set_param(conn, flavour, name, value, timeout_s, retries)


def read_fence(conn: MavlinkConnection, flavour: Flavour, timeout_s: float, retries: int) -> Fence:
    items = download_items(conn, timeout_s, retries)
    others = sorted({item.command for item in items if item.command != VERTEX})
    if others:
        raise LinkError(f"the vehicle's fence has items the stack does not write (MAV_CMD {others}); "
                        "it holds one inclusion polygon")
    polygon = tuple((item.x / 1e7, item.y / 1e7) for item in items)
    max_alt = get_param(conn, flavour, flavour.fence_alt_param, timeout_s, retries)
    action = get_param(conn, flavour, flavour.fence_action_param, timeout_s, retries)
    if len(polygon) < 3:
        raise LinkError(f"the vehicle holds no fence polygon ({len(polygon)} vertices)")
    return Fence(polygon, round(max_alt, 3), flavour.fence_action_name(action))

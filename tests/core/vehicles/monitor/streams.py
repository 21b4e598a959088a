"""Small builders for the monitor's observation streams: a fenced field around HOME and the PX4 names."""
from __future__ import annotations

from cityseeker_ros.core.vehicles.monitor import Decision, FlightMonitor, Marker, Reported, Sent, limits_from_dict
from cityseeker_ros.core.vehicles.monitor.geometry import offset

HOME = (47.397742, 8.545594)
SAFETY = {"geofence": {"circle": {"center": list(HOME), "radius_m": 100.0}}, "max_altitude_m": 30.0,
          "min_altitude_m": -5.0, "max_speed_m_s": 3.0, "max_vertical_speed_m_s": 1.0}


def monitor(passive: bool = False, **safety) -> FlightMonitor:
    return FlightMonitor(limits_from_dict({**SAFETY, **safety}), passive=passive)


def at(east_m: float, north_m: float) -> tuple[float, float]:
    return offset(*HOME, east_m, north_m)


def goto(t: float, east_m: float = 0.0, north_m: float = 0.0, alt_m: float = 10.0) -> Sent:
    lat, lon = at(east_m, north_m)
    return Sent(t, "position", lat=lat, lon=lon, alt_m=alt_m, frame="global_relative_alt_int")


def vel(t: float, e: float, n: float, u: float = 0.0) -> Sent:
    return Sent(t, "velocity", velocity_enu=(e, n, u), frame="local_ned")


def mode(t: float, name: str, control: bool = False) -> Sent:
    kind = {"AUTO.LOITER": "hold", "AUTO.LAND": "land", "AUTO.RTL": "rtl"}.get(name, "mode")
    return Sent(t, kind, mode=name, control_mode=control and kind == "mode")


def offboard(t: float) -> Sent:
    return mode(t, "OFFBOARD", control=True)


def hold(t: float) -> Sent:
    return mode(t, "AUTO.LOITER")


def report(t: float, name: str | None = None, armed: bool | None = True, east_m: float | None = None,
           north_m: float = 0.0, alt_m: float = 10.0, v: tuple[float, float, float] | None = None) -> Reported:
    lat = lon = None
    if east_m is not None:
        lat, lon = at(east_m, north_m)
    return Reported(t, lat=lat, lon=lon, alt_m=alt_m if lat is not None else None, velocity_enu=v, mode=name,
                    armed=armed if name is not None else None)


def decide(t: float, command: str = "goal", east_m: float = 0.0, north_m: float = 0.0, frame: str = "enu",
           stamp: float | None = None, velocity: tuple[float, float, float] | None = None) -> Decision:
    goal = (*at(east_m, north_m), 10.0) if command == "goal" else None
    return Decision(t, command, frame=frame, stamp=t if stamp is None else stamp, goal=goal, velocity=velocity)


def marker(t: float, kind: str) -> Marker:
    return Marker(t, kind)


def flying(t0: float = 0.0) -> list:
    """Armed, in OFFBOARD on the stack's request, streaming a goal 10 m east: the start of most streams."""
    return [report(t0, "AUTO.LOITER", east_m=0.0), decide(t0 + 0.1, east_m=10.0), goto(t0 + 0.2, 10.0),
            offboard(t0 + 0.3), report(t0 + 0.4, "OFFBOARD"), goto(t0 + 0.5, 10.0)]


def rules_broken(observations: list, end: float | None = None, **kw) -> list[str]:
    m = monitor(**kw)
    found = m.feed_all(observations)
    if end is not None:
        found += m.finish(end)
    return [v.rule for v in found]

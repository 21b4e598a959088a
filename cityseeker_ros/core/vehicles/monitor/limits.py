"""The flight limits the monitor judges against, read from the same safety file the bridge uses
(docs/vehicles.md; core/vehicles/safety/config.py) by a reader of its own. Only the keys the rules
need are read; the rest of the file is the bridge's business and is left alone."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.monitor.geometry import Area, Circle, polygon

END_ACTIONS = ("hold", "land", "rtl")
# The safety file's defaults (core/vehicles/safety/config.py), kept equal by a test.
DEFAULTS = {"max_speed_m_s": 3.0, "max_vertical_speed_m_s": 1.0, "max_altitude_m": 40.0, "min_altitude_m": -5.0}


@dataclass(frozen=True)
class FlightLimits:
    area: Area
    max_altitude_m: float = DEFAULTS["max_altitude_m"]  # the ceiling, metres above home
    min_altitude_m: float = DEFAULTS["min_altitude_m"]  # the floor, metres above home
    max_speed_m_s: float = DEFAULTS["max_speed_m_s"]  # ground speed
    max_vertical_speed_m_s: float = DEFAULTS["max_vertical_speed_m_s"]
    end_action: str = "hold"  # what a session's end may send besides a hold
    # below this charge (0..1) the bridge returns to launch, and a session's end keeps that return
    rtl_battery_fraction: Optional[float] = None


def limits_from_dict(d: Any, where: str = "safety") -> FlightLimits:
    if isinstance(d, Mapping) and set(d) == {"safety"}:
        d = d["safety"]
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: expected a mapping of safety settings, got {type(d).__name__}")
    if "geofence" not in d:
        raise ConfigError(f"{where}: geofence is required (a circle or a polygon)")
    values = {}
    for key, default in DEFAULTS.items():
        v = d.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(f"{where}: {key} must be a finite number, got {v!r}")
        if key != "min_altitude_m" and v <= 0:
            raise ConfigError(f"{where}: {key} must be positive, got {v!r}")
        values[key] = float(v)
    if values["min_altitude_m"] >= values["max_altitude_m"]:
        raise ConfigError(f"{where}: min_altitude_m ({values['min_altitude_m']:g}) must be below max_altitude_m "
                          f"({values['max_altitude_m']:g})")
    end = d.get("end_action", "hold")
    if end not in END_ACTIONS:
        raise ConfigError(f"{where}: end_action must be one of {', '.join(END_ACTIONS)}, got {end!r}")
    low = d.get("rtl_battery_fraction")
    if low is not None and (isinstance(low, bool) or not isinstance(low, (int, float)) or not 0 <= low <= 1):
        raise ConfigError(f"{where}: rtl_battery_fraction must be a number within 0..1, got {low!r}")
    return FlightLimits(area=_area(d["geofence"], f"{where}: geofence"), end_action=end,
                        rtl_battery_fraction=None if low is None else float(low), **values)


def _area(d: Any, where: str) -> Area:
    if not isinstance(d, Mapping) or len(d) != 1 or next(iter(d)) not in ("circle", "polygon"):
        raise ConfigError(f"{where} must have exactly one of 'circle' or 'polygon', got {d!r}")
    if "circle" in d:
        c = d["circle"]
        if not isinstance(c, Mapping) or "center" not in c or "radius_m" not in c:
            raise ConfigError(f"{where}.circle needs 'center' [lat, lon] and 'radius_m', got {c!r}")
        r = c["radius_m"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0:
            raise ConfigError(f"{where}.circle.radius_m must be a positive number of metres, got {r!r}")
        lat, lon = _latlon(c["center"], f"{where}.circle.center")
        return Circle(lat, lon, float(r))
    points = d["polygon"]
    if not isinstance(points, (list, tuple)) or len(points) < 3:
        raise ConfigError(f"{where}.polygon must be a list of at least 3 [lat, lon] vertices, got {points!r}")
    return polygon([_latlon(p, f"{where}.polygon[{i}]") for i, p in enumerate(points)])


def _latlon(v: Any, where: str) -> tuple[float, float]:
    ok = (isinstance(v, (list, tuple)) and len(v) == 2
          and all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) for x in v))
    if not ok or abs(v[0]) > 90 or abs(v[1]) > 180:
        raise ConfigError(f"{where} must be [lat, lon] in degrees, got {v!r}")
    return float(v[0]), float(v[1])


def load_limits(path: str | Path) -> FlightLimits:
    """A YAML or JSON safety file; every error is one ConfigError line naming the file."""
    import yaml

    where = f"safety file {path}"
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start}); a safety file is YAML or JSON") from None
    if "\x00" in text:
        raise ConfigError(f"{where}: binary data (a NUL byte); a safety file is YAML or JSON")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not YAML/JSON ({str(exc).splitlines()[0]})") from None
    return limits_from_dict(data, where)

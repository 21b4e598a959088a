"""Safety settings for a live trial, validated up front so a typo fails before take-off and the
error names the field. `load_safety_config` reads the one file that the vehicle bridge (its gate)
and the supervisor in mode seek (its geofence check of a goal) both use."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.link import BREACH_ACTIONS
from cityseeker_ros.core.vehicles.safety.geofence import Geofence, geofence_from_dict
from cityseeker_ros.core.vehicles.safety.limits import Limits


@dataclass(frozen=True)
class SafetyConfig:
    geofence: Geofence  # required: a live trial must say where the vehicle may go
    decision_timeout_s: float = 3.0
    heartbeat_timeout_s: Optional[float] = 2.0  # None: no supervisor heartbeat required
    max_speed_m_s: float = 3.0
    max_vertical_speed_m_s: float = 1.0
    max_altitude_m: float = 40.0
    max_yaw_rate_deg_s: float = 45.0
    min_altitude_m: float = -5.0  # the floor, metres above home (negative: below it); goals lower are refused
    rtl_battery_fraction: Optional[float] = None  # 0..1: below it the bridge returns to launch; None: never
    # What the autopilot does on its own when the vehicle leaves the fence the bridge uploads to it
    # (it holds even if the companion computer dies): one of link.BREACH_ACTIONS.
    fence_breach_action: str = "hold"

    @property
    def limits(self) -> Limits:
        return Limits(self.max_speed_m_s, self.max_vertical_speed_m_s, self.max_altitude_m,
                      self.max_yaw_rate_deg_s, self.min_altitude_m)

    @classmethod
    def estop_only(cls) -> SafetyConfig:
        """No safety file, on a vehicle that does not fly (the walker, AirSim teleport): no fence, no
        ceiling, no heartbeat, no decision watchdog (such a vehicle does not move between decisions);
        the e-stop still latches and holds it."""
        from cityseeker_ros.core.vehicles.safety.geofence import Unfenced

        return cls(geofence=Unfenced(), decision_timeout_s=math.inf, heartbeat_timeout_s=None,
                   max_speed_m_s=math.inf, max_vertical_speed_m_s=math.inf, max_altitude_m=math.inf,
                   max_yaw_rate_deg_s=math.inf, min_altitude_m=-math.inf)

    @classmethod
    def from_dict(cls, d: Any, prefix: str = "safety") -> SafetyConfig:
        """E.g. `{"geofence": {"circle": {"center": [22.3, 114.18], "radius_m": 300}},
        "decision_timeout_s": 3, "max_altitude_m": 30}`; unknown keys are errors."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{prefix} must be a mapping, got {d!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"{prefix}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        if "geofence" not in d:
            raise ConfigError(f"{prefix}.geofence is required (a circle or a polygon)")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "geofence" or f.name not in d:
                continue
            v = d[f.name]
            if v is None and f.name in ("heartbeat_timeout_s", "rtl_battery_fraction"):
                values[f.name] = None
                continue
            if f.name == "rtl_battery_fraction":
                if not _number(v) or not 0 < v < 1:
                    raise ConfigError(f"{prefix}.rtl_battery_fraction must be a fraction between 0 and 1 "
                                      f"(e.g. 0.25 returns to launch at 25 % battery) or null, got {v!r}")
                values[f.name] = float(v)
                continue
            if f.name == "fence_breach_action":
                if v not in BREACH_ACTIONS:
                    raise ConfigError(f"{prefix}.fence_breach_action must be one of {', '.join(BREACH_ACTIONS)}, "
                                      f"got {v!r}")
                values[f.name] = v
                continue
            if f.name == "min_altitude_m":
                ceiling = d.get("max_altitude_m", cls.max_altitude_m)
                if not _number(v) or (_number(ceiling) and v >= ceiling):
                    raise ConfigError(f"{prefix}.min_altitude_m must be a number below max_altitude_m "
                                      f"(metres above home, negative below it), got {v!r}")
                values[f.name] = float(v)
                continue
            if not _number(v) or v <= 0:
                raise ConfigError(f"{prefix}.{f.name} must be a positive number, got {v!r}")
            values[f.name] = float(v)
        max_alt = values.get("max_altitude_m", cls.max_altitude_m)
        return cls(geofence=geofence_from_dict(d["geofence"], max_alt, f"{prefix}.geofence"), **values)


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def load_safety_config(path: str) -> SafetyConfig:
    """A YAML or JSON file (JSON is YAML) holding SafetyConfig.from_dict's mapping, optionally
    under a top-level `safety:` key; every error names the file."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"safety_config {path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"safety_config {path}: not YAML/JSON ({exc})") from None
    if isinstance(data, Mapping) and set(data) == {"safety"}:
        data = data["safety"]
    try:
        return SafetyConfig.from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"safety_config {path}: {exc}") from None

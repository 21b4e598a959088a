"""Safety settings for a live trial, validated up front so a typo fails before take-off and the
error names the field. `load_safety_config` reads the one file that the vehicle bridge (its gate)
and the supervisor in mode seek (its geofence check of a goal) both use."""
from __future__ import annotations

import codecs
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Optional

import yaml

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.link import BREACH_ACTIONS
from cityseeker_ros.core.vehicles.safety.bounds import SAFETY_BOUNDS, in_bounds, shown
from cityseeker_ros.core.vehicles.safety.geofence import Geofence, geofence_from_dict
from cityseeker_ros.core.vehicles.safety.limits import Limits

END_ACTIONS = ("hold", "land", "rtl")  # what a Seek's end and a shutdown do (the bridge's end_action)


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
    # What the bridge sends when a Seek ends (budget, stop, cancel) and at shutdown: one of
    # END_ACTIONS (the bridge's end_action; the flight monitor reads the same key).
    end_action: str = "hold"

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
        "decision_timeout_s": 3, "max_altitude_m": 30}`; unknown keys are errors, and every number
        must lie in its range of bounds.SAFETY_BOUNDS."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{prefix} must be a mapping, got {shown(d)}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in d if k not in known)
        if unknown:
            raise ConfigError(f"{prefix}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        if "geofence" not in d:
            raise ConfigError(f"{prefix}.geofence is required (a circle or a polygon)")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "geofence" or f.name not in d:
                continue
            v, key = d[f.name], f"{prefix}.{f.name}"
            if v is None and f.name in ("heartbeat_timeout_s", "rtl_battery_fraction"):
                values[f.name] = None
            elif f.name == "fence_breach_action":
                if v not in BREACH_ACTIONS:
                    raise ConfigError(f"{key} must be one of {', '.join(BREACH_ACTIONS)}, got {shown(v)}")
                values[f.name] = v
            elif f.name == "end_action":
                if v not in END_ACTIONS:
                    raise ConfigError(f"{key} must be one of {', '.join(END_ACTIONS)}, got {shown(v)}")
                values[f.name] = v
            elif f.name == "rtl_battery_fraction":
                values[f.name] = in_bounds(key, v, SAFETY_BOUNDS[f.name],
                                           noun="a fraction between 0 and 1 (or null: never),")
            else:
                values[f.name] = in_bounds(key, v, SAFETY_BOUNDS[f.name])
        ceiling = values.get("max_altitude_m", cls.max_altitude_m)
        floor = values.get("min_altitude_m", cls.min_altitude_m)
        if floor >= ceiling:
            raise ConfigError(f"{prefix}.min_altitude_m must be a number below max_altitude_m ({ceiling:g} m): "
                              f"the floor under the ceiling, got {floor:g}")
        return cls(geofence=geofence_from_dict(d["geofence"], ceiling, f"{prefix}.geofence"), **values)


MAX_FILE_BYTES = 1_000_000  # a safety file is a few hundred bytes; more is the wrong file


def load_safety_config(path: str) -> SafetyConfig:
    """A YAML or JSON file (JSON is YAML) holding SafetyConfig.from_dict's mapping, optionally
    under a top-level `safety:` key. Every error is one line naming the file: a binary or non-UTF-8
    file, an empty one, a syntax error (with its line), a duplicate key, a value out of range."""
    try:
        data = _read_yaml(Path(path))
    except ConfigError as exc:
        raise ConfigError(f"safety_config {path}: {exc}") from None
    if isinstance(data, Mapping) and set(data) == {"safety"}:
        data = data["safety"]
    try:
        return SafetyConfig.from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"safety_config {path}: {exc}") from None


def _read_yaml(path: Path) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(f"is {size} bytes; a safety file is a few hundred (is this the right file?)")
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read ({exc.strerror})") from None
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError("is UTF-16 text; save it as UTF-8 (a YAML or JSON file is expected)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}): a binary file? "
                          "A YAML or JSON file is expected") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader that refuses duplicate keys
    except _DuplicateKey as exc:
        raise ConfigError(_yaml_problem(exc, text)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not YAML/JSON: {_yaml_problem(exc, text)}") from None
    if data is None:
        raise ConfigError("is empty; it needs at least a geofence (config/safety.yaml is an example)")
    return data


def _yaml_problem(exc: Exception, text: str) -> str:
    """PyYAML's error as one line, with the line and column it points at."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        return f"the control character {char} is not allowed at line {line}, column {column}"
    return " ".join(str(exc).split())


class _DuplicateKey(yaml.constructor.ConstructorError):
    pass


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader, but a key given twice is an error: in a safety file the second
    `max_altitude_m` would silently win over the first."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable):
                if key in seen:
                    raise _DuplicateKey(None, None, f"duplicate key {key}", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

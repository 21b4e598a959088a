"""The message types of the cityseeker_interfaces package, registered with `rosbags`.

rosbags knows ROS 2 Jazzy's standard messages only. A bag topic of a custom type needs the
type's definition (MCAP embeds it in the schema record, sqlite3 in the metadata) and its RIHS01
hash, or `ros2 bag`, Foxglove and MCAP readers cannot decode it. The definitions are read from
the .msg and .action files the installed interface package ships under
`share/cityseeker_interfaces` (the files rosidl generated the Python classes from), so a bag
carries the same hash as the wire: tests/bag/test_interfaces.py checks it against rosidl's.

Found through AMENT_PREFIX_PATH (a sourced ROS 2 install, or `ros.env.ros_env()`), then the
running environment's prefix (pip installs the package there). No rclpy needed.
"""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError

PACKAGE = "cityseeker_interfaces"
# The topics an action server offers carry these parts of a .action file (rosidl's names).
_ACTION_PARTS = ("Goal", "Result", "Feedback")


def share_dir(prefixes: Optional[Iterable[str]] = None) -> Path:
    """`<prefix>/share/cityseeker_interfaces` of the first prefix that has it; ConfigError when
    none does. `prefixes` defaults to AMENT_PREFIX_PATH, then sys.prefix."""
    if prefixes is None:
        prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]
    prefixes = list(prefixes)
    for prefix in prefixes:
        share = Path(prefix) / "share" / PACKAGE
        if (share / "package.xml").is_file():
            return share
    raise ConfigError(f"{PACKAGE} is not installed in {os.pathsep.join(prefixes) or '(no prefix)'}: "
                      "pip install -e . at the repository root builds it (or colcon build on ROS 2)")


def split_action(text: str, path: Path) -> tuple[str, str, str]:
    """Goal, result and feedback definitions of a .action file (separated by `---` lines)."""
    parts: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == "---":
            parts.append([])
        else:
            parts[-1].append(line)
    if len(parts) != 3:
        raise ConfigError(f"{path}: an action has goal, result and feedback separated by two '---' lines, "
                          f"found {len(parts) - 1}")
    goal, result, feedback = ("\n".join(p) + "\n" for p in parts)
    return goal, result, feedback


def definitions(share: Optional[Path] = None) -> dict[str, Any]:
    """rosbags type definitions of every message, and of the goal, result, feedback and
    feedback-message types of every action, in `share` (default: the installed package).
    Parsed once per folder and process: every bag writer and reader asks."""
    return dict(_definitions(share_dir() if share is None else Path(share)))


@functools.lru_cache(maxsize=8)
def _definitions(share: Path) -> dict[str, Any]:
    from rosbags.typesys import get_types_from_msg

    types: dict[str, Any] = {}
    for path in sorted((share / "msg").glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(), f"{PACKAGE}/msg/{path.stem}"))
    for path in sorted((share / "action").glob("*.action")):
        name = f"{PACKAGE}/action/{path.stem}"
        for part, text in zip(_ACTION_PARTS, split_action(path.read_text(), path)):
            # Parsed as a message so that unqualified field types resolve as rosidl resolves
            # them (to this package's msg/), then stored under the action part's name.
            parsed = get_types_from_msg(text, f"{PACKAGE}/msg/{path.stem}_{part}")
            types[f"{name}_{part}"] = parsed.pop(f"{PACKAGE}/msg/{path.stem}_{part}")
            types.update(parsed)
        # What an action server publishes on <action>/_action/feedback (rosidl's layout).
        types.update(get_types_from_msg(f"unique_identifier_msgs/UUID goal_id\n{name}_Feedback feedback",
                                        f"{name}_FeedbackMessage"))
    if not types:
        raise ConfigError(f"{share}: no .msg or .action files")
    return types


def register(store: Any, share: Optional[Path] = None) -> list[str]:
    """Add the package's types to a rosbags Typestore; the type names added."""
    types = definitions(share)
    store.register(types)
    return sorted(types)


def connection_definition(store: Any, msgtype: str) -> dict[str, str]:
    """`msgdef` and `rihs01` for rosbags' Writer.add_connection where rosbags cannot make them
    itself, empty where it can. rosbags writes definitions of msg/ types only; a type that
    nests an action part (Seek_FeedbackMessage holds a Seek_Feedback) is written with each
    `pkg/action/X` under the name `pkg/X`, the form an MCAP ros2msg schema gives every nested
    type; the hash stays rosidl's, computed on the true names."""
    closure, todo = {}, [msgtype]
    while todo:
        name = todo.pop()
        if name not in closure:
            closure[name] = store.fielddefs[name]
            todo.extend(_references(closure[name][1]))
    if not any("/action/" in name for name in closure):
        return {}
    from rosbags.typesys import Stores, get_typestore

    shadow = get_typestore(Stores.EMPTY)
    shadow.register({_as_msg(name): (consts, [(field, _rename(desc)) for field, desc in fields])
                     for name, (consts, fields) in closure.items()})
    text, _ = shadow.generate_msgdef(_as_msg(msgtype), ros_version=2)
    return {"msgdef": text, "rihs01": store.hash_rihs01(msgtype)}


def _references(fields: Any) -> list[str]:
    names = []
    for _, (node, spec) in fields:
        if node.name == "NAME":
            names.append(spec)
        elif node.name in ("ARRAY", "SEQUENCE") and spec[0][0].name == "NAME":
            names.append(spec[0][1])
    return names


def _as_msg(name: str) -> str:
    return name.replace("/action/", "/msg/")


def _rename(desc: Any) -> Any:
    node, spec = desc
    if node.name == "NAME":
        return node, _as_msg(spec)
    if node.name in ("ARRAY", "SEQUENCE"):
        return node, (_rename(spec[0]), spec[1])
    return desc


def message(store: Any, msgtype: str, **fields: Any) -> Any:
    """A rosbags message of `msgtype` with `fields` set and every other field zero, as rosidl's
    default constructor makes it (tools and tests that write bags without rclpy). A nested
    message given as a dict is built the same way."""
    consts, fielddefs = store.fielddefs[msgtype]
    names = {name for name, _ in fielddefs}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ConfigError(f"{msgtype}: no field {', '.join(unknown)} (fields: {', '.join(sorted(names))})")
    values = {}
    for name, (node, spec) in fielddefs:
        if name not in fields:
            values[name] = _zero(store, node, spec)
        elif isinstance(fields[name], dict) and node.name == "NAME":
            values[name] = message(store, spec, **fields[name])
        else:
            values[name] = fields[name]
    return store.types[msgtype](**values)


def _zero(store: Any, node: Any, spec: Any) -> Any:
    import numpy as np

    if node.name == "NAME":
        return message(store, spec)
    if node.name == "BASE":
        kind = spec[0]
        return "" if kind in ("string", "wstring") else False if kind == "bool" else \
            0.0 if kind.startswith("float") else 0
    (inner_node, inner_spec), size = spec
    if inner_node.name == "BASE" and inner_spec[0] not in ("string", "wstring"):
        dtype = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8}.get(inner_spec[0], inner_spec[0])
        return np.zeros(size if node.name == "ARRAY" else 0, dtype=dtype)
    return [_zero(store, inner_node, inner_spec) for _ in range(size if node.name == "ARRAY" else 0)]


def installed() -> bool:
    try:
        share_dir()
    except ConfigError:
        return False
    return True

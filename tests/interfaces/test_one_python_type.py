"""Each wire concept has at most two definitions: its .msg in cityseeker_interfaces/msg and one
Python type, which ros/typed.py converts to and from (issue 21). A third (a ros/ model beside the
core dataclass) fails here, naming it."""
from __future__ import annotations

import ast
from pathlib import Path

from cityseeker_ros.ros import typed

ROOT = Path(__file__).resolve().parents[2]
MSG_DIR = ROOT / "cityseeker_interfaces" / "msg"
ROS_DIR = ROOT / "cityseeker_ros" / "ros"


def ros_classes() -> dict[str, str]:
    """Every class ros/ defines, by name: where."""
    found = {}
    for path in sorted(ROS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name] = f"{path.relative_to(ROOT)}:{node.lineno}"
    return found


def test_each_converted_message_has_exactly_one_python_type():
    by_message: dict[type, list[type]] = {}
    for python_type, (msg_type, _, _) in typed.WIRE.items():
        by_message.setdefault(msg_type, []).append(python_type)
    assert all(len(types) == 1 for types in by_message.values()), by_message
    names = {p.stem for p in MSG_DIR.glob("*.msg")}
    assert {m.__name__ for m in by_message} <= names


def test_ros_defines_no_model_of_a_concept_the_core_owns():
    classes = ros_classes()
    third = []
    for python_type, (msg_type, _, _) in typed.WIRE.items():
        if not python_type.__module__.startswith("cityseeker_ros.core."):
            continue  # the concept's one type is still a ros.schema record
        name = msg_type.__name__
        for candidate in {name, name + "Msg", name + "Field", python_type.__name__}:
            if candidate in classes:
                third.append(f"{classes[candidate]}: {candidate} duplicates {python_type.__module__}."
                             f"{python_type.__name__} ({name}.msg)")
    # core values inside records: a move, a motion command, a walkable heading, a stamp
    for gone in ("ActionField", "GoalField", "VelocityField", "HoldField", "WalkableField", "SafetyMsg", "Stamp"):
        if gone in classes:
            third.append(f"{classes[gone]}: {gone} duplicates a core dataclass")
    assert third == [], "\n".join(third)

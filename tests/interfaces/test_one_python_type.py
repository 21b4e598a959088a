"""Each wire concept has at most two definitions: its .msg in cityseeker_interfaces/msg and one
Python type, which ros/typed.py converts to and from (issue 21). A third (a ros/ model beside the
core dataclass) fails here, naming it."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from cityseeker_interfaces import msg as ci
from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.loop import state_machine
from cityseeker_ros.core.loop.view_set import Answer, EpisodeBrief, PanoramaEntry, ViewEntry, ViewSet
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


# Messages that travel only inside others (no WIRE entry of their own), with their one Python type.
SUB_MESSAGES = {"Task": EpisodeBrief, "View": ViewEntry, "Panorama": PanoramaEntry, "PromptContext": PromptContext}


def package_classes() -> dict[str, list[str]]:
    """Every class the package defines, by name: where (each place)."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "cityseeker_ros").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_view_sets_and_decisions_are_core_types_converted_directly():
    assert typed.WIRE[ViewSet][0] is ci.ViewSet and typed.WIRE[Answer][0] is ci.Decision
    # the loop handles the same ViewSet the wire carries (no wrapper with a payload)
    assert state_machine.ViewSet is ViewSet
    # an answer holds the policy's core Decision rather than repeating its fields
    fields = {f.name for f in dataclasses.fields(Answer)}
    assert "decision" in fields and not fields & {f.name for f in dataclasses.fields(Decision)}


def test_sub_messages_have_one_python_type():
    classes, ros = package_classes(), ros_classes()
    names = {p.stem for p in MSG_DIR.glob("*.msg")}
    problems = []
    for msg_name, python_type in SUB_MESSAGES.items():
        assert msg_name in names and python_type.__module__.startswith("cityseeker_ros.core.")
        for candidate in {msg_name, msg_name + "Msg", msg_name + "Field", python_type.__name__}:
            if candidate in ros:
                problems.append(f"{ros[candidate]}: {candidate} duplicates {python_type.__name__} ({msg_name}.msg)")
        if len(classes.get(python_type.__name__, [])) != 1:
            problems.append(f"{python_type.__name__} is defined at {classes.get(python_type.__name__)}")
    # the records these replaced, and the loop's wrapper of a view set
    for gone in ("ViewSetMsg", "DecisionMsg", "ViewEntry", "PanoramaEntry", "Task"):
        for where in classes.get(gone, []):
            if not where.startswith("cityseeker_ros/core/loop/view_set.py"):
                problems.append(f"{where}: {gone} duplicates a core.loop.view_set type")
    if len(classes.get("ViewSet", [])) != 1:
        problems.append(f"ViewSet is defined at {classes.get('ViewSet')}")
    assert problems == [], "\n".join(problems)

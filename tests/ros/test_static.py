"""Promises checked without starting ROS: entry points, parameter files, and which modules may
import rclpy (the nodes, and in the ROS layer only what ROS processes alone load: the QoS table,
the process spin helper and the Decide client; the rest of the ROS layer must load in any
process)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros.parameters import GRAPH_LOCALISER, NODES

REPO = Path(__file__).resolve().parents[2]


def console_scripts() -> dict[str, str]:
    text = (REPO / "setup.py").read_text()
    return dict(re.findall(r'"(\w+) = (cityseeker_ros\.nodes\.\w+):main"', text))


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_every_node_has_an_entry_point_a_main_and_one_node_class():
    scripts = console_scripts()
    assert set(scripts) == set(NODES)
    for name, module in scripts.items():
        path = REPO / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text())
        mains = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "main"]
        assert mains and [a.arg for a in mains[0].args.args] == ["args"], name
        classes = [c.name for c in tree.body if isinstance(c, ast.ClassDef) and c.name.endswith("Node")]
        assert len(classes) == 1, (name, classes)
        assert f'super().__init__("{name}"' in path.read_text(), f"{name}: default node name"


def test_parameter_files_match_the_declared_parameters():
    for name, specs in NODES.items():
        doc = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
        values = doc[name]["ros__parameters"]
        declared = {s.name: s for s in specs}
        assert set(values) == set(declared), name
        for key, value in values.items():
            default = declared[key].default
            assert type(value) is type(default) or declared[key].dynamic_typing, (name, key, value, default)


ROS_PROCESS_ONLY = {"qos.py", "spin.py", "decide_client.py"}  # the ROS layer's modules that import rclpy


def test_only_nodes_and_ros_process_modules_import_rclpy():
    for path in (REPO / "cityseeker_ros" / "ros").glob("*.py"):
        assert ("rclpy" in imports(path)) == (path.name in ROS_PROCESS_ONLY), path.name
    for path in (REPO / "cityseeker_ros" / "nodes").glob("*.py"):
        assert path.name == "__init__.py" or "rclpy" in imports(path)


# Every parameter file holds exactly the table's defaults, so a node started by hand, by
# `cityseeker run` or by `ros2 launch` (both read these files first) starts from the same values.
SET_UP: dict[str, set[str]] = {}


def test_parameter_files_hold_the_tables_defaults():
    for name, specs in NODES.items():
        values = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())[name]["ros__parameters"]
        differ = {s.name for s in specs if values[s.name] != s.default}
        assert differ == SET_UP.get(name, set()), name


def test_the_supervisor_modes_are_documented_as_the_node_takes_them():
    tree = ast.parse((REPO / "cityseeker_ros" / "nodes" / "supervisor.py").read_text())
    modes = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", None) == "MODES")
    description = next(s.description for s in NODES["supervisor"] if s.name == "mode")
    assert re.findall(r"\b(\w+) \(", description) == list(modes)
    comment = next(line for line in (REPO / "config" / "supervisor.yaml").read_text().splitlines()
                   if line.strip().startswith("mode:"))
    assert re.findall(r"\b(\w+) \(", comment.split("#", 1)[1]) == list(modes)


def test_a_parameter_no_node_declares_is_refused_listing_the_known():
    from cityseeker_ros.ros.parameters import unknown_parameters

    declared = {"data", "use_sim_time"}
    with pytest.raises(ConfigError, match=r"^graph_localiser: unknown parameter\(s\) dtw_threshold, snap_radius; "
                                          r"known: data, dataset, family, city, "):
        unknown_parameters("graph_localiser", {"data": 1, "use_sim_time": 0, "snap_radius": 3, "dtw_threshold": 5,
                                               "qos_overrides./fix.subscription.depth": 1},
                           declared.__contains__, GRAPH_LOCALISER)
    unknown_parameters("graph_localiser", {"data": 1, "qos_overrides./fix.subscription.depth": 1},
                       declared.__contains__, GRAPH_LOCALISER)  # known ones and QoS overrides pass


def test_the_wire_contract_is_typed_no_node_sends_json_in_string():
    """Every record between nodes crosses as a cityseeker_interfaces or standard message: no node
    (nor the bag asker) creates a std_msgs/String publisher or subscription, and every custom
    topic the bag tools know has a message class and a record conversion (ros/typed.py)."""
    from cityseeker_ros.bag.recorder import message_class
    from cityseeker_ros.ros import typed
    from cityseeker_ros.ros.bag_topics import DECIDE_GOAL, KNOWN_TOPICS

    paths = [*(REPO / "cityseeker_ros" / "nodes").glob("*.py"), REPO / "cityseeker_ros" / "bag" / "asker.py"]
    for path in paths:
        assert "String" not in imports_from(path, "std_msgs.msg"), path.name
        for call in ast.walk(ast.parse(path.read_text())):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr in ("create_publisher", "create_subscription") and call.args):
                assert ast.unparse(call.args[0]) != "String", (path.name, ast.unparse(call))
    wire_types = {msg_type for msg_type, _, _ in typed.WIRE.values()}
    custom = [s for s in KNOWN_TOPICS.values() if s.msgtype.startswith("cityseeker_interfaces/")]
    assert len(custom) >= 12
    for spec in custom:
        cls = message_class(spec.msgtype)
        assert cls in wire_types or spec.msgtype == DECIDE_GOAL, spec


def imports_from(path: Path, module: str) -> set[str]:
    return {a.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)
            and node.module == module for a in node.names}

"""Promises checked without starting ROS: entry points, parameter files, and which modules may
import rclpy (only the nodes, their QoS table and the test driver; the rest of the ROS layer
must load in any process)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from cityseeker_ros.ros.parameters import NODES

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


def test_only_nodes_qos_and_driver_import_rclpy():
    for path in (REPO / "cityseeker_ros" / "ros").glob("*.py"):
        assert ("rclpy" in imports(path)) == (path.name == "qos.py"), path.name
    for path in (REPO / "cityseeker_ros" / "nodes").glob("*.py"):
        assert path.name == "__init__.py" or "rclpy" in imports(path)

"""The launch files, checked without ROS 2's `launch` package (CI has none): every Node names an
installed entry point, every parameter file exists, every parameter set is one the node declares,
every launch argument is declared and used, every module an ExecuteProcess runs exists, and
benchmark.launch.py starts the node set `cityseeker run benchmark` starts."""
from __future__ import annotations

import ast
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from cityseeker_ros.core.benchmark import BenchmarkConfig
from cityseeker_ros.ros.node_sets import benchmark_nodes
from cityseeker_ros.ros.parameters import NODES

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
SCRIPTS = dict(re.findall(r'"(\w+) = (cityseeker_ros\.nodes\.\w+):main"', (REPO / "setup.py").read_text()))
SUBSTITUTIONS = ("LaunchConfiguration", "text", "number")  # the launch files' helpers wrap LaunchConfiguration


def calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)]


def keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def argument_names(node: ast.AST) -> set[str]:
    """Launch arguments a subtree reads."""
    return {c.args[0].value for name in SUBSTITUTIONS for c in calls(node, name)
            if c.args and isinstance(c.args[0], ast.Constant)}


def parameter_keys(tree: ast.Module, value: ast.AST) -> set[str]:
    """Keys of a parameters dict, following `**name` into the dict assigned to `name`."""
    keys: set[str] = set()
    if isinstance(value, ast.Name):
        assigned = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", None) == value.id for t in n.targets)]
        return set().union(*(parameter_keys(tree, v) for v in assigned))
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            keys |= parameter_keys(tree, item) if key is None else {key.value}
    return keys


def declared_arguments(tree: ast.Module) -> set[str]:
    found = {c.args[0].value for c in calls(tree, "DeclareLaunchArgument") if isinstance(c.args[0], ast.Constant)}
    for assign in (n for n in ast.walk(tree) if isinstance(n, ast.Assign)):
        if any(getattr(t, "id", None) == "ARGUMENTS" for t in assign.targets):
            found |= {k.value for k in assign.value.keys}
    return found


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_is_consistent(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    assert any(isinstance(f, ast.FunctionDef) and f.name == "generate_launch_description" for f in tree.body)
    declared = declared_arguments(tree)
    nodes = calls(tree, "Node")
    assert nodes or calls(tree, "ExecuteProcess"), "starts nothing"
    used: set[str] = set()
    for node in nodes:
        assert keyword(node, "package").value == "cityseeker_ros"
        executable = keyword(node, "executable").value
        assert executable in SCRIPTS, f"{executable}: no console script in setup.py"
        specs = {s.name for s in NODES[executable]}
        for item in keyword(node, "parameters").elts:
            if isinstance(item, ast.Call) and getattr(item.func, "id", None) == "config":
                assert (REPO / "config" / item.args[0].value).is_file(), item.args[0].value
            else:
                unknown = parameter_keys(tree, item) - specs
                assert not unknown, f"{executable} declares no parameter {sorted(unknown)}"
        used |= argument_names(node)
    for process in calls(tree, "ExecuteProcess"):
        command = keyword(process, "cmd").elts
        modules = [command[i + 1].value for i, a in enumerate(command[:-1])
                   if isinstance(a, ast.Constant) and a.value == "-m"]
        assert modules and all(find_spec(m) is not None for m in modules), modules
        used |= argument_names(process)
    used |= {name for assign in ast.walk(tree) if isinstance(assign, ast.Assign) for name in argument_names(assign)}
    assert used <= declared, f"undeclared launch arguments {sorted(used - declared)}"
    assert declared <= used, f"declared but unused launch arguments {sorted(declared - used)}"


def test_the_four_launch_files_exist():
    assert {p.name for p in LAUNCH_FILES} == {"benchmark.launch.py", "airsim.launch.py", "camera.launch.py",
                                              "bag_eval.launch.py"}


def test_benchmark_launch_starts_the_runners_node_set(tmp_path):
    tree = ast.parse((REPO / "launch" / "benchmark.launch.py").read_text())
    launched = {keyword(n, "executable").value for n in calls(tree, "Node")}
    config = BenchmarkConfig(data=str(tmp_path), policy="random")
    assert launched == {n.module.rsplit(".", 1)[-1] for n in benchmark_nodes(config, tmp_path, [])}

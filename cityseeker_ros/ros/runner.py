"""`cityseeker run`: the node set of a launch file, started by this package on a machine without
`ros2 launch` (pip-only installs, CI). Each node is its own process over DDS on loopback, or all
of them in one process on a single-threaded executor (`single_process`).

The runner starts what it needs and ends only what it started, by PID (each is listed in
`logs`/processes.json, and dies with the runner even if the runner is killed). A node that may
restart without losing anything (the decision node, the evaluator) is restarted when it dies,
like launch's `respawn=True`; any other node dying ends the run with its log. A node that cannot
start for a configuration reason (a bad parameter, missing data, an unreachable model server)
exits with CONFIG_ERROR_EXIT after writing its one-line reason: restarting it cannot help, so the
run ends at once with that line. Nothing here imports rclpy: the nodes do, in processes started
with `env.ros_env()`; a monitor process (nodes/run_monitor.py) prints on the terminal what the
stack reports it is waiting for on /diagnostics.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from cityseeker_ros.core.evaluation.config import RUN_COMMAND_ENV
from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.core.infra.files import write_text_atomic
from cityseeker_ros.core.infra.redact import redact_command
from cityseeker_ros.core.infra.text import clean_json
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros import secret_params


@dataclass(frozen=True)
class NodeSpec:
    """One node of a run: its executable (module with `main`), parameters and remappings."""

    name: str
    module: str
    params: dict[str, Any] = field(default_factory=dict)
    remaps: tuple[tuple[str, str], ...] = ()
    respawn: bool = False
    # A tool process with a command line of its own (the bag player and recorder), not a node
    # taking --ros-args; `finite` ones end by themselves, and exit code 0 is then no failure.
    argv: Optional[tuple[str, ...]] = None
    finite: bool = False

    @property
    def executable(self) -> str:
        """The console script (setup.py) of a node: its module's name."""
        return self.module.rsplit(".", 1)[-1]

    @property
    def defaults_file(self) -> Path:
        """config/EXECUTABLE.yaml, read before the run's own parameters (every node has one)."""
        return ros.config_file(f"{self.executable}.yaml")

    def command(self, params_file: Optional[Path] = None) -> list[str]:
        args = list(self.argv) if self.argv is not None else self.ros_args(params_file)
        return ros.python_module_command(self.module, *args)

    def ros_args(self, params_file: Path) -> list[str]:
        args = ["--ros-args", "-r", f"__node:={self.name}"]
        args += ["--params-file", str(self.defaults_file), "--params-file", str(params_file)]
        for old, new in self.remaps:
            args += ["-r", f"{old}:={new}"]
        return args


class RunFailed(CitySeekerError):
    """A node the run needs died, or the run did not finish in time."""


# The exit status of a node that cannot start for a configuration reason (ros/spin.py):
# the run cannot succeed, so it is never restarted. Its one-line reason goes to the file named
# by EXIT_REASON_ENV, which the runner sets per process.
CONFIG_ERROR_EXIT = 2
EXIT_REASON_ENV = "CITYSEEKER_EXIT_REASON_FILE"
MONITOR = "run_monitor"
# A respawnable node that dies this many times in a row within QUICK_DEATH_S of starting is
# failing, not recovering: the run ends instead of restarting it forever.
MAX_QUICK_DEATHS = 3
QUICK_DEATH_S = 10.0


def exit_reason(log_text: str) -> str:
    """The last error line of a node's log (rcutils' `[ERROR] [time] [name]: message`), without
    its prefix; the last line when there is none."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("[ERROR]"):
            return line.split("]: ", 1)[-1]
    return lines[-1] if lines else "(no log)"


# "[INFO] [1764262800.123] [decision]: message" (rcutils' default format) -> "message"
LOG_PREFIX = re.compile(r"^\[\w+\] \[[\d.]+\] \[[^]]*\]: ")


class Runner:
    """Starts the nodes, watches them until `done()` holds, restarts respawnable ones, and
    stops every process it started. Logs go to `logs`/NAME.log."""

    def __init__(self, nodes: Sequence[NodeSpec], logs: Path, env: dict[str, str],
                 single_process: bool = False, log: Callable[[str], None] = print, monitor: bool = True,
                 command: Optional[str] = None) -> None:
        self.nodes, self.logs, self.env = list(nodes), Path(logs), env
        # The user's command (default: this process's, credentials masked), which the evaluator
        # records in config.json instead of its own node command line.
        self.command = redact_command(sys.argv) if command is None else command
        self.single_process, self.log, self.monitor = single_process, log, monitor
        self.logs.mkdir(parents=True, exist_ok=True)
        # The nodes read their parameters from logs/params.yaml, credentials masked; the real
        # values reach each node in its environment (ros/secret_params.py), never a parameter or a file.
        self.params_file = self.logs / "params.yaml"
        self._secrets: dict[str, dict[str, Any]] = {}
        self.processes: dict[str, subprocess.Popen] = {}
        self.restarts: dict[str, int] = {}
        self.started: list[dict[str, Any]] = []  # every process started: name, pid, when (processes.json)
        self._started_at: dict[str, float] = {}
        self._quick_deaths: dict[str, int] = {}
        self._monitor: Optional[subprocess.Popen] = None
        self._shm_before: set[Path] = set()

    def write_params(self) -> None:
        """One params file for every node, section by node name (JSON-valued strings stay strings),
        with credentials masked; the real values wait in `_secrets` for each node's environment."""
        doc = {}
        for node in self.nodes:
            # Through JSON, so values shared between nodes are copies (rcl refuses YAML aliases).
            public, self._secrets[node.name] = secret_params.split(json.loads(json.dumps(node.params)))
            doc[node.name] = {"ros__parameters": public}
        write_text_atomic(self.params_file, yaml.safe_dump(clean_json(doc), sort_keys=False))

    def start(self) -> None:
        self._shm_before = ros.shm_segments()
        self.write_params()
        if self.monitor:
            self._monitor = self._start_process(MONITOR, ros.python_module_command("cityseeker_ros.nodes.run_monitor"),
                                                stdout=None)  # its lines go to the terminal
        if self.single_process:
            if any(n.argv is not None for n in self.nodes):
                raise CitySeekerError("tool processes (bag player, recorder) cannot share one process")
            spec = [{"name": n.name, "module": n.module, "args": n.ros_args(self.params_file)} for n in self.nodes]
            spec_file = self.logs / "single_process.json"
            spec_file.write_text(json.dumps(spec, indent=1), encoding="utf-8")
            self._spawn("single_process", ros.python_module_command("cityseeker_ros.nodes.single_process",
                                                                    str(spec_file)))
            return
        for node in self.nodes:
            self._spawn(node.name, node.command(self.params_file))

    def _spawn(self, name: str, command: list[str]) -> None:
        with open(self.logs / f"{name}.log", "a") as log:
            self.processes[name] = self._start_process(name, command, stdout=log)
        self._started_at[name] = time.monotonic()

    def _start_process(self, name: str, command: list[str], stdout: Any) -> subprocess.Popen:
        """Start one process that dies with the runner, tell it where to write why it could not
        start, and record its PID in processes.json."""
        reason = self.logs / f"{name}.reason"
        reason.unlink(missing_ok=True)
        env = {**self.env, EXIT_REASON_ENV: str(reason), RUN_COMMAND_ENV: self.command,
               **secret_params.environment(self._process_secrets(name))}
        stderr = subprocess.STDOUT if stdout is not None else None
        process = ros.spawn(command, env, stdout=stdout, stderr=stderr, die_with_parent=True)
        self.started.append({"name": name, "pid": process.pid, "started": time.time()})
        (self.logs / "processes.json").write_text(json.dumps(self.started, indent=1), encoding="utf-8")
        return process

    def reason(self, name: str) -> str:
        """Why `name` exited: the line it wrote for the runner, else the last error in its log."""
        path = self.logs / f"{name}.reason"
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                return text.splitlines()[0]
        return exit_reason(self.tail(name))

    def pid(self, name: str) -> int:
        return self.processes[name].pid

    def watch(self, done: Callable[[], bool], timeout_s: Optional[float] = None, poll_s: float = 0.2) -> None:
        """Until `done()`: restart respawnable nodes that die, fail on any other."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not done():
            if deadline is not None and time.monotonic() > deadline:
                raise RunFailed(f"the run did not finish within {timeout_s:g} s; logs in {self.logs}")
            for name, process in list(self.processes.items()):
                code = process.poll()
                if code is None:
                    continue
                node = next((n for n in self.nodes if n.name == name), None)
                if node is not None and node.finite and code == 0:
                    continue
                if code == CONFIG_ERROR_EXIT:  # restarting cannot help
                    raise RunFailed(f"{name}: {self.reason(name)} (log: {self.logs / f'{name}.log'})")
                if node is None or not node.respawn:
                    raise RunFailed(f"{name} exited with code {code}:\n{self.tail(name)}")
                quick = time.monotonic() - self._started_at.get(name, 0.0) < QUICK_DEATH_S
                self._quick_deaths[name] = self._quick_deaths.get(name, 0) + 1 if quick else 0
                if self._quick_deaths[name] >= MAX_QUICK_DEATHS:
                    raise RunFailed(f"{name} exited with code {code} {MAX_QUICK_DEATHS} times in a row within "
                                    f"{QUICK_DEATH_S:g} s of starting; giving up:\n{self.tail(name)}")
                self.restarts[name] = self.restarts.get(name, 0) + 1
                self.log(f"{name} exited with code {code}: restarting it (restart {self.restarts[name]})")
                self._spawn(name, node.command(self.params_file))
            time.sleep(poll_s)

    def exited(self, name: str) -> bool:
        return self.processes[name].poll() is not None

    def end(self, name: str) -> Optional[int]:
        """Stop one process now (SIGINT first: a recorder then finishes its bag)."""
        return ros.stop(self.processes[name], timeout_s=30.0)

    def _process_secrets(self, name: str) -> dict[str, Any]:
        """The credentials of the nodes process `name` runs: its own, or every node's in one process."""
        if name == "single_process":
            return {k: v for secrets in self._secrets.values() for k, v in secrets.items()}
        return self._secrets.get(name, {})

    def activity(self) -> str:
        """Each node's last log message, for a user waiting on a run that has not shown anything
        yet ("decision: configuring: loading policy ocr-embed")."""
        parts = []
        for node in self.nodes:
            lines = [line for line in self.tail(node.name, 2000).splitlines() if line.strip()]
            if lines and lines[-1] != "(no log)":
                parts.append(f"{node.name}: {LOG_PREFIX.sub('', lines[-1])[:100]}")
        return "; ".join(parts) or "no node has logged yet"

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.is_file() else "(no log)"

    def stop(self) -> None:
        monitor = [self._monitor] if self._monitor is not None else []
        ros.stop_all([*reversed(list(self.processes.values())), *monitor])
        # A killed node leaves its shared-memory segment: remove those that appeared during the
        # run and whose owner is dead, nobody else's.
        ros.remove_stale_shm(ros.shm_segments() - self._shm_before)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

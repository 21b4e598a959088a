"""`cityseeker run`: the node set of a launch file, started by this package on a machine without
`ros2 launch` (pip-only installs, CI). Each node is its own process over DDS on loopback, or all
of them in one process on a single-threaded executor (`single_process`).

The runner starts what it needs and ends only what it started, by PID. A node that may restart
without losing anything (the decision node, the evaluator) is restarted when it dies, like
launch's `respawn=True`; any other node dying ends the run with its log. Nothing here imports
rclpy: the nodes do, in processes started with `env.ros_env()`.
"""
from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from cityseeker_ros.core.errors import CitySeekerError
from cityseeker_ros.ros import env as ros


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

    def command(self, params_file: Path) -> list[str]:
        args = list(self.argv) if self.argv is not None else self.ros_args(params_file)
        return ros.python_module_command(self.module, *args)

    def ros_args(self, params_file: Path) -> list[str]:
        args = ["--ros-args", "-r", f"__node:={self.name}"]
        default = ros.config_file(f"{self.module.rsplit('.', 1)[-1]}.yaml")  # every node has one
        args += ["--params-file", str(default), "--params-file", str(params_file)]
        for old, new in self.remaps:
            args += ["-r", f"{old}:={new}"]
        return args


class RunFailed(CitySeekerError):
    """A node the run needs died, or the run did not finish in time."""


class Runner:
    """Starts the nodes, watches them until `done()` holds, restarts respawnable ones, and
    stops every process it started. Logs go to `logs`/NAME.log."""

    def __init__(self, nodes: Sequence[NodeSpec], logs: Path, env: dict[str, str],
                 single_process: bool = False, log: Callable[[str], None] = print) -> None:
        self.nodes, self.logs, self.env = list(nodes), Path(logs), env
        self.single_process, self.log = single_process, log
        self.logs.mkdir(parents=True, exist_ok=True)
        self.params_file = self.logs / "params.yaml"
        self.processes: dict[str, subprocess.Popen] = {}
        self.restarts: dict[str, int] = {}
        self._shm_before: set[Path] = set()

    def write_params(self) -> None:
        """One params file for every node, section by node name (JSON-valued strings stay strings)."""
        # Through JSON, so values shared between nodes are copies (rcl refuses YAML aliases).
        doc = json.loads(json.dumps({n.name: {"ros__parameters": n.params} for n in self.nodes}))
        self.params_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")

    def start(self) -> None:
        self._shm_before = ros.shm_segments()
        self.write_params()
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
            self.processes[name] = ros.spawn(command, self.env, stdout=log, stderr=subprocess.STDOUT)

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
                if node is None or not node.respawn:
                    raise RunFailed(f"{name} exited with code {code}:\n{self.tail(name)}")
                self.restarts[name] = self.restarts.get(name, 0) + 1
                self.log(f"{name} exited with code {code}: restarting it (restart {self.restarts[name]})")
                self._spawn(name, node.command(self.params_file))
            time.sleep(poll_s)

    def exited(self, name: str) -> bool:
        return self.processes[name].poll() is not None

    def end(self, name: str) -> Optional[int]:
        """Stop one process now (SIGINT first: a recorder then finishes its bag)."""
        return ros.stop(self.processes[name], timeout_s=30.0)

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.is_file() else "(no log)"

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            ros.stop(process)
        # A killed node leaves its shared-memory segment: remove those that appeared during the
        # run and whose owner is dead, nobody else's.
        ros.remove_stale_shm(ros.shm_segments() - self._shm_before)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

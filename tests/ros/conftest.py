"""ROS 2 test plumbing. The pytest process never imports rclpy (it needs LD_LIBRARY_PATH at
process start, cityseeker_ros/ros/env.py says why): nodes and drivers are child processes
started with `ros_env()`, each test on a ROS_DOMAIN_ID leased for it alone, and every process
a test starts is stopped by its PID when the test ends, pass or fail.

Message classes are plain Python, so conversion tests import them here directly.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from cityseeker_ros.ros import env as ros

REPO = Path(__file__).resolve().parents[2]
MISSING = ros.missing_ros_modules()


def require_ros() -> None:
    if MISSING:
        pytest.skip(f"ROS 2 wheels not installed (missing {', '.join(MISSING)}): pip install -e '.[ros]'")


@pytest.fixture(autouse=True)
def _ros_installed() -> None:
    require_ros()


@pytest.fixture
def ros_domain() -> Iterator[int]:
    """A ROS_DOMAIN_ID held by this test alone on this host (CITYSEEKER_ROS_DOMAIN_ID pins one)."""
    pinned = os.environ.get("CITYSEEKER_ROS_DOMAIN_ID")
    if pinned:
        yield int(pinned)
        return
    with ros.lease_domain() as domain:
        yield domain


@pytest.fixture
def ros_env(ros_domain: int) -> dict[str, str]:
    return ros.ros_env(domain_id=ros_domain)


class RosProcesses:
    """Starts ROS processes for one test and stops each by its PID at the end."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.started: list[tuple[str, subprocess.Popen]] = []

    def node(self, module: str, *ros_args: str, name: Optional[str] = None) -> subprocess.Popen:
        command = ros.python_module_command(module, "--ros-args", *ros_args)
        return self._start(name or module.rsplit(".", 1)[-1], command)

    def _start(self, name: str, command: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")
        process = ros.spawn(command, self.env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        log.close()  # the child holds its own descriptor
        self.started.append((name, process))
        return process

    def drive(self, plan: dict[str, Any], timeout_s: float = 240.0) -> list[dict[str, Any]]:
        """Run tests/ros/episode_driver.py with `plan`; its report, or a failure with every log."""
        return self.finish(self.drive_async(plan), timeout_s)

    def drive_async(self, plan: dict[str, Any]) -> tuple[subprocess.Popen, Path]:
        plan_file, out_file = self.logs / "plan.json", self.logs / "driver_out.json"
        plan_file.write_text(json.dumps(plan))
        process = self._start("driver", ros.python_module_command("tests.ros.episode_driver", str(plan_file),
                                                                  str(out_file)))
        return process, out_file

    def finish(self, driver: tuple[subprocess.Popen, Path], timeout_s: float = 240.0) -> list[dict[str, Any]]:
        process, out_file = driver
        try:
            code = process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        if code != 0 or not out_file.is_file():
            pytest.fail(f"driver exit {code}\n{self.log_text()}")
        return json.loads(out_file.read_text())

    def log_text(self) -> str:
        return "\n".join(f"--- {name} (exit {p.poll()}) ---\n{(self.logs / f'{name}.log').read_text()[-4000:]}"
                         for name, p in self.started)

    def stop_all(self) -> None:
        for _, process in reversed(self.started):
            ros.stop(process)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.ros_call_failed = report.failed


@pytest.fixture
def ros_processes(request, ros_env: dict[str, str], tmp_path: Path) -> Iterator[RosProcesses]:
    logs = tmp_path / "logs"
    logs.mkdir()
    segments_before = ros.shm_segments()
    processes = RosProcesses(ros_env, logs)
    try:
        yield processes
    finally:
        processes.stop_all()
        if getattr(request.node, "ros_call_failed", False):  # shown under "Captured stdout teardown"
            out = logs / "driver_out.json"
            print(f"ROS_DOMAIN_ID={ros_env.get('ROS_DOMAIN_ID')}\n{processes.log_text()}\n"
                  f"--- driver report ---\n{out.read_text()[-6000:] if out.is_file() else '(none)'}")
        # A node a test killed on purpose leaves its shared-memory segment: remove ours only.
        ros.remove_stale_shm(ros.shm_segments() - segments_before)

"""The environment a ROS 2 process needs, and how to start processes with it.

ROS 2 Jazzy comes from PyPI wheels here (DESIGN.md section 6); this module is the only place
that knows their layout. rclpy's C extension finds its libraries through LD_LIBRARY_PATH,
which the dynamic loader reads once at process start, so it cannot be fixed from inside a
running interpreter: ROS processes are *started* with `ros_env()` (`spawn`), or re-execute
themselves into it (`reexec_with_ros_env`).

The wheels also install a `.pth` hook (ros_wheels_bootstrapper) that re-executes every
interpreter of the environment with LD_LIBRARY_PATH set. We do not rely on it: it sets
nothing else (RMW, discovery range, Fast DDS profile, domain), and `ros_env()` marks the
environment as bootstrapped so that hook never re-executes a process we start.

On a real ROS 2 install (setup.bash sourced) there is no wheel layout; `ros_env()` then keeps
the sourced library and ament paths and only adds the settings below.

Network exposure: by default every DDS socket binds to 127.0.0.1 (config/fastdds_profile.xml,
an interface allowlist and unicast discovery on loopback, with the discovery range left to the
profile). `CITYSEEKER_ROS_NETWORK=1` is the one switch for live trials across machines: the
profile without the allowlist and the SUBNET discovery range.

Tests: the pytest process never imports rclpy. Every node, and the test's driver, is a child
process started with `spawn(..., env=ros_env(domain_id=...))`, each test on its own
`ROS_DOMAIN_ID` from `lease_domain()`, so concurrent test sessions on one host never see
each other's graphs (nothing leaves loopback).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError

PACKAGE = "cityseeker_ros"
PROFILE_FILE = "fastdds_profile.xml"  # loopback only: the default
NETWORK_PROFILE_FILE = "fastdds_network_profile.xml"  # every interface: live trials across machines
NETWORK_SWITCH = "CITYSEEKER_ROS_NETWORK"  # "1" selects the network profile
# rmw_fastrtps appends a UDP transport without an allowlist under LOCALHOST; SYSTEM_DEFAULT leaves
# discovery to the loopback profile (config/fastdds_profile.xml says why).
DISCOVERY_RANGE = {False: "SYSTEM_DEFAULT", True: "SUBNET"}
RMW_IMPLEMENTATION = "rmw_fastrtps_cpp"
# Python packages of the wheels the nodes import (ros-jazzy-*; lifecycle_msgs comes with rclpy).
ROS_MODULES = ("rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs", "nav_msgs",
               "diagnostic_msgs", "visualization_msgs", "lifecycle_msgs", "rcl_interfaces")
_BOOTSTRAP_GUARD = "_ROS_WHEELS_BOOTSTRAP_COMPLETE"  # the wheels' .pth hook skips re-exec when set
# Fast DDS supports domain ids 0-232 with its default port mapping; 0 is everyone's default.
DOMAIN_RANGE = (101, 232)
# glibc hands every freed block above its mmap threshold back to the kernel and maps fresh pages
# for the next, so a raw view image (0.9-3.7 MB), copied several times between rclpy and Fast DDS
# per message, page-faults anew each time. Kept in the heap, a burst of four 640x480 views went
# from 14.3 to 6.3 ms and of four 1280x960 views from 44 to 17 ms (benchmarks/image_burst.py,
# RESULTS.md). Blocks of 64 MB and more are still mapped; a process returns memory once 128 MB
# lie free at the top of its heap. A value already in the environment wins.
# What ros_env sets for DDS: the middleware, its profile (loopback unless the network switch is
# on), the discovery range and the switch itself; launch_actions gives launched processes the same.
DDS_ENV = ("RMW_IMPLEMENTATION", "ROS_AUTOMATIC_DISCOVERY_RANGE", "FASTRTPS_DEFAULT_PROFILES_FILE",
           "FASTDDS_DEFAULT_PROFILES_FILE", NETWORK_SWITCH)
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}


def missing_ros_modules() -> list[str]:
    """The ROS Python packages that are not installed (looked up, not imported: importing
    rclpy fails without LD_LIBRARY_PATH even where it is installed)."""
    return [m for m in ROS_MODULES if find_spec(m) is None]


def wheel_prefix(prefix: Optional[Path] = None) -> Optional[Path]:
    """The environment holding the ROS wheels' shared libraries (`<prefix>/lib/librcl.so`), or
    None where ROS comes from elsewhere (a sourced ROS 2 install)."""
    prefix = Path(prefix or sys.prefix)
    return prefix if (prefix / "lib" / "librcl.so").is_file() else None


def library_dirs(prefix: Optional[Path] = None) -> list[Path]:
    """`<prefix>/lib` and every `site-packages/ros_*.libs` (the wheels' vendored libraries:
    tinyxml2, lttng, spdlog, yaml, ssl...); empty without a wheel layout."""
    root = wheel_prefix(prefix)
    if root is None:
        return []
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    return [root / "lib"] + sorted(p for p in purelib.glob("ros_*.libs") if p.is_dir())


def config_file(name: str) -> Path:
    """A file of the package's config/ folder: the source tree's (checkout, editable install),
    else the installed share/cityseeker_ros/config (pip or colcon install)."""
    candidates = [Path(__file__).resolve().parents[2] / "config" / name,
                  Path(sys.prefix) / "share" / PACKAGE / "config" / name]
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / "share" / PACKAGE / "config" / name)
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f"{name}: not found in {', '.join(str(p.parent) for p in candidates)}")


def _prepend(paths: Sequence[Path], existing: str) -> str:
    parts = [str(p) for p in paths]
    parts += [p for p in existing.split(os.pathsep) if p and p not in parts]
    return os.pathsep.join(parts)


def network_mode(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether `CITYSEEKER_ROS_NETWORK` (in `env`, default os.environ) asks for DDS on every
    interface; unset, empty or 0 is loopback only."""
    value = (os.environ if env is None else env).get(NETWORK_SWITCH, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{NETWORK_SWITCH} must be 1 (DDS on every interface) or 0 (loopback only), got {value!r}")


def ros_env(domain_id: Optional[int] = None, base: Optional[Mapping[str, str]] = None,
            network: Optional[bool] = None) -> dict[str, str]:
    """The environment for a ROS process: `base` (default os.environ) plus library and ament
    paths for the wheels, Fast DDS as the RMW with the project's profile and `domain_id` when
    given. `network` (default: `CITYSEEKER_ROS_NETWORK` in `base`) False binds every DDS socket
    to loopback; True is for a drone or headset on the network."""
    env = dict(os.environ if base is None else base)
    network = network_mode(env) if network is None else network
    libs = library_dirs()
    if libs:
        env["LD_LIBRARY_PATH"] = _prepend(libs, env.get("LD_LIBRARY_PATH", ""))
        env["AMENT_PREFIX_PATH"] = _prepend([libs[0].parent], env.get("AMENT_PREFIX_PATH", ""))
        env[_BOOTSTRAP_GUARD] = "1"
    env["RMW_IMPLEMENTATION"] = RMW_IMPLEMENTATION
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = DISCOVERY_RANGE[network]
    env.pop("ROS_LOCALHOST_ONLY", None)  # deprecated in Jazzy; it would fight the range above
    env[NETWORK_SWITCH] = "1" if network else "0"
    profile = str(config_file(NETWORK_PROFILE_FILE if network else PROFILE_FILE))
    env["FASTRTPS_DEFAULT_PROFILES_FILE"] = profile  # Fast DDS 2.x reads this name,
    env["FASTDDS_DEFAULT_PROFILES_FILE"] = profile   # 3.x this one
    if domain_id is not None:
        if not 0 <= int(domain_id) <= 232:
            raise ValueError(f"ROS_DOMAIN_ID must lie in 0..232, got {domain_id}")
        env["ROS_DOMAIN_ID"] = str(int(domain_id))
    env.setdefault("PYTHONUNBUFFERED", "1")  # node logs arrive in order with the C loggers'
    for key, value in MALLOC_ENV.items():
        env.setdefault(key, value)
    return env


def env_ready(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a process started with `env` can load rclpy (the wheels' libraries are on its
    library path, or there is no wheel layout to worry about)."""
    env = os.environ if env is None else env
    have = set(env.get("LD_LIBRARY_PATH", "").split(os.pathsep))
    return all(str(p) in have for p in library_dirs()) and "RMW_IMPLEMENTATION" in env


def reexec_with_ros_env(domain_id: Optional[int] = None) -> None:
    """Replace this process by itself under `ros_env()` unless it already runs in it. Call it
    before the first rclpy import (a command that starts ROS work in-process)."""
    if env_ready():
        return
    os.execve(sys.executable, sys.orig_argv, ros_env(domain_id))


def python_module_command(module: str, *args: str) -> list[str]:
    """`python -m module args...` with this interpreter: starts a node without depending on
    console scripts being installed (an editable checkout)."""
    return [sys.executable, "-m", module, *args]


def spawn(command: Sequence[str], env: Mapping[str, str], die_with_parent: bool = False,
          **popen: object) -> subprocess.Popen:
    """Start a ROS process. The caller owns it and must `stop()` it by this handle;
    `die_with_parent` also has the kernel send it SIGTERM (rclpy shuts down on it) when the
    caller dies, even by SIGKILL, so a killed runner leaves no node behind (Linux only), and
    starts it in a session of its own: a terminal's Ctrl-C reaches the caller alone, which stops
    its processes in order (a Seek client cancels its goal before the nodes go)."""
    if die_with_parent and sys.platform.startswith("linux"):
        popen["preexec_fn"] = _die_with_parent
        popen.setdefault("start_new_session", True)
    return subprocess.Popen(list(command), env=dict(env), **popen)  # type: ignore[arg-type]


def _die_with_parent() -> None:  # in the child, between fork and exec
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def stop(process: subprocess.Popen, timeout_s: float = 5.0, sig: int = signal.SIGINT) -> Optional[int]:
    """`sig` (SIGINT: rclpy shuts down cleanly and destroys its participant), then SIGKILL after
    `timeout_s`. Only this process is signalled, by its PID."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait(timeout_s)
    return process.returncode


def stop_all(processes: Sequence[subprocess.Popen], timeout_s: float = 5.0) -> None:
    """`stop` for many at once: SIGINT to each, then SIGKILL to those still alive after
    `timeout_s` in all (not per process), so a run ends in about one node's shutdown time."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout_s
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait(timeout_s)


SHM_DIR = Path("/dev/shm")


def shm_segments(shm_dir: Path = SHM_DIR) -> set[Path]:
    """Fast DDS's shared-memory data segments (its port files manage themselves)."""
    return {p for p in shm_dir.glob("fastrtps_*") if not p.name.endswith("_el") and "_port" not in p.name}


def remove_stale_shm(candidates: Iterable[Path]) -> list[Path]:
    """Remove the segments among `candidates` whose owner is dead, as `fastdds shm clean`
    does: a live participant holds an exclusive lock on `<segment>_el`. A node killed with
    SIGKILL leaves its segment behind (32 MB of RAM-backed /dev/shm with our profile);
    callers pass only segments they saw appear, so nobody else's are touched."""
    import fcntl

    removed = []
    for segment in candidates:
        lock = segment.with_name(segment.name + "_el")
        try:
            with open(lock, "rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                segment.unlink(missing_ok=True)
                lock.unlink(missing_ok=True)
                removed.append(segment)
        except OSError:  # alive (locked) or already gone
            continue
    return removed


@contextlib.contextmanager
def lease_domain(first: int = DOMAIN_RANGE[0], last: int = DOMAIN_RANGE[1],
                 lock_dir: Optional[Path] = None) -> Iterator[int]:
    """A ROS_DOMAIN_ID no other holder on this host has: an exclusive lock on one file per id
    (released when the block ends or the holder dies), so parallel test sessions and runs
    never share a graph."""
    import fcntl

    lock_dir = Path(lock_dir or tempfile.gettempdir())
    for domain in range(first, last + 1):
        handle = open(lock_dir / f"cityseeker_ros_domain_{domain}.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        try:
            yield domain
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        return
    raise RuntimeError(f"every ROS domain id in {first}..{last} is in use on this host")


def main(argv: Optional[Sequence[str]] = None) -> None:
    """`eval "$(python -m cityseeker_ros.ros.env [--domain N] [--network])"` puts a shell into
    the ROS environment, for running nodes by hand on a pip-only machine."""
    import argparse
    import shlex

    parser = argparse.ArgumentParser(prog="python -m cityseeker_ros.ros.env", description=main.__doc__)
    parser.add_argument("--domain", type=int, default=None, help="ROS_DOMAIN_ID (default: keep the current)")
    parser.add_argument("--network", action="store_true", default=None,
                        help=f"DDS on every interface, for other hosts (default: ${NETWORK_SWITCH}, else loopback)")
    args = parser.parse_args(argv)
    env = ros_env(args.domain, network=args.network)
    keys = ("LD_LIBRARY_PATH", "AMENT_PREFIX_PATH", _BOOTSTRAP_GUARD, "RMW_IMPLEMENTATION",
            "ROS_AUTOMATIC_DISCOVERY_RANGE", NETWORK_SWITCH, "FASTRTPS_DEFAULT_PROFILES_FILE",
            "FASTDDS_DEFAULT_PROFILES_FILE", "ROS_DOMAIN_ID", *MALLOC_ENV)
    for key in keys:
        if key in env:
            print(f"export {key}={shlex.quote(env[key])}")
    if "ROS_LOCALHOST_ONLY" in os.environ:
        print("unset ROS_LOCALHOST_ONLY")


if __name__ == "__main__":
    main()

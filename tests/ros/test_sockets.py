"""Network exposure: every socket a run's processes open is bound to loopback (127.0.0.1 or ::1),
never to 0.0.0.0 or a network interface, unless CITYSEEKER_ROS_NETWORK=1 asks for the network.

The sockets are read from the kernel while `cityseeker run benchmark` runs: each process's
socket inodes (/proc/PID/fd) looked up in its network namespace's tables
(/proc/PID/net/{udp,udp6,tcp,tcp6}). Fast DDS opens more sockets as it discovers peers, so
they are sampled until the run ends."""
from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
from pathlib import Path

from cityseeker_ros.ros import env as ros
from tests.ros.test_runner import REPO, children, command_line, logs

TABLES = ("udp", "udp6", "tcp", "tcp6")
LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def _address(text: str) -> str:
    """`0100007F:1B58` (kernel byte order) as `127.0.0.1:7000`; IPv6 as `[::1]:7000`."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    # Each 32-bit word is in host (little-endian) order.
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return f"{ip}:{int(port, 16)}" if ip.version == 4 else f"[{ip}]:{int(port, 16)}"


def bound_sockets(pid: int) -> dict[str, str]:
    """Local address of each UDP/TCP socket process `pid` holds, keyed `table:inode`."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = {}
    for table in TABLES:
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                found[f"{table}:{fields[9]}"] = _address(fields[1])
    return found


def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return ipaddress.ip_address(host) in LOOPBACK


def _children(pid: int) -> list[int]:
    try:
        return children(pid)
    except FileNotFoundError:  # the runner ended meanwhile
        return []


def test_address_decoding():
    assert _address("0100007F:1B58") == "127.0.0.1:7000"
    assert _address("00000000:8F52") == "0.0.0.0:36690"
    assert _address("00000000000000000000000001000000:0050") == "[::1]:80"
    assert _address("0000000000000000FFFF00000100007F:0050") == "127.0.0.1:80"
    assert is_loopback("127.0.0.1:7000") and is_loopback("[::1]:80")
    assert not is_loopback("0.0.0.0:7400") and not is_loopback("192.0.2.2:51094") and not is_loopback("[::]:1")


def sample_run(out: Path, domain: int, network: bool) -> tuple[dict[str, dict[str, str]], subprocess.CompletedProcess]:
    """Run a benchmark and collect, per process the runner started (its children), every
    socket seen while it ran."""
    env = {**os.environ, "CITYSEEKER_ROS_NETWORK": "1" if network else "0"}  # env.NETWORK_SWITCH
    command = [sys.executable, "-m", "cityseeker_ros.cli", "run", "benchmark", "--data",
               str(REPO.parent / "shared" / "data" / "cityseeker" / "HongKong_6"), "--policy", "forward",
               "--limit", "4", "--out", str(out), "--domain-id", str(domain), "--timeout", "240"]
    runner = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    seen: dict[str, dict[str, str]] = {}
    try:
        while runner.poll() is None:
            for pid in _children(runner.pid):
                name = command_line(pid).split(" -m ")[-1].split()[0].rsplit(".", 1)[-1] if command_line(pid) else "?"
                try:
                    sockets = bound_sockets(pid)
                except (FileNotFoundError, ProcessLookupError):
                    continue  # ended meanwhile
                seen.setdefault(f"{name}[{pid}]", {}).update(sockets)
            time.sleep(0.1)
        stdout = runner.communicate(timeout=60)[0]
    finally:
        if runner.poll() is None:
            ros.stop(runner)
    return seen, subprocess.CompletedProcess(command, runner.returncode, stdout)


def test_every_socket_of_a_run_is_bound_to_loopback(hk6, ros_domain, tmp_path):
    seen, result = sample_run(tmp_path / "ros", ros_domain, network=False)
    assert result.returncode == 0, result.stdout + logs(tmp_path / "ros")
    nodes = {name.split("[")[0] for name, sockets in seen.items() if sockets}
    # Every process that speaks DDS was seen with its sockets: the check cannot pass empty.
    assert nodes >= {"streetview_replay", "decision", "supervisor", "evaluator"}, seen
    exposed = {name: [a for a in sockets.values() if not is_loopback(a)] for name, sockets in seen.items()}
    exposed = {name: addresses for name, addresses in exposed.items() if addresses}
    assert not exposed, f"sockets bound beyond loopback: {exposed}"
    print(f"{sum(len(s) for s in seen.values())} sockets in {len(seen)} processes, all on loopback")


def test_the_network_switch_binds_beyond_loopback(hk6, ros_domain, tmp_path):
    """The documented switch does what it says (and shows the check above can fail)."""
    seen, result = sample_run(tmp_path / "ros", ros_domain, network=True)
    assert result.returncode == 0, result.stdout + logs(tmp_path / "ros")
    assert any(not is_loopback(a) for sockets in seen.values() for a in sockets.values()), seen

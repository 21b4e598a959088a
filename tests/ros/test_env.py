"""The ROS process environment: wheel layout, Fast DDS profile, domain leases, re-exec."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.ros import env as ros

PROBE = ("import os, rclpy; rclpy.init(); rclpy.shutdown(); "
         "print(os.environ['RMW_IMPLEMENTATION'], os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'])")


def stripped_env(domain: int) -> dict[str, str]:
    """This environment without the library paths and the RMW, and with the wheels' re-exec
    hook disarmed (on the test's own domain: rclpy.init() joins it)."""
    keep = {k: v for k, v in ros.ros_env(domain).items()
            if k not in ("LD_LIBRARY_PATH", "AMENT_PREFIX_PATH", "RMW_IMPLEMENTATION")}
    return {**keep, "_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1"}


def test_env_names_rmw_discovery_profile_and_domain(monkeypatch):
    monkeypatch.setenv("ROS_LOCALHOST_ONLY", "1")
    monkeypatch.delenv(ros.NETWORK_SWITCH, raising=False)
    env = ros.ros_env(domain_id=123)
    assert env["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"
    # The loopback profile decides discovery: LOCALHOST would add rmw's own unrestricted UDP transport.
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SYSTEM_DEFAULT"
    assert "ROS_LOCALHOST_ONLY" not in env  # deprecated; it would override the range
    assert env["ROS_DOMAIN_ID"] == "123"
    assert env["FASTRTPS_DEFAULT_PROFILES_FILE"] == env["FASTDDS_DEFAULT_PROFILES_FILE"]
    assert env["FASTRTPS_DEFAULT_PROFILES_FILE"] == str(ros.config_file(ros.PROFILE_FILE))
    with pytest.raises(ValueError):
        ros.ros_env(domain_id=233)


def test_one_switch_selects_dds_on_every_interface(monkeypatch):
    for value in ("1", "true"):
        monkeypatch.setenv(ros.NETWORK_SWITCH, value)
        env = ros.ros_env()
        assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"
        assert env["FASTRTPS_DEFAULT_PROFILES_FILE"] == str(ros.config_file(ros.NETWORK_PROFILE_FILE))
        assert ros.ros_env(network=False)["FASTRTPS_DEFAULT_PROFILES_FILE"] == str(ros.config_file(ros.PROFILE_FILE))
    for value in ("", "0"):
        monkeypatch.setenv(ros.NETWORK_SWITCH, value)
        assert ros.ros_env()["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SYSTEM_DEFAULT"
    monkeypatch.setenv(ros.NETWORK_SWITCH, "subnet")
    with pytest.raises(ConfigError, match="CITYSEEKER_ROS_NETWORK must be 1"):
        ros.ros_env()


def test_wheel_libraries_lead_the_library_path():
    if ros.wheel_prefix() is None:
        pytest.skip("ROS does not come from wheels in this environment")
    dirs = ros.library_dirs()
    assert dirs[0] == ros.wheel_prefix() / "lib" and (dirs[0] / "librcl.so").is_file()
    assert any(d.name.startswith("ros_") and d.name.endswith(".libs") for d in dirs[1:])
    env = ros.ros_env(base={"LD_LIBRARY_PATH": "/opt/other"})
    assert env["LD_LIBRARY_PATH"].split(":") == [str(d) for d in dirs] + ["/opt/other"]
    assert env["AMENT_PREFIX_PATH"].split(":")[0] == str(ros.wheel_prefix())
    assert ros.env_ready(env) and not ros.env_ready({})


NS = {"p": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


def used_transports(profile: str) -> list[ET.Element]:
    root = ET.parse(ros.config_file(profile)).getroot()
    participant = root.find("p:participant", NS)
    assert participant.get("is_default_profile") == "true"
    assert participant.findtext("p:rtps/p:useBuiltinTransports", namespaces=NS) == "false"
    used = [e.text for e in participant.iterfind("p:rtps/p:userTransports/p:transport_id", NS)]
    return [t for t in root.iterfind("p:transport_descriptors/p:transport_descriptor", NS)
            if t.findtext("p:transport_id", namespaces=NS) in used]


def test_profiles_enlarge_the_shared_memory_segment_to_32_mb():
    """5 raw 1280x960 views plus a 2048x1024 panorama (25 MB) fit one segment."""
    for profile in (ros.PROFILE_FILE, ros.NETWORK_PROFILE_FILE):
        shm = [t for t in used_transports(profile) if t.findtext("p:type", namespaces=NS) == "SHM"]
        assert [int(t.findtext("p:segment_size", namespaces=NS)) for t in shm] == [32 * 1024 * 1024], profile


def test_default_profile_allows_loopback_only():
    udp = [t for t in used_transports(ros.PROFILE_FILE) if t.findtext("p:type", namespaces=NS) != "SHM"]
    assert udp and all([a.text for a in t.iterfind("p:interfaceWhiteList/*", NS)] == ["127.0.0.1"] for t in udp)
    builtin = ET.parse(ros.config_file(ros.PROFILE_FILE)).getroot().find("p:participant/p:rtps/p:builtin", NS)
    for where in ("metatrafficUnicastLocatorList", "initialPeersList"):  # unicast discovery, no multicast
        assert [a.text for a in builtin.iterfind(f"p:{where}/p:locator/p:udpv4/p:address", NS)] == ["127.0.0.1"]
    assert builtin.find("p:metatrafficMulticastLocatorList", NS) is None
    network = [t for t in used_transports(ros.NETWORK_PROFILE_FILE) if t.findtext("p:type", namespaces=NS) != "SHM"]
    assert network and all(t.find("p:interfaceWhiteList", NS) is None for t in network)


def test_domain_leases_are_exclusive(tmp_path):
    with ros.lease_domain(lock_dir=tmp_path) as a, ros.lease_domain(lock_dir=tmp_path) as b:
        assert a != b and ros.DOMAIN_RANGE[0] <= min(a, b)
    with ros.lease_domain(lock_dir=tmp_path) as again:
        assert again == a  # released at the end of the block
    with ros.lease_domain(5, 5, lock_dir=tmp_path), pytest.raises(RuntimeError, match="in use"):
        with ros.lease_domain(5, 5, lock_dir=tmp_path):
            pass


def test_a_process_started_with_the_env_loads_rclpy_and_one_without_cannot(ros_env, ros_domain):
    if ros.wheel_prefix() is None:
        pytest.skip("ROS does not come from wheels in this environment")
    ok = subprocess.run([sys.executable, "-c", PROBE], env=ros_env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == ["rmw_fastrtps_cpp", "SYSTEM_DEFAULT"]
    bare = subprocess.run([sys.executable, "-c", PROBE], env=stripped_env(ros_domain), capture_output=True,
                          text=True, timeout=60)
    assert bare.returncode != 0 and "cannot open shared object file" in bare.stderr


def test_reexec_puts_a_running_process_into_the_env(ros_domain):
    if ros.wheel_prefix() is None:
        pytest.skip("ROS does not come from wheels in this environment")
    code = "from cityseeker_ros.ros.env import reexec_with_ros_env; reexec_with_ros_env(); " + PROBE
    out = subprocess.run([sys.executable, "-c", code], env=stripped_env(ros_domain), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["rmw_fastrtps_cpp", "SYSTEM_DEFAULT"]


def test_shell_exports_for_running_nodes_by_hand(capsys):
    ros.main(["--domain", "42"])
    lines = capsys.readouterr().out.splitlines()
    exports = dict(line.removeprefix("export ").split("=", 1) for line in lines)
    assert exports["ROS_DOMAIN_ID"] == "42" and exports["RMW_IMPLEMENTATION"] == "rmw_fastrtps_cpp"
    assert {"ROS_AUTOMATIC_DISCOVERY_RANGE", "FASTRTPS_DEFAULT_PROFILES_FILE"} <= set(exports)
    ros.main(["--network"])
    exports = dict(line.removeprefix("export ").split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert exports["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET" and exports[ros.NETWORK_SWITCH] == "1"


def test_only_dead_owners_segments_are_removed(tmp_path):
    import fcntl

    alive, dead = tmp_path / "fastrtps_aaaa", tmp_path / "fastrtps_bbbb"
    for segment in (alive, dead):
        segment.write_bytes(b"x")
        (tmp_path / f"{segment.name}_el").write_bytes(b"")
    (tmp_path / "fastrtps_port7000").write_bytes(b"")
    assert ros.shm_segments(tmp_path) == {alive, dead}
    with open(tmp_path / "fastrtps_aaaa_el", "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # what a live participant does
        # flock locks are per open file description: a second open in this process conflicts too
        assert ros.remove_stale_shm({alive, dead}) == [dead]
    assert alive.exists() and not dead.exists() and not (tmp_path / "fastrtps_bbbb_el").exists()


def test_a_process_that_dies_with_its_parent_is_out_of_the_terminals_reach():
    """A terminal's Ctrl-C goes to its foreground process group: a node started by the runner
    must not get it too (it would die before the Seek client could cancel its goal)."""
    child = ros.spawn([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), die_with_parent=True)
    try:
        assert os.getsid(child.pid) == child.pid != os.getsid(0)
        assert os.getpgid(child.pid) != os.getpgid(0)
    finally:
        ros.stop(child)
    assert child.returncode is not None

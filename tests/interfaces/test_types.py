"""The installed cityseeker_interfaces: the same definitions as the repository's, every message
and action importable through rclpy, each with its Jazzy (RIHS01) type hash on the wire and a
type description from ~/get_type_description."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from cityseeker_ros.ros import bag_interfaces as interfaces
from cityseeker_ros.ros import env as ros
from tests.ros.conftest import REPO

SOURCE = REPO / "cityseeker_interfaces"


def installed_share(env: dict[str, str]) -> Path:
    return interfaces.share_dir(env.get("AMENT_PREFIX_PATH", "").split(os.pathsep))


def source_types() -> list[str]:
    names = [f"cityseeker_interfaces/msg/{p.stem}" for p in sorted((SOURCE / "msg").glob("*.msg"))]
    return names + [f"cityseeker_interfaces/action/{p.stem}" for p in sorted((SOURCE / "action").glob("*.action"))]


def recorded_hashes(share: Path) -> dict[str, str]:
    """type name -> RIHS01 hash, as rosidl wrote them next to the definitions at build time."""
    return {h["type_name"]: h["hash_string"] for path in share.glob("*/*.json")
            for h in json.loads(path.read_text())["type_hashes"]}


def test_installed_definitions_are_the_repository_s(ros_env):
    share = installed_share(ros_env)
    for kind, suffix in (("msg", ".msg"), ("action", ".action")):
        source = {p.name: p.read_text() for p in (SOURCE / kind).glob(f"*{suffix}")}
        built = {p.name: p.read_text() for p in (share / kind).glob(f"*{suffix}")}
        assert source, f"no {suffix} files in {SOURCE / kind}"
        stale = sorted(n for n in source.keys() | built.keys() if source.get(n) != built.get(n))
        assert not stale, f"{share} differs from the repository in {stale}: reinstall (pip install -e .)"
    cmake_list = (SOURCE / "CMakeLists.txt").read_text()
    missing = [p.relative_to(SOURCE).as_posix() for kind in ("msg", "action") for p in (SOURCE / kind).iterdir()
               if f'"{p.relative_to(SOURCE).as_posix()}"' not in cmake_list]
    assert not missing, f"CMakeLists.txt does not generate {missing}"


def test_every_type_imports_through_rclpy_with_its_jazzy_hash(ros_env, tmp_path):
    names = source_types()
    (tmp_path / "types.json").write_text(json.dumps(names))
    done = ros.spawn(ros.python_module_command("tests.interfaces.inspect_types", str(tmp_path / "types.json"),
                                               str(tmp_path / "out.json")), ros_env, cwd=REPO)
    try:
        assert done.wait(120) == 0, "inspect_types failed (its output is above)"
    finally:
        ros.stop(done)
    report = json.loads((tmp_path / "out.json").read_text())
    expected = recorded_hashes(installed_share(ros_env))
    assert sorted(report) == sorted(names)
    for name, got in report.items():
        assert got["hash"].startswith("RIHS01_") and got["hash"] != "RIHS01_" + "0" * 64, (name, got)
        assert got["hash"] == expected[got["wire_name"]], name
        description = got["description"]
        assert description["ok"] and description["type_name"] == got["wire_name"], (name, description)
        assert description["fields"], name
    # The actions' parts are the generated classes; a feedback message nests the feedback.
    assert report["cityseeker_interfaces/action/Seek"]["parts"] == {
        "goal": "Seek_Goal", "result": "Seek_Result", "feedback": "Seek_Feedback"}
    assert report["cityseeker_interfaces/action/Seek"]["description"]["fields"] == ["goal_id", "feedback"]
    assert "cityseeker_interfaces/msg/GeoPoint" in report["cityseeker_interfaces/msg/ViewSet"]["description"]["sources"]



def test_package_xml_is_a_format_3_interface_package():
    root = ET.parse(SOURCE / "package.xml").getroot()
    assert root.get("format") == "3" and root.findtext("name") == "cityseeker_interfaces"
    assert root.findtext("export/build_type") == "ament_cmake"
    assert root.findtext("member_of_group") == "rosidl_interface_packages"
    # Every message package the definitions use is a dependency of both package.xml and CMake.
    cmake = (SOURCE / "CMakeLists.txt").read_text()
    dependencies = cmake.split("DEPENDENCIES", 1)[1].split(")", 1)[0].split()
    used = {line.split()[0].split("/")[0] for p in [*(SOURCE / "msg").iterdir(), *(SOURCE / "action").iterdir()]
            for line in p.read_text().splitlines() if "/" in line.split("#")[0]}
    assert used <= set(dependencies) <= {e.text for e in root.findall("depend")}
    assert {"action_msgs", "builtin_interfaces"} <= set(dependencies)

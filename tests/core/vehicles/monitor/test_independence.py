"""The monitor is an independent oracle: it never imports the bridge, its gate, geofence and limits, the
motion door, the authority machine or the MAVLink link, neither in its source nor when it runs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cityseeker_ros
from tests.import_rules import imports

PACKAGE = Path(cityseeker_ros.__file__).parent
MONITOR = "cityseeker_ros.core.vehicles.monitor"
FORBIDDEN = ("cityseeker_ros.core.vehicles.bridge", "cityseeker_ros.core.vehicles.motion_door",
             "cityseeker_ros.core.vehicles.authority", "cityseeker_ros.core.vehicles.safety",
             "cityseeker_ros.core.vehicles.mavlink", "cityseeker_ros.core.vehicles.link",
             "cityseeker_ros.core.vehicles.airsim", "cityseeker_ros.core.vehicles.sim")


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_its_source_imports_none_of_the_bridge():
    edges = [e for e in imports(PACKAGE) if e.source == MONITOR or e.source.startswith(MONITOR + ".")]
    assert {e.source for e in edges} >= {f"{MONITOR}.monitor", f"{MONITOR}.mavlink_wire", f"{MONITOR}.command"}
    assert [str(e) for e in edges if _forbidden(e.target)] == []


def test_running_it_loads_none_of_the_bridge():
    code = (f"import sys, json; import {MONITOR}, {MONITOR}.mavlink_wire, {MONITOR}.command, {MONITOR}.report; "
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       cwd=PACKAGE.parent).stdout)
    assert [m for m in loaded if _forbidden(m)] == []

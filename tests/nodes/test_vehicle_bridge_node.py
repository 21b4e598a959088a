"""nodes/vehicle_bridge.py's own checks, on the walker link, in one child process
(tests/nodes/bridge_probe.py builds the node and calls its inputs without spinning it).

- A velocity tagged "ned" or "base_link" was flown as ENU, and a command stamped 1970 (or an hour
  ahead) was flown as new. Now neither reaches `VehicleBridge.command()` (no decision: the watchdog
  is not fed, the command in force stays), the refusal is one log line per kind in a row, and
  ~/safety's reason carries it until a command passes. A hold is never refused.
- A link loss left no line in the bridge's log: errors were throttled to one per 10 s, and the
  "connecting" line at start had used it. Now a loss and a return each leave exactly one line.
"""
from __future__ import annotations

import json
import subprocess

from cityseeker_ros.ros import env as ros
from tests.ros.conftest import REPO

REFUSED = {"velocity ned": "bad_frame", "velocity base_link": "bad_frame", "goal 1970": "stale_command",
           "goal 1970-01-02": "stale_command", "goal an hour ahead": "stale_command",
           "goal 5 s old": "stale_command"}
PASSED = {"goal now": "Goal", "velocity enu": "Velocity", "hold 1970": "Hold"}


def run_probe(module: str, ros_env: dict[str, str], out, *args: str) -> tuple[dict, dict[str, list[str]]]:
    """A probe module run in a child process: its JSON report (written to `out`) and its log lines by
    phase (a line "@@ PHASE NAME" starts one)."""
    env = {**ros_env, "RCUTILS_LOGGING_BUFFERED_STREAM": "0", "RCUTILS_COLORIZED_OUTPUT": "0"}
    done = subprocess.run(ros.python_module_command(module, str(out), *args),
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    phases: dict[str, list[str]] = {}
    current = "START"
    for line in done.stderr.splitlines():
        if line.startswith("@@ PHASE "):
            current = line.split()[-1]
            continue
        phases.setdefault(current, []).append(line)
    return json.loads(out.read_text()), phases


def probe(ros_env: dict[str, str], tmp_path) -> tuple[dict, dict[str, list[str]]]:
    """The bridge probe's report, and its log lines by phase."""
    return run_probe("tests.nodes.bridge_probe", ros_env, tmp_path / "probe.json", str(tmp_path / "estop.json"))


def test_wrong_frames_and_stale_stamps_never_reach_the_bridge(ros_env, tmp_path):
    report, phases = probe(ros_env, tmp_path)
    commands = {c["name"]: c for c in report["commands"]}
    for name, code in REFUSED.items():
        c = commands[name]
        assert c["reached"] == [], (name, c)
        assert c["latest"] == "Hold", (name, c)  # the bridge still holds: the refused command replaced nothing
        assert f"last command refused ({code})" in c["safety"], (name, c)
    for name, kind in PASSED.items():
        assert commands[name]["reached"] == [kind], (name, commands[name])
        assert "refused" not in commands[name]["safety"], (name, commands[name])
    refusals = [line for line in phases.get("ENVELOPE", []) if "command refused" in line]
    # one line per kind of refusal in a row: the two frames, then the four stamps
    assert len(refusals) == 2, refusals
    assert "bad_frame" in refusals[0] and "'ned'" in refusals[0] and "stale_command" in refusals[1], refusals


def test_a_link_loss_and_its_return_each_leave_exactly_one_line(ros_env, tmp_path):
    _, phases = probe(ros_env, tmp_path)
    status_lines = {name: [line for line in lines if "status " in line] for name, lines in phases.items()}
    loss, back = status_lines.get("LOSS", []), status_lines.get("BACK", [])
    print("\n" + "\n".join(status_lines.get("WARM", []) + loss + back))
    assert len(loss) == 1 and "link_error (was ok)" in loss[0] and "no vehicle state" in loss[0], loss
    assert len(back) == 1 and "status ok (was link_error)" in back[0], back

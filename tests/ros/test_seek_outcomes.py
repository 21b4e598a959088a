"""Every end of a Seek as a client reads it (the result message, the client's outcome, the line
`cityseeker seek` prints, its exit code), in one child process (tests/ros/seek_outcome_probe.py).
A pilot's takeover ended FAILED with code pilot_override, a lost link was not an end at all: now
each has its own outcome, line and exit code, so a client can tell them from a failure; the
outcomes that were there keep their numbers."""
from __future__ import annotations

import json
import subprocess

from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.seek_outcome import (
    EXIT_ENDED,
    EXIT_LINK_LOST,
    EXIT_PILOT_OVERRIDE,
    EXIT_SUCCEEDED,
)
from tests.ros.conftest import REPO

EXPECTED = {  # core end: (client outcome, the line's first words, exit code)
    "stopped": ("found", "arrived", EXIT_SUCCEEDED), "answered": ("answered", "answered", EXIT_SUCCEEDED),
    "budget": ("budget", "budget spent", EXIT_SUCCEEDED), "cancelled": ("cancelled", "cancelled", EXIT_ENDED),
    "stalled": ("failed", "failed (stalled)", EXIT_ENDED), "estop": ("failed", "failed (estop)", EXIT_ENDED),
    "error": ("failed", "failed (error)", EXIT_ENDED),
    "pilot_override": ("pilot_override", "pilot took over", EXIT_PILOT_OVERRIDE),
    "link_lost": ("link_lost", "link lost", EXIT_LINK_LOST),
}


def test_a_pilots_takeover_and_a_lost_link_are_ends_of_their_own(ros_env, tmp_path):
    out = tmp_path / "outcomes.json"
    done = subprocess.run(ros.python_module_command("tests.ros.seek_outcome_probe", str(out)), env=ros_env,
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report.pop("constants") == {"FOUND": 0, "BUDGET": 1, "CANCELLED": 2, "FAILED": 3, "REJECTED": 4,
                                       "ANSWERED": 5, "PILOT_OVERRIDE": 6, "LINK_LOST": 7}
    assert sorted(report) == sorted(EXPECTED)
    for end, (outcome, words, code) in EXPECTED.items():
        got = report[end]
        assert (got["client"], got["code"], got["exit"]) == (outcome, end, code), (end, got)
        assert got["line"].startswith(f"{words} after 0 steps at n1"), (end, got)
    assert report["pilot_override"]["status"] == report["link_lost"]["status"] == "aborted"

"""Test helper, run as its own ROS process: `python -m tests.ros.seek_outcome_probe OUT.json`.

Every end the core's Seek can have (core.loop.seek.OUTCOMES) through the server's result message
(nodes/supervisor_actions.seek_result) and back through the client (nodes/seek_client.outcome_of):
the outcome and code a client reads, the line `cityseeker seek` prints and its exit code.
"""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace

from action_msgs.msg import GoalStatus

from cityseeker_interfaces.action import Seek
from cityseeker_ros.core.loop.seek import OUTCOMES, SeekResult
from cityseeker_ros.nodes.seek_client import outcome_of
from cityseeker_ros.nodes.supervisor_actions import seek_result
from cityseeker_ros.ros.seek_outcome import exit_code

SUCCEEDED = (Seek.Result.FOUND, Seek.Result.BUDGET, Seek.Result.ANSWERED)  # as SeekServer._execute ends them


def main() -> None:
    world = SimpleNamespace(graph=SimpleNamespace(nodes={"n1": SimpleNamespace(lat=43.7, lon=7.4)}))
    report = {"constants": {name: getattr(Seek.Result, name) for name in (
        "FOUND", "BUDGET", "CANCELLED", "FAILED", "REJECTED", "ANSWERED", "PILOT_OVERRIDE", "LINK_LOST")}}
    for outcome in OUTCOMES:
        result = SeekResult("seek-1", "water", outcome, None, f"{outcome}: why", "n1", 43.7, 7.4, ("n1",), 0, 0.0)
        msg = seek_result(result, world, (43.7, 7.4))
        status = GoalStatus.STATUS_SUCCEEDED if msg.outcome in SUCCEEDED else GoalStatus.STATUS_ABORTED
        client = outcome_of(status, msg, [])
        report[outcome] = {"outcome": msg.outcome, "client": client.outcome, "code": client.code,
                           "status": client.status, "line": client.line(), "exit": exit_code(client)}
    with open(sys.argv[1], "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()

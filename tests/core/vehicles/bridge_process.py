"""A vehicle bridge in a process of its own, for the test that SIGKILLs it: the MAVLink link and a
`VehicleBridge` whose e-stop latch lives in a file. Like a decision loop it repeats one goal every
50 ms; it trips the e-stop when the trip file appears and resets it when the reset file appears, and
after every loop it rewrites the status file (one JSON object, replaced atomically).

    python -m tests.core.vehicles.bridge_process --endpoint udp://127.0.0.1:14540 --latch estop.json \\
        --trip trip --reset reset --status status.json --goal 47.3979,8.5456,5 --safety '{"geofence": ...}'
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, VehicleBridge
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.safety import EStop, Goal, LatchFile, SafetyConfig, SafetyGate


def write_status(path: Path, bridge: VehicleBridge, **extra: object) -> None:
    status = bridge.status()
    record = {"t": time.monotonic(), "pid": os.getpid(), "code": status.code, "moving": status.moving,
              "estop": status.estop, "connected": status.connected, "reason": status.reason,
              "stops": list(bridge.stops), **extra}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.core.vehicles.bridge_process")
    for name in ("endpoint", "latch", "trip", "reset", "status", "goal", "safety"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--takeoff", type=float, default=0.0, help="arm and climb to this height first (0: no)")
    args = parser.parse_args()
    status_file, trip, reset = Path(args.status), Path(args.trip), Path(args.reset)
    lat, lon, alt = (float(v) for v in args.goal.split(","))
    gate = SafetyGate.from_config(SafetyConfig.from_dict(json.loads(args.safety)),
                                  estop=EStop(LatchFile(args.latch)))
    bridge = VehicleBridge(MavlinkLink(args.endpoint), gate)
    decisions, tripped, was_reset = 0, False, False
    while not (bridge.connected and bridge.status().code != LINK_ERROR and bridge.stops):
        write_status(status_file, bridge, decisions=0)
        time.sleep(0.05)
    if args.takeoff > 0:
        bridge.link.arm()
        bridge.link.takeoff(args.takeoff, timeout_s=15.0)
    while True:
        if trip.exists() and not tripped:
            bridge.trip_estop("test", "trip file")
            tripped = True
        if reset.exists() and not was_reset:
            was_reset = bridge.reset_estop().ok
        bridge.command(Goal(lat, lon, alt))
        decisions += 1
        write_status(status_file, bridge, decisions=decisions, tripped=tripped, reset=was_reset)
        time.sleep(0.05)


if __name__ == "__main__":
    raise SystemExit(main())

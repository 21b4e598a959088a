"""The independent flight-rules monitor (docs/vehicles.md): named rules checked on what left the stack
and what the vehicle reported, never on the bridge's own account of itself. It imports nothing of the
bridge, its gate, geofence, limits or the MAVLink link (tests/core/vehicles/monitor/test_independence.py).

    monitor = FlightMonitor(load_limits("config/safety.yaml"))
    for obs in stream:  # Sent, Reported, Decision, Marker in time order
        for violation in monitor.feed(obs):
            ...
    monitor.finish(t_end)

Live, beside a bridge (live.py, taps.py): `LiveMonitor` judges on its own thread what several threads feed
it; `LiveMonitor.mavlink_tap()` reads a MAVLink connection's wire, `MonitoredLink` a link without one.
"""
from __future__ import annotations

from cityseeker_ros.core.vehicles.monitor.limits import FlightLimits, limits_from_dict, load_limits
from cityseeker_ros.core.vehicles.monitor.live import LiveMonitor
from cityseeker_ros.core.vehicles.monitor.monitor import FlightMonitor, MonitorSettings, RuleStatus, refusal
from cityseeker_ros.core.vehicles.monitor.observations import (
    Decision,
    Marker,
    Observation,
    Reported,
    Sent,
    Violation,
)
from cityseeker_ros.core.vehicles.monitor.rules import RULES, Rule
from cityseeker_ros.core.vehicles.monitor.taps import MonitoredLink

__all__ = ["RULES", "Decision", "FlightLimits", "FlightMonitor", "LiveMonitor", "Marker", "MonitorSettings",
           "MonitoredLink", "Observation", "Reported", "Rule", "RuleStatus", "Sent", "Violation", "limits_from_dict",
           "load_limits", "refusal"]

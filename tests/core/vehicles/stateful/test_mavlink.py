"""Randomized stateful safety scenarios on the MAVLink link, PX4 and ArduPilot flavours, over real
MAVLink 2 on loopback UDP against the shipped simulator (rig_mavlink.py); the monitor decides."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.core.vehicles.stateful.machine import SafetyMachine
from tests.core.vehicles.stateful.rig_mavlink import MavlinkRig

SCENARIOS = int(os.environ.get("SAFETY_SCENARIOS", "6"))
SETTINGS = settings(max_examples=SCENARIOS, stateful_step_count=10, deadline=None,
                    suppress_health_check=list(HealthCheck), derandomize=True)


class Px4Rig(MavlinkRig):
    flavour = "px4"


class ArduPilotRig(MavlinkRig):
    flavour = "ardupilot"


class Px4Safety(SafetyMachine):
    rig_factory = Px4Rig


class ArduPilotSafety(SafetyMachine):
    rig_factory = ArduPilotRig


TestPx4Safety = Px4Safety.TestCase
TestPx4Safety.settings = SETTINGS
TestArduPilotSafety = ArduPilotSafety.TestCase
TestArduPilotSafety.settings = SETTINGS

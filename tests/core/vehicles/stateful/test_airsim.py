"""Randomized stateful safety scenarios on the AirSim link in fly mode (rig_airsim.py: AirSim's RPC
layer faked with its task rule); the monitor decides."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.core.vehicles.stateful.machine import SafetyMachine
from tests.core.vehicles.stateful.rig_airsim import AirSimRig

SCENARIOS = int(os.environ.get("SAFETY_SCENARIOS", "8"))


class AirSimSafety(SafetyMachine):
    rig_factory = AirSimRig


TestAirSimSafety = AirSimSafety.TestCase
TestAirSimSafety.settings = settings(max_examples=SCENARIOS, stateful_step_count=10, deadline=None,
                                     suppress_health_check=list(HealthCheck), derandomize=True)

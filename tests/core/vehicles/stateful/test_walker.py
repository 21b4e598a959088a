"""Randomized stateful safety scenarios on the walker (rig_walker.py); the monitor decides."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.core.vehicles.stateful.machine import SafetyMachine
from tests.core.vehicles.stateful.rig_walker import WalkerRig

SCENARIOS = int(os.environ.get("SAFETY_SCENARIOS", "12"))


class WalkerSafety(SafetyMachine):
    rig_factory = WalkerRig


TestWalkerSafety = WalkerSafety.TestCase
TestWalkerSafety.settings = settings(max_examples=SCENARIOS, stateful_step_count=10, deadline=None,
                                     suppress_health_check=list(HealthCheck), derandomize=True)

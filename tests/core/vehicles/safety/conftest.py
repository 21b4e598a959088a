"""A hand-driven clock and a safety config around the tiny city (near lat 0, lon 0)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.vehicles.safety import SafetyConfig, SafetyGate

M_PER_DEG_LAT = 110574.3  # at the equator, as tests/conftest.py lays out the tiny city


class FakeClock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def north_of_origin(metres: float) -> float:
    return metres / M_PER_DEG_LAT


CIRCLE = {"circle": {"center": [0.0, 0.0], "radius_m": 100.0}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def config() -> SafetyConfig:
    return SafetyConfig.from_dict({"geofence": CIRCLE, "decision_timeout_s": 3.0, "heartbeat_timeout_s": 2.0,
                                   "max_speed_m_s": 3.0, "max_vertical_speed_m_s": 1.0, "max_altitude_m": 40.0})


@pytest.fixture
def gate(config, clock) -> SafetyGate:
    return SafetyGate.from_config(config, clock)

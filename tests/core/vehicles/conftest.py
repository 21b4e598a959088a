"""Fixtures shared by the bridge tests."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.vehicles.bridge import VehicleBridge


@pytest.fixture
def made():
    """Bridges a test made, closed after it (a bridge left running would fly on)."""
    bridges: list[VehicleBridge] = []
    yield bridges
    for b in bridges:
        b.close()

"""Fixtures for the AirSim bridge: the protocol fake (see fake_airsim.py) and each installed client."""
from __future__ import annotations

import importlib.util

import pytest

from tests.core.vehicles.airsim.fake_airsim import FakeAirSim
from tests.core.vehicles.airsim.vehicle_on_fake import fake_vehicle

INSTALLED = [name for name in ("cosysairsim", "airsim") if importlib.util.find_spec(name) is not None]


@pytest.fixture
def fake():
    server = FakeAirSim()
    yield server
    server.close()


@pytest.fixture(params=INSTALLED or [pytest.param("cosysairsim", marks=pytest.mark.skip("no AirSim client"))])
def client_name(request) -> str:
    """Every installed client library, so both speak to the same fake; the test extra installs cosysairsim."""
    return request.param


@pytest.fixture
def airsim_fly():
    """A connected AirSimVehicleLink in fly mode on a fresh fake, and what it saw
    (vehicle_on_fake.py: `.link`, `.fake`, `.seen()`)."""
    with fake_vehicle() as vehicle:
        yield vehicle

"""The one error every AirSim module raises, apart from the link so the motion gate can raise it too."""
from __future__ import annotations

from cityseeker_ros.core.vehicles.link import LinkError


class AirSimError(LinkError):
    """AirSim is unreachable or refused a call; the message names host:port and the call."""

"""The errors AirSim modules raise, apart from the link so every module can raise them."""
from __future__ import annotations

from cityseeker_ros.core.vehicles.link import LinkError


class AirSimError(LinkError):
    """AirSim is unreachable or refused a call; the message names host:port and the call."""


class MotionRefused(Exception):
    """A call that moves the vehicle, made on a link that only poses the camera (the view source's).
    Not an AirSimError: a mistake in the code, never a link failure to retry."""

"""PX4 and ArduPilot vehicles over MAVLink 2, and a MAVLink vehicle simulator to test them against.

Importing this package registers the "mavlink" vehicle link; pymavlink (the `mavlink` extra) loads
only when a link is made, so the stack imports without it. docs/mavlink_choice.md says why pymavlink.
"""
from __future__ import annotations

from typing import Any

from cityseeker_ros.core.vehicles.link import LINKS, LinkError, VehicleLink


@LINKS.register("mavlink")
def make_mavlink_link(**params: Any) -> VehicleLink:
    """`MavlinkLink(**params)`; see cityseeker_ros.core.vehicles.mavlink.link for the parameters."""
    try:
        from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
    except ImportError as exc:
        if not (exc.name or "").startswith("pymavlink"):
            raise
        raise LinkError("the mavlink vehicle link needs pymavlink: pip install 'cityseeker_ros[mavlink]'") from None
    return MavlinkLink(**params)

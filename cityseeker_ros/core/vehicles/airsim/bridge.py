"""Where the bridge status lived before the generic bridge (core/vehicles/bridge.py): the names
ros/schema.py and ros/typed.py still import from here. Nothing AirSim-specific is left; import
them from cityseeker_ros.core.vehicles.bridge."""
from __future__ import annotations

from cityseeker_ros.core.vehicles.bridge import LINK_ERROR, UNSUPPORTED, BridgeStatus, status_level

__all__ = ["LINK_ERROR", "UNSUPPORTED", "BridgeStatus", "status_level"]

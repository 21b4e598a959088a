"""Safety for live trials: decision watchdog, supervisor heartbeat, geofence, speed/altitude limits
and a latching e-stop, combined by `SafetyGate`. rclpy-free; the ROS node only converts messages."""
from cityseeker_ros.core.vehicles.safety.codes import Check, SafetyCode
from cityseeker_ros.core.vehicles.safety.commands import HOLD, Command, Goal, Hold, Velocity
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.estop import EStop
from cityseeker_ros.core.vehicles.safety.gate import SafetyGate, Verdict
from cityseeker_ros.core.vehicles.safety.geofence import CircleFence, Geofence, PolygonFence, geofence_from_dict
from cityseeker_ros.core.vehicles.safety.latch_file import LatchFile
from cityseeker_ros.core.vehicles.safety.limits import Limits
from cityseeker_ros.core.vehicles.safety.watchdog import DecisionWatchdog, Heartbeat

__all__ = [
    "HOLD", "Check", "CircleFence", "Command", "DecisionWatchdog", "EStop", "Geofence", "Goal", "Heartbeat",
    "Hold", "LatchFile", "Limits", "PolygonFence", "SafetyCode", "SafetyConfig", "SafetyGate", "Velocity", "Verdict",
    "geofence_from_dict",
]

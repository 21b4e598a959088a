"""Where the vehicle stands on the street graph, from GNSS fixes or odometry. rclpy-free, so the
ROS node only converts NavSatFix/Odometry messages and calls `GraphLocaliser`."""
from cityseeker_ros.core.sensing.localisation.graph_localiser import (
    GraphLocaliser,
    Localisation,
    LocalisationStatus,
    WalkableHeading,
)

__all__ = ["GraphLocaliser", "Localisation", "LocalisationStatus", "WalkableHeading"]

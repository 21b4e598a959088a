"""Simulated hardware that ships with the project, so the camera and Seek paths run end to end
with no vehicle: a walker with a GNSS receiver that follows motion goals, and the field of nodes
around a live supervisor loop (localiser, camera view sets, a policy) in one process."""
from cityseeker_ros.core.vehicles.sim.field import PolicyDecider, SimulatedField
from cityseeker_ros.core.vehicles.sim.link import WalkerLink  # registers the "walker" link
from cityseeker_ros.core.vehicles.sim.walker import SimulatedWalker

__all__ = ["PolicyDecider", "SimulatedField", "SimulatedWalker", "WalkerLink"]

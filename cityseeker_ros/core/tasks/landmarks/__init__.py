"""Landmark goals (PReP): the goal given by its relations to landmarks seen from it."""
from cityseeker_ros.core.tasks.family import FAMILIES
from cityseeker_ros.core.tasks.landmarks.family import LandmarksFamily

FAMILIES.register("landmarks")(LandmarksFamily())

__all__ = ["LandmarksFamily"]

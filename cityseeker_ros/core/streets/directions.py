"""Relative direction labels for views, with right meaning clockwise (the reference swaps them)."""
from __future__ import annotations

from enum import Enum

from cityseeker_ros.core.streets.geodesy import circular_difference


class RelativeDirection(str, Enum):
    FRONT = "FRONT"
    FRONT_RIGHT = "FRONT_RIGHT"
    RIGHT = "RIGHT"
    BACK_RIGHT = "BACK_RIGHT"
    BACK = "BACK"
    BACK_LEFT = "BACK_LEFT"
    LEFT = "LEFT"
    FRONT_LEFT = "FRONT_LEFT"


# Sectors of 45 degrees centred on 0, 45, ... clockwise from the facing direction.
_CLOCKWISE = list(RelativeDirection)


def relative_direction(heading_deg: float, facing_deg: float) -> RelativeDirection:
    """Label of `heading_deg` seen by an agent facing `facing_deg` (both clockwise from north)."""
    offset = circular_difference(heading_deg, facing_deg) % 360.0
    return _CLOCKWISE[int(((offset + 22.5) % 360.0) // 45.0)]

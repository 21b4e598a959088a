"""Landmark relations in words: "about 300 m north-east of St Nicholas Cathedral".

A relation states where a subject (the goal, or another landmark) lies as seen from a landmark:
an 8-point compass word and a rounded distance. Each word carries its tolerance, so a checker
can verify the words against the map and an agent knows how far to trust them:

- direction: the compass point nearest the true bearing, +-22.5 degrees (half a 45-degree sector);
- distance: rounded to 10 m below 100 m, 50 m below 1 km, 100 m beyond, +-half the step of the
  stated number (so the words alone give the tolerance: "about 100 m" is +-25 m even where 98 m
  was rounded up to it).

True bearings and distances are WGS84 geodesics from the landmark's point to the subject's.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional

from cityseeker_ros.core.streets.geodesy import WGS84, circular_difference

COMPASS: tuple[str, ...] = ("north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west")
SECTOR_DEG = 360.0 / len(COMPASS)
DIRECTION_TOLERANCE_DEG = SECTOR_DEG / 2.0
# (below this many metres, round to this step); beyond the last, the last step.
DISTANCE_STEPS: tuple[tuple[float, float], ...] = ((100.0, 10.0), (1000.0, 50.0), (math.inf, 100.0))
# Closer than this, a direction says little (the goal is at the landmark's foot): no relation is stated.
MIN_RELATION_M = 20.0
GOAL = "goal"  # the subject of a goal relation


def compass_word(bearing_deg: float) -> str:
    """The 8-point compass word nearest `bearing_deg` (degrees clockwise from north)."""
    return COMPASS[int(math.floor((float(bearing_deg) % 360.0) / SECTOR_DEG + 0.5)) % len(COMPASS)]


def word_bearing(word: str) -> float:
    """The bearing a compass word names (its sector's centre)."""
    try:
        return COMPASS.index(word) * SECTOR_DEG
    except ValueError:
        raise ValueError(f"unknown direction word {word!r}; known: {', '.join(COMPASS)}") from None


def distance_step(distance_m: float) -> float:
    return next(step for below, step in DISTANCE_STEPS if distance_m < below)


def stated_distance(distance_m: float) -> tuple[int, float]:
    """(the rounded distance a relation states, its tolerance in metres: half the step of the
    stated number, never less than half the step it was rounded by)."""
    step = distance_step(distance_m)
    stated = int(round(distance_m / step) * step)
    return stated, max(step, distance_step(stated)) / 2.0


def bearing_distance(lat1: float, lon1: float, lat2: float, lon2: float) -> tuple[float, float]:
    """Geodesic bearing (degrees clockwise from north) and distance (m) from point 1 to point 2."""
    az, _, dist = WGS84.inv(lon1, lat1, lon2, lat2)
    return float(az) % 360.0, float(dist)


@dataclass(frozen=True)
class Relation:
    """`subject` lies `direction` of landmark `landmark` at about `distance_m`. The true
    `bearing_deg` and `true_distance_m` (from the landmark to the subject) travel with it so that
    reports can show how far each word is from the truth; a checker recomputes them itself."""

    subject: str  # GOAL, or the id of the landmark placed by this relation
    subject_name: str
    landmark: str  # the id of the landmark it is measured from
    landmark_name: str
    direction: str
    distance_m: int
    bearing_deg: Optional[float] = None  # None where an agent is told the relation (public_details)
    true_distance_m: Optional[float] = None
    direction_tolerance_deg: float = DIRECTION_TOLERANCE_DEG
    distance_tolerance_m: float = 0.0

    @classmethod
    def measure(cls, subject: str, subject_name: str, landmark: str, landmark_name: str,
                landmark_latlon: tuple[float, float], subject_latlon: tuple[float, float]) -> Relation:
        bearing, dist = bearing_distance(*landmark_latlon, *subject_latlon)
        stated, tolerance = stated_distance(dist)
        return cls(subject, subject_name, landmark, landmark_name, compass_word(bearing), stated,
                   round(bearing, 3), round(dist, 2), DIRECTION_TOLERANCE_DEG, tolerance)

    def phrase(self) -> str:
        """"about 300 m north-east of St Nicholas Cathedral"."""
        return f"about {self.distance_m} m {self.direction} of {self.landmark_name}"

    def holds(self, bearing_deg: float, distance_m: float) -> bool:
        """Whether a true bearing and distance fit the stated words within their tolerances."""
        return (abs(circular_difference(bearing_deg, word_bearing(self.direction))) <= self.direction_tolerance_deg
                and abs(distance_m - self.distance_m) <= self.distance_tolerance_m)

    def offset_xy(self) -> tuple[float, float]:
        """The stated displacement from the landmark to the subject, (east, north) in metres."""
        return polar_xy(word_bearing(self.direction), float(self.distance_m))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Relation:
        rel = cls(**doc)
        word_bearing(rel.direction)  # an unknown word fails here, naming the known ones
        return rel


def polar_xy(bearing_deg: float, distance_m: float) -> tuple[float, float]:
    """(east, north) metres of a displacement `distance_m` along `bearing_deg`."""
    b = math.radians(bearing_deg)
    return distance_m * math.sin(b), distance_m * math.cos(b)


def xy_bearing_distance(dx: float, dy: float) -> tuple[float, float]:
    """Bearing (degrees clockwise from north) and length of an (east, north) displacement."""
    return math.degrees(math.atan2(dx, dy)) % 360.0, math.hypot(dx, dy)


def sentence(subject_name: str, relations: list[Relation]) -> str:
    """"The goal is about 300 m north-east of A and about 120 m south of B."."""
    phrases = [r.phrase() for r in relations]
    joined = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return f"{subject_name} is {joined}."

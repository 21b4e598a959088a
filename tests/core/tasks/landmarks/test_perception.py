"""Landmarks found by colour: bearing from the column, distance from the apparent size."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.streets.geodesy import destination
from cityseeker_ros.core.tasks.landmarks.perception import LandmarkLook, find_in_panorama, find_in_view
from cityseeker_ros.core.worlds.scene import Landmark
from tests.core.tasks.landmarks.gridtown import patch_image

HERE = (48.0, 2.0)
TOWER = LandmarkLook("t", "Tower", (200, 30, 40), 80.0)
MAST = LandmarkLook("m", "Mast", (40, 60, 210), 120.0)


def standing(look: LandmarkLook, bearing: float, distance: float) -> Landmark:
    lat, lon = destination(*HERE, bearing, distance)
    return Landmark(look.id, look.name, "tower", lat, lon, (0.0, 0.0), look.height_m, 20.0, look.colour)


@pytest.mark.parametrize("bearing, distance", [(10.0, 150.0), (-30.0, 400.0), (40.0, 200.0), (0.0, 900.0)])
def test_bearing_and_distance_from_a_flat_patch(bearing, distance):
    heading = 20.0
    image = patch_image(HERE, heading, [standing(TOWER, heading + bearing, distance)], width=640, height=480)
    (seen,) = find_in_view(image, heading, [TOWER, MAST])
    assert seen.landmark == "t"
    assert abs((seen.bearing_deg - (heading + bearing) + 180) % 360 - 180) < 0.5
    assert seen.distance_m == pytest.approx(distance, rel=0.05)


def test_two_landmarks_in_one_view_are_told_apart_by_colour():
    image = patch_image(HERE, 90.0, [standing(TOWER, 70.0, 200.0), standing(MAST, 120.0, 500.0)])
    seen = {s.landmark: s for s in find_in_view(image, 90.0, [TOWER, MAST])}
    assert set(seen) == {"t", "m"}
    assert seen["t"].bearing_deg == pytest.approx(70.0, abs=1.0)
    assert seen["m"].bearing_deg == pytest.approx(120.0, abs=1.0)


def test_nothing_is_seen_behind_the_camera_cut_at_the_edges_or_too_small():
    assert find_in_view(patch_image(HERE, 0.0, [standing(TOWER, 180.0, 200.0)]), 0.0, [TOWER]) == []
    edge = patch_image(HERE, 0.0, [standing(TOWER, 44.0, 100.0)])  # straddles the right edge
    assert find_in_view(edge, 0.0, [TOWER]) == []
    tiny = patch_image(HERE, 0.0, [standing(TOWER, 0.0, 5000.0)])
    assert find_in_view(tiny, 0.0, [TOWER], min_pixels=6) == []


def test_a_panorama_gives_bearings_all_round_and_across_the_seam():
    w, h = 720, 360
    image = np.full((h, w, 3), 128, dtype=np.uint8)
    # The tower 150 degrees right of facing 0, its top at 20 degrees of elevation (rows from the top edge).
    top = int(round((0.5 - 20.0 / 180.0) * h))
    col = int(((150.0 / 360.0) + 0.5) * w)
    image[top:top + 10, col - 3:col + 3] = TOWER.colour
    image[150:175, :4] = MAST.colour  # right behind: split across the seam
    image[150:175, -4:] = MAST.colour
    seen = {s.landmark: s for s in find_in_panorama(image, 0.0, [TOWER, MAST])}
    assert seen["t"].bearing_deg == pytest.approx(150.0, abs=0.6)
    assert seen["t"].distance_m == pytest.approx((80.0 - 2.5) / np.tan(np.radians(20.0)), rel=0.03)
    assert seen["m"].bearing_deg == pytest.approx(180.0, abs=0.6)

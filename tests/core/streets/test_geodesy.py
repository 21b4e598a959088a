import math

import numpy as np
import pytest

from cityseeker_ros.core.streets.geodesy import (
    LocalFrame,
    circular_difference,
    destination,
    geodesic_m,
    initial_bearing_deg,
    mercator_units_to_metres,
    normalize_heading,
    pairwise_geodesic_m,
    path_length_m,
)
from tests.conftest import M_PER_DEG


def test_equator_distances_are_exact():
    assert math.isclose(geodesic_m(0, 0, 0, 100 / M_PER_DEG), 100.0, abs_tol=1e-6)
    d = pairwise_geodesic_m([[0, 0], [0, 10 / M_PER_DEG]], [[0, 30 / M_PER_DEG]])
    np.testing.assert_allclose(d, [[30.0], [20.0]], atol=1e-6)
    assert math.isclose(path_length_m([[0, 0], [0, 10 / M_PER_DEG], [0, 0]]), 20.0, abs_tol=1e-6)
    assert path_length_m([[0, 0]]) == 0.0


def test_mercator_units_shrink_by_cos_latitude():
    assert mercator_units_to_metres(20.0, 60.0) == pytest.approx(10.0)
    assert mercator_units_to_metres(20.0, 0.0) == 20.0


def test_destination_and_bearing_round_trip():
    lat, lon = destination(22.3, 114.18, 141.0, 15.0)
    assert geodesic_m(22.3, 114.18, lat, lon) == pytest.approx(15.0, abs=1e-6)
    assert initial_bearing_deg(22.3, 114.18, lat, lon) == pytest.approx(141.0, abs=1e-6)


@pytest.mark.parametrize("a, b, expected", [(10, 350, 20), (350, 10, -20), (180, 0, 180), (0, 180, 180),
                                            (-90, 90, 180), (725, 0, 5), (90, 90, 0)])
def test_circular_difference_wraps(a, b, expected):
    assert circular_difference(a, b) == pytest.approx(expected)


def test_normalize_heading():
    assert normalize_heading(-10) == 350 and normalize_heading(360) == 0 and normalize_heading(-1e-15) == 0.0


def test_local_frame_is_metric():
    frame = LocalFrame(22.3, 114.18)
    lat, lon = destination(22.3, 114.18, 90.0, 100.0)
    x, y = frame.to_xy(lat, lon)
    assert x == pytest.approx(100.0, abs=0.01) and y == pytest.approx(0.0, abs=0.05)

import pytest

from cityseeker_ros.core.streets.directions import RelativeDirection as R
from cityseeker_ros.core.streets.directions import relative_direction


@pytest.mark.parametrize("heading, facing, label", [
    (0, 0, R.FRONT), (22.4, 0, R.FRONT), (22.6, 0, R.FRONT_RIGHT), (45, 0, R.FRONT_RIGHT),
    (90, 0, R.RIGHT), (135, 0, R.BACK_RIGHT), (180, 0, R.BACK), (225, 0, R.BACK_LEFT),
    (270, 0, R.LEFT), (315, 0, R.FRONT_LEFT), (337.6, 0, R.FRONT), (337.4, 0, R.FRONT_LEFT),
    # Facing east, north is on the left and south on the right (the reference swaps these).
    (0, 90, R.LEFT), (180, 90, R.RIGHT), (100, 90, R.FRONT), (10, 350, R.FRONT),
    (-90, 90, R.BACK), (80, 350, R.RIGHT),
])
def test_labels_turn_clockwise_to_the_right(heading, facing, label):
    assert relative_direction(heading, facing) is label

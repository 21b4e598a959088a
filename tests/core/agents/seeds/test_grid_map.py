"""The object-centric grid map on its own, every answer computed by hand: 400 m at 1 m has 400
cells a side, the start's cell is (200, 200), and a cell (i, j) has its centre at
(i - 199.5, j - 199.5) metres east and north of the start."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.seeds.grid_map import GridMap, direction_of, labels_match, relation_word


@pytest.fixture
def grid() -> GridMap:
    return GridMap()


def test_the_default_map_is_400_m_at_1_m_centred_on_the_start(grid):
    assert (grid.size_m, grid.resolution_m, grid.cells_per_side, grid.half_m) == (400.0, 1.0, 400, 200.0)
    assert grid.cell_of(0.0, 0.0) == (200, 200)
    assert grid.cell_of(-0.1, -0.1) == (199, 199)
    assert grid.cell_of(-200.0, -200.0) == (0, 0)
    assert grid.cell_of(199.9, 0.0) == (399, 200)
    assert grid.cell_of(200.0, 0.0) is None and grid.cell_of(0.0, -200.1) is None
    coarse = GridMap(size_m=100.0, resolution_m=5.0)
    assert coarse.cells_per_side == 20 and coarse.cell_of(7.0, -3.0) == (11, 9)
    with pytest.raises(ValueError):
        GridMap(resolution_m=0.0)


def test_a_footprint_is_the_cells_whose_centres_lie_in_the_square(grid):
    # 3 m around (0.5, 0.5): centres -0.5, 0.5, 1.5 on each axis, cells 199..201
    cells = grid.footprint(0.5, 0.5, 3.0)
    assert cells == {(i, j) for i in (199, 200, 201) for j in (199, 200, 201)}
    assert grid.footprint(0.3, 0.3, 0.0) == {(200, 200)}  # at least its own cell
    assert grid.footprint(199.5, 0.5, 5.0) == {(i, j) for i in (397, 398, 399) for j in range(198, 203)}  # cut
    assert grid.footprint(260.0, 0.0, 5.0) == frozenset()


def test_an_object_gets_an_id_centre_and_extent(grid):
    obj = grid.add("Building", 10.5, 20.5, 5.0, label="Banca Rossa")
    assert obj.id == "building_1" and obj.cls == "building" and obj.label == "Banca Rossa"
    assert len(obj.cells) == 25 and obj.centre == (10.5, 20.5)
    assert obj.extent == (8.0, 18.0, 13.0, 23.0)
    assert obj.describe() == 'building_1 "Banca Rossa": centre 10 m east, 20 m north; 5 x 5 m'
    assert grid.add("car", -3.5, -7.5, 1.0).id == "car_1"
    assert grid.add("building", 100.5, 0.5, 1.0).id == "building_2"
    assert [o.id for o in grid.objects()] == ["building_1", "building_2", "car_1"]
    assert grid.add("building", 300.0, 0.0, 5.0) is None and len(grid) == 3  # outside the map


def test_sightings_that_overlap_or_touch_merge_and_a_gap_of_one_cell_does_not(grid):
    grid.add("building", 10.5, 20.5, 5.0)  # columns 208..212
    apart = grid.add("building", 16.5, 20.5, 5.0)  # columns 214..218: column 213 between
    assert apart.id == "building_2"
    grid2 = GridMap()
    grid2.add("building", 10.5, 20.5, 5.0)
    merged = grid2.add("building", 15.5, 20.5, 5.0)  # columns 213..217 touch 212
    assert merged.id == "building_1" and merged.seen == 2 and len(grid2) == 1
    assert merged.extent == (8.0, 18.0, 18.0, 23.0) and merged.centre == (13.0, 20.5)
    diagonal = GridMap()
    diagonal.add("car", 0.5, 0.5)
    assert diagonal.add("car", 1.5, 1.5).id == "car_1"  # corner to corner is adjacent


def test_a_merge_is_judged_again_until_no_object_touches_another(grid):
    grid.add("building", 0.5, 0.5)  # cell (200, 200)
    grid.add("building", 2.5, 0.5)  # cell (202, 200): not touching the first
    assert len(grid) == 2
    joined = grid.add("building", 1.5, 0.5)  # touches both: all three are one building
    assert len(grid) == 1 and joined.id == "building_1" and joined.seen == 3 and len(joined.cells) == 3


def test_other_classes_and_other_names_never_merge(grid):
    grid.add("building", 0.5, 0.5, 3.0, label="Cafe Uno")
    assert grid.add("car", 0.5, 0.5, 3.0).id == "car_1"
    assert grid.add("building", 1.5, 0.5, 3.0, label="Hotel Lido").id == "building_2"
    same = grid.add("building", 1.5, 0.5, 3.0, label="cafe uno")  # the same name, any case
    assert same.id == "building_1" and same.seen == 2
    unnamed = grid.add("building", -1.5, 0.5, 1.0)  # an unnamed sighting joins what it touches
    assert unnamed.id == "building_1" and unnamed.label == "Cafe Uno"


def test_cardinal_relations_are_centre_to_centre_with_four_sectors(grid):
    b = grid.add("building", 0.5, 0.5)
    for (x, y), word in [((0.5, 30.5), "north"), ((30.5, 0.5), "east"), ((0.5, -29.5), "south"),
                         ((-29.5, 0.5), "west"), ((20.5, 30.5), "north"), ((30.5, -9.5), "east")]:
        other = GridMap()
        a = other.add("car", x, y)
        assert GridMap.relation(a, b) == word, (x, y)
    on_diagonal = GridMap().add("car", 10.5, 10.5)  # 45 degrees exactly: the sector clockwise of it
    assert GridMap.relation(on_diagonal, b) == "east"
    assert relation_word("west") == "west of" and direction_of("to the North") == "north"
    assert direction_of("W") == "west" and direction_of("upwards") is None
    with pytest.raises(ValueError):
        relation_word("up")


def test_the_manager_retrieves_an_object_by_class_and_relation_to_a_landmark(grid):
    landmark = grid.add("building", 0.5, 0.5, 5.0, label="Banca Rossa")
    near = grid.add("car", 0.5, 30.5)  # 30 m north
    grid.add("car", 0.5, 60.5)  # 60 m north
    west = grid.add("car", -30.5, 0.5, label="red car")
    grid.add("tree", 0.5, 10.5)
    assert grid.find("car", "north", landmark) == near
    assert grid.find("car", "west", landmark) == west
    assert grid.find("car", "west", landmark, label="red") == west
    assert grid.find("car", "west", landmark, label="blue") is None
    assert grid.find("car", "east", landmark) is None
    assert grid.find("building", "north", landmark) is None  # never the landmark itself
    assert grid.named("banca rossa") == landmark and grid.named("Banca", cls="car") is None
    assert labels_match("\"Cafe Uno\"", "cafe uno") and not labels_match("", "x")


def test_navigation_and_exploration_points_lie_on_the_named_side(grid):
    b = grid.add("building", 10.5, 20.5, 5.0)  # extent (8, 18, 13, 23)
    assert grid.navigation_point(b, "west") == (-2.0, 20.5)
    assert grid.navigation_point(b, "north", offset_m=5.0) == (10.5, 28.0)
    assert grid.navigation_point(b, "east") == (23.0, 20.5)
    assert grid.navigation_point(b, "south") == (10.5, 8.0)
    assert grid.exploration_points(b, "north", spacing_m=10.0, depth_m=30.0) == [(10.5, 33.0), (10.5, 43.0),
                                                                                (10.5, 53.0)]
    wide = GridMap().add("building", 0.5, 0.5, 25.0)  # extent (-12, -12, 13, 13): one column each side
    points = GridMap().exploration_points(wide, "west", spacing_m=10.0, depth_m=10.0, near=(0.0, 20.0))
    assert points == [(-22.0, 10.5), (-22.0, 0.5), (-22.0, -9.5)]
    edge = GridMap(size_m=40.0)
    far = edge.add("building", 0.5, 15.5)
    assert edge.exploration_points(far, "north", spacing_m=2.0, depth_m=10.0) == [(0.5, 18.0)]  # cut at 20 m


def test_a_sighting_is_placed_from_the_agent_along_the_view_heading(grid):
    east = grid.add_seen("building", (0.0, 0.0), 90.0, 20.0)
    assert east.centre == pytest.approx((20.0, 0.0))
    north_west = grid.add_seen("car", (5.0, 5.0), 315.0, 2 ** 0.5 * 10.0)  # 10 m west, 10 m north
    assert north_west.centre == pytest.approx((-5.0, 15.0))


def test_the_map_as_text_and_as_a_record(grid):
    assert grid.to_text() == "(empty)"
    grid.add("building", 10.5, 20.5, 5.0, label="Banca Rossa")
    grid.add("car", -3.5, -7.5)
    assert grid.to_text() == ('building_1 "Banca Rossa": centre 10 m east, 20 m north; 5 x 5 m\n'
                              "car_1: centre 4 m west, 8 m south; 1 x 1 m")
    record = grid.to_dict()
    assert record["size_m"] == 400.0 and record["objects"][1] == {
        "id": "car_1", "class": "car", "label": "", "seen": 1, "centre": [-3.5, -7.5],
        "extent": [-4.0, -8.0, -3.0, -7.0]}

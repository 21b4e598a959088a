"""Ground cover, trees, the skyline and landmarks on a hand-made scene whose geometry is known.

One north-south street on the equator (nodes s0..s5 every 20 m from (0, 0)); a grass park
west of it, a 6 m block east of it at x 10..30, y 40..60, and landmarks at known places.
"""
from __future__ import annotations

import math

import numpy as np

from cityseeker_ros.core.render import Renderer, RenderSettings
from cityseeker_ros.core.render.landmarks import bearing_from_column, detect_landmarks, distance_from_height
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph
from cityseeker_ros.core.worlds.scene import Area, Building, Landmark, Road, Scene, Tree

M_PER_DEG_LAT = 110574.3
MAGENTA, CYAN = (230, 0, 230), (0, 230, 230)


def graph() -> StreetGraph:
    nodes = [Node(f"s{i}", i * 20.0 / M_PER_DEG_LAT, 0.0, 0.0, (0.0, 180.0)) for i in range(6)]
    edges = [Edge(f"s{i}", f"s{i + 1}", 0.0, 20.0) for i in range(5)]
    edges += [Edge(f"s{i + 1}", f"s{i}", 180.0, 20.0) for i in range(5)]
    return StreetGraph(nodes, edges, name="landmark-street")


def landmark(lid: str, x: float, y: float, colour, height: float = 40.0, **kw) -> Landmark:
    return Landmark(lid, f"Tower {lid}", "tower", 0.0, 0.0, (x, y), height, 6.0, colour, crown_m=8.0, **kw)


def scene(landmarks=(), trees=(), ground=True) -> Scene:
    block = Building("blk", ((10.0, 40.0), (30.0, 40.0), (30.0, 60.0), (10.0, 60.0)), 6.0, 2, 1)
    roads = [Road("way/1", "residential", 6.0, ((0.0, -300.0), (0.0, 400.0)), "asphalt", True, 2.0, 1.5)]
    areas = [Area("way/2", "grass", ((-200.0, -300.0), (-8.0, -300.0), (-8.0, 400.0), (-200.0, 400.0)))]
    return Scene(0.0, 0.0, [block], [], list(landmarks), roads if ground else [], areas if ground else [],
                 list(trees))


def test_ground_shows_road_kerb_and_grass_and_the_sky_a_skyline():
    view = Renderer(scene(), graph(), RenderSettings(signs=False)).perspective("s0", 0.0)
    img = view.image.astype(int)
    road, grass = img[470, 320], img[300, 40]  # under the camera; the park, left of the street
    assert abs(road[0] - road[2]) < 12 and road.mean() < 110  # dark grey asphalt
    assert grass[1] > grass[0] + 25 and grass[1] > grass[2] + 25  # green
    horizon = 240
    row = img[horizon - 2]  # just above the horizon: the distant ridge darkens the sky somewhere
    sky_only = Renderer(scene(), graph(), RenderSettings(signs=False)).skyline.elevations((0.0,))
    assert sky_only[0][0] > 0
    assert (row.sum(axis=1) < img[horizon - 60].sum(axis=1) - 30).any()
    assert view.meta["above_horizon_content"] > 0.02  # the block
    away = Renderer(scene(), graph(), RenderSettings(signs=False)).perspective("s0", 180.0)
    assert away.meta["above_horizon_content"] == 0.0  # a skyline is not scene content
    legacy = Renderer(scene(ground=False), graph(), RenderSettings(signs=False)).perspective("s0", 0.0).image
    assert abs(int(legacy[470, 320, 0]) - int(legacy[470, 320, 2])) < 20  # cobbles where no ground is mapped


def test_trees_fill_the_view_above_the_horizon():
    trees = [Tree(-15.0, 20.0 + 8 * k, 10.0) for k in range(20)]
    bare = Renderer(scene(), graph(), RenderSettings(signs=False)).perspective("s0", 330.0)
    wooded = Renderer(scene(trees=trees), graph(), RenderSettings(signs=False)).perspective("s0", 330.0)
    assert wooded.meta["above_horizon_content"] > bare.meta["above_horizon_content"] + 0.02


def test_landmark_behind_a_low_building_shows_its_crown_above_it_at_its_bearing():
    lm = landmark("t1", 40.0, 100.0, MAGENTA)  # behind the 6 m block, seen from s0 over it
    r = Renderer(scene([lm]), graph(), RenderSettings(signs=False))
    heading = math.degrees(math.atan2(40.0, 100.0))
    view = r.perspective("s0", heading)
    assert [v.landmark_id for v in view.landmarks] == ["t1"]
    seen = view.landmarks[0]
    assert abs(seen.column - 320) <= 2 and seen.colour == MAGENTA
    assert abs(seen.bearing_deg - heading) < 0.01 and abs(seen.distance_m - math.hypot(40, 100)) < 0.01
    found = detect_landmarks(view.image, [lm])
    assert len(found) == 1 and abs(found[0].column - seen.column) < 2  # exact colour in the pixels
    assert abs(bearing_from_column(found[0].column, heading, 90.0, 640) - heading) < 0.5
    est = distance_from_height(seen.crown_height_px, lm.crown_m, 90.0, 640)
    assert abs(est - math.hypot(40, 100) * math.cos(0)) / math.hypot(40, 100) < 0.05
    # in that column the landmark shows only above the block's roof line, which hides its foot
    x = int(seen.column)
    without = Renderer(scene(), graph(), RenderSettings(signs=False)).perspective("s0", heading).image
    empty = Renderer(Scene(0.0, 0.0, roads=scene().roads, areas=scene().areas), graph(),
                     RenderSettings(signs=False)).perspective("s0", heading).image
    roof = int(np.flatnonzero((without[:, x] != empty[:, x]).any(axis=1)).min())
    changed = np.flatnonzero((view.image[:, x] != without[:, x]).any(axis=1))
    assert len(changed) and changed.max() < roof < 240
    hidden = Renderer(scene([landmark("t2", 20.0, 90.0, CYAN, height=5.0)]), graph(),
                      RenderSettings(signs=False)).perspective("s0", math.degrees(math.atan2(20.0, 90.0)))
    assert hidden.landmarks == []  # lower than the block in front of it


def test_a_far_landmark_looks_smaller_and_shows_beyond_the_draw_distance():
    near = landmark("near", -30.0, 150.0, MAGENTA)
    far = landmark("far", 60.0, 900.0, CYAN)  # far past the 250 m draw distance
    r = Renderer(scene([near, far]), graph(), RenderSettings(signs=False))
    view = r.perspective("s0", 0.0)
    got = {v.landmark_id: v for v in view.landmarks}
    assert set(got) == {"near", "far"}
    assert got["far"].crown_height_px < got["near"].crown_height_px / 4
    ratio = got["near"].crown_height_px / got["far"].crown_height_px
    assert abs(ratio - 900.0 / 150.0) / ratio < 0.05  # true perspective: size ~ 1 / depth
    colours = {tuple(int(c) for c in view.image[y, x]) for x, y in ((int(got["far"].column), got["far"].bbox[1]),)}
    assert colours == {CYAN}
    # beyond the draw distance a landmark shows only where its line of sight is clear
    blocked = landmark("far", 60.0, 900.0, CYAN, visible_nodes=("s5",))
    view = Renderer(scene([near, blocked]), graph(), RenderSettings(signs=False)).perspective("s0", 0.0)
    assert [v.landmark_id for v in view.landmarks] == ["near"]


def test_renders_with_ground_trees_and_landmarks_are_byte_identical():
    s = scene([landmark("t1", 40.0, 100.0, MAGENTA)], [Tree(-15.0, 30.0, 9.0)])
    a = Renderer(s, graph()).perspective("s1", 20.0)
    b = Renderer(s, graph()).perspective("s1", 20.0)
    assert a.image.tobytes() == b.image.tobytes() and a.landmarks == b.landmarks
    p = Renderer(s, graph()).panorama("s1", width=512, height=256)
    assert [v.landmark_id for v in p.landmarks] == ["t1"]

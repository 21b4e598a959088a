import math

import pytest

from cityseeker_ros.core.frames.geo_origin import GeoOrigin, MapFrame
from cityseeker_ros.core.infra.errors import ConfigError


def test_graph_nodes_land_where_the_graph_puts_them(tiny_world):
    graph = tiny_world.graph
    frame = MapFrame.of_graph(graph)
    a = frame.to_enu(graph.nodes["00000000"].lat, graph.nodes["00000000"].lon)
    b = frame.to_enu(graph.nodes["00000001"].lat, graph.nodes["00000001"].lon)
    e = frame.to_enu(graph.nodes["00000004"].lat, graph.nodes["00000004"].lon)
    assert b[0] - a[0] == pytest.approx(20.0, abs=0.05) and b[1] - a[1] == pytest.approx(0.0, abs=0.05)
    assert e[1] - b[1] == pytest.approx(20.0, abs=0.05) and e[0] - b[0] == pytest.approx(0.0, abs=0.05)
    xy = graph.frame.to_xy(graph.nodes["00000004"].lat, graph.nodes["00000004"].lon)
    assert e[:2] == pytest.approx((float(xy[0]), float(xy[1])), abs=1e-6)  # the graph's own plane


def test_origin_is_zero_and_east_is_x():
    frame = MapFrame(GeoOrigin(43.7384, 7.4246, 10.0))
    assert frame.to_enu(43.7384, 7.4246, 10.0) == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)
    east = frame.to_enu(43.7384, 7.4256)
    north = frame.to_enu(43.7394, 7.4246, 15.0)
    assert east[0] > 70 and abs(east[1]) < 0.1 and east[2] == pytest.approx(-10.0)
    assert north[1] > 100 and abs(north[0]) < 1e-6 and north[2] == pytest.approx(5.0)


@pytest.mark.parametrize("lat,lon,alt,field", [(91.0, 0.0, 0.0, "lat"), (0.0, -180.5, 0.0, "lon"),
                                               (math.nan, 0.0, 0.0, "lat"), (True, 0.0, 0.0, "lat"),
                                               ("43", 7.0, 0.0, "lat"), (0.0, 0.0, math.inf, "alt")])
def test_bad_origin_names_the_field(lat, lon, alt, field):
    with pytest.raises(ConfigError, match=f"origin {field} "):
        GeoOrigin(lat, lon, alt)


def test_a_fix_without_a_position_is_refused_not_put_at_the_origin():
    frame = MapFrame(GeoOrigin(0.0, 0.0))
    with pytest.raises(ValueError, match="no position"):
        frame.to_enu(math.nan, math.nan)

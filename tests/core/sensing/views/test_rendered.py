"""The rendered source's stop panorama: the renderer's panorama turned to the facing."""
import numpy as np
import pytest

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.streets.geodesy import initial_bearing_deg
from tests.core.sensing.camera.conftest import write_tiny_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return load_dataset(write_tiny_world(tmp_path_factory.mktemp("tinyville") / "tinyville"))[0]


def test_panorama_view_centre_looks_along_the_facing(world):
    """Facing the cafe's board from n1, the board's columns (the renderer's ground truth for its
    own panorama, rolled as panorama_view rolls it) straddle the centre column."""
    src = make_view_source("rendered", world, {"pano_width": 512})
    node = world.graph.nodes["n1"]
    cafe = next(p for p in src.renderer.scene.pois if p.id == "cafe")
    facing = initial_bearing_deg(node.lat, node.lon, cafe.lat, cafe.lon)
    raw = src.renderer.panorama("n1", width=512, height=256)
    pano = src.panorama_view(node, facing)
    assert pano.shape == (256, 512, 3) and pano.dtype == np.uint8
    [sign] = [s for s in raw.signs if s.poi_id == "cafe"]
    shift = next(k for k in range(512) if np.array_equal(np.roll(raw.image, -k, axis=1), pano))
    x0, _, x1, _ = sign.bbox
    centre = ((x0 + x1) / 2.0 - shift) % 512
    assert abs(centre - 256) <= 3, (x0, x1, shift)
    assert src.describe()["pano_width"] == 512


def test_pano_width_is_checked(world):
    with pytest.raises(ConfigError, match="pano_width must be an even whole number"):
        make_view_source("rendered", world, {"pano_width": 7})

import math

import numpy as np
import pytest
from PIL import Image

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.sensing.views.panorama import (
    PanoramaCutter,
    PanoramaFolderSource,
    cut_uncached,
    load_panorama,
)
from cityseeker_ros.core.streets.graph import Node, StreetGraph
from cityseeker_ros.core.tasks.episode import World

YAWS = [0.0, 0.37, 45.0, 59.99, 90.0, 179.5, 180.0, 180.25, 270.3, 359.99, 360.0, 360.5, 725.3, 1000.1,
        -0.3, -90.0, -179.9, -180.0, -540.7]


def noise_pano(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Full-contrast noise: every interpolation error shows at full size."""
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def max_diff(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a.astype(np.int16) - b.astype(np.int16)).max())


@pytest.mark.parametrize("pano_shape", [(64, 128), (300, 600), (513, 1030), (1024, 2048)])
def test_cached_cut_matches_reference_for_many_yaws(pano_shape):
    pano = noise_pano(*pano_shape)
    cutter = PanoramaCutter(fov_deg=120.0, width=160, height=80)
    for yaw in YAWS:
        view = cutter.cut(pano, yaw)
        assert view.shape == (80, 160, 3) and view.dtype == np.uint8
        assert max_diff(view, cut_uncached(pano, yaw, 120.0, 160, 80)) <= 2, yaw
    assert cutter.grid_count == 1


def test_default_size_and_other_fov_match_reference():
    pano = noise_pano(512, 1024, seed=1)
    cutter = PanoramaCutter()
    for yaw in (0.0, 179.9, -33.3):
        view = cutter.cut(pano, yaw)
        assert view.shape == (512, 1024, 3)
        assert max_diff(view, cut_uncached(pano, yaw, 120.0, 1024, 512)) <= 2
    narrow = PanoramaCutter(fov_deg=60.0, width=97, height=61)
    for yaw in (12.5, 200.0):
        assert max_diff(narrow.cut(pano, yaw), cut_uncached(pano, yaw, 60.0, 97, 61)) <= 2


def test_pitched_cut_matches_reference_and_gets_its_own_grid():
    pano = noise_pano(256, 512, seed=2)
    cutter = PanoramaCutter(width=120, height=60)
    for pitch in (30.0, -75.0):
        for yaw in (0.0, 123.4, 180.0):
            assert max_diff(cutter.cut(pano, yaw, pitch), cut_uncached(pano, yaw, 120.0, 120, 60, pitch)) <= 2
    cutter.cut(pano, 10.0)
    assert cutter.grid_count == 3


def test_grid_is_built_once_per_pano_size():
    cutter = PanoramaCutter(width=64, height=32)
    pano = noise_pano(100, 200)
    for yaw in np.linspace(-720.0, 720.0, 97):
        cutter.cut(pano, float(yaw))
    assert cutter.grid_count == 1
    cutter.cut(noise_pano(150, 300), 5.0)
    assert cutter.grid_count == 2
    cutter.cut(pano, 7.0)
    assert cutter.grid_count == 2


def test_yaw_zero_centre_pixel_is_pano_centre_pixel():
    pano = noise_pano(400, 800, seed=3)
    view = PanoramaCutter(width=200, height=100).cut(pano, 0.0)
    assert (view[50, 100] == pano[200, 400]).all()


def test_colour_order_is_rgb():
    h, w = 200, 400
    pano = np.zeros((h, w, 3), np.uint8)
    pano[:, w // 2 - 20: w // 2 + 20] = (255, 0, 0)  # red around yaw 0
    pano[:, 3 * w // 4 - 20: 3 * w // 4 + 20] = (0, 0, 255)  # blue around yaw 90
    cutter = PanoramaCutter(width=64, height=32)
    assert tuple(cutter.cut(pano, 0.0)[16, 32]) == (255, 0, 0)
    assert tuple(cutter.cut(pano, 90.0)[16, 32]) == (0, 0, 255)


def test_loaded_file_keeps_rgb_order(tmp_path):
    pano = np.zeros((50, 100, 3), np.uint8)
    pano[..., 0] = 200
    pano[..., 2] = 30
    Image.fromarray(pano).save(tmp_path / "p.png")
    loaded = load_panorama(tmp_path / "p.png")
    assert loaded.shape == (50, 100, 3) and loaded.dtype == np.uint8
    assert (loaded == pano).all()


def line_pano(height: int, width: int, column: int) -> np.ndarray:
    pano = np.zeros((height, width, 3), np.uint8)
    pano[:, column] = 255
    return pano


def test_vertical_line_lands_where_the_pinhole_model_says():
    h, w = 1800, 3600  # 0.1 degree per column
    column = 2700  # longitude 90
    pano = line_pano(h, w, column)
    cutter = PanoramaCutter(fov_deg=120.0, width=1024, height=512)
    view = cutter.cut(pano, 90.0)
    assert int(view[256].argmax(axis=0)[0]) == 512 and view[256, 512, 0] == 255
    assert (view[:, 512] == 255).all()  # a meridian is a vertical line in a level pinhole view
    focal = 512 / math.tan(math.radians(60.0))
    assert cutter.focal_px == pytest.approx(focal)
    for delta in (30.0, -45.0, 10.0):
        view = cutter.cut(pano, 90.0 - delta)
        expected = 512 + focal * math.tan(math.radians(delta))
        assert abs(int(view[256, :, 0].argmax()) - expected) <= 1.0, delta


def test_line_at_the_seam_wraps():
    h, w = 180, 360
    pano = line_pano(h, w, 0)  # longitude -180 == 180
    cutter = PanoramaCutter(fov_deg=90.0, width=101, height=51)
    for yaw in (180.0, -180.0, 540.0):
        row = cutter.cut(pano, yaw)[25, :, 0]
        assert int(row.argmax()) == 50 and row[50] == 255
    # half a column right of the seam: column w-1 and column 0 blend evenly
    pano = np.zeros((h, w, 3), np.uint8)
    pano[:, 0] = 200
    view = cutter.cut(pano, 180.0 - 0.5)
    assert abs(int(view[25, 50, 0]) - 100) <= 1


def test_horizon_is_the_middle_row():
    h, w = 400, 800
    pano = np.zeros((h, w, 3), np.uint8)
    pano[h // 2] = 255
    view = PanoramaCutter(width=200, height=100).cut(pano, 33.0)
    assert (view[50] == 255).all() and view[:48].max() == 0


def test_cutter_rejects_bad_input():
    with pytest.raises(ValueError, match="field of view"):
        PanoramaCutter(fov_deg=180.0)
    with pytest.raises(ValueError, match="uint8"):
        PanoramaCutter().cut(np.zeros((10, 20), np.uint8), 0.0)


# --- the folder source -------------------------------------------------------------------------

def tiny_world(n: int = 3) -> World:
    nodes = [Node(f"{i:08d}", 22.3, 114.1 + i * 1e-4, 30.0 * i, (0.0, 90.0, 200.0)) for i in range(1, n + 1)]
    return World("tinytown", StreetGraph(nodes, []), episodes=[], category_targets={})


def write_panos(folder, world: World, size=(256, 128), fmt="jpg") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, node_id in enumerate(world.graph.nodes):
        Image.fromarray(noise_pano(size[1], size[0], seed=i)).save(folder / f"{node_id}.{fmt}", quality=95)


@pytest.fixture
def world():
    return tiny_world()


@pytest.fixture
def folder(tmp_path, world):
    write_panos(tmp_path / "panos", world)
    return tmp_path / "panos"


def test_images_per_heading(world, folder):
    src = PanoramaFolderSource(world, str(folder), width=64, height=32)
    node = world.graph.nodes["00000002"]
    views = src.images(node, node.walkable_headings)
    assert len(views) == 3 and all(v.shape == (32, 64, 3) and v.dtype == np.uint8 for v in views)
    pano = load_panorama(folder / "00000002.jpg")
    for view, heading in zip(views, node.walkable_headings):
        assert (view == src.cutter.cut(pano, heading - node.heading)).all()
    assert src.describe() == {"name": "panorama-folder", "synthetic": False, "folder": str(folder.resolve()),
                              "provider": "google", "offset_deg": 0.0, "fov_deg": 120.0, "width": 64,
                              "height": 32, "interpolation": "bilinear", "pano_width": 2048}
    src.close()


# --- provider geometry against an independent transcription of the reference ------------------
# The reference (utils/panovis.py of the authors' code) turns the panorama by HEADING before
# cutting, HEADING = car heading for Google and car heading - 90 for Baidu, then cuts a pinhole
# view: intrinsics f = w / (2 tan(fov/2)), centre ((w-1)/2, (h-1)/2); rays turned about the
# vertical axis by (walkable heading - HEADING); lon = atan2(x, z), lat = asin(y);
# pano x = (lon / 2pi + 0.5)(W - 1). Written here from that description alone, nearest sample.

def reference_cut(pano: np.ndarray, car_heading: float, heading: float, provider: str,
                  fov_deg: float = 120.0, width: int = 1024, height: int = 512) -> np.ndarray:
    turned = car_heading if provider == "google" else car_heading - 90.0
    f = 0.5 * width / math.tan(math.radians(fov_deg) / 2.0)
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    rays = np.stack([(u - (width - 1) / 2.0) / f, (v - (height - 1) / 2.0) / f, np.ones_like(u)], axis=-1)
    a = math.radians(heading - turned)
    turn = np.array([[math.cos(a), 0.0, math.sin(a)], [0.0, 1.0, 0.0], [-math.sin(a), 0.0, math.cos(a)]])
    rays = rays @ turn.T
    rays /= np.linalg.norm(rays, axis=-1, keepdims=True)
    lon, lat = np.arctan2(rays[..., 0], rays[..., 2]), np.arcsin(rays[..., 1])
    pano_h, pano_w = pano.shape[:2]
    x = np.rint((lon / (2 * math.pi) + 0.5) * (pano_w - 1)).astype(int) % pano_w
    y = np.clip(np.rint((lat / math.pi + 0.5) * (pano_h - 1)).astype(int), 0, pano_h - 1)
    return pano[y, x]


def marker_pano(car_heading: float, azimuth: float, provider: str, width: int = 2048) -> np.ndarray:
    """Black panorama with a white meridian at absolute `azimuth`, laid out as the provider's
    files are: the centre column looks along the car heading (Google) or 90 degrees left of it
    (Baidu)."""
    centre = car_heading if provider == "google" else car_heading - 90.0
    lon = (azimuth - centre + 180.0) % 360.0 - 180.0
    pano = np.zeros((width // 2, width, 3), np.uint8)
    centre_col = int(round((lon / 360.0 + 0.5) * width))
    pano[:, [(centre_col + d) % width for d in (-1, 0, 1)]] = 255  # 3 columns: the seam has 2 names
    return pano


def marker_angle(view: np.ndarray, fov_deg: float = 120.0) -> float:
    """Angle (degrees, right positive) from the view axis to the marker on the horizon row."""
    row = view[view.shape[0] // 2, :, 0].astype(np.float64)
    assert row.max() > 0, "marker not in view"
    width = view.shape[1]
    col = float((row * np.arange(width)).sum() / row.sum())
    f = 0.5 * width / math.tan(math.radians(fov_deg) / 2.0)
    return math.degrees(math.atan((col - (width - 1) / 2.0) / f))


HEADINGS = [0.0, 37.5, 90.0, 135.0, 181.2, 225.0, 270.0, 300.7, 359.0]


@pytest.mark.parametrize("provider", ["google", "baidu"])
@pytest.mark.parametrize("car_heading", [0.0, 123.4, 271.9])
def test_provider_views_match_reference_geometry(tmp_path, provider, car_heading):
    """A marker at a known azimuth lands in the same column of our view and the reference's,
    and at (azimuth - walkable heading) from the view axis, for headings around the circle."""
    node = Node("00000001", 22.3, 114.1, car_heading, tuple(HEADINGS))
    world = World("tinytown", StreetGraph([node], []), episodes=[], category_targets={})
    checked = 0
    for heading in HEADINGS:
        for off in (-40.0, 0.0, 25.0):
            folder = tmp_path / f"{provider}_{heading}_{off}"
            folder.mkdir()
            Image.fromarray(marker_pano(car_heading, heading + off, provider)).save(folder / "00000001.png",
                                                                                   compress_level=0)
            src = PanoramaFolderSource(world, str(folder), provider=provider, cache_size=0, width=512, height=64)
            ours = marker_angle(src.images(node, [heading])[0])
            theirs = marker_angle(reference_cut(load_panorama(folder / "00000001.png"), car_heading, heading,
                                                provider, width=512, height=64))
            assert abs(ours - theirs) < 0.5, (heading, off, ours, theirs)
            assert abs(ours - off) < 0.5, (heading, off, ours)
            checked += 1
    assert checked == 3 * len(HEADINGS)


def pano_marker_column(pano: np.ndarray) -> float:
    row = pano[pano.shape[0] // 2, :, 0].astype(np.float64)
    assert row.max() > 0, "marker not in panorama"
    return float((row * np.arange(pano.shape[1])).sum() / row.sum())


@pytest.mark.parametrize("provider", ["google", "baidu"])
def test_stop_panorama_is_downscaled_and_centred_on_facing(tmp_path, provider):
    """The stop prompt's panorama: pano_width x pano_width/2, its centre column looking along
    the facing, for facings around the circle (marker at the facing's azimuth)."""
    car = 123.4
    node = Node("00000001", 22.3, 114.1, car, (0.0,))
    world = World("tinytown", StreetGraph([node], []), episodes=[], category_targets={})
    for facing in (0.0, 45.0, 90.0, 135.0, 180.0, 225.0, 270.0, 315.0, 359.0):
        folder = tmp_path / f"{provider}_{facing}"
        folder.mkdir()
        Image.fromarray(marker_pano(car, facing, provider)).save(folder / "00000001.png", compress_level=0)
        src = PanoramaFolderSource(world, str(folder), provider=provider, pano_width=512, cache_size=0)
        pano = src.panorama_view(node, facing)
        assert pano.shape == (256, 512, 3) and pano.dtype == np.uint8
        # the centre column (256) looks along the facing; 1 column = 0.7 degrees
        assert abs(pano_marker_column(pano) - 256) <= 1.0, (facing, pano_marker_column(pano))
        behind = src.panorama_view(node, facing + 180.0)  # then the marker sits at the seam
        lit = np.flatnonzero(behind[128, :, 0])
        assert len(lit) and all(min(c, 511 - c) <= 2 for c in lit), lit
        full = PanoramaFolderSource(world, str(folder), provider=provider, pano_width=0).panorama_view(node, facing)
        assert full.shape == (1024, 2048, 3) and abs(pano_marker_column(full) - 1024) <= 1.0


def test_pano_width_must_be_even_and_whole(world, folder):
    for bad in (-2, 3, 10.5, True):
        with pytest.raises(ConfigError, match="pano_width must be an even whole number"):
            PanoramaFolderSource(world, str(folder), pano_width=bad)


def test_provider_names_and_custom_offset(world, folder):
    node = world.graph.nodes["00000003"]
    pano = load_panorama(folder / "00000003.jpg")
    cutter = PanoramaCutter(width=48, height=24)
    baidu = PanoramaFolderSource(world, str(folder), provider="Baidu", width=48, height=24)
    assert baidu.describe()["provider"] == "baidu" and baidu.describe()["offset_deg"] == baidu.offset_deg
    custom = PanoramaFolderSource(world, str(folder), provider="baidu", offset_deg=12.5, width=48, height=24)
    assert (custom.images(node, [node.heading + 10.0])[0] == cutter.cut(pano, 22.5)).all()


def test_panoramas_are_cached_lru(world, folder):
    src = PanoramaFolderSource(world, str(folder), width=16, height=8, cache_size=1)
    first = src.panorama("00000001")
    assert src.panorama("00000001") is first
    src.panorama("00000002")
    assert src.panorama("00000001") is not first
    uncached = PanoramaFolderSource(world, str(folder), width=16, height=8, cache_size=0)
    assert uncached.panorama("00000001") is not uncached.panorama("00000001")


def test_missing_image_names_the_path(world, folder):
    (folder / "00000002.jpg").unlink()
    src = PanoramaFolderSource(world, str(folder), width=16, height=8)
    src.images(world.graph.nodes["00000001"], [0.0])
    with pytest.raises(DataError) as err:
        src.images(world.graph.nodes["00000002"], [0.0])
    assert err.value.file == str(folder / "00000002.jpg") and str(folder / "00000002.jpg") in str(err.value)


def test_png_jpeg_and_suffixed_ids_are_found(tmp_path):
    world = tiny_world(2)
    folder = tmp_path / "panos"
    folder.mkdir()
    Image.fromarray(noise_pano(64, 128)).save(folder / "00000001.png")
    Image.fromarray(noise_pano(64, 128)).save(folder / "00000002.jpeg")
    src = PanoramaFolderSource(world, str(folder), width=16, height=8, check="all")
    for node in world.graph.nodes.values():
        assert src.images(node, [0.0])[0].shape == (8, 16, 3)
    suffixed = Node("00000001.png", 0.0, 0.0, 0.0, (0.0,))
    assert src.images(suffixed, [0.0])[0].shape == (8, 16, 3)


def test_unreadable_truncated_and_wrong_shape_images(world, folder):
    src = PanoramaFolderSource(world, str(folder), width=16, height=8, cache_size=0)
    (folder / "00000001.jpg").write_bytes(b"this is not a jpeg at all" * 10)
    whole = (folder / "00000002.jpg").read_bytes()
    (folder / "00000002.jpg").write_bytes(whole[: len(whole) // 2])
    Image.fromarray(noise_pano(128, 200)).save(folder / "00000003.jpg")
    for node_id, message in (("00000001", "unreadable"), ("00000002", "truncated"), ("00000003", "200x128")):
        with pytest.raises(DataError, match=message) as err:
            src.images(world.graph.nodes[node_id], [0.0])
        assert err.value.file == str(folder / f"{node_id}.jpg")


def test_slightly_off_aspect_is_accepted(tmp_path):
    Image.fromarray(noise_pano(128, 257)).save(tmp_path / "p.jpg")
    assert load_panorama(tmp_path / "p.jpg").shape == (128, 257, 3)
    with pytest.raises(DataError, match="no such"):
        load_panorama(tmp_path / "nope.jpg")


def test_config_errors(world, folder, tmp_path):
    with pytest.raises(ConfigError, match="nowhere"):
        PanoramaFolderSource(world, str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match="known: baidu, google"):
        PanoramaFolderSource(world, str(folder), provider="bing")
    with pytest.raises(ConfigError, match="check"):
        PanoramaFolderSource(world, str(folder), check="some")
    with pytest.raises(ConfigError, match="field of view"):
        PanoramaFolderSource(world, str(folder), fov_deg=0.0)


def test_check_all_lists_missing_files(tmp_path):
    world = tiny_world(13)
    folder = tmp_path / "panos"
    write_panos(folder, tiny_world(1), size=(32, 16))
    with pytest.raises(DataError) as err:
        PanoramaFolderSource(world, str(folder), check="all")
    message = str(err.value)
    assert err.value.file == str(folder) and "12 of 13 graph nodes" in message
    assert "00000002.jpg" in message and "00000011.jpg" in message and "00000012.jpg" not in message
    assert message.endswith(", ...")


def test_check_all_passes_when_complete(world, folder):
    src = PanoramaFolderSource(world, str(folder), width=16, height=8, check="all")
    assert src.images(world.graph.nodes["00000001"], [90.0])[0].shape == (8, 16, 3)


def test_registered_by_name(world, folder):
    src = make_view_source("panorama-folder", world, {"folder": str(folder), "width": 32, "height": 16})
    assert isinstance(src, PanoramaFolderSource) and src.synthetic is False
    with pytest.raises(ConfigError, match="panorama-folder"):
        make_view_source("street-magic", world, {})
    with pytest.raises(ConfigError, match="bad parameters"):
        make_view_source("panorama-folder", world, {"folder": str(folder), "zoom": 2})

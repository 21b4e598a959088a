"""Perspective views cut from equirectangular street-view panoramas, one file per graph node.

Geometry (pixel indices, pixel j's centre at coordinate j): panorama column W/2 looks along the
capture car's heading, longitude grows to the right (clockwise seen from above) by 360/W degrees
per column and wraps at the seam, row 0 looks straight up and row H/2 at the horizon. The
perspective camera is a pinhole whose centre pixel (width // 2, height // 2) looks along yaw/pitch;
its focal length comes from the horizontal field of view, so the vertical one follows from the
aspect ratio. Sampling is bilinear and channels keep the panorama's RGB order.
"""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.sensing.views.source import VIEW_SOURCES, ViewSource, recentre
from cityseeker_ros.core.streets.graph import Node
from cityseeker_ros.core.tasks.episode import World

# Yaw added to (walkable heading - car heading) before cutting. Google's centre column looks
# along the car heading; Baidu's looks 90 degrees left of it (the reference turns a Baidu
# panorama by heading - 90 before cutting), so a Baidu view lies 90 degrees further clockwise.
PROVIDER_OFFSETS: dict[str, float] = {"google": 0.0, "baidu": 90.0}
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".png", ".jpeg")
ASPECT_TOLERANCE = 0.02  # |width/height - 2| a panorama may show (resized or cropped by a pixel)
MAX_GRIDS = 8  # cached grids per cutter: one per panorama size and pitch in practice
PANO_WIDTH = 2048  # stop-prompt panorama width (0: the file's own size, as the reference sends it)
_MISSING_LISTED = 10


def _camera_rays(fov_deg: float, width: int, height: int, pitch_deg: float) -> tuple[np.ndarray, ...]:
    """Unit-free ray components (right, up, forward) of every output pixel after pitching."""
    focal = 0.5 * width / math.tan(math.radians(fov_deg) / 2.0)
    right = (np.arange(width, dtype=np.float64) - width // 2) / focal
    up = -(np.arange(height, dtype=np.float64) - height // 2) / focal
    x, y = np.meshgrid(right, up)
    p = math.radians(pitch_deg)
    y_p = y * math.cos(p) + math.sin(p)  # forward component is 1 before pitching
    z_p = -y * math.sin(p) + math.cos(p)
    return x, y_p, z_p


def _latitude_rows(lat: np.ndarray, pano_height: int) -> np.ndarray:
    """Row coordinate of each latitude; the south pole lies one row beyond the image, so clamp."""
    return np.clip(pano_height / 2.0 - lat * (pano_height / math.pi), 0.0, pano_height - 1.0).astype(np.float32)


def _check_pano(pano: np.ndarray) -> np.ndarray:
    if pano.ndim != 3 or pano.shape[2] != 3 or pano.dtype != np.uint8:
        raise ValueError(f"panorama must be an (H, W, 3) uint8 array, got {pano.shape} {pano.dtype}")
    if pano.shape[0] < 2 or pano.shape[1] < 2:
        raise ValueError(f"panorama of {pano.shape[1]}x{pano.shape[0]} pixels is too small")
    return np.ascontiguousarray(pano)


def _check_camera(fov_deg: float, width: int, height: int) -> None:
    if not 0.0 < fov_deg < 180.0:
        raise ValueError(f"field of view must lie in (0, 180) degrees, got {fov_deg}")
    if int(width) != width or int(height) != height or width < 1 or height < 1:
        raise ValueError(f"view size must be positive whole pixels, got {width}x{height}")


def perspective_maps(pano_shape: tuple[int, ...], yaw_deg: float, fov_deg: float, width: int, height: int,
                     pitch_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The float32 (x, y) panorama coordinates of every view pixel, from trigonometry alone."""
    _check_camera(fov_deg, width, height)
    pano_h, pano_w = int(pano_shape[0]), int(pano_shape[1])
    x, y, z = _camera_rays(fov_deg, int(width), int(height), pitch_deg)
    yaw = math.radians(yaw_deg)
    x_w = x * math.cos(yaw) + z * math.sin(yaw)  # turn clockwise seen from above
    z_w = -x * math.sin(yaw) + z * math.cos(yaw)
    lon = np.arctan2(x_w, z_w)
    lat = np.arctan2(y, np.hypot(x_w, z_w))
    map_x = np.mod(pano_w / 2.0 + lon * (pano_w / (2.0 * math.pi)), pano_w).astype(np.float32)
    return map_x, _latitude_rows(lat, pano_h)


def cut_uncached(pano: np.ndarray, yaw_deg: float, fov_deg: float, width: int, height: int,
                 pitch_deg: float = 0.0) -> np.ndarray:
    """Reference cut: the whole float grid from trigonometry on every call, as the original
    implementation does (minus its red/blue swap). Ground truth for tests and the benchmark."""
    pano = _check_pano(pano)
    map_x, map_y = perspective_maps(pano.shape, yaw_deg, fov_deg, width, height, pitch_deg)
    return cv2.remap(pano, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)


@dataclass
class _Grid:
    """What a yaw does not change: longitude offsets from the view axis (one row of columns when
    pitch is zero, since a pinhole column then has one longitude) and the row map."""

    lon_cols: np.ndarray  # float64, radians relative to the yaw; (1, w) at zero pitch, else (h, w)
    map_y: np.ndarray  # float32 (h, w)
    map_x: np.ndarray  # float32 (h, w), rewritten by every cut


class PanoramaCutter:
    """Cuts perspective views fast by caching the grid per panorama size and pitch.

    A yaw only adds a constant to longitude, i.e. shifts the column map; rows stay put. So each
    cut computes `width` column coordinates, broadcasts them into the x map, and remaps with float
    maps (OpenCV's float path interpolates exactly; its 1/32-pixel fixed-point maps drift by up to
    ~6 levels on sharp edges). The result equals `cut_uncached` up to float rounding.
    """

    def __init__(self, fov_deg: float = 120.0, width: int = 1024, height: int = 512) -> None:
        _check_camera(fov_deg, width, height)
        self.fov_deg = float(fov_deg)
        self.width = int(width)
        self.height = int(height)
        self._grids: OrderedDict[tuple[Any, ...], _Grid] = OrderedDict()
        self._lock = threading.Lock()  # the x map buffers are shared between calls

    @property
    def focal_px(self) -> float:
        return 0.5 * self.width / math.tan(math.radians(self.fov_deg) / 2.0)

    @property
    def grid_count(self) -> int:
        """Grids built and kept; stays at one for any number of yaws on one panorama size."""
        return len(self._grids)

    def _grid(self, pano_h: int, pano_w: int, pitch_deg: float) -> _Grid:
        key = (pano_h, pano_w, self.fov_deg, self.width, self.height, float(pitch_deg))
        grid = self._grids.get(key)
        if grid is not None:
            self._grids.move_to_end(key)
            return grid
        x, y, z = _camera_rays(self.fov_deg, self.width, self.height, pitch_deg)
        lon = np.arctan2(x, z)
        lat = np.arctan2(y, np.hypot(x, z))
        lon_cols = lon[:1].copy() if pitch_deg == 0.0 else lon
        grid = _Grid(lon_cols, _latitude_rows(lat, pano_h), np.empty((self.height, self.width), np.float32))
        self._grids[key] = grid
        if len(self._grids) > MAX_GRIDS:
            self._grids.popitem(last=False)
        return grid

    def cut(self, pano: np.ndarray, yaw_deg: float, pitch_deg: float = 0.0) -> np.ndarray:
        """The (height, width, 3) uint8 view looking `yaw_deg` clockwise of the panorama centre."""
        pano = _check_pano(pano)
        pano_h, pano_w = pano.shape[:2]
        col_scale = pano_w / (2.0 * math.pi)
        start = pano_w / 2.0 + (float(yaw_deg) % 360.0) * (pano_w / 360.0)
        with self._lock:
            grid = self._grid(pano_h, pano_w, pitch_deg)
            cols = np.mod(start + grid.lon_cols * col_scale, pano_w)
            np.copyto(grid.map_x, cols, casting="same_kind")  # broadcasts one row over all rows
            return cv2.remap(pano, grid.map_x, grid.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)

    def clear(self) -> None:
        with self._lock:
            self._grids.clear()


def load_panorama(path: Path) -> np.ndarray:
    """An RGB uint8 equirectangular panorama; anything else is a DataError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "no such panorama file")
    try:
        with Image.open(path) as im:
            im.load()  # decode now: a truncated file raises here, not later in a cut
            rgb = im.convert("RGB")
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise DataError(path, f"unreadable image ({exc})") from None
    width, height = rgb.size
    if abs(width / height - 2.0) > ASPECT_TOLERANCE:
        raise DataError(path, f"not a 2:1 equirectangular panorama: found {width}x{height} pixels")
    return np.asarray(rgb, dtype=np.uint8)


def _file_names(node_id: str) -> list[str]:
    """Names a node's panorama may have; ids that already carry the suffix are used as they are."""
    stem, suffix = os.path.splitext(node_id)
    if suffix.lower() in IMAGE_SUFFIXES:
        return [node_id] + [stem + s for s in IMAGE_SUFFIXES if s != suffix.lower()]
    return [node_id + s for s in IMAGE_SUFFIXES]


@VIEW_SOURCES.register("panorama-folder")
class PanoramaFolderSource(ViewSource):
    """Real street-view imagery: `<node id>.jpg` panoramas in one folder, cut per heading."""

    name = "panorama-folder"
    synthetic = False

    def __init__(self, world: World, folder: str, provider: str = "google", offset_deg: float | None = None,
                 fov_deg: float = 120.0, width: int = 1024, height: int = 512, cache_size: int = 8,
                 check: str = "lazy", pano_width: int = PANO_WIDTH) -> None:
        key = str(provider).lower()
        if key not in PROVIDER_OFFSETS:
            raise ConfigError(f"panorama-folder: unknown provider '{provider}'; known: "
                              f"{', '.join(sorted(PROVIDER_OFFSETS))} (or give offset_deg)")
        if check not in ("lazy", "all"):
            raise ConfigError(f"panorama-folder: check must be 'lazy' or 'all', got '{check}'")
        if isinstance(pano_width, bool) or int(pano_width) != pano_width or pano_width < 0 or pano_width % 2:
            raise ConfigError(f"panorama-folder: pano_width must be an even whole number >= 0, got {pano_width}")
        if int(cache_size) != cache_size or cache_size < 0:
            raise ConfigError(f"panorama-folder: cache_size must be a whole number >= 0, got {cache_size}")
        self.folder = Path(folder).expanduser()
        if not self.folder.is_dir():
            raise ConfigError(f"panorama-folder: panorama folder {self.folder} does not exist or is not a folder")
        try:
            self.cutter = PanoramaCutter(fov_deg, width, height)
        except ValueError as exc:
            raise ConfigError(f"panorama-folder: {exc}") from None
        self.provider = key
        self.offset_deg = float(PROVIDER_OFFSETS[key] if offset_deg is None else offset_deg)
        self.cache_size = int(cache_size)
        self.pano_width = int(pano_width)
        self.check = check
        self._paths: dict[str, Path] = {}
        self._panos: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        if check == "all":
            self._scan(world)

    def _scan(self, world: World) -> None:
        """Find every node's file up front, so a long run cannot stop halfway on a missing one."""
        present = {entry.name for entry in os.scandir(self.folder) if entry.is_file()}
        missing = []
        for node_id in world.graph.nodes:
            found = next((n for n in _file_names(node_id) if n in present), None)
            if found is None:
                missing.append(_file_names(node_id)[0])
            else:
                self._paths[node_id] = self.folder / found
        if missing:
            listed = ", ".join(missing[:_MISSING_LISTED]) + (", ..." if len(missing) > _MISSING_LISTED else "")
            raise DataError(self.folder, f"{len(missing)} of {len(world.graph)} graph nodes have no panorama "
                            f"({'/'.join(IMAGE_SUFFIXES)}); missing: {listed}")

    def _path(self, node_id: str) -> Path:
        path = self._paths.get(node_id)
        if path is not None:
            return path
        names = _file_names(node_id)
        for name in names:
            candidate = self.folder / name
            if candidate.is_file():
                self._paths[node_id] = candidate
                return candidate
        raise DataError(self.folder / names[0], f"no panorama for node '{node_id}' "
                        f"(also looked for {', '.join(names[1:])})")

    def panorama(self, node_id: str) -> np.ndarray:
        """The decoded panorama, from a small LRU cache: consecutive steps revisit few nodes."""
        with self._lock:
            pano = self._panos.get(node_id)
            if pano is not None:
                self._panos.move_to_end(node_id)
                return pano
        pano = load_panorama(self._path(node_id))
        if self.cache_size:
            with self._lock:
                self._panos[node_id] = pano
                while len(self._panos) > self.cache_size:
                    self._panos.popitem(last=False)
        return pano

    def images(self, node: Node, headings: Sequence[float]) -> list[np.ndarray]:
        pano = self.panorama(node.id)
        return [self.cutter.cut(pano, float(h) - node.heading + self.offset_deg) for h in headings]

    def panorama_view(self, node: Node, facing: float) -> np.ndarray:
        """The file downscaled (area averaging) to `pano_width` x `pano_width / 2` and rolled so
        its centre looks along `facing`; the file's centre looks along car heading - offset."""
        pano = self.panorama(node.id)
        if self.pano_width and pano.shape[1] != self.pano_width:
            pano = cv2.resize(pano, (self.pano_width, self.pano_width // 2), interpolation=cv2.INTER_AREA)
        return recentre(pano, node.heading - self.offset_deg, facing)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "folder": str(self.folder.resolve()), "provider": self.provider,
                "offset_deg": self.offset_deg, "fov_deg": self.cutter.fov_deg, "width": self.cutter.width,
                "height": self.cutter.height, "interpolation": "bilinear", "pano_width": self.pano_width}

    def close(self) -> None:
        with self._lock:
            self._panos.clear()
        self.cutter.clear()

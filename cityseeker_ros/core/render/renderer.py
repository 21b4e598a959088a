"""The reference renderer: street views of a Scene from the nodes of its StreetGraph, on the CPU.

Per scene it prepares wall arrays with a spatial index, board placements and clutter; per
view it casts columns against nearby walls (caster), shades everything with one texture
gather (compose), draws boards and clutter sprites with depth tests (quads) and reports the
signs that show. Output depends only on (scene, graph, settings, node, heading, image size),
never on time, caches or dict order, so equal inputs give equal bytes.
"""
from __future__ import annotations

import functools
import io
import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.render.boards import BoardCache
from cityseeker_ros.core.render.camera import Pose, camera_model
from cityseeker_ros.core.render.caster import cast_walls
from cityseeker_ros.core.render.clearance import cameras_outside
from cityseeker_ros.core.render.clutter import Sprite, place_clutter, sprite_textures
from cityseeker_ros.core.render.compose import compose
from cityseeker_ros.core.render.ground import ground_map
from cityseeker_ros.core.render.landmarks import VisibleLandmark, crown_span, crown_texture, shaft_texture
from cityseeker_ros.core.render.mipmap import MipTexture
from cityseeker_ros.core.render.quads import draw_quads
from cityseeker_ros.core.render.settings import DEFAULT_FONT, RenderSettings
from cityseeker_ros.core.render.signs import place_boards
from cityseeker_ros.core.render.skyline import Skyline
from cityseeker_ros.core.render.textures import texture_table
from cityseeker_ros.core.render.view import RenderedView, VisibleSign
from cityseeker_ros.core.render.walls import WallSet
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.worlds.scene import Scene

# 2: long names never cut (two lines, abbreviations); no camera inside a footprint
# 3: roads at their width, ground cover by landuse, scene trees, a distant skyline, landmarks
RENDERER_VERSION = "3"
POLE_WIDTH_M = 0.12
TREE_WIDTH = 0.55  # crown width over height of a scene tree
MAX_PIXELS = 4096 * 4096


class Renderer:
    """Renders perspective views and equirectangular panoramas at graph nodes."""

    def __init__(self, scene: Scene, graph: StreetGraph, settings: RenderSettings = RenderSettings()) -> None:
        if not isinstance(settings, RenderSettings):
            raise ConfigError(f"render settings must be a RenderSettings, got {type(settings).__name__}")
        self.scene, self.graph, self.settings = scene, graph, settings
        font = str(settings.resolve_font()) if settings.signs else ""
        ids = sorted(graph.nodes)
        if ids:
            lat = np.array([graph.nodes[i].lat for i in ids])
            lon = np.array([graph.nodes[i].lon for i in ids])
            xy = np.atleast_2d(scene.frame.to_xy(lat, lon))
            self.node_xy = {i: (float(x), float(y)) for i, (x, y) in zip(ids, xy)}
        else:
            self.node_xy = {}
        # Nodes inside a footprint see from just outside it, never from inside the walls.
        self.camera_moved = cameras_outside(self.node_xy, scene.buildings)
        buildings = WallSet(scene.buildings)
        self.sprites, boxes = place_clutter(graph, self.node_xy, buildings, settings.clutter, settings.seed)
        self.sprites = self.sprites + [Sprite("tree", t.x, t.y, round(TREE_WIDTH * t.height_m, 3), t.height_m)
                                       for t in scene.trees]
        xy = np.array([self.node_xy[i] for i in ids], np.float64).reshape(-1, 2)
        self.ground = ground_map(scene, xy, settings.max_distance_m)
        built_up = len(scene.buildings) >= 50
        self.skyline = Skyline(scene.origin_lat, scene.origin_lon, built_up)
        self.landmarks = list(scene.landmarks)
        self._landmark_seen = [frozenset(m.visible_nodes) for m in self.landmarks]
        self._font = font or (str(settings.resolve_font()) if Path(settings.font_path or DEFAULT_FONT).is_file()
                              else "")
        self.walls = WallSet(scene.buildings, boxes) if boxes else buildings
        self.boards = place_boards(scene.pois, buildings, settings, font) if settings.signs else []
        self._board_left = np.array([b.left for b in self.boards], np.float64).reshape(-1, 2)
        self._board_right = np.array([b.right for b in self.boards], np.float64).reshape(-1, 2)
        self._board_normal = np.array([b.normal for b in self.boards], np.float64).reshape(-1, 2)
        self._board_z = np.array([(b.z0, b.z1) for b in self.boards], np.float64).reshape(-1, 2)
        self._board_on_pole = np.array([b.on_pole for b in self.boards], bool)
        self._sprite_xy = np.array([(s.x, s.y) for s in self.sprites], np.float64).reshape(-1, 2)
        self._sprite_size = np.array([(s.width_m, s.height_m) for s in self.sprites], np.float64).reshape(-1, 2)
        self._board_cache = BoardCache(font) if settings.signs else None
        self._table = texture_table()

    def perspective(self, node_id: str, heading_deg: float, *, fov_deg: float = 90.0, width: int = 640,
                    height: int = 480, pitch_deg: float = 0.0) -> RenderedView:
        """A pinhole view looking along `heading_deg` (clockwise from north) from the node's eye point."""
        _check_size(width, height)
        if not _finite(fov_deg) or not 1.0 <= fov_deg <= 170.0:
            raise ConfigError(f"fov_deg={fov_deg!r}: must be a number in [1, 170]")
        if not _finite(heading_deg):
            raise ConfigError(f"heading_deg={heading_deg!r}: must be a finite number")
        if pitch_deg != 0:
            raise ConfigError(f"pitch_deg={pitch_deg!r}: the reference renderer draws level views only (pitch 0)")
        heading = float(heading_deg) % 360.0
        x, y = self._node(node_id)
        model = camera_model("perspective", width, height, float(fov_deg), self.settings.eye_height_m)
        pose = Pose.at(model, x, y, self.settings.eye_height_m, heading)
        return self._render(pose, node_id, {"kind": "perspective", "heading_deg": heading, "fov_deg": float(fov_deg),
                                            "pitch_deg": 0.0})

    def panorama(self, node_id: str, *, width: int = 2048, height: int = 1024) -> RenderedView:
        """An equirectangular panorama. The centre column looks along the node's capture heading
        (as Street View panoramas do); azimuth grows clockwise to the right, so column c looks at
        heading + (c + 0.5) / width * 360 - 180 degrees, and row r at elevation 90 - (r + 0.5) / height * 180."""
        _check_size(width, height)
        if width != 2 * height:
            raise ConfigError(f"panorama size {width}x{height}: width must be twice the height")
        x, y = self._node(node_id)
        heading = float(self.graph.nodes[node_id].heading) % 360.0
        model = camera_model("panorama", width, height, 360.0, self.settings.eye_height_m)
        pose = Pose.at(model, x, y, self.settings.eye_height_m, heading)
        return self._render(pose, node_id, {"kind": "panorama", "heading_deg": heading, "fov_deg": 360.0,
                                            "pitch_deg": 0.0})

    def _node(self, node_id: str) -> tuple[float, float]:
        """Where the camera stands at a node: the node, or outside the footprint it lies in."""
        try:
            xy = self.node_xy[node_id]
        except (KeyError, TypeError):
            raise ConfigError(f"node '{node_id}' is not in street graph '{self.graph.name}'") from None
        return self.camera_moved.get(node_id, xy)

    def _render(self, pose: Pose, node_id: str, meta: dict[str, Any]) -> RenderedView:
        s = self.settings
        layer = cast_walls(pose, self.walls, s.max_distance_m)
        image = compose(pose, layer, self.walls, self._table, s.max_distance_m, self.ground, self.skyline)
        boards = self._boards_in_view(pose)
        extras = sprite_textures()
        # Quads, nearest-wins among themselves: boards first, then posts under free-standing boards,
        # then trees and lamp posts (billboards turned to the camera).
        left, right = [self._board_left[boards]], [self._board_right[boards]]
        z0, z1 = [self._board_z[boards, 0]], [self._board_z[boards, 1]]
        textures: list[Callable[[], MipTexture]] = [functools.partial(self._board_texture, int(i)) for i in boards]
        poles = boards[self._board_on_pole[boards]]
        if len(poles):  # just behind the board, so the board wins where they overlap
            centre = (self._board_left[poles] + self._board_right[poles]) / 2.0 - self._board_normal[poles] * 0.06
            a, b = _billboards(pose, centre, np.full(len(poles), POLE_WIDTH_M))
            left.append(a)
            right.append(b)
            z0.append(np.zeros(len(poles)))
            z1.append(self._board_z[poles, 0])
            textures += [functools.partial(extras.__getitem__, "pole")] * len(poles)
        if len(self._sprite_xy):
            d2 = (self._sprite_xy[:, 0] - pose.x) ** 2 + (self._sprite_xy[:, 1] - pose.y) ** 2
            near = np.flatnonzero((d2 <= s.max_distance_m ** 2) & (d2 > 0.09))
            a, b = _billboards(pose, self._sprite_xy[near], self._sprite_size[near, 0])
            left.append(a)
            right.append(b)
            z0.append(np.zeros(len(near)))
            z1.append(self._sprite_size[near, 1])
            textures += [functools.partial(extras.__getitem__, self.sprites[i].kind) for i in near]
        marks = self._landmarks_in_view(pose, node_id)
        if marks:
            centre = np.array([self.landmarks[i].xy for i in marks], np.float64)
            width = np.array([self.landmarks[i].width_m for i in marks], np.float64)
            a, b = _billboards(pose, centre, width)
            spans = [crown_span(self.landmarks[i]) for i in marks]
            left += [a, a]  # shafts, then crowns
            right += [b, b]
            z0 += [np.zeros(len(marks)), np.array([lo for lo, _ in spans])]
            z1 += [np.array([lo for lo, _ in spans]), np.array([hi for _, hi in spans])]
            textures += [functools.partial(shaft_texture, self.landmarks[i].name, lo, self.landmarks[i].width_m,
                                           self._font) for i, (lo, _) in zip(marks, spans)]
            textures += [functools.partial(crown_texture, self.landmarks[i].colour) for i in marks]
        n_quads = len(textures)
        unhazed = np.zeros(n_quads, bool)
        unhazed[n_quads - 2 * len(marks):] = True
        stats = draw_quads(image, pose, layer, np.concatenate(left), np.concatenate(right), np.concatenate(z0),
                           np.concatenate(z1), textures, s.max_distance_m, unhazed)
        landmarks = self._visible_landmarks(pose, marks, stats, n_quads - len(marks))
        m = pose.model
        above = m.horizon_row * m.width
        content = np.count_nonzero(layer.label[:, :m.horizon_row] >= 0)
        drawn = stats.drawn[stats.drawn < above]
        if len(drawn):  # quad pixels over the sky (not over walls, counted already)
            over_sky = np.zeros(above, bool)
            over_sky[drawn] = True
            over_sky &= (layer.label[:, :m.horizon_row] < 0).T.ravel()
            content += np.count_nonzero(over_sky)
        meta["above_horizon_content"] = round(float(content) / above, 4) if above else 0.0
        signs = []
        for k, i in enumerate(boards):
            if stats.visible[k] == 0:
                continue
            b = self.boards[i]
            cx, cy = b.centre
            text_px = float(stats.height_px[k] * self._board_em(int(i)))
            signs.append(VisibleSign(
                poi_id=b.poi_id, text=b.text, poi_class=b.poi_class,
                bbox=tuple(int(v) for v in stats.bbox[k]),  # type: ignore[arg-type]
                distance_m=round(math.hypot(cx - pose.x, cy - pose.y), 3),
                text_height_px=round(text_px, 2), legible=text_px >= s.min_text_px,
                visible_fraction=round(min(1.0, float(stats.visible[k]) / max(float(stats.area_px[k]), 1.0)), 4)))
        signs.sort(key=lambda v: (v.distance_m, v.poi_id))
        image = self._degrade(image)
        if node_id in self.camera_moved:
            meta["camera_moved_m"] = round(math.dist(self.node_xy[node_id], self.camera_moved[node_id]), 3)
        meta.update({"renderer_version": RENDERER_VERSION, "node_id": node_id, "width": pose.model.width,
                     "height": pose.model.height, "camera_xy": (round(pose.x, 3), round(pose.y, 3)),
                     "eye_height_m": s.eye_height_m, "synthetic": True, "settings": s.describe()})
        return RenderedView(image=image, signs=signs, meta=meta, landmarks=landmarks)

    def _landmarks_in_view(self, pose: Pose, node_id: str) -> list[int]:
        """Landmarks to draw: all within the draw distance (walls hide them as they should), and
        beyond it those whose line of sight from this node is clear (no walls are cast there)."""
        out = []
        for i, m in enumerate(self.landmarks):
            far = math.hypot(m.xy[0] - pose.x, m.xy[1] - pose.y) > self.settings.max_distance_m
            if far and self._landmark_seen[i] and node_id not in self._landmark_seen[i]:
                continue
            out.append(i)
        return out

    def _visible_landmarks(self, pose: Pose, marks: list[int], stats, first: int) -> list[VisibleLandmark]:
        out = []
        for k, i in enumerate(marks):
            q = first + k
            if stats.visible[q] == 0:
                continue
            m = self.landmarks[i]
            x0, y0, x1, y1 = (int(v) for v in stats.bbox[q])
            dx, dy = m.xy[0] - pose.x, m.xy[1] - pose.y
            out.append(VisibleLandmark(
                landmark_id=m.id, name=m.name, colour=tuple(m.colour), column=round((x0 + x1) / 2.0, 2),
                bbox=(x0, y0, x1, y1), crown_height_px=round(float(stats.height_px[q]), 3),
                distance_m=round(math.hypot(dx, dy), 3),
                bearing_deg=round(math.degrees(math.atan2(dx, dy)) % 360.0, 3), visible_px=int(stats.visible[q])))
        out.sort(key=lambda v: (v.distance_m, v.landmark_id))
        return out

    def _board_texture(self, i: int) -> MipTexture:
        b = self.boards[i]
        return self._board_cache.get(i, b.text, b.style, b.pictogram, b.width_m)[0]

    def _board_em(self, i: int) -> float:
        b = self.boards[i]
        return self._board_cache.get(i, b.text, b.style, b.pictogram, b.width_m)[1]

    def _boards_in_view(self, pose: Pose) -> np.ndarray:
        """Boards near enough, seen from the front and (for perspective views) inside the frame."""
        if not self.boards:
            return np.zeros(0, np.int64)
        centre = (self._board_left + self._board_right) / 2.0
        dx, dy = centre[:, 0] - pose.x, centre[:, 1] - pose.y
        near = dx * dx + dy * dy <= self.settings.max_distance_m ** 2
        front = (-dx * self._board_normal[:, 0] - dy * self._board_normal[:, 1]) > 0
        idx = np.flatnonzero(near & front)
        if pose.model.kind == "perspective" and len(idx):
            c0, c1 = pose.column_spans(self._board_left[idx], self._board_right[idx])
            idx = idx[c0 <= c1]
        return idx

    def _degrade(self, image: np.ndarray) -> np.ndarray:
        """Blur, then JPEG artefacts, as the settings ask; geometry and ground truth stay as they were."""
        s = self.settings
        if s.blur_sigma <= 0 and s.jpeg_quality is None:
            return image
        pil = Image.fromarray(image, "RGB")
        if s.blur_sigma > 0:
            pil = pil.filter(ImageFilter.GaussianBlur(radius=s.blur_sigma))
        if s.jpeg_quality is not None:
            buf = io.BytesIO()
            pil.save(buf, format="JPEG", quality=s.jpeg_quality)
            buf.seek(0)
            pil = Image.open(buf).convert("RGB")
        return np.asarray(pil, np.uint8).copy()


def _billboards(pose: Pose, centre: np.ndarray, width_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left and right ends of upright quads centred on `centre`, square to the line of sight."""
    d = centre - (pose.x, pose.y)
    dist = np.maximum(np.sqrt(d[:, 0] ** 2 + d[:, 1] ** 2), 1e-6)
    half = np.stack([d[:, 1], -d[:, 0]], axis=1) * (width_m / (2.0 * dist))[:, None]  # to the viewer's right
    return centre - half, centre + half


def _check_size(width: int, height: int) -> None:
    for name, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 8:
            raise ConfigError(f"{name}={v!r}: must be an integer of at least 8 pixels")
    if width * height > MAX_PIXELS:
        raise ConfigError(f"image {width}x{height} is larger than {MAX_PIXELS} pixels")


def _finite(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)

"""What the ground shows where: a top-down map of ground covers rasterised once per scene.

Roads at their width with kerbs, sidewalks and verges, landuse cover (grass, fields, forest
floor, parking, water, ...), and a paved apron around every building are painted, in that
order of precedence from last to first, into a grid of GROUND_CELL_M cells; the compositor
looks each ground pixel up in it (one gather). Scenes without roads or areas (hand-made test
scenes, dressed graphs, worlds built before roads were kept) get no map and keep the cobbled
street with pavements along the walls.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import numpy as np
from PIL import Image, ImageDraw

from cityseeker_ros.core.render.textures import GROUND_COVERS
from cityseeker_ros.core.worlds.scene import Scene

GROUND_CELL_M = 0.5
MAX_CELLS = 48_000_000  # one byte each; Monaco with a 250 m margin needs 41 M at 0.5 m
KERB_M = 0.5
APRON_M = 2.2  # paved strip along every wall (render.clutter.PAVEMENT_M)
URBAN_M = 12.0  # ground this near a building is paved unless landuse says otherwise; farther is grass
COVER = {name: i + 1 for i, name in enumerate(GROUND_COVERS)}  # 0: the legacy cobbled road
_AREA_COVER = {"grass": "grass", "field": "field", "forest": "forest", "parking": "parking", "water": "water",
               "sand": "sand", "paving": "pavement", "bare": "gravel", "commercial": "pavement",
               "retail": "pavement", "industrial": "gravel"}  # residential: lawns and paving as they fall
_SURFACE = {"asphalt": "asphalt", "paving": "pavement", "gravel": "gravel"}
KERB_LIGHT = 1.1


class GroundMap:
    """Ground cover per GROUND_CELL_M cell over the streets' extent plus the draw distance."""

    def __init__(self, scene: Scene, node_xy: np.ndarray, margin_m: float) -> None:
        pts = [np.asarray(node_xy, np.float64).reshape(-1, 2)]
        pts += [np.asarray(r.line, np.float64) for r in scene.roads[:1]]
        allp = np.concatenate(pts)
        lo = np.floor(allp.min(axis=0) - margin_m)
        hi = np.ceil(allp.max(axis=0) + margin_m)
        cell = GROUND_CELL_M
        while (hi[0] - lo[0]) * (hi[1] - lo[1]) / (cell * cell) > MAX_CELLS:
            cell *= 2.0
        self.cell = cell
        self.origin = (float(lo[0]), float(lo[1]))
        self.shape = (int(math.ceil((hi[1] - lo[1]) / cell)), int(math.ceil((hi[0] - lo[0]) / cell)))  # rows, cols
        self.classes = self._paint(scene)

    def _px(self, points: Sequence[Sequence[float]]) -> list[tuple[float, float]]:
        """Grid coordinates (column, row from the south edge) of metric points."""
        ox, oy = self.origin
        return [((p[0] - ox) / self.cell, (p[1] - oy) / self.cell) for p in points]

    def _paint(self, scene: Scene) -> np.ndarray:
        image = Image.new("L", (self.shape[1], self.shape[0]), COVER["grass"])
        draw = ImageDraw.Draw(image)
        px = self.cell

        def outline(points: Sequence[Sequence[float]], value: int, width_m: float, closed: bool) -> None:
            xy = self._px(points)
            if closed:
                xy = xy + xy[:1]
            w = max(1, int(round(width_m / px)))
            draw.line(xy, fill=value, width=w, joint="curve")
            if w > 2:  # round the ends, as PIL's joints do not
                r = w / 2.0
                for x, y in (xy[0], xy[-1]):
                    draw.ellipse((x - r, y - r, x + r, y + r), fill=value)

        for b in scene.buildings:  # city blocks: paved between buildings
            outline(b.footprint, COVER["pavement"], 2 * URBAN_M, True)
        for a in scene.areas:  # largest first (the builder sorts them), so small areas lie on top
            cover = _AREA_COVER.get(a.cover)
            if cover is not None and len(a.ring) >= 3:
                draw.polygon(self._px(a.ring), fill=COVER[cover])
        for r in scene.roads:
            if r.verge_m > 0:
                outline(r.line, COVER["grass"], r.width_m + 2 * (r.sidewalk_m + KERB_M + r.verge_m), False)
        for b in scene.buildings:
            outline(b.footprint, COVER["pavement"], 2 * APRON_M, True)
        for r in scene.roads:
            if r.sidewalk_m > 0:
                outline(r.line, COVER["pavement"], r.width_m + 2 * (r.sidewalk_m + KERB_M), False)
        for r in scene.roads:
            if r.kerb:
                outline(r.line, COVER["kerb"], r.width_m + 2 * KERB_M, False)
        for kind in ("paths", "roads"):  # car roads over the paths that cross them
            for r in scene.roads:
                if (r.surface == "asphalt") == (kind == "roads"):
                    outline(r.line, COVER[_SURFACE.get(r.surface, "asphalt")], r.width_m, False)
        return np.asarray(image, np.uint8).copy()  # row r holds y = origin + r * cell (PIL rows as drawn)

    def lookup(self, cx: float, cy: float, rel_x: np.ndarray, rel_y: np.ndarray) -> np.ndarray:
        """Cover index (1-based into GROUND_COVERS) at points `rel` (float32) from the camera at
        (cx, cy); grass outside the map. Offsets stay small, so float32 keeps cell accuracy."""
        ox, oy = self.origin
        inv = np.float32(1.0 / self.cell)
        gx = np.floor((rel_x + np.float32(cx - ox)) * inv).astype(np.int32)
        gy = np.floor((rel_y + np.float32(cy - oy)) * inv).astype(np.int32)
        rows, cols = self.shape
        inside = (gx >= 0) & (gx < cols) & (gy >= 0) & (gy < rows)
        flat = np.where(inside, gy * cols + gx, 0)
        return np.where(inside, self.classes.ravel()[flat], np.uint8(COVER["grass"]))


def ground_map(scene: Scene, node_xy: np.ndarray, margin_m: float) -> Optional[GroundMap]:
    """The scene's ground map, or None for a scene that maps no roads or areas."""
    if not scene.roads and not scene.areas:
        return None
    return GroundMap(scene, node_xy, margin_m)

"""Maps of paths against the reference route: city indexes, projection and the SVG drawing
that the trajectory cards and the step viewer share."""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cityseeker_ros.core.streets.graph import StreetGraph

GraphLoader = Callable[[dict], dict[str, StreetGraph]]

EARTH_RADIUS_M = 6_371_008.8

@dataclass
class CityIndex:
    """A city's node coordinates and undirected edges as arrays, built once per report."""

    index: dict[str, int]
    latlon: np.ndarray
    edges: np.ndarray  # (m, 2) node indices, each street segment once

    @classmethod
    def build(cls, graph: StreetGraph) -> CityIndex:
        ids = list(graph.nodes)
        index = {nid: i for i, nid in enumerate(ids)}
        pairs = {(min(a, b), max(a, b)) for a, b in
                 ((index[e.source], index[e.target]) for e in graph.edges) if a != b}
        edges = np.array(sorted(pairs), dtype=int).reshape(-1, 2)
        return cls(index, graph.latlon(ids) if ids else np.zeros((0, 2)), edges)


@dataclass
class Geometry:
    """Everything one trajectory plot needs, in lat/lon."""

    path: np.ndarray
    reference: np.ndarray
    start: np.ndarray
    target: np.ndarray | None
    final: np.ndarray
    segments: np.ndarray  # (m, 2, 2) street segments near the episode


def _latlon_array(value: object) -> np.ndarray | None:
    try:
        arr = np.asarray(value, dtype=float).reshape(-1, 2)
    except (TypeError, ValueError):
        return None
    return arr if len(arr) else None


def geometry_from_graph(record: dict, city: CityIndex, margin_m: float) -> Geometry | None:
    path = list(record.get("path") or [])
    reference = list(record.get("reference_path") or [])
    target = record.get("target") or (reference[-1] if reference else None)
    needed = path + reference + ([target] if target else [])
    if not path or any(n not in city.index for n in needed):
        return None

    def ll(ids: Sequence[str]) -> np.ndarray:
        return city.latlon[[city.index[n] for n in ids]].reshape(-1, 2)

    path_ll, ref_ll, target_ll = ll(path), ll(reference), ll([target] if target else [])
    focus = np.vstack([path_ll, ref_ll, target_ll])
    return Geometry(path_ll, ref_ll, path_ll[0], target_ll[0] if target else None,
                    path_ll[-1], _segments_near(city, focus, margin_m))


def geometry_from_record(record: dict) -> Geometry | None:
    """Fallback without a graph: coordinates the benchmark may store beside node ids."""
    path = _latlon_array(record.get("path_latlon"))
    if path is None:
        return None
    ref = _latlon_array(record.get("reference_latlon"))
    ref = ref if ref is not None else np.zeros((0, 2))
    target = _latlon_array(record.get("target_latlon"))
    target = target[0] if target is not None else (ref[-1] if len(ref) else None)
    return Geometry(path, ref, path[0], target, path[-1], np.zeros((0, 2, 2)))


def _segments_near(city: CityIndex, focus: np.ndarray, margin_m: float) -> np.ndarray:
    """Street segments with an end inside the episode's bounding box plus a margin."""
    if not len(city.edges):
        return np.zeros((0, 2, 2))
    lat0 = float(focus[:, 0].mean())
    dlat = math.degrees(margin_m / EARTH_RADIUS_M)
    dlon = dlat / max(math.cos(math.radians(lat0)), 1e-6)
    lo = focus.min(axis=0) - (dlat, dlon)
    hi = focus.max(axis=0) + (dlat, dlon)
    inside = np.all((city.latlon >= lo) & (city.latlon <= hi), axis=1)
    keep = inside[city.edges[:, 0]] | inside[city.edges[:, 1]]
    return city.latlon[city.edges[keep]]


def project(latlon: np.ndarray, lat0: float, lon0: float) -> np.ndarray:
    """Local equirectangular projection to east/north metres; exact enough within a few km."""
    latlon = np.asarray(latlon, dtype=float).reshape(-1, 2)
    x = np.radians(latlon[:, 1] - lon0) * math.cos(math.radians(lat0)) * EARTH_RADIUS_M
    y = np.radians(latlon[:, 0] - lat0) * EARTH_RADIUS_M
    return np.stack([x, y], axis=1)


def nice_length(max_m: float) -> float:
    """The largest 1/2/5 x 10^k metres not above max_m, for a readable scale bar."""
    if max_m <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(max_m))
    return max(s * base for s in (1, 2, 5) if s * base <= max_m)


# ---------------------------------------------------------------- SVG

SVG_W, MAP_H, LEGEND_H, PAD = 520, 360, 30, 16
COLORS = {"street": "#c9ccd1", "reference": "#2e9d4f", "path": "#1f5fbf",
          "start": "#222222", "target": "#d62728", "final": "#ff8c00"}


def _pts(xy: np.ndarray) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)


def _star(x: float, y: float, r: float) -> str:
    angles = np.radians(np.arange(10) * 36.0 - 90.0)
    radii = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
    return _pts(np.stack([x + radii * np.cos(angles), y + radii * np.sin(angles)], axis=1))


def _marker(kind: str, x: float, y: float) -> str:
    if kind == "start":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5.5" fill="{COLORS["start"]}" stroke="#fff"/>'
    if kind == "target":
        return (f'<polygon points="{_star(x, y, 9)}" fill="{COLORS["target"]}" '
                'stroke="#fff" stroke-width="1"/>')
    return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8" fill="none" stroke="{COLORS["final"]}" '
            'stroke-width="3"/>')


def _legend() -> str:
    y = MAP_H + LEGEND_H / 2
    items = [("reference", "reference"), ("path", "agent path"), ("start", "start"),
             ("target", "target"), ("final", "final node")]
    parts, x = [], 12.0
    for kind, label in items:
        if kind in ("reference", "path"):
            width = 6 if kind == "reference" else 2.5
            opacity = ' stroke-opacity="0.55"' if kind == "reference" else ""
            parts.append(f'<line x1="{x:.0f}" y1="{y:.0f}" x2="{x + 22:.0f}" y2="{y:.0f}" '
                         f'stroke="{COLORS[kind]}" stroke-width="{width}"{opacity}/>')
            x += 28
        else:
            parts.append(_marker(kind, x + 6, y))
            x += 18
        parts.append(f'<text x="{x:.0f}" y="{y + 4:.0f}">{label}</text>')
        x += 7.2 * len(label) + 14
    return "".join(parts)


def _scale_bar(metres_per_px: float) -> str:
    length_m = nice_length(0.3 * (SVG_W - 2 * PAD) * metres_per_px)
    px = length_m / metres_per_px
    x0, y0 = PAD, MAP_H - PAD
    label = f"{length_m:g} m" if length_m < 1000 else f"{length_m / 1000:g} km"
    return (f'<rect x="{x0 - 4}" y="{y0 - 20}" width="{px + 8:.1f}" height="26" fill="#fff" '
            f'fill-opacity="0.85"/>'
            f'<path d="M{x0},{y0 - 5} v5 h{px:.1f} v-5" fill="none" stroke="#222" '
            f'stroke-width="1.5"/>'
            f'<text x="{x0 + px / 2:.1f}" y="{y0 - 8}" text-anchor="middle">{label}</text>')


def frame_metres(xy: np.ndarray) -> tuple[float, np.ndarray]:
    """Pixels per metre and the centre (east/north metres) that frame the points with a margin."""
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.maximum(hi - lo, 20.0)
    lo, hi = lo - 0.12 * span - 10, hi + 0.12 * span + 10
    scale = min((SVG_W - 2 * PAD) / (hi[0] - lo[0]), (MAP_H - 2 * PAD) / (hi[1] - lo[1]))
    return float(scale), (lo + hi) / 2


def fit_map(geo: Geometry) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """lat/lon -> SVG pixels (north up) framing the episode, and the pixels per metre."""
    points = [geo.path, geo.reference, geo.start[None, :]]
    if geo.target is not None:
        points.append(geo.target[None, :])
    focus = np.vstack(points)
    lat0, lon0 = float(focus[:, 0].mean()), float(focus[:, 1].mean())
    scale, centre = frame_metres(project(focus, lat0, lon0))
    offset = np.array([SVG_W / 2, MAP_H / 2])

    def to_px(ll: np.ndarray) -> np.ndarray:
        m = project(ll, lat0, lon0) - centre
        return offset + np.stack([m[:, 0], -m[:, 1]], axis=1) * scale

    return to_px, float(scale)


def trajectory_svg(geo: Geometry, title: str) -> str:
    """One episode drawn north-up: nearby streets, the reference route, the agent's path."""
    to_px, scale = fit_map(geo)
    streets = "".join(f"M{a[0]:.1f},{a[1]:.1f}L{b[0]:.1f},{b[1]:.1f}"
                      for a, b in (to_px(seg) for seg in geo.segments))
    parts = [f'<svg class="traj" width="{SVG_W}" '
             f'height="{MAP_H + LEGEND_H}" viewBox="0 0 {SVG_W} {MAP_H + LEGEND_H}" role="img" '
             f'font-family="system-ui, sans-serif" font-size="12">',
             f"<title>{html.escape(title)}</title>",
             f'<rect width="{SVG_W}" height="{MAP_H}" fill="#fbfbf8" stroke="#ddd"/>',
             f'<svg x="0" y="0" width="{SVG_W}" height="{MAP_H}">']
    if streets:
        parts.append(f'<path d="{streets}" stroke="{COLORS["street"]}" stroke-width="1.2" '
                     'fill="none" stroke-linecap="round"/>')
    if len(geo.reference) > 1:
        parts.append(f'<polyline points="{_pts(to_px(geo.reference))}" fill="none" '
                     f'stroke="{COLORS["reference"]}" stroke-width="7" stroke-opacity="0.55" '
                     'stroke-linejoin="round" stroke-linecap="round"/>')
    if len(geo.path) > 1:
        parts.append(f'<polyline points="{_pts(to_px(geo.path))}" fill="none" '
                     f'stroke="{COLORS["path"]}" stroke-width="2.5" stroke-linejoin="round"/>')
    for kind, ll in (("target", geo.target), ("start", geo.start), ("final", geo.final)):
        if ll is not None:
            (x, y), = to_px(ll[None, :])
            parts.append(_marker(kind, x, y))
    parts += ["</svg>", _scale_bar(1.0 / scale),
              f'<text x="{SVG_W - PAD}" y="{PAD + 8}" text-anchor="end" font-weight="600">N ↑</text>',
              _legend(), "</svg>"]
    return "".join(parts)

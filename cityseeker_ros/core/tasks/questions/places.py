"""Every place a question's words could mean, where the map puts it and where the world draws it.

The generator keeps a question only when its words fit one answer among *all* of these: the
scene's places whether signed or not, and (given the extract) the raw map's objects the builder
left out. A place has up to three positions: its OSM one as the builder takes it (`map_xy`: the
node, or the centre of a way's shape), the mean of its vertices as another reader of the raw map
would take it (`centre_xy`, where the raw map is given; for a big area the two lie tens of metres
apart), and its board as built (`sign_xy`, the builder moves a board up to tens of metres onto a
wall). A relation must hold at every pairing of them, else the words do not settle it.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from cityseeker_ros.core.tasks.questions.answers import kind_classes, map_xy, normalise, nouns_of
from cityseeker_ros.core.worlds.scene import XY, Scene


@dataclass(frozen=True)
class MapPlace:
    id: str  # "node/1", "way/2", "relation/3": the scene's POI ids where the builder kept it
    nouns: frozenset[str]  # what a question would call it ("pharmacy")
    could_be: frozenset[str]  # every word it could be taken for ("chemist", "drugstore", ...)
    label: str  # its name (else brand), normalised; "" when it has none
    map_xy: XY
    sign_xy: Optional[XY] = None  # None: the world does not draw it
    centre_xy: Optional[XY] = None  # the raw map's vertex mean, where it is given

    @property
    def positions(self) -> tuple[XY, ...]:
        return (self.map_xy,) + tuple(p for p in (self.centre_xy, self.sign_xy) if p is not None)


def scene_places(scene: Scene) -> list[MapPlace]:
    where = map_xy(scene, scene.pois)
    return [MapPlace(p.id, *nouns_of(kind_classes(p.tags) or (p.poi_class,)), normalise(p.label), where[p.id],
                     (float(p.anchor[0]), float(p.anchor[1]))) for p in scene.pois]


def read_map_places(path: Path, scene: Scene) -> list[MapPlace]:
    """Every object of the OSM file `path` whose tags say what kind of place it is (KIND_KEYS),
    at its node or the mean of its (outer) ring's vertices, in `scene`'s metres. The whole file, not
    a bbox: a place just outside the world's box still stands where a question points."""
    import osmium

    found: dict[str, tuple[dict[str, str], float, float]] = {}
    processor = osmium.FileProcessor(str(path)).with_locations().with_areas()
    for obj in processor:
        tags = dict(obj.tags)
        if not kind_classes(tags):
            continue
        if obj.is_node() and obj.location.valid():
            found[f"node/{obj.id}"] = (tags, obj.location.lat, obj.location.lon)
        elif obj.is_way():
            located = [(n.lat, n.lon) for n in obj.nodes if n.location.valid()]
            if len(located) > 1 and located[0] == located[-1]:
                located = located[:-1]
            if located:
                found.setdefault(f"way/{obj.id}", (tags, *_mean(located)))
        elif obj.is_area() and not obj.from_way():
            ring = [(n.lat, n.lon) for r in obj.outer_rings() for n in r]
            if ring:
                found[f"relation/{obj.orig_id()}"] = (tags, *_mean(ring))
    if not found:
        return []
    ids = sorted(found)
    xy = scene.frame.to_xy([found[i][1] for i in ids], [found[i][2] for i in ids]).reshape(-1, 2)
    out = []
    for i, (x, y) in zip(ids, xy):
        tags = found[i][0]
        out.append(MapPlace(i, *nouns_of(kind_classes(tags)), normalise(tags.get("name") or tags.get("brand") or ""),
                            (float(x), float(y))))
    return out


def merged(scene: Scene, raw: Optional[Iterable[MapPlace]] = None) -> list[MapPlace]:
    """The scene's places (with their boards, and the raw map's centre of the same object) and the
    raw map's others."""
    raw_by_id = {p.id: p for p in (raw or ())}
    own = [replace(p, centre_xy=raw_by_id[p.id].map_xy) if p.id in raw_by_id else p for p in scene_places(scene)]
    ids = {p.id for p in own}
    return own + [p for p in raw_by_id.values() if p.id not in ids]


def _mean(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)

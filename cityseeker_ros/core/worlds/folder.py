"""The world folder: a versioned, self-describing directory the benchmark loads with --data.

    world.json   metadata: format version, builder and version, source file and sha256,
                 licence and credit, imagery = synthetic, counts
    graph.json   street-graph nodes (lat, lon, heading, walkable headings) and directed edges
    scene.json   buildings and POIs in the local metric frame (worlds.scene)
    tasks.json   generated episodes with their split, and the category target sets for TCC

The benchmark runs the test split; the dev split is for prompt and strategy tuning.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from cityseeker_ros import __version__
from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.infra.files import replace_folder, sha256_file
from cityseeker_ros.core.infra.jsonfile import read_json_file
from cityseeker_ros.core.streets.graph import Edge, Node, StreetGraph, same_edge
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, World
from cityseeker_ros.core.tasks.task_file import field as _field
from cityseeker_ros.core.worlds.scene import GROUND_COVERS, Scene
from cityseeker_ros.core.worlds.tasks import TaskSet

if TYPE_CHECKING:
    from cityseeker_ros.core.datasets.problems import Problems

FORMAT = "cityseeker-world"
FORMAT_VERSION = 1
FILES = ("world.json", "graph.json", "scene.json", "tasks.json")
OSM_CREDIT = "© OpenStreetMap contributors"
OSM_LICENSE = "ODbL-1.0: derived data stays under the Open Database License"
IMAGERY = "synthetic: rendered by cityseeker_ros from map data, not photographs"


def graph_to_json(graph: StreetGraph) -> dict[str, Any]:
    return {"nodes": [{"id": n.id, "lat": n.lat, "lon": n.lon, "heading": n.heading,
                       "walkable_headings": list(n.walkable_headings)} for n in graph.nodes.values()],
            "edges": [{"source": e.source, "target": e.target, "azimuth": e.azimuth, "length_m": e.length_m}
                      for e in graph.edges]}


def write_world(out_dir: Path, *, name: str, graph: StreetGraph, scene: Scene, tasks: TaskSet,
                metadata: dict[str, Any], family_tasks: Optional[dict[str, Any]] = None) -> Path:
    """Write (or atomically replace) a world folder; `metadata` adds builder and source facts,
    `family_tasks` the task files of families beyond needs (file name -> document)."""
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": name, "city": name,
            "cityseeker_ros_version": __version__, "imagery": IMAGERY, **metadata,
            "counts": {**metadata.get("counts", {}), "nodes": len(graph), "edges": len(graph.edges),
                       "buildings": len(scene.buildings),
                       "inferred_buildings": sum(b.inferred for b in scene.buildings), "pois": len(scene.pois),
                       "landmarks": len(scene.landmarks), "trees": len(scene.trees),
                       "tasks": {"test": tasks.counts("test"), "dev": tasks.counts("dev")}}}
    replace_folder(Path(out_dir), {"world.json": meta, "graph.json": graph_to_json(graph),
                                   "scene.json": scene.to_json(), "tasks.json": tasks.to_json(),
                                   **(family_tasks or {})},
                   is_world_folder, "a cityseeker world")
    return Path(out_dir)


def is_world_folder(folder: Path) -> bool:
    try:
        meta = read_json_file(Path(folder) / "world.json")
    except DataError:
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def _read(folder: Path, name: str) -> Any:
    return read_json_file(folder / name, missing="missing (a world folder holds " + ", ".join(FILES) + ")")


def read_metadata(folder: Path) -> dict[str, Any]:
    folder = Path(folder)
    meta = _read(folder, "world.json")
    path = folder / "world.json"
    if _field(meta, "format", path, str) != FORMAT:
        raise DataError(path, f"format is {meta.get('format')!r}, expected {FORMAT!r}", field="format")
    version = _field(meta, "format_version", path, int)
    if version > FORMAT_VERSION:
        raise DataError(path, f"format_version {version} is newer than this cityseeker_ros reads "
                        f"({FORMAT_VERSION}); upgrade the package", field="format_version")
    _field(meta, "name", path, str)
    return meta


def load_graph(folder: Path) -> StreetGraph:
    path = Path(folder) / "graph.json"
    doc = _read(Path(folder), "graph.json")
    nodes, edges = [], []
    node_record: dict[str, str] = {}
    for i, n in enumerate(_field(doc, "nodes", path, list)):
        rec = f"nodes[{i}]"
        node = Node(_field(n, "id", path, str, rec), float(_field(n, "lat", path, (int, float), rec)),
                    float(_field(n, "lon", path, (int, float), rec)),
                    float(_field(n, "heading", path, (int, float), rec)),
                    tuple(float(h) for h in _field(n, "walkable_headings", path, list, rec)))
        if node.id in node_record:
            raise DataError(path, f"node {node.id!r} again (also {node_record[node.id]})", record=rec, field="id")
        node_record[node.id] = rec
        nodes.append(node)
    edge_record: dict[tuple[str, str], tuple[str, Edge]] = {}
    for i, e in enumerate(_field(doc, "edges", path, list)):
        rec = f"edges[{i}]"
        edge = Edge(_field(e, "source", path, str, rec), _field(e, "target", path, str, rec),
                    float(_field(e, "azimuth", path, (int, float), rec)),
                    float(_field(e, "length_m", path, (int, float), rec)))
        for key in ("source", "target"):
            if getattr(edge, key) not in node_record:
                raise DataError(path, f"node {getattr(edge, key)!r} is not in nodes", record=rec, field=key)
        if (edge.source, edge.target) in edge_record:
            other, first = edge_record[edge.source, edge.target]
            field = "length_m" if same_edge(first.azimuth, 0.0, edge.azimuth, 0.0) else "azimuth"
            what = f"repeats {other}" if same_edge(first.azimuth, first.length_m, edge.azimuth, edge.length_m) \
                else f"contradicts {other} (azimuth {first.azimuth}, length_m {first.length_m})"
            raise DataError(path, f"edge {edge.source} -> {edge.target} {what}", record=rec, field=field)
        edge_record[edge.source, edge.target] = (rec, edge)
        edges.append(edge)
    return StreetGraph(nodes, edges, name=read_metadata(folder)["name"])


def _check_scene_extras(doc: Any, path: Path) -> None:
    """Name the record and field of a bad landmark, road, area or tree (keys newer scene.json
    files have; an older file without them loads as a scene without them)."""
    if not isinstance(doc, dict):
        return
    for key in ("landmarks", "roads", "areas", "trees"):
        if key in doc and not isinstance(doc[key], list):
            raise DataError(path, f"expected list, got {doc[key]!r}"[:200], field=key)
    for i, m in enumerate(doc.get("landmarks", [])):
        rec = f"landmarks[{i}]"
        for name, kind in (("id", str), ("name", str), ("kind", str), ("lat", (int, float)), ("lon", (int, float)),
                           ("height_m", (int, float)), ("width_m", (int, float)), ("xy", list), ("colour", list)):
            _field(m, name, path, kind, rec)
        if len(m["xy"]) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in m["xy"]):
            raise DataError(path, f"expected [x, y] in metres, got {m['xy']!r}"[:200], record=rec, field="xy")
        if len(m["colour"]) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255
                                            for v in m["colour"]):
            raise DataError(path, f"expected [r, g, b] of integers 0-255, got {m['colour']!r}"[:200], record=rec,
                            field="colour")
        if m["height_m"] <= 0 or m["width_m"] <= 0:
            raise DataError(path, "height_m and width_m must be positive", record=rec, field="height_m")
        if "crown_m" in m:
            _field(m, "crown_m", path, (int, float), rec)
        if not isinstance(m.get("visible_nodes", []), list) or not all(isinstance(n, str)
                                                                       for n in m.get("visible_nodes", [])):
            raise DataError(path, "expected a list of node ids", record=rec, field="visible_nodes")
    colours = [tuple(m["colour"]) for m in doc.get("landmarks", [])]
    if len(set(colours)) != len(colours):
        dup = next(c for c in colours if colours.count(c) > 1)
        raise DataError(path, f"two landmarks share the identity colour {list(dup)}", field="colour")
    for i, r in enumerate(doc.get("roads", [])):
        rec = f"roads[{i}]"
        _field(r, "id", path, str, rec)
        _field(r, "line", path, list, rec)
        if _field(r, "width_m", path, (int, float), rec) <= 0:
            raise DataError(path, "width_m must be positive", record=rec, field="width_m")
    for i, a in enumerate(doc.get("areas", [])):
        rec = f"areas[{i}]"
        _field(a, "ring", path, list, rec)
        if _field(a, "cover", path, str, rec) not in GROUND_COVERS:
            raise DataError(path, f"unknown cover {a['cover']!r}; known: {', '.join(GROUND_COVERS)}", record=rec,
                            field="cover")
    for i, t in enumerate(doc.get("trees", [])):
        if not isinstance(t, list) or len(t) != 3 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                             for v in t):
            raise DataError(path, f"expected [x, y, height_m], got {t!r}"[:200], record=f"trees[{i}]")


@cache
def _scene_cached(path: str, mtime_ns: int) -> Scene:
    doc = _read(Path(path).parent, Path(path).name)
    _check_scene_extras(doc, Path(path))
    try:
        return Scene.from_json(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(path, f"malformed scene record: {exc!r}"[:300]) from None


def load_scene(folder: Path) -> Scene:
    """The scene, parsed once per process (renderers in every worker share the file)."""
    path = Path(folder) / "scene.json"
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise DataError(path, "missing (a world folder holds " + ", ".join(FILES) + ")") from None
    return _scene_cached(str(path.resolve()), mtime)


def load_scene_and_graph(folder: Path) -> tuple[Scene, StreetGraph]:
    return load_scene(folder), load_graph(folder)


def load_world(folder: Path, problems: Problems | None = None, split: str = "test",
               family: str = DEFAULT_FAMILY) -> World:
    """A World for the benchmark: the graph, the `split` episodes of task `family` and the
    target sets its measures read."""
    from cityseeker_ros.core.tasks.family import get_family

    folder = Path(folder)
    meta = read_metadata(folder)
    graph = load_graph(folder)
    chosen = get_family(family)
    episodes, targets = chosen.load(folder, meta["name"], graph, split)
    files = FILES + tuple(f for f in (chosen.tasks_file,) if f not in FILES)
    return World(city=meta["name"], graph=graph, episodes=episodes, category_targets=targets,
                 source_files={str(folder / f): sha256_file(folder / f) for f in files},
                 synthetic=True, root=folder)

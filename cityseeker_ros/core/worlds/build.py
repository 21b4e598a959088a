"""From an OSM extract to a world folder: fetch, build, generate tasks, write."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.errors import ConfigError, DataError
from cityseeker_ros.core.results import sha256_file
from cityseeker_ros.core.worlds.folder import OSM_CREDIT, OSM_LICENSE, write_world
from cityseeker_ros.core.worlds.osm import BBox, build_osm_world
from cityseeker_ros.core.worlds.osm_sources import PACKAGED_SOURCES, default_cache_dir, fetch_source
from cityseeker_ros.core.worlds.tasks import TaskSettings, generate_tasks

BUILDER_VERSION = "1"  # bump when the same source would build a different world


def build_world(source: str, out_dir: Path, *, name: Optional[str] = None, bbox: Optional[BBox] = None,
                tasks: TaskSettings = TaskSettings(), spacing_m: float = 20.0,
                cache_dir: Optional[Path] = None) -> dict[str, Any]:
    """Build `source` (a packaged extract's name, or a path to an .osm.pbf) into `out_dir`.

    Returns the world's metadata plus `build_stats` (timings, not stored: a rebuild of the
    same source writes identical files)."""
    if source in PACKAGED_SOURCES:
        pbf = fetch_source(source, cache_dir or default_cache_dir())
        packaged = PACKAGED_SOURCES[source]
        origin = {"package": packaged.requirement, "member": packaged.member, "description": packaged.description}
    elif source.endswith((".pbf", ".osm")) or Path(source).exists():
        pbf = Path(source)
        origin = {"path": str(pbf.resolve())}
    else:
        raise ConfigError(f"world source {source!r} is neither a packaged extract "
                          f"({', '.join(sorted(PACKAGED_SOURCES))}) nor an .osm.pbf file")
    if not pbf.is_file():
        raise DataError(pbf, "no such file")
    name = name or (source if source in PACKAGED_SOURCES else pbf.name.split(".")[0])
    built = build_osm_world(pbf, name=name, bbox=bbox, spacing_m=spacing_m)
    task_set = generate_tasks(name, built.graph, built.scene.pois, tasks)
    stats = {k: v for k, v in built.stats.items() if k != "seconds"}
    metadata = {
        "builder": {"name": "osm", "version": BUILDER_VERSION},
        "source": {"file": pbf.name, "sha256": sha256_file(pbf), **origin},
        "credit": OSM_CREDIT, "license": OSM_LICENSE,
        "params": {"bbox": list(bbox) if bbox else None, "spacing_m": spacing_m, "tasks": asdict(tasks)},
        "osm": stats,
    }
    write_world(out_dir, name=name, graph=built.graph, scene=built.scene, tasks=task_set, metadata=metadata)
    return {**metadata, "tasks": {"test": task_set.counts("test"), "dev": task_set.counts("dev"),
                                  "satisfying_pois": task_set.satisfying_pois},
            "build_stats": {"seconds": built.stats.get("seconds")}}

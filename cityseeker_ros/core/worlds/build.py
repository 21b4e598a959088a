"""From an OSM extract to a world folder: fetch, build, generate tasks, write."""
from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional, TextIO

import numpy as np

from cityseeker_ros import __version__
from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.infra.files import sha256_file
from cityseeker_ros.core.infra.progress import say
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, PAPER_CATEGORIES
from cityseeker_ros.core.tasks.family import GeneratedTasks, family_names, get_family
from cityseeker_ros.core.worlds.fidelity import horizon_share
from cityseeker_ros.core.worlds.fingerprint import up_to_date, write_fingerprint
from cityseeker_ros.core.worlds.folder import FORMAT_VERSION, OSM_CREDIT, OSM_LICENSE, write_world
from cityseeker_ros.core.worlds.osm import BBox, build_osm_world
from cityseeker_ros.core.worlds.osm_sources import PACKAGED_SOURCES, default_cache_dir, fetch_source
from cityseeker_ros.core.worlds.scene import Scene
from cityseeker_ros.core.worlds.tasks import TaskSet, TaskSettings, generate_tasks, why_no_tasks

BUILDER_VERSION = "5"  # bump when the same source would build a different world (3: roads, ground, trees,
# inferred and sized stand-in buildings, landmarks; 4: --bbox keeps and clips by true overlap; 5: the thin-data
# fallback decided per street stretch, questions checked against the raw map, existence and counting)
# Thin-data floors: below them a world builds, but its views or tasks are too sparse to trust.
MIN_BUILDINGS_PER_KM2 = 200.0
MIN_POIS_PER_KM2 = 50.0
MIN_TASKS_PER_CATEGORY = 10
DENSITY_CELL_M = 100.0
MAX_GUESSED_HEIGHTS = 0.8  # share of buildings whose height is guessed (no height or levels tag)
MAX_EMPTY_HORIZON = 0.1  # share of task-start views showing nothing above the horizon (fidelity.horizon_share)


def build_world(source: str, out_dir: Path, *, name: Optional[str] = None, bbox: Optional[BBox] = None,
                tasks: TaskSettings = TaskSettings(), spacing_m: float = 20.0,
                cache_dir: Optional[Path] = None, families: Optional[Sequence[str]] = None,
                force: bool = False, stream: Optional[TextIO] = None) -> dict[str, Any]:
    """Build `source` (a packaged extract's name, or a path to an .osm.pbf) into `out_dir`, with
    the tasks of each of `families` (None: every registered family). Each phase says what it did
    on `stream` (default stderr).

    Returns the world's metadata plus `build_stats` (timings, not stored: a rebuild of the
    same source writes identical files). When `out_dir` already holds what these inputs build
    (worlds.fingerprint) nothing is built, unless `force`, and the result is
    {"up_to_date": "<one line saying so>", "path": ..., "built_at": ...}."""
    chosen = list(families) if families is not None else family_names()
    if source in PACKAGED_SOURCES:
        packaged = PACKAGED_SOURCES[source]
        origin = {"package": packaged.requirement, "member": packaged.member, "description": packaged.description}
        identity = {"packaged": source, "package": packaged.requirement, "member": packaged.member,
                    "sha256": packaged.sha256}  # fetch_source checks the extract against this hash
        name = name or source
    elif source.endswith((".pbf", ".osm")) or Path(source).exists():
        pbf = Path(source)
        if not pbf.is_file():
            raise DataError(pbf, "no such file")
        origin = {"path": str(pbf.resolve())}
        identity = {"path": str(pbf.resolve()), "sha256": sha256_file(pbf)}
        name = name or pbf.name.split(".")[0]
    else:
        raise ConfigError(f"world source {source!r} is neither a packaged extract "
                          f"({', '.join(sorted(PACKAGED_SOURCES))}) nor an .osm.pbf file")
    inputs = build_inputs(identity, name=name, bbox=bbox, tasks=tasks, spacing_m=spacing_m, families=chosen)
    if not force:
        current = up_to_date(Path(out_dir), inputs)
        if current is not None:
            return {"up_to_date": current.message(), "path": str(current.path), "built_at": current.built_at}
    if source in PACKAGED_SOURCES:
        pbf = fetch_source(source, cache_dir or default_cache_dir())
    started = time.perf_counter()
    say(f"world build: {name} from {pbf.name} into {out_dir}", stream)
    built = build_osm_world(pbf, name=name, bbox=bbox, spacing_m=spacing_m, stream=stream)
    task_started = time.perf_counter()
    task_set = (generate_tasks(name, built.graph, built.scene.pois, tasks) if DEFAULT_FAMILY in chosen
                else TaskSet(tasks, [], {}))
    if DEFAULT_FAMILY in chosen:
        say(f"world build: {DEFAULT_FAMILY} tasks: {len(task_set.tasks)} "
            f"({sum(task_set.counts('test').values())} test, {sum(task_set.counts('dev').values())} dev)", stream)
    others: dict[str, GeneratedTasks] = {}
    for family in (f for f in chosen if f != DEFAULT_FAMILY):  # each said as it is made: questions take minutes
        others.update(family_tasks(name, built.graph, built.scene, [family], tasks.seed, source=pbf))
        made = others[family]
        say(f"world build: {family} tasks: " +
            (made.why_none or ", ".join(f"{k} {v}" for k, v in made.counts.items())), stream)
        not_made = made.document.get("world", {}).get("kinds_not_made") if not made.why_none else None
        if not_made:  # the kinds a family could not make on this world, each with its reason
            say(f"world build: {family} kinds not made: " + "; ".join(f"{k}: {why}" for k, why in not_made.items()),
                stream)
        limits = _goal_limits(made)
        if limits:
            say(f"world build: {family} goals: {limits}", stream)
    task_seconds = time.perf_counter() - task_started
    why = {f: g.why_none for f, g in others.items() if g.why_none}
    if DEFAULT_FAMILY in chosen and not task_set.tasks:
        why[DEFAULT_FAMILY] = why_no_tasks(built.graph, built.scene.pois, tasks)
    if len(why) == len(chosen):  # a world without tasks would "succeed" with 0 episodes; nothing is written
        where = f" inside bbox {list(bbox)}" if bbox is not None else ""
        raise DataError(pbf, f"no task of any family can be made{where}: " +
                        "; ".join(f"{f}: {reason}" for f, reason in why.items()))
    stats = {k: v for k, v in built.stats.items() if k != "seconds"}
    density = data_density(built.graph, built.scene, task_set, built.stats["heights_guessed"])
    density["empty_horizon"] = horizon_share(built.scene, built.graph, (t.start for t in task_set.tasks
                                                                           if t.split == "test"), stream=stream)
    metadata = {
        "builder": {"name": "osm", "version": BUILDER_VERSION},
        "source": {"file": pbf.name, "sha256": sha256_file(pbf), **origin},
        "credit": OSM_CREDIT, "license": OSM_LICENSE,
        "params": {"bbox": list(bbox) if bbox else None, "spacing_m": spacing_m, "tasks": asdict(tasks)},
        "osm": stats,
        "density": density,
        "warnings": thin_data_warnings(density) + [f"no {get_family(f).title.lower()}: {reason}"
                                                   for f, reason in why.items()],
        "families": {f: _family_record(g) for f, g in others.items() if not g.why_none},
    }
    write_world(out_dir, name=name, graph=built.graph, scene=built.scene, tasks=task_set, metadata=metadata,
                family_tasks={get_family(f).tasks_file: g.document for f, g in others.items() if not g.why_none})
    write_fingerprint(Path(out_dir), inputs)  # last: a build cut short before this is never up to date
    return {**metadata, "tasks": {"test": task_set.counts("test"), "dev": task_set.counts("dev"),
                                  "satisfying_pois": task_set.satisfying_pois},
            "build_stats": {"seconds": round(time.perf_counter() - started, 3),  # OSM, tasks and writing
                            "osm_seconds": built.stats.get("seconds"), "tasks_seconds": round(task_seconds, 3)}}


def build_inputs(source: dict[str, Any], *, name: str, bbox: Optional[BBox], tasks: TaskSettings,
                 spacing_m: float, families: Sequence[str]) -> dict[str, Any]:
    """Everything that changes what a build writes: the extract's identity, the parameters and the
    code's versions (a new package release may build differently, so it rebuilds)."""
    return {"source": source, "name": name, "bbox": list(bbox) if bbox is not None else None,
            "spacing_m": spacing_m, "tasks": asdict(tasks), "families": sorted(families),
            "builder_version": BUILDER_VERSION, "format_version": FORMAT_VERSION,
            "cityseeker_ros_version": __version__}


def data_density(graph: StreetGraph, scene: Scene, task_set: TaskSet, heights_guessed: int) -> dict[str, Any]:
    """How much the world's area holds: buildings and POIs per km² of street area (the
    DENSITY_CELL_M squares holding a street node: a bounding box would count sea and parks),
    tasks per category over both splits, and the share of guessed heights."""
    latlon = graph.latlon(list(graph.nodes))
    xy = scene.frame.to_xy(latlon[:, 0], latlon[:, 1])
    cells = len({(int(c[0]), int(c[1])) for c in np.floor(np.atleast_2d(xy) / DENSITY_CELL_M)})
    km2 = max(cells * DENSITY_CELL_M ** 2 / 1e6, 1e-6)
    real = [b for b in scene.buildings if not b.synthetic]
    return {"area_km2": round(km2, 4), "buildings_per_km2": round(len(real) / km2, 1),
            "inferred_buildings": sum(b.inferred for b in scene.buildings),
            "pois_per_km2": round(len(scene.pois) / km2, 1),
            "tasks_per_category": {c: task_set.counts().get(c, 0) for c in PAPER_CATEGORIES},
            "heights_guessed_share": round(heights_guessed / len(real), 3) if real else 0.0}


def thin_data_warnings(density: dict[str, Any]) -> list[str]:
    """One line per figure below its floor (MIN_* and MAX_GUESSED_HEIGHTS above)."""
    out = []
    if density["buildings_per_km2"] < MIN_BUILDINGS_PER_KM2:
        out.append(f"thin data: {density['buildings_per_km2']:g} buildings per km² (floor {MIN_BUILDINGS_PER_KM2:g}); "
                   "views will show open ground where there are buildings")
    if density["pois_per_km2"] < MIN_POIS_PER_KM2:
        out.append(f"thin data: {density['pois_per_km2']:g} POIs per km² (floor {MIN_POIS_PER_KM2:g}); "
                   "few signs to read and few satisfying places")
    thin = {c: n for c, n in density["tasks_per_category"].items() if n < MIN_TASKS_PER_CATEGORY}
    if thin:
        out.append(f"thin data: fewer than {MIN_TASKS_PER_CATEGORY} tasks in " +
                   ", ".join(f"{c} ({n})" for c, n in thin.items()) + "; their scores will be noisy")
    empty = density.get("empty_horizon")
    if empty and empty["share"] > MAX_EMPTY_HORIZON:
        out.append(f"thin data: {100 * empty['share']:.0f}% of task-start views ({empty['empty']} of {empty['views']}) "
                   f"show nothing above the horizon (ceiling {100 * MAX_EMPTY_HORIZON:.0f}%)")
    if density["heights_guessed_share"] > MAX_GUESSED_HEIGHTS:
        out.append(f"thin data: {100 * density['heights_guessed_share']:.0f}% of building heights are guessed "
                   f"(no height or building:levels tag; ceiling {100 * MAX_GUESSED_HEIGHTS:.0f}%)")
    return out


def family_tasks(name: str, graph: StreetGraph, scene: Scene, families: Sequence[str],
                 seed: int = 0, source: Optional[Path] = None) -> dict[str, GeneratedTasks]:
    """The tasks of each family but the first (needs, made by worlds.tasks with its settings).
    `source`, the raw extract the world was built from, goes to each family whose `generate` takes
    it (questions check every fact against the raw map, not only the scene)."""
    return {f: get_family(f).generate(name, graph, scene, seed=seed, **_source_for(f, source)) for f in families}


def _source_for(family: str, source: Optional[Path]) -> dict[str, Path]:
    if source is None or "source" not in inspect.signature(get_family(family).generate).parameters:
        return {}
    return {"source": Path(source)}


def add_family_tasks(folder: Path, families: Sequence[str], seed: int = 0) -> dict[str, GeneratedTasks]:
    """Make (or make again) the tasks of `families` on a world folder already built, each file
    written atomically as the build writes it (the same inputs give the build's bytes, so the
    folder stays up to date); world.json is left as built. Needs come with the build (their settings
    are the build's), so they are refused here."""
    from cityseeker_ros.core.infra.files import folder_json_text, write_text_atomic
    from cityseeker_ros.core.worlds.folder import load_scene_and_graph, read_metadata

    if DEFAULT_FAMILY in families:
        raise ConfigError(f"--families: {DEFAULT_FAMILY} tasks are made by `cityseeker world build` with its "
                          "--seed, --per-need and --test-per-category; name the other families here")
    metadata = read_metadata(folder)
    scene, graph = load_scene_and_graph(folder)
    made = family_tasks(metadata["name"], graph, scene, families, seed, source=_recorded_source(metadata))
    for f, generated in made.items():
        if not generated.why_none:
            write_text_atomic(Path(folder) / get_family(f).tasks_file, folder_json_text(generated.document))
    return made


def _recorded_source(metadata: dict[str, Any]) -> Optional[Path]:
    """The raw extract a world was built from, where it is still at hand unchanged (its recorded
    path, or the packaged extract in the cache); None otherwise (nothing is downloaded here)."""
    source = metadata.get("source") or {}
    candidates = [Path(source["path"])] if source.get("path") else []
    candidates += [default_cache_dir() / f"{key}.osm.pbf" for key, packaged in PACKAGED_SOURCES.items()
                   if packaged.member == source.get("member")]
    return next((p for p in candidates if p.is_file() and sha256_file(p) == source.get("sha256")), None)


def _family_record(made: GeneratedTasks) -> dict[str, Any]:
    """A family's line in world.json: its task counts, and what its task file says limited them
    (how the landmarks limit the goals; which question kinds were not made and why, what was dropped)."""
    world = made.document.get("world", {})
    said = {"goal_limits": _goal_limits(made), "kinds_not_made": world.get("kinds_not_made"),
            "dropped": world.get("dropped")}
    return {"tasks": made.counts, **{k: v for k, v in said.items() if v}}


def _goal_limits(made: GeneratedTasks) -> Optional[str]:
    """How the world's landmarks limit its goals (landmark goals' `goal_ambiguity.limits`), if said."""
    if made.why_none:
        return None
    return made.document.get("world", {}).get("goal_ambiguity", {}).get("limits")

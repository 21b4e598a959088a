"""Dataset formats, chosen by name or detected from the folder a user points at."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cityseeker_ros.core.datasets.cityseeker import is_city_folder, load_city
from cityseeker_ros.core.datasets.problems import Problems
from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, World
from cityseeker_ros.core.tasks.family import get_family
from cityseeker_ros.core.worlds.folder import is_world_folder, load_world


@dataclass(frozen=True)
class DatasetFormat:
    """`detect` says whether a folder is one city of this format; `load` reads its episodes of
    one task family; `families` are those it can hold."""

    detect: Callable[[Path], bool]
    load: Callable[[Path, Problems | None, str], World]
    families: Optional[tuple[str, ...]] = None  # None: any registered family


def _release_city(folder: Path, problems: Problems | None, family: str) -> World:
    return load_city(folder, problems)


def _world_folder(folder: Path, problems: Problems | None, family: str) -> World:
    return load_world(folder, problems, family=family)


DATASETS: Registry[DatasetFormat] = Registry("dataset")
DATASETS.register("cityseeker")(DatasetFormat(is_city_folder, _release_city, families=(DEFAULT_FAMILY,)))
DATASETS.register("world")(DatasetFormat(is_world_folder, _world_folder))


def city_folders(path: Path, dataset: str = "auto") -> list[tuple[str, Path]]:
    """(format name, folder) for the city in `path`, or for each city folder directly below it."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"--data {path}: no such directory")
    formats = DATASETS.names() if dataset == "auto" else [dataset]
    for name in formats:
        if DATASETS.get(name).detect(path):
            return [(name, path)]
    found = [(name, sub) for sub in sorted(p for p in path.iterdir() if p.is_dir())
             for name in formats if DATASETS.get(name).detect(sub)]
    if not found:
        raise ConfigError(f"--data {path}: no city folder of format {' or '.join(formats)} here or "
                          "one level below (a CitySeeker city holds connections.json and question.json; "
                          "a world folder holds world.json)")
    return found


def load_dataset(path: Path, dataset: str = "auto", problems: Problems | None = None,
                 family: str = DEFAULT_FAMILY) -> list[World]:
    """Every city under `path`, with its episodes of task `family`. Results are keyed by episode
    id, so ids must be unique over all of them: two folders of one city, or ids that collide, are
    errors rather than lost records. With a non-strict `problems`, a folder in error is reported
    and left out."""
    get_family(family)
    problems = problems or Problems(strict=True)
    worlds: list[World] = []
    city_folder: dict[str, Path] = {}
    id_folder: dict[str, Path] = {}
    for name, folder in city_folders(path, dataset):
        held = DATASETS.get(name).families
        if held is not None and family not in held:
            raise ConfigError(f"--data {folder}: a {name} dataset holds {', '.join(held)} episodes only, not "
                              f"{family}; build a world folder with them (cityseeker world build --families {family})")
        try:
            world = DATASETS.get(name).load(folder, problems, family)
        except DataError as exc:
            if problems.strict:
                raise
            problems.error(exc.file, exc.detail, exc.record, exc.field)
            continue
        if world.city in city_folder:
            problems.error(folder, f"city {world.city!r} is also the city of {city_folder[world.city]}; "
                           "each city must live in one folder", field="city")
            continue
        ids = dict(id_folder)
        clash = None
        for e in world.episodes:
            if e.episode_id in ids:
                clash = e.episode_id
                break
            ids[e.episode_id] = folder
        if clash is not None:
            problems.error(folder, f"episode id {clash!r} is also an episode of {id_folder.get(clash, folder)}",
                           field="episode id")
            continue
        city_folder[world.city] = folder
        id_folder = ids
        worlds.append(world)
    return worlds

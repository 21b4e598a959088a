"""Fixtures shared by the evaluation tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.tasks.landmarks.gridtown import small_grid_world


@pytest.fixture(scope="module")
def grid_dir(tmp_path_factory) -> Path:
    """The hand-made landmark grid with its landmark-goal tasks: a landmark run in seconds."""
    return small_grid_world(tmp_path_factory.mktemp("worlds") / "gridtown")

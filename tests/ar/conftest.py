"""The AR trials' fixtures: one `cityseeker ar` trial (ocr-embed on the Monaco world the session
builds, a 4-step budget) shared by the module's tests, and a Chromium per test with the world's
rendered views as its camera. They skip, saying why, where ROS 2 or Chromium is missing."""
from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cityseeker_ros.ros import env as ros
from tests.ar.browser import CHROMIUM, Browser
from tests.ar.phone import Trial, make_video


def _require() -> None:
    missing = ros.missing_ros_modules()
    if missing:
        pytest.skip(f"ROS 2 wheels not installed (missing {', '.join(missing)}): pip install -e '.[ros]'")
    if CHROMIUM is None:
        pytest.skip("chromium not installed: apt-get install chromium (make test installs it)")


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory, monaco_dir: Path) -> Iterator[Trial]:
    _require()
    t = Trial(tmp_path_factory.mktemp("ar"), monaco_dir)
    try:
        t.wait_ready()
        yield t
    finally:
        t.close()


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory, monaco_dir: Path) -> Path:
    _require()
    return make_video(monaco_dir, tmp_path_factory.mktemp("video") / "monaco.y4m")


@pytest.fixture(scope="module")
def monaco(monaco_dir: Path):
    from cityseeker_ros.core.datasets import load_dataset

    return load_dataset(monaco_dir)[0]


@pytest.fixture
def browser(video: Path) -> Iterator[Browser]:
    b = Browser(video)
    try:
        yield b
    finally:
        b.close()


def run(coro):
    """Run a test's coroutine on a fresh loop (the tests are synchronous pytest functions)."""
    return asyncio.run(coro)


KEEP_SCREENSHOT = os.environ.get("CITYSEEKER_AR_SCREENSHOT", "")  # e.g. docs/ar_mid_seek.png


def keep_screenshot(path: Path) -> None:
    if KEEP_SCREENSHOT:
        shutil.copyfile(path, KEEP_SCREENSHOT)

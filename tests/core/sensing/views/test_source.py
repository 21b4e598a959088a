"""The view-source contract as the environment and the benchmark use it."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.policies.base import Policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views import VIEW_SOURCES, ViewSource, make_view_source
from cityseeker_ros.core.tasks.environment import Environment


class HeadingImages(ViewSource):
    """Encodes the requested heading in the pixels, and counts requests."""

    name = "heading-images"

    def __init__(self) -> None:
        self.requests = 0

    def images(self, node, headings):
        self.requests += 1
        return [np.full((4, 8, 3), int(h) % 256, dtype=np.uint8) for h in headings]


class LooksAtImages(Policy):
    def __init__(self) -> None:
        self.seen: list[list[int]] = []

    def act(self, observation):
        from cityseeker_ros.core.tasks.environment import STOP

        self.seen.append([int(v.image[0, 0, 0]) for v in observation.views])
        return STOP


def test_every_view_gets_the_image_of_its_heading(tiny_city):
    world = load_dataset(tiny_city)[0]
    env = Environment(world, views=HeadingImages())
    obs = env.reset(world.episodes[0])
    assert obs.views and all(v.image is not None and v.image[0, 0, 0] == int(v.heading) % 256 for v in obs.views)
    assert Environment(world).reset(world.episodes[0]).views[0].image is None


def test_run_episode_hands_the_images_to_the_policy(tiny_city):
    world = load_dataset(tiny_city)[0]
    source = HeadingImages()
    looker = LooksAtImages()
    run_episode(world, world.episodes[0], looker, 0, views=source)
    assert looker.seen and source.requests == 1
    assert make_policy("random").uses_images is False and LooksAtImages.uses_images is True


def test_unknown_source_lists_the_known_ones(tiny_city):
    world = load_dataset(tiny_city)[0]
    with pytest.raises(ConfigError, match="unknown view source 'nope'; known: .*panorama-folder.*rendered"):
        make_view_source("nope", world)
    assert {"panorama-folder", "rendered"} <= set(VIEW_SOURCES.names())


def test_rendered_source_needs_a_world_folder(tiny_city):
    world = load_dataset(tiny_city)[0]
    with pytest.raises(ConfigError, match="needs a world folder with scene.json"):
        make_view_source("rendered", world)

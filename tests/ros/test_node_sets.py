"""The runner's node sets: what each node is told, without starting any."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.benchmark import BenchmarkConfig
from cityseeker_ros.ros import node_sets

VLM = {"backend": "openai", "model": "m"}


@pytest.mark.parametrize("policy, params, views, sent", [
    ("vlm", VLM, "panorama-folder", True),  # stop_view panorama, the default: the stop prompt shows it
    ("vlm", {**VLM, "stop_view": "panorama"}, "rendered", True),
    ("vlm", {**VLM, "stop_view": "views"}, "panorama-folder", False),
    ("vlm", VLM, None, False),  # no view source: nothing to make it from
    ("ocr-embed", {}, "panorama-folder", False),  # reads the views only
    ("forward", {}, "panorama-folder", False),
    ("random", {}, "rendered", False),
    ("oracle", {}, "rendered", False),
])
def test_the_world_node_makes_panoramas_only_for_a_policy_that_shows_them(tmp_path, policy, params, views, sent):
    config = BenchmarkConfig(data=str(tmp_path), policy=policy, policy_params=params, views=views)
    replay = node_sets.benchmark_nodes(config, tmp_path, [])[0]
    assert replay.module.endswith("streetview_replay")
    assert replay.params["panorama"] is sent

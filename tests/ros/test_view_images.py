"""View images over real DDS in each image_format: the decision node takes whichever the world
node sends (raw sensor_msgs/Image by default, CompressedImage on images/compressed for png or
jpeg), a lossless format changes nothing against an in-process run, and a decision node that
restarts mid-episode gets the current view set's images (raw 1280x960 views and a 2048x1024
panorama: 17 MB) from the transient-local history."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.sensing.views import make_view_source
from tests.ros.test_replay_decision import (
    CONFIG,
    DECISION,
    WIRING,
    assert_same_episode,
    coloured_panoramas,
    digest,
    image_size,
    message_images,
    params_file,
    start_nodes,
    wait_for,
)

FORMATS = {"raw": "rgb8", "png": "rgb8; png compressed bgr8", "jpeg": "rgb8; jpeg compressed bgr8"}


@pytest.fixture
def canned_vlm(monkeypatch):
    """The VLM policy's parameters against a canned OpenAI-compatible server on loopback: its
    replies are unreadable, so the policy falls back to view 0 whatever the pixels."""
    from tests.core.agents.vlm.test_openai_backend import FAST, MODEL, CannedServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = CannedServer()
    try:
        yield server, {"backend": "openai", "model": MODEL,
                       "backend_params": {"base_url": server.url, "timeout_s": 10.0, **FAST}}
    finally:
        server.close()


@pytest.mark.parametrize("image_format", [None, "jpeg"])
def test_the_decision_node_takes_each_image_format(ros_processes, tiny_city, tmp_path, canned_vlm, image_format):
    """None: the world node's default (raw). Raw is lossless, so the model gets the very
    requests an in-process run sends; jpeg is lossy, so its images differ but arrive, at their
    size, with the format string that says so."""
    server, policy_params = canned_vlm
    world = load_dataset(tiny_city)[0]
    view_params = {"folder": str(coloured_panoramas(tmp_path / "panos", world.graph.nodes)), "width": 64,
                   "height": 48}
    max_steps, episode, seed = 4, 1, 5
    source = make_view_source("panorama-folder", world, view_params)
    expected = run_episode(world, world.episodes[episode], make_policy("vlm", **policy_params), seed,
                           max_steps=max_steps, views=source)
    in_process_posts = [r["body"] for r in server.posts()]
    server.requests.clear()

    replay = {"views": "panorama-folder", "view_params": json.dumps(view_params), "max_steps": max_steps}
    start_nodes(ros_processes, tmp_path, tiny_city, replay={**replay, **({"image_format": image_format}
                                                                        if image_format else {})},
                decision={"policy": "vlm", "policy_params": json.dumps(policy_params)})
    report = ros_processes.drive({"steps": [
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        {"op": "episode", "episode": episode, "seed": seed},
    ]})
    ros_posts = [r["body"] for r in server.posts()]

    result = report[2]
    assert_same_episode(result, expected)
    assert all(d["error"] is None for d in result["decisions"]), result["decisions"]
    decided = [v for v in result["view_sets"] if not v["done"]]
    assert len(decided) == result["episode"]["steps"] > 0
    want = FORMATS[image_format or "raw"]
    assert all(v["image_formats"] == [want] * (len(v["views"]) + 1) for v in decided), decided  # + panorama
    assert len(ros_posts) == len(in_process_posts) > 0
    if image_format is None:
        assert ros_posts == in_process_posts
        for v in decided:
            node = world.graph.nodes[v["node"]]
            views = source.images(node, [view["heading"] for view in v["views"]])
            assert v["image_sha256"] == [digest(i) for i in views] + [digest(source.panorama_view(node, v["facing"]))]
    else:
        assert ros_posts != in_process_posts  # other pixels, the same requests otherwise
        sent = [[image_size(url) for url in message_images(body)] for body in ros_posts]
        assert sent == [[image_size(url) for url in message_images(body)] for body in in_process_posts]


def test_a_restarted_decision_node_gets_the_raw_images_of_the_current_view_set(ros_processes, tiny_city, tmp_path,
                                                                                canned_vlm):
    """Raw 1280x960 views plus the 2048x1024 panorama: up to 17 MB per view set. The first
    decision node is killed while the model still thinks about the first view set (the server
    answers it only after the backend's timeout), so that view set can only be decided by its
    successor, which must find it and all its images latched, with no image timeout."""
    server, policy_params = canned_vlm
    server.default_delay = 30.0  # longer than timeout_s: the first node never answers
    world = load_dataset(tiny_city)[0]
    view_params = {"folder": str(coloured_panoramas(tmp_path / "panos", world.graph.nodes)), "width": 1280,
                   "height": 960}
    decision = {"policy": "vlm", "policy_params": json.dumps(policy_params), "image_timeout_s": 20.0}
    start_nodes(ros_processes, tmp_path, tiny_city,
                replay={"views": "panorama-folder", "view_params": json.dumps(view_params), "max_steps": 4},
                decision=decision)
    crashed = ros_processes.started[-1][1]
    resume = tmp_path / "resume"
    driver = ros_processes.drive_async({"steps": [
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        {"op": "episode", "episode": 1, "seed": 5, "hold_at_step": 0, "resume_file": str(resume),
         "after_resume": ["configure", "activate"]},
    ]})
    assert wait_for(Path(f"{resume}.held"), 120), ros_processes.log_text()
    held = Path(f"{resume}.held").read_text()
    crashed.kill()  # by PID: a crash, no clean shutdown
    crashed.wait(10)
    server.default_delay = 0.0
    posts_before = len(server.posts())
    ros_processes.node(DECISION, "--params-file", str(CONFIG / "decision.yaml"),
                       "--params-file", params_file(tmp_path, "decision", **decision), *WIRING,
                       name="decision_restarted")
    resume.write_text("go")
    report = ros_processes.finish(driver)
    result = report[2]
    assert result["ended"] and result["episode"]["steps"] == 4 and result["resumed_after_decisions"] == 0, result
    assert all(d["error"] is None for d in result["decisions"]), result["decisions"]
    held_set = next(v for v in result["view_sets"] if v["view_set_id"] == held)
    assert held_set["image_formats"] == ["rgb8"] * (len(held_set["views"]) + 1)
    assert result["decisions"][0]["view_set_id"] == held  # by the restarted node: the first never answered
    after = [r["body"] for r in server.posts()[posts_before:]]
    sizes = {image_size(url) for body in after for url in message_images(body)}
    assert after and (1280, 960) in sizes and (2048, 1024) in sizes, sizes

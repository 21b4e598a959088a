"""The replay and decision nodes as separate processes over real DDS on loopback, driven like
a supervisor would: the same episodes and seeds give the same paths, actions, end reasons and
metrics as `run_episode` in-process; lifecycle transitions behave; images arrive intact."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import time
from pathlib import Path

import numpy as np
from action_msgs.msg import GoalStatus
from PIL import Image

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.sensing.views import make_view_source

REPLAY = "cityseeker_ros.nodes.streetview_replay"
DECISION = "cityseeker_ros.nodes.decision"
CONFIG = Path(__file__).resolve().parents[2] / "config"
WIRING = ["-r", "views:=/streetview_replay/views", "-r", "images:=/streetview_replay/images"]


def params_file(tmp_path: Path, node: str, **values) -> str:
    """A params file layered over config/<node>.yaml (JSON strings stay strings this way)."""
    path = tmp_path / f"{node}.params.yaml"
    path.write_text(json.dumps({node: {"ros__parameters": values}}))
    return str(path)


def start_nodes(ros_processes, tmp_path: Path, data: Path, replay: dict, decision: dict) -> None:
    ros_processes.node(REPLAY, "--params-file", str(CONFIG / "streetview_replay.yaml"),
                       "--params-file", params_file(tmp_path, "streetview_replay", data=str(data), **replay))
    ros_processes.node(DECISION, "--params-file", str(CONFIG / "decision.yaml"),
                       "--params-file", params_file(tmp_path, "decision", **decision), *WIRING)


def in_process(data: Path, policy: str, episode: int, seed: int, **policy_params) -> dict:
    world = load_dataset(data)[0]
    return run_episode(world, world.episodes[episode], make_policy(policy, **policy_params), seed)


def assert_same_episode(ros_result: dict, expected: dict) -> None:
    assert ros_result["ended"], ros_result
    got = ros_result["episode"]
    assert got["task"]["episode_id"] == expected["episode_id"]
    assert got["task"]["seed"] == expected["seed"]
    for key in ("path", "actions", "end_reason", "steps", "metrics", "solvable", "path_latlon"):
        assert got[key] == expected[key], key
    assert got.get("error") == expected.get("error")


def test_episodes_over_dds_match_in_process_runs_and_lifecycle(ros_processes, tiny_city, tmp_path):
    start_nodes(ros_processes, tmp_path, tiny_city, replay={}, decision={"policy": "random"})
    runs = [(0, 3), (1, 3), (0, 11)]
    plan = {"steps": [
        {"op": "state"},
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        *({"op": "episode", "episode": e, "seed": s} for e, s in runs),
        {"op": "transition", "name": "deactivate"},
        {"op": "reset_while_inactive", "wait_s": 1.5},
        {"op": "transition", "name": "activate"},
        {"op": "expect_decision", "timeout_s": 10},
        {"op": "repeat_goal"},
        {"op": "transition", "name": "deactivate"},
        {"op": "cancel_goal"},
        {"op": "transition", "name": "cleanup"},
        # A different policy after cleanup: the privileged oracle, which stops at the target.
        {"op": "decision_params", "params": {"policy": "oracle", "data": str(tiny_city)}},
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        {"op": "episode", "episode": 0, "seed": 0},
        {"op": "transition", "name": "deactivate"},
        {"op": "transition", "name": "cleanup"},
    ]}
    started = time.perf_counter()
    report = ros_processes.drive(plan)
    wall = time.perf_counter() - started
    ops = iter(report)

    assert next(ops)["state"] == "unconfigured"
    assert next(ops)["state"] == "inactive"
    assert next(ops)["state"] == "active"
    for episode, seed in runs:
        result = next(ops)
        assert_same_episode(result, in_process(tiny_city, "random", episode, seed))
        assert all(d["policy"] == "random" and d["error"] is None for d in result["decisions"])
        assert len(result["decisions"]) == result["episode"]["steps"]  # random never stops: one per move
    assert next(ops)["state"] == "inactive"
    silent = next(ops)
    assert silent["reset"] and silent["started"] and not silent["decided"], silent
    assert next(ops)["state"] == "active"
    resumed = next(ops)
    assert resumed["decided"] and resumed["view_set_id"] == silent["view_set_id"], resumed
    # A second goal for a decided view set gets the same decision, not a second draw (the
    # latency is the first decision's own: nothing was decided again).
    repeated = next(ops)
    assert repeated["status"] == GoalStatus.STATUS_SUCCEEDED and repeated["decision"] == repeated["first"], repeated
    assert next(ops)["state"] == "inactive"
    # While inactive a goal waits; cancelling it ends it as cancelled.
    assert next(ops)["status"] == GoalStatus.STATUS_CANCELED
    assert next(ops)["state"] == "unconfigured"
    assert next(ops)["success"]
    assert next(ops)["state"] == "inactive"
    assert next(ops)["state"] == "active"
    oracle = next(ops)
    expected = in_process(tiny_city, "oracle", 0, 0)
    assert expected["end_reason"] == "stopped"
    assert_same_episode(oracle, expected)
    assert oracle["decisions"][-1]["action"] == {"kind": "stop", "index": None, "back_to": None}
    assert next(ops)["state"] == "inactive"
    assert next(ops)["state"] == "unconfigured"
    print(f"\n{sum(r['episode']['steps'] for r in report if r['op'] == 'episode')} steps over DDS, "
          f"driver ops: {[(r['op'], r['wall_s']) for r in report]}, test wall {wall:.1f} s")


def coloured_panoramas(folder: Path, nodes, size=(256, 128)) -> Path:
    """One panorama per node: a reddish, left-to-right graded picture with per-node noise, so a
    swapped channel or a wrong heading shows in the pixels."""
    folder.mkdir(parents=True, exist_ok=True)
    w, h = size
    for i, node in enumerate(sorted(nodes)):
        rng = np.random.default_rng(i)
        grad = np.linspace(0, 120, w, dtype=np.float32)[None, :, None]
        base = np.array([200, 90, 30], dtype=np.float32)[None, None, :] - grad * np.array([0, 0.3, 0.2])
        pixels = np.clip(base + rng.normal(0, 20, (h, w, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"{node}.jpg", quality=95)
    return folder


def digest(pixels: np.ndarray) -> str:
    return hashlib.sha256(pixels.tobytes() + str(pixels.shape).encode()).hexdigest()


def test_vlm_policy_sees_the_same_images_and_prompts_over_dds(ros_processes, tiny_city, tmp_path, monkeypatch):
    """PNG on the wire is lossless: the VLM behind the decision node gets the very requests
    (prompts, views and the stop prompt's panorama) an in-process run sends, and the episode
    ends the same."""
    from tests.core.agents.vlm.test_openai_backend import FAST, MODEL, CannedServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    world = load_dataset(tiny_city)[0]
    view_params = {"folder": str(coloured_panoramas(tmp_path / "panos", world.graph.nodes)),
                   "width": 64, "height": 32}
    max_steps, episode, seed = 4, 1, 5
    server = CannedServer()  # unreadable replies: the policy falls back to view 0, deterministically
    try:
        policy_params = {"backend": "openai", "model": MODEL,  # stop_view: panorama, the default
                         "backend_params": {"base_url": server.url, "timeout_s": 10.0, **FAST}}
        source = make_view_source("panorama-folder", world, view_params)
        expected = run_episode(world, world.episodes[episode], make_policy("vlm", **policy_params), seed,
                               max_steps=max_steps, views=source)
        in_process_posts = [r["body"] for r in server.posts()]
        server.requests.clear()

        start_nodes(ros_processes, tmp_path, tiny_city,
                    replay={"views": "panorama-folder", "view_params": json.dumps(view_params),
                            "image_format": "png", "max_steps": max_steps},
                    decision={"policy": "vlm", "policy_params": json.dumps(policy_params)})
        report = ros_processes.drive({"steps": [
            {"op": "transition", "name": "configure"},
            {"op": "transition", "name": "activate"},
            {"op": "episode", "episode": episode, "seed": seed},
        ]})
        ros_posts = [r["body"] for r in server.posts()]
    finally:
        server.close()

    assert [r["state"] for r in report[:2]] == ["inactive", "active"]
    result = report[2]
    assert_same_episode(result, expected)
    assert in_process_posts and ros_posts == in_process_posts
    images_sent = sum(1 for body in ros_posts for m in body["messages"] if isinstance(m["content"], list)
                      for part in m["content"] if part["type"] == "image_url")
    assert images_sent >= result["episode"]["steps"]
    # Every image that crossed DDS is the view source's, pixel for pixel: the views, then the
    # panorama centred on the direction of travel.
    checked = panoramas = 0
    for view_set in result["view_sets"]:
        if view_set["done"]:
            assert view_set["panorama"] is None
            continue
        node = world.graph.nodes[view_set["node"]]
        want = [digest(img) for img in source.images(node, [v["heading"] for v in view_set["views"]])]
        pano = source.panorama_view(node, view_set["facing"])
        assert view_set["panorama"] == {"frame_id": "panorama", "width": pano.shape[1], "height": pano.shape[0]}
        assert view_set["image_sha256"] == want + [digest(pano)], view_set["view_set_id"]
        checked += len(want)
        panoramas += 1
    assert checked >= result["episode"]["steps"] and panoramas == result["episode"]["steps"]
    # The ROS side's stop calls carried that panorama (one image, its size), not the views.
    stop_calls = [body for body in ros_posts if any("The panorama here shows the whole circle" in text
                                                    for text in message_texts(body))]
    assert len(stop_calls) >= result["episode"]["steps"], [message_texts(b) for b in ros_posts]
    expected_size = source.panorama_view(world.graph.nodes[result["episode"]["path"][0]], 0.0).shape[1::-1]
    for body in stop_calls:
        sizes = [image_size(url) for url in message_images(body)]
        assert sizes == [expected_size], sizes
    print(f"\n{len(ros_posts)} model requests with {images_sent} images, {checked} view images and "
          f"{panoramas} panoramas checked, {len(stop_calls)} stop calls with a {expected_size} panorama")


def test_panorama_off_sends_none_and_the_run_is_unchanged(ros_processes, tiny_city, tmp_path):
    """`panorama: false` (the runner's setting for policies that never show one): the world node
    makes no panorama, view sets carry only their views, and the episode is the in-process one."""
    world = load_dataset(tiny_city)[0]
    view_params = {"folder": str(coloured_panoramas(tmp_path / "panos", world.graph.nodes)), "width": 32,
                   "height": 16}
    start_nodes(ros_processes, tmp_path, tiny_city, decision={"policy": "random"},
                replay={"views": "panorama-folder", "view_params": json.dumps(view_params), "panorama": False})
    report = ros_processes.drive({"steps": [
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        {"op": "episode", "episode": 0, "seed": 3},
    ]})
    result = report[2]
    assert_same_episode(result, in_process(tiny_city, "random", 0, 3))
    decided = [v for v in result["view_sets"] if not v["done"]]
    assert len(decided) == result["episode"]["steps"]
    assert all(v["panorama"] is None and len(v["image_sha256"]) == len(v["views"]) for v in decided)


def message_parts(body: dict) -> list[dict]:
    return [part for m in body["messages"]
            for part in (m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}])]


def message_texts(body: dict) -> list[str]:
    return [part["text"] for part in message_parts(body) if part["type"] == "text"]


def message_images(body: dict) -> list[str]:
    return [part["image_url"]["url"] for part in message_parts(body) if part["type"] == "image_url"]


def image_size(data_url: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))) as image:
        return image.size


def wait_for(path: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def test_a_restarted_decision_node_picks_up_the_running_episode(ros_processes, tiny_city, tmp_path):
    """View sets and images are latched (transient-local): a decision node that crashes and
    comes back finds the view set it must answer, and the episode runs to its end. (Its policy
    starts a fresh random stream, so this path is not the in-process one.)"""
    start_nodes(ros_processes, tmp_path, tiny_city, replay={}, decision={"policy": "random"})
    crashed = ros_processes.started[-1][1]
    resume = tmp_path / "resume"
    driver = ros_processes.drive_async({"steps": [
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        {"op": "episode", "episode": 0, "seed": 1, "hold_at_step": 10, "resume_file": str(resume),
         "after_resume": ["configure", "activate"]},
    ]})
    assert wait_for(Path(f"{resume}.held"), 60), ros_processes.log_text()
    crashed.kill()  # by PID: a crash, no clean shutdown
    crashed.wait(10)
    ros_processes.node(DECISION, "--params-file", str(CONFIG / "decision.yaml"), *WIRING,
                       name="decision_restarted")
    resume.write_text("go")
    report = ros_processes.finish(driver)
    result = report[2]
    assert result["ended"] and result["episode"]["end_reason"] == "budget_exhausted", result
    assert result["episode"]["steps"] == 35 and len(result["decisions"]) == 35
    assert 10 <= result["resumed_after_decisions"] < 35  # the rest came from the restarted node
    world = load_dataset(tiny_city)[0]
    path = result["episode"]["path"]
    assert all(b in {e.target for e in world.graph.out_edges(a)} for a, b in zip(path, path[1:]))


def test_bad_configuration_fails_at_start_up_with_the_reason(ros_processes, tiny_city, tmp_path):
    replay = ros_processes.node(REPLAY, "-p", f"data:={tiny_city}", "-p", "episode:=no-such-episode")
    decision = ros_processes.node(DECISION, "-p", "policy:=no-such-policy", "-p", "autostart:=true")
    assert replay.wait(30) == 2
    assert decision.wait(60) == 2  # a configuration error is final: finalized, and the process exits
    logs = ros_processes.log_text()
    assert "unknown episode id 'no-such-episode'" in logs
    assert "configure failed" in logs and "no-such-policy" in logs and "random" in logs  # lists known names


def test_real_city_episodes_over_dds_match_in_process(ros_processes, hk6, tmp_path):
    """HongKong_6: real coordinates and headings. The forward policy compares headings with the
    direction of travel, so any float that JSON bent on the way would show in the path."""
    start_nodes(ros_processes, tmp_path, hk6, replay={}, decision={"policy": "forward"})
    runs = [(0, 0), (17, 2)]
    report = ros_processes.drive({"steps": [
        {"op": "transition", "name": "configure"},
        {"op": "transition", "name": "activate"},
        *({"op": "episode", "episode": e, "seed": s} for e, s in runs),
    ]})
    for (episode, seed), result in zip(runs, report[2:]):
        assert_same_episode(result, in_process(hk6, "forward", episode, seed))

"""`cityseeker run camera`: a camera and a GNSS receiver on a walking user, over real DDS on
loopback. graph_localiser snaps the fixes, camera_ingest cuts one view per walkable direction
at each node reached (the "replay" frame source renders them: a synthetic camera), the
supervisor in live mode turns each decision into a motion goal and AR guidance, and a walker
process goes where the goals say. The walked paths are those of the in-process benchmark."""
from __future__ import annotations

import json
import subprocess
import sys

from cityseeker_ros.core.datasets import load_dataset
from tests.ros.test_runner import REPO, in_process, logs, records

COMPARED = ("episode_id", "seed", "path", "actions", "end_reason", "steps", "metrics")


def test_a_walked_camera_run_follows_the_guidance_and_scores_like_the_benchmark(monaco_dir, ros_domain, ros_env,
                                                                                tmp_path, ros_processes):
    flags = ("--data", str(monaco_dir), "--policy", "random", "--limit", "2", "--max-steps", "6")
    in_process(tmp_path / "cli", *flags)
    start = load_dataset(monaco_dir)[0].episodes[0]
    world = load_dataset(monaco_dir)[0]
    node = world.graph.nodes[start.start]
    plan, report = tmp_path / "walk.json", tmp_path / "walked.json"
    plan.write_text(json.dumps({"start": [node.lat, node.lon], "timeout_s": 200}))
    walker = ros_processes._start("walker", [sys.executable, "-m", "tests.ros.walker_driver", str(plan), str(report)])
    out = tmp_path / "ros"
    result = subprocess.run([sys.executable, "-m", "cityseeker_ros.cli", "run", "camera", *flags, "--source", "replay",
                             "--source-param", "views=rendered", "--fix-topic", "/test/fix", "--out", str(out),
                             "--domain-id", str(ros_domain), "--timeout", "200"],
                            cwd=REPO, capture_output=True, text=True, timeout=260)
    assert result.returncode == 0, result.stdout + result.stderr + logs(out)
    walker.wait(60)
    walked = json.loads(report.read_text())
    got, expected = records(out), records(tmp_path / "cli")
    assert [{k: r[k] for k in COMPARED} for r in got] == [{k: r[k] for k in COMPARED} for r in expected], (
        json.dumps(walked["commands"])[-3000:] + logs(out))
    moves = [g for g in walked["guidance"] if g["action"] == "move"]
    assert moves and all(g["next_node"] in world.graph.nodes and g["distance_m"] > 0 for g in moves)
    assert all(g["relative_deg"] is None or -180 <= g["relative_deg"] <= 180 for g in moves)
    assert {c["command"]["type"] for c in walked["commands"]} >= {"goal"}


def start_live_nodes(ros_processes, data: str, *supervisor_params: str) -> None:
    """graph_localiser, camera_ingest (replay source, tiny rendered views), a random decision node and
    the live supervisor, from config/*.yaml, as `cityseeker run camera` wires them."""
    config = REPO / "config"
    source_params = json.dumps({"views": "rendered", "view_params": {"width": 32, "height": 24}})
    ros_processes.node("cityseeker_ros.nodes.graph_localiser", "--params-file", str(config / "graph_localiser.yaml"),
                       "-p", f"data:={data}", "-r", "fix:=/test/fix")
    ros_processes.node("cityseeker_ros.nodes.camera_ingest", "--params-file", str(config / "camera_ingest.yaml"),
                       "-p", f"data:={data}", "-p", "source:=replay", "-p", f"source_params:='{source_params}'",
                       "-p", "image_format:=png", "-r", "location:=/graph_localiser/location",
                       "-r", "episode:=/supervisor/episode")
    ros_processes.node("cityseeker_ros.nodes.decision", "-p", "policy:=random",
                       "-r", "views:=/supervisor/views", "-r", "images:=/camera_ingest/images")
    ros_processes.node("cityseeker_ros.nodes.supervisor", "--params-file", str(config / "supervisor.yaml"),
                       "-p", f"data:={data}", "-p", "max_steps:=6", "-p", "mode:=live",
                       "-p", "world_node:=/camera_ingest", *supervisor_params)


def walk(ros_processes, tmp_path, start, **plan) -> dict:
    plan_file, report = tmp_path / "walk.json", tmp_path / "walked.json"
    plan_file.write_text(json.dumps({"start": [start.lat, start.lon], "timeout_s": 120, **plan}))
    walker = ros_processes._start("walker", [sys.executable, "-m", "tests.ros.walker_driver", str(plan_file),
                                             str(report)])
    assert walker.wait(180) == 0, ros_processes.log_text()
    walked = json.loads(report.read_text())
    assert walked["state"] == "finished", ros_processes.log_text()
    return walked


def test_a_walk_across_an_edge_shorter_than_the_hysteresis_reaches_every_node(monaco_dir, ros_processes, tmp_path):
    """The Monaco hang: a random walk that takes a 3-5 m edge, walked live. Before the fix the
    localiser never switched to the near node and the supervisor repeated the goal forever."""
    in_process(tmp_path / "cli", "--data", str(monaco_dir), "--policy", "random", "--limit", "40",
               "--max-steps", "6")
    world = load_dataset(monaco_dir)[0]
    graph = world.graph
    crossing = [r for r in records(tmp_path / "cli")
                if any(graph.distance_m(a, b) < 5.0 for a, b in zip(r["path"], r["path"][1:]))]
    assert crossing, "no random walk of the first 40 Monaco episodes takes an edge under 5 m"
    expected = crossing[0]
    start_live_nodes(ros_processes, str(monaco_dir),
                     "-p", f"tasks:='{json.dumps([[expected['episode_id'], expected['seed']]])}'")
    walked = walk(ros_processes, tmp_path, graph.nodes[expected["start"]])
    [got] = walked["outcomes"]
    assert {k: got[k] for k in COMPARED} == {k: expected[k] for k in COMPARED}, ros_processes.log_text()


STALL_S = 8.0


def test_a_walker_that_stops_moving_ends_the_episode_as_stalled(monaco_dir, ros_processes, tmp_path):
    """The walker stands at the start and ignores every goal that would move it (whether or not
    it saw the goal to the start: a late subscriber may only get the first move). With stall_timeout_s 8 the episode
    ends as "stalled" (record, hold command and status say so) and the run finishes, instead of
    the supervisor repeating the goal forever. (8 s, not less: the start's clock runs from the
    episode's start, and in the whole suite camera_ingest came up 5 s after the supervisor, so no
    view set reached the start within 3 s and the episode stalled before its first move.)"""
    world = load_dataset(monaco_dir)[0]
    episode = world.episodes[0]
    start = world.graph.nodes[episode.start]
    start_live_nodes(ros_processes, str(monaco_dir), "-p", "limit:=1", "-p", f"stall_timeout_s:={STALL_S}")
    walked = walk(ros_processes, tmp_path, start, follow_goals=0)
    [record] = walked["outcomes"]
    assert record["episode_id"] == episode.episode_id and record["end_reason"] == "stalled"
    assert record["path"] == [episode.start] and record["steps"] == 0
    assert "stalled: no progress towards node" in record["error"] and f"stall_timeout_s {STALL_S:g}" in record["error"]
    goals = [c for c in walked["commands"] if c["command"]["type"] == "goal"]
    moves = [g for g in goals if (g["command"]["lat"], g["command"]["lon"]) != (start.lat, start.lon)]
    holds = [c for c in walked["commands"] if c["command"]["type"] == "hold"]
    assert moves and len(moves) <= STALL_S + 2  # the goal was repeated about once a second, then never again
    assert holds and "stalled" in holds[-1]["reason"] and episode.episode_id in holds[-1]["reason"]
    assert any("stalled: no progress" in s["reason"] for s in walked["statuses"]), walked["statuses"]

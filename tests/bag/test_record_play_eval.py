"""Record a run of the real replay and decision nodes over DDS, evaluate the bag, play it back
into a second recorder and evaluate that: the acceptance test "record, then play, then
re-score gives the same metrics", plus what mcap-ros2-support decodes and re-decisions."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cityseeker_ros.bag.evaluate import redecide, rescore
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros.bag_storage import BagReader
from cityseeker_ros.ros.bag_topics import DEFAULT_TOPICS
from tests.ros.conftest import REPO, require_ros
from tests.ros.test_replay_decision import coloured_panoramas, in_process, start_nodes

RECORDER = "cityseeker_ros.bag.recorder"
PLAYER = "cityseeker_ros.bag.player"
RUNS = [(0, 3), (1, 5)]


def wait_for_text(path: Path, text: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and text in path.read_text():
            return True
        time.sleep(0.05)
    return False


def finish(process: subprocess.Popen, name: str, ros_processes) -> int:
    """SIGINT by PID, as Ctrl-C would; the recorder then finishes its bag."""
    code = ros.stop(process, timeout_s=30.0)
    assert code == 0, f"{name} exit {code}\n{ros_processes.log_text()}"
    return code


@pytest.fixture
def recorded(ros_processes, tiny_city, tmp_path):
    """A bag of two forward-policy episodes with raw view images and panoramas (the replay
    node's default image_format), and the nodes' processes."""
    require_ros()
    world = load_dataset(tiny_city)[0]
    view_params = {"folder": str(coloured_panoramas(tmp_path / "panos", world.graph.nodes)), "width": 32,
                   "height": 16, "pano_width": 64}
    bag = tmp_path / "run1"
    recorder = ros_processes._start("recorder", ros.python_module_command(RECORDER, str(bag)))
    assert wait_for_text(ros_processes.logs / "recorder.log", f"recording {len(DEFAULT_TOPICS)} topics", 60), \
        ros_processes.log_text()
    start_nodes(ros_processes, tmp_path, tiny_city,
                replay={"views": "panorama-folder", "view_params": json.dumps(view_params)},
                decision={"policy": "forward"})
    # Discovery can take seconds on a loaded host: the run starts once the recorder has matched
    # every publisher it must not miss (the decision node's appears on configure).
    log = ros_processes.logs / "recorder.log"
    ros_processes.drive({"steps": [{"op": "transition", "name": "configure"},
                                   {"op": "transition", "name": "activate"}]})
    for topic in ("/streetview_replay/episode", "/streetview_replay/views", "/streetview_replay/images",
                  "/decision/decision"):
        assert wait_for_text(log, f"matched {topic}:", 60), ros_processes.log_text()
    report = ros_processes.drive({"steps": [{"op": "episode", "episode": e, "seed": s} for e, s in RUNS]})
    # The last decision and episode state reach the recorder before it stops (latched: it
    # would get them on matching anyway, and the driver has already seen them).
    time.sleep(0.5)
    finish(recorder, "recorder", ros_processes)
    return bag, report, ros_processes


def test_record_play_rescore_gives_the_same_metrics(recorded, tiny_city, tmp_path):
    bag, results, ros_processes = recorded
    assert (bag / "metadata.yaml").is_file() and (bag / "run1.mcap").is_file()
    assert not list(tmp_path.glob(".run1.partial-*"))

    first = rescore(bag, tiny_city)
    assert first.identical, first.comparison()
    assert [(r["episode_id"], r["seed"]) for r in first.records] == [
        (load_dataset(tiny_city)[0].episodes[e].episode_id, s) for e, s in RUNS]
    for (episode, seed), record, result in zip(RUNS, first.records, results):
        expected = in_process(tiny_city, "forward", episode, seed)
        for key in ("path", "actions", "end_reason", "steps", "metrics", "solvable", "path_latlon"):
            assert record[key] == expected[key], key
        assert record["metrics"] == result["episode"]["metrics"]  # what the driver saw live

    # Play it back (twice as fast as recorded) into a second recorder started through the
    # `cityseeker bag record` CLI without the ROS environment: it re-executes itself into it.
    for process in [p for name, p in ros_processes.started if name in ("streetview_replay", "decision")]:
        ros.stop(process)
    bag2 = tmp_path / "run2"
    plain = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "RMW_IMPLEMENTATION")}
    plain["ROS_DOMAIN_ID"] = ros_processes.env["ROS_DOMAIN_ID"]
    log = open(ros_processes.logs / "recorder2.log", "w")
    recorder2 = subprocess.Popen([sys.executable, "-m", "cityseeker_ros", "bag", "record", str(bag2),
                                  "--storage", "sqlite3"], env=plain, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    ros_processes.started.append(("recorder2", recorder2))
    assert wait_for_text(ros_processes.logs / "recorder2.log", f"recording {len(DEFAULT_TOPICS)} topics", 60), \
        ros_processes.log_text()
    player = ros_processes._start("player", ros.python_module_command(
        PLAYER, str(bag), "--rate", "2", "--clock", "--wait-for-subscribers", "60"))
    assert player.wait(180) == 0, ros_processes.log_text()
    time.sleep(0.5)
    finish(recorder2, "recorder2", ros_processes)
    assert "played" in (ros_processes.logs / "player.log").read_text()

    with BagReader(bag) as one, BagReader(bag2) as two:
        counts1, counts2 = one.counts(), two.counts()
        assert two.path.joinpath("run2.db3").is_file()
    for topic in ("/streetview_replay/episode", "/streetview_replay/views", "/decision/decision",
                  "/streetview_replay/images"):
        assert counts2[topic] == counts1[topic] > 0, (topic, counts1, counts2)

    second = rescore(bag2, tiny_city)
    assert second.identical
    assert [r["metrics"] for r in second.records] == [r["metrics"] for r in first.records]
    assert second.summary()["overall"] == first.summary()["overall"]

    # The CLI writes the benchmark's files and exits 0 when every episode matches.
    out = tmp_path / "eval"
    done = subprocess.run([sys.executable, "-m", "cityseeker_ros", "bag", "eval", str(bag2), "--data", str(tiny_city),
                           "--out", str(out), "--redecide", "random"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "2 episodes re-scored, 2 identical" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"] == first.summary()["overall"]
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2
    assert json.loads((out / "redecide.json").read_text())["policy"] == "random"


def test_project_bag_reads_with_mcap_ros2_support_and_redecides(recorded, tiny_city):
    from mcap_ros2.reader import read_ros2_messages

    from cityseeker_ros.ros import typed
    from cityseeker_ros.ros.convert import image_from_msg, wire_format
    from cityseeker_ros.ros.schema import EpisodeMsg

    bag, results, _ = recorded
    seen: dict[str, int] = {}
    ended, panoramas = [], 0
    for m in read_ros2_messages(str(bag / "run1.mcap")):
        seen[m.channel.topic] = seen.get(m.channel.topic, 0) + 1
        if m.channel.topic == "/streetview_replay/episode":
            # the custom type, decoded from the schema the bag embeds (mcap_ros2 knows no cityseeker type)
            assert m.schema.name == "cityseeker_interfaces/msg/Episode"
            msg = typed.record_from(EpisodeMsg, m.ros_msg)
            ended += [msg] if msg.status == "ended" else []
        if m.channel.topic == "/streetview_replay/images":
            assert wire_format(m.ros_msg) == "rgb8"
            panorama = m.ros_msg.header.frame_id == "panorama"
            assert image_from_msg(m.ros_msg).shape == ((32, 64, 3) if panorama else (16, 32, 3))
            panoramas += panorama
    assert seen["/streetview_replay/images"] > 0 and seen["/decision/decision"] > 0
    assert [e.metrics for e in ended] == [r["episode"]["metrics"] for r in results]
    assert panoramas == sum(r["episode"]["steps"] for r in results)  # one per view set decided

    same = redecide(bag, "forward")
    report = same.report()
    decisions = sum(len(r["decisions"]) for r in results)
    assert report["compared"] == decisions > 0 and report["agreement"] == 1.0, report
    assert report["recorded_policies"] == ["forward"] and report["errors"] == 0

    other = redecide(bag, "random").report()
    assert other["compared"] == decisions and other["agreed"] < decisions, other
    assert len(other["per_episode"]) == len(RUNS)


def test_run_bag_decides_the_played_steps_again(recorded, tmp_path):
    """`cityseeker run bag` (bag_eval.launch.py's processes, started by the runner): a fresh
    forward decision node answers the played view sets as the recorded one did."""
    bag, results, ros_processes = recorded
    for process in [p for name, p in ros_processes.started if name in ("streetview_replay", "decision")]:
        ros.stop(process)
    out_bag = tmp_path / "redecided"
    done = subprocess.run([sys.executable, "-m", "cityseeker_ros", "run", "bag", str(bag), "--out-bag", str(out_bag),
                           "--policy", "forward", "--views-topic", "/streetview_replay/views", "--settle", "3",
                           "--timeout", "180"], capture_output=True, text=True, cwd=REPO, timeout=240)
    logs = "".join(p.read_text()[-2000:] for p in sorted(Path(f"{out_bag}.logs").glob("*.log")))
    assert done.returncode == 0, done.stdout + done.stderr + logs
    report = json.loads((Path(f"{out_bag}.eval") / "redecide.json").read_text())
    decisions = sum(len(r["decisions"]) for r in results)
    # The asker sends every played view set as a Decide goal, in order: none is skipped.
    assert report["compared"] == decisions and report["agreement"] == 1.0, report
    assert f"{report['compared']} of {report['compared']} agree with the recording (100.0%)" in done.stdout

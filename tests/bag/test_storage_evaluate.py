"""Bags and their evaluation without a ROS graph: storage round trips, crash safety, clear
errors, and re-scoring a bag written from in-process episodes (the recorded metrics are the
in-process ones, so a re-score must reproduce them and flag any that were altered)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from rclpy.serialization import serialize_message
from rosbags.typesys.stores.ros2_jazzy import std_msgs__msg__String as String

from cityseeker_ros.bag.evaluate import rescore, write_rescore
from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.loop.view_set import EpisodeBrief
from cityseeker_ros.ros import typed
from cityseeker_ros.ros.bag_storage import BagReader, BagWriter, QosOffer
from cityseeker_ros.ros.schema import EpisodeMsg

EPISODE_TOPIC = "/streetview_replay/episode"


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip_keeps_messages_order_and_qos(tmp_path, storage):
    with BagWriter(tmp_path / "bag", storage) as writer:
        writer.add_topic("/a", "std_msgs/msg/String", [QosOffer(reliable=True, transient_local=False, depth=7)])
        writer.add_topic("/b", "std_msgs/msg/String")
        for i in range(5):
            writer.write_message("/a" if i % 2 else "/b", 1_000 + i, String(data=f"m{i}"))
    suffix = {"mcap": "mcap", "sqlite3": "db3"}[storage]
    assert sorted(p.name for p in (tmp_path / "bag").iterdir()) == sorted(["metadata.yaml", f"bag.{suffix}"])
    assert [p.name for p in tmp_path.iterdir()] == ["bag"]  # the staging folder is gone
    with BagReader(tmp_path / "bag") as reader:
        assert reader.topics == {"/a": "std_msgs/msg/String", "/b": "std_msgs/msg/String"}
        assert reader.counts() == {"/a": 2, "/b": 3}
        got = [(m.topic, m.timestamp_ns, reader.decode(m).data) for m in reader.messages()]
        qos = reader.offered_qos("/a")
    assert got == [("/b" if i % 2 == 0 else "/a", 1_000 + i, f"m{i}") for i in range(5)]
    assert qos[0].depth == 7 and qos[0].durability.name == "VOLATILE"


def test_failed_or_crashed_writes_never_look_like_a_bag(tmp_path):
    with pytest.raises(RuntimeError):
        with BagWriter(tmp_path / "failed") as writer:
            writer.add_topic("/a", "std_msgs/msg/String")
            writer.write_message("/a", 1, String(data="x"))
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    crashed = BagWriter(tmp_path / "crashed")  # never closed: a killed recorder
    crashed.add_topic("/a", "std_msgs/msg/String")
    crashed.write_message("/a", 1, String(data="x"))
    assert not (tmp_path / "crashed").exists()
    partial = next(tmp_path.glob(".crashed.partial-*"))
    with pytest.raises(ConfigError, match="no metadata.yaml"):
        BagReader(partial / "crashed")
    crashed.abort()
    assert list(tmp_path.iterdir()) == []


def test_bad_input_fails_with_one_clear_line(tmp_path):
    with pytest.raises(ConfigError, match="unknown bag storage 'zip'; known: mcap, sqlite3"):
        BagWriter(tmp_path / "x", "zip")
    (tmp_path / "exists").mkdir()
    with pytest.raises(ConfigError, match="already exists"):
        BagWriter(tmp_path / "exists")
    with pytest.raises(ConfigError, match="no such bag"):
        BagReader(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a rosbag2 bag"):
        BagReader(tmp_path / "exists")
    (tmp_path / "junk.mcap").write_bytes(b"not mcap at all")
    with pytest.raises(ConfigError, match="not a readable rosbag2 bag"):
        BagReader(tmp_path / "junk.mcap")
    with BagWriter(tmp_path / "other") as writer:
        writer.add_topic("/a", "std_msgs/msg/String")
    with pytest.raises(ConfigError, match=f"no topic {EPISODE_TOPIC} in the bag"):
        rescore(tmp_path / "other", tmp_path)
    with pytest.raises(ConfigError, match="not a ROS 2 Jazzy standard type"):
        BagWriter(tmp_path / "y").add_topic("/a", "my_msgs/msg/Thing")
    done = subprocess.run([sys.executable, "-m", "cityseeker_ros", "bag", "eval", str(tmp_path / "missing"),
                           "--data", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().endswith("no such bag") and len(done.stderr.splitlines()) == 1


def episode_bag(path, tiny_city, runs, tamper=None, legacy=False):
    """A bag holding what the replay node publishes on its episode topic for in-process runs:
    cityseeker_interfaces/Episode, or (`legacy`) the JSON in String of bags from before it."""
    world = load_dataset(tiny_city)[0]
    with BagWriter(path) as writer:
        writer.add_topic(EPISODE_TOPIC, "std_msgs/msg/String" if legacy else "cityseeker_interfaces/msg/Episode")
        for n, (index, seed) in enumerate(runs, start=1):
            episode = world.episodes[index]
            rec = run_episode(world, episode, make_policy("random"), seed)
            task = EpisodeBrief(episode_id=episode.episode_id, city=episode.city, category=episode.category,
                                difficulty=episode.difficulty, instruction=episode.instruction,
                                request=episode.request, start=episode.start, seed=seed, run=n)
            metrics = dict(rec["metrics"], **(tamper or {}))
            running = EpisodeMsg(status="running", task=task, path=rec["path"][:1])
            ended = EpisodeMsg(status="ended", task=task, path=rec["path"], actions=rec["actions"],
                               steps=rec["steps"], end_reason=rec["end_reason"], solvable=rec["solvable"],
                               metrics=metrics, path_latlon=rec["path_latlon"])
            for k, msg in enumerate((running, ended, ended)):  # latched state can arrive twice
                if legacy:
                    writer.write_message(EPISODE_TOPIC, 10 * n + k, String(data=msg.to_json()))
                else:
                    writer.write(EPISODE_TOPIC, 10 * n + k, serialize_message(typed.to_ros(msg)))
    return [run_episode(world, world.episodes[i], make_policy("random"), s) for i, s in runs]


@pytest.mark.parametrize("legacy", [False, True], ids=["typed", "legacy-json"])
def test_rescore_reproduces_in_process_metrics_and_flags_changes(tmp_path, tiny_city, legacy):
    runs = [(0, 1), (1, 2), (0, 4)]
    expected = episode_bag(tmp_path / "good", tiny_city, runs, legacy=legacy)
    result = rescore(tmp_path / "good", tiny_city)
    assert result.identical and len(result.records) == 3
    for record, want in zip(result.records, expected):
        for key in ("episode_id", "seed", "path", "metrics", "solvable", "end_reason", "steps", "target"):
            assert record[key] == want[key], key
    summary = write_rescore(result, tmp_path / "out", {"bag": "good"})
    assert summary["overall"]["episodes"] == 2 and summary["overall"]["seeds"] == 3
    assert (tmp_path / "out" / "comparison.json").is_file()

    episode_bag(tmp_path / "bad", tiny_city, runs[:1], tamper={"spl": 12.5}, legacy=legacy)
    bad = rescore(tmp_path / "bad", tiny_city)
    assert not bad.identical and bad.comparisons[0]["differing"] == ["spl"]
    done = subprocess.run([sys.executable, "-m", "cityseeker_ros", "bag", "eval", str(tmp_path / "bad"),
                           "--data", str(tiny_city)], capture_output=True, text=True)
    assert done.returncode == 1 and "DIFFERS" in done.stdout and "spl" in done.stdout

    with BagWriter(tmp_path / "unfinished") as writer:
        writer.add_topic(EPISODE_TOPIC, "std_msgs/msg/String")
        writer.write_message(EPISODE_TOPIC, 1, String(data=EpisodeMsg(status="idle").to_json()))
    with pytest.raises(ConfigError, match=f"no ended episode on {EPISODE_TOPIC}"):
        rescore(tmp_path / "unfinished", tiny_city)


def test_redecide_reads_the_supervisors_decide_goals_with_their_context(tmp_path, tiny_city):
    """A bag of a supervised run holds each Decide goal (view set + BCR context) on
    /supervisor/decide_goal and each answer on /decision/decision: re-deciding with the
    recorded policy agrees everywhere, and the view sets come back with their context."""
    from cityseeker_interfaces.action import Decide
    from cityseeker_ros.bag.evaluate import redecide
    from cityseeker_ros.core.agents.policies.base import PromptContext
    from cityseeker_ros.core.evaluation.episode_run import episode_rng
    from cityseeker_ros.core.infra.stamp import Stamp
    from cityseeker_ros.core.loop.view_set import Answer, ViewSet
    from cityseeker_ros.core.tasks.environment import Environment
    from cityseeker_ros.ros import convert
    from cityseeker_ros.ros.bag_records import records
    from cityseeker_ros.ros.bag_topics import DECIDE_GOAL, DECISION, DECISIONS, SUPERVISOR_VIEWS

    world = load_dataset(tiny_city)[0]
    episode = world.episodes[0]
    policy, env = make_policy("forward"), Environment(world)
    policy.reset(episode, episode_rng(0, episode.episode_id))
    obs, steps = env.reset(episode), 0
    with BagWriter(tmp_path / "supervised") as writer:
        writer.add_topic(SUPERVISOR_VIEWS, DECIDE_GOAL)
        writer.add_topic(DECISIONS, DECISION)
        while not env.done and steps < 5:
            task = EpisodeBrief.of(episode, seed=0, run=1)
            view_set = convert.observation_to_view_set(obs, task, f"vs{steps}", Stamp(sec=steps, nanosec=0))
            context = PromptContext(history=f"step {steps}")
            goal = Decide.Goal(view_set=typed.view_set_to_ros(view_set), context=typed.context_to_ros(context))
            decision = policy.decide(obs)
            answer = Answer.of(view_set, decision, "forward", 0.001)
            writer.write(SUPERVISOR_VIEWS, 10 * steps, serialize_message(goal))
            writer.write(DECISIONS, 10 * steps + 1, serialize_message(typed.to_ros(answer)))
            obs = env.step(decision.action).observation
            steps += 1
    with BagReader(tmp_path / "supervised") as reader:
        read = list(records(reader, SUPERVISOR_VIEWS, ViewSet))
    assert [v.context.history for v in read] == [f"step {i}" for i in range(steps)]
    report = redecide(tmp_path / "supervised", "forward").report()
    assert report["views_topic"] == SUPERVISOR_VIEWS
    assert report["compared"] == steps > 0 and report["agreement"] == 1.0, report

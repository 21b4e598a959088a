"""Evaluate a recorded run from its bag alone (no ROS graph, no rclpy).

Re-score: every ended episode on the episode topic is scored again from its recorded path
with core.evaluation.metrics on the dataset, and compared with the metrics the replay node recorded;
the records and summary are written as the benchmark writes them, so `cityseeker report` and
the tables read them. Re-decide: every recorded view set (with its images) is shown to another
policy, reset per task with the benchmark's random stream, and its action compared with the
recorded decision, step by step (the comparison, written by ros/bag_records.write_redecision,
is the one `cityseeker run bag` reports).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.config import EPISODES_FILE, SUMMARY_FILE
from cityseeker_ros.core.evaluation.decisions import summarize_decisions
from cityseeker_ros.core.evaluation.episode_run import episode_record as core_episode_record
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.evaluation.metrics import DEFAULT_DTW_THRESHOLD_M, summarize
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import write_json_atomic, write_text_atomic
from cityseeker_ros.core.loop.view_set import Answer, ViewSet
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS, EndReason, Trajectory
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode, World
from cityseeker_ros.core.tasks.family import family_of_record, family_of_records
from cityseeker_ros.ros.bag_records import Redecision, decision_outcome, recorded_decisions, records
from cityseeker_ros.ros.bag_records import write_redecision as write_redecision  # bag/cli writes redecide's result
from cityseeker_ros.ros.bag_storage import BagReader
from cityseeker_ros.ros.bag_topics import DECISIONS, REPLAY_EPISODE, REPLAY_IMAGES, REPLAY_VIEWS, SUPERVISOR_VIEWS
from cityseeker_ros.ros.schema import EpisodeMsg, as_dict

COMPARISON_FILE = "comparison.json"
TOLERANCE = 1e-9  # metrics are recomputed by the same code: anything larger is a real difference


def ended_episodes(reader: BagReader, topic: str = REPLAY_EPISODE) -> list[EpisodeMsg]:
    """One EpisodeMsg per finished run (latched state may arrive twice), in the order they ended."""
    if topic not in reader.topics:
        raise ConfigError(f"{reader.path}: no topic {topic} in the bag (it has {', '.join(sorted(reader.topics))})")
    runs: dict[tuple, EpisodeMsg] = {}
    for msg in records(reader, topic, EpisodeMsg):
        if msg.status == "ended" and msg.task is not None:
            runs.setdefault(msg.task.key(), msg)
    if not runs:
        raise ConfigError(f"{reader.path}: no ended episode on {topic}")
    return list(runs.values())


class Dataset:
    """The worlds and episodes a bag's tasks name, each task family's loaded when a task names it."""

    def __init__(self, data: Path, dataset: str = "auto") -> None:
        self.data, self.dataset = Path(data), dataset
        self._families: dict[str, dict[str, World]] = {}

    def _of(self, family: str) -> dict[str, World]:
        if family not in self._families:
            self._families[family] = {w.city: w for w in load_dataset(self.data, self.dataset, family=family)}
        return self._families[family]

    def find(self, city: str, episode_id: str, family: str = DEFAULT_FAMILY) -> tuple[World, Episode]:
        worlds = self._of(family)
        world = worlds.get(city)
        if world is None:
            raise ConfigError(f"{self.data}: no city {city!r} (the bag's episode {episode_id}); "
                              f"it has {', '.join(sorted(worlds))}")
        for episode in world.episodes:
            if episode.episode_id == episode_id:
                return world, episode
        raise ConfigError(f"{self.data}: city {city} has no episode {episode_id!r}")


# -- re-score ----------------------------------------------------------------------------------

@dataclass
class Rescore:
    records: list[dict[str, Any]]  # as episodes.jsonl
    comparisons: list[dict[str, Any]]  # per episode: recorded vs recomputed

    @property
    def identical(self) -> bool:
        return all(c["identical"] for c in self.comparisons)

    def summary(self) -> dict[str, Any]:
        summary = summarize(self.records)
        summary["end_reasons"] = _count(r["end_reason"] for r in self.records)
        if any("decisions" in r for r in self.records):
            summary["decisions"] = summarize_decisions(self.records)
        return summary

    def comparison(self) -> dict[str, Any]:
        diffs = [c["max_abs_diff"] for c in self.comparisons if c["max_abs_diff"] is not None]
        return {"episodes": len(self.comparisons), "identical": sum(c["identical"] for c in self.comparisons),
                "all_identical": self.identical, "max_abs_diff": max(diffs) if diffs else None,
                "tolerance": TOLERANCE, "per_episode": self.comparisons}


def episode_record(world: World, episode: Episode, msg: EpisodeMsg, *, max_steps: int,
                   dtw_threshold_m: float) -> dict[str, Any]:
    """The benchmark's episodes.jsonl record of a recorded run, metrics recomputed from its path."""
    assert msg.task is not None
    path = list(msg.path)
    unknown = [n for n in path if n not in world.graph.nodes]
    if not path or unknown:
        raise ConfigError(f"episode {episode.episode_id}: recorded path has nodes not in {world.city}: "
                          f"{unknown[:3] or '(empty path)'}")
    trajectory = Trajectory(path, list(msg.actions), EndReason(msg.end_reason), msg.error, msg.answer)
    return core_episode_record(world, episode, msg.task.seed, trajectory, [], max_steps=max_steps,
                               dtw_threshold_m=dtw_threshold_m, extras={"round": msg.task.round, "run": msg.task.run})


def _compare(record: dict[str, Any], msg: EpisodeMsg) -> dict[str, Any]:
    recorded = msg.metrics or {}
    keys = family_of_record(record).metric_keys
    diffs = {k: abs(float(record["metrics"][k]) - float(recorded[k])) for k in keys if k in recorded}
    missing = [k for k in keys if k not in recorded]
    worst = max(diffs.values()) if diffs else None
    identical = (not missing and worst is not None and worst <= TOLERANCE and record["solvable"] == msg.solvable)
    return {"episode_id": record["episode_id"], "seed": record["seed"], "run": record["run"],
            "identical": identical, "max_abs_diff": worst, "missing": missing,
            "differing": sorted(k for k, d in diffs.items() if d > TOLERANCE or math.isnan(d)),
            "recorded": recorded, "recomputed": record["metrics"],
            "recorded_solvable": msg.solvable, "recomputed_solvable": record["solvable"]}


def rescore(bag: Path, data: Path, dataset: str = "auto", *, max_steps: int = DEFAULT_MAX_STEPS,
            dtw_threshold_m: float = DEFAULT_DTW_THRESHOLD_M, episode_topic: str = REPLAY_EPISODE,
            decision_topic: str = DECISIONS) -> Rescore:
    """Score every ended episode of `bag` again on `data`; `max_steps` and `dtw_threshold_m` must
    be the replay node's for the metrics to match the recorded ones."""
    with BagReader(bag) as reader:
        episodes = ended_episodes(reader, episode_topic)
        decisions = recorded_decisions(reader, decision_topic)
    worlds = Dataset(data, dataset)
    by_run: dict[tuple, list[Answer]] = {}
    for d in decisions.values():
        by_run.setdefault(d.task.key(), []).append(d)
    records, comparisons = [], []
    for msg in episodes:
        assert msg.task is not None
        world, episode = worlds.find(msg.task.city, msg.task.episode_id, msg.task.family)
        record = episode_record(world, episode, msg, max_steps=max_steps, dtw_threshold_m=dtw_threshold_m)
        steps = [r for d in sorted(by_run.get(msg.task.key(), []), key=lambda d: d.step) for r in d.records]
        if steps:
            record["decisions"] = steps
        records.append(record)
        comparisons.append(_compare(record, msg))
    return Rescore(records, comparisons)


def write_rescore(result: Rescore, out: Path, source: Mapping[str, Any]) -> dict[str, Any]:
    """episodes.jsonl, summary.json (with `source`: the bag and settings) and comparison.json."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / EPISODES_FILE, "".join(json.dumps(r, separators=(",", ":")) + "\n"
                                                   for r in result.records))
    summary = result.summary()
    summary["config"] = {**source, "family": family_of_records(result.records).name}
    write_json_atomic(out / SUMMARY_FILE, summary)
    write_json_atomic(out / COMPARISON_FILE, result.comparison())
    return summary


# -- re-decide ---------------------------------------------------------------------------------

def redecide(bag: Path, policy: str, policy_params: Optional[Mapping[str, Any]] = None, *,
             data: Optional[Path] = None, dataset: str = "auto", views_topic: Optional[str] = None,
             images_topic: str = REPLAY_IMAGES, decision_topic: str = DECISIONS) -> Redecision:
    """Decide every recorded view set again with `policy`; compare with the recorded decisions."""
    from cityseeker_ros.ros import convert  # message classes for the images: plain Python, no rclpy

    agent = make_policy(policy, **dict(policy_params or {}))
    if agent.privileged and data is None:
        raise ConfigError(f"policy {policy} is privileged: give the dataset (--data)")
    worlds = Dataset(data, dataset) if agent.privileged and data is not None else None
    with BagReader(bag) as reader:
        counts = reader.counts()
        if views_topic is None:
            views_topic = SUPERVISOR_VIEWS if counts.get(SUPERVISOR_VIEWS) else REPLAY_VIEWS
        if not counts.get(views_topic):
            raise ConfigError(f"{reader.path}: no view sets on {views_topic}")
        view_sets: dict[str, ViewSet] = {}
        for vs in records(reader, views_topic, ViewSet):
            if not vs.done:
                view_sets.setdefault(vs.view_set_id, vs)
        decisions = recorded_decisions(reader, decision_topic)
        images: dict[tuple[int, int, str], Any] = {}
        # raw Image on the topic, png/jpeg on its /compressed (bags from before raw: CompressedImage on the topic)
        recorded = [t for t in (images_topic, f"{images_topic}/compressed") if t in reader.topics]
        if agent.uses_images and recorded:
            for message in reader.messages(recorded):
                msg = reader.decode(message)
                images[(msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)] = msg
    agent.prepare()
    result = Redecision(policy, views_topic)
    key = None
    for vs in view_sets.values():
        task = vs.task
        step: dict[str, Any] = {"view_set_id": vs.view_set_id, "episode_id": task.episode_id, "seed": task.seed,
                                "round": task.round, "run": task.run, "step": vs.step}
        try:
            if task.key() != key:
                key = task.key()
                world, episode = (worlds.find(task.city, task.episode_id, task.family) if worlds is not None
                                  else (None, task.episode()))
                agent.reset(episode, episode_rng(task.seed, task.episode_id, task.round), world)
            decoded = (convert.view_set_images(vs, {f: images[(vs.stamp.sec, vs.stamp.nanosec, f)]
                                                    for f in vs.image_frames()
                                                    if (vs.stamp.sec, vs.stamp.nanosec, f) in images})
                       if agent.uses_images else {})
            observation = convert.view_set_to_observation(vs, decoded)
            if vs.context is not None and agent.accepts_context:
                decision = agent.decide(observation, vs.context)
            else:
                decision = agent.decide(observation)
            step["redecided"] = {"action": as_dict(decision.action)}
        except ConfigError:
            raise
        except Exception as exc:  # a broken policy is reported per step, as the node would publish it
            step["redecided"] = {"error": f"{type(exc).__name__}: {exc}"}
        recorded = decisions.get(vs.view_set_id)
        step["recorded"] = decision_outcome(recorded)
        step["recorded_policy"] = recorded.policy if recorded is not None else None
        step["agree"] = None if recorded is None else step["recorded"] == step["redecided"]
        result.steps.append(step)
    return result


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))

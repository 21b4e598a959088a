"""A bag's topics read as the stack's records (ros/schema.py), and the decisions of two bags
compared view set by view set: what the bag tools evaluate (bag/evaluate.py) and what
`cityseeker run bag` (ros/launcher.py) reports after a fresh decision node answered a played
bag. No rclpy: a bag file alone is enough."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TypeVar

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import write_json_atomic, write_text_atomic
from cityseeker_ros.core.loop.view_set import Answer, ViewSet
from cityseeker_ros.ros import typed  # message classes: plain Python, no rclpy
from cityseeker_ros.ros.bag_storage import BagReader
from cityseeker_ros.ros.bag_topics import DECIDE_GOAL, DECISIONS, STRING
from cityseeker_ros.ros.schema import as_dict, parse

R = TypeVar("R")

REDECIDE_FILE = "redecide.json"
REDECISIONS_FILE = "redecisions.jsonl"


def records(reader: BagReader, topic: str, model: type[R]) -> Iterator[R]:
    """The records of a topic (a ViewSet, an Answer...), in bag order: its cityseeker_interfaces
    messages (a view set also from a recorded Decide goal, with the goal's prompt context), or the
    JSON in std_msgs/String
    of bags recorded before the typed interfaces. A malformed one names topic and time."""
    for message in reader.messages([topic]):
        msg = reader.decode(message)
        try:
            if message.msgtype == STRING:
                yield parse(model, msg.data)
            elif message.msgtype == DECIDE_GOAL and model is ViewSet:
                yield typed.record_from(ViewSet, msg.view_set, msg.context)
            else:
                yield typed.record_from(model, msg)
        except ValueError as exc:  # pydantic's ValidationError included
            raise ConfigError(f"{reader.path}: topic {topic} at {message.timestamp_ns} ns: not a "
                              f"{model.__name__} ({str(exc).splitlines()[0]})") from None


def recorded_decisions(reader: BagReader, topic: str = DECISIONS) -> dict[str, Answer]:
    """view_set_id -> the decision the recorded run took for it."""
    if topic not in reader.topics:
        return {}
    return {d.view_set_id: d for d in records(reader, topic, Answer)}


@dataclass
class Redecision:
    """Recorded view sets decided again: one step per view set, with both decisions."""

    policy: str
    views_topic: str
    steps: list[dict[str, Any]] = field(default_factory=list)

    def per_episode(self) -> list[dict[str, Any]]:
        runs: dict[tuple, dict[str, Any]] = {}
        for s in self.steps:
            row = runs.setdefault((s["episode_id"], s["seed"], s["round"], s["run"]), {
                "episode_id": s["episode_id"], "seed": s["seed"], "round": s["round"], "run": s["run"],
                "view_sets": 0, "compared": 0, "agreed": 0})
            row["view_sets"] += 1
            row["compared"] += s["agree"] is not None
            row["agreed"] += bool(s["agree"])
        for row in runs.values():
            row["agreement"] = row["agreed"] / row["compared"] if row["compared"] else None
        return list(runs.values())

    def report(self) -> dict[str, Any]:
        compared = [s for s in self.steps if s["agree"] is not None]
        agreed = sum(bool(s["agree"]) for s in compared)
        recorded_policies = sorted({s["recorded_policy"] for s in compared})
        return {"policy": self.policy, "recorded_policies": recorded_policies, "views_topic": self.views_topic,
                "view_sets": len(self.steps), "compared": len(compared), "agreed": agreed,
                "agreement": agreed / len(compared) if compared else None,
                "errors": sum(s["redecided"].get("error") is not None for s in self.steps),
                "per_episode": self.per_episode()}


def decision_outcome(decision: Optional[Answer]) -> Optional[dict[str, Any]]:
    """What a decision compares by: its action, or its error."""
    if decision is None:
        return None
    if decision.error is not None:
        return {"error": decision.error}
    return {"action": as_dict(decision.action)}


def compare_decisions(recorded: Path, redecided: Path, decision_topic: str = DECISIONS) -> Redecision:
    """The decisions of a bag_eval run (`redecided`: a fresh decision node answering the played
    view sets of `recorded`) against the recorded ones, view set by view set."""
    with BagReader(recorded) as reader:
        before = recorded_decisions(reader, decision_topic)
    with BagReader(redecided) as reader:
        after = recorded_decisions(reader, decision_topic)
    policies = sorted({d.policy for d in after.values()})
    result = Redecision(", ".join(policies) or "(none)", decision_topic)
    for view_set_id, new in after.items():
        old = before.get(view_set_id)
        step = {"view_set_id": view_set_id, "episode_id": new.task.episode_id, "seed": new.task.seed,
                "round": new.task.round, "run": new.task.run, "step": new.step, "redecided": decision_outcome(new),
                "recorded": decision_outcome(old), "recorded_policy": old.policy if old is not None else None}
        step["agree"] = None if old is None else step["recorded"] == step["redecided"]
        result.steps.append(step)
    return result


def write_redecision(result: Redecision, out: Path) -> dict[str, Any]:
    """Every step to REDECISIONS_FILE and the report to REDECIDE_FILE in `out`; the report."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / REDECISIONS_FILE, "".join(json.dumps(s, separators=(",", ":")) + "\n"
                                                      for s in result.steps))
    report = result.report()
    write_json_atomic(out / REDECIDE_FILE, report)
    return report

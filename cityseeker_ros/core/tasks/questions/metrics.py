"""CityEQA's measures of one finished question (Das et al.'s three, as the paper uses them): was
the answer right, how far from the target did the agent answer, how many steps it took. The
paper's 1-5 LLM judge runs later over finished records (questions/judge.py); here the answer is
scored by normalised exact match, which needs no model and repeats byte for byte."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cityseeker_ros.core.streets.geodesy import geodesic_m
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.family import MetricSpec
from cityseeker_ros.core.tasks.questions.answers import MAX_ANSWER_CHARS, answer_invalid, matches

if TYPE_CHECKING:
    from cityseeker_ros.core.tasks.trajectory import Trajectory

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("accuracy", "Accuracy", "%", "answer matches the world's (normalised exact match: case, accents, "
               "punctuation and articles ignored, number words as digits)"),
    MetricSpec("answered", "Answered", "%", "the episode ended with an answer"),
    MetricSpec("answer_invalid", "Invalid", "%", f"answer empty or longer than {MAX_ANSWER_CHARS} characters"),
    MetricSpec("na_m", "NA", "m", "navigation accuracy: metres from the final node to the target object "
               "(lower is better)"),
    MetricSpec("steps", "MTS", "steps", "mean steps taken"),
    MetricSpec("solvable", "Solvable", "%", "the target's board is legible from a node reachable within the budget"),
)


def question_metrics(world: World, episode: Episode, trajectory: Trajectory, solvable: bool) -> dict[str, float]:
    """Every measure of one episode, keyed and ordered as METRICS. An invalid answer is counted and
    scored wrong, never raised."""
    details = episode.details
    answer = trajectory.answer
    final = world.graph.nodes[trajectory.path[-1]]
    lat, lon = target_latlon(world, episode)
    return {
        "accuracy": 100.0 if matches(answer, details.get("accepted", ())) else 0.0,
        "answered": 100.0 if answer is not None else 0.0,
        "answer_invalid": 100.0 if answer_invalid(answer) else 0.0,
        "na_m": round(geodesic_m(final.lat, final.lon, lat, lon), 3),
        "steps": float(trajectory.steps),
        "solvable": 100.0 if solvable else 0.0,
    }


def target_latlon(world: World, episode: Episode) -> tuple[float, float]:
    """The target object's position (the paper's p_tar); the target node's where a task gives none."""
    at: Any = episode.details.get("target_latlon")
    if at is not None:
        return float(at[0]), float(at[1])
    node = world.graph.nodes[episode.target]
    return node.lat, node.lon

"""Embodied questions (CityEQA): walk from a start within 200 m, find the place a question
describes by a nearby named place and a direction, and answer it; judged by answer accuracy,
navigation accuracy and mean steps (questions/metrics.py), and optionally by the paper's 1-5
LLM judge over finished records (questions/judge.py). Tasks live in tasks.questions.json."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.family import (
    FAMILIES,
    MOVE_ACTIONS,
    GeneratedTasks,
    Loaded,
    MetricSpec,
    PromptForms,
    TaskFamily,
)
from cityseeker_ros.core.tasks.questions.answers import CATEGORIES, KINDS, answer_invalid, matches
from cityseeker_ros.core.tasks.questions.facts import MAP, RENDERER
from cityseeker_ros.core.tasks.questions.metrics import METRICS, question_metrics
from cityseeker_ros.core.tasks.task_file import episodes_from

if TYPE_CHECKING:
    from cityseeker_ros.core.tasks.trajectory import Trajectory
    from cityseeker_ros.core.worlds.scene import Scene

# The system prompt follows the paper's Collector prompt (its Figure 8) where it applies: a concise,
# meaningful answer, a reasoned guess rather than "it is not visible", no explanation in the answer.
PROMPTS = PromptForms(
    system=("You are an embodied agent in a city. You are given a question about something near you; the question "
            "describes its target by landmarks and spatial relationships (north, south, east, west). Explore the "
            "street views to find the target, then answer the Question. Provide a concise and meaningful answer "
            "without explanations, reasoning or thought processes. If what you see is insufficient to answer the "
            "Question, use reasoning and common sense to guess an answer; avoid vague responses like \"It is not "
            "legible/visible...\" or \"It is not possible to determine...\". Answer with one JSON object and "
            "nothing else."),
    goal_label="Question",
    stop_question=("Can you answer the Question now from what you see? If so, give a concise and meaningful answer "
                   "to the Question."),
    answers=True)


class QuestionsFamily(TaskFamily):
    name: ClassVar[str] = "questions"
    title: ClassVar[str] = "Questions"
    seed_paper: ClassVar[str] = "CityEQA (embodied question answering)"
    synthetic: ClassVar[str] = ("the questions and their wording (made from the scene: sign names, building levels, "
                                "facade palette colours, OSM classes, directions between places), the imagery, and "
                                "the facade colours and storey counts the renderer draws")
    actions: ClassVar[frozenset[str]] = MOVE_ACTIONS | {"answer"}
    metrics: ClassVar[tuple[MetricSpec, ...]] = METRICS
    success_metric: ClassVar[str] = "accuracy"
    headline: ClassVar[tuple[str, ...]] = ("accuracy", "na_m", "steps", "answered", "answer_invalid")
    breakdown: ClassVar[tuple[str, ...]] = ("accuracy", "na_m", "steps", "answered", "solvable")
    ablation: ClassVar[tuple[tuple[str, str], ...]] = (("accuracy", "Accuracy (%)"), ("na_m", "NA (m)"))
    baselines: ClassVar[tuple[str, ...]] = ("question-random", "question-ocr", "question-sign-oracle",
                                            "question-oracle")
    oracle: ClassVar[str] = "question-oracle"
    chance: ClassVar[str] = "question-random"
    perfect_perception: ClassVar[Optional[str]] = "question-sign-oracle"  # the signs' text as drawn
    prompts: ClassVar[PromptForms] = PROMPTS

    def goal_budget(self, run_max_steps: int) -> int:
        from cityseeker_ros.core.tasks.questions.generator import QuestionSettings

        return QuestionSettings().budget  # the same 50 steps as the generated questions

    def default_max_steps(self) -> int:
        """CityEQA's 50 steps, every question's own budget: a run naming no cap keeps them."""
        from cityseeker_ros.core.tasks.questions.generator import QuestionSettings

        return QuestionSettings().budget

    def public_details(self, episode: Episode) -> dict[str, Any]:
        """What the question's words say (its kind, and the parse a planner makes of them); the
        expected answer and where it is legible stay with the judge."""
        return {k: episode.details[k] for k in ("kind", "question", "parse") if k in episode.details}

    def score(self, world: World, episode: Episode, trajectory: Trajectory, solvable: bool, *,
              dtw_threshold_m: float) -> dict[str, float]:
        return question_metrics(world, episode, trajectory, solvable)

    def record_fields(self, world: World, episode: Episode, trajectory: Trajectory) -> dict[str, Any]:
        d = episode.details
        return {"family": self.name, "question": d.get("question", episode.instruction), "answer": trajectory.answer,
                "expected": d.get("answer"), "answer_kind": d.get("kind"),
                "answer_correct": matches(trajectory.answer, d.get("accepted", ())),
                "answer_invalid": answer_invalid(trajectory.answer)}

    def load(self, folder: Path, city: str, graph: StreetGraph, split: str) -> Loaded:
        path = Path(folder) / self.tasks_file
        if not path.is_file():
            raise DataError(path, self.missing_tasks(folder))
        episodes = episodes_from(path, self.name, city, graph, split, CATEGORIES.values())
        for ep in episodes:
            check_details(path, ep)
        return episodes, {}

    def generate(self, name: str, graph: StreetGraph, scene: Scene, seed: int = 0,
                 settings: Any = None, source: Optional[Path] = None) -> GeneratedTasks:
        """`settings` a QuestionSettings, else its defaults with `seed`; `source` the raw extract the
        world was built from, whose every place a question's words are also checked against (None:
        the scene's places only, as the task file's `world.checked_against` then says). (The
        generator renders views to check legibility: it loads the renderer, and Pillow, only here.)"""
        from cityseeker_ros.core.tasks.questions.generator import QuestionSettings, generate_questions
        from cityseeker_ros.core.tasks.questions.places import read_map_places

        raw = read_map_places(Path(source), scene) if source is not None else None
        return generate_questions(name, graph, scene, settings or QuestionSettings(seed=seed), map_places=raw)


def check_details(path: Path, episode: Episode) -> None:
    """The fields of `details` the measures and policies read, each checked, naming the task."""
    d, rec = episode.details, f"task {episode.episode_id}"
    if d.get("kind") not in KINDS:
        raise DataError(path, f"details.kind {d.get('kind')!r} is not one of {', '.join(KINDS)}", record=rec,
                        field="details")
    if not isinstance(d.get("answer"), str) or not d["answer"].strip():
        raise DataError(path, "details.answer must be a non-empty string", record=rec, field="details")
    accepted = d.get("accepted")
    if not isinstance(accepted, list) or not accepted or not all(isinstance(a, str) for a in accepted):
        raise DataError(path, "details.accepted must be a non-empty list of strings", record=rec, field="details")
    at = d.get("target_latlon")
    if not (isinstance(at, list) and len(at) == 2 and all(isinstance(v, (int, float)) for v in at)):
        raise DataError(path, f"details.target_latlon must be [lat, lon], got {at!r}"[:200], record=rec,
                        field="details")
    if not isinstance(d.get("question"), str) or not isinstance(d.get("target_poi"), str):
        raise DataError(path, "details.question and details.target_poi must be strings", record=rec, field="details")
    needs = {"existence": ("asked_kind", "anchor_poi"), "counting": ("asked_kind", "anchor_poi", "end_poi")}
    for key in needs.get(d["kind"], ()):
        if not isinstance(d.get(key), str) or not d[key]:
            raise DataError(path, f"details.{key} must be a non-empty string on a {d['kind']} question", record=rec,
                            field="details")
    facts = d.get("facts")  # absent in task files written before facts were recorded: the kind's are used
    if facts is not None and not (isinstance(facts, list) and facts and all(
            isinstance(f, dict) and f.get("source") in (MAP, RENDERER) for f in facts)):
        raise DataError(path, f"details.facts must be a non-empty list of {{fact, source, from}} with source "
                        f"{MAP!r} or {RENDERER!r}", record=rec, field="details")


FAMILIES.register("questions")(QuestionsFamily())

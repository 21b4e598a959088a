"""PReP's landmark goals as a task family: the goal is given only by its direction and distance
from well-known landmarks ("about 300 m north-east of the cathedral"); no instructions, no map.
The agent recognises landmarks in the street views, infers where the goal is, walks there and
stops. Judged by SR and SPL within PReP's budget (2.5 times the shortest route)."""
from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.family import GeneratedTasks, Loaded, MetricSpec, PaperRow, PromptForms, TaskFamily
from cityseeker_ros.core.tasks.landmarks.generator import CATEGORIES, FAMILY, LandmarkTaskSettings, budget_for
from cityseeker_ros.core.tasks.landmarks.metrics import METRICS, landmark_metrics, success_radius_m
from cityseeker_ros.core.tasks.landmarks.relations import GOAL, Relation
from cityseeker_ros.core.tasks.task_file import episodes_from

if TYPE_CHECKING:
    from cityseeker_ros.core.tasks.trajectory import Trajectory
    from cityseeker_ros.core.worlds.scene import Scene

# PReP's prompts (appendix G) ask about landmarks ("Is the <landmark> visible in the image?",
# "How far is that place away from the camera?") and directions; the paper's agent never
# decides to stop (it succeeds on arrival), so the stop question is ours, in its terms.
PROMPTS = PromptForms(
    system=("You are an agent navigating a city without instructions or a map. The goal is described only by "
            "its direction and distance from well-known landmarks. Recognise the landmarks in the street views, "
            "estimate their direction and distance from you, infer the direction and distance of the goal from "
            "where you are, and move towards it; stop when you are at the goal. Answer with one JSON object and "
            "nothing else."),
    goal_label="Goal",
    stop_question=("According to the landmarks you see and the goal's direction and distance from them, "
                   "are you at the goal?"))


class LandmarksFamily(TaskFamily):
    name: ClassVar[str] = FAMILY
    title: ClassVar[str] = "Landmark goals"
    seed_paper: ClassVar[str] = "PReP (Perceive, Reflect and Plan: goal-directed city navigation without instructions)"
    synthetic: ClassVar[str] = ("the imagery, the landmarks' identity colours, and the descriptions (made from the "
                                "map by rule: 8-point compass words, rounded distances)")
    metrics: ClassVar[tuple[MetricSpec, ...]] = METRICS
    success_metric: ClassVar[str] = "sr"
    success_words: ClassVar[str] = "stopped at the goal or one street edge from it"
    headline: ClassVar[tuple[str, ...]] = ("sr", "spl", "osr", "final_m", "steps")
    breakdown: ClassVar[tuple[str, ...]] = ("sr", "spl", "osr", "final_m", "steps")
    ablation: ClassVar[tuple[tuple[str, str], ...]] = (("sr", "SR (%)"), ("spl", "SPL (%)"))
    baselines: ClassVar[tuple[str, ...]] = ("random", "landmark-seeker", "landmark-oracle", "oracle")
    perfect_perception: ClassVar[Optional[str]] = "landmark-oracle"  # PReP's oracle: ground-truth landmark geometry
    # PReP's Tables 1 and 2, each row the mean of its four cities (Beijing, Shanghai, New York, Paris).
    paper: ClassVar[tuple[PaperRow, ...]] = (
        PaperRow("Random", "Table 1", MappingProxyType({"sr": 1.0, "spl": 0.64})),
        PaperRow("React (PReP without reflection or planning)", "Table 1",
                 MappingProxyType({"sr": 21.25, "spl": 15.62})),
        PaperRow("PReP", "Table 1", MappingProxyType({"sr": 53.25, "spl": 38.34})),
        PaperRow("PReP, oracle perception", "Table 2", MappingProxyType({"sr": 57.25, "spl": 40.58})),
    )
    paper_metrics: ClassVar[tuple[str, ...]] = ("sr", "spl")
    paper_scope: ClassVar[str] = ("4 cities x 100 test tasks, 50 m steps, shortest routes N(30, 10) steps, budget 2.5x "
                                  "the shortest route, GPT-4-turbo; means of the per-city values")
    prompts: ClassVar[PromptForms] = PROMPTS

    def score(self, world: World, episode: Episode, trajectory: Trajectory, solvable: bool, *,
              dtw_threshold_m: float) -> dict[str, float]:
        return landmark_metrics(world.graph, episode, trajectory)

    def public_details(self, episode: Episode) -> dict[str, Any]:
        """The landmarks (name, colour, height) and the relations as D states them (word, distance
        and tolerance), without the true bearings and distances the checker and reports use."""
        hidden = ("bearing_deg", "true_distance_m")
        details = episode.details
        return {"landmarks": details.get("landmarks", []),
                **{key: [{k: v for k, v in r.items() if k not in hidden} for r in details.get(key, [])]
                   for key in ("goal_relations", "landmark_relations")}}

    def default_max_steps(self) -> int:
        """The largest budget PReP's rule gives the generator's longest route: a run naming no
        cap keeps every episode's own budget."""
        settings = LandmarkTaskSettings()
        return budget_for(settings.max_hops, settings.budget_factor)

    def record_fields(self, world: World, episode: Episode, trajectory: Trajectory) -> dict[str, Any]:
        # "budget" is the budget used, the run's cap applied: episode_record sets it.
        return {"family": self.name, "budget": episode.budget,
                "success_radius_m": round(success_radius_m(world.graph, episode.target), 1),
                "goal_landmarks": [r["landmark"] for r in episode.details.get("goal_relations", [])]}

    def load(self, folder: Path, city: str, graph: StreetGraph, split: str) -> Loaded:
        path = Path(folder) / self.tasks_file
        if not path.is_file():
            raise DataError(path, self.missing_tasks(folder))
        episodes = episodes_from(path, self.name, city, graph, split, CATEGORIES)
        for episode in episodes:
            check_details(path, episode)
        return episodes, {}

    def generate(self, name: str, graph: StreetGraph, scene: Scene, seed: int = 0,
                 settings: Optional[LandmarkTaskSettings] = None) -> GeneratedTasks:
        """`settings` a LandmarkTaskSettings, else its defaults with `seed`."""
        from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks

        return generate_landmark_tasks(name, graph, scene, settings or LandmarkTaskSettings(seed=seed))


def check_details(path: Path, episode: Episode) -> None:
    """What the baselines and the checker read of an episode: its per-episode budget, relations
    that parse, goal relations about the goal, and the public list of landmarks they name."""
    record = f"task {episode.episode_id}"
    if episode.budget is None:
        raise DataError(path, "missing: landmark goals have a per-episode budget (2.5 x the shortest route)",
                        record=record, field="budget")
    details = episode.details
    for key in ("goal_relations", "landmark_relations", "landmarks"):
        if not isinstance(details.get(key), list):
            raise DataError(path, f"expected a list, got {details.get(key)!r}"[:200], record=record,
                            field=f"details.{key}")
    if not details["goal_relations"]:
        raise DataError(path, "empty: a landmark goal is described by at least one relation", record=record,
                        field="details.goal_relations")
    known = set()
    for k, m in enumerate(details["landmarks"]):
        if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not isinstance(m.get("name"), str):
            raise DataError(path, "expected {id, name, colour, height_m, ...}", record=record,
                            field=f"details.landmarks[{k}]")
        known.add(m["id"])
    for key in ("goal_relations", "landmark_relations"):
        for k, doc in enumerate(details[key]):
            where = f"details.{key}[{k}]"
            try:
                rel = Relation.from_json(doc)
            except (TypeError, ValueError) as exc:
                raise DataError(path, f"not a relation: {exc}"[:200], record=record, field=where) from None
            if (rel.subject == GOAL) != (key == "goal_relations"):
                raise DataError(path, f"subject {rel.subject!r} in {key}", record=record, field=where)
            for lm in (rel.landmark,) + (() if rel.subject == GOAL else (rel.subject,)):
                if lm not in known:
                    raise DataError(path, f"landmark {lm!r} is not in details.landmarks", record=record, field=where)

"""CitySeeker's implicit needs ("I am thirsty"): the first task family, judged by the paper's
measures (DESIGN.md section 4). Its records and summaries are those made before families
existed, byte for byte: they carry no `family` field, and the world's tasks stay in tasks.json."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.infra.jsonfile import read_json_file
from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, Episode, World
from cityseeker_ros.core.tasks.family import (
    FAMILIES,
    GeneratedTasks,
    Loaded,
    MetricSpec,
    PaperRow,
    PromptForms,
    TaskFamily,
)
from cityseeker_ros.core.tasks.needs.paper_results import PAPER_CATEGORY_TCP50, PAPER_OVERALL, PAPER_SCOPE
from cityseeker_ros.core.tasks.task_file import check_nodes, field, split_tasks

if TYPE_CHECKING:
    from cityseeker_ros.core.tasks.trajectory import Trajectory
    from cityseeker_ros.core.worlds.scene import Scene

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("tce", "TCE", "%", "final node is the target"),
    MetricSpec("tcp40", "TCP40", "%", "final node within 40 m of the target"),
    MetricSpec("tcp50", "TCP50", "%", "final node within 50 m of the target (the paper's TCP)"),
    MetricSpec("tcp60", "TCP60", "%", "final node within 60 m of the target"),
    MetricSpec("tcc", "TCC", "%", "final node within 50 m of any place of the requested kind"),
    MetricSpec("spl", "SPL", "%", "TCP50 success weighted by reference / walked length"),
    MetricSpec("spd", "SPD", "m", "geodesic distance from final node to target (lower is better)"),
    MetricSpec("dtw_per_ref_m", "dtw_per_ref_m", "m",
               "DTW(path, reference) / reference nodes; the paper's 'nDTW' (lower is better)"),
    MetricSpec("ndtw", "nDTW", "x100", "standard exp(-DTW / (|R| d_th)) (higher is better)"),
    MetricSpec("osr", "OSR", "%", "some node of the path came within 50 m of the target"),
    MetricSpec("as", "AS", "steps", "mean steps taken"),
    MetricSpec("solvable", "Solvable", "%", "target reachable within the step budget (ceiling)"),
)


class NeedsFamily(TaskFamily):
    name: ClassVar[str] = "needs"
    title: ClassVar[str] = "Needs"
    seed_paper: ClassVar[str] = "CitySeeker (implicit needs)"
    synthetic: ClassVar[str] = ("on real CitySeeker graphs nothing; on built worlds the imagery and the "
                                "need wordings (a catalogue mapping needs to OSM tags)")
    metrics: ClassVar[tuple[MetricSpec, ...]] = METRICS
    success_metric: ClassVar[str] = "tcp50"
    success_words: ClassVar[str] = "within 50 m"
    headline: ClassVar[tuple[str, ...]] = ("tce", "tcp50", "tcc", "spl", "osr", "spd", "dtw_per_ref_m", "as")
    breakdown: ClassVar[tuple[str, ...]] = ("tce", "tcp50", "tcc", "spl", "spd", "dtw_per_ref_m", "as", "solvable")
    ablation: ClassVar[tuple[tuple[str, str], ...]] = (("tcp50", "TCP50 (%)"), ("dtw_per_ref_m", "dtw_per_ref_m (m)"))
    baselines: ClassVar[tuple[str, ...]] = ("random", "forward", "first-heading", "ocr-embed", "sign-oracle", "oracle")
    perfect_perception: ClassVar[Optional[str]] = "sign-oracle"
    paper: ClassVar[tuple[PaperRow, ...]] = PAPER_OVERALL
    paper_metrics: ClassVar[tuple[str, ...]] = ("tce", "tcp40", "tcp50", "tcp60", "tcc", "spl", "spd",
                                                "dtw_per_ref_m", "as")
    paper_scope: ClassVar[str] = PAPER_SCOPE
    paper_by_category: ClassVar[Mapping[str, Mapping[str, float]]] = PAPER_CATEGORY_TCP50
    report_note: ClassVar[str] = ("The paper's column named 'nDTW' is DTW(agent path, reference path) in metres "
                                  "divided by the reference path's node count (lower is better); we report it as "
                                  "dtw_per_ref_m. Our standard nDTW has no published counterpart.")
    prompts: ClassVar[PromptForms] = PromptForms(
        system=("You are a helpful robot that walks through a city to help a person. The person states a need, "
                "not a place: work out what kind of place would satisfy it and look for one in the street views. "
                "Answer with one JSON object and nothing else."),
        goal_label="Request",
        stop_question="Is a place that satisfies the request here?",
        native=True)

    @property
    def tasks_file(self) -> str:
        return "tasks.json"

    def score(self, world: World, episode: Episode, trajectory: Trajectory, solvable: bool, *,
              dtw_threshold_m: float) -> dict[str, float]:
        from cityseeker_ros.core.tasks.needs.metrics import episode_metrics

        return episode_metrics(world, episode, trajectory.path, solvable, dtw_threshold_m=dtw_threshold_m)

    def load(self, folder: Path, city: str, graph: StreetGraph, split: str) -> Loaded:
        path = Path(folder) / self.tasks_file
        doc = read_json_file(path, missing="missing (a world folder holds world.json, graph.json, scene.json, "
                                           "tasks.json)")
        episodes = []
        for rec, t in split_tasks(doc, path, split):
            task_id = t["id"]
            code = field(t, "category", path, str, rec)
            if code not in CATEGORY_NAMES:
                raise DataError(path, f"unknown category code {code!r}", record=rec, field="category")
            route = tuple(field(t, "reference_path", path, list, rec))
            check_nodes((("start", t.get("start")), ("target", t.get("target"))) + tuple(
                (f"reference_path[{k}]", n) for k, n in enumerate(route)) + tuple(
                (f"stage_goals[{k}]", n) for k, n in enumerate(t.get("stage_goals", ()))), graph, path, rec)
            episodes.append(Episode(
                episode_id=task_id, city=city, category=CATEGORY_NAMES[code],
                difficulty=field(t, "difficulty", path, str, rec), instruction=field(t, "instruction", path, str, rec),
                request=field(t, "request", path, str, rec), start=t["start"], target=t["target"],
                reference_path=route, stage_goals=tuple(t.get("stage_goals", ()))))
        targets = field(doc, "category_targets", path, dict)
        for request, nodes in targets.items():
            missing = [n for n in nodes if n not in graph]
            if missing:
                raise DataError(path, f"target node {missing[0]!r} is not in graph.json", record=request,
                                field="category_targets")
        return episodes, {k: frozenset(v) for k, v in targets.items()}

    def generate(self, name: str, graph: StreetGraph, scene: Scene, seed: int = 0,
                 settings: Any = None) -> GeneratedTasks:
        """The paper's construction (worlds.tasks); `settings` a TaskSettings, else its defaults
        with `seed`."""
        from cityseeker_ros.core.worlds.tasks import TaskSettings, generate_tasks, why_no_tasks

        settings = settings or TaskSettings(seed=seed)
        task_set = generate_tasks(name, graph, scene.pois, settings)
        why = None if task_set.tasks else why_no_tasks(graph, scene.pois, settings)
        return GeneratedTasks(task_set.to_json(), task_set.counts(), why)


FAMILIES.register("needs")(NeedsFamily())

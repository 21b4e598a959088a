"""Task families: what an episode asks, how it is judged, and what can do it.

A family (CitySeeker needs, PReP landmark goals, CityEQA questions) lives in one package,
`core/tasks/<family>/`, and registers one `TaskFamily` here. Everything else (the environment,
episode records, summaries, reports, compare, ablation, executors, bags and the ROS node set)
asks the episode's family instead of knowing any: adding a family touches no other layer.
"""
from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.registry import Registry
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode, World

if TYPE_CHECKING:
    from cityseeker_ros.core.streets.graph import StreetGraph
    from cityseeker_ros.core.tasks.trajectory import Trajectory
    from cityseeker_ros.core.worlds.scene import Scene

# A world folder's episodes of one family, and the target sets its measures read.
Loaded = tuple[list[Episode], dict[str, frozenset[str]]]
MOVE_ACTIONS: frozenset[str] = frozenset({"move", "stop", "back"})
# The packages that register the built-in families, imported on first use of the registry.
BUILT_IN = ("needs", "landmarks", "questions")
DEFAULT_MAX_STEPS = 35  # CitySeeker's step budget: the needs family's, and the run's cap when it names none


@dataclass(frozen=True)
class MetricSpec:
    """One per-episode measure as reports show it."""

    key: str
    label: str
    unit: str
    meaning: str


@dataclass(frozen=True)
class PaperRow:
    """One row the seed paper published: `metrics` holds only the values it gives, keyed by
    the family's metric names."""

    name: str
    source: str
    metrics: Mapping[str, float]


@dataclass(frozen=True)
class PromptForms:
    """The words a language-model policy puts around a family's episode: its system prompt,
    what the goal line is called, the stop question, and whether stopping gives an answer
    (then the stop reply carries an `answer` field and the stop becomes `answer(text)`)."""

    system: str
    goal_label: str
    stop_question: str
    answers: bool = False
    # The prompt profiles' own words are this family's (they were written for CitySeeker's needs):
    # a profile then speaks as it always has, byte for byte, instead of from these fields.
    native: bool = False


@dataclass
class GeneratedTasks:
    """A family's tasks for one built world: the JSON document its task file holds, counts per
    category for the build summary, and, when there are none, why (in words a user can act on)."""

    document: dict[str, Any]
    counts: dict[str, int]
    why_none: Optional[str] = None


class TaskFamily(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    seed_paper: ClassVar[str]
    # What is synthetic about this family's episodes, for docs and report footers.
    synthetic: ClassVar[str]
    actions: ClassVar[frozenset[str]] = MOVE_ACTIONS
    metrics: ClassVar[tuple[MetricSpec, ...]]
    success_metric: ClassVar[str]  # 100 = the episode succeeded (Seek results, failure analysis)
    success_words: ClassVar[str] = "succeeded"  # what success means, in a few words for progress lines
    headline: ClassVar[tuple[str, ...]]  # compare's columns, the report's first table
    breakdown: ClassVar[tuple[str, ...]]  # the report's per-category and per-difficulty columns
    ablation: ClassVar[tuple[tuple[str, str], ...]]  # (metric, column title) of the ablation table
    baselines: ClassVar[tuple[str, ...]]  # policies that apply, cheapest first
    oracle: ClassVar[str] = "oracle"  # the policy that sets the ceiling
    chance: ClassVar[str] = "random"  # the policy that sets chance (compare's reading line)
    # The policy that perceives perfectly and decides like the agents (sign-oracle for needs):
    # with it, compare says whether seeing or deciding failed. None: the family has none.
    perfect_perception: ClassVar[Optional[str]] = None
    prompts: ClassVar[PromptForms]
    # The seed paper's published rows (report: "Comparison with the paper"), over which
    # metrics, what they cover, and its per-category success column; empty: no section.
    paper: ClassVar[tuple[PaperRow, ...]] = ()
    paper_metrics: ClassVar[tuple[str, ...]] = ()
    paper_scope: ClassVar[str] = ""
    paper_by_category: ClassVar[Mapping[str, Mapping[str, float]]] = {}
    report_note: ClassVar[str] = ""  # what a reader must know about the family's measures

    def spec(self, key: str) -> MetricSpec:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(f"task family {self.name} has no metric {key!r}; its metrics: {', '.join(self.metric_keys)}")

    @property
    def metric_keys(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.metrics)

    def goal_budget(self, run_max_steps: int) -> int:
        """The step budget of a goal of this family given without one (a Seek): the run's, unless
        the family's rules fix one for every goal (CityEQA's 50 steps)."""
        return run_max_steps

    def default_max_steps(self) -> int:
        """A run's step cap when it names none: CitySeeker's 35 steps; a family whose rules set
        each episode's budget returns one that keeps every budget its generator makes."""
        return DEFAULT_MAX_STEPS

    def budget(self, episode: Episode, max_steps: int) -> int:
        """The step budget of `episode`: its own where the family's rules set one (PReP's 2.5
        times the shortest route), capped by the run's `max_steps` (`--max-steps` caps every
        family); else the run's."""
        return min(episode.budget, max_steps) if episode.budget is not None else max_steps

    def missing_tasks(self, folder: Path) -> str:
        """Why `folder` holds no task file of this family, from world.json's record of its build
        (the reason the generator gave, or that the build was not asked for the family), with
        the command that makes them."""
        from cityseeker_ros.core.infra.jsonfile import read_json_object

        path, what = Path(folder) / "world.json", self.title.lower()
        make = (f"make them with `cityseeker world tasks {folder} --families {self.name}`"
                if self.name != DEFAULT_FAMILY else "make them with `cityseeker world build`")
        if not path.is_file():
            return f"missing (this folder has no {what})"
        meta = read_json_object(path)
        prefix = f"no {what}: "
        reasons = [w[len(prefix):] for w in meta.get("warnings") or () if isinstance(w, str) and w.startswith(prefix)]
        if reasons:
            return f"missing: the world has no {what}: {reasons[0]} (world.json's warnings)"
        if isinstance(meta.get("families"), dict) and self.name in meta["families"]:
            return f"missing, though world.json records {what} built; {make} again"
        return f"missing: the world was built without {what}; {make}"

    @abstractmethod
    def score(self, world: World, episode: Episode, trajectory: Trajectory, solvable: bool, *,
              dtw_threshold_m: float) -> dict[str, float]:
        """Every measure of one finished episode, keyed and ordered as `metrics`."""

    def public_details(self, episode: Episode) -> dict[str, Any]:
        """What of `episode.details` an agent may know (sent with the episode to a policy in
        another process); the rest (an expected answer) stays with the judge."""
        return {}

    def record_fields(self, world: World, episode: Episode, trajectory: Trajectory) -> dict[str, Any]:
        """Fields the family adds to an episode record (its goal, the answer given)."""
        return {}

    @abstractmethod
    def load(self, folder: Path, city: str, graph: StreetGraph, split: str) -> Loaded:
        """A world folder's episodes of this family in `split`, and the target sets that
        measures read (needs' TCC); raises DataError naming the file, record and field."""

    @abstractmethod
    def generate(self, name: str, graph: StreetGraph, scene: Scene, seed: int = 0) -> GeneratedTasks:
        """This family's tasks on a built world (graph and scene), deterministic in `seed`."""

    @property
    def tasks_file(self) -> str:
        return f"tasks.{self.name}.json"

    def describe(self, folder: Path) -> dict[str, Any]:
        """World facts to state beside every result of this family (a landmark count, the
        distribution of shortest routes); read from its task file's `world` block."""
        from cityseeker_ros.core.infra.jsonfile import read_json_object

        path = Path(folder) / self.tasks_file
        return dict(read_json_object(path).get("world", {})) if path.is_file() else {}


FAMILIES: Registry[TaskFamily] = Registry("task family")
_loaded = False


def _load_built_in() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for name in BUILT_IN:
            importlib.import_module(f"cityseeker_ros.core.tasks.{name}")


def get_family(name: str) -> TaskFamily:
    """The registered family `name`; an unknown one fails listing the known ones."""
    _load_built_in()
    return FAMILIES.get(name)


def family_names() -> list[str]:
    _load_built_in()
    return FAMILIES.names()


def family_of(episode: Episode) -> TaskFamily:
    return get_family(episode.family)


def family_of_record(record: Mapping[str, Any]) -> TaskFamily:
    """Records of the first family carry no `family` field, so records made before families
    existed read as they were written."""
    return get_family(record.get("family") or DEFAULT_FAMILY)


def family_of_config(config: Mapping[str, Any]) -> TaskFamily:
    """The family of a run from its config.json or summary's `config` (none: the first)."""
    return get_family(config.get("family") or DEFAULT_FAMILY)


def family_of_records(records: Sequence[Mapping[str, Any]]) -> TaskFamily:
    """The one family of a set of records; a run mixes none (their measures differ)."""
    names = sorted({r.get("family") or DEFAULT_FAMILY for r in records}) or [DEFAULT_FAMILY]
    if len(names) > 1:
        raise ValueError(f"records of several task families ({', '.join(names)}) cannot be summarised "
                         "together; run or compare one family at a time")
    return get_family(names[0])


def parse_families(text: str) -> list[str]:
    """`--families needs,landmarks`: each name checked, order kept, `all` for every one."""
    names = family_names() if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError("--families: name at least one task family")
    for name in names:
        get_family(name)
    return list(dict.fromkeys(names))

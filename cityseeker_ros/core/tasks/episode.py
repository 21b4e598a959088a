"""Episodes and worlds: what a benchmark runs, independent of the data's file format."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.streets.graph import StreetGraph
from cityseeker_ros.core.streets.transition import ActionModel

# The release's category codes and the paper's names (question3 never occurs;
# question2 is the two-stage "find X then Y" family, not one of the paper's seven).
CATEGORY_NAMES: dict[str, str] = {
    "question1": "Basic POI",
    "question4": "Brand-Specific",
    "question5": "Transportation Hub",
    "question6": "Latent POI",
    "question7": "Abstract Demand",
    "question8": "Inclusive Infrastructure",
    "question9": "Semantic Preference",
    "question2": "Two-Stage",
}
PAPER_CATEGORIES: tuple[str, ...] = tuple(v for k, v in CATEGORY_NAMES.items() if k != "question2")
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
DEFAULT_FAMILY = "needs"  # CitySeeker's: what an episode is when it names no task family


def difficulty_of(total_steps: int) -> str:
    """The release's labels: easy up to 10 steps, medium 11-18, hard 19-24."""
    return "easy" if total_steps <= 10 else "medium" if total_steps <= 18 else "hard"


@dataclass(frozen=True)
class Episode:
    """One navigation request. `request` names what is sought, in words a policy can match
    against signs: in the data, the concrete POI class (the release's `folder`), and every
    ground-truth target of the same request in a city satisfies it (TCC); in a Seek, where no
    class is known at run time, the need's own words."""

    episode_id: str
    city: str
    category: str
    difficulty: str
    instruction: str
    request: str
    start: str
    target: str
    reference_path: tuple[str, ...]
    stage_goals: tuple[str, ...] = ()
    # The task family (core/tasks/family.py) that judges it, its own step budget where the
    # family's rules set one, and what else the family needs of it (a question's answer, a
    # landmark goal's relations), which only that family reads.
    family: str = DEFAULT_FAMILY
    budget: Optional[int] = None
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def waypoints(self) -> tuple[str, ...]:
        """Goals in the order they must be reached; the episode succeeds only at the last."""
        return self.stage_goals + (self.target,)


@dataclass
class World:
    """A street graph with its episodes and the category target sets used by TCC."""

    city: str
    graph: StreetGraph
    episodes: list[Episode]
    category_targets: dict[str, frozenset[str]]
    source_files: dict[str, str] = field(default_factory=dict)  # path -> sha256
    synthetic: bool = False
    root: Optional[Path] = None  # the folder it was loaded from, for view sources that read more of it

    @cached_property
    def actions(self) -> ActionModel:
        return ActionModel(self.graph)

    def solvable(self, episode: Episode, max_steps: int) -> bool:
        """Can an agent reach the target within the step budget? Success (TCE) looks only at
        the final node, so stage goals of two-stage episodes do not enter the ceiling. The search
        stops at the budget's reach."""
        hops = self.actions.hops_from(episode.start, max_steps).get(episode.target)
        return hops is not None and hops <= max_steps

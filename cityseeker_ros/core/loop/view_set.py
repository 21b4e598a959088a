"""What the world shows the agent at one node and what the decision side answers, as the loop and
the nodes exchange them: the one Python type of ViewSet.msg (`ViewSet`, with `ViewEntry` and
`PanoramaEntry`: View.msg, Panorama.msg), of Decision.msg (`Answer`) and of Task.msg
(`EpisodeBrief`). ros/typed.py converts them to and from the messages, ros/schema.py to and from
JSON; the validation here is theirs.

A view set carries no pixels: its images travel beside it (an images topic, a Decide goal),
named by `frame_id`. A view set made in process from an observation (`ViewSet.of_observation`:
the simulated field, tests) keeps that observation, images and lazy panorama included, so the
loop and an in-process decider see exactly what the environment gave.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.infra.stamp import Stamp
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.tasks.environment import Action, Observation, View
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY, Episode
from cityseeker_ros.core.tasks.family import family_of

PANORAMA_FRAME = "panorama"  # frame_id of a view set's panorama image


def view_frame_id(index: int) -> str:
    """frame_id of view `index`'s image."""
    return f"view_{index}"


@dataclass(frozen=True, kw_only=True)
class EpisodeBrief:
    """What an agent may know about its episode (no target, no reference route), and the key
    of one run of it: a decision node resets its policy whenever this key changes. (Not
    core.worlds.tasks.WorldTask, which generates episodes.)"""

    episode_id: str
    city: str
    category: str
    difficulty: str
    instruction: str
    request: str
    start: str
    seed: int  # with episode_id and round, seeds the policy's random stream (episode_rng)
    round: int = 0
    run: int  # the world's counter: restarting the same episode is a new run
    family: str = DEFAULT_FAMILY
    budget: Optional[int] = None
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def key(self) -> tuple[str, int, int, int]:
        return self.episode_id, self.seed, self.round, self.run

    @classmethod
    def of(cls, episode: Episode, seed: int, run: int, round: int = 0) -> EpisodeBrief:
        return cls(episode_id=episode.episode_id, city=episode.city, category=episode.category,
                   difficulty=episode.difficulty, instruction=episode.instruction, request=episode.request,
                   start=episode.start, seed=seed, round=round, run=run, family=episode.family,
                   budget=episode.budget, details=family_of(episode).public_details(episode))

    def episode(self) -> Episode:
        """The episode as a non-privileged policy may see it: no target, no reference route."""
        return Episode(episode_id=self.episode_id, city=self.city, category=self.category,
                       difficulty=self.difficulty, instruction=self.instruction, request=self.request,
                       start=self.start, target="", reference_path=(), family=self.family, budget=self.budget,
                       details=dict(self.details))


@dataclass(frozen=True)
class ViewEntry:
    index: int
    heading: float  # absolute, degrees clockwise from north
    relative: str  # core.streets.directions.RelativeDirection value, relative to `facing`
    frame_id: Optional[str] = None  # its image's frame; None: the view set carries no image for it


@dataclass(frozen=True)
class PanoramaEntry:
    """The node's panorama (core ViewSource.panorama_view): equirectangular, width = 2 x height,
    its centre column looking along the view set's `facing`. Its image travels like a view's."""

    frame_id: str
    width: int
    height: int

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: Input should be greater than 0")


@dataclass(frozen=True)
class ViewSet:
    """The observation at the current node: one entry per walkable heading."""

    view_set_id: str  # opaque and unique; an action answers exactly one view set
    stamp: Stamp  # when its images were taken (they carry this stamp)
    task: EpisodeBrief
    node: str
    lat: float
    lon: float
    facing: float  # direction of travel, degrees clockwise from north
    step: int
    steps_left: int
    feedback: Optional[str] = None  # why the previous action was rejected
    views: tuple[ViewEntry, ...] = ()
    done: bool = False  # the episode has ended: nothing to decide
    # The supervisor's prompt slots; set only on the view sets it forwards to the decision side.
    context: Optional[PromptContext] = None
    # None: no panorama (the source has none, or it is off); the stop prompt shows the views.
    panorama: Optional[PanoramaEntry] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", tuple(self.views))

    @classmethod
    def of_observation(cls, obs: Observation, task: EpisodeBrief, view_set_id: str, stamp: Stamp = Stamp(0),
                       done: bool = False, panorama: Optional[PanoramaEntry] = None) -> ViewSet:
        """The view set of an observation; views that carry an image name their frame
        (view_frame_id). `observation` gives `obs` back as it is. In process no image needs
        matching, so the stamp may stay 0."""
        views = tuple(ViewEntry(v.index, v.heading, v.relative.value,
                                view_frame_id(v.index) if v.image is not None else None) for v in obs.views)
        made = cls(view_set_id, stamp, task, obs.node, obs.lat, obs.lon, obs.facing, obs.step, obs.steps_left,
                   obs.feedback, views, done, None, panorama)
        object.__setattr__(made, "_observation", obs)  # not a field: never on the wire nor compared
        return made

    @property
    def run(self) -> int:
        return self.task.run

    @property
    def episode_id(self) -> str:
        return self.task.episode_id

    @property
    def seed(self) -> int:
        return self.task.seed

    @property
    def observation(self) -> Observation:
        """What a policy acts on: the observation this view set was made from in process, else
        its fields without images."""
        made = self.__dict__.get("_observation")
        return made if made is not None else self.to_observation()

    def to_observation(self, images: Optional[Mapping[str, Any]] = None) -> Observation:
        """The observation with `images` by frame id (missing: no image); the panorama's value is
        what Observation.panorama holds (an object whose get() gives the image)."""
        images = images or {}
        views = tuple(View(v.index, v.heading, RelativeDirection(v.relative),
                           images.get(v.frame_id) if v.frame_id is not None else None) for v in self.views)
        pano = images.get(self.panorama.frame_id) if self.panorama is not None else None
        return Observation(self.task.episode_id, self.task.instruction, self.node, self.lat, self.lon, self.facing,
                           views, self.step, self.steps_left, self.feedback, pano)

    def image_frames(self) -> list[str]:
        """Every image this view set carries: the views', then the panorama's."""
        frames = [v.frame_id for v in self.views if v.frame_id is not None]
        return frames + [self.panorama.frame_id] if self.panorama is not None else frames


@dataclass(frozen=True)
class Answer:
    """The decision side's answer to one view set: the policy's `decision`, or the `error` that
    ends the episode (exactly one), with the policy's own per-decision log (`records`:
    Policy.step_records) so an evaluator writes the same "decisions" as an in-process run."""

    view_set_id: str
    task: EpisodeBrief
    step: int
    policy: str
    latency_s: float  # decision time on the worker, images decoded included
    decision: Optional[Decision] = None
    error: Optional[str] = None
    records: list[dict[str, Any]] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)  # Policy.episode_extras() after this decision

    def __post_init__(self) -> None:
        if (self.decision is None) == (self.error is None):
            raise ValueError("a decision carries either an action or an error")

    @classmethod
    def of(cls, view_set: ViewSet, decision: Decision, policy: str, latency_s: float,
           records: Optional[list[dict[str, Any]]] = None, extras: Optional[dict[str, Any]] = None) -> Answer:
        return cls(view_set.view_set_id, view_set.task, view_set.step, policy, latency_s, decision,
                   records=list(records or []), extras=dict(extras or {}))

    @classmethod
    def failed(cls, view_set: ViewSet, error: str, policy: str, latency_s: float) -> Answer:
        return cls(view_set.view_set_id, view_set.task, view_set.step, policy, latency_s, error=error)

    @property
    def action(self) -> Optional[Action]:
        return self.decision.action if self.decision is not None else None

"""The benchmark environment: observe the views at a node, take a heading, stop or answer.

It knows nothing about policies; it only applies the paper's transition, enforces the
step budget (the episode's family may set its own) and the actions the family allows, and
logs the full path, including the true final node, and the answer given.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.directions import RelativeDirection, relative_direction
from cityseeker_ros.core.streets.geodesy import initial_bearing_deg
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.family import DEFAULT_MAX_STEPS, family_of
from cityseeker_ros.core.tasks.trajectory import EndReason, Trajectory

if TYPE_CHECKING:
    from cityseeker_ros.core.sensing.views.source import ViewSource



@dataclass(frozen=True)
class Action:
    """STOP, move along walkable heading `index` (views are numbered like headings), walk
    back to `back_to`, the node the agent came from along a hop it has already made (a
    backtrack retraces the path one hop per step), or `answer` a question and end there."""

    index: Optional[int] = None
    back_to: Optional[str] = None
    answer: Optional[str] = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.index, self.back_to, self.answer)) > 1:
            raise ValueError("an action is one of a view index, a node to walk back to, or an answer")

    @property
    def is_stop(self) -> bool:
        return self.index is None and self.back_to is None and self.answer is None

    @property
    def kind(self) -> str:
        """"move", "stop", "back" or "answer": the wire's AgentAction kind and the JSON form's `kind`."""
        if self.answer is not None:
            return "answer"
        return "stop" if self.is_stop else "back" if self.back_to is not None else "move"


STOP = Action()
BACK = "back"  # the trajectory's action entry for a retraced hop


def move(index: int) -> Action:
    return Action(index)


def retrace(node: str) -> Action:
    return Action(back_to=node)


def answer(text: str) -> Action:
    return Action(answer=text)


@dataclass(frozen=True)
class View:
    index: int
    heading: float  # absolute, degrees clockwise from north
    relative: RelativeDirection
    image: Any = None  # filled by a view source when the world has imagery


@dataclass(frozen=True)
class Observation:
    episode_id: str
    instruction: str
    node: str
    lat: float
    lon: float
    facing: float  # direction of travel: the last edge's azimuth, the car heading at the start
    views: tuple[View, ...]
    step: int
    steps_left: int
    feedback: Optional[str] = None  # why the previous action was rejected, for a retry
    # The node's panorama centred on `facing`, made on first .get() (views.source.PanoramaRef);
    # None where the view source has none. The VLM's stop prompt shows it.
    panorama: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class StepResult:
    observation: Observation
    done: bool
    valid: bool
    end_reason: Optional[EndReason] = None


class Environment:
    def __init__(self, world: World, max_steps: int = DEFAULT_MAX_STEPS, max_invalid_retries: int = 2,
                 views: Optional[ViewSource] = None) -> None:
        if max_steps < 0:
            raise ConfigError(f"max_steps must be >= 0, got {max_steps}")
        if max_invalid_retries < 0:
            raise ConfigError(f"max_invalid_retries must be >= 0, got {max_invalid_retries}")
        self.world = world
        self.max_steps = max_steps
        self.max_invalid_retries = max_invalid_retries
        self.views = views  # None: observations carry headings and directions but no images
        self.episode: Optional[Episode] = None
        self.trajectory: Optional[Trajectory] = None
        self.budget = max_steps  # the episode's: its family may set its own
        self._actions: frozenset[str] = frozenset()
        self._facing = 0.0
        self._invalid_in_row = 0
        self._feedback: Optional[str] = None

    @property
    def done(self) -> bool:
        return self.trajectory is not None and self.trajectory.end_reason is not None

    def reset(self, episode: Episode) -> Observation:
        if episode.start not in self.world.graph:
            raise ConfigError(f"episode {episode.episode_id}: start node {episode.start} is not in the graph")
        family = family_of(episode)
        self.episode = episode
        self.budget = family.budget(episode, self.max_steps)
        self._actions = family.actions
        self.trajectory = Trajectory(path=[episode.start])
        self._facing = self.world.graph.nodes[episode.start].heading
        self._invalid_in_row = 0
        self._feedback = None
        if self.budget == 0:
            self.trajectory.end_reason = EndReason.BUDGET_EXHAUSTED
        return self.observe()

    def observe(self) -> Observation:
        return self._observe(with_images=True)

    def _observe(self, with_images: bool) -> Observation:
        if self.trajectory is None or self.episode is None:
            raise RuntimeError("observe() before reset()")
        node_id = self.trajectory.path[-1]
        node = self.world.graph.nodes[node_id]
        moves = self.world.actions.moves(node_id)
        wanted = with_images and self.views is not None
        images = self.views.images(node, [m.heading for m in moves]) if wanted else [None] * len(moves)
        views = tuple(View(m.index, m.heading, relative_direction(m.heading, self._facing), image)
                      for m, image in zip(moves, images))
        step = self.trajectory.steps
        panorama = None
        if wanted:
            from cityseeker_ros.core.sensing.views.source import PanoramaRef

            panorama = PanoramaRef(self.views, node, self._facing)
        return Observation(self.episode.episode_id, self.episode.instruction, node_id, node.lat,
                           node.lon, self._facing, views, step, self.budget - step, self._feedback, panorama)

    def step(self, action: Action) -> StepResult:
        if self.trajectory is None:
            raise RuntimeError("step() before reset()")
        if self.done:
            raise RuntimeError("step() after the episode ended; call reset()")
        traj = self.trajectory
        if action.kind not in self._actions:
            return self._refuse(f"this task takes no {action.kind} action; choose among "
                                f"{', '.join(sorted(self._actions))}")
        if action.is_stop:
            traj.headings.append(None)
            return self._end(EndReason.STOPPED)
        if action.answer is not None:
            traj.headings.append(None)
            traj.answer = action.answer
            return self._end(EndReason.ANSWERED)
        if action.back_to is not None:
            return self._retrace(action.back_to)
        moves = self.world.actions.moves(traj.path[-1])
        if not isinstance(action.index, int) or not 0 <= action.index < len(moves):
            return self._refuse(f"action {action.index!r} is not a view index; choose 0..{len(moves) - 1} or stop")
        m = moves[action.index]
        self._invalid_in_row, self._feedback = 0, None
        self._facing = m.edge.azimuth
        traj.path.append(m.edge.target)
        traj.headings.append(action.index)
        if traj.steps >= self.budget:
            return self._end(EndReason.BUDGET_EXHAUSTED)
        return StepResult(self.observe(), done=False, valid=True)

    def _refuse(self, feedback: str) -> StepResult:
        """An action the environment cannot take: the agent is told why and asked again, up to
        max_invalid_retries times in a row."""
        self._invalid_in_row += 1
        self._feedback = feedback
        if self._invalid_in_row > self.max_invalid_retries:
            return self._end(EndReason.INVALID_ACTION, valid=False)
        return StepResult(self.observe(), done=False, valid=False)

    def _retrace(self, node: str) -> StepResult:
        """One hop back along a hop already made (either direction of a street is walkable, even
        where the heading-snapping action model could not take it). It costs a step like any move."""
        traj = self.trajectory
        assert traj is not None
        here = traj.path[-1]
        if not any(a == node and b == here for a, b in zip(traj.path, traj.path[1:])):
            return self._refuse(f"cannot walk back to {node}: the agent never came from there to {here}")
        self._invalid_in_row, self._feedback = 0, None
        a, b = self.world.graph.nodes[here], self.world.graph.nodes[node]
        self._facing = initial_bearing_deg(a.lat, a.lon, b.lat, b.lon)
        traj.path.append(node)
        traj.headings.append(BACK)
        if traj.steps >= self.budget:
            return self._end(EndReason.BUDGET_EXHAUSTED)
        return StepResult(self.observe(), done=False, valid=True)

    def fail(self, message: str) -> None:
        """End the episode because the policy or its backend broke; the path so far is kept."""
        if self.trajectory is not None and not self.done:
            self.trajectory.error = message
            self._end(EndReason.ERROR)

    def _end(self, reason: EndReason, valid: bool = True) -> StepResult:
        assert self.trajectory is not None
        self.trajectory.end_reason = reason
        # Nobody acts on the last observation, so it carries no images (they cost a render each).
        return StepResult(self._observe(with_images=False), done=True, valid=valid, end_reason=reason)

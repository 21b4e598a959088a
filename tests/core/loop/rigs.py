"""What the other nodes do, in process and without ROS, around a core episode loop: a recording
`Outputs`, the replay world node (an Environment) with a decider around a replay loop, and for
live loops the package's simulated field (walker, graph localiser, the camera's view-set
builder, a decider with its own policy)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.replay import ReplayLoop
from cityseeker_ros.core.loop.seek import SeekFeedback, SeekOutputs, SeekResult
from cityseeker_ros.core.loop.state_machine import LiveProgress, Outputs, SupervisorStatus, WorldEpisode
from cityseeker_ros.core.loop.view_set import EpisodeBrief, ViewSet
from cityseeker_ros.core.sensing.camera.source import FrameSource, facing_of, make_views
from cityseeker_ros.core.sensing.localisation import Localisation
from cityseeker_ros.core.tasks.environment import Action, Environment, View
from cityseeker_ros.core.tasks.episode import World
from cityseeker_ros.core.vehicles.safety.commands import Command
from cityseeker_ros.core.vehicles.sim import PolicyDecider, SimulatedField, SimulatedWalker


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclass
class Recorder(SeekOutputs):
    """Every output, in order in `events` as (kind, value)."""

    events: list[tuple[str, Any]] = field(default_factory=list)
    on_event: Optional[Callable[[str, Any], None]] = None

    def _add(self, kind: str, value: Any) -> None:
        self.events.append((kind, value))
        if self.on_event is not None:
            self.on_event(kind, value)

    def of(self, kind: str) -> list[Any]:
        return [v for k, v in self.events if k == kind]

    def select(self, episode_id: str, seed: int) -> None:
        self._add("select", (episode_id, seed))

    def ask(self, view_set: ViewSet, context: PromptContext, round: int) -> None:
        self._add("ask", (view_set, context, round))

    def act(self, view_set_id: str, action: Optional[Action], error: Optional[str] = None) -> None:
        self._add("act", (view_set_id, action, error))

    def command(self, command: Command, reason: str, view_set_id: Optional[str] = None) -> None:
        self._add("command", (command, reason, view_set_id))

    def guidance(self, guidance: Guidance, view_set: ViewSet) -> None:
        self._add("guidance", guidance)

    def progress(self, progress: LiveProgress) -> None:
        self._add("progress", progress)

    def outcome(self, index: int, total: int, record: dict[str, Any]) -> None:
        self._add("outcome", record)

    def status(self, status: SupervisorStatus) -> None:
        self._add("status", status)

    def log(self, level: str, message: str) -> None:
        self._add("log", (level, message))

    def feedback(self, feedback: SeekFeedback) -> None:
        self._add("feedback", feedback)

    def result(self, result: SeekResult) -> None:
        self._add("result", result)


class ReplayWorld:
    """The replay node: a new run per selection, a view set per observation, the episode state
    when it ends."""

    def __init__(self, worlds: list[World], max_steps: int) -> None:
        self.episodes = {e.episode_id: (w, e) for w in worlds for e in w.episodes}
        self.max_steps = max_steps
        self.run, self.count = 0, 0
        self.env: Optional[Environment] = None
        self.current: Optional[tuple[str, int]] = None
        self.latest: Optional[ViewSet] = None

    def select(self, episode_id: str, seed: int) -> ViewSet:
        world, episode = self.episodes[episode_id]
        self.run += 1
        self.current = (episode_id, seed)
        self.env = Environment(world, max_steps=self.max_steps)
        return self._view_set(self.env.reset(episode))

    def act(self, action: Optional[Action]) -> ViewSet | WorldEpisode:
        assert self.env is not None and self.current is not None
        if action is None:
            self.env.fail("error")
        else:
            result = self.env.step(action)
            if not result.done:
                return self._view_set(result.observation)
        traj = self.env.trajectory
        return WorldEpisode(self.run, self.current[0], self.current[1], traj)

    def _view_set(self, obs) -> ViewSet:
        assert self.current is not None
        self.count += 1
        brief = EpisodeBrief.of(self.episodes[self.current[0]][1], self.current[1], self.run)
        self.latest = ViewSet.of_observation(obs, brief, f"{obs.episode_id}/run{self.run}/{self.count}")
        return self.latest


class ReplayRig:
    """A replay loop (made by `make_loop` with the rig's recorder as its outputs) between the
    replay world and a decider with the run's policy, as the nodes exchange them; with `answer`
    False the questions are parked instead of answered."""

    def __init__(self, config: BenchmarkConfig, worlds: list[World],
                 make_loop: Callable[[Outputs], ReplayLoop]) -> None:
        self.recorder = Recorder()
        self.loop = make_loop(self.recorder)
        self.world = ReplayWorld(worlds, config.max_steps)
        self.decider = PolicyDecider(make_policy(config.policy, **config.policy_params),
                                     {e.episode_id: e for w in worlds for e in w.episodes})
        self.seen = 0
        self.answer = True
        self.parked: list[tuple[ViewSet, Any, int]] = []

    def deliver(self) -> None:
        events = self.recorder.events
        while self.seen < len(events):
            kind, value = events[self.seen]
            self.seen += 1
            if kind == "select":
                self.loop.view_set(self.world.select(*value))
            elif kind == "ask":
                if not self.answer:
                    self.parked.append(value)
                    continue
                decision, records = self.decider.answer(*value)
                self.loop.decision(value[0].view_set_id, decision, records)
            elif kind == "act":
                out = self.world.act(value[1])
                (self.loop.view_set if isinstance(out, ViewSet) else self.loop.world_episode)(out)

    def run(self) -> list[dict[str, Any]]:
        self.loop.start()
        self.deliver()
        assert self.loop.state == "finished"
        return self.recorder.of("outcome")


class NoImages(FrameSource):
    """A camera that sees headings but no pixels (policies here do not read images)."""

    name = "no-images"

    def __init__(self, world: World) -> None:
        self.world = world

    def views(self, loc: Localisation) -> list[View]:
        return make_views(loc, [None] * len(loc.walkable), facing_of(loc, self.world))


class LiveRig:
    """core.vehicles.sim.SimulatedField (walker, localiser, camera, decider) around a live loop, every
    output recorded; `step()` is one fix, then the fake clock moves on by `dt`."""

    def __init__(self, world: World, make_loop: Callable[[Outputs], Any], walker: SimulatedWalker, clock: FakeClock,
                 max_steps: int, decider: Optional[PolicyDecider] = None, dt: float = 0.05) -> None:
        self.recorder, self.walker, self.clock, self.dt = Recorder(), walker, clock, dt
        self.field = SimulatedField(world, walker, NoImages(world), decider, max_steps, self.recorder)
        self.loop = make_loop(self.field)
        self.field.attach(self.loop)
        self.decider = decider

    @property
    def answer_decisions(self) -> bool:
        return self.field.answer_decisions

    @answer_decisions.setter
    def answer_decisions(self, value: bool) -> None:
        self.field.answer_decisions = value

    def deliver(self) -> None:
        self.field.deliver()

    def step(self) -> None:
        self.field.step()
        self.clock.t += self.dt

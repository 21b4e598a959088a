"""The nodes around a live supervisor loop, in one process and with no hardware: the simulated
walker goes where the motion goals say, the graph localiser snaps its fixes (taking each goal's
node as its hint, as graph_localiser does), the camera's view-set builder makes one view set per
node reached from a frame source, and a policy answers each question as the decision node does
(reset for every new episode, round and run). A live benchmark (`LiveLoop`) or a Seek goal
(`SeekSession`) then runs end to end in a test, a demo or a notebook.

The field is the loop's `Outputs`: it queues what the loop says and acts on it in `step()` (one
GNSS fix through the chain), never inside the loop's own call, so a loop that takes a lock (a
Seek) is never re-entered; every output is also passed on to `inner` (a recorder, a publisher).
Each motion command passes the field's safety gate right before the walker gets it, as on the
vehicle bridge: a tripped e-stop (`field.gate.estop`) holds the walker.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional

from cityseeker_ros.core.agents.policies.base import Decision, Policy, PromptContext
from cityseeker_ros.core.evaluation.episode_run import episode_rng
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.live_loop import LiveLoop
from cityseeker_ros.core.loop.seek import SeekFeedback, SeekOutputs, SeekResult
from cityseeker_ros.core.loop.state_machine import LiveProgress, Outputs, SupervisorStatus
from cityseeker_ros.core.loop.view_set import EpisodeBrief, ViewSet
from cityseeker_ros.core.sensing.camera.source import FrameSource
from cityseeker_ros.core.sensing.camera.view_set import RunTask, ViewSetBuilder
from cityseeker_ros.core.sensing.localisation import GraphLocaliser, LocalisationStatus
from cityseeker_ros.core.tasks.environment import Action
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.vehicles.safety.commands import Command, Goal
from cityseeker_ros.core.vehicles.safety.config import SafetyConfig
from cityseeker_ros.core.vehicles.safety.gate import SafetyGate
from cityseeker_ros.core.vehicles.sim.walker import SimulatedWalker

GOAL_NODE_MATCH_M = 0.5  # a goal this close to a node names that node (graph_localiser's goal hint)


class PolicyDecider:
    """The decision node in process: its own policy, reset when a new (episode, seed, round, run)
    is asked about; a Seek's episode is the need with no target, as the decision node sees it."""

    def __init__(self, policy: Policy, episodes: Optional[dict[str, Episode]] = None) -> None:
        self.policy, self.episodes = policy, dict(episodes or {})
        self._key: Any = None

    def answer(self, view_set: ViewSet, context: PromptContext, round: int) -> tuple[Decision, list[dict[str, Any]]]:
        key = (view_set.episode_id, view_set.seed, round, view_set.run)
        if key != self._key:
            self._key = key
            obs = view_set.observation
            episode = self.episodes.get(view_set.episode_id) or Episode(
                view_set.episode_id, "", "", "", obs.instruction, obs.instruction, obs.node, "", ())
            self.policy.reset(episode, episode_rng(view_set.seed, view_set.episode_id, round))
        logged = len(self.policy.step_records())
        decision = self.policy.decide(view_set.observation, context)
        return decision, self.policy.step_records()[logged:]


class SimulatedField(SeekOutputs):
    def __init__(self, world: World, walker: SimulatedWalker, frames: FrameSource, decider: Optional[PolicyDecider],
                 max_steps: int, inner: Optional[Outputs] = None, gate: Optional[SafetyGate] = None) -> None:
        """`gate`: default the walker's own (no fence, no watchdog; the e-stop holds it)."""
        self.world, self.walker, self.decider = world, walker, decider
        self.gate = gate if gate is not None else SafetyGate.from_config(SafetyConfig.estop_only())
        self.inner = inner if inner is not None else SeekOutputs()
        self.localiser = GraphLocaliser(world.graph, world.actions)
        self.builder = ViewSetBuilder(frames, world, max_steps=max_steps)
        self.loop: Optional[LiveLoop] = None
        self.answer_decisions = True  # False: questions wait (a decision node that went quiet)
        self._queue: deque[tuple[str, Any]] = deque()
        self._task: Optional[LiveProgress] = None

    def attach(self, loop: LiveLoop) -> None:
        self.loop = loop

    # -- one fix through the chain -------------------------------------------------------------

    def step(self) -> None:
        """Act on what the loop said, then one GNSS fix: localise it, tell the loop, and give it
        the view set of a node newly reached; then the loop's tick."""
        assert self.loop is not None, "attach(loop) first"
        self.deliver()
        lat, lon = self.walker.fix()
        loc = self.localiser.update(lat, lon)
        self.loop.location(loc.lat, loc.lon, loc.node_id, loc.status == LocalisationStatus.ON_NODE)
        self.deliver()
        obs = self.builder.offer(loc)
        if obs is not None and self._task is not None:
            p = self._task
            self.loop.view_set(ViewSet.of_observation(obs, EpisodeBrief.of(p.episode, p.seed, p.run, p.round),
                                                      f"{obs.episode_id}/run{p.run}/camera{obs.step}"))
        self.deliver()
        self.loop.tick()
        self.deliver()

    def deliver(self) -> None:
        """Hand what the loop said so far to the walker, the localiser, the camera and the decider."""
        while self._queue:
            kind, value = self._queue.popleft()
            if kind == "command":
                lat, lon = self.walker.position
                allowed = self.gate.decision(value, position=(lat, lon, 0.0)).command
                self.walker.command(allowed)
                if isinstance(allowed, Goal):
                    node, distance = self.world.graph.nearest_nodes(allowed.lat, allowed.lon, 1)[0]
                    self.localiser.expect(node if distance <= GOAL_NODE_MATCH_M else None)
            elif kind == "progress":
                p = value
                running = p.status == "running"
                self._task = p if running else None
                self.builder.start(RunTask((p.episode.episode_id, p.seed, p.round, p.run), p.episode.episode_id,
                                           p.episode.instruction) if running else None)
            elif kind == "ask" and self.decider is not None and self.loop is not None:
                if not self.answer_decisions:
                    continue
                view_set, context, round = value
                decision, records = self.decider.answer(view_set, context, round)
                self.loop.decision(view_set.view_set_id, decision, records)

    # -- Outputs: queued for step(), and passed on ---------------------------------------------

    def command(self, command: Command, reason: str, view_set_id: Optional[str] = None) -> None:
        self._queue.append(("command", command))
        self.inner.command(command, reason, view_set_id)

    def progress(self, progress: LiveProgress) -> None:
        self._queue.append(("progress", progress))
        self.inner.progress(progress)

    def ask(self, view_set: ViewSet, context: PromptContext, round: int) -> None:
        self._queue.append(("ask", (view_set, context, round)))
        self.inner.ask(view_set, context, round)

    def select(self, episode_id: str, seed: int) -> None:
        self.inner.select(episode_id, seed)

    def act(self, view_set_id: str, action: Optional[Action], error: Optional[str] = None) -> None:
        self.inner.act(view_set_id, action, error)

    def guidance(self, guidance: Guidance, view_set: ViewSet) -> None:
        self.inner.guidance(guidance, view_set)

    def task_started(self, world: World, episode: Episode) -> None:
        self.inner.task_started(world, episode)

    def task_ended(self, world: World, episode: Episode, path: list[str]) -> None:
        self.inner.task_ended(world, episode, path)

    def outcome(self, index: int, total: int, record: dict[str, Any]) -> None:
        self.inner.outcome(index, total, record)

    def status(self, status: SupervisorStatus) -> None:
        self.inner.status(status)

    def log(self, level: str, message: str) -> None:
        self.inner.log(level, message)

    def feedback(self, feedback: SeekFeedback) -> None:
        if isinstance(self.inner, SeekOutputs):
            self.inner.feedback(feedback)

    def result(self, result: SeekResult) -> None:
        if isinstance(self.inner, SeekOutputs):
            self.inner.result(result)

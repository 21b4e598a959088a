"""The supervisor's episode loop without ROS: what happens when a view set, a decision or a
clock tick arrives, and what goes out. The supervisor node only converts messages into calls on
a loop and the loop's `Outputs` back into messages; `ReplayLoop` (core.loop.replay) and
`LiveLoop` (core.loop.live_loop) are the two kinds of world, and a Seek goal
(core.loop.seek) is one live episode with a need given at run time. View sets and answers are
the wire's own types (core.loop.view_set): a node converts a message and hands it over as is.

Shared here: the run plan (tasks and rounds in the in-process benchmark's order), one
`EpisodeSession` per round, the decision in flight, and the hold when no decision comes within
`decision_timeout_s` (nothing moves; the episode resumes when the decision comes and its record
lists the hold).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

from cityseeker_ros.core.agents.policies.base import Decision, PromptContext
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.guidance import Guidance
from cityseeker_ros.core.loop.run_plan import RunPlan, SeededEpisode
from cityseeker_ros.core.loop.session import EpisodeSession, HoldSpan
from cityseeker_ros.core.loop.view_set import Answer, ViewSet
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy
from cityseeker_ros.core.tasks.environment import Action, Trajectory
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.vehicles.safety.commands import Command

STATES = ("starting", "selecting", "running", "holding", "finished")


@dataclass(frozen=True)
class WorldEpisode:
    """The replay world's episode state: which run it is, and once ended, its trajectory."""

    run: Optional[int]
    episode_id: Optional[str]
    seed: Optional[int]
    trajectory: Optional[Trajectory] = None  # set when the world says the episode ended


@dataclass(frozen=True)
class LiveProgress:
    """Live: the episode as the vehicle walks it, for the camera (it captures only while a run
    is "running") and the evaluator; `trajectory` is None until the vehicle reaches the start."""

    status: str  # "running" or "ended"
    episode: Episode
    seed: int
    run: int
    round: int
    trajectory: Optional[Trajectory]


@dataclass(frozen=True)
class SupervisorStatus:
    """What the supervisor is doing, latched (SupervisorStatus.msg): for operators, the runner
    and tests."""

    state: str  # one of STATES
    reason: str = ""
    done: int = 0  # tasks finished
    total: int = 0
    holds: int = 0  # times the supervisor held because no decision came
    episode_id: Optional[str] = None
    seed: Optional[int] = None
    round: Optional[int] = None
    step: Optional[int] = None  # the step whose decision is awaited

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}, got {self.state!r}")


class Outputs:
    """Where a loop's effects go. Every method does nothing here: a node overrides what its
    world uses (a replay node never gets a motion command), a test records them."""

    def select(self, episode_id: str, seed: int) -> None:
        """Replay: ask the world node to start this episode."""

    def ask(self, view_set: ViewSet, context: PromptContext, round: int) -> None:
        """Ask the decision node about `view_set` (as it came in) with this prompt context."""

    def act(self, view_set_id: str, action: Optional[Action], error: Optional[str] = None) -> None:
        """Replay: the action that answers a view set (or the error that ends the episode)."""

    def command(self, command: Command, reason: str, view_set_id: Optional[str] = None) -> None:
        """Live: a motion command for the vehicle (a Goal or a Hold); the safety gate filters it."""

    def guidance(self, guidance: Guidance, view_set: ViewSet) -> None:
        """Live: what the user or vehicle is told to do."""

    def progress(self, progress: LiveProgress) -> None:
        """Live: the episode state, after every step and at the end."""

    def task_started(self, world: World, episode: Episode) -> None:
        """A task begins (markers of the world and the episode)."""

    def task_ended(self, world: World, episode: Episode, path: list[str]) -> None:
        """A round ended on this path."""

    def outcome(self, index: int, total: int, record: dict[str, Any]) -> None:
        """A task's final record, rounds summarised."""

    def status(self, status: SupervisorStatus) -> None:
        """What the loop is doing (latched)."""

    def log(self, level: str, message: str) -> None:
        """A line for the operator: level is "info", "warning" or "error"."""


class EpisodeLoop:
    """The shared part: subclasses say how an episode begins (`_begin`), how an action leaves
    (`_send`), how a failed decision ends it (`_decision_failed`) and what else a tick checks
    (`_tick`). Call `start()` once the decision side is ready, then feed `decision` and `tick`."""

    def __init__(self, config: BenchmarkConfig, plan: Optional[RunPlan], supervisor: Optional[BcrPolicy],
                 outputs: Outputs, decision_timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self.plan, self.supervisor, self.outputs = config, plan, supervisor, outputs
        self.decision_timeout_s = float(decision_timeout_s)
        self.clock = clock
        self.state, self.reason = "starting", ""
        self.session: Optional[EpisodeSession] = None
        self.done = 0  # tasks finished
        self.holds = 0
        self._pending: Optional[tuple[ViewSet, float]] = None  # the view set asked about, asked at
        self._hold_since: Optional[float] = None
        self._view_set_times: list[float] = []  # when each view set of this round was acted on

    # -- public --------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        return len(self.plan.tasks) if self.plan is not None else 0

    @property
    def pending_view_set(self) -> Optional[str]:
        return self._pending[0].view_set_id if self._pending is not None else None

    @property
    def overdue(self) -> bool:
        """A decision is awaited for longer than decision_timeout_s (the loop holds)."""
        return self._pending is not None and self.clock() - self._pending[1] > self.decision_timeout_s

    def start(self) -> None:
        """Begin the first task (the decision side is ready)."""
        if self.state == "starting":
            self._start_next()

    def view_set(self, view_set: ViewSet) -> None:
        """A view set from the world node (replay) or the camera (live)."""
        raise NotImplementedError

    def note(self, reason: str) -> None:
        """Say why the loop waits (e.g. for the decision node) on the status."""
        self.reason = reason
        self._publish_status()

    def answer(self, answer: Answer) -> None:
        """The decision side's answer to a view set (as `decision`)."""
        self.decision(answer.view_set_id, answer.decision, list(answer.records), answer.error, answer.extras)

    def decision(self, view_set_id: str, decision: Optional[Decision], records: list[dict[str, Any]],
                 error: Optional[str] = None, extras: Optional[dict[str, Any]] = None) -> None:
        """The decision node answered `view_set_id` (answers to anything else are ignored)."""
        if self._pending is None or self._pending[0].view_set_id != view_set_id or self.session is None:
            return
        view_set, asked_at = self._pending
        self._pending = None
        if self._hold_since is not None:
            held = self.clock() - asked_at
            self.session.held(HoldSpan(view_set.step, view_set.view_set_id, round(held, 3), self.reason))
            self.outputs.log("info", f"resumed: a decision came after {held:.1f} s")
            self._hold_since, self.state, self.reason = None, "running", ""
        if extras:
            self.session.policy_extras = dict(extras)
        if error is not None or decision is None:
            self.session.failed(records)
            self._decision_failed(view_set, error or "the decision carried no action")
            return
        action = self.session.decided(view_set.observation, decision, records)
        self._send(view_set, action, decision.rationale, decision.confidence)

    def tick(self) -> None:
        """The clock: the subclass's checks, then the decision timeout (a hold, once per wait)."""
        if self.state in ("starting", "finished"):
            return
        now = self.clock()
        if not self._tick(now):
            return
        if self._pending is not None and now - self._pending[1] > self.decision_timeout_s \
                and self._hold_since is None:
            self._hold_since, self.holds, self.state = now, self.holds + 1, "holding"
            self.reason = (f"no decision for view set {self._pending[0].view_set_id} within "
                           f"{self.decision_timeout_s:g} s: holding")
            self.outputs.log("warning", self.reason)
            self._publish_status()
            self._on_hold()

    def status(self) -> SupervisorStatus:
        current = self.plan.current() if self.plan is not None else None
        task, round = current if current is not None else (None, None)
        step = self._pending[0].step if self._pending is not None else None
        return SupervisorStatus(self.state, self.reason, self.done, self.total, self.holds,
                                task.episode.episode_id if task else None, task.seed if task else None, round, step)

    # -- for subclasses ------------------------------------------------------------------------

    def _next_task(self) -> Optional[tuple[SeededEpisode, int]]:
        return self.plan.current() if self.plan is not None else None

    def _begin(self, task: SeededEpisode, round: int) -> None:
        raise NotImplementedError

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        raise NotImplementedError

    def _decision_failed(self, view_set: ViewSet, error: str) -> None:
        raise NotImplementedError

    def _tick(self, now: float) -> bool:
        """Extra checks on a tick; False: the tick is over (the episode ended)."""
        return True

    def _on_hold(self) -> None:
        """The decision timed out (state is now "holding")."""

    def _ask_or_act(self, view_set: ViewSet) -> None:
        """A new view set to act on: an action the supervisor takes itself, or a question."""
        assert self.session is not None
        self._view_set_times.append(self.clock())
        ask = self.session.observe(view_set.observation)
        if isinstance(ask, Action):
            self._send(view_set, ask)
            return
        self._pending = (view_set, self.clock())
        self.outputs.ask(view_set, ask, self.session.round)
        self._publish_status()

    def _start_next(self) -> None:
        current = self._next_task()
        if current is None:
            self.session, self.state, self.reason = None, "finished", f"{self.done} tasks done"
            self.outputs.log("info", f"finished: {self.done} tasks")
            self._publish_status()
            return
        task, round = current
        self.session = EpisodeSession(task.world, task.episode, task.seed, round, self.config, self.supervisor)
        self._pending, self._view_set_times = None, []
        self.state, self.reason = "running", ""
        self._begin(task, round)
        self.outputs.task_started(task.world, task.episode)
        self._publish_status()

    def _complete(self, trajectory: Trajectory) -> None:
        """The round ended on `trajectory`: its record, the task's outcome once its rounds are
        done, then the next task."""
        assert self.session is not None and self.plan is not None
        session = self.session
        self._pending = None
        record = session.record(trajectory)
        self.outputs.task_ended(session.world, session.episode, list(trajectory.path))
        self._log_loop_period()
        final = self.plan.finish(record)
        if final is not None:
            self.outputs.outcome(self.done, self.total, final)
            self.done += 1
            self.outputs.log("info", f"{final['episode_id']} seed {final['seed']}: {final['end_reason']} after "
                                     f"{final['steps']} steps ({self.done}/{self.total})")
        self._start_next()

    def _log_loop_period(self) -> None:
        """Seconds from one view set to the next (decision, action and world step included): the
        loop's pace, logged per episode for operators and benchmarks/ros_loop.py."""
        times = self._view_set_times
        periods = sorted(b - a for a, b in zip(times, times[1:]))
        if periods:
            p50, p95 = periods[len(periods) // 2], periods[min(len(periods) - 1, int(0.95 * len(periods)))]
            self.outputs.log("info", f"loop: {len(periods)} steps, period p50 {1000 * p50:.2f} ms "
                                     f"p95 {1000 * p95:.2f} ms")

    def _publish_status(self) -> None:
        self.outputs.status(self.status())


"""When a live vehicle gets a view set: once per node visit, on arrival.

A visit starts when the localiser's node changes, when the vehicle comes back onto the graph
after being off it, or when a new task run starts; it lasts while the node stays the same
(hysteresis already keeps it steady through GNSS jitter). The view set is built at the first
on-node fix of the visit and never again in that visit, so one arrival is one decision. A
source that fails (no frame yet, heading unknown) leaves the visit unserved and the next
on-node fix tries again.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.camera.source import FrameSource, facing_of
from cityseeker_ros.core.sensing.localisation import Localisation, LocalisationStatus
from cityseeker_ros.core.tasks.environment import DEFAULT_MAX_STEPS, Observation
from cityseeker_ros.core.tasks.episode import World


@dataclass(frozen=True)
class RunTask:
    """The running task a view set belongs to; `key` changes with every new run."""

    key: Hashable
    episode_id: str
    instruction: str


class ArrivalTrigger:
    """Pure visit bookkeeping: `arrived(loc)` is True exactly once per node visit per run."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._node: Optional[str] = None  # node of the current visit
        self._served = False

    def observe(self, loc: Localisation) -> bool:
        """Feed every localisation; True when this one should get a view set."""
        if loc.status == LocalisationStatus.OFF_GRAPH:
            self.reset()  # coming back is a new visit
            return False
        if loc.status == LocalisationStatus.NO_FIX or loc.node_id is None:
            return False  # the localiser keeps its node through a gap: so does the visit
        if loc.node_id != self._node:
            self._node, self._served = loc.node_id, False
        return loc.status == LocalisationStatus.ON_NODE and not self._served

    def served(self) -> None:
        """The view set of the current visit was built."""
        self._served = True

    @property
    def node(self) -> Optional[str]:
        return self._node


class ViewSetBuilder:
    """Turns localisations into observations for the running task: steps 0 to `max_steps` of a run,
    like the replay, whose last view set shows where the budget ran out (the supervisor ends the
    episode there)."""

    def __init__(self, source: FrameSource, world: Optional[World] = None,
                 max_steps: int = DEFAULT_MAX_STEPS) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigError(f"parameter max_steps must be an integer >= 1, got {max_steps!r}")
        self.source, self.world, self.max_steps = source, world, max_steps
        self.trigger = ArrivalTrigger()
        self.task: Optional[RunTask] = None
        self.step = 0  # view sets built in this run

    def start(self, task: Optional[RunTask]) -> bool:
        """Set the running task (None: none runs). True when it is a new run: the count and the
        visit start over, so the node the vehicle stands on gets a view set for the new run."""
        if task is not None and self.task is not None and task.key == self.task.key:
            return False
        self.task, self.step = task, 0
        self.trigger.reset()
        return True

    @property
    def exhausted(self) -> bool:
        return self.step > self.max_steps

    def offer(self, loc: Localisation) -> Optional[Observation]:
        """The observation to publish for this localisation, or None. Exceptions from the source
        propagate and leave the visit unserved (the next fix retries)."""
        arrived = self.trigger.observe(loc)
        if not arrived or self.task is None or self.exhausted:
            return None
        views = self.source.views(loc)
        self.trigger.served()
        lat, lon = loc.lat, loc.lon
        if self.world is not None and loc.node_id in self.world.graph.nodes:
            node = self.world.graph.nodes[loc.node_id]
            lat, lon = node.lat, node.lon  # the policy reasons about the graph node
        observation = Observation(self.task.episode_id, self.task.instruction, loc.node_id or "", float(lat or 0.0),
                                  float(lon or 0.0), facing_of(loc, self.world), tuple(views), self.step,
                                  self.max_steps - self.step)
        self.step += 1
        return observation

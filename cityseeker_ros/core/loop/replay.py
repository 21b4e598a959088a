"""Replay: the world is the replay node, which keeps the episode and takes actions (a
benchmark over ROS). The loop selects each task's episode on the world node, recognises the run
the world started for it (a view set or episode state of that episode and seed, newer than any
run seen before the selection), answers each new view set with an action, and finishes the round
when the world says the episode ended. A selection the world has not started within
`select_timeout_s` is asked again."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Optional

from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.loop.run_plan import RunPlan, SeededEpisode
from cityseeker_ros.core.loop.state_machine import EpisodeLoop, Outputs, ViewSet, WorldEpisode
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy
from cityseeker_ros.core.tasks.environment import Action


class ReplayLoop(EpisodeLoop):
    def __init__(self, config: BenchmarkConfig, plan: RunPlan, supervisor: Optional[BcrPolicy], outputs: Outputs,
                 decision_timeout_s: float, select_timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(config, plan, supervisor, outputs, decision_timeout_s, clock)
        self.select_timeout_s = float(select_timeout_s)
        self.run = 0  # the world node's run of the current task; 0 while selecting
        self._max_run = 0  # the newest run seen from the world node
        self._select_floor = 0  # the newest run before the current selection: the selected one is newer
        self._selected_at = 0.0
        self._latest_views: Optional[ViewSet] = None
        self._latest_episode: Optional[WorldEpisode] = None
        self._handled: Optional[str] = None  # view set id last acted on

    # -- inputs --------------------------------------------------------------------------------

    def view_set(self, view_set: ViewSet) -> None:
        self._latest_views = view_set
        self._max_run = max(self._max_run, view_set.run)
        self._advance()

    def world_episode(self, episode: WorldEpisode) -> None:
        self._latest_episode = episode
        if episode.run is not None:
            self._max_run = max(self._max_run, episode.run)
        self._advance()

    # -- the loop ------------------------------------------------------------------------------

    def _begin(self, task: SeededEpisode, round: int) -> None:
        self.run, self._handled, self.state = 0, None, "selecting"
        self._select()

    def _select(self) -> None:
        assert self.session is not None
        self._selected_at, self._select_floor = self.clock(), self._max_run
        self.outputs.select(self.session.episode.episode_id, self.session.seed)

    def _advance(self) -> None:
        """Act on whatever the newest inputs allow: recognise the selected run, act on a new
        view set, or finish the episode."""
        session = self.session
        if session is None:
            return
        views, episode = self._latest_views, self._latest_episode
        if self.run == 0:
            for run, episode_id, seed in ((views.run, views.episode_id, views.seed) if views else (None,) * 3,
                                          (episode.run, episode.episode_id, episode.seed) if episode else (None,) * 3):
                if run is not None and run > self._select_floor and episode_id == session.episode.episode_id \
                        and seed == session.seed:
                    self.run, self.state = run, "running" if self._hold_since is None else "holding"
            if self.run == 0:
                return
        if episode is not None and episode.run == self.run and episode.trajectory is not None:
            self._complete(episode.trajectory)
        elif views is not None and views.run == self.run and not views.done and views.view_set_id != self._handled:
            self._handled = views.view_set_id
            self._ask_or_act(views)

    def _send(self, view_set: ViewSet, action: Action, reason: str = "", confidence: Optional[float] = None) -> None:
        self.outputs.act(view_set.view_set_id, action)

    def _decision_failed(self, view_set: ViewSet, error: str) -> None:
        self.outputs.act(view_set.view_set_id, None, error)

    def _tick(self, now: float) -> bool:
        if self.state == "selecting" and self.run == 0 and now - self._selected_at > self.select_timeout_s:
            episode_id = self.session.episode.episode_id if self.session else "?"
            self.outputs.log("warning", f"episode {episode_id} not started after {self.select_timeout_s:g} s: "
                                        f"selecting again")
            self._select()
        return True

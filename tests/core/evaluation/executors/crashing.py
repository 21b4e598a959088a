"""A policy that kills its own process on one episode: a worker that keeps dying, for the
fault tests."""
from __future__ import annotations

import os

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.agents.policies.baselines import RandomPolicy

NAME = "test-crash-on"


class CrashOnEpisode(RandomPolicy):
    """`random`, except that the process exits (no exception, no cleanup) when it starts `episode`."""

    def __init__(self, episode: str = "") -> None:
        super().__init__()
        self.crash_on = episode

    def reset(self, episode, rng, world=None) -> None:
        if episode.episode_id == self.crash_on:
            os._exit(3)
        super().reset(episode, rng, world)


def registered(monkeypatch) -> str:
    """Register the policy in this process for one test only (elsewhere the registry lists
    exactly the package's policies); the Ray executor ships the class to its actors."""
    monkeypatch.setitem(POLICIES._entries, NAME, CrashOnEpisode)
    return NAME

"""A policy that waits, before its first episode, until actors on `nodes` Ray nodes have started
theirs: a run that cannot finish before every node has taken part, however slowly an actor starts."""
from __future__ import annotations

import time
from pathlib import Path

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.agents.policies.baselines import RandomPolicy

NAME = "test-gather"
WAIT_S = 120.0


class GatherAcrossNodes(RandomPolicy):
    """`random`, except that the first `reset` in an actor marks its node in `folder` and waits
    until `nodes` nodes are marked (a replacement actor on a node marks it again)."""

    def __init__(self, folder: str = "", nodes: int = 1) -> None:
        super().__init__()
        self.folder, self.nodes, self.gathered = Path(folder), nodes, False

    def reset(self, episode, rng, world=None) -> None:
        if not self.gathered:
            import ray

            (self.folder / ray.get_runtime_context().get_node_id()).touch()
            deadline = time.monotonic() + WAIT_S
            while len(list(self.folder.iterdir())) < self.nodes:
                if time.monotonic() > deadline:
                    self.gathered = True  # wait once: the test fails on the count, not on a hang
                    raise TimeoutError(f"only {len(list(self.folder.iterdir()))} of {self.nodes} nodes started")
                time.sleep(0.01)
            self.gathered = True
        super().reset(episode, rng, world)


def registered(monkeypatch) -> str:
    """Register the policy in this process for one test only; the Ray executor ships the class."""
    monkeypatch.setitem(POLICIES._entries, NAME, GatherAcrossNodes)
    return NAME

"""A scripted policy and a supervised episode runner on the tiny hand-made city.

    E
    |
A - B - C - D      (20 m hops along the equator; views: A [E], B [W, E, N], C [W, E], D [W])
"""
from __future__ import annotations

from typing import Optional

from cityseeker_ros.core.agents.policies.base import Decision, Policy
from cityseeker_ros.core.tasks.environment import STOP, Action, move

NODE = {k: f"0000000{i}" for i, k in enumerate("ABCDE")}
LETTER = {v: k for k, v in NODE.items()}


def letters(nodes) -> str:
    return "".join(LETTER[n] for n in nodes)


class Script(Policy):
    """Plays (node, view index or "stop", confidence) in order, checking it stands where the script
    expects, so a test fails loudly if the supervisor moved the agent somewhere else."""

    uses_images = False

    def __init__(self, script: list[tuple[str, object, Optional[float]]]) -> None:
        self.script = list(script)
        self.contexts: list = []
        self.last: Optional[float] = None

    def act(self, observation) -> Action:
        node, action, confidence = self.script.pop(0)
        assert observation.node == NODE[node], f"script expected {node}, agent is at {observation.node}"
        self.last = confidence
        return STOP if action == "stop" else move(action)

    def explain(self):
        return self.last, "scripted"


class ContextScript(Script):
    """The same, but reads prompt context like the VLM policy: records what it was told."""

    accepts_context = True

    def decide(self, observation, context=None) -> Decision:
        self.contexts.append((observation.step, context))
        return super().decide(observation, context)

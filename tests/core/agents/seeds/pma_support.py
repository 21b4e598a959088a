"""What the PMA tests share: seeded noise views, a scripted backend that answers each PMA role
with what a test gives it, and the worlds (the questions family's high street, the tiny city)."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, GenerationRequest
from cityseeker_ros.core.sensing.views.source import ViewSource
from tests.core.agents.vlm.test_family_transformers import NoiseViews  # seeded noise per node and heading

ROLES = {"Planner": "planner", "Manager": "manager", "Navigator": "navigator", "Explorer": "explorer",
         "Collector": "collector", "Answer Generation": "answerer"}


def role_of(request: GenerationRequest) -> str:
    text = request.messages[0].content[0]
    return next(role for word, role in ROLES.items() if f"You are the {word} " in text)


def user_text(request: GenerationRequest) -> str:
    return "\n".join(c for m in request.messages for c in m.content if isinstance(c, str))


class Scripted(Backend):
    """Replies `reply(role, n, request)` (n: the role's call count so far, from 0) and logs every request."""

    name = "scripted"

    def __init__(self, reply: Callable[[str, int, GenerationRequest], Any]) -> None:
        self.reply, self.requests, self.counts = reply, [], {}

    def generate(self, requests):
        out = []
        for request in requests:
            role = role_of(request)
            n = self.counts.get(role, 0)
            self.counts[role] = n + 1
            self.requests.append((role, request))
            text = self.reply(role, n, request)
            out.append(Generation(text if isinstance(text, str) else json.dumps(text), prompt_tokens=7,
                                  completion_tokens=2))
        return out

    def roles(self) -> list[str]:
        return [r for r, _ in self.requests]


# A plan for "There is a restaurant named "Trattoria Sole" to the north of you. To the north of it,
# there is a bakery. Please tell me what is the name of the bakery?"
PLAN = {
    "objects": [{"id": "agent", "class": "agent", "name": "", "state": "Known"},
                {"id": "restaurant_1", "class": "restaurant", "name": "Trattoria Sole", "state": "Unknown"},
                {"id": "bakery_1", "class": "bakery", "name": "", "state": "Unknown"}],
    "relationships": ["restaurant_1 is north of agent", "bakery_1 is north of restaurant_1"],
    "requirements": ["the name of bakery_1"],
    "plan": [{"type": "Exploration", "landmark": "agent", "direction": "north", "target": "restaurant_1"},
             {"type": "Navigation", "landmark": "restaurant_1", "direction": "north"},
             {"type": "Exploration", "landmark": "restaurant_1", "direction": "north", "target": "bakery_1"},
             {"type": "Collection", "requirement": "the name of bakery_1"}]}


def good_reply(role: str, n: int, request: GenerationRequest) -> Any:
    """Readable replies for every role: the restaurant seen 30 m ahead, found at once; the
    bakery found on the second look; the collector turns once, then keeps still."""
    if role == "planner":
        return PLAN
    if role == "manager":
        return {"objects": [{"view": "A", "class": "restaurant", "name": "Trattoria Sole", "distance_m": 30,
                             "width_m": 10}]}
    if role == "navigator":
        return {"thoughts": "walk on", "action": "A"}
    if role == "explorer":
        return {"thoughts": "looking", "found": "bakery" not in user_text(request) or n >= 2, "action": "A"}
    if role == "collector":
        return {"answer": "Panificio Bruno", "action": "TurnRight" if n == 0 else "KeepStill"}
    return {"answer": "Panificio Bruno"}


def question_world(folder: Path):
    from tests.core.tasks.questions.conftest import street_world

    return street_world(folder)


def bakery_episode(world) -> Any:
    return next(e for e in world.episodes if e.details["kind"] == "name" and "bakery" in e.instruction)


def run(world, episode, agent, max_steps: int = 8, views: Optional[ViewSource] = None) -> dict[str, Any]:
    from cityseeker_ros.core.evaluation.episode_run import run_episode

    return run_episode(world, episode, agent, seed=0, max_steps=max_steps,
                       views=views if views is not None else NoiseViews())

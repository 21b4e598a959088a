"""What the prep, navgpt and mapgpt tests share: the three families' small worlds (the tiny city
for needs, the landmark grid town, the questions family's high street), seeded noise views, a
backend that answers each call by its role, and the role of a request read from its words."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, GenerationRequest
from cityseeker_ros.core.evaluation.episode_run import run_episode
from tests.core.agents.vlm.test_family_transformers import NoiseViews

AGENTS = ("prep", "navgpt", "mapgpt")
FAMILIES = ("needs", "landmarks", "questions")


def texts(request: GenerationRequest) -> str:
    return "\n".join(c for m in request.messages for c in m.content if isinstance(c, str))


def role_of(request: GenerationRequest) -> str:
    """The call's role, from the words only that role's prompt holds."""
    last = request.messages[-1]
    text = texts(request)
    if any(m.role == "assistant" for m in request.messages):
        return "replan"
    if "Vision-and-Language Navigation" in text:
        return "action"
    body = "\n".join(c for c in last.content if isinstance(c, str))
    if "Is the <landmark> visible" in body or "Describe what you see" in body:
        return "perception"
    if "memory list" in body:
        return "memory"
    if "inferred the goal" in body:
        return "reflection"
    return "planning"


def landmark_in(request: GenerationRequest) -> Optional[str]:
    m = re.search(r"For each of these landmarks: ([^,.\n]+)", texts(request))
    return m.group(1).strip() if m else None


def good_reply(request: GenerationRequest) -> str:
    """A readable reply for every role: perception sees the first landmark listed 100 m away
    (or describes the view), reflection puts the goal at (50, 60), planning and actions take
    the first view with a plan; navgpt and mapgpt describe their choice and keep it."""
    role = role_of(request)
    if role == "perception":
        name = landmark_in(request)
        if name is not None:
            return json.dumps({"landmarks": [{"name": name, "visible": True, "distance_m": 100}]})
        return json.dumps({"description": "a street with a café"})
    if role == "memory":
        return json.dumps({"summary": "You walked one way."})
    if role == "reflection":
        return json.dumps({"Thought_Q1": "average", "Answer_Q1": [50, 60], "Thought_Q2": "-", "Answer_Q2": "-"})
    if role == "planning":
        return json.dumps({"current_state": "Step 1", "yes_or_no": "Yes", "new_plan": ["1. Move A.", "2. Stop."],
                           "action_reason": "on", "action": "A"})
    return json.dumps({"reasoning": "1. on", "action": "A", "description": "a long avenue",
                       "reflection": "fine", "final_decision": "keep"})


class ByRole(Backend):
    """Replies `reply(request)` (text, or an object sent as JSON) and logs (role, request)."""

    name = "by-role"

    def __init__(self, reply: Callable[[GenerationRequest], Any] = good_reply) -> None:
        self.reply, self.requests = reply, []

    def generate(self, requests):
        out = []
        for request in requests:
            self.requests.append((role_of(request), request))
            text = self.reply(request)
            out.append(Generation(text if isinstance(text, str) else json.dumps(text), prompt_tokens=7,
                                  completion_tokens=2))
        return out

    def roles(self) -> list[str]:
        return [r for r, _ in self.requests]


def needs_world(folder: Path):
    from cityseeker_ros.core.datasets import load_dataset
    from tests.conftest import tiny_layout, write_city

    return load_dataset(write_city(folder / "TinyTown_1", *tiny_layout()))[0]


def landmark_world(folder: Path):
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.core.tasks.landmarks.generator import LandmarkTaskSettings, generate_landmark_tasks
    from tests.core.tasks.landmarks.gridtown import SMALL, grid_graph, grid_scene, write_world_folder

    graph = grid_graph()
    scene = grid_scene(graph)
    doc = generate_landmark_tasks("gridtown", graph, scene, LandmarkTaskSettings(**SMALL)).document
    return load_dataset(write_world_folder(folder / "gridtown", graph, scene, doc), family="landmarks")[0]


def question_world(folder: Path):
    from tests.core.tasks.questions.conftest import street_world

    return street_world(folder / "highstreet")


MAKERS = {"needs": needs_world, "landmarks": landmark_world, "questions": question_world}


def capped(episode: Any, max_steps: int) -> Any:
    """The episode with at most `max_steps` steps (landmark goals carry their own budget)."""
    return replace(episode, budget=min(episode.budget, max_steps)) if episode.budget is not None else episode


def run(world, agent, max_steps: int = 3, episode: Any = None, views: Any = None) -> dict[str, Any]:
    episode = capped(episode if episode is not None else world.episodes[0], max_steps)
    return run_episode(world, episode, agent, seed=0, max_steps=max_steps,
                       views=views if views is not None else NoiseViews())

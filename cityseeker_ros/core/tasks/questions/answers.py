"""What a question's answer is and when a given answer counts: the facts of the world a question
can ask (a sign's name, a building's floors and facade colour, a place's kind, a direction), the
words each fact may be given in, and the normalised exact match that scores them.

Facts come from the scene alone (`fact`), so the generator, the oracle and anyone checking a task
file compute the same answer from the same data; the words a fact may be said in (`accepted`) are
a short, fixed list per fact, written down here rather than left to a model. Directions, presence
and counts are the map's: they use the places' OSM positions (`Poi.lat/lon`), never the boards the
builder moved onto a wall (the generator keeps a question only where both agree).
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.render.palette import (
    GENERIC_WORDS,
    GLASS_STYLES,
    PLASTER_STYLES,
    facade_style_index,
    generic_word,
    split_class,
)
from cityseeker_ros.core.render.textures import GROUND_FLOOR_M
from cityseeker_ros.core.worlds.scene import Building, Poi, Scene

KINDS: tuple[str, ...] = ("name", "floors", "colour", "category", "relation", "existence", "counting")
MAX_ANSWER_CHARS = 200  # longer is no answer but an essay (or a model that lost the thread)
ARTICLES = frozenset({"a", "an", "the"})
NUMBER_WORDS: dict[str, str] = {w: str(i) for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
FLOOR_WORDS = ("floors", "storeys", "stories", "levels")
CARDINALS: tuple[str, ...] = ("north", "east", "south", "west")  # CityEQA's four relations
# CityEQA's categories (its released data) for the kinds of answer asked.
CATEGORIES: dict[str, str] = {
    "name": "Object Recognition",
    "colour": "Attribute Recognition",
    "floors": "Counting",
    "category": "World Knowledge",
    "relation": "Spatial Reasoning",
    "existence": "Existence Judgement",
    "counting": "Counting",
}
YES_NO: tuple[str, str] = ("yes", "no")
# The tags whose values say what kind of place something is (worlds/osm.POI_KEYS and a few more a
# person would also name a place by): a place is every kind its tags give, not only its primary class.
KIND_KEYS: tuple[str, ...] = ("amenity", "shop", "tourism", "leisure", "healthcare", "public_transport", "railway",
                              "highway", "office", "craft", "historic")
# Under these keys only the values that are a place one stands at: a street or a rail line named
# like the bus stop on it is not a second place of that name.
PLACE_VALUES_ONLY: dict[str, frozenset[str]] = {
    "highway": frozenset({"bus_stop"}),
    "railway": frozenset({"station", "halt", "tram_stop", "subway_entrance"}),
    "public_transport": frozenset({"station", "platform", "stop_position"}),
}


# Facade colours by palette index (palette.PLASTER_STYLES then GLASS_STYLES): the name a person
# would give the wall colour, then the other names that are fair for it. The lists are coarse on
# purpose: a rendered wall is shaded by the sun, and "beige" against "cream" is no perception error.
PLASTER_COLOURS: tuple[tuple[str, ...], ...] = (
    ("beige", "cream", "tan", "light brown"),
    ("cream", "pale yellow", "light yellow", "yellow", "beige"),
    ("peach", "light orange", "orange", "apricot", "salmon"),
    ("terracotta", "red brown", "reddish brown", "brick red", "rust", "brown", "red"),
    ("grey", "gray", "light grey", "light gray"),
    ("off white", "white", "light grey", "light gray", "ivory"),
    ("sand", "tan", "khaki", "beige", "light brown"),
    ("salmon", "pink", "dusty pink", "light red", "peach"),
    ("light blue", "pale blue", "blue grey", "blue gray", "light grey", "light gray", "blue"),
    ("ochre", "mustard", "yellow ochre", "gold", "orange yellow", "yellow"),
    ("brick red", "red brown", "reddish brown", "terracotta", "rust", "brown", "red"),
    ("white", "off white", "ivory", "cream"),
)
GLASS_COLOURS: tuple[tuple[str, ...], ...] = (
    ("blue grey glass", "glass", "blue grey", "blue gray", "grey blue", "gray blue", "blue", "grey", "gray"),
    ("green grey glass", "glass", "green grey", "green gray", "grey green", "blue green", "teal", "grey", "gray"),
)
FACADE_COLOURS = PLASTER_COLOURS + GLASS_COLOURS
assert len(PLASTER_COLOURS) == len(PLASTER_STYLES) and len(GLASS_COLOURS) == len(GLASS_STYLES), \
    "a facade style without colour names: add them to PLASTER_COLOURS / GLASS_COLOURS"

# Other fair names for a kind of place beyond the sign word and the OSM value ("coffee shop").
CATEGORY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "cafe": ("coffee shop", "coffee house", "coffeehouse"),
    "restaurant": ("eatery",),
    "fast_food": ("fast food restaurant", "takeaway", "burger restaurant"),
    "bar": ("pub",), "pub": ("bar",),
    "convenience": ("convenience store", "corner shop", "minimarket", "mini market"),
    "supermarket": ("grocery store", "grocery", "grocer"),
    "pharmacy": ("chemist", "drugstore", "drug store"),
    "chemist": ("pharmacy", "drugstore", "drug store"),
    "bank": ("bank branch",), "atm": ("cash machine", "cashpoint"),
    "hotel": ("inn",), "bakery": ("baker", "bakers"),
    "bus_stop": ("bus station",), "clothes": ("clothing store", "clothes shop", "clothing shop", "fashion store"),
    "hairdresser": ("hair salon", "barber", "barbershop"), "books": ("bookshop", "bookstore", "book shop"),
    "jewelry": ("jeweller", "jeweler", "jewellery shop", "jewelry store"),
    "optician": ("opticians", "optometrist", "eyewear shop"),
    "florist": ("flower shop",), "ice_cream": ("ice cream parlour", "ice cream shop", "gelateria"),
    "dentist": ("dental clinic",), "doctors": ("doctor", "doctors office", "clinic"),
}


# Nouns for the kinds whose sign word or OSM value reads badly in "there is a ... named X".
PLACE_NOUNS: dict[str, str] = {
    "books": "bookshop", "car": "car dealer", "ice_cream": "ice cream parlour", "parking": "car park",
    "clothes": "clothes shop", "shoes": "shoe shop", "jewelry": "jeweller", "hairdresser": "hairdresser",
    "doctors": "doctor's surgery", "fast_food": "fast-food restaurant", "atm": "cash machine",
    "convenience": "convenience store", "bus_stop": "bus stop", "artwork": "artwork",
}


def normalise(text: str) -> str:
    """The form answers are compared in: case folded, accents, punctuation and articles dropped,
    number words written as digits ("The Café-Bar" -> "cafe bar", "four" -> "4")."""
    decomposed = unicodedata.normalize("NFKD", str(text).casefold().replace("&", " and "))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    tokens = re.sub(r"[^\w]+|_", " ", plain).split()
    return " ".join(NUMBER_WORDS.get(t, t) for t in tokens if t not in ARTICLES)


def answer_invalid(answer: Optional[str]) -> bool:
    """An answer given but unusable: empty (after whitespace) or longer than MAX_ANSWER_CHARS."""
    return answer is not None and (not str(answer).strip() or len(str(answer)) > MAX_ANSWER_CHARS)


def matches(answer: Optional[str], accepted: Iterable[str]) -> bool:
    """Normalised exact match against any accepted form; an invalid or missing answer never matches."""
    if answer is None or answer_invalid(answer):
        return False
    given = normalise(answer)
    return bool(given) and any(given == normalise(a) for a in accepted)


# --- facts of the scene ----------------------------------------------------------------------------------


def storeys_drawn(building: Building) -> Optional[int]:
    """The storeys a view of `building` shows, or None when they need not equal its levels: the
    renderer spaces floors by its levels only where that gives a plausible floor height (2.6-4.5 m
    above a GROUND_FLOOR_M shopfront; render/walls.py), else it draws a default height."""
    levels, height = int(building.levels or 0), float(building.height_m)
    if levels < 2 or height <= GROUND_FLOOR_M:
        return None
    floor_m = (height - GROUND_FLOOR_M) / (levels - 1)
    return levels if 2.6 <= floor_m <= 4.5 else None


def facade_colours(building: Building) -> tuple[str, ...]:
    """The facade colour's name first, then the other fair names (palette by Building.style)."""
    return FACADE_COLOURS[facade_style_index(building.style, building.height_m)]


def category_words(poi_class: str) -> tuple[str, ...]:
    """What kind of place an OSM class is, in words: a noun a question can use first ("pharmacy",
    "clothes shop"), then the renderer's sign word, the OSM value and common synonyms."""
    key, value = split_class(poi_class)
    plain = value.replace("_", " ")
    noun = PLACE_NOUNS.get(value) or (f"{plain} shop" if key == "shop" and value not in GENERIC_WORDS
                                      else generic_word(poi_class).lower())
    words = [noun, generic_word(poi_class).lower(), plain, *CATEGORY_SYNONYMS.get(value, ())]
    return tuple(dict.fromkeys(w for w in words if w))


def cardinal(bearing_deg: float) -> str:
    """The nearest of the four directions CityEQA's questions use."""
    return CARDINALS[int(((float(bearing_deg) % 360.0) + 45.0) // 90.0) % 4]


def relation_words(direction: str) -> tuple[str, ...]:
    return direction, f"to the {direction}", f"{direction}wards", f"to the {direction} of it"


def number_words(n: int) -> tuple[str, ...]:
    return (str(n),) + tuple(f"{n} {w}" for w in FLOOR_WORDS)


def plural(noun: str) -> str:
    """English plural of a place noun ("pharmacy" -> "pharmacies", "bus stop" -> "bus stops")."""
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def count_words(n: int, noun: str) -> tuple[str, ...]:
    return (str(n), f"{n} {plural(noun) if n != 1 else noun}")


def kind_classes(tags: Mapping[str, str]) -> tuple[str, ...]:
    """Every "key=value" of `tags` that says what kind of place it is (KIND_KEYS), in key order."""
    values = ((k, tags.get(k, "").strip().lower()) for k in KIND_KEYS)
    return tuple(f"{k}={v}" for k, v in values if v not in ("", "yes", "no")
                 and (k not in PLACE_VALUES_ONLY or v in PLACE_VALUES_ONLY[k]))


def nouns_of(classes: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(the nouns a question would call a place of these classes, every word it could be called):
    the first decides "a pharmacy" (it is one), the second "could a person take it for one"."""
    words = [category_words(c) for c in classes]
    return frozenset(w[0] for w in words), frozenset(x for w in words for x in w)


def map_xy(scene: Scene, pois: Iterable[Poi]) -> dict[str, tuple[float, float]]:
    """Each POI's OSM position (`lat/lon`, not its drawn board) in the scene's metres."""
    pois = list(pois)
    if not pois:
        return {}
    xy = np.atleast_2d(scene.frame.to_xy([p.lat for p in pois], [p.lon for p in pois]))
    return {p.id: (float(x), float(y)) for p, (x, y) in zip(pois, xy)}


def sector(centre: tuple[float, float], point: tuple[float, float], direction: str) -> tuple[float, float]:
    """(metres from `centre` to `point`, degrees off `direction`)."""
    off = abs((bearing_xy(centre, point) - CARDINALS.index(direction) * 90.0 + 180.0) % 360.0 - 180.0)
    return math.dist(centre, point), off


def corridor(a: tuple[float, float], b: tuple[float, float], point: tuple[float, float]) -> tuple[float, float]:
    """(metres along a->b from a, metres off the line) of `point`: where it stands between a and b."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = math.hypot(dx, dy) or 1e-9
    px, py = point[0] - a[0], point[1] - a[1]
    return (px * dx + py * dy) / length, abs(px * dy - py * dx) / length


def bearing_xy(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Azimuth from a to b in the scene's east/north metres, degrees clockwise from north."""
    return math.degrees(math.atan2(b[0] - a[0], b[1] - a[1])) % 360.0


def fact(scene: Scene, details: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(the answer, every accepted form) of a question's `details`, computed from the scene by the
    ids it names, not read from the stored answer. Raises ValueError naming what is missing."""
    kind = details.get("kind")
    pois = {p.id: p for p in scene.pois}
    target = _poi(pois, details, "target_poi")
    if kind == "name":
        text = sign_words(target)
        return text, (text,)
    if kind == "category":
        words = category_words(target.poi_class)
        return words[0], words
    if kind == "relation":
        anchor = _poi(pois, details, "anchor_poi")
        where = map_xy(scene, (anchor, target))
        direction = cardinal(bearing_xy(where[anchor.id], where[target.id]))
        return direction, relation_words(direction)
    if kind in ("existence", "counting"):
        return _map_answer(scene, pois, details)
    building = _building(scene, target)
    if kind == "floors":
        storeys = storeys_drawn(building)
        if storeys is None:
            raise ValueError(f"building {building.id}: its drawn storeys need not equal its levels")
        return str(storeys), number_words(storeys)
    if kind == "colour":
        words = facade_colours(building)
        return words[0], words
    raise ValueError(f"unknown question kind {kind!r}; known: {', '.join(KINDS)}")


def _map_answer(scene: Scene, pois: Mapping[str, Poi], details: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Existence and counting, from the OSM positions of every scene place that is the asked kind."""
    noun = details.get("asked_kind")
    if not isinstance(noun, str) or not noun:
        raise ValueError("details.asked_kind: the kind of place asked about is missing")
    anchor = _poi(pois, details, "anchor_poi")
    ends = [anchor] + ([_poi(pois, details, "end_poi")] if details["kind"] == "counting" else [])
    where = map_xy(scene, pois.values())
    kin = [p for p in pois.values() if p.id not in {e.id for e in ends} and noun in nouns_of(kind_classes(p.tags))[0]]
    if details["kind"] == "existence":
        radius, direction = float(details["within_m"]), str(details["relation"])
        found = any(d <= radius and off <= 45.0 for d, off in (sector(where[anchor.id], where[p.id], direction)
                                                               for p in kin))
        return ("yes", ("yes",)) if found else ("no", ("no",))
    a, b, width = where[ends[0].id], where[ends[1].id], float(details["corridor_m"])
    length = math.dist(a, b)
    n = sum(0.0 <= s <= length and off <= width for s, off in (corridor(a, b, where[p.id]) for p in kin))
    return str(n), count_words(n, noun)


def sign_words(poi: Poi) -> str:
    """What the target's board says (render/signs.sign_text): its name, else brand, else the kind."""
    return poi.label.strip() or generic_word(poi.poi_class)


def _poi(pois: Mapping[str, Poi], details: Mapping[str, Any], key: str) -> Poi:
    pid = details.get(key)
    if pid not in pois:
        raise ValueError(f"details.{key}: POI {pid!r} is not in the scene")
    return pois[pid]


def _building(scene: Scene, poi: Poi) -> Building:
    for b in scene.buildings:
        if b.id == poi.building_id:
            return b
    raise ValueError(f"POI {poi.id}: building {poi.building_id!r} is not in the scene")

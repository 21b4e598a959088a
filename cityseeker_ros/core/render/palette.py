"""Colours and words: facade palettes, and how a POI's class or brand decides its board.

A board's colour and pictogram carry the category before the text is readable (as real chain
signs do), so the mapping from OSM class to family is part of what perception is tested on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cityseeker_ros.core.infra.text import brand_key

RGB = tuple[int, int, int]

SKY_ZENITH: RGB = (70, 128, 214)
SKY_HORIZON: RGB = (206, 222, 240)
HAZE: RGB = SKY_HORIZON  # distant things fade into the horizon sky, hiding the draw distance
ROOF: RGB = (120, 116, 112)


@dataclass(frozen=True)
class FacadeStyle:
    wall: RGB
    frame: RGB
    glass_top: RGB
    glass_bottom: RGB
    curtain_wall: bool = False  # a glass tower: mullions and spandrels instead of punched windows


# Warm pastel plaster for ordinary blocks (as in Mediterranean and Nordic centres) ...
PLASTER_STYLES: tuple[FacadeStyle, ...] = tuple(
    FacadeStyle(wall, frame, (72, 88, 110), (112, 132, 158)) for wall, frame in (
        ((222, 206, 182), (122, 82, 52)),
        ((236, 222, 172), (124, 112, 82)),
        ((236, 188, 152), (150, 100, 80)),
        ((188, 104, 80), (92, 52, 40)),
        ((168, 168, 166), (72, 72, 78)),
        ((226, 222, 214), (112, 106, 100)),
        ((208, 186, 134), (112, 92, 62)),
        ((214, 152, 130), (122, 72, 62)),
        ((202, 210, 220), (92, 102, 112)),
        ((212, 172, 104), (122, 82, 42)),
        ((172, 88, 62), (72, 42, 32)),
        ((240, 236, 226), (142, 132, 122)),
    ))
# ... and glass for towers, which only tall buildings get.
GLASS_STYLES: tuple[FacadeStyle, ...] = (
    FacadeStyle((176, 190, 204), (120, 134, 150), (96, 130, 168), (150, 182, 212), curtain_wall=True),
    FacadeStyle((170, 196, 196), (110, 140, 142), (84, 126, 136), (140, 184, 190), curtain_wall=True),
)
CAR_COLOURS: tuple[RGB, ...] = ((176, 30, 36), (36, 60, 120), (210, 210, 214), (40, 40, 44), (120, 124, 130),
                                (230, 230, 226), (28, 90, 60))
TOWER_HEIGHT_M = 35.0


def facade_style_index(style: int, height_m: float) -> int:
    """Index into PLASTER_STYLES + GLASS_STYLES; towers are glass for half of the style values."""
    style = abs(int(style))
    if height_m >= TOWER_HEIGHT_M and (style // len(PLASTER_STYLES)) % 2 == 0:
        return len(PLASTER_STYLES) + style % len(GLASS_STYLES)
    return style % len(PLASTER_STYLES)


@dataclass(frozen=True)
class BoardStyle:
    board: RGB
    ink: RGB
    stripe: Optional[RGB] = None  # a band along the bottom edge, for chains known by one
    pictogram: Optional[str] = None  # overrides the class pictogram


# Chains whose colours people recognise; keys are names lower-cased without spaces/punctuation.
BRANDS: dict[str, BoardStyle] = {
    "mcdonalds": BoardStyle((218, 41, 28), (255, 199, 44), pictogram="burger"),
    "burgerking": BoardStyle((245, 235, 220), (214, 35, 0), pictogram="burger"),
    "kfc": BoardStyle((163, 8, 12), (255, 255, 255), pictogram="burger"),
    "hesburger": BoardStyle((200, 16, 46), (255, 255, 255), pictogram="burger"),
    "subway": BoardStyle((0, 130, 60), (255, 198, 0), pictogram="restaurant"),
    "pizzahut": BoardStyle((200, 16, 46), (255, 255, 255), pictogram="restaurant"),
    "dominos": BoardStyle((0, 100, 145), (255, 255, 255), stripe=(227, 24, 55), pictogram="restaurant"),
    "starbucks": BoardStyle((0, 112, 74), (255, 255, 255), pictogram="cafe"),
    "costa": BoardStyle((109, 31, 55), (255, 255, 255), pictogram="cafe"),
    "costacoffee": BoardStyle((109, 31, 55), (255, 255, 255), pictogram="cafe"),
    "espressohouse": BoardStyle((75, 42, 28), (240, 230, 215), pictogram="cafe"),
    "timhortons": BoardStyle((200, 16, 46), (255, 255, 255), pictogram="cafe"),
    "pret": BoardStyle((130, 20, 40), (255, 255, 255), pictogram="cafe"),
    "pretamanger": BoardStyle((130, 20, 40), (255, 255, 255), pictogram="cafe"),
    "chagee": BoardStyle((96, 52, 34), (255, 255, 255), pictogram="cafe"),
    "霸王茶姬": BoardStyle((96, 52, 34), (255, 255, 255), pictogram="cafe"),
    "7eleven": BoardStyle((0, 128, 96), (255, 255, 255), stripe=(244, 121, 32), pictogram="cart"),
    "circlek": BoardStyle((218, 41, 28), (255, 255, 255), stripe=(244, 130, 32), pictogram="cart"),
    "familymart": BoardStyle((0, 145, 208), (255, 255, 255), stripe=(0, 160, 70), pictogram="cart"),
    "lawson": BoardStyle((0, 104, 183), (255, 255, 255), pictogram="cart"),
    "spar": BoardStyle((0, 132, 61), (255, 255, 255), stripe=(228, 30, 38), pictogram="cart"),
    "lidl": BoardStyle((0, 80, 170), (255, 240, 0), pictogram="cart"),
    "aldi": BoardStyle((0, 40, 120), (255, 255, 255), stripe=(240, 120, 0), pictogram="cart"),
    "carrefour": BoardStyle((0, 78, 159), (255, 255, 255), stripe=(230, 30, 40), pictogram="cart"),
    "tesco": BoardStyle((0, 83, 159), (255, 255, 255), stripe=(238, 28, 46), pictogram="cart"),
    "kmarket": BoardStyle((240, 120, 0), (255, 255, 255), pictogram="cart"),
    "smarket": BoardStyle((0, 122, 61), (255, 255, 255), pictogram="cart"),
    "watsons": BoardStyle((0, 161, 154), (255, 255, 255), pictogram="cross"),
    "mannings": BoardStyle((240, 120, 0), (255, 255, 255), pictogram="cross"),
    "shell": BoardStyle((251, 206, 7), (221, 29, 33), pictogram="fuel"),
    "bp": BoardStyle((0, 153, 0), (255, 230, 0), pictogram="fuel"),
    "esso": BoardStyle((255, 255, 255), (0, 60, 160), stripe=(230, 30, 40), pictogram="fuel"),
    "hsbc": BoardStyle((219, 0, 17), (255, 255, 255), pictogram="money"),
    "bankofchina": BoardStyle((176, 0, 0), (255, 255, 255), pictogram="money"),
    "bnpparibas": BoardStyle((0, 145, 90), (255, 255, 255), pictogram="money"),
    "santander": BoardStyle((236, 0, 0), (255, 255, 255), pictogram="money"),
    "chowtaifook": BoardStyle((110, 92, 30), (255, 240, 200), pictogram="bag"),
}

# Board colour per family (when no brand matches).
FAMILY_BOARD: dict[str, RGB] = {
    "cafe": (108, 72, 44),
    "restaurant": (150, 28, 36),
    "fast_food": (214, 110, 24),
    "bar": (92, 44, 110),
    "grocery": (30, 122, 62),
    "shop": (58, 58, 60),
    "health": (16, 138, 74),
    "toilets": (60, 90, 120),
    "transport": (30, 100, 180),
    "lodging": (40, 58, 112),
    "finance": (20, 80, 118),
    "fuel": (176, 38, 42),
    "water": (30, 120, 170),
    "public": (74, 90, 106),
    "generic": (80, 80, 86),
}

_GROCERY = {"convenience", "supermarket", "general", "variety_store", "department_store", "grocery",
            "greengrocer", "kiosk", "mall", "wholesale"}
_HEALTH = {"pharmacy", "hospital", "clinic", "doctors", "dentist", "chemist"}
_LODGING = {"hotel", "hostel", "guest_house", "motel", "apartment", "chalet"}
_FINANCE = {"bank", "atm", "bureau_de_change", "money_transfer"}
_PUBLIC = {"post_office", "police", "townhall", "library", "school", "community_centre", "courthouse",
           "fire_station", "post_box"}

# Words a signed but unnamed POI shows.
GENERIC_WORDS: dict[str, str] = {
    "cafe": "Cafe", "restaurant": "Restaurant", "fast_food": "Fast food", "bar": "Bar", "pub": "Pub",
    "convenience": "Convenience store", "supermarket": "Supermarket", "pharmacy": "Pharmacy",
    "chemist": "Chemist", "hospital": "Hospital", "clinic": "Clinic", "doctors": "Doctor",
    "dentist": "Dentist", "toilets": "Toilets", "bus_stop": "Bus stop", "bus_station": "Bus station",
    "station": "Station", "subway_entrance": "Metro", "tram_stop": "Tram stop", "halt": "Station",
    "hotel": "Hotel", "hostel": "Hostel", "guest_house": "Guest house", "bank": "Bank", "atm": "ATM",
    "bureau_de_change": "Exchange", "fuel": "Fuel", "charging_station": "Charging", "drinking_water":
    "Drinking water", "post_office": "Post office", "police": "Police", "ice_cream": "Ice cream",
    "bakery": "Bakery", "parking": "Parking", "library": "Library", "townhall": "Town hall",
}


def split_class(poi_class: str) -> tuple[str, str]:
    key, _, value = poi_class.partition("=")
    return key.strip().lower(), value.strip().lower()


def family_and_pictogram(poi_class: str) -> tuple[str, str]:
    """(board family, pictogram name) for an OSM "key=value" class."""
    key, value = split_class(poi_class)
    if value == "cafe" or value == "ice_cream":
        return "cafe", "cafe"
    if value == "restaurant" or value == "food_court":
        return "restaurant", "restaurant"
    if value == "fast_food":
        return "fast_food", "burger"
    if value in {"bar", "pub", "biergarten", "nightclub"}:
        return "bar", "bar"
    if value in _HEALTH or key == "healthcare":
        return "health", "cross"
    if value == "toilets":
        return "toilets", "wc"
    if value in {"bus_stop", "bus_station"} or (key == "public_transport" and value == "platform"):
        return "transport", "bus"
    if key == "railway" or value in {"station", "subway_entrance", "tram_stop", "halt", "train_station"}:
        return "transport", "train"
    if value in _LODGING:
        return "lodging", "bed"
    if value in _FINANCE:
        return "finance", "money"
    if value in {"fuel", "charging_station"}:
        return "fuel", "fuel"
    if value in {"drinking_water", "water_point"}:
        return "water", "drop"
    if value == "post_office":
        return "public", "envelope"
    if value == "parking":
        return "transport", "parking"
    if value in _PUBLIC:
        return "public", "dot"
    if key == "shop":
        return ("grocery", "cart") if value in _GROCERY else ("shop", "bag")
    return "generic", "dot"


def generic_word(poi_class: str) -> str:
    _, value = split_class(poi_class)
    return GENERIC_WORDS.get(value) or (value.replace("_", " ").capitalize() if value else "Shop")


def board_style(poi_class: str, brand: Optional[str], name: str) -> tuple[BoardStyle, str]:
    """(board style, pictogram) for a POI: its brand's colours if known, else its family's."""
    family, pictogram = family_and_pictogram(poi_class)
    for candidate in (brand or "", name):
        style = _brand_style(brand_key(candidate)) if candidate else None
        if style is not None:
            return style, style.pictogram or pictogram
    return BoardStyle(FAMILY_BOARD[family], (255, 255, 255)), pictogram


_BRAND_PREFIXES = sorted((k for k in BRANDS if len(k) >= 4), key=lambda k: (-len(k), k))


def _brand_style(key: str) -> Optional[BoardStyle]:
    """Exact match, else the longest brand the name starts with ("Starbucks Coffee" -> starbucks)."""
    if key in BRANDS:
        return BRANDS[key]
    for prefix in _BRAND_PREFIXES:
        if key.startswith(prefix):
            return BRANDS[prefix]
    return None

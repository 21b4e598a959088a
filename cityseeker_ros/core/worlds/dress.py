"""Dress a CitySeeker release city (topology and episodes, no imagery) with synthetic buildings and signs.

The release gives a street graph and ground-truth episodes but no panoramas we may ship, so the
renderer needs a scene to draw. Every street edge gets a box tower on each side, set back from the
centreline and kept clear of every other street; every ground-truth target (and every intermediate
goal of a two-stage episode) gets a storefront sign that satisfies its request; and filler
storefronts from real Hong Kong brands that satisfy none of the city's requests keep the targets
from being the only signs in view. Everything is a deterministic function of the graph, the
episodes and `seed`, and everything is synthetic: nothing here says where real shops are.

The request table (REQUESTS) says, for each request string of the release, which POIs satisfy it
(a `needs.Need`, taken from the catalogue where it has the request) and which storefronts to put up
for it (`Offer`s). Unknown requests fall back to generic rules (see `spec_for`).
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import numpy as np
import shapely
from pyproj import Transformer
from scipy.spatial import cKDTree
from shapely.geometry import LineString, Point, Polygon

from cityseeker_ros.core.datasets.cityseeker import CONNECTIONS, QUESTIONS, load_city
from cityseeker_ros.core.infra.files import sha256_file
from cityseeker_ros.core.tasks.episode import CATEGORY_NAMES, World
from cityseeker_ros.core.worlds.folder import write_world
from cityseeker_ros.core.worlds.needs import (
    ABSTRACT,
    BASIC,
    BRAND,
    INCLUSIVE,
    LATENT,
    NEEDS,
    PREFERENCE,
    TRANSPORT,
    Need,
    nearest,
)
from cityseeker_ros.core.worlds.scene import Building, Poi, Scene
from cityseeker_ros.core.worlds.tasks import TaskSet, TaskSettings, WorldTask

DRESS_VERSION = "1"

FRONT_M = 8.0  # street centreline to facade: a two-lane road plus a sidewalk
DEPTH_M = 12.0
CLEARANCE_M = 7.5  # no dressed box comes nearer any street centreline (< FRONT_M so its own street passes)
JUNCTION_M = FRONT_M  # boxes start this far along from a junction: corners line up with the cross street
OVERLAP_M = 1.0  # boxes reach past their edge so gentle bends show no gaps
MIN_WIDTH_M = 4.0
HEIGHT_RANGE_M = (30.0, 120.0)
LEVEL_M = 3.2
STYLES = 8
SIGN_OFFSET_M = 0.05  # signs float just off the wall so renderers do not z-fight (as in worlds.osm)
SIGN_GAP_M = 5.0  # two signs closer than this would overlap
HOST_SEARCH_M = 20.0  # a target sign goes on a facade within this of its node, else on a kiosk
VISIBLE_M = 50.0  # the paper's visibility radius
FILLER_SPACING_M = 32.0  # one filler storefront per this much facade, on average (25-40 m)
KIOSK_WIDTH_M, KIOSK_DEPTH_M, KIOSK_HEIGHT_M = 6.0, 4.0, 4.0
KIOSK_CLEARANCE_M = 3.0
TARGET_PREFIX, FILLER_PREFIX = "dress/poi/", "dress/filler/"

# --- the request table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """A storefront that can be put up: its class, bilingual name, chain brand and fact tags."""

    poi_class: str
    name: str
    brand: Optional[str] = None
    tags: tuple[tuple[str, str], ...] = ()

    def with_tags(self, **tags: str) -> Offer:
        return replace(self, tags=tuple(sorted({**dict(self.tags), **tags}.items())))

    def as_poi(self) -> Poi:
        """A placeless POI, so the catalogue's matchers can judge the offer."""
        return Poi("", self.name, self.brand, self.poi_class, poi_tags(self), 0.0, 0.0, (0.0, 0.0), 0.0, None, ())


@dataclass(frozen=True)
class RequestSpec:
    """What satisfies a request (any of `needs`; two-stage requests have one per stage) and what to build."""

    request: str
    needs: tuple[Need, ...]
    offers: tuple[Offer, ...]
    stages: tuple[RequestSpec, ...] = field(default=())

    def satisfied_by(self, poi: Poi) -> bool:
        return any(n.satisfied_by(poi) for n in self.needs)


def poi_tags(offer: Offer) -> dict[str, str]:
    key, _, value = offer.poi_class.partition("=")
    zh, en = _split_name(offer.name)
    tags = {key: value, **dict(offer.tags), "name": offer.name, "source": "synthetic"}
    if zh:
        tags["name:zh"] = zh
    if en:
        tags["name:en"] = en
    if offer.brand:
        tags["brand"] = offer.brand
    return tags


def _split_name(name: str) -> tuple[str, str]:
    """'周大福 Chow Tai Fook' -> ('周大福', 'Chow Tai Fook'); either part may be empty."""
    cjk = [w for w in name.split() if re.search(r"[\u3400-\u9fff]", w)]
    latin = [w for w in name.split() if not re.search(r"[\u3400-\u9fff]", w)]
    return " ".join(cjk), " ".join(latin)


def _o(poi_class: str, name: str, brand: Optional[str] = None, **tags: str) -> Offer:
    return Offer(poi_class, name, brand, tuple(sorted((k.replace("__", ":"), v) for k, v in tags.items())))


def _each(offers: tuple[Offer, ...], **tags: str) -> tuple[Offer, ...]:
    return tuple(o.with_tags(**{k.replace("__", ":"): v for k, v in tags.items()}) for o in offers)


# Real Hong Kong chains where one fits; plain descriptive names (no real branch) otherwise.
RESTAURANTS = (
    _o("amenity=restaurant", "翠華餐廳 Tsui Wah Restaurant", "Tsui Wah", cuisine="cantonese"),
    _o("amenity=restaurant", "太興燒味 Tai Hing Roast Restaurant", "Tai Hing", cuisine="cantonese"),
    _o("amenity=restaurant", "譚仔雲南米線 TamJai Yunnan Mixian", "TamJai", cuisine="noodle"),
    _o("amenity=restaurant", "稻香 Tao Heung", "Tao Heung", cuisine="cantonese"),
)
BANQUET = (
    _o("amenity=restaurant", "美心皇宮 Maxim's Palace", "Maxim's", cuisine="dim_sum"),
    _o("amenity=restaurant", "利苑酒家 Lei Garden", "Lei Garden", cuisine="cantonese"),
    _o("amenity=restaurant", "翠園 Jade Garden", "Jade Garden", cuisine="cantonese"),
    _o("amenity=restaurant", "鴻星海鮮酒家 Super Star Seafood Restaurant", "Super Star", cuisine="seafood"),
)
FAST_FOOD = (
    _o("amenity=fast_food", "大家樂 Café de Coral", "Café de Coral", cuisine="cantonese"),
    _o("amenity=fast_food", "大快活 Fairwood", "Fairwood", cuisine="cantonese"),
)
BURGERS = (
    _o("amenity=fast_food", "麥當勞 McDonald's", "McDonald's", cuisine="burger", internet_access="wlan"),
    _o("amenity=fast_food", "肯德基 KFC", "KFC", cuisine="chicken"),
)
BAKERIES = (
    _o("shop=bakery", "聖安娜餅屋 Saint Honoré Cake Shop", "Saint Honoré"),
    _o("shop=bakery", "美心西餅 Maxim's Cakes", "Maxim's Cakes"),
    _o("shop=bakery", "東海堂 Arome Bakery", "Arome"),
)
SEVEN_ELEVEN = (_o("shop=convenience", "7-Eleven 便利店", "7-Eleven", opening_hours="24/7"),)
CONVENIENCE = SEVEN_ELEVEN + (_o("shop=convenience", "OK便利店 Circle K", "Circle K", opening_hours="24/7"),)
BIG_SUPERMARKETS = (
    _o("shop=supermarket", "百佳超級市場 ParknShop", "ParknShop"),
    _o("shop=supermarket", "惠康 Wellcome", "Wellcome"),
)
SUPERMARKETS = BIG_SUPERMARKETS + (_o("shop=supermarket", "華潤萬家 CR Vanguard", "CR Vanguard"),)
MALLS = (
    _o("shop=department_store", "AEON 永旺百貨", "AEON"),
    _o("shop=department_store", "一田百貨 YATA", "YATA"),
    _o("shop=department_store", "崇光百貨 SOGO", "SOGO"),
    _o("shop=department_store", "永安百貨 Wing On", "Wing On"),
    _o("shop=mall", "海濱廣場 Harbourside Plaza"),
)
BIG_BANKS = (
    _o("amenity=bank", "中國銀行(香港) Bank of China (Hong Kong)", "Bank of China", atm="yes"),
    _o("amenity=bank", "恒生銀行 Hang Seng Bank", "Hang Seng Bank", atm="yes"),
)
BANKS = BIG_BANKS + (
    _o("amenity=bank", "滙豐 HSBC", "HSBC", atm="yes"),
    _o("amenity=bank", "渣打銀行 Standard Chartered", "Standard Chartered", atm="yes"),
    _o("amenity=bank", "東亞銀行 The Bank of East Asia", "Bank of East Asia", atm="yes"),
)
ATMS = (
    _o("amenity=atm", "銀通櫃員機 JETCO ATM", "JETCO"),
    _o("amenity=atm", "滙豐自動櫃員機 HSBC ATM", "HSBC"),
)
HOTELS = (
    _o("tourism=hotel", "宜必思酒店 ibis Hotel", "ibis"),
    _o("tourism=hotel", "富豪酒店 Regal Hotel", "Regal"),
    _o("tourism=hotel", "帝盛酒店 Dorsett Hotel", "Dorsett"),
    _o("tourism=hotel", "快捷假日酒店 Holiday Inn Express", "Holiday Inn Express"),
)
SCHOOLS = (
    _o("amenity=school", "紅灣小學 Red Bay Primary School", isced__level="1"),
    _o("amenity=school", "海濱中學 Harbourside Secondary School", isced__level="2;3"),
)
CLINICS = (
    _o("amenity=clinic", "卓健醫療中心 Quality HealthCare Medical Centre", "Quality HealthCare"),
    _o("amenity=clinic", "康健醫療中心 Town Health Medical Centre", "Town Health"),
    _o("amenity=clinic", "普通科門診診所 General Out-patient Clinic", operator="Hospital Authority"),
)
PHARMACIES = (_o("amenity=pharmacy", "社區藥房 Community Pharmacy", dispensing="yes"),)
CHEMISTS = (
    _o("shop=chemist", "屈臣氏 Watsons", "Watsons"),
    _o("shop=chemist", "萬寧 Mannings", "Mannings"),
)
TOILETS = (_o("amenity=toilets", "公廁 Public Toilet", operator="FEHD"),)
BUS_STATIONS = (
    _o("amenity=bus_station", "巴士總站 Bus Terminus"),
    _o("amenity=bus_station", "公共運輸交匯處 Public Transport Interchange"),
)
TO_AIRPORT = (
    _o("highway=bus_stop", "機場巴士 A21 Airport Bus", route_ref="A21", destination="Airport"),
    _o("railway=subway_entrance", "港鐵站出口 MTR Station Exit", "MTR"),
    _o("amenity=taxi", "的士站 Taxi Stand"),
)
COFFEE = (
    _o("amenity=cafe", "Pacific Coffee 太平洋咖啡", "Pacific Coffee", cuisine="coffee_shop", internet_access="wlan"),
    _o("amenity=cafe", "檀島咖啡餅店 Honolulu Coffee Shop", "Honolulu Coffee Shop", cuisine="coffee_shop"),
)
STARBUCKS = (_o("amenity=cafe", "星巴克 Starbucks", "Starbucks", cuisine="coffee_shop", internet_access="wlan"),)
LIBRARIES = (_o("amenity=library", "公共圖書館 Public Library", internet_access="wlan"),)
GYMS = (
    _o("leisure=fitness_centre", "Fitness First 健身中心", "Fitness First"),
    _o("leisure=fitness_centre", "Pure Fitness 健身中心", "Pure Fitness"),
    _o("leisure=fitness_centre", "Anytime Fitness 健身中心", "Anytime Fitness", opening_hours="24/7"),
)
EXERCISE = GYMS + (
    _o("leisure=swimming_pool", "游泳池 Swimming Pool", operator="LCSD"),
    _o("leisure=sports_centre", "體育館 Sports Centre", operator="LCSD"),
)
CINEMAS = (
    _o("amenity=cinema", "MCL戲院 MCL Cinemas", "MCL"),
    _o("amenity=cinema", "英皇戲院 Emperor Cinemas", "Emperor Cinemas"),
    _o("amenity=cinema", "嘉禾電影 Golden Harvest Cinemas", "Golden Harvest"),
)
PARKING = (
    _o("amenity=parking", "威信停車場 Wilson Parking", "Wilson Parking", parking="multi-storey"),
    _o("amenity=parking", "公眾停車場 Public Car Park", parking="multi-storey"),
)
DRINKS = (
    _o("shop=beverages", "霸王茶姬 Chagee", "Chagee", cuisine="bubble_tea"),
    _o("shop=beverages", "CoCo都可 CoCo Fresh Tea & Juice", "CoCo", cuisine="bubble_tea"),
    _o("shop=beverages", "一芳台灣水果茶 Yi Fang Taiwan Fruit Tea", "Yi Fang", cuisine="bubble_tea"),
)
PHONE_SHOPS = (
    _o("shop=mobile_phone", "csl 電訊 csl", "csl", service="prepaid_top_up"),
    _o("shop=mobile_phone", "數碼通 SmarTone", "SmarTone", service="prepaid_top_up"),
    _o("shop=mobile_phone", "中國移動香港 China Mobile Hong Kong", "China Mobile", service="prepaid_top_up"),
)
KIDS = (
    _o("shop=toys", "玩具\"反\"斗城 Toys\"R\"Us", "Toys\"R\"Us"),
    _o("leisure=playground", "兒童遊樂場 Children's Playground", operator="LCSD"),
)
GREENGROCERS = (
    _o("shop=greengrocer", "鮮果蔬菜 Fresh Fruit & Vegetables"),
    _o("amenity=marketplace", "街市 Wet Market", operator="FEHD"),
)
APARTMENTS = (
    _o("building=apartments", "海景大廈 Harbour View Mansion", entrance="main"),
    _o("building=apartments", "紅灣苑 Red Bay Court", entrance="main"),
)
BUS_STOPS = (_o("highway=bus_stop", "巴士站 Bus Stop"),)
MTR = (_o("railway=station", "港鐵站 MTR Station", "MTR"),)
TRAMS = (_o("railway=tram_stop", "電車站 Tram Stop", "Hong Kong Tramways"),)
TAXIS = (_o("amenity=taxi", "的士站 Taxi Stand"),)
FOUNTAINS = (_o("amenity=drinking_water", "飲水機 Drinking Fountain", operator="LCSD"),)
POST_OFFICES = (_o("amenity=post_office", "郵政局 Post Office", "Hongkong Post"),)
VEGETARIAN = (_o("amenity=restaurant", "功德林 Kung Tak Lam", "Kung Tak Lam", cuisine="vegetarian",
                 diet__vegetarian="only"),)
ITALIAN = (
    _o("amenity=restaurant", "PizzaExpress 意大利薄餅", "PizzaExpress", cuisine="pizza"),
    _o("amenity=restaurant", "必勝客 Pizza Hut", "Pizza Hut", cuisine="pizza"),
)
ASIAN = (
    _o("amenity=restaurant", "元気寿司 Genki Sushi", "Genki Sushi", cuisine="sushi"),
    _o("amenity=restaurant", "翠華餐廳 Tsui Wah Restaurant", "Tsui Wah", cuisine="chinese"),
)
COMFORTABLE = {"ambience": "comfortable", "description": "quiet, spacious dining room with soft seating"}
FAMILY = {"family_friendly": "yes", "group_dining": "yes", "description": "large round tables for groups"}
ROADSIDE_PARKING = {"parking": "street_side", "description": "metered parking spaces at the kerb"}

_CATALOGUE = {n.request: n for n in NEEDS}
ACCESSIBLE = ("yes", "designated")


def _spec(request: str, offers: tuple[Offer, ...], need: Optional[Need] = None) -> RequestSpec:
    return RequestSpec(request, (need or _CATALOGUE[request],), offers)


def _brand(request: str, names: str, offers: tuple[Offer, ...]) -> RequestSpec:
    return RequestSpec(request, (nearest(request, BRAND, names=names),), offers)


def _prefers(request: str, offers: tuple[Offer, ...], tags: dict[str, str]) -> RequestSpec:
    return RequestSpec(request, (nearest(request, PREFERENCE, ("amenity=restaurant",),
                                         **{k: (v,) for k, v in tags.items() if k != "description"}),),
                       _each(offers, **tags))


_phone = _CATALOGUE["My phone balance is low and I need to recharge it"]
REQUESTS: dict[str, RequestSpec] = {s.request: s for s in (
    # Basic POI
    _spec("restaurant", RESTAURANTS),
    _spec("convenience store", CONVENIENCE),
    _spec("supermarket", SUPERMARKETS),
    _spec("shopping mall", MALLS),
    _spec("bank", BANKS),
    _spec("hotel", HOTELS),
    _spec("pharmacy", PHARMACIES),
    _spec("healthcare facility", CLINICS + PHARMACIES),
    _spec("bakery", BAKERIES),
    _spec("post office", POST_OFFICES),
    _spec("primary and secondary school", SCHOOLS),
    RequestSpec("clinic", (nearest("clinic", BASIC, ("amenity=clinic", "amenity=doctors", "healthcare=clinic",
                                                     "healthcare=doctor")),), CLINICS),
    # Brand-Specific
    _brand("KFC or McDonald's", r"kfc|mcdonald|肯德基|麥當勞", BURGERS),
    _brand("7-Eleven", r"7-eleven", SEVEN_ELEVEN),
    _brand("Bank of China or Hang Seng Bank", r"bank of china|hang seng|中國銀行|恒生", BIG_BANKS),
    _brand("ParknShop百佳 or Wellcome惠康 supermarket", r"parknshop|wellcome|百佳|惠康", BIG_SUPERMARKETS),
    _brand("Starbucks", r"starbucks|星巴克", STARBUCKS),
    _brand("Watsons or Mannings", r"watsons|mannings|屈臣氏|萬寧", CHEMISTS),
    # Transportation Hub
    _spec("bus station", BUS_STATIONS),
    _spec("bus stop", BUS_STOPS + BUS_STATIONS),
    _spec("subway or train station", MTR),
    _spec("tram stop", TRAMS),
    _spec("taxi stand", TAXIS),
    # Latent POI
    _spec("restroom", TOILETS + BURGERS),
    _spec("ATM", ATMS + BANKS),
    _spec("coffee shop", COFFEE + STARBUCKS),
    _spec("gym", GYMS),
    _spec("cinema", CINEMAS),
    _spec("parking lot", PARKING),
    _spec("drinking water", FOUNTAINS),
    # Abstract Demand
    _spec("I am hungry", FAST_FOOD + BAKERIES + RESTAURANTS),
    _spec("I am thirsty", DRINKS + COFFEE + CONVENIENCE),
    _spec("I am not feeling well", CLINICS + PHARMACIES),
    _spec("I want to find a place to work with Wi-Fi", LIBRARIES + COFFEE[:1] + STARBUCKS),
    _spec("I want to rest and read", LIBRARIES + COFFEE),
    # Fortress and Broadway sell SIM cards and top-ups, so electronics shops count here too.
    RequestSpec(_phone.request, (replace(_phone, classes=_phone.classes + ("shop=electronics",)),), PHONE_SHOPS),
    _spec("I want to bring my child to play", KIDS),
    _spec("I want to exercise", EXERCISE),
    _spec("I want to buy fruits and vegetables", GREENGROCERS + SUPERMARKETS),
    _spec("I need to go to the airport", TO_AIRPORT),
    # Inclusive Infrastructure
    _spec("bank with an accessible entrance", _each(BANKS, wheelchair="yes")),
    RequestSpec("apartment building with an accessible entrance",
                (nearest("apartment building with an accessible entrance", INCLUSIVE,
                         ("building=apartments", "building=residential"), wheelchair=ACCESSIBLE),),
                _each(APARTMENTS, wheelchair="yes")),
    _spec("restaurant with an accessible entrance", _each(RESTAURANTS, wheelchair="yes")),
    _spec("shop with an accessible entrance", _each(SUPERMARKETS + CONVENIENCE, wheelchair="yes")),
    _spec("hotel with an accessible entrance", _each(HOTELS, wheelchair="yes")),
    _spec("pharmacy with an accessible entrance", _each(PHARMACIES, wheelchair="yes")),
    _spec("wheelchair-accessible restroom", _each(TOILETS, wheelchair="yes")),
    _spec("café with an accessible entrance", _each(COFFEE + STARBUCKS, wheelchair="yes")),
    # Semantic Preference
    _spec("restaurant with outdoor seating", _each(RESTAURANTS[:2] + ITALIAN[:1], outdoor_seating="yes")),
    _spec("café with outdoor seating", _each(COFFEE + STARBUCKS, outdoor_seating="yes")),
    _spec("vegetarian-friendly restaurant", VEGETARIAN),
    _spec("café with Wi-Fi", COFFEE[:1] + STARBUCKS),
    _spec("restaurant with takeaway", _each(FAST_FOOD + RESTAURANTS[:3], takeaway="yes")),
    _spec("Italian restaurant", ITALIAN),
    _spec("Asian restaurant", ASIAN),
    _prefers("restaurant with a comfortable environment", BANQUET[:3], COMFORTABLE),
    _prefers("group or family-friendly restaurant", BANQUET[:1] + BANQUET[3:] + RESTAURANTS[3:], FAMILY),
    _prefers("restaurant with roadside parking", RESTAURANTS[:3], ROADSIDE_PARKING),
)}

_ACCESSIBLE_SUFFIX = " with an accessible entrance"
_KEYWORD_CLASSES = (("supermarket", "shop=supermarket"), ("bank", "amenity=bank"), ("restaurant", "amenity=restaurant"),
                    ("caf", "amenity=cafe"), ("coffee", "amenity=cafe"), ("pharmac", "amenity=pharmacy"),
                    ("hotel", "tourism=hotel"), ("store", "shop=convenience"), ("burger", "amenity=fast_food"),
                    ("pizza", "amenity=restaurant"), ("tea", "shop=beverages"))


def spec_for(request: str, two_stage: bool = False) -> RequestSpec:
    """The table's entry, else a generic rule, so any release city can be dressed.

    Two-stage requests ("bank and shopping mall") are satisfied by either stage's POI and build
    each stage's; "<x> with an accessible entrance" is <x> with wheelchair=yes; "A or B" is a brand
    request; catalogue requests get a generic storefront of their first class; anything else
    gets a sign that names the request."""
    if two_stage and " and " in request:
        stages = tuple(spec_for(part.strip()) for part in request.split(" and "))
        return RequestSpec(request, tuple(n for s in stages for n in s.needs), stages[-1].offers, stages)
    if request in REQUESTS:
        return REQUESTS[request]
    if request.endswith(_ACCESSIBLE_SUFFIX) and request[:-len(_ACCESSIBLE_SUFFIX)] in REQUESTS:
        base = REQUESTS[request[:-len(_ACCESSIBLE_SUFFIX)]]
        needs = tuple(replace(n, request=request, category=INCLUSIVE, attributes={**n.attributes,
                                                                                   "wheelchair": ACCESSIBLE})
                      for n in base.needs)
        return RequestSpec(request, needs, _each(base.offers, wheelchair="yes"))
    if request in _CATALOGUE:  # a catalogue request this table does not name (the catalogue grew)
        need = _CATALOGUE[request]
        cls = need.classes[0] if need.classes else "shop=yes"
        offer = _o(cls, request[:1].upper() + request[1:], **{k: v[0] for k, v in need.attributes.items()})
        return RequestSpec(request, (need,), (offer,))
    if " or " in request:
        names = [p.strip() for p in request.split(" or ") if p.strip()]
        offers = tuple(_o(_guess_class(n), n, n) for n in names)
        return _brand(request, "|".join(re.escape(n) for n in names), offers)
    return RequestSpec(request, (nearest(request, BASIC, names=rf"(^|\W){re.escape(request)}($|\W)"),),
                       (_o("shop=yes", request[:1].upper() + request[1:], description=request),))


def _guess_class(text: str) -> str:
    low = text.lower()
    return next((cls for word, cls in _KEYWORD_CLASSES if word in low), "shop=yes")


# Filler storefronts: real Hong Kong retail chains that none of the usual requests asks for.
FILLERS = (
    _o("shop=jewelry", "周大福 Chow Tai Fook", "Chow Tai Fook"),
    _o("shop=jewelry", "周生生 Chow Sang Sang", "Chow Sang Sang"),
    _o("shop=jewelry", "六福珠寶 Lukfook Jewellery", "Lukfook"),
    _o("shop=jewelry", "謝瑞麟 TSL Jewellery", "TSL"),
    _o("shop=clothes", "佐丹奴 Giordano", "Giordano"),
    _o("shop=clothes", "堡獅龍 Bossini", "Bossini"),
    _o("shop=clothes", "G2000", "G2000"),
    _o("shop=clothes", "班尼路 Baleno", "Baleno"),
    _o("shop=cosmetics", "莎莎 Sasa", "Sasa"),
    _o("shop=cosmetics", "卓悅 Bonjour", "Bonjour"),
    _o("shop=electronics", "豐澤 Fortress", "Fortress"),
    _o("shop=electronics", "百老匯 Broadway", "Broadway"),
    _o("office=estate_agent", "中原地產 Centaline Property", "Centaline"),
    _o("office=estate_agent", "美聯物業 Midland Realty", "Midland"),
    _o("office=estate_agent", "利嘉閣地產 Ricacorp Properties", "Ricacorp"),
    _o("shop=optician", "眼鏡88 Optical 88", "Optical 88"),
    _o("shop=watches", "時間廊 City Chain", "City Chain"),
)


def world_specs(world: World) -> dict[str, RequestSpec]:
    """Every request of the world (episodes and TCC target sets) with its table entry."""
    two_stage = {e.request for e in world.episodes if e.category == CATEGORY_NAMES["question2"]}
    requests = sorted({e.request for e in world.episodes} | set(world.category_targets))
    return {r: spec_for(r, r in two_stage) for r in requests}


def filler_pool(specs: dict[str, RequestSpec]) -> tuple[Offer, ...]:
    """The fillers that satisfy none of `specs`."""
    return tuple(o for o in FILLERS if not any(s.satisfied_by(o.as_poi()) for s in specs.values()))


def filler_conflicts(scene: Scene, specs: dict[str, RequestSpec]) -> list[tuple[str, str]]:
    """(filler POI id, request) for every filler that would satisfy a request: should be empty."""
    return [(p.id, r) for p in scene.pois if p.id.startswith(FILLER_PREFIX)
            for r, s in specs.items() if s.satisfied_by(p)]


# --- geometry ---------------------------------------------------------------------------------------


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) from the parts, the same in every process (unlike hash())."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0 ** 64


def _azimuth(v: np.ndarray) -> float:
    return round(math.degrees(math.atan2(float(v[0]), float(v[1]))) % 360.0, 3)


@dataclass
class _Block:
    """A dressed box and its geometry, kept while dressing. Its first face looks onto its own street."""

    building: Building
    polygon: Polygon
    ring: np.ndarray  # (n, 2) CCW, no closing point


class _Dresser:
    def __init__(self, world: World, seed: int) -> None:
        self.world, self.graph, self.seed = world, world.graph, seed
        self.scene = Scene(self.graph.frame.lat0, self.graph.frame.lon0)
        frame = self.scene.frame
        self.ids = sorted(self.graph.nodes)
        latlon = self.graph.latlon(self.ids)
        self.xy = frame.to_xy(latlon[:, 0], latlon[:, 1]).reshape(-1, 2)
        self.pos = {n: self.xy[i] for i, n in enumerate(self.ids)}
        self.node_tree = cKDTree(self.xy)
        self.to_lonlat = Transformer.from_crs(
            f"+proj=aeqd +lat_0={frame.lat0} +lon_0={frame.lon0} +ellps=WGS84 +units=m", "EPSG:4326",
            always_xy=True)
        pairs = sorted({tuple(sorted((e.source, e.target))) for e in self.graph.edges if e.source != e.target})
        self.streets = [(a, b) for a, b in pairs if np.linalg.norm(self.pos[b] - self.pos[a]) > 1e-3]
        degree: dict[str, int] = defaultdict(int)
        for a, b in pairs:
            degree[a] += 1
            degree[b] += 1
        self.junctions = {n for n, d in degree.items() if d >= 3}
        self.street_tree = shapely.STRtree([LineString([self.pos[a], self.pos[b]]) for a, b in self.streets]) \
            if self.streets else None
        self.blocks: list[_Block] = []
        self.block_tree: Optional[shapely.STRtree] = None

    # -- buildings --

    def dress_buildings(self) -> None:
        """Try each slot's boxes from the full one down, all slots at once per try, keep the first clear one."""
        slots = [(a, b, side) for a, b in self.streets for side in (1, -1)]
        if not slots:
            return
        spans = np.array([self._span(a, b) for a, b, _ in slots])  # (n, 3): u0, u1, usable
        origin = np.array([self.pos[a] for a, _, _ in slots])
        along = np.array([self.pos[b] for _, b, _ in slots]) - origin
        along /= np.linalg.norm(along, axis=1, keepdims=True)
        side = np.array([s for _, _, s in slots], dtype=float)[:, None]
        outward = side * np.stack([-along[:, 1], along[:, 0]], axis=1)
        width = spans[:, 1] - spans[:, 0]
        can_trim = width / 3 >= MIN_WIDTH_M / 2
        chosen: dict[int, np.ndarray] = {}
        pending = np.flatnonzero(spans[:, 2] > 0)
        for depth in (DEPTH_M, 8.0, 5.0):
            for cut0, cut1 in ((0, 0), (1, 0), (0, 1), (1, 1)):
                trying = pending if not (cut0 or cut1) else pending[can_trim[pending]]
                if not len(trying):
                    continue
                q = width[trying] / 3
                s0 = spans[trying, 0] + cut0 * q
                s1 = spans[trying, 1] - cut1 * q
                rings = _rings(origin[trying], along[trying], outward[trying], s0, s1, depth, side[trying, 0])
                hit = self.street_tree.query(shapely.polygons(rings), predicate="dwithin", distance=CLEARANCE_M)[0]
                clear = np.ones(len(trying), dtype=bool)
                clear[hit] = False
                for k in np.flatnonzero(clear):
                    chosen[int(trying[k])] = rings[k]
                pending = np.setdiff1d(pending, trying[clear])
        low, high = HEIGHT_RANGE_M
        for slot in sorted(chosen):
            a, b, sd = slots[slot]
            bid = f"dress/{a}-{b}/{'L' if sd > 0 else 'R'}"
            height = round(low + (high - low) * _unit(self.seed, a, b, sd, "height") ** 2, 1)
            footprint = tuple((round(float(x), 3), round(float(y), 3)) for x, y in chosen[slot])
            building = Building(bid, footprint, height, max(1, round(height / LEVEL_M)),
                                int(_unit(self.seed, bid, "style") * STYLES), synthetic=True)
            self.blocks.append(_Block(building, Polygon(footprint), np.asarray(footprint)))
        self._index_blocks()

    def _index_blocks(self) -> None:
        self.block_tree = shapely.STRtree([b.polygon for b in self.blocks]) if self.blocks else None

    def _span(self, a: str, b: str) -> tuple[float, float, float]:
        """Along-street extent of the edge's boxes (u0, u1, 1) measured from `a`, or (0, 0, 0) when none fits."""
        length = float(np.linalg.norm(self.pos[b] - self.pos[a]))
        u0 = JUNCTION_M if a in self.junctions else -OVERLAP_M
        u1 = length - JUNCTION_M if b in self.junctions else length + OVERLAP_M
        if u1 - u0 >= MIN_WIDTH_M:
            return u0, u1, 1.0
        if a in self.junctions or b in self.junctions:
            return 0.0, 0.0, 0.0
        mid = (u0 + u1) / 2
        return mid - MIN_WIDTH_M / 2, mid + MIN_WIDTH_M / 2, 1.0

    # -- signs --

    def faces(self, block: _Block) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(start, end, outward unit normal) of each face; CCW rings have the outside on the right."""
        ring = block.ring
        out = []
        for i in range(len(ring)):
            p, q = ring[i], ring[(i + 1) % len(ring)]
            v = q - p
            n = float(np.linalg.norm(v))
            if n > 1e-6:
                out.append((p, q, np.array([v[1], -v[0]]) / n))
        return out

    def inside_other(self, point: np.ndarray, exclude: Optional[str] = None) -> bool:
        if self.block_tree is None:
            return False
        hits = self.block_tree.query(Point(point), predicate="within")
        return any(self.blocks[h].building.id != exclude for h in hits.tolist())

    def faces_nearest(self, anchor: np.ndarray, normal: np.ndarray) -> bool:
        """Does a sign here look towards the street node nearest to it (not at a street behind)?"""
        return float(np.dot(self.xy[int(self.node_tree.query(anchor)[1])] - anchor, normal)) > 0

    def visible(self, point: np.ndarray) -> tuple[str, ...]:
        idx = self.node_tree.query_ball_point(point, VISIBLE_M)
        dist = {i: round(float(np.linalg.norm(self.xy[i] - point)), 6) for i in idx}
        return tuple(self.ids[i] for i in sorted(idx, key=lambda i: (dist[i], self.ids[i])))

    def host_sign(self, node: str, used: list[np.ndarray]) -> Optional[tuple[np.ndarray, np.ndarray, str]]:
        """The facade spot nearest `node` that faces it, is free and is seen best from it: anchor, normal, host."""
        if self.block_tree is None:
            return None
        p = self.pos[node]
        spots: list[tuple[np.ndarray, np.ndarray, int, float]] = []  # anchor, normal, block, position on face
        for h in sorted(self.block_tree.query(Point(p), predicate="dwithin", distance=HOST_SEARCH_M).tolist()):
            for s, e, n in self.faces(self.blocks[h]):
                v = e - s
                length = float(np.linalg.norm(v))
                t = float(np.clip(np.dot(p - s, v) / length ** 2, 0.0, 1.0))
                if float(np.dot(p - (s + t * v), n)) <= 0.5:
                    continue  # the node is behind or beside this face
                margin = min(1.5, length / 2) / length
                for tk in sorted({round(float(np.clip(t + k * SIGN_GAP_M / length, margin, 1 - margin)), 6)
                                  for k in range(-3, 4)}):
                    spots.append((s + tk * v + SIGN_OFFSET_M * n, n, h, tk))
        if not spots:
            return None
        anchors = np.array([a for a, _, _, _ in spots])
        ok = np.ones(len(spots), dtype=bool)
        if used:
            ok &= cKDTree(np.array(used)).query(anchors)[0] >= SIGN_GAP_M
        points, blocks = self.block_tree.query(shapely.points(anchors), predicate="within")
        for i, h in zip(points.tolist(), blocks.tolist()):
            if h != spots[i][2]:
                ok[i] = False  # hidden inside a neighbouring box
        nearest = self.node_tree.query(anchors)[1]
        normals = np.array([n for _, n, _, _ in spots])
        ok &= np.einsum("ij,ij->i", self.xy[nearest] - anchors, normals) > 0  # faces the street it is seen from
        dist = np.linalg.norm(anchors - p, axis=1)
        best = min((i for i in np.flatnonzero(ok).tolist()),
                   key=lambda i: (self.ids[nearest[i]] != node, round(float(dist[i]), 6),
                                  self.blocks[spots[i][2]].building.id, spots[i][3]), default=None)
        if best is None:
            return None
        anchor, normal, h, _ = spots[best]
        return anchor, normal, self.blocks[h].building.id

    def kiosk(self, node: str, used: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, str]:
        """A small synthetic kiosk beside `node` for a target no facade can host: the first spot that is
        clear of every street, overlaps no box, crowds no sign and faces its nearest node, else the least bad."""
        p = self.pos[node]
        directions = sorted({_azimuth(self.pos[e.target] - p) for e in self.graph.out_edges(node)
                             if np.linalg.norm(self.pos[e.target] - p) > 1e-3}) or [0.0]
        used_tree = cKDTree(np.array(used)) if used else None
        best = None
        for az in directions:
            d = np.array([math.sin(math.radians(az)), math.cos(math.radians(az))])
            for side in (1, -1):
                facing = -side * np.array([-d[1], d[0]])  # from the kiosk towards the street
                for offset in (FRONT_M, 6.0, 4.5, 12.0):
                    for shift in (0.0, KIOSK_WIDTH_M, -KIOSK_WIDTH_M):
                        centre = p + shift * d - offset * facing
                        ring = _kiosk_ring(centre, facing)
                        poly = Polygon(ring)
                        anchor = centre + SIGN_OFFSET_M * facing
                        faults = (
                            bool(len(self.street_tree.query(poly, predicate="dwithin", distance=KIOSK_CLEARANCE_M)))
                            if self.street_tree is not None else False,
                            self.block_tree is not None and any(self.blocks[h].polygon.intersection(poly).area > 0.01
                                                                for h in self.block_tree.query(poly).tolist()),
                            used_tree is not None and bool(used_tree.query_ball_point(anchor, SIGN_GAP_M)),
                            not self.faces_nearest(anchor, facing),
                        )
                        if best is None or faults < best[0]:
                            best = (faults, ring, anchor, facing)
                        if not any(faults):
                            return self._add_kiosk(node, ring, anchor, facing)
        assert best is not None
        return self._add_kiosk(node, *best[1:])

    def _add_kiosk(self, node: str, ring: np.ndarray, anchor: np.ndarray,
                   facing: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
        bid = f"dress/kiosk/{node}/{sum(b.building.id.startswith(f'dress/kiosk/{node}/') for b in self.blocks)}"
        footprint = tuple((round(float(x), 3), round(float(y), 3)) for x, y in ring)
        building = Building(bid, footprint, KIOSK_HEIGHT_M, 1, int(_unit(self.seed, bid, "style") * STYLES),
                            synthetic=True)
        self.blocks.append(_Block(building, Polygon(footprint), np.asarray(footprint)))
        self._index_blocks()
        return anchor, facing, bid

    def make_poi(self, poi_id: str, offer: Offer, anchor: np.ndarray, normal: np.ndarray, host: str) -> Poi:
        """The POI at the millimetre-rounded anchor, so what is stored is what visibility was measured from."""
        xy = (round(float(anchor[0]), 3), round(float(anchor[1]), 3))
        lon, lat = self.to_lonlat.transform(*xy)
        return Poi(poi_id, offer.name, offer.brand, offer.poi_class, poi_tags(offer), round(float(lat), 9),
                   round(float(lon), 9), xy, _azimuth(normal), host, self.visible(np.array(xy)), signed=True)


def _rings(origin: np.ndarray, along: np.ndarray, outward: np.ndarray, s0: np.ndarray, s1: np.ndarray,
           depth: float, side: np.ndarray) -> np.ndarray:
    """(n, 4, 2) box corners, CCW with the street-facing front as the first face."""
    def at(u: np.ndarray, w: float) -> np.ndarray:
        return origin + u[:, None] * along + w * outward

    front0, front1 = at(s0, FRONT_M), at(s1, FRONT_M)
    back0, back1 = at(s0, FRONT_M + depth), at(s1, FRONT_M + depth)
    left = np.stack([front0, front1, back1, back0], axis=1)
    right = np.stack([front1, front0, back0, back1], axis=1)  # mirrored side: reversed so it stays CCW
    return np.where((side > 0)[:, None, None], left, right)


def _kiosk_ring(centre: np.ndarray, facing: np.ndarray) -> np.ndarray:
    """Kiosk corners, CCW, whose front face (the first) is centred on `centre` and looks along `facing`."""
    along = np.array([-facing[1], facing[0]])  # facing turned left
    half, back = KIOSK_WIDTH_M / 2 * along, KIOSK_DEPTH_M * facing
    return np.array([centre - half, centre + half, centre + half - back, centre - half - back])


# Requests whose storefronts are the most specific go up first, so generic ones can reuse them.
_PRIORITY = {INCLUSIVE: 0, PREFERENCE: 1, BRAND: 2, LATENT: 3, TRANSPORT: 4, ABSTRACT: 5, BASIC: 6, "question2": 7}


@dataclass
class Dressing:
    """The scene plus which POI stands for each (request, node) goal, for the task file."""

    scene: Scene
    goal_pois: dict[tuple[str, str], str]
    specs: dict[str, RequestSpec]


def _goals(world: World, specs: dict[str, RequestSpec]) -> dict[str, list[tuple[int, str, RequestSpec]]]:
    """node -> (priority, request, spec of what must stand there) for every target and stage goal."""
    code = {name: c for c, name in CATEGORY_NAMES.items()}
    category = {e.request: code[e.category] for e in world.episodes}
    goals: dict[str, dict[str, tuple[int, str, RequestSpec]]] = defaultdict(dict)
    for request, nodes in world.category_targets.items():
        spec = specs[request]
        final = spec.stages[-1] if spec.stages else spec
        for n in nodes:
            goals[n][request] = (_PRIORITY.get(category.get(request, BASIC), 6), request, final)
    for e in world.episodes:
        spec = specs[e.request]
        for k, n in enumerate(e.stage_goals):
            stage = spec.stages[min(k, len(spec.stages) - 2)] if len(spec.stages) > 1 else spec
            goals[n].setdefault(f"{e.request}#stage{k + 1}", (_PRIORITY.get(category[e.request], 6), e.request, stage))
    return {n: sorted(g.values(), key=lambda t: (t[0], t[1])) for n, g in goals.items()}


def _dress(world: World, seed: int) -> Dressing:
    specs = world_specs(world)
    dresser = _Dresser(world, seed)
    dresser.dress_buildings()
    goals = _goals(world, specs)
    ok_nodes: dict[str, set[str]] = defaultdict(set)  # request -> nodes where satisfying it is ground truth
    for n, items in goals.items():
        for _, request, _ in items:
            ok_nodes[request].add(n)

    def score(offer: Offer, node: str, request: str) -> tuple[int, int, float]:
        """Fewest requests wrongly satisfied here, most rightly satisfied, then a seeded draw."""
        poi = offer.as_poi()
        wrong = sum(node not in ok_nodes[r] and s.satisfied_by(poi) for r, s in specs.items())
        right = sum(node in ok_nodes[r] and s.satisfied_by(poi) for r, s in specs.items())
        return wrong, -right, _unit(seed, node, request, offer.name)

    pois: list[Poi] = []
    used: list[np.ndarray] = []
    goal_pois: dict[tuple[str, str], str] = {}
    for node in sorted(goals):
        here: list[Poi] = []
        for _, request, spec in goals[node]:
            found = next((p for p in here if spec.satisfied_by(p)), None)
            if found is None:
                offer = min(spec.offers, key=lambda o: score(o, node, request))
                spot = dresser.host_sign(node, used) or dresser.kiosk(node, used)
                found = dresser.make_poi(f"{TARGET_PREFIX}{node}/{len(here)}", offer, *spot)
                here.append(found)
                used.append(np.asarray(found.anchor))
            goal_pois.setdefault((request, node), found.id)
        pois.extend(here)

    pool = filler_pool(specs)
    target_tree = cKDTree(np.array(used)) if used else None
    for block in dresser.blocks if pool else ():
        bid = block.building.id
        if bid.startswith("dress/kiosk/"):
            continue
        s, e, n = dresser.faces(block)[0]
        length = float(np.linalg.norm(e - s))
        if length < MIN_WIDTH_M or _unit(seed, bid, "filler") >= length / FILLER_SPACING_M:
            continue
        anchor = s + (0.3 + 0.4 * _unit(seed, bid, "at")) * (e - s) + SIGN_OFFSET_M * n
        if target_tree is not None and target_tree.query_ball_point(anchor, SIGN_GAP_M + 1.0):
            continue
        if dresser.inside_other(anchor, bid) or not dresser.faces_nearest(anchor, n):
            continue
        offer = pool[int(_unit(seed, bid, "brand") * len(pool))]
        pois.append(dresser.make_poi(f"{FILLER_PREFIX}{bid}", offer, anchor, n, bid))

    dresser.scene.buildings = [b.building for b in dresser.blocks]
    dresser.scene.pois = pois
    return Dressing(dresser.scene, goal_pois, specs)


def dress_world(world: World, *, seed: int = 0) -> Scene:
    """A synthetic scene for a release city: towers along every street, a satisfying sign at every
    ground-truth goal, and fillers that satisfy nothing the city asks for."""
    return _dress(world, seed).scene


def write_dressed_world(data_folder: Path, out_dir: Path, *, seed: int = 0, name: str | None = None) -> Path:
    """Dress the release city in `data_folder` and write it, with its own episodes as the test split."""
    data_folder = Path(data_folder)
    world = load_city(data_folder)
    dressing = _dress(world, seed)
    graph = world.graph
    code = {n: c for c, n in CATEGORY_NAMES.items()}
    tasks = []
    for e in world.episodes:
        route = e.reference_path
        length = sum(graph.distance_m(a, b) for a, b in zip(route, route[1:]))
        tasks.append(WorldTask(e.episode_id, code[e.category], e.request, e.instruction, e.difficulty, e.start,
                               e.target, dressing.goal_pois[(e.request, e.target)], route, round(length, 2),
                               split="test", stage_goals=e.stage_goals))
    satisfying = {r: sum(s.satisfied_by(p) for p in dressing.scene.pois) for r, s in dressing.specs.items()}
    task_set = TaskSet(TaskSettings(seed=seed), tasks,
                       {r: sorted(nodes) for r, nodes in sorted(world.category_targets.items())}, satisfying)
    fillers = sum(p.id.startswith(FILLER_PREFIX) for p in dressing.scene.pois)
    metadata = {
        "builder": {"name": "dress-cityseeker", "version": DRESS_VERSION},
        "source": {"dataset": "CitySeeker public release", "folder": str(data_folder),
                   "files": {f: sha256_file(data_folder / f) for f in (CONNECTIONS, QUESTIONS)}},
        "licence": "research use only (CitySeeker release topology and episodes); do not redistribute",
        "seed": seed,
        "synthetic": True,
        "counts": {"target_pois": len(dressing.scene.pois) - fillers, "filler_pois": fillers},
    }
    return write_world(Path(out_dir), name=name or f"{world.city}-dressed", graph=graph, scene=dressing.scene,
                       tasks=task_set, metadata=metadata)

"""Human needs and the points of interest that satisfy them, after the CitySeeker paper.

The paper maps each request to POI categories of its map vendors (Tables 4, 5 and 8, and
the Cypher examples of appendix B.1). Here the same requests map to OpenStreetMap tags
(`Poi.poi_class` is "key=value"), brand and name patterns, and attribute tags
(wheelchair, outdoor_seating, diet:*, internet_access) for the two attribute categories.
Where OSM has no counterpart for a vendor category (e.g. "Telecommunications service
provider" beyond shop=mobile_phone) the closest tags are listed; nothing is matched that a
person reading the sign could not reasonably accept.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from cityseeker_ros.core.infra.text import brand_key
from cityseeker_ros.core.worlds.scene import Poi

# Paper categories, keyed by the release's codes so generated worlds read like the release.
BASIC, BRAND, TRANSPORT, LATENT, ABSTRACT, INCLUSIVE, PREFERENCE = (
    "question1", "question4", "question5", "question6", "question7", "question8", "question9")

FOOD = ("amenity=restaurant", "amenity=fast_food", "amenity=food_court")
CAFE = ("amenity=cafe", "shop=coffee")
MALL = ("shop=mall", "shop=department_store")
LIBRARY = ("amenity=library", "shop=books")
PARK = ("leisure=park", "leisure=garden")
FITNESS = ("leisure=fitness_centre", "leisure=sports_centre", "leisure=swimming_pool", "leisure=fitness_station")
HEALTH = ("amenity=pharmacy", "amenity=clinic", "amenity=doctors", "amenity=hospital", "healthcare=pharmacy",
          "healthcare=clinic", "healthcare=doctor", "healthcare=hospital")
TRANSIT = ("railway=station", "railway=halt", "railway=subway_entrance", "public_transport=station",
           "amenity=bus_station", "highway=bus_stop", "railway=tram_stop", "amenity=taxi", "amenity=ferry_terminal",
           "amenity=car_rental")
FAST_FOOD_CHAINS = r"mcdonald|kfc|burger king|five guys|subway\b"


@dataclass(frozen=True)
class Need:
    """One request. A POI satisfies it when its class or brand is listed or its brand/name
    matches `names` (a case-insensitive regular expression), and it carries every `attributes` tag."""

    request: str
    category: str
    instruction: str
    classes: tuple[str, ...] = ()
    names: str = ""
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    brands: tuple[str, ...] = ()  # exact OSM brand tags

    def satisfied_by(self, poi: Poi) -> bool:
        kind = (poi.poi_class in self.classes
                or bool(self.brands and poi.brand and same_brand_key(poi.brand) in map(same_brand_key, self.brands))
                or bool(self.names and _name_matches(self.names, poi)))
        return kind and all(poi.tags.get(k) in values for k, values in self.attributes.items())


@lru_cache(maxsize=65536)
def same_brand_key(brand: str) -> str:
    """Brand tags that name one chain compare equal: case, accents, spaces and punctuation are
    ignored ("Uniwash" / "uniwash", "McDonald's" / "McDonalds")."""
    return brand_key(brand) or brand.casefold()


def _name_matches(pattern: str, poi: Poi) -> bool:
    text = " ".join(t for t in (poi.brand, poi.name, poi.tags.get("brand:en"), poi.tags.get("name:en")) if t)
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def nearest(request: str, category: str, classes: Iterable[str] = (), names: str = "",
            **attributes: tuple[str, ...]) -> Need:
    return Need(request, category, f"Please find the nearest {request}.", tuple(classes), names,
                {k.replace("__", ":"): v for k, v in attributes.items()})


def demand(request: str, question: str, classes: Iterable[str] = (), names: str = "") -> Need:
    return Need(request, ABSTRACT, question, tuple(classes), names)


def _help(what: str) -> str:
    return f"I {what} and need assistance finding a suitable place nearby. Could you help me?"


ACCESSIBLE = ("yes", "designated")
YES = ("yes",)

NEEDS: tuple[Need, ...] = (
    # Basic POI (Table 8, row 1): the POI type is named.
    nearest("restaurant", BASIC, ("amenity=restaurant",)),
    nearest("convenience store", BASIC, ("shop=convenience",)),
    nearest("supermarket", BASIC, ("shop=supermarket",)),
    nearest("shopping mall", BASIC, MALL),
    nearest("bank", BASIC, ("amenity=bank",)),
    nearest("hotel", BASIC, ("tourism=hotel", "tourism=guest_house", "tourism=hostel")),
    nearest("pharmacy", BASIC, ("amenity=pharmacy", "healthcare=pharmacy")),
    nearest("healthcare facility", BASIC, HEALTH),
    nearest("bakery", BASIC, ("shop=bakery", "shop=pastry")),
    nearest("post office", BASIC, ("amenity=post_office",)),
    nearest("primary and secondary school", BASIC, ("amenity=school",)),
    # Transportation Hub (row 3).
    nearest("bus stop", TRANSPORT, ("highway=bus_stop", "amenity=bus_station")),
    nearest("bus station", TRANSPORT, ("amenity=bus_station",)),
    nearest("subway or train station", TRANSPORT,
            ("railway=station", "railway=halt", "railway=subway_entrance", "public_transport=station")),
    nearest("tram stop", TRANSPORT, ("railway=tram_stop",)),
    nearest("taxi stand", TRANSPORT, ("amenity=taxi",)),
    # Latent POI (Table 4): the asked-for thing is rarely signed; context reveals it.
    nearest("restroom", LATENT, ("amenity=toilets", "railway=station", "railway=subway_entrance") + MALL,
            names=r"mcdonald|kfc"),
    nearest("ATM", LATENT, ("amenity=atm", "amenity=bank")),
    nearest("coffee shop", LATENT, CAFE + MALL),
    nearest("gym", LATENT, ("leisure=fitness_centre", "leisure=sports_centre")),
    nearest("cinema", LATENT, ("amenity=cinema",) + MALL),
    nearest("parking lot", LATENT, ("amenity=parking",)),
    nearest("drinking water", LATENT, ("amenity=drinking_water", "amenity=fountain")),
    # Abstract Demand (Table 5): the need is stated, the place is inferred.
    demand("I am hungry", "I'm feeling hungry and would like something to eat. Could you help me find a nearby place?",
           FOOD + MALL + ("shop=convenience", "shop=supermarket", "amenity=marketplace", "shop=bakery",
                          "shop=pastry", "shop=confectionery", "amenity=ice_cream")),
    demand("I am thirsty",
           "I'm feeling thirsty and would like something to drink. Could you help me find a nearby place?",
           CAFE + MALL + ("shop=convenience", "shop=supermarket", "amenity=vending_machine",
                          "amenity=drinking_water", "shop=beverages", "shop=tea", "amenity=ice_cream"),
           names=r"bubble tea|juice"),
    demand("I am not feeling well", _help("am not feeling well"), HEALTH),
    demand("I want to rest and read", "I want to rest and read and need help finding a suitable place nearby. "
           "Could you assist me?", CAFE + LIBRARY + PARK),
    demand("I want to find a place to work with Wi-Fi", _help("want to work with Wi-Fi"),
           CAFE + LIBRARY, names=FAST_FOOD_CHAINS),
    demand("My phone balance is low and I need to recharge it",
           "I have run out of phone credit and need to recharge it. Could you assist me in finding a nearby place "
           "where I can do so?", CAFE + LIBRARY + ("shop=mobile_phone", "shop=telecommunication",
                                                   "shop=supermarket", "shop=convenience"),
           names=r"mcdonald|kfc|7-eleven|best buy"),
    demand("I want to bring my child to play", _help("want to bring my child to play"),
           MALL + PARK + ("tourism=museum", "leisure=playground", "tourism=zoo", "tourism=aquarium",
                          "tourism=theme_park", "leisure=amusement_arcade", "shop=toys")),
    demand("I want to exercise", _help("want to exercise"), PARK + FITNESS),
    demand("I want to buy fruits and vegetables", _help("want to buy fruits and vegetables"),
           ("shop=supermarket", "shop=greengrocer", "amenity=marketplace", "shop=farm")),
    demand("I need to go to the airport",
           "I need to go to the airport and would like assistance in finding the best way there. "
           "Could you help me?", TRANSIT),
    # Inclusive Infrastructure (row 6): OSM's wheelchair tag stands in for the vendors' descriptions.
    nearest("restaurant with an accessible entrance", INCLUSIVE, FOOD, wheelchair=ACCESSIBLE),
    nearest("bank with an accessible entrance", INCLUSIVE, ("amenity=bank",), wheelchair=ACCESSIBLE),
    nearest("shop with an accessible entrance", INCLUSIVE,
            ("shop=supermarket", "shop=convenience", "shop=clothes", "shop=mall", "shop=department_store",
             "shop=chemist"), wheelchair=ACCESSIBLE),
    nearest("hotel with an accessible entrance", INCLUSIVE, ("tourism=hotel",), wheelchair=ACCESSIBLE),
    nearest("pharmacy with an accessible entrance", INCLUSIVE, ("amenity=pharmacy",), wheelchair=ACCESSIBLE),
    nearest("wheelchair-accessible restroom", INCLUSIVE, ("amenity=toilets",), wheelchair=ACCESSIBLE),
    nearest("café with an accessible entrance", INCLUSIVE, CAFE, wheelchair=ACCESSIBLE),
    # Semantic Preference (row 7): descriptive attributes from the POI's metadata.
    nearest("restaurant with outdoor seating", PREFERENCE, FOOD, outdoor_seating=YES),
    nearest("café with outdoor seating", PREFERENCE, CAFE, outdoor_seating=YES),
    nearest("vegetarian-friendly restaurant", PREFERENCE, FOOD, diet__vegetarian=("yes", "only")),
    nearest("café with Wi-Fi", PREFERENCE, CAFE, internet_access=("wlan", "yes", "wifi")),
    nearest("restaurant with takeaway", PREFERENCE, FOOD, takeaway=("yes", "only")),
    nearest("Italian restaurant", PREFERENCE, ("amenity=restaurant",), cuisine=("italian", "pizza")),
    nearest("Asian restaurant", PREFERENCE, ("amenity=restaurant",),
            cuisine=("chinese", "japanese", "sushi", "thai", "asian", "vietnamese", "korean", "indian")),
)


def brand_spellings(pois: Iterable[Poi]) -> dict[str, Counter]:
    """The world's chains: same_brand_key -> how often each spelling of the brand tag occurs."""
    chains: dict[str, Counter] = {}
    for p in pois:
        if p.brand:
            chains.setdefault(same_brand_key(p.brand), Counter())[p.brand] += 1
    return chains


def brand_name(spellings: Counter) -> str:
    """A chain's name: its most frequent spelling; on a tie, the first in sorted order (capitals first)."""
    return min(spellings, key=lambda b: (-spellings[b], b))


def brand_needs(pois: Iterable[Poi], min_count: int = 1) -> list[Need]:
    """Brand-Specific requests (Table 8, row 2) for the chains a world really has, one per chain
    however its brand tags are spelt (each spelling satisfies it)."""
    chains = [(brand_name(spellings), spellings) for spellings in brand_spellings(pois).values()]
    return [Need(name, BRAND, f"Please find the nearest {name}.", brands=tuple(sorted(spellings)))
            for name, spellings in sorted(chains) if sum(spellings.values()) >= min_count]


def needs_for(pois: list[Poi]) -> list[Need]:
    """Every request of the catalogue plus one per brand present."""
    return list(NEEDS) + brand_needs(pois)


"""The needs catalogue against the OSM POI filter, and brands as chains rather than spellings."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.worlds.needs import BRAND, NEEDS, brand_needs, needs_for
from cityseeker_ros.core.worlds.osm import poi_class
from cityseeker_ros.core.worlds.scene import Poi


def _mapped(tags: dict[str, str]) -> Poi:
    """A POI as the OSM builder makes it from `tags` (class from the builder's filter)."""
    return Poi("node/1", tags.get("name", ""), tags.get("brand"), poi_class(tags) or "", dict(tags),
               0.0, 0.0, (0.0, 0.0), 0.0, None, ("n0",))


@pytest.mark.parametrize("need", NEEDS, ids=lambda n: n.request)
def test_every_request_is_satisfiable_by_tags_the_filter_keeps(need):
    """Each class a request lists, mapped the ordinary way for a public place (the class tag, a
    name, the request's attribute tags), passes the builder's filter with that class and then
    satisfies the request: no request asks for something the builder throws away."""
    assert need.classes or need.names or need.brands, need.request
    attributes = {k: values[0] for k, values in need.attributes.items()}
    for cls in need.classes:
        key, value = cls.split("=", 1)
        tags = {key: value, "name": "Example", **attributes}
        assert poi_class(tags) == cls, f"{need.request!r}: {cls} is dropped by the POI filter"
        assert need.satisfied_by(_mapped(tags)), f"{need.request!r}: {cls} passes the filter but not the need"


@pytest.mark.parametrize("tags, kept", [
    ({"amenity": "parking"}, True),
    ({"amenity": "parking", "parking": "street_side"}, False),
    ({"amenity": "parking", "access": "private"}, False),
    ({"leisure": "swimming_pool", "name": "Piscine Rainier III"}, True),
    ({"leisure": "swimming_pool", "access": "public"}, True),
    ({"leisure": "swimming_pool"}, False),  # a garden pool
    ({"leisure": "swimming_pool", "name": "Villa pool", "access": "private"}, False),
    ({"leisure": "fitness_station"}, True),
    ({"leisure": "fitness_station", "access": "private"}, False),
])
def test_places_open_to_the_public_are_kept_private_ones_are_not(tags, kept):
    assert (poi_class(tags) is not None) is kept


def test_brands_that_differ_only_in_case_are_one_brand():
    pois = [_mapped({"amenity": "car_wash", "brand": b}) for b in ("Uniwash", "uniwash", "Uniwash", "UNIWASH")]
    pois.append(_mapped({"amenity": "fast_food", "brand": "McDonald's"}))
    pois.append(_mapped({"amenity": "fast_food", "brand": "McDonalds"}))
    needs = brand_needs(pois)
    assert [(n.request, n.category) for n in needs] == [("McDonald's", BRAND), ("Uniwash", BRAND)]
    uniwash = needs[1]
    assert all(uniwash.satisfied_by(p) for p in pois[:4]) and not uniwash.satisfied_by(pois[4])
    assert sum(n.category == BRAND for n in needs_for(pois)) == 2


def test_a_tie_between_spellings_names_the_brand_the_same_way_every_time():
    pois = [_mapped({"shop": "convenience", "brand": b}) for b in ("spar", "Spar")]
    assert [n.request for n in brand_needs(pois)] == [n.request for n in brand_needs(pois[::-1])] == ["Spar"]

"""Answers: the normalised exact match, invalid answers, and the words each fact may be given in."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.render.palette import GLASS_STYLES, PLASTER_STYLES
from cityseeker_ros.core.tasks.questions.answers import (
    FACADE_COLOURS,
    MAX_ANSWER_CHARS,
    answer_invalid,
    cardinal,
    category_words,
    matches,
    normalise,
    number_words,
    relation_words,
)


@pytest.mark.parametrize(("given", "expected"), [
    ("The Café-Bar", "cafe bar"), ("  ÉPICERIE  du Port!", "epicerie du port"), ("four", "4"),
    ("Four floors.", "4 floors"), ("an artwork", "artwork"), ("Marks & Spencer", "marks and spencer"),
    ("Forgi’s", "forgi s"), ("twelve", "12"),
])
def test_normalise_folds_case_accents_punctuation_articles_and_number_words(given, expected):
    assert normalise(given) == expected


def test_names_match_exactly_once_normalised_and_never_approximately():
    assert matches("the PANIFICIO bruno.", ["Panificio Bruno"])
    assert matches("Café Uno", ["Cafe Uno"])
    assert not matches("Panificio", ["Panificio Bruno"])
    assert not matches("Panificio Brunoo", ["Panificio Bruno"])


def test_numbers_match_as_digits_or_words_with_or_without_the_unit():
    accepted = number_words(5)
    for given in ("5", "five", "Five floors", "5 storeys", "five stories", "5 levels"):
        assert matches(given, accepted), given
    assert not matches("6", accepted)
    assert not matches("55", accepted)


def test_directions_match_plain_or_with_to_the():
    assert matches("To the north.", relation_words("north"))
    assert matches("North", relation_words("north"))
    assert not matches("north-east", relation_words("north"))


@pytest.mark.parametrize("answer", ["", "   ", "\n", "x" * (MAX_ANSWER_CHARS + 1)])
def test_an_empty_or_overlong_answer_is_invalid_and_never_matches(answer):
    assert answer_invalid(answer)
    assert not matches(answer, [answer.strip() or "x"])


def test_a_missing_answer_is_not_invalid_but_does_not_match():
    assert not answer_invalid(None)
    assert not matches(None, ["north"])
    assert not answer_invalid("x" * MAX_ANSWER_CHARS)


def test_every_facade_style_of_the_palette_has_colour_names():
    assert len(FACADE_COLOURS) == len(PLASTER_STYLES) + len(GLASS_STYLES)
    assert all(names and names[0] for names in FACADE_COLOURS)


@pytest.mark.parametrize(("bearing", "word"), [(0, "north"), (44.9, "north"), (45.1, "east"), (180, "south"),
                                               (269, "west"), (316, "north"), (-90, "west")])
def test_bearings_become_the_four_directions_cityeqa_uses(bearing, word):
    assert cardinal(bearing) == word


def test_kinds_of_place_read_as_nouns_first_with_fair_synonyms():
    assert category_words("shop=books")[0] == "bookshop"
    assert "book shop" in category_words("shop=books")
    assert category_words("amenity=cafe")[0] == "cafe"
    assert matches("a coffee shop", category_words("amenity=cafe"))
    assert category_words("shop=shoes")[0] == "shoe shop"
    assert category_words("shop=furniture")[0] == "furniture shop"

"""core/infra/key_value.py: the one KEY=VALUE reader of --param, --policy and --strategy."""
from __future__ import annotations

import argparse

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.key_value import key_value_argument, parse_key_value


@pytest.mark.parametrize(("text", "expected"), [
    ("n=3", ("n", 3)),
    ("x=-2.5e3", ("x", -2500.0)),
    ("flag=true", ("flag", True)),
    ("flag=false", ("flag", False)),
    ("gone=null", ("gone", None)),
    ("k=[1, 2, 3]", ("k", [1, 2, 3])),
    ('headers={"a": {"b": [1, {"c": null}]}}', ("headers", {"a": {"b": [1, {"c": None}]}})),
    ('name="quoted"', ("name", "quoted")),
])
def test_values_that_parse_as_json_are_typed(text, expected):
    assert parse_key_value(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("model=/models/qwen", ("model", "/models/qwen")),
    ("quantization=quanto-int8", ("quantization", "quanto-int8")),
    ("flag=True", ("flag", "True")),  # JSON spells it true: Python's True stays text
    ("k=[1, 2", ("k", "[1, 2")),
    ("empty=", ("empty", "")),
])
def test_other_values_stay_text(text, expected):
    assert parse_key_value(text) == expected


def test_the_text_splits_at_its_first_equals_sign():
    assert parse_key_value("base_url=http://h/v1?a=1&b=2") == ("base_url", "http://h/v1?a=1&b=2")
    assert parse_key_value("expr==") == ("expr", "=")


def test_the_key_is_stripped_unless_verbatim():
    assert parse_key_value(" k =1") == ("k", 1)
    assert parse_key_value(" k =1", verbatim_key=True) == (" k ", 1)


@pytest.mark.parametrize("text", ["=1", " =1", "no-equals", ""])
def test_no_equals_sign_or_an_empty_key_is_refused_naming_the_text(text):
    with pytest.raises(ConfigError) as err:
        parse_key_value(text)
    assert str(err.value) == f"expected KEY=VALUE, got {text!r}"


def test_the_error_names_the_callers_option_and_spelling():
    with pytest.raises(ConfigError, match=r"^--strategy 'R3:5': expected key=value, got '5'$"):
        parse_key_value("5", where="--strategy 'R3:5'", metavar="key=value")


def test_a_verbatim_key_may_be_empty_but_still_needs_an_equals_sign():
    assert parse_key_value("=5", verbatim_key=True) == ("", 5)
    with pytest.raises(ConfigError, match="expected KEY=VALUE, got 'k'"):
        parse_key_value("k", verbatim_key=True)


def test_as_an_argparse_type_a_bad_option_is_a_usage_error_with_the_message(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--param", action="append", type=key_value_argument, default=[])
    assert dict(parser.parse_args(["--param", "a=1", "--param", "b=x=y"]).param) == {"a": 1, "b": "x=y"}
    with pytest.raises(SystemExit):
        parser.parse_args(["--param", "oops"])
    assert "argument --param: expected KEY=VALUE, got 'oops'" in capsys.readouterr().err

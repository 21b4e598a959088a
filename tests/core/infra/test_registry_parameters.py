"""A misspelt parameter is named with the ones the entry takes, not Python's raw TypeError."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.registry import Registry

THINGS: Registry = Registry("thing")


@THINGS.register("lamp")
class Lamp:
    def __init__(self, world: object, brightness: float = 1.0, colour: str = "white", *, _private: int = 0) -> None:
        self.world, self.brightness, self.colour = world, brightness, colour


@THINGS.register("open")
def open_thing(**settings: object) -> dict:
    return dict(settings)


def test_a_misspelt_parameter_is_named_with_a_suggestion_and_every_known_one():
    with pytest.raises(ConfigError) as err:
        THINGS.create("lamp", "w", brightnes=2.0)
    assert str(err.value) == ("thing 'lamp': bad parameters ['brightnes']: no parameter 'brightnes' (did you mean "
                              "brightness?); it takes: brightness, colour")
    assert "__init__" not in str(err.value)
    with pytest.raises(ConfigError, match=r"no parameter 'zzz'; it takes: brightness, colour$"):
        THINGS.create("lamp", "w", zzz=1)


def test_known_parameters_and_entries_taking_any_pass_through():
    assert THINGS.create("lamp", "w", colour="red").colour == "red"
    assert THINGS.parameters("lamp", fixed=1) == ["brightness", "colour"]
    assert THINGS.parameters("open") is None and THINGS.create("open", anything=1) == {"anything": 1}


def test_a_policy_s_misspelt_param_lists_its_parameters():
    """`--param det_max_sid=320` said `OcrEmbedPolicy.__init__() got an unexpected keyword argument`."""
    from cityseeker_ros.core.agents.policies import make_policy

    with pytest.raises(ConfigError) as err:
        make_policy("ocr-embed", det_max_sid=320)
    assert "no parameter 'det_max_sid' (did you mean det_max_side?); it takes: " in str(err.value)
    assert "det_max_side" in str(err.value).split("it takes: ")[1] and "__init__" not in str(err.value)

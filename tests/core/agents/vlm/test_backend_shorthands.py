"""merge_backend_shorthands: --backend, --model and --backend-param (and the ROS settings of the
same names) become the VLM policy's parameters in one place."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.vlm.policy import merge_backend_shorthands
from cityseeker_ros.core.infra.errors import ConfigError


def test_a_shorthand_wins_over_the_same_policy_parameter_and_the_input_is_left_alone():
    params = {"backend": "openai", "model": "a", "retries": 2}
    assert merge_backend_shorthands(params, "transformers", "b") == {"backend": "transformers", "model": "b",
                                                                     "retries": 2}
    assert params == {"backend": "openai", "model": "a", "retries": 2}


def test_none_leaves_a_parameter_as_it_is_but_an_empty_string_is_given():
    assert merge_backend_shorthands({"model": "a"}) == {"model": "a"}
    assert merge_backend_shorthands({"model": "a"}, backend="", model="") == {"model": "", "backend": ""}


def test_backend_parameters_merge_key_by_key():
    params = {"backend_params": {"base_url": "u", "timeout_s": 5}}
    merged = merge_backend_shorthands(params, backend_params={"timeout_s": 9, "top_k": 3})
    assert merged["backend_params"] == {"base_url": "u", "timeout_s": 9, "top_k": 3}
    assert params["backend_params"] == {"base_url": "u", "timeout_s": 5}
    assert merge_backend_shorthands({"backend_params": None}, backend_params={"a": 1}) == {"backend_params": {"a": 1}}
    assert merge_backend_shorthands({"backend_params": "x"}, backend_params={}) == {"backend_params": "x"}


def test_backend_parameters_over_a_non_mapping_are_refused_as_the_policy_refuses_them():
    with pytest.raises(ConfigError, match="vlm policy: backend_params must be a mapping, got 'x'"):
        merge_backend_shorthands({"backend_params": "x"}, backend_params={"a": 1})


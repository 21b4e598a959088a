"""ros/parameters.policy_params: a node's or launch's backend and model shorthands, where '' is
"not given", merged as the CLI's --backend and --model are (core merge_backend_shorthands)."""
from __future__ import annotations

from cityseeker_ros.ros.parameters import policy_params


def test_empty_shorthands_leave_the_policy_parameters_as_they_are():
    assert policy_params({"backend": "openai", "model": "m"}, "", "") == {"backend": "openai", "model": "m"}


def test_given_shorthands_win_over_the_policy_parameters():
    assert policy_params({"backend": "openai", "retries": 2}, "transformers", "/m") == {
        "backend": "transformers", "model": "/m", "retries": 2}

"""calls.py: one named call, timed and hashed, its reply kept, its tokens the backend's; the
seed agents' shared construction (backends made as the vlm policy makes them)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.seeds.calls import Caller, CallLog, object_parser, user
from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, GenerationRequest
from cityseeker_ros.core.agents.vlm.prompts import prompt_hash
from cityseeker_ros.core.infra.errors import ConfigError


class Fixed(Backend):
    name = "fixed"

    def __init__(self, text: str, tokens: tuple = (12, 3)) -> None:
        self.text, self.tokens = text, tokens

    def generate(self, requests):
        return [Generation(self.text, prompt_tokens=self.tokens[0], completion_tokens=self.tokens[1])
                for _ in requests]


def test_a_call_is_logged_with_its_role_tokens_seconds_hash_and_reply():
    request = GenerationRequest((user("hello"),))
    log = CallLog()
    read = Caller(lambda: Fixed('{"summary": "ok"}'), "v/1").call(log, "memory", request, object_parser("summary"))
    assert read.ok and read.value == {"summary": "ok"}
    totals = log.totals()
    [call] = totals["calls"]
    assert call == {"role": "memory", "tokens_in": 12, "tokens_out": 3, "seconds": call["seconds"],
                    "prompt_hash": prompt_hash(request, "v/1"), "raw": '{"summary": "ok"}'}
    assert totals["calls_n"] == 1 and totals["tokens_in"] == 12 and totals["tokens_out"] == 3
    assert 0 <= totals["seconds"] == call["seconds"]


def test_an_unreadable_reply_is_a_parse_error_and_unknown_tokens_stay_unknown():
    log = CallLog()
    caller = Caller(lambda: Fixed("no json here", tokens=(None, None)), "v/1")
    read = caller.call(log, "perception", GenerationRequest((user("x"),)), object_parser("landmarks"))
    assert not read.ok and read.value is None
    assert log.calls[0].parse_error == read.error and log.failed == 1
    assert log.totals()["tokens_in"] is None and "parse_error" in log.totals()["calls"][0]


@pytest.mark.parametrize("agent", ["prep", "navgpt", "mapgpt"])
def test_agents_are_built_as_the_vlm_policy_builds_its_backend(agent):
    with pytest.raises(ConfigError, match="name a backend"):
        make_policy(agent)
    with pytest.raises(Exception, match="openai"):
        make_policy(agent, backend="no-such-backend")  # the known backends are listed
    with pytest.raises(ConfigError, match="give the model once"):
        make_policy(agent, backend="openai", model="m", backend_params={"model": "m"})
    with pytest.raises(ConfigError, match="fallback"):
        make_policy(agent, backend="openai", fallback="sideways")
    policy = make_policy(agent, backend="openai", model="m", backend_params={"api_key": "sk-secret"})
    described = policy.describe()
    assert described["policy"] == agent and described["loaded"] is False and "sk-secret" not in str(described)


@pytest.mark.parametrize("agent, switch", [("prep", "reflection"), ("prep", "planning"), ("navgpt", "cot"),
                                           ("mapgpt", "reflection")])
def test_switches_are_true_or_false(agent, switch):
    with pytest.raises(ConfigError, match=switch):
        make_policy(agent, backend="openai", **{switch: "yes"})

"""calls.py: one named call, timed and hashed, its reply schema sent (or not, with the switch
off), its reply kept, its tokens the backend's; a step that ends in a backend error keeps the
calls it made; the seed agents' shared construction (backends made as the vlm policy makes them)."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.policies import make_policy
from cityseeker_ros.core.agents.seeds.calls import Caller, CallLog, user
from cityseeker_ros.core.agents.seeds.replies import ReplySchema, list_field, text_field
from cityseeker_ros.core.agents.vlm.backend import Backend, BackendError, Generation, GenerationRequest
from cityseeker_ros.core.agents.vlm.prompts import prompt_hash
from cityseeker_ros.core.infra.errors import ConfigError

SUMMARY = ReplySchema("Summary", {"summary": text_field()}, ("summary",))
SIGHTINGS = ReplySchema("Sightings", {"landmarks": list_field(text_field())}, ("landmarks",))


class Fixed(Backend):
    name = "fixed"

    def __init__(self, text: str, tokens: tuple = (12, 3)) -> None:
        self.text, self.tokens, self.requests = text, tokens, []

    def generate(self, requests):
        self.requests += list(requests)
        return [Generation(self.text, prompt_tokens=self.tokens[0], completion_tokens=self.tokens[1])
                for _ in requests]


def test_a_call_is_logged_with_its_role_schema_tokens_seconds_hash_and_reply():
    request = GenerationRequest((user("hello"),))
    log = CallLog()
    backend = Fixed('{"summary": "ok"}')
    read = Caller(lambda: backend, "v/1").call(log, "memory", request, SUMMARY)
    assert read.ok and read.value == {"summary": "ok"}
    [sent] = backend.requests
    assert sent.json_schema == SUMMARY.json_schema() and sent.json_schema["title"] == "Summary"
    totals = log.totals()
    [call] = totals["calls"]
    assert call == {"role": "memory", "schema": "Summary", "tokens_in": 12, "tokens_out": 3,
                    "seconds": call["seconds"], "prompt_hash": prompt_hash(sent, "v/1"), "raw": '{"summary": "ok"}',
                    "parsed": True}
    assert totals["calls_n"] == 1 and totals["tokens_in"] == 12 and totals["tokens_out"] == 3
    assert 0 <= totals["seconds"] == call["seconds"]


def test_an_unreadable_reply_is_a_parse_error_and_unknown_tokens_stay_unknown():
    log = CallLog()
    caller = Caller(lambda: Fixed("no json here", tokens=(None, None)), "v/1")
    read = caller.call(log, "perception", GenerationRequest((user("x"),)), SIGHTINGS)
    assert not read.ok and read.value is None
    assert log.calls[0].parse_error == read.error and log.failed == 1
    [call] = log.totals()["calls"]
    assert log.totals()["tokens_in"] is None and call["parse_error"] == read.error and call["parsed"] is False


def test_a_reply_missing_a_required_field_or_of_the_wrong_type_is_unusable():
    for reply, why in (('{"landmarks": "the tower"}', "not a list"), ('{"visible": true}', "landmarks")):
        log = CallLog()
        read = Caller(lambda reply=reply: Fixed(reply), "v/1").call(log, "perception", GenerationRequest((user("x"),)),
                                                                   SIGHTINGS)
        assert not read.ok and why in read.error and log.failed == 1


def test_with_the_switch_off_no_schema_is_sent_and_the_same_reader_reads():
    backend = Fixed('Sure. {"summary": "ok"}')
    read = Caller(lambda: backend, "v/1", structured=False).call(CallLog(), "memory",
                                                                 GenerationRequest((user("x"),)), SUMMARY)
    assert read.ok and read.value == {"summary": "ok"} and backend.requests[0].json_schema is None


def test_a_step_that_ends_in_a_backend_error_keeps_the_calls_it_made(tmp_path):
    from tests.core.agents.seeds.seed_support import ByRole, needs_world, role_of, run

    class FailsAtPlanning(ByRole):
        def generate(self, requests):
            if any(role_of(r) == "planning" for r in requests):
                raise BackendError("server down")
            return super().generate(requests)

    agent = make_policy("prep", backend_instance=FailsAtPlanning())
    record = run(needs_world(tmp_path), agent, max_steps=2)
    assert "error" in record
    [step] = record["decisions"]
    assert step["error"] == "server down" and step["calls_n"] >= 1
    assert all(c["role"] == "perception" for c in step["calls"])

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

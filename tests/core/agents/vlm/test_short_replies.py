"""Short replies (`short_replies`): the action or stop, a confidence and a reason of at most 80
characters, asked within the token budget their schema needs; the paper profile keeps its replies."""
from __future__ import annotations

import json

import pytest

from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.agents.vlm.prompt_profiles import IMPROVED, family_profile, short_profile
from cityseeker_ros.core.agents.vlm.prompts import PROMPT_VERSION
from cityseeker_ros.core.agents.vlm.schema import (
    SHORT_REASON_CHARS,
    reply_budget,
    short_decision_schema,
    short_stop_schema,
    with_answer,
)
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.environment import STOP, move
from tests.core.agents.vlm.test_policy import Scripted, at_b
from tests.core.agents.vlm.test_prompts import text_of


def short_stop(flag: bool) -> str:
    return json.dumps({"stop": flag, "confidence": 0.9, "reason": "a pharmacy sign" if flag else "nothing here"})


def short_choice(action: str) -> str:
    return json.dumps({"action": action, "confidence": 0.7, "reason": f"{action} looks busier"})


def test_a_two_call_step_asks_short_replies_within_their_budget_and_reads_them(tiny_world):
    backend = Scripted([short_stop(False), short_choice("C"), short_stop(True)])
    agent = VlmPolicy(backend_instance=backend, short_replies=True, max_new_tokens=512)
    obs = at_b(tiny_world)
    assert agent.act(obs) == move(2)
    stop_request, choice_request = backend.calls[0][0], backend.calls[1][0]
    assert set(stop_request.json_schema["properties"]) == {"stop", "confidence", "reason"}
    assert set(choice_request.json_schema["properties"]) == {"action", "confidence", "reason"}
    assert choice_request.json_schema["properties"]["action"]["enum"] == ["A", "B", "C"]
    assert stop_request.max_new_tokens == reply_budget(stop_request.json_schema) < 160
    assert choice_request.max_new_tokens == reply_budget(choice_request.json_schema) < 160
    assert f"at most {SHORT_REASON_CHARS} characters" in text_of(choice_request)
    assert '"observations"' not in text_of(choice_request) and '"thoughts"' not in text_of(stop_request)
    [record] = agent.step_records()
    assert record["prompt_version"] == f"{PROMPT_VERSION}+short/1" and not record["fallback"]
    assert record["decision"]["thoughts"] == "C looks busier" and record["decision"]["confidence"] == 0.7
    assert agent.act(obs) == STOP  # a short stop reply stops
    assert agent.describe()["short_replies"] is True


def test_off_the_prompts_are_the_old_ones(tiny_world):
    backend = Scripted([json.dumps({"observation": "x", "thoughts": "y", "stop": True, "confidence": 0.9})])
    VlmPolicy(backend_instance=backend, max_new_tokens=300).act(at_b(tiny_world))
    request = backend.calls[0][0]
    assert request.max_new_tokens == 300 and "thoughts" in request.json_schema["properties"]
    assert short_profile(IMPROVED).template_hash != IMPROVED.template_hash


def test_a_family_that_answers_keeps_its_answer_in_a_short_stop():
    profile = short_profile(family_profile(IMPROVED, "questions"))
    assert profile.version.endswith("+questions/1+short/1")
    from cityseeker_ros.core.agents.vlm.prompt_profiles import _canonical_step

    obs, _ = _canonical_step()
    request = profile.stop(obs, None, 512, None)
    assert "answer" in request.json_schema["required"] and '"answer": ""' in text_of(request)
    assert profile.parse_stop('{"stop": true, "answer": "Blue", "confidence": 0.8, "reason": "the sign"}', obs).answer \
        == "Blue"


def test_the_paper_profile_refuses_short_replies():
    with pytest.raises(ConfigError, match="short_replies works with prompt_profile improved, not 'paper'"):
        VlmPolicy(backend_instance=Scripted([]), prompt_profile="paper", short_replies=True)
    with pytest.raises(ConfigError, match="short_replies must be true or false, got 'yes'"):
        VlmPolicy(backend_instance=Scripted([]), short_replies="yes")


@pytest.mark.parametrize("schema", [short_stop_schema(), short_decision_schema(26, True),
                                    with_answer(short_stop_schema())], ids=["stop", "choice", "answer"])
def test_the_longest_valid_reply_fits_its_budget_in_a_byte_level_tokenizer(schema, tiny_checkpoints):
    """The budget counts a token a character; a byte-level BPE token covers one byte or more, so the
    longest ASCII reply the schema allows (every string at its maxLength) plus end-of-sequence fits."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_checkpoints["qwen2.5-vl"]), local_files_only=True)
    longest = {}
    for name, field in schema["properties"].items():
        if "enum" in field:
            longest[name] = max(field["enum"], key=len)
        elif field.get("type") == "string":
            longest[name] = "q" * field["maxLength"]
        else:
            longest[name] = 0.55 if field.get("type") == "number" else True
    tokens = len(tokenizer(json.dumps(longest))["input_ids"]) + 1
    assert tokens <= reply_budget(schema)


def test_a_budget_needs_bounded_fields():
    with pytest.raises(ValueError, match="field 'thoughts' has no maxLength"):
        reply_budget({"properties": {"thoughts": {"type": "string"}}})

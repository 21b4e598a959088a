"""The VLM prompts for every task family: the needs family's stay byte for byte as they were
(pinned hashes), another family's speak its PromptForms in the same layout with a version of
their own, and the golden messages of a landmark-like and a question-like family (both profiles,
every call) equal tests/core/agents/vlm/fixtures/family_prompts.json.

Set CITYSEEKER_WRITE_GOLDEN=1 to rewrite that file after a deliberate wording change (and bump
prompt_profiles.FAMILY_VERSION)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.agents.vlm.prompt_profiles import (
    FAMILY_VERSION,
    IMPROVED,
    PAPER,
    PROFILES,
    family_profile,
    prompt_record,
)
from cityseeker_ros.core.agents.vlm.prompts import PROMPT_VERSION, compass_word, prompt_hash
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.tasks.environment import Observation, View
from cityseeker_ros.core.tasks.family import family_names, get_family
from tests.core.agents.vlm.families import ASKS, GOALS, test_families  # noqa: F401 (a fixture)
from tests.core.agents.vlm.test_policy import Scripted, choice, stop
from tests.core.agents.vlm.test_prompts import observation

pytestmark = pytest.mark.usefixtures("test_families")

GOLDEN = Path(__file__).parent / "fixtures" / "family_prompts.json"

# The needs family's prompts as they were before task families existed: any change here is a
# change of the CitySeeker prompts, which must not happen without a new PROMPT_VERSION.
NEEDS_TEMPLATE_HASHES = {"improved": "3ccacd534c521aa6", "paper": "bcaa177189e080f2"}


def step(images: bool = True) -> Observation:
    """Three walkable views at a junction, facing east, with tiny images."""
    rng = np.random.default_rng(7)
    views = tuple(View(i, h, relative_direction(h, 90.0), rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
                       if images else None) for i, h in enumerate((90.0, 180.0, 315.0)))
    return Observation("ep", "Where the words go.", "node-7", 0.0, 0.0, 90.0, views, 2, 40)


def rendered(request) -> dict:
    """A request as JSON: every image replaced by its size."""
    return {"messages": [{"role": m.role, "content": [c if isinstance(c, str) else f"<image {c.shape[1]}x{c.shape[0]}>"
                                                      for c in m.content]} for m in request.messages],
            "json_schema": request.json_schema, "max_new_tokens": request.max_new_tokens}


def all_requests(family: str) -> dict[str, dict]:
    obs = replace_instruction(step(), family)
    pano = np.zeros((8, 16, 3), np.uint8)
    context = PromptContext(backtrack="You have just backtracked.", history="step 1 at node-6: chose view A")
    out = {}
    for profile in (IMPROVED, PAPER):
        p = family_profile(profile, family)
        out[f"{profile.name}/stop-panorama"] = rendered(p.stop(obs, context, 64, pano))
        out[f"{profile.name}/stop-views"] = rendered(p.stop(obs, None, 64, None))
        out[f"{profile.name}/choice"] = rendered(p.choice(obs, context, 64, None))
        if p.single is not None:
            out[f"{profile.name}/single"] = rendered(p.single(obs, context, 64, None))
    return out


def replace_instruction(obs: Observation, family: str) -> Observation:
    from dataclasses import replace

    words = {GOALS: "The goal is about 300 m north-east of the clock tower and 100 m south of the station.",
             ASKS: "What is the name of the café opposite the station?"}
    return replace(obs, instruction=words[family])


def test_the_golden_family_prompts():
    sent = {family: all_requests(family) for family in (GOALS, ASKS)}
    if os.environ.get("CITYSEEKER_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(sent, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        pytest.skip(f"wrote {GOLDEN}")
    assert sent == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_needs_prompts_are_the_profiles_themselves():
    for profile in PROFILES.values():
        assert family_profile(profile, "needs") is profile
        assert profile.template_hash == NEEDS_TEMPLATE_HASHES[profile.name]
        assert prompt_record("vlm", {"prompt_profile": profile.name})["template_hash"] == profile.template_hash
        assert prompt_record("vlm", {"prompt_profile": profile.name}, "needs") == prompt_record(
            "vlm", {"prompt_profile": profile.name})
    assert IMPROVED.version == PROMPT_VERSION == "cityseeker-c2/2" and PAPER.version == "cityseeker-paper/1"


def test_a_needs_episode_sends_what_the_plain_prompts_send(tiny_world):
    """The policy reads the words from the episode's family; for needs that is the plain prompt."""
    obs = observation()
    agent = VlmPolicy(backend_instance=(backend := Scripted([stop(False), choice("B")])))
    agent.reset(tiny_world.episodes[0], np.random.default_rng(0))
    agent.act(obs)
    from cityseeker_ros.core.agents.vlm.prompts import choice_prompt, stop_prompt

    sent = [prompt_hash(c[0]) for c in backend.calls]
    assert sent == [prompt_hash(stop_prompt(obs)), prompt_hash(choice_prompt(obs))]
    [record] = agent.step_records()
    assert record["prompt_version"] == PROMPT_VERSION and "answer" not in record["decision"]
    assert "answer" not in record["stop_check"]


def test_each_family_has_its_own_version_and_template_hash():
    hashes = set(NEEDS_TEMPLATE_HASHES.values())
    for family in (GOALS, ASKS):
        for profile in PROFILES.values():
            p = family_profile(profile, family)
            assert p.version == f"{profile.version}+{family}/{FAMILY_VERSION}" and p.name == profile.name
            assert p.forms == get_family(family).prompts and p.always_choose == profile.always_choose
            record = prompt_record("vlm", {"prompt_profile": profile.name}, family)
            assert record["version"] == p.version and record["template_hash"] == p.template_hash
            hashes.add(p.template_hash)
    assert len(hashes) == 6  # results made with different prompts never pool


def test_the_family_supplies_the_words():
    obs = replace_instruction(step(images=False), ASKS)
    forms = get_family(ASKS).prompts
    p = family_profile(IMPROVED, ASKS)
    request = p.stop(obs, None, 64, None)
    system, user = request.messages
    assert system.content == (forms.system,)
    text = user.content[0]
    assert text.startswith("Question: What is the name of the café") and forms.stop_question in text
    assert "View C (BACK_LEFT, 315°, north-west): no image" in text  # compass words: goals come by bearing
    assert "request" not in json.dumps(request.json_schema)  # the needs' schema description is left out
    assert request.json_schema["properties"]["answer"] == {"title": "Answer", "type": "string", "maxLength": 200}
    assert "answer" in request.json_schema["required"]
    assert "answer" not in p.choice(obs, None, 64, None).json_schema["properties"]  # a move answers nothing
    assert "answer" in p.single(obs, None, 64, None).json_schema["properties"]
    goals = family_profile(PAPER, GOALS)
    assert "answer" not in goals.stop(obs, None, 64, None).json_schema["properties"]
    assert goals.stop(obs, None, 64, None).messages[0].content[0] == (
        f"Instruction: {get_family(GOALS).prompts.system} Are you at the goal?")


@pytest.mark.parametrize("heading, word", [(0, "north"), (22.4, "north"), (22.6, "north-east"), (90, "east"),
                                           (200, "south"), (-45, "north-west"), (359.9, "north"), (247.5, "west")])
def test_compass_words(heading, word):
    assert compass_word(heading) == word


def test_an_unknown_family_is_refused():
    with pytest.raises(ConfigError, match="unknown task family 'nope'; known: .*needs"):
        family_profile(IMPROVED, "nope")


@pytest.mark.parametrize("family", [f for f in family_names() if f != "needs"])
def test_every_registered_family_has_prompts(family):
    """The built-in families (landmarks, questions) as their packages word them: every call builds,
    the answer field follows `answers`, and the replies they ask for parse."""
    forms = get_family(family).prompts
    obs = step()
    for profile in PROFILES.values():
        p = family_profile(profile, family)
        assert family in p.version
        for build in (p.stop, p.choice, p.single):
            if build is not None:
                request = build(obs, None, 64, None)
                assert request.messages and prompt_hash(request, p.version)
        assert ("answer" in p.stop(obs, None, 64, None).json_schema["properties"]) == forms.answers
        reply = json.dumps({"observation": "a sign", "thoughts": "t", "stop": True, "answer": "Red", "confidence": 1})
        parsed = p.parse_stop(reply, obs)
        assert parsed.is_stop and parsed.answer == ("Red" if forms.answers else None)

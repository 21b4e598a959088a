import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cityseeker_ros.core.agents.vlm import prompts
from cityseeker_ros.core.agents.vlm.parsing import parse_choice, parse_stop
from cityseeker_ros.core.agents.vlm.prompts import (
    PromptContext,
    choice_prompt,
    prompt_hash,
    single_prompt,
    stop_prompt,
)
from cityseeker_ros.core.agents.vlm.schema import DecisionReply, StopDecision
from cityseeker_ros.core.streets.directions import relative_direction
from cityseeker_ros.core.tasks.environment import Environment, Observation, View, move


def image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (6, 8, 3), dtype=np.uint8)


def observation(facing: float = 0.0, headings=(0.0, 90.0, 180.0, 270.0), images: bool = True,
                instruction: str = "I'm thirsty.", feedback=None) -> Observation:
    views = tuple(View(i, h, relative_direction(h, facing), image(i) if images else None)
                  for i, h in enumerate(headings))
    return Observation("ep-1", instruction, "00000042", 22.3, 114.1, facing, views, 3, 32, feedback)


def user_parts(request):
    assert [m.role for m in request.messages] == ["system", "user"]
    return request.messages[1].content


def text_of(request) -> str:
    return "\n".join(c for m in request.messages for c in m.content if isinstance(c, str))


def test_right_is_clockwise_in_the_labels():
    text = text_of(choice_prompt(observation(facing=0.0)))
    for label in ("View A (FRONT, 0°)", "View B (RIGHT, 90°)", "View C (BACK, 180°)", "View D (LEFT, 270°)"):
        assert label in text
    # Facing 350°, a street at 80° is 90° clockwise: on the right. Negative headings are shown mod 360.
    text = text_of(choice_prompt(observation(facing=350.0, headings=(80.0, -100.0, 349.6))))
    assert "View A (RIGHT, 80°)" in text and "View B (LEFT, 260°)" in text and "View C (FRONT, 350°)" in text


def test_labels_from_the_environment_match_its_headings(tiny_world):
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    obs = env.step(move(0)).observation  # at B, walking east: west is back, north is left
    text = text_of(choice_prompt(obs))
    assert "View A (BACK, 270°)" in text and "View B (FRONT, 90°)" in text and "View C (LEFT, 0°)" in text
    assert "You are facing 90°" in text and obs.instruction in text and "viewpoint 00000001" in text


def test_images_follow_their_labels_in_view_order():
    obs = observation()
    for build in (stop_prompt, choice_prompt, single_prompt):
        parts = user_parts(build(obs))
        positions = [i for i, p in enumerate(parts) if isinstance(p, np.ndarray)]
        assert len(positions) == len(obs.views)
        for view, (letter, pos) in zip(obs.views, zip("ABCD", positions)):
            assert parts[pos] is view.image
            assert isinstance(parts[pos - 1], str)
            assert parts[pos - 1].endswith(f"View {letter} ({view.relative.value}, {int(view.heading) % 360}°):")
        assert isinstance(parts[-1], str) and "JSON" in parts[-1]  # the task comes after the last image


def test_views_without_images_are_described_in_text_only():
    request = choice_prompt(observation(images=False))
    assert request.images == []
    parts = user_parts(request)
    assert len(parts) == 1  # one text block: nothing to interleave
    assert "View B (RIGHT, 90°): no image; judge it by its direction only." in parts[0]


def test_empty_slots_are_omitted_and_filled_slots_present():
    obs = observation()
    titles = ("Backtracking", "Historical context from previous rounds", "Visit trajectory so far",
              "Note about your previous answer")
    for build in (stop_prompt, choice_prompt, single_prompt):
        bare = text_of(build(obs, PromptContext(backtrack="", surroundings="  ", history=None)))
        assert not any(t in bare for t in titles)
        assert bare == text_of(build(obs))
    context = PromptContext(backtrack="You just backtracked; choose view B.", surroundings="A cafe 40 m north.",
                            history="n1 -> n2 -> n3", feedback="action 'E' is out of range")
    for build in (choice_prompt, single_prompt):
        text = text_of(build(obs, context))
        assert "Backtracking: You just backtracked; choose view B." in text
        assert "Historical context from previous rounds: A cafe 40 m north." in text
        assert "Visit trajectory so far: n1 -> n2 -> n3" in text
        assert text.rstrip().endswith("Note about your previous answer: action 'E' is out of range")
    text = text_of(stop_prompt(obs, context))  # the paper's stop prompt takes only the backtrack slot
    assert "Backtracking:" in text and "Historical context" not in text and "Visit trajectory" not in text
    assert "Note about your previous answer" in text


def test_stop_choice_and_single_prompts_differ_in_what_they_allow():
    obs = observation(headings=(0.0, 90.0, 180.0))
    stop, choice, single = stop_prompt(obs), choice_prompt(obs), single_prompt(obs)
    assert set(stop.json_schema["properties"]) == {"observation", "thoughts", "stop", "confidence"}
    assert choice.json_schema["properties"]["action"]["enum"] == ["A", "B", "C"]
    assert single.json_schema["properties"]["action"]["enum"] == ["A", "B", "C", "STOP"]
    assert '"action": "<one of A, B, C>"' in text_of(choice)
    assert '"action": "<one of A, B, C, STOP>"' in text_of(single) and 'set "action" to "STOP"' in text_of(single)
    assert "STOP" not in text_of(choice)
    assert "Prioritise the FRONT, LEFT and RIGHT directions" in text_of(choice)
    assert "number of observations equals the number of views provided (3)" in text_of(choice)
    assert all(r.temperature == 0.0 and r.max_new_tokens == 512 for r in (stop, choice, single))
    assert choice_prompt(obs, max_new_tokens=64).max_new_tokens == 64
    assert "$ref" not in str(choice.json_schema)


def test_the_examples_the_prompts_show_are_valid_replies():
    choice = parse_choice(prompts._CHOICE_EXAMPLE, 2)
    assert (choice.action_index, choice.confidence, choice.problems, choice.error) == (1, 0.78, [], None)
    DecisionReply.model_validate_json(prompts._CHOICE_EXAMPLE)
    stop = parse_stop(prompts._STOP_EXAMPLE)
    assert (stop.action_index, stop.problems, stop.error) == (0, [], None)  # 0 = continue
    StopDecision.model_validate_json(prompts._STOP_EXAMPLE)


def test_choice_needs_views_and_rgb_images():
    with pytest.raises(ValueError, match="no walkable view"):
        choice_prompt(observation(headings=()))
    with pytest.raises(ValueError, match="at most 26"):
        single_prompt(observation(headings=tuple(float(h) for h in range(27)), images=False))
    bad = observation()
    bad = Observation(**{**bad.__dict__, "views": (View(0, 0.0, bad.views[0].relative, np.zeros((4, 4))),)})
    with pytest.raises(ValueError, match="RGB uint8"):
        choice_prompt(bad)


def test_hash_is_stable_and_sensitive():
    obs = observation()
    h = prompt_hash(choice_prompt(obs))
    assert len(h) == 16 and int(h, 16) >= 0
    assert prompt_hash(choice_prompt(observation())) == h  # rebuilt from equal inputs
    pixel = observation()
    pixel.views[2].image[0, 0, 0] ^= 1
    text = observation(instruction="I'm hungry.")
    variants = {
        "pixel": choice_prompt(pixel), "text": choice_prompt(text),
        "no images": choice_prompt(observation(images=False)),
        "feedback": choice_prompt(obs, PromptContext(feedback="try again")), "single": single_prompt(obs),
        "stop": stop_prompt(obs),
    }
    hashes = {name: prompt_hash(r) for name, r in variants.items()}
    assert h not in hashes.values() and len(set(hashes.values())) == len(hashes)
    # Equal across processes (no Python hash randomisation, no object ids).
    code = ("from tests.core.agents.vlm.test_prompts import observation; "
            "from cityseeker_ros.core.agents.vlm.prompts import choice_prompt, prompt_hash; "
            "print(prompt_hash(choice_prompt(observation())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"}, cwd=Path(__file__).parents[4])
    assert out.stdout.strip() == h


"""Prompt profiles: the stop prompt's panorama, the `paper` protocol (two calls a step, the
appendix's messages, 0-based numbers), the reproduction switches, and the golden messages a
`paper` run sends to an OpenAI-compatible server."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cityseeker_ros.cli import main
from cityseeker_ros.core.agents.policies.base import PromptContext
from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.agents.vlm.prompt_profiles import PAPER, PROFILES, parse_choice_zero_based, prompt_record
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views.panorama import PanoramaFolderSource
from cityseeker_ros.core.sensing.views.source import ViewSource
from cityseeker_ros.core.tasks.environment import STOP, Environment, move
from tests.core.agents.vlm.test_openai_backend import MODEL, CannedServer, decode
from tests.core.agents.vlm.test_policy import Scripted, choice, stop

FIXTURES = Path(__file__).parent / "fixtures"
PANO_WIDTH = 64


def marker_panoramas(world, folder: Path, provider: str, azimuth: float = 0.0, width: int = 256) -> Path:
    """Grey panoramas with a white meridian at absolute `azimuth` (north by default), laid out as
    the provider's files are (Baidu's centre looks 90 degrees left of the car heading)."""
    folder.mkdir(parents=True, exist_ok=True)
    for node in world.graph.nodes.values():
        centre = node.heading if provider == "google" else node.heading - 90.0
        col = int(round(((azimuth - centre) / 360.0 + 0.5) * width)) % width
        pano = np.full((width // 2, width, 3), 60, np.uint8)
        pano[:, [(col + d) % width for d in (-1, 0, 1)]] = 255
        Image.fromarray(pano).save(folder / f"{node.id}.png")
    return folder


def at_b(world, views):
    """Junction B of the tiny city, walking east (facing 90): views A = back, B = front, C = left."""
    env = Environment(world, views=views)
    env.reset(world.episodes[0])
    return env.step(move(0)).observation


def marker_column(image: np.ndarray) -> float:
    row = image[image.shape[0] // 2, :, 0].astype(np.float64) - 60.0
    row[row < 0] = 0
    return float((row * np.arange(image.shape[1])).sum() / row.sum())


def paper_stop(flag: bool) -> str:
    return json.dumps({"overall_observation": "shops", "thoughts": "t", "action": -1 if flag else 0, "score": 0.9})


def paper_choice(action, score: float = 0.8) -> str:
    return json.dumps({"perspective_observation": {"A": "a", "B": "b", "C": "c"}, "thoughts": f"going {action}",
                       "action": action, "score": score})


# --- the stop prompt sees the panorama ----------------------------------------------------------

@pytest.mark.parametrize("provider", ["google", "baidu"])
@pytest.mark.parametrize("profile", ["improved", "paper"])
def test_stop_call_carries_the_panorama_turned_to_the_facing(tiny_world, tmp_path, provider, profile):
    folder = marker_panoramas(tiny_world, tmp_path / "panos", provider)
    src = PanoramaFolderSource(tiny_world, str(folder), provider=provider, pano_width=PANO_WIDTH, width=32,
                               height=16)
    obs = at_b(tiny_world, src)
    replies = [stop(False), choice("B")] if profile == "improved" else [paper_stop(False), paper_choice("B")]
    agent = VlmPolicy(backend_instance=(backend := Scripted(replies)), prompt_profile=profile)
    assert agent.act(obs) == move(1)
    stop_request = backend.calls[0][0]
    [pano] = stop_request.images
    assert pano.shape == (PANO_WIDTH // 2, PANO_WIDTH, 3)
    # Facing east (90): north, where the marker is, lies 90 degrees left, a quarter of the width.
    assert abs(marker_column(pano) - PANO_WIDTH / 4) <= 1.0, marker_column(pano)
    # the choice call still shows the per-heading views
    assert [im.shape for im in backend.calls[1][0].images] == [(16, 32, 3)] * 3
    assert agent.step_records()[0]["stop_input"] == "panorama"


def test_stop_view_views_keeps_the_per_heading_views(tiny_world, tmp_path):
    src = PanoramaFolderSource(tiny_world, str(marker_panoramas(tiny_world, tmp_path / "p", "google")),
                               pano_width=PANO_WIDTH, width=32, height=16)
    obs = at_b(tiny_world, src)
    agent = VlmPolicy(backend_instance=(backend := Scripted([stop(False), choice("B")])), stop_view="views")
    agent.act(obs)
    images = backend.calls[0][0].images
    assert len(images) == 3 and all(np.array_equal(a, v.image) for a, v in zip(images, obs.views))
    assert agent.step_records()[0]["stop_input"] == "views"


class FlatViews(ViewSource):
    """Views but no panorama, as a camera rig gives."""

    name = "flat"

    def images(self, node, headings):
        return [np.full((8, 8, 3), i, np.uint8) for i, _ in enumerate(headings)]


def test_a_source_without_panorama_falls_back_to_the_views(tiny_world):
    obs = at_b(tiny_world, FlatViews())
    assert obs.panorama is not None and obs.panorama.get() is None
    agent = VlmPolicy(backend_instance=(backend := Scripted([paper_stop(False), paper_choice("C")])),
                      prompt_profile="paper")
    assert agent.act(obs) == move(2)
    assert len(backend.calls[0][0].images) == 3 and agent.step_records()[0]["stop_input"] == "views"


def test_observations_without_images_carry_no_panorama(tiny_world):
    assert at_b(tiny_world, None).panorama is None


# --- the paper profile ---------------------------------------------------------------------------

def test_paper_asks_both_prompts_at_every_step(tiny_world):
    obs = at_b(tiny_world, FlatViews())
    agent = VlmPolicy(backend_instance=(backend := Scripted([paper_stop(True), paper_choice("C", 0.4)])),
                      prompt_profile="paper")
    assert agent.act(obs) == STOP  # the stop prompt decides; the choice was asked all the same
    assert [len(c) for c in backend.calls] == [1, 1]
    record = agent.step_records()[0]
    assert record["prompt_profile"] == "paper" and record["prompt_version"] == PAPER.version
    assert len(record["prompt_hash"]) == 2 and not record["fallback"]
    # an unreadable choice after a stop is not re-asked and is no fallback
    agent = VlmPolicy(backend_instance=(backend := Scripted([paper_stop(True), "no idea"])), prompt_profile="paper")
    assert agent.act(obs) == STOP and [len(c) for c in backend.calls] == [1, 1]
    assert not agent.step_records()[0]["fallback"]
    improved = VlmPolicy(backend_instance=(b2 := Scripted([stop(True)])))
    assert improved.act(obs) == STOP and [len(c) for c in b2.calls] == [1]


def test_paper_messages_follow_the_appendix(tiny_world):
    obs = at_b(tiny_world, FlatViews())
    context = PromptContext(backtrack="You have just backtracked; please choose view B.", history="X -> Y")
    stop_request = PAPER.stop(obs, context, 64, None)
    choice_request = PAPER.choice(obs, context, 64, None)
    roles = {m.role for r in (stop_request, choice_request) for m in r.messages}
    assert roles == {"user"}  # user messages only, as the reference sends them
    texts = [m.content[0] for m in choice_request.messages]
    assert texts[0].startswith("Instruction: You are a helpful robot that analyses multiple candidate images")
    assert texts[1].startswith("Output Format: ") and texts[2].startswith("Example:\nInput:")
    assert texts[3] == ("There are 3 perspectives. Make sure the number of observations equals the number of "
                        "perspectives provided.")
    assert texts[4].startswith('{"A": "BACK", "B": "FRONT", "C": "LEFT"}. Prioritise the FORWARD, LEFT, and RIGHT')
    assert texts[5] == context.backtrack and texts[6] == "Visit trajectory so far: X -> Y."
    assert texts[7] == "I'm thirsty.\nYou are now at viewpoint 00000001."
    assert all(isinstance(c, np.ndarray) for c in choice_request.messages[8].content)  # unlabelled, in order
    assert len(choice_request.messages) == 9
    assert [m.content[0] for m in stop_request.messages][4] == context.backtrack
    assert "output action -1 for stop; otherwise 0" in stop_request.messages[2].content[0]


@pytest.mark.parametrize("reply, index, error", [
    ('{"action": 0, "score": 0.7}', 0, None),
    ('{"action": 1, "score": 0.7}', 1, None),
    ('{"action": "2", "score": 0.7}', 2, None),
    ('{"action": 3, "score": 0.7}', None, "out of range: 0..2"),
    ('{"action": "B", "score": 0.7}', 1, None),
    ('{"action": "C", "score": 0.7}', 2, None),
])
def test_paper_reads_a_bare_number_from_zero(reply, index, error):
    parsed = parse_choice_zero_based(reply, 3, ("BACK", "FRONT", "LEFT"))
    assert parsed.action_index == index
    assert (parsed.error is None) if error is None else (error in parsed.error)


class RedViews(ViewSource):
    name = "red"

    def images(self, node, headings):
        return [np.tile(np.array([200, 0, 0], np.uint8), (4, 4, 1)) for _ in headings]


def test_reproduction_switches(tiny_world):
    obs = at_b(tiny_world, RedViews())
    agent = VlmPolicy(backend_instance=(backend := Scripted([paper_stop(False), paper_choice("A")])),
                      prompt_profile="paper", json_schema=False, swap_red_blue=True, swap_left_right=True)
    assert agent.act(obs) == move(0)
    stop_request, choice_request = backend.calls[0][0], backend.calls[1][0]
    assert stop_request.json_schema is None and choice_request.json_schema is None
    # LEFT (north, counter-clockwise of east) is called RIGHT, as the reference calls it
    assert choice_request.messages[4].content[0].startswith('{"A": "BACK", "B": "FRONT", "C": "RIGHT"}')
    assert all(im[..., 2].max() == 200 and im[..., 0].max() == 0 for im in choice_request.images)  # red sent as blue
    plain = VlmPolicy(backend_instance=(b2 := Scripted([paper_stop(False), paper_choice("A")])),
                      prompt_profile="paper")
    plain.act(obs)
    assert b2.calls[1][0].json_schema is not None
    assert b2.calls[1][0].messages[4].content[0].startswith('{"A": "BACK", "B": "FRONT", "C": "LEFT"}')
    assert all(im[..., 0].max() == 200 and im[..., 2].max() == 0 for im in b2.calls[1][0].images)


def test_bad_profile_settings_fail_at_construction():
    with pytest.raises(ConfigError, match="prompt_profile must be one of improved, paper"):
        VlmPolicy(backend_instance=Scripted([]), prompt_profile="nope")
    with pytest.raises(ConfigError, match="no single-call form"):
        VlmPolicy(backend_instance=Scripted([]), prompt_profile="paper", mode="single-call")
    with pytest.raises(ConfigError, match="stop_view must be one of panorama, views"):
        VlmPolicy(backend_instance=Scripted([]), stop_view="pano")
    with pytest.raises(ConfigError, match="swap_red_blue must be true or false"):
        VlmPolicy(backend_instance=Scripted([]), swap_red_blue="yes")


def test_template_hashes_name_the_wording():
    hashes = {name: p.template_hash for name, p in PROFILES.items()}
    assert len(set(hashes.values())) == 2 and all(len(h) == 16 for h in hashes.values())
    assert prompt_record("vlm", {"prompt_profile": "paper"})["template_hash"] == hashes["paper"]
    assert prompt_record("random", {}) is None


# --- golden: what a paper run sends ----------------------------------------------------------------

def _completion(content: str) -> dict:
    return {"body": {"id": "x", "object": "chat.completion", "model": MODEL,
                     "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                                  "content": content}}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}}


def _placeholders(messages: list[dict]) -> tuple[list[dict], list[np.ndarray]]:
    """Messages with every image replaced by its size (JPEG bytes vary with the encoder version);
    the decoded images are returned to be checked apart."""
    images: list[np.ndarray] = []
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            parts = []
            for p in content:
                if p["type"] == "image_url":
                    _, image = decode(p["image_url"]["url"])
                    images.append(image)
                    p = {"type": "image_url", "image_url": {"url": f"<image {image.shape[1]}x{image.shape[0]}>"}}
                parts.append(p)
            content = parts
        out.append({"role": m["role"], "content": content})
    return out, images


def test_a_paper_run_sends_the_golden_messages(tiny_city, tiny_world, tmp_path, monkeypatch):
    """`cityseeker benchmark --param prompt_profile=paper` against the canned server: the step
    at junction B (stop call, then choice call) equals tests/core/agents/vlm/fixtures/paper_step.json."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    folder = marker_panoramas(tiny_world, tmp_path / "panos", "google")
    server = CannedServer()
    try:
        server.script.extend(_completion(r) for r in (paper_stop(False), json.dumps(
            {"perspective_observation": {"A": "east"}, "thoughts": "on", "action": "A", "score": 0.9}),
            paper_stop(False), paper_choice("B")))
        args = ["benchmark", "--data", str(tiny_city), "--policy", "vlm", "--backend", "openai", "--model", MODEL,
                "--backend-param", f"base_url={server.url}", "--backend-param", "timeout_s=5",
                "--param", "prompt_profile=paper", "--views", "panorama-folder", "--view-param", f"folder={folder}",
                "--view-param", f"pano_width={PANO_WIDTH}", "--view-param", "width=32", "--view-param", "height=16",
                "--limit", "1", "--max-steps", "2", "--out", str(tmp_path / "out"), "--no-progress"]
        assert main(args) == 0
        posts = server.posts()
    finally:
        server.close()
    assert len(posts) == 4  # two calls at each of the two steps
    sent, images = _placeholders([m for p in posts[2:] for m in p["body"]["messages"]])
    golden = json.loads((FIXTURES / "paper_step.json").read_text(encoding="utf-8"))
    assert sent == golden
    assert all(p["body"].get("response_format") for p in posts)  # the JSON schema fix stays on
    pano, *views = images
    assert pano.shape == (PANO_WIDTH // 2, PANO_WIDTH, 3) and abs(marker_column(pano) - PANO_WIDTH / 4) <= 1.5
    assert [v.shape for v in views] == [(16, 32, 3)] * 3
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for record in (config["prompt"], summary["config"]["prompt"]):
        assert record["profile"] == "paper" and record["template_hash"] == PAPER.template_hash


def test_a_run_with_other_prompts_is_not_resumed(tmp_path):
    """The prompt record is result-defining: a folder made with the improved prompts refuses a
    paper run (different template hash) instead of pooling their episodes."""
    from cityseeker_ros.core.evaluation.benchmark import check_resume
    from cityseeker_ros.core.evaluation.config import CONFIG_FILE, RESULT_DEFINING

    base = {k: None for k in RESULT_DEFINING}
    (tmp_path / CONFIG_FILE).write_text(json.dumps({**base, "prompt": prompt_record("vlm", {})}))
    check_resume(tmp_path, {**base, "prompt": prompt_record("vlm", {})})  # same prompts: resumable
    with pytest.raises(ConfigError, match="prompt"):
        check_resume(tmp_path, {**base, "prompt": prompt_record("vlm", {"prompt_profile": "paper"})})

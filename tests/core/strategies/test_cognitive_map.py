import json

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.strategies import make_strategy
from tests.core.scripted import NODE, ContextScript

WALK = [("A", 0, 0.9), ("B", 2, 0.8), ("E", "stop", 0.6)]


def surroundings(script):
    return {step: ctx.surroundings for step, ctx in script.contexts}


def test_c1_and_c2_map_earlier_rounds_from_the_first_decision_of_the_next(supervise):
    first = ContextScript(WALK)
    supervise(first, ["C1", "C2"], rounds=2, round=0)
    assert all(v is None for v in surroundings(first).values())
    second = ContextScript(WALK)
    record, _ = supervise(second, ["C1", "C2"], rounds=2, round=1)
    text = surroundings(second)[0]
    assert f"{NODE['A']} (start): action 0 -> {NODE['B']}" in text and f"{NODE['B']}: action 2 -> {NODE['E']}" in text
    assert f"From the start, facing 90°: {NODE['E']}: 20-50 m ahead-left, walked through 1 time(s), " \
           "a walk ended here (stopped)" in text
    assert surroundings(second)[2] == text  # made once per round
    assert [e["kind"] for e in record["supervisor"]["events"]].count("map") == 2


def test_c1_reads_earlier_runs_trajectories_from_files(supervise, tmp_path):
    earlier = {"episode_id": "tinytown-0", "seed": 0, "path": [NODE[k] for k in "ABCB"], "actions": [0, 1, "back"],
               "end_reason": "budget_exhausted"}
    other = {**earlier, "episode_id": "tinytown-1", "path": [NODE["E"]], "actions": []}
    runs = tmp_path / "episodes.jsonl"
    runs.write_text("\n".join(json.dumps(r) for r in (earlier, other)) + "\n")
    script = ContextScript(WALK)
    supervise(script, [{"name": "C1", "trajectories": [str(runs)]}])
    text = surroundings(script)[0]
    assert f"{NODE['C']}: walking back -> {NODE['B']}" in text and NODE["E"] not in text


def test_a_missing_or_broken_trajectories_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="trajectories file .*nope.jsonl does not exist"):
        make_strategy({"name": "C1", "trajectories": [str(tmp_path / "nope.jsonl")]})
    with pytest.raises(ConfigError, match="summariser must be a mapping with a backend name"):
        make_strategy({"name": "C2", "summariser": "gpt"})


def test_an_optional_summariser_rewrites_the_map_through_the_backend_registry(supervise, monkeypatch):
    from cityseeker_ros.core.agents.vlm.backend import BACKENDS, Backend, Generation

    class Summary(Backend):
        """Answers with the size of what it was asked to summarise."""

        name = "map-summary"
        asked: list = []

        def __init__(self, style: str = "short") -> None:
            self.style = style

        def generate(self, requests):
            Summary.asked += [r.messages[0].content[0] for r in requests]
            return [Generation(f"{self.style} map of {len(Summary.asked[-1])} chars") for _ in requests]

    monkeypatch.setitem(BACKENDS._entries, "map-summary", Summary)  # registered for this test only
    supervise(ContextScript(WALK), ["C1"], rounds=2, round=0)
    script = ContextScript(WALK)
    supervise(script, [{"name": "C1", "summariser": {"backend": "map-summary", "style": "terse"}}], rounds=2, round=1)
    assert Summary.asked and Summary.asked[-1].startswith("Given the following trajectories")
    assert surroundings(script)[0].startswith("terse map of ")

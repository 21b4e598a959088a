import json

import numpy as np

from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.sensing.views.source import ViewSource
from cityseeker_ros.core.tasks.environment import BACK
from tests.core.agents.vlm.test_policy import Scripted, text_of
from tests.core.scripted import NODE, ContextScript

WALK = [("A", 0, 0.9), ("B", 1, 0.8), ("C", 1, 0.7), ("D", "stop", 0.6)]


def told(script, slot):
    return {step: getattr(ctx, slot) for step, ctx in script.contexts}


def test_r3_gives_the_last_n_steps_with_where_what_and_why(supervise):
    script = ContextScript(WALK)
    supervise(script, [{"name": "R3", "n": 2}])
    history = told(script, "history")
    assert history[0] is None  # nothing walked yet
    assert history[3].count("step ") == 2 and "step 1 at 00000001" in history[3] and "step 0" not in history[3]
    assert "chose view B (FRONT, 90°), confidence 0.70 because \"scripted\"" in history[3]
    assert "(0.00000, 0.00036) facing 90°" in history[3]


class Gray(ViewSource):
    """Plain grey views: the prompt's text is what this test reads."""

    def images(self, node, headings):
        return [np.full((32, 48, 3), 128, np.uint8) for _ in headings]


def test_r3_history_reaches_the_vlm_prompt(supervise):
    """The reference code built R3's history and never put it in the prompt: here it is in the
    text the model is sent."""
    reply = {"observations": [{"view": "A", "description": "a street"}], "thoughts": "east", "action": "A",
             "confidence": 0.8}
    backend = Scripted([json.dumps(reply)] * 3 + [json.dumps({**reply, "action": "STOP"})])
    agent = VlmPolicy(backend_instance=backend, mode="single-call")
    supervise(agent, ["R3"], views=Gray())
    texts = [text_of(call[0]) for call in backend.calls]
    assert "Visit trajectory so far" not in texts[0]
    assert "Visit trajectory so far" in texts[2] and "step 1 at 00000001" in texts[2]
    assert 'because "east"' in texts[2]


def test_r1_and_r2_recall_earlier_rounds_only_in_the_final_round(supervise):
    first = ContextScript(WALK)
    supervise(first, ["R1", "R2", "R3"], rounds=2, round=0)
    assert all(v is None for v in told(first, "surroundings").values())  # round 0: nothing to recall
    final = ContextScript(WALK)
    record, _ = supervise(final, ["R1", "R2", "R3"], rounds=2, round=1)
    at_b = told(final, "surroundings")[1]
    assert "within 2 hops of here" in at_b and f"{NODE['B']} (here): visited 1 time(s)" in at_b
    assert f"{NODE['A']} -> {NODE['B']}: taken 1x" in at_b
    assert "within 50 m of here" in at_b and f"{NODE['D']} (20-50 m ahead)" in at_b
    assert any(e["kind"] == "retrieved" and e["strategy"] == "R1" and e["detail"]["items"] > 0
               for e in record["supervisor"]["events"])


def test_memory_of_episode_a_is_not_visible_in_episode_b(supervise):
    supervise(ContextScript(WALK), ["R1", "R2"], rounds=2, round=0, episode=0)
    other_episode = ContextScript(WALK)
    supervise(other_episode, ["R1", "R2"], rounds=2, round=1, episode=1)
    other_seed = ContextScript(WALK)
    supervise(other_seed, ["R1", "R2"], rounds=2, round=1, episode=0, seed=1)
    other_run = ContextScript(WALK)
    supervise(other_run, ["R1", "R2"], rounds=2, round=1, episode=0, run_id="another run")
    for script in (other_episode, other_seed, other_run):
        assert all(v is None for v in told(script, "surroundings").values())
    same = ContextScript(WALK)
    supervise(same, ["R1", "R2"], rounds=2, round=1, episode=0)
    assert told(same, "surroundings")[0] is not None


def test_backtracked_hops_are_remembered_as_wrong_turns(supervise):
    script = ContextScript([("A", 0, 0.9), ("B", 1, 0.9), ("C", 1, 0.5), ("D", 0, 0.5), ("B", "stop", 0.9)])
    record, sup = supervise(script, ["B1"])
    assert record["actions"][3:5] == [BACK, BACK]
    edges = supervise.store.edges(sup.state.key)
    outcome = {(e.source[-1], e.target[-1]): e.outcome for e in edges}
    assert outcome[("1", "2")] == outcome[("2", "3")] == "backtracked" and outcome[("0", "1")] == "taken"


def test_supervised_vlm_episodes_in_lockstep_share_one_batched_call(tiny_world, tmp_path):
    """Two supervised VLM episodes in lockstep: one backend call per step for both, and each
    prompt carries its own episode's R3 history."""
    from cityseeker_ros.core.agents.memory import SqliteMemoryStore
    from cityseeker_ros.core.evaluation.episode_run import EpisodeRun, run_together
    from cityseeker_ros.core.strategies import BcrPolicy, make_strategy

    reply = json.dumps({"observations": [{"view": "A", "description": "a street"}], "thoughts": "on",
                        "action": "A", "confidence": 0.9})
    backend = Scripted([reply] * 6)
    store = SqliteMemoryStore(tmp_path / "m.sqlite")
    runs = []
    for episode in tiny_world.episodes[:2]:
        sup = BcrPolicy(VlmPolicy(backend_instance=backend, mode="single-call"), [make_strategy({"name": "R3"})],
                         store, "run")
        sup.begin_round(0, 0)
        runs.append(EpisodeRun(tiny_world, episode, sup, 0, max_steps=3, views=Gray()))
    records = run_together(runs)
    assert [len(call) for call in backend.calls] == [2, 2, 2]
    second_step = [text_of(r) for r in backend.calls[1]]
    assert all("step 0 at 00000000" in t for t in second_step)
    assert [r["episode_id"] for r in records] == ["tinytown-0", "tinytown-1"]
    assert all(r["steps"] == 3 and len(r["decisions"]) == 3 for r in records)

import json

import numpy as np
import pytest

from cityseeker_ros.core.agents.policies import POLICIES, make_policy
from cityseeker_ros.core.agents.vlm.backend import BACKENDS, Backend, BackendError, Generation, Latency
from cityseeker_ros.core.agents.vlm.policy import VlmPolicy
from cityseeker_ros.core.agents.vlm.prompts import PROMPT_VERSION, PromptContext, prompt_hash
from cityseeker_ros.core.evaluation.episode_run import run_episode
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.tasks.environment import STOP, Environment, Observation, move
from tests.core.agents.vlm.test_prompts import observation, text_of


class Scripted(Backend):
    """Canned replies in order; an exception in the script is raised by the call that reaches it."""

    name = "scripted"

    def __init__(self, replies, **params) -> None:
        self.replies = list(replies)
        self.params = params
        self.calls: list[list] = []
        self.closed = False

    def generate(self, requests):
        self.calls.append(list(requests))
        out = []
        for _ in requests:
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            out.append(Generation(reply, Latency(preprocess_s=0.01, generate_s=0.25), prompt_tokens=100,
                                  completion_tokens=20))
        return out

    def describe(self):
        return {"name": self.name, "model": "canned"}

    def close(self):
        self.closed = True


def choice(action, confidence=0.8):
    return json.dumps({"observations": [{"view": "A", "description": "a"}, {"view": "B", "description": "b"},
                                        {"view": "C", "description": "c"}],
                       "thoughts": f"going {action}", "action": action, "confidence": confidence})


def stop(flag, confidence=0.9):
    return json.dumps({"observation": "shops", "thoughts": "here?" if flag else "not here", "stop": flag,
                       "confidence": confidence})


def policy(replies, **params) -> tuple[VlmPolicy, Scripted]:
    backend = Scripted(replies)
    return VlmPolicy(backend_instance=backend, **params), backend


def at_b(tiny_world) -> Observation:
    """The tiny city's junction B, walking east: views A = back (west), B = front (east), C = left (north)."""
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    return env.step(move(0)).observation


def test_two_call_flow_asks_stop_then_choice(tiny_world):
    obs = at_b(tiny_world)
    agent, backend = policy([stop(False), choice("C", 0.6)])
    assert agent.act(obs) == move(2)
    stop_request, choice_request = backend.calls[0][0], backend.calls[1][0]
    assert [len(c) for c in backend.calls] == [1, 1]
    assert "stop" in stop_request.json_schema["properties"] and "View C (LEFT, 0°)" in text_of(choice_request)
    [record] = agent.step_records()
    assert record["step"] == 1 and record["mode"] == "two-call" and record["prompt_version"] == PROMPT_VERSION
    assert record["prompt_hash"] == [prompt_hash(stop_request), prompt_hash(choice_request)]
    assert record["raw"] == [stop(False), choice("C", 0.6)]
    assert record["decision"] == {"action": 2, "confidence": 0.6, "thoughts": "going C",
                                  "observations": [{"view": v, "description": v.lower()} for v in "ABC"]}
    assert (record["retries"], record["fallback"], record["parse_error"], record["problems"]) == (0, False, None, [])
    assert record["stop_check"] == {"stop": False, "confidence": 0.9, "thoughts": "not here", "observation": "shops"}
    latency = record["latency_s"]
    assert latency["preprocess"] == pytest.approx(0.02) and latency["generate"] == pytest.approx(0.5)
    assert 0 < latency["parse"] <= latency["total"]
    assert record["tokens"] == {"prompt": 200, "completion": 40}
    json.dumps(record)  # episodes.jsonl must be able to store it


def test_two_call_stops_without_a_choice(tiny_world):
    agent, backend = policy([stop(True, 0.95)])
    assert agent.act(at_b(tiny_world)) == STOP
    [record] = agent.step_records()
    assert len(backend.calls) == 1 and isinstance(record["prompt_hash"], str)
    assert record["decision"]["action"] is None and record["decision"]["confidence"] == 0.95


def test_single_call_flow(tiny_world):
    obs = at_b(tiny_world)
    agent, backend = policy([choice("B"), choice("STOP", 0.7)], mode="single-call")
    assert agent.act(obs) == move(1)
    assert agent.act(obs) == STOP
    assert [len(c) for c in backend.calls] == [1, 1]
    assert backend.calls[0][0].json_schema["properties"]["action"]["enum"] == ["A", "B", "C", "STOP"]
    records = agent.step_records()
    assert [r["decision"]["action"] for r in records] == [1, None] and "stop_check" not in records[0]
    assert isinstance(records[0]["prompt_hash"], str)


def test_a_bad_reply_is_retried_with_the_parser_error(tiny_world):
    agent, backend = policy(["I think the avenue.", choice("B")], mode="single-call")
    assert agent.act(at_b(tiny_world)) == move(1)
    first, retry = backend.calls[0][0], backend.calls[1][0]
    assert "could not be used" not in text_of(first)
    assert ("Note about your previous answer: your previous reply could not be used "
            "(no JSON object and no recognisable answer)") in text_of(retry)
    [record] = agent.step_records()
    assert record["retries"] == 1 and not record["fallback"] and record["parse_error"] is None
    assert record["prompt_hash"] == [prompt_hash(first), prompt_hash(retry)] and len(set(record["prompt_hash"])) == 2
    assert record["raw"] == ["I think the avenue.", choice("B")]
    assert "single: attempt 1 unusable: no JSON object and no recognisable answer" in record["problems"]


@pytest.mark.parametrize("fallback, expected", [("first", move(0)), ("forward", move(1)), ("stop", STOP)])
def test_two_bad_replies_fall_back(tiny_world, fallback, expected):
    agent, backend = policy([choice("Z"), choice("Q")], mode="single-call", fallback=fallback)
    assert agent.act(at_b(tiny_world)) == expected  # forward: east, the way it walks
    [record] = agent.step_records()
    assert record["fallback"] and record["retries"] == 1 and len(backend.calls) == 2
    assert record["parse_error"] == "action 'Q' is out of range: the views are A-C"
    assert record["decision"] == {"action": expected.index, "confidence": 0.0, "thoughts": "", "observations": []}


def test_an_unreadable_stop_reply_continues_unless_the_fallback_stops(tiny_world):
    agent, backend = policy(["??", "!!", choice("C")])
    assert agent.act(at_b(tiny_world)) == move(2)  # the paper's action 0 of the stop prompt: go on
    [record] = agent.step_records()
    assert record["fallback"] and record["stop_check"] is None and len(record["raw"]) == 3
    assert record["decision"]["action"] == 2
    agent, backend = policy(["??"], fallback="stop", retries=0)
    assert agent.act(at_b(tiny_world)) == STOP and len(backend.calls) == 1


def test_backend_errors_propagate_and_end_the_episode_with_error(tiny_world):
    agent, _ = policy([BackendError("server down")])
    with pytest.raises(BackendError, match="server down"):
        agent.act(at_b(tiny_world))
    agent, _ = policy([stop(False), choice("A"), BackendError("out of memory")])  # A has one view
    record = run_episode(tiny_world, tiny_world.episodes[0], agent, seed=0)
    assert record["end_reason"] == "error" and "BackendError: out of memory" in record["error"]
    assert record["path"] == ["00000000", "00000001"] and len(record["decisions"]) == 1


def test_a_backend_that_loses_replies_is_a_backend_error(tiny_world):
    class Lossy(Scripted):
        def generate(self, requests):
            return super().generate(requests)[:-1]

    agent = VlmPolicy(backend_instance=Lossy([stop(False)]))
    with pytest.raises(BackendError, match="0 replies for 1 requests"):
        agent.act(at_b(tiny_world))


def test_act_batch_sends_one_generate_call_per_round():
    observations = [observation(facing=f) for f in (0.0, 90.0, 180.0)]
    agent, backend = policy([choice("A"), choice("STOP"), choice("C")], mode="single-call")
    assert agent.act_batch(observations) == [move(0), STOP, move(2)]
    assert [len(c) for c in backend.calls] == [3]
    assert [r["decision"]["action"] for r in agent.step_records()] == [0, None, 2]
    # Two-call: a stop round for all, then a choice round for those that went on.
    agent, backend = policy([stop(False), stop(True), stop(False), choice("B"), choice("D")])
    assert agent.act_batch(observations) == [move(1), STOP, move(3)]
    assert [len(c) for c in backend.calls] == [3, 2]


def test_contexts_and_environment_feedback_reach_the_prompt(tiny_world):
    obs = at_b(tiny_world)
    rejected = Observation(**{**obs.__dict__, "feedback": "action 7 is not a view index; choose 0..2 or stop"})
    agent, backend = policy([choice("A")], mode="single-call")
    agent.act(rejected, PromptContext(history="00000000 -> 00000001"))
    text = text_of(backend.calls[0][0])
    assert "Visit trajectory so far: 00000000 -> 00000001" in text
    assert "the environment rejected your previous action: action 7 is not a view index" in text


def test_images_are_sent_when_the_views_have_them():
    obs = observation()
    agent, backend = policy([choice("A")], mode="single-call")
    agent.act(obs)
    sent = backend.calls[0][0].images
    assert len(sent) == 4 and all(a is v.image for a, v in zip(sent, obs.views))


def test_dead_ends_stop_without_asking():
    agent, backend = policy([])
    assert agent.act(observation(headings=())) == STOP and backend.calls == []
    assert agent.step_records()[0]["problems"] == ["no walkable view: stopped without asking"]


def test_reset_clears_the_step_log(tiny_world):
    agent, _ = policy([choice("A")] * 2, mode="single-call")
    agent.act(at_b(tiny_world))
    agent.reset(tiny_world.episodes[0], np.random.default_rng(0))
    assert agent.step_records() == []
    agent.act(at_b(tiny_world))
    assert len(agent.step_records()) == 1


def test_registered_and_checked_at_construction():
    assert "vlm" in POLICIES.names() and VlmPolicy.uses_images
    with pytest.raises(ConfigError, match="unknown VLM backend 'nope'; known:"):
        make_policy("vlm", backend="nope")
    with pytest.raises(ConfigError, match="name a backend"):
        make_policy("vlm")
    for bad in ({"mode": "three-call"}, {"fallback": "random"}, {"retries": -1}, {"max_new_tokens": 0},
                {"backend_params": "x"}, {"model": "m", "backend_params": {"model": "n"}}):
        with pytest.raises(ConfigError):
            VlmPolicy(backend_instance=Scripted([]), **bad)
    with pytest.raises(ConfigError, match="bad parameters"):
        make_policy("vlm", backend_instance=Scripted([]), temperature=0.3)


def test_the_backend_is_made_on_first_use(monkeypatch, tiny_world):
    made = []

    def factory(**params):
        made.append(params)
        return Scripted([choice("B")], **params)

    monkeypatch.setitem(BACKENDS._entries, "scripted-test", factory)
    agent = make_policy("vlm", backend="scripted-test", model="tiny", backend_params={"device": "cpu",
                                                                                      "api_key": "s3cret"},
                        mode="single-call")
    assert made == []
    before = agent.describe()
    assert before["loaded"] is False and before["api_key"] == "***" and before["model"] == "tiny"
    assert before["prompt_version"] == PROMPT_VERSION and before["mode"] == "single-call"
    assert agent.act(at_b(tiny_world)) == move(1)
    assert made == [{"device": "cpu", "api_key": "s3cret", "model": "tiny"}]
    after = agent.describe()
    assert after["name"] == "scripted" and after["model"] == "canned" and "loaded" not in after
    backend = agent.backend
    agent.close()
    assert backend.closed
    injected = Scripted([])
    VlmPolicy(backend_instance=injected).close()
    assert not injected.closed  # the caller's backend is the caller's to close

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.strategies import make_strategy
from tests.core.scripted import NODE, ContextScript, Script, letters


def kinds(record, kind):
    return [e for e in record["supervisor"]["events"] if e["kind"] == kind]


def test_b1_fires_twice_in_one_episode(supervise):
    """Unsure decisions walk back to the last sure node (B); the window starts afresh there,
    and three more unsure decisions fire again."""
    script = Script([("A", 0, 0.9), ("B", 1, 0.9), ("C", 1, 0.5), ("D", 0, 0.5),   # D: mean 0.63, back to B
                     ("B", 1, 0.2), ("C", 1, 0.2), ("D", 0, 0.2),                  # D: fires again
                     ("B", "stop", 0.9)])
    record, _ = supervise(script, ["B1"])
    fired = kinds(record, "backtrack")
    assert [(e["step"], e["detail"]["from"], e["detail"]["to"], e["detail"]["hops"]) for e in fired] == \
        [(3, NODE["D"], NODE["B"], 2), (7, NODE["D"], NODE["B"], 2)]
    assert letters(record["path"]) == "ABCDCBCDCB"
    assert record["actions"] == [0, 1, 1, "back", "back", 1, 1, "back", "back", None]
    assert record["end_reason"] == "stopped" and record["supervisor"]["backtracks"] == 2
    assert not script.script


def test_b1_cap_stops_a_loop_and_says_so(supervise):
    script = Script([("A", 0, 0.9), ("B", 1, 0.9), ("C", 1, 0.5), ("D", 0, 0.5),
                     ("B", 1, 0.2), ("C", 1, 0.2), ("D", 0, 0.2), ("C", "stop", 0.2)])
    record, _ = supervise(script, ["B1"], max_backtracks=1)
    assert len(kinds(record, "backtrack")) == 1
    assert [e["step"] for e in kinds(record, "capped")] == [7]
    assert letters(record["path"]) == "ABCDCBCDC" and record["end_reason"] == "stopped"


def test_b1_without_a_trusted_node_goes_back_k_steps(supervise):
    script = Script([("A", 0, 0.5), ("B", 1, 0.5), ("C", 1, 0.5), ("A", "stop", 0.9)])
    record, _ = supervise(script, ["B1"])
    (fired,) = kinds(record, "backtrack")
    assert fired["detail"]["to_step"] == 0 and "no trusted node" in fired["detail"]["reason"]
    assert letters(record["path"]) == "ABCBA"


def test_b1_never_fires_for_a_policy_without_confidence(supervise):
    script = Script([("A", 0, None), ("B", 1, None), ("C", 1, None), ("D", 0, None), ("C", "stop", None)])
    record, _ = supervise(script, ["B1"])
    assert kinds(record, "backtrack") == [] and letters(record["path"]) == "ABCDC"


def test_b1_high_confidence_does_not_fire(supervise):
    script = Script([("A", 0, 0.8), ("B", 1, 0.7), ("C", 1, 0.8), ("D", "stop", 0.9)])
    record, _ = supervise(script, ["B1"])
    assert kinds(record, "backtrack") == []


def test_b2_fires_when_the_goal_gets_further_k_times(supervise):
    """Episode 1's target is E (north of B). From B going east, every hop is one more from E."""
    script = Script([("A", 0, None), ("B", 1, None), ("C", 1, None), ("D", 0, None), ("B", "stop", None)])
    record, _ = supervise(script, [{"name": "B2", "oracle": True, "k": 2}], episode=1)
    (fired,) = kinds(record, "backtrack")
    assert fired["strategy"] == "B2" and fired["detail"]["to"] == NODE["B"]
    assert "1 -> 2 -> 3" in fired["detail"]["reason"]
    assert letters(record["path"]) == "ABCDCB"


def test_b3_hints_the_shortest_path_and_a_blind_policy_takes_it(supervise):
    """After B2 walks back to B, B3 hints north (towards E); a policy that cannot read is moved."""
    script = Script([("A", 0, None), ("B", 1, None), ("C", 1, None), ("D", 0, None), ("E", "stop", None)])
    record, _ = supervise(script, [{"name": "B2", "oracle": True, "k": 2},
                                   {"name": "B3", "oracle": True, "confidence_trigger": False}], episode=1)
    (hint,) = kinds(record, "hint")
    assert hint["detail"]["view"] == 2 and hint["step"] == 5
    assert letters(record["path"]) == "ABCDCBE" and record["metrics"]["tce"] == 100.0


def test_b3_hint_goes_into_the_prompt_of_a_policy_that_reads(supervise):
    script = ContextScript([("A", 0, None), ("B", 1, None), ("C", 1, None), ("D", 0, None), ("B", 0, None),
                            ("A", "stop", None)])
    record, _ = supervise(script, [{"name": "B2", "oracle": True, "k": 2},
                                   {"name": "B3", "oracle": True, "confidence_trigger": False}], episode=1)
    told = {step: ctx.backtrack for step, ctx in script.contexts}
    assert told[5] == "You have just backtracked; please choose view C."
    assert all(v is None for s, v in told.items() if s != 5)
    assert letters(record["path"]) == "ABCDCBA"  # it was told, and chose otherwise


def test_oracle_strategies_are_never_enabled_silently():
    for name in ("B2", "B3"):
        with pytest.raises(ConfigError, match=f"enable it explicitly as oracle:{name}"):
            make_strategy({"name": name})
    with pytest.raises(ConfigError, match="not an oracle strategy"):
        make_strategy({"name": "B1", "oracle": True})
    with pytest.raises(ConfigError, match="unknown strategy 'B9'; known: B1, B2, B3, C1, C2, R1, R2, R3"):
        make_strategy({"name": "B9"})
    with pytest.raises(ConfigError, match="strategy B1: k must be"):
        make_strategy({"name": "B1", "k": 0})

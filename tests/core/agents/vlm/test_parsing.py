import json
import math
import random
from collections import Counter

import pytest

from cityseeker_ros.core.agents.vlm.parsing import INTERNAL_ERROR, parse_choice, parse_single, parse_stop
from cityseeker_ros.core.agents.vlm.schema import ParsedDecision, ViewObservation

DIRECTIONS = ["FRONT", "RIGHT", "BACK"]
PARSE = {
    "choice": lambda text: parse_choice(text, 3, DIRECTIONS),
    "single": lambda text: parse_single(text, 3, DIRECTIONS),
    "stop": parse_stop,
}
OBS = [{"view": v, "description": d} for v, d in zip("ABC", ("A shop front.", "A wide avenue.", "A car park."))]


def reply(action, confidence=0.8, observations=OBS, thoughts="The avenue looks promising.", **extra) -> str:
    return json.dumps({"observations": observations, "thoughts": thoughts, "action": action,
                       "confidence": confidence, **extra})


def stop_reply(stop, **extra) -> str:
    return json.dumps({"observation": "A bakery and a bank.", "thoughts": "No drinks here.", "stop": stop,
                       "confidence": 0.7, **extra})


GOOD = reply("B")
# (mode, reply, expected, note): expected is the view position, "STOP", "CONTINUE" (the stop
# prompt's action 0) or "!<part of the error>"; note "" means no problems, otherwise a part of one.
CASES = [
    ("choice", GOOD, 1, ""),
    ("choice", f"```json\n{GOOD}\n```", 1, ""),
    ("choice", f"Sure! Here is my answer:\n{GOOD}\nLet me know if you need more.", 1, ""),
    ("choice", GOOD.replace("]", ",]").replace("}", ",}"), 1, "JSON repaired"),
    ("choice", "{'observations': [], 'thoughts': 'It is wide', 'action': 'C', 'confidence': 0.4}", 2, "JSON repaired"),
    ("choice", "{'action': 'A', 'confidence': None, 'thoughts': True, 'observations': []}", 0, "unreadable"),
    ("choice", '{"action": "C", // the plaza\n "confidence": 0.6 /* sure */, "thoughts": "x"}', 2, "JSON repaired"),
    ("choice", "{action: 'B', confidence: .9, thoughts: 'unquoted keys'}", 1, "JSON repaired"),
    ("choice", '{"action": "B" "confidence": 0.9 "thoughts": "no commas"}', 1, "JSON repaired"),
    ("choice", reply("view B"), 1, "read as view B"),
    ("choice", reply("(b)"), 1, "read as view B"),
    ("choice", reply("**C**"), 2, "read as view C"),
    ("choice", reply("Option A: the shop front"), 0, "read as view A"),
    ("choice", reply(1), 0, "read as view A"),
    ("choice", reply("2"), 1, "read as view B"),
    ("choice", reply("view 3"), 2, "read as view C"),
    ("choice", reply(0), 0, "read as view A"),
    ("choice", reply(2.0), 1, "read as view B"),
    ("choice", reply(["C"]), 2, "one-item list"),
    ("choice", reply("FRONT"), 0, "read as view A"),
    ("choice", reply("right"), 1, "read as view B"),
    ("choice", reply(4), "!out of range", None),
    ("choice", reply("D"), "!out of range: the views are A-C", None),
    ("choice", reply(-1), "!not an option here", None),
    ("choice", reply("STOP"), "!not an option here", None),
    ("choice", reply("the avenue"), "!is not a view letter", None),
    ("choice", reply(True), "!is not a view letter", None),
    ("choice", reply(2.5), "!is not a view letter", None),
    ("choice", reply({"view": "B"}), "!is not a view letter", None),
    ("choice", '{"action": 1' + "0" * 400 + "}", "!", None),
    ("choice", json.dumps({"thoughts": "The avenue looks promising.", "confidence": 0.9}), "!action missing", None),
    ("choice", json.dumps({"thoughts": "I choose view C, the plaza.", "confidence": 0.9}), 2, "read from the text"),
    ("choice", reply("B", confidence="80%"), 1, "read as 0.8"),
    ("choice", reply("B", confidence=float("nan")), 1, "unreadable; 0.5 assumed"),
    ("choice", reply("B", confidence=1.7), 1, "clamped to 1"),
    ("choice", reply("B", confidence=-0.2), 1, "clamped to 0"),
    ("choice", reply("B", confidence="high"), 1, "unreadable"),
    ("choice", GOOD.replace("0.8", "1e400"), 1, "clamped to 1"),
    ("choice", reply("B", observations=OBS[:2]), 1, "2 observations for 3 views"),
    ("choice", json.dumps({"perspective_observation": {"A": "x", "B": "y", "C": "z"}, "thoughts": "t",
                           "action": "A", "score": 0.78}), 0, ""),
    ("choice", json.dumps({"response": json.loads(GOOD)}), 1, "inside a wrapper"),
    ("choice", f"[{GOOD}]", 1, ""),
    ("choice", 'Format: {"note": 1}. My reply: ' + reply("C"), 2, ""),
    ("choice", "I choose view C because the avenue is wide.", 2, "read from the text"),
    ("choice", "I'll go with (A).", 0, "read from the text"),
    ("choice", "B", 1, "read from the text"),
    ("choice", "b.", 1, "read from the text"),
    ("choice", "Action: C\nConfidence: 0.6", 2, "read by pattern"),
    ("choice", GOOD[:GOOD.index('"confidence"') + 8], 1, "read by pattern"),
    ("choice", GOOD[:GOOD.index('"action"') - 3], "!no JSON object and no recognisable answer", None),
    ("choice", "I would choose A, or perhaps pick B.", "!several answers", None),
    ("choice", "", "!empty reply", None),
    ("choice", None, "!empty reply", None),
    ("choice", GOOD.encode(), 1, "reply was bytes"),
    ("choice", "I don't know.", "!no JSON object and no recognisable answer", None),
    ("single", reply("STOP"), "STOP", ""),
    ("single", reply("stop here"), "STOP", "read as STOP"),
    ("single", reply(-1), "STOP", "read as STOP"),
    ("single", json.dumps({"thoughts": "Arrived.", "stop": True, "confidence": 0.9}), "STOP", "read as STOP"),
    ("single", "I have arrived, so I will stop here.", "STOP", "read from the text"),
    ("single", "I should not stop yet; I choose view A.", 0, "read from the text"),
    ("single", reply("B"), 1, ""),
    ("single", reply("CONTINUE"), "!is not a view letter", None),
    ("stop", stop_reply(False), "CONTINUE", ""),
    ("stop", stop_reply(True), "STOP", ""),
    ("stop", json.dumps({"overall_observation": "x", "thoughts": "y", "action": -1, "confidence": 1}), "STOP", ""),
    ("stop", json.dumps({"overall_observation": "x", "thoughts": "y", "action": 0, "confidence": 1}), "CONTINUE", ""),
    ("stop", stop_reply("yes"), "STOP", "read as STOP"),
    ("stop", stop_reply("no"), "CONTINUE", "read as CONTINUE"),
    ("stop", stop_reply(1), "STOP", "read as STOP"),
    ("stop", stop_reply(2), "!neither", None),
    ("stop", stop_reply("maybe"), "!neither", None),
    ("stop", json.dumps({"observation": "x", "thoughts": "y", "action": True}), "!neither", None),
    ("stop", "STOP", "STOP", "read from the text"),
    ("stop", "CONTINUE", "CONTINUE", "read from the text"),
    ("stop", "Nothing to drink here, I will keep going.", "CONTINUE", "read from the text"),
    ("stop", "STOP or CONTINUE?", "!both", None),
    ("stop", stop_reply(False)[:stop_reply(False).index('"confidence"') + 6], "CONTINUE", "read by pattern"),
    ("stop", "The street is quiet.", "!no recognisable STOP or CONTINUE", None),
]


@pytest.mark.parametrize("mode, text, expected, note", CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_table(mode, text, expected, note):
    result = PARSE[mode](text)
    assert_valid(result, mode)
    if isinstance(expected, str) and expected.startswith("!"):
        assert result.error is not None and expected[1:] in result.error, result
        assert result.action_index is None and result.confidence == 0.0
        return
    assert result.error is None, result
    assert result.action_index == {"STOP": None, "CONTINUE": 0}.get(expected, expected)
    if note == "":
        assert result.problems == []
    elif note is not None:
        assert any(note in p for p in result.problems), result.problems


def test_fields_are_read_into_the_decision():
    result = parse_choice(reply("C", confidence="80%", thoughts="Cafés \u2615 and \ud83c\udfea"), 3)
    assert result.confidence == pytest.approx(0.8)
    assert result.thoughts == "Cafés ☕ and 🏪"  # escaped surrogate pairs joined
    assert result.observations == [ViewObservation(**o) for o in OBS]
    stop = parse_stop(stop_reply(True))
    assert stop.is_stop and stop.thoughts == "No drinks here." and stop.confidence == 0.7
    assert stop.observations == [ViewObservation(view="all", description="A bakery and a bank.")]
    lone = parse_choice('{"action": "A", "thoughts": "half \\ud83c pair"}', 3)
    lone.thoughts.encode("utf-8")  # lone surrogates would make the step log unwritable


# --- fuzz -----------------------------------------------------------------------------------

DESCRIPTIONS = ['A sign reads "OPEN 24h" {neon}', "Café ☕ – 咖啡店 and a 7-Eleven", "شارع واسع", "emoji 🏪🚇",
                "back\\slash and a tab\t", "two\nlines", "zero\u200bwidth", "", "a plain street", "'quoted'"]
THOUGHTS = ["The avenue looks promising.", "Shops are more likely on the wide street.", "Nothing useful here.",
            "A café sign is visible — 咖啡.", "Hmm: {not json}", ""]
PROSE = ["Here is my answer:\n", "Sure!\n", "Based on the images:\n", "", "```json\n", "Output:\n"]
JUNK = list('{}[]"\',:;\\/*#-+.0123456789eEaAbBzZ \n\t') + ["\u0000", "é", "咖", "🏪", "\u202e", "NaN", "Infinity",
                                                             "True", "null", "1e999", "9" * 500, "```"]


def dump(value, style: dict) -> str:
    """JSON in the dialects models write: quotes, constants, trailing commas, comments, keys."""
    if isinstance(value, dict):
        items = [f"{dump_key(k, style)}: {dump(v, style)}" for k, v in value.items()]
        return "{" + style["sep"].join(items) + ("," if style["trailing"] and items else "") + "}"
    if isinstance(value, list):
        items = [dump(v, style) for v in value]
        return "[" + style["sep"].join(items) + ("," if style["trailing"] and items else "") + "]"
    if isinstance(value, str):
        if style["quote"] == '"':
            return json.dumps(value, ensure_ascii=style["ascii"])
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"
    if isinstance(value, bool):
        return ("True" if value else "False") if style["python"] else ("true" if value else "false")
    if value is None:
        return "None" if style["python"] else "null"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return json.dumps(value)


def dump_key(key: str, style: dict) -> str:
    return key if style["bare_keys"] else dump(key, style)


def random_style(rng: random.Random) -> dict:
    comment = rng.choice(["", " /* c */ ", " // note\n", " # note\n"])
    return {"quote": rng.choice(['"', "'"]), "ascii": rng.random() < 0.5, "python": rng.random() < 0.3,
            "trailing": rng.random() < 0.3, "bare_keys": rng.random() < 0.2,
            "sep": rng.choice([", ", ",\n  ", ","]) + (comment if comment.endswith("\n") or not comment else comment)}


def intended(rng: random.Random, mode: str, n: int) -> tuple[dict, object]:
    """A valid reply as a dict, and the outcome it means (a view position or "STOP"/"CONTINUE")."""
    if mode == "stop":
        stop = rng.random() < 0.4
        return ({"observation": rng.choice(DESCRIPTIONS), "thoughts": rng.choice(THOUGHTS), "stop": stop,
                 "confidence": round(rng.random(), 2)}, "STOP" if stop else "CONTINUE")
    outcome = "STOP" if mode == "single" and rng.random() < 0.25 else rng.randrange(n)
    observations = [{"view": chr(65 + i), "description": rng.choice(DESCRIPTIONS)} for i in range(n)]
    action = "STOP" if outcome == "STOP" else chr(65 + outcome)
    return ({"observations": observations, "thoughts": rng.choice(THOUGHTS), "action": action,
             "confidence": round(rng.random(), 2)}, outcome)


def benign(rng: random.Random, obj: dict, mode: str, n: int) -> str:
    """Changes that leave the answer obvious: the parser must read the intended outcome."""
    obj = dict(obj)
    kind = rng.randrange(6)
    if kind == 0:  # confidence junk
        obj["confidence"] = rng.choice([float("nan"), "80%", 1e308, -5, "high", [0.3], None, True, "0.7", 7])
    elif kind == 1 and mode != "stop":  # observation count off
        obj["observations"] = obj["observations"][:rng.randrange(n)] + [{"view": "Q", "description": "extra"}]
    elif kind == 2:  # keys in other cases
        obj = {k.upper() if rng.random() < 0.5 else k.title(): v for k, v in obj.items()}
    elif kind == 3 and mode != "stop" and obj["action"] != "STOP":  # the letter dressed up
        letter = obj["action"]
        obj["action"] = rng.choice([f"view {letter}", f"({letter.lower()})", f"**{letter}**", f"{letter}.",
                                    ord(letter) - 64, str(ord(letter) - 64), f"Option {letter}: the street"])
    elif kind == 4:  # a wrapper object
        obj = {"response": obj} if rng.random() < 0.5 else {"result": {"decision_json": obj}}
    text = dump(obj, random_style(rng))
    fence = rng.random() < 0.4
    return rng.choice(PROSE) + ("```json\n" if fence else "") + text + ("\n```" if fence else "") + \
        rng.choice(["", "\nHope this helps.", "\n\nThat is my decision.", " "])


def destructive(rng: random.Random, obj: dict, mode: str, n: int) -> str:
    """The answer is gone or impossible: the parser must report an error, not guess."""
    obj = dict(obj)
    key = "stop" if mode == "stop" else "action"
    if rng.random() < 0.25:
        del obj[key]
    elif mode == "stop":
        obj[key] = rng.choice([None, [], {}, "maybe", 7, -3, "", "perhaps later", 0.5, [True, False]])
    else:
        bad = [None, [], {}, True, False, "", chr(65 + n + rng.randrange(26 - n)), n + 1 + rng.randrange(50), -7,
               3.5, "the avenue", {"view": "A"}, ["A", "B"], float("nan"), 10 ** 40]
        if mode == "choice":
            bad += ["STOP", -1, "stop here"]
        obj[key] = rng.choice(bad)
    return rng.choice(PROSE) + dump(obj, random_style(rng))


def noisy(rng: random.Random, obj: dict, mode: str, n: int) -> object:
    """Random damage: only the invariants can be checked."""
    text = dump(obj, random_style(rng)) if rng.random() < 0.5 else json.dumps(obj)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(9)
        if kind == 0 and text:
            text = text[:rng.randrange(len(text))]
        elif kind == 1 and text:
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(text) or 1)
                text = text[:i] + text[i + 1:]
        elif kind == 2:
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(text) + 1)
                text = text[:i] + rng.choice(JUNK) + text[i:]
        elif kind == 3:
            text = "[" * rng.randint(50, 1000) + "{" * rng.randint(0, 200) + text
        elif kind == 4:
            text = text + text.replace('"A"', '"B"')  # two answers
        elif kind == 5 and len(text) > 2:
            i, j = sorted(rng.sample(range(len(text)), 2))
            text = text[:i] + text[j] + text[i + 1:j] + text[i] + text[j + 1:]
        elif kind == 6:
            text = "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randint(0, 200))) + text
        elif kind == 7:
            text = text.replace("0.", rng.choice(["1e999", "-1e999", "9" * 400 + ".", "NaN", "inf"]), 1)
        else:
            text = rng.choice(PROSE) + text * rng.randint(1, 10)
    if rng.random() < 0.05:
        return text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.02:
        return rng.choice([None, 42, ["B"], {"action": "B"}])
    return text


def assert_valid(result: ParsedDecision, mode: str, n: int = 3) -> None:
    assert isinstance(result, ParsedDecision)
    assert isinstance(result.confidence, float) and math.isfinite(result.confidence)
    assert 0.0 <= result.confidence <= 1.0
    assert all(isinstance(p, str) for p in result.problems)
    assert all(isinstance(o, ViewObservation) for o in result.observations)
    assert isinstance(result.thoughts, str)
    if result.error is not None:
        assert not result.error.startswith(INTERNAL_ERROR), result.error
        assert result.action_index is None and result.confidence == 0.0
    elif mode == "choice":
        assert result.action_index is not None and 0 <= result.action_index < n
    elif mode == "single":
        assert result.action_index is None or 0 <= result.action_index < n
    else:
        assert result.action_index in (None, 0)
    json.dumps([result.thoughts, [o.model_dump() for o in result.observations], result.problems]).encode()


def parse(mode: str, text, n: int) -> ParsedDecision:
    if mode == "stop":
        return parse_stop(text)
    return (parse_choice if mode == "choice" else parse_single)(text, n)


def test_fuzz_malformed_replies_never_break_the_parser():
    rng = random.Random(20250612)
    seen: Counter = Counter()
    for _ in range(12_000):
        mode = rng.choice(["choice", "single", "stop"])
        n = rng.randint(1, 8)
        obj, outcome = intended(rng, mode, n)
        category = rng.choices(["benign", "destructive", "noisy"], weights=[3, 2, 5])[0]
        text = {"benign": benign, "destructive": destructive, "noisy": noisy}[category](rng, obj, mode, n)
        result = parse(mode, text, n)
        assert_valid(result, mode, n)
        if category == "benign":
            assert result.error is None, (text, result)
            assert result.action_index == {"STOP": None, "CONTINUE": 0}.get(outcome, outcome), (text, result)
        elif category == "destructive":
            assert result.error is not None, (text, result)
        seen[(category, "error" if result.error else "read")] += 1
    assert sum(seen.values()) == 12_000
    assert seen["benign", "read"] > 3000 and seen["destructive", "error"] > 2000
    # Noise must neither be waved through nor rejected wholesale.
    assert seen["noisy", "read"] > 1000 and seen["noisy", "error"] > 500, seen

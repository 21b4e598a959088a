"""Tolerant reading of VLM replies: repair what is obvious, refuse what is not, never raise.

The paper parses deterministically and falls back to action 0 when a reply cannot be read;
small models break JSON in many harmless ways, so a strict parser would turn formatting noise
into fallbacks and measure the parser instead of the model. Every repair is written to
`problems`, so the step log shows how much was repaired.

Rules, in order:

1. Text. A non-string reply is read as text (bytes as UTF-8 with replacement, lone surrogates
   as U+FFFD); a reply longer than MAX_CHARS characters is a runaway generation: only its head
   is read, and ParsedDecision.cut says so (the policy counts such replies).
2. JSON. Every `{` (at most MAX_STARTS) starts an attempt to read one object with a lenient
   reader: JSON plus single-quoted strings, unquoted keys, missing or trailing commas,
   comments (`//`, `/* */`, `#`), Python True/False/None, NaN/Infinity and `80%`. Fences
   and prose around the object are ignored. An object holding an action field (itself, or
   inside a wrapper such as `{"response": {...}}`, the first nested one) is an answer; failing
   that, the first object holding any decision field is read. Answers that differ (two
   objects, or a `key: value` line outside them) are an error, not a guess: JSON placed
   before the real answer must not decide. Keys are matched case-insensitively with aliases
   (`score` for confidence, `perspective_observation` for observations, ...).
3. Broken JSON. When no object holds an action, `key: value` pairs are read by pattern, so a
   truncated reply that got as far as `"action": "B"` (or plain `Action: B`) is still read;
   two such lines that differ are an error too.
4. Prose. Failing that, an obvious answer in prose counts: a bare `B` or `STOP`, or a verb
   followed by a capital letter ("I choose view C", "I'll go with (B)"); for the stop prompt an
   upper-case STOP/CONTINUE or a phrase such as "keep going". Two different answers are an
   error, not a guess.
5. Action (views). A letter in any dress (`B`, `b`, `view B`, `(b)`, `**B**`, `B - the avenue`);
   a number (`2`, `"2"`, `view 2`) is a 1-based position, A = 1, except 0, which can only be
   the first view; a relative direction (`FRONT_RIGHT`) names the one view with that label.
   STOP spellings (`STOP`, `stop here`, `halt`, `terminate`, `arrived`, -1) stop where stopping
   is an option (single prompt) and are an error where it is not (choice prompt). Anything else,
   a view that does not exist, booleans and containers are errors.
6. Stop decision. `stop` as a boolean, yes/no, true/false, 1/0 or STOP/CONTINUE; the paper's
   `action` -1 (stop) / 0 (continue) is read too. Continue is reported as action_index 0.
7. Confidence. A number, a numeric string or a percentage (`"80%"` = 0.8). Missing, NaN, or
   unreadable: DEFAULT_CONFIDENCE; out of [0, 1] (infinities included): clamped. Each is a problem.
8. Observations. A list of {view, description} objects or of strings, or the paper's
   {"A": "...", "B": "..."} mapping; a count other than the number of views is a problem, not
   an error. Thoughts: a string; anything else is kept as its JSON text with a problem.

9. Answers (families whose stop answers a question: `answers=True`). `answer` and
   `final_answer` are then the answer, never the action. A stop needs an answer: a string (a
   number is read as its text; a one-item list or an object holding `text`/`answer`/`value`
   is unwrapped), else an `Answer: ...` or `The answer is ...` line outside the JSON. An answer
   with no stop field counts as a stop; an answer beside "continue" is ignored. An empty answer,
   or one longer than MAX_ANSWER_CHARS, is an error (retried, then a counted fallback), as are
   two different answers.

On an error the decision has action_index None, confidence 0.0 and `error` set.

Time is linear in the reply, and bounded by MAX_CHARS: no pattern can split a run of characters
between two quantifiers in more than one way (a failed match never retries splits), the reader
never reads an object twice (what an attempt learnt about each `{` is kept) and reads at most
READ_FACTOR times the reply over all attempts. The worst 1 MB replies we could build parse in
under 50 ms (benchmarks/parse_worst.py, tests/core/agents/vlm/test_parsing_bounds.py).
"""
from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar

from cityseeker_ros.core.agents.vlm.schema import (
    LETTERS,
    MAX_ANSWER_CHARS,
    STOP_WORD,
    DecisionReply,
    ParsedDecision,
    StopDecision,
    ViewObservation,
)
from cityseeker_ros.core.infra.text import clean_text

MAX_CHARS = 16_000  # longer replies are runaway generations (~4,000 tokens); their head holds the answer if any
MAX_STARTS = 64  # `{` positions tried, so a reply full of braces costs bounded time
READ_FACTOR = 2  # the lenient reader reads at most this many times the reply over all its attempts
MAX_DEPTH = 48  # nesting the lenient reader follows; deeper is junk
DEFAULT_CONFIDENCE = 0.5  # neither sure nor unsure; below B1's 0.75 threshold on purpose
INTERNAL_ERROR = "parser failure"  # prefix of the error reported if this module has a bug

ACTION_KEYS = ("action", "choice", "answer", "final_answer", "selection", "selected", "selected_view",
               "chosen_view", "decision", "next_action")
STOP_KEYS = ("stop", "should_stop", "arrived", "at_destination", "is_destination")
CONFIDENCE_KEYS = ("confidence", "score", "confidence_score", "conf", "certainty", "probability")
THOUGHT_KEYS = ("thoughts", "thought", "reasoning", "rationale", "reason", "thinking", "explanation")
OBSERVATION_KEYS = ("observations", "perspective_observation", "perspective_observations", "view_observations",
                    "observation", "overall_observation", "views")
_DECISION_KEYS = frozenset(ACTION_KEYS + STOP_KEYS + CONFIDENCE_KEYS + THOUGHT_KEYS + OBSERVATION_KEYS)
# Where a stop answers a question, these hold the answer and the rest of ACTION_KEYS the action.
ANSWER_KEYS = ("answer", "final_answer")
MOVE_KEYS = tuple(k for k in ACTION_KEYS if k not in ANSWER_KEYS)


# --- lenient JSON ---------------------------------------------------------------------------

class _Fail(Exception):
    """Not a readable value at this position."""


class _TooDeep(_Fail):
    """Nested deeper than MAX_DEPTH: the same `{` read at a shallower depth may succeed."""


# No pattern here can split a run of characters between two quantifiers in more than one way, so
# a failed match gives characters back one at a time and never retries the splits of a run.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_DIGITS = re.compile(r"\d+")
_SIMPLE_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*|\d+)[ \t]*[:=]")  # what the general key path reads, faster
_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None, "True": True, "False": False,
                              "None": None, "NaN": math.nan, "nan": math.nan, "Infinity": math.inf,
                              "inf": math.inf}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))", re.S)
_COMMENT = r"(?:(?://|#)[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z))"
_SPACE = re.compile(rf"\s*(?:{_COMMENT}\s*)*", re.S)  # whitespace and comments
_SEPARATORS = re.compile(rf"[\s,]*(?:{_COMMENT}[\s,]*)*", re.S)  # and the commas between members, any number

# What earlier attempts learnt about the object at a `{`: (end, value, levels below it) when it
# was read, None when it cannot be read at any depth.
_Memo = dict[int, Optional[tuple[int, dict[str, Any], int]]]


class _Reader:
    """A recursive-descent reader for the JSON dialects models write; raises _Fail only.

    It reads `text[pos:end]` only, and shares `memo` with the other attempts on the same text,
    so an object is read once however many `{` positions around it are tried."""

    def __init__(self, text: str, pos: int, end: Optional[int] = None, memo: Optional[_Memo] = None) -> None:
        self.text, self.pos, self.depth, self.deepest = text, pos, 0, 0
        self.end = len(text) if end is None else end
        self.memo: _Memo = {} if memo is None else memo
        self.skipped = 0  # characters passed over by reusing an object read before
        self.open: list[int] = []  # where the objects being read start

    def skip(self, pattern: re.Pattern[str] = _SPACE) -> None:
        """Past whitespace and comments (commas too with _SEPARATORS); no regex call when there
        is nothing to pass, the usual case between tokens."""
        if self.pos < self.end:
            c = self.text[self.pos]
            if c.isspace() or c in "/#,":  # str.isspace is re's \s
                self.pos = pattern.match(self.text, self.pos, self.end).end()  # type: ignore[union-attr]

    def value(self) -> Any:
        self.skip()
        return self.item()

    def item(self) -> Any:
        """The value at `pos`, which is past any whitespace."""
        if self.pos >= self.end:
            raise _Fail
        c = self.text[self.pos]
        if c == "{":
            return self.object()
        if c == "[":
            return self.array()
        if c in "\"'":
            return self.string()
        sign = 1.0
        if c in "+-" and _IDENT.match(self.text, self.pos + 1, self.end):
            sign, self.pos = (-1.0 if c == "-" else 1.0), self.pos + 1
        number = _NUMBER.match(self.text, self.pos, self.end)
        if number:
            return self.number(number.group())
        ident = _IDENT.match(self.text, self.pos, self.end)
        if ident and ident.group() in _CONSTANTS:
            self.pos = ident.end()
            found = _CONSTANTS[ident.group()]
            return sign * found if isinstance(found, float) else found
        raise _Fail

    def number(self, literal: str) -> Any:
        self.pos += len(literal)
        if self.pos < self.end and self.text[self.pos] == "%":
            self.pos += 1
            return literal + "%"  # left to the confidence reader
        try:
            digits = literal.lstrip("+-")
            if digits.isdecimal() and len(digits) <= 300:
                return int(literal)
            return float(literal)  # huge literals become inf, never an exception
        except ValueError:
            raise _Fail from None

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _TooDeep
        self.deepest = max(self.deepest, self.depth)
        self.pos += 1

    def object(self) -> dict[str, Any]:
        start = self.pos
        if start in self.memo:
            return self.reuse(start)
        self.open.append(start)  # a failure fails every open object: _objects notes them in the memo
        outer_deepest, self.deepest = self.deepest, self.depth
        result = self.members()
        self.open.pop()
        self.memo[start] = (self.pos, result, self.deepest - self.depth - 1)
        self.deepest = max(outer_deepest, self.deepest)
        return result

    def reuse(self, start: int) -> dict[str, Any]:
        known = self.memo[start]
        if known is None:
            raise _Fail
        end, result, below = known
        if self.depth + 1 + below > MAX_DEPTH:
            raise _TooDeep
        if end > self.end:
            self.pos = self.end
            raise _Fail
        self.deepest = max(self.deepest, self.depth + 1 + below)
        self.skipped += end - start
        self.pos = end
        return result

    def members(self) -> dict[str, Any]:
        self.enter()
        result: dict[str, Any] = {}
        while True:
            self.skip(_SEPARATORS)
            if self.pos >= self.end:
                raise _Fail
            c = self.text[self.pos]
            if c == "}":
                self.pos += 1
                self.depth -= 1
                return result
            simple = _SIMPLE_KEY.match(self.text, self.pos, self.end)  # `key:` in one step, the usual case
            if simple:
                key, self.pos = simple.group(1), simple.end()
            else:
                if c in "\"'":
                    key = self.string()
                else:
                    ident = _IDENT.match(self.text, self.pos, self.end) or _DIGITS.match(self.text, self.pos, self.end)
                    if not ident:
                        raise _Fail
                    key, self.pos = ident.group(), ident.end()
                self.skip()
                if self.pos >= self.end or self.text[self.pos] not in ":=":
                    raise _Fail
                self.pos += 1
            result[key] = self.value()  # no comma needed before the next member

    def array(self) -> list[Any]:
        self.enter()
        result: list[Any] = []
        while True:
            self.skip(_SEPARATORS)
            if self.pos >= self.end:
                raise _Fail
            if self.text[self.pos] == "]":
                self.pos += 1
                self.depth -= 1
                return result
            result.append(self.item())

    def string(self) -> str:
        """A quoted string: it ends at the first quote after an even run of backslashes (a
        backslash escapes any character). Found with str.find, quote by quote: a regex loop
        over the escapes would keep a backtracking frame for each one."""
        t, quote, start = self.text, self.text[self.pos], self.pos
        at = start + 1
        while True:
            close = t.find(quote, at, self.end)
            if close < 0:
                self.pos = self.end  # searched that far
                raise _Fail  # unterminated
            before = close - 1
            while t[before] == "\\":  # the opening quote ends the run
                before -= 1
            if (close - 1 - before) % 2 == 0:
                break
            at = close + 1
        self.pos = close + 1
        body = t[start + 1:close]
        return clean_text(_ESCAPE.sub(_unescape, body) if "\\" in body else body)


def _unescape(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return chr(int(m.group(1), 16))
    return _ESCAPES.get(m.group(2), m.group(2))


def _norm_key(key: str) -> str:
    key = key.strip().lower()
    return key if key.isidentifier() else re.sub(r"[\s\-]+", "_", key)


def _normalised(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        out.setdefault(_norm_key(k), v)
    return out


def _nested(obj: Any, wanted: Callable[[dict[str, Any]], bool], depth: int = 0) -> Optional[dict[str, Any]]:
    """The first object, depth first, for which `wanted` holds: wrappers such as
    {"response": {...}} or [{...}] hide the decision one level down."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(obj, dict):
        norm = _normalised(obj)
        if wanted(norm):
            return norm
        children = obj.values()
    elif isinstance(obj, list):
        children = obj
    else:
        return None
    for child in children:
        found = _nested(child, wanted, depth + 1)
        if found is not None:
            return found
    return None


def _objects(text: str) -> Iterator[tuple[dict[str, Any], int, int]]:
    """Each readable object with its span; a failed `{` lets its inner objects be tried, which
    the shared memo answers without reading them again."""
    memo: _Memo = {}
    budget = READ_FACTOR * len(text)
    start = 0
    for _ in range(MAX_STARTS):
        i = text.find("{", start)
        if i < 0 or budget <= 0:
            return
        reader = _Reader(text, i, min(len(text), i + budget), memo)
        obj: Optional[dict[str, Any]] = None
        try:
            obj = reader.object()
        except (_TooDeep, RecursionError):
            pass  # the same `{` read at a shallower depth may succeed
        except _Fail:
            memo.update(dict.fromkeys(reader.open))  # fail at any depth: the same text fails the same way
        budget -= reader.pos - i - reader.skipped
        if obj is None:
            if reader.end < len(text) and reader.pos >= reader.end:
                return  # out of budget: what is left is not read
            start = i + 1
            continue
        yield obj, i, reader.pos
        start = reader.pos


def _strict_json_ok(source: str) -> bool:
    try:
        json.loads(source)
    except (ValueError, RecursionError):
        return False
    return True


def _note_repairs(obj: dict[str, Any], found: dict[str, Any], source: str, problems: list[str]) -> None:
    if not _strict_json_ok(source):
        problems.append("JSON repaired (quotes, commas, comments or constants)")
    if _normalised(obj) != found:
        problems.append("decision found inside a wrapper object")


_PATTERN_FIELD = re.compile(
    r"""(?<![A-Za-z0-9_])["']?(?P<key>[A-Za-z_][A-Za-z_\-]{0,30})["']?\s*[:=](?=(\s*))\2"""
    r"""(?P<value>"[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"""
    r"""|(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)%?|[A-Za-z]|STOP|stop|Stop|CONTINUE|continue|Continue|true|false|True"""
    r"""|False|yes|no|null|None)(?=\s*(?:[,}\n\r]|$)))""")


def _pattern_fields(text: str) -> list[tuple[int, str, Any]]:
    """`key: value` pairs of known fields, with their positions, for JSON that never closes."""
    fields = []
    for m in _PATTERN_FIELD.finditer(text):
        key = _norm_key(m.group("key"))
        if key not in _DECISION_KEYS:
            continue
        raw = m.group("value")
        try:
            value = _Reader(raw, 0).value() if raw[0] in "\"'+-.0123456789" or raw in _CONSTANTS else raw
        except _Fail:
            value = raw
        fields.append((m.start(), key, value))
    return fields


class _Located:
    """Where a reply's decision was found: its fields, and every other statement of an answer
    (another object with an action, a `key: value` line), which must agree with it."""

    def __init__(self, fields: Optional[dict[str, Any]] = None, others: Sequence[dict[str, Any]] = ()) -> None:
        self.fields, self.others = fields, list(others)


def _locate(text: str, action_keys: Sequence[str], problems: list[str]) -> _Located:
    def has_action(d: dict[str, Any]) -> bool:
        return any(k in d for k in action_keys)

    def has_any(d: dict[str, Any]) -> bool:
        return not _DECISION_KEYS.isdisjoint(d)

    answers: list[tuple[dict[str, Any], dict[str, Any], int, int]] = []
    loose: Optional[tuple[dict[str, Any], dict[str, Any], int, int]] = None
    starts, ends = [], []  # the objects read, in order and apart
    for obj, start, end in _objects(text):
        starts.append(start)
        ends.append(end)
        found = _nested(obj, has_action)
        if found is not None:
            answers.append((obj, found, start, end))
        elif loose is None and not answers:
            partial = _nested(obj, has_any)
            if partial is not None:
                loose = (obj, partial, start, end)
    fields = _pattern_fields(text)
    stated = [(at, {key: value}) for at, key, value in fields if key in action_keys]
    if answers:
        obj, found, start, end = answers[0]
        _note_repairs(obj, found, text[start:end], problems)
        outside = [said for at, said in stated  # inside an object, a `key: value` line is in one of its strings
                   if (k := bisect.bisect_right(starts, at) - 1) < 0 or at >= ends[k]]
        return _Located(found, [a[1] for a in answers[1:]] + outside)
    if loose is not None:
        _note_repairs(loose[0], loose[1], text[loose[2]:loose[3]], problems)
    if not stated:
        return _Located(loose[1] if loose else None)
    problems.append("no complete JSON object with an answer; fields read by pattern")
    pattern: dict[str, Any] = {}
    for _, key, value in fields:
        pattern.setdefault(key, value)
    return _Located({**(loose[1] if loose else {}), **pattern}, [said for _, said in stated])


def _first(fields: dict[str, Any], keys: Sequence[str]) -> tuple[Optional[str], Any]:
    for k in keys:
        if k in fields:
            return k, fields[k]
    return None, None

# --- field readers --------------------------------------------------------------------------

_MARKUP = " \t\r\n*_`\"'"
_VIEW_WORD = r"(?:the\s+)?(?:view|image|option|perspective|direction|choice|candidate|picture|photo|index|path|route)"
_TAIL = r"\s*(?:[:.,;!)\-–—(].*)?"


def _answer_pattern(opener: str, body: str) -> re.Pattern[str]:
    """`view: (B)`, `(b)`, `B - the avenue`: whitespace runs are each read by one quantifier."""
    return re.compile(rf"(?:{_VIEW_WORD}\s*(?:[:#]\s*)?(?:{opener}\s*)?|{opener}?\s*){body}(?:\s*[)\]>])?{_TAIL}",
                      re.I | re.S)


_LETTER = _answer_pattern(r"[(\[<]", r"([A-Za-z])")
_NUMERIC = _answer_pattern(r"[(\[<#]", r"([+-]?\d+)")
_STOP_TEXT = re.compile(rf"(?:stop(?:[\s_]+here)?|stopping|halt|terminate|arrived|-1){_TAIL}", re.I | re.S)
_CONTINUE_TEXT = re.compile(rf"(?:continue|keep[\s_]+going|go[\s_]+on|move[\s_]+on|not[\s_]+here|0){_TAIL}",
                            re.I | re.S)


def _strip_markup(s: str) -> str:
    return s.strip(_MARKUP).rstrip(".").strip(_MARKUP)


def _direction_label(s: str) -> str:
    label = re.sub(r"[\s\-]+", "_", s.strip().upper())
    for synonym, canonical in (("FORWARD", "FRONT"), ("AHEAD", "FRONT"), ("STRAIGHT", "FRONT"),
                               ("BACKWARDS", "BACK"), ("BACKWARD", "BACK"), ("BEHIND", "BACK")):
        label = label.replace(synonym, canonical)
    return label


def _view_range(n_views: int) -> str:
    return "there are no views" if n_views == 0 else f"the views are A-{LETTERS[min(n_views, 26) - 1]}"


class _Answer:
    """An action read from a value: a view position, stop, or an error."""

    def __init__(self, index: Optional[int] = None, stop: bool = False, error: Optional[str] = None,
                 problem: Optional[str] = None) -> None:
        self.index, self.stop, self.error, self.problem = index, stop, error, problem


def _read_action(value: Any, n_views: int, allow_stop: bool, directions: Sequence[str]) -> _Answer:
    def position(i: int, how: str) -> _Answer:
        if not 0 <= i < n_views:
            return _Answer(error=f"action {value!r} is out of range: {_view_range(n_views)}")
        label = LETTERS[i] if i < 26 else f"#{i + 1}"
        return _Answer(index=i, problem=None if how == "exact" else f"action {value!r} read as view {label}")

    def stop() -> _Answer:
        if allow_stop:
            return _Answer(stop=True, problem=None if value == STOP_WORD else f"action {value!r} read as STOP")
        return _Answer(error=f"action {value!r} means stop, which is not an option here: choose a view letter")

    def number(k: int) -> _Answer:
        if k == -1:
            return stop()
        if k == 0:
            return position(0, "zero")
        if k < 0:
            return _Answer(error=f"action {value!r} is not a view: {_view_range(n_views)}")
        return position(k - 1, "number")

    if isinstance(value, list) and len(value) == 1:
        inner = _read_action(value[0], n_views, allow_stop, directions)
        if inner.error is None:
            inner.problem = f"action given as a one-item list {value!r}"
        return inner
    if value is None:
        return _Answer(error="action missing")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return _Answer(error=f"action {value!r} is not a view letter")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return _Answer(error=f"action {value!r} is not a view letter")
        return number(int(value))
    if isinstance(value, int):
        return number(value)
    s = _strip_markup(value)
    if len(s) > 200:
        return _Answer(error="action is a long text, not a view letter")
    if _STOP_TEXT.fullmatch(s):
        return stop()
    m = _LETTER.fullmatch(s)
    if m:
        i = LETTERS.index(m.group(1).upper())
        return position(i, "exact" if value == LETTERS[i] else "letter")
    m = _NUMERIC.fullmatch(s)
    if m and len(m.group(1)) < 6:
        return number(int(m.group(1)))
    label = _direction_label(s)
    matches = [i for i, d in enumerate(directions) if d == label]
    if len(matches) == 1:
        return position(matches[0], "direction")
    if len(matches) > 1:
        return _Answer(error=f"action {value!r} names {len(matches)} views; answer with a letter")
    return _Answer(error=f"action {value!r} is not a view letter: {_view_range(n_views)}"
                   + (" or STOP" if allow_stop else ""))


_YES = {"true", "yes", "y", "stop", "stop here", "arrived", "1", "-1", "halt", "terminate"}
_NO = {"false", "no", "n", "continue", "keep going", "go on", "0", "not here"}


def _read_stop_flag(key: str, value: Any) -> tuple[Optional[bool], Optional[str]]:
    """(stop?, error): the `stop`-like keys are yes/no; the paper's `action` is -1/0."""
    paper = key in ACTION_KEYS
    if isinstance(value, bool) and not paper:
        return value, None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value == -1:
            return True, None
        if value == 0:
            return False, None
        if value == 1 and not paper:
            return True, None
        return None, f"{key} {value!r} is neither stop (-1) nor continue (0)"
    if isinstance(value, str):
        s = _strip_markup(value).lower()
        if s in _YES or _STOP_TEXT.fullmatch(s):
            return True, None
        if s in _NO or _CONTINUE_TEXT.fullmatch(s):
            return False, None
    return None, f"{key} {value!r} is neither STOP nor CONTINUE"


def _read_confidence(fields: Optional[dict[str, Any]], problems: list[str]) -> float:
    key, value = _first(fields or {}, CONFIDENCE_KEYS)
    if key is None:
        problems.append(f"confidence missing; {DEFAULT_CONFIDENCE} assumed")
        return DEFAULT_CONFIDENCE
    number: Optional[float] = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value) if not isinstance(value, int) or abs(value) < 10**300 else math.copysign(math.inf, value)
    elif isinstance(value, str):
        s = value.strip()
        scale = 1.0
        if s.endswith("%"):
            s, scale = s[:-1].strip(), 0.01
        try:
            number = float(s) * scale
        except ValueError:
            number = None
        if number is not None and scale != 1.0:
            problems.append(f"confidence {value!r} read as {number:g}")
    if number is None or math.isnan(number):
        problems.append(f"confidence {value!r} unreadable; {DEFAULT_CONFIDENCE} assumed")
        return DEFAULT_CONFIDENCE
    clamped = min(1.0, max(0.0, number))
    if clamped != number:
        problems.append(f"confidence {value!r} clamped to {clamped:g}")
    return clamped


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _read_thoughts(fields: Optional[dict[str, Any]], problems: list[str]) -> str:
    key, value = _first(fields or {}, THOUGHT_KEYS)
    if key is None:
        problems.append("thoughts missing")
        return ""
    if not isinstance(value, str):
        problems.append(f"thoughts are a {type(value).__name__}, kept as text")
    return _text(value)


def _read_observations(fields: Optional[dict[str, Any]], n_views: int, problems: list[str]) -> list[ViewObservation]:
    key, value = _first(fields or {}, OBSERVATION_KEYS)
    if key is None:
        problems.append("observations missing")
        return []
    out: list[ViewObservation] = []
    if isinstance(value, dict):  # the paper's {"A": "...", "B": "..."}
        out = [ViewObservation(view=str(k), description=_text(v)) for k, v in value.items()]
    elif isinstance(value, list):
        for i, item in enumerate(value):
            default = LETTERS[i] if i < 26 else str(i + 1)
            if isinstance(item, dict):
                item = _normalised(item)
                view = next((item[k] for k in ("view", "letter", "id", "perspective", "image") if k in item), default)
                text = next((item[k] for k in ("description", "observation", "text", "desc", "content") if k in item),
                            item)
                out.append(ViewObservation(view=_text(view), description=_text(text)))
            else:
                out.append(ViewObservation(view=default, description=_text(item)))
    else:
        out = [ViewObservation(view="all", description=_text(value))]
    if len(out) != n_views:
        problems.append(f"{len(out)} observations for {n_views} views")
    return out


# --- prose ----------------------------------------------------------------------------------

_VERBS = (r"choose|choosing|chose|chosen|select|selecting|selected|pick|picking|picked|go\s+with|going\s+with"
          r"|opt\s+for|answer\s+is|action\s+is|choice\s+is|decision\s+is|best\s+(?:option|choice|view)\s+is"
          r"|head(?:ing)?\s+(?:towards?|to|for)|take|taking|prefer")
# (?=(X*))\1 reads a run once and never gives it back (an atomic group that Python 3.10 lacks).
# A leading (?=[first letters]) lets the regex engine skip ahead to where a match can start.
_PROSE_LETTER = re.compile(rf"(?=(?i:[cspgoadbht]))\b(?i:{_VERBS})\b(?=([\s:*\"'`]*))\1"
                           rf"(?:(?i:the\s+)?(?i:view|image|option|perspective|direction|path|candidate|route)"
                           rf"\s*[(\[\"'*`]*|[(\[][(\[\"'*`]*)?(?P<letter>[A-Z])(?![A-Za-z0-9])")
_PROSE_STOP = re.compile(r"(?=(?i:[sihdc]))(?:(?<![A-Za-z])STOP(?![A-Za-z])"
                         r"|\b(?i:i\s+(?:will|would|should|shall|must|decide\s+to)\s+stop"
                         r"|stop\s+here|(?:have|has)\s+arrived|(?:decide|decided|choose|chose)\s+to\s+stop)\b)")
_PROSE_CONTINUE = re.compile(r"(?=(?i:[ckwsmnh]))(?:(?<![A-Za-z])CONTINUE(?![A-Za-z])"
                             r"|\b(?i:keep\s+(?:going|walking|looking|searching|moving)"
                             r"|(?:will|should|must|need\s+to)\s+(?:continue|move\s+on|keep\s+going|look\s+elsewhere)"
                             r"|not\s+(?:the|my)\s+destination|(?:have|has)\s+not\s+(?:yet\s+)?arrived)\b)")
_NEGATION = re.compile(r"(?i:\b(?:not|no|never|don't|do\s+not|won't|shouldn't|cannot|can't))\W*$")


def _hits(pattern: re.Pattern[str], text: str, group: Optional[str] = None) -> set[str]:
    found = set()
    for m in pattern.finditer(text):
        if not _NEGATION.search(text[max(0, m.start() - 16):m.start()]):
            found.add(m.group(group) if group else "hit")
    return found


def _unfenced(text: str) -> str:
    return re.sub(r"```[A-Za-z]*", "", text).strip()


def _prose_action(text: str, allow_stop: bool) -> tuple[Optional[Any], Optional[str]]:
    """(answer, ambiguity error); an answer only when the prose names exactly one."""
    bare = _strip_markup(_unfenced(text))
    if len(bare) <= 40 and (_LETTER.fullmatch(bare) or _STOP_TEXT.fullmatch(bare)):
        return bare, None
    answers = _hits(_PROSE_LETTER, text, group="letter")
    if allow_stop and _hits(_PROSE_STOP, text):
        answers.add(STOP_WORD)
    if len(answers) == 1:
        return answers.pop(), None
    if answers:
        return None, f"the reply names several answers ({', '.join(sorted(answers))}) and no JSON action"
    return None, None


def _prose_stop(text: str) -> tuple[Optional[bool], Optional[str]]:
    bare = _strip_markup(_unfenced(text)).lower()
    if len(bare) <= 40 and (bare in _YES or bare in _NO):
        return bare in _YES, None
    stop, go = bool(_hits(_PROSE_STOP, text)), bool(_hits(_PROSE_CONTINUE, text))
    if stop != go:
        return stop, None
    return None, "the reply says both STOP and CONTINUE and has no JSON decision" if stop else None


# --- entry points ---------------------------------------------------------------------------

def _as_text(reply: Any, problems: list[str]) -> tuple[str, bool]:
    """The reply as valid text, and whether it was cut to MAX_CHARS."""
    if isinstance(reply, str):
        text = reply
    elif isinstance(reply, (bytes, bytearray)):
        text = bytes(reply).decode("utf-8", "replace")
        problems.append("reply was bytes")
    elif reply is None:
        text = ""
    else:
        text = str(reply)
        problems.append(f"reply was a {type(reply).__name__}")
    cut = len(text) > MAX_CHARS
    if cut:
        problems.append(f"reply of {len(text)} characters cut to {MAX_CHARS}")
        text = text[:MAX_CHARS]
    return clean_text(text), cut


def _failed(error: str, problems: list[str], thoughts: str = "",
            observations: Optional[list[ViewObservation]] = None) -> ParsedDecision:
    return ParsedDecision(None, 0.0, thoughts, observations or [], problems, error)


def _parsed(reply: Any, parse: Callable[[str, list[str]], ParsedDecision]) -> ParsedDecision:
    """`parse` of the reply as text, with problems so far; a parser bug costs one decision, never the episode."""
    cut = False
    try:
        problems: list[str] = []
        text, cut = _as_text(reply, problems)
        result = parse(text, problems) if text.strip() else _failed("empty reply", problems)
    except Exception as exc:
        result = _failed(f"{INTERNAL_ERROR}: {type(exc).__name__}: {exc}", [])
    result.cut = cut
    return result


def _prose_thoughts(text: str) -> str:
    return text.strip()[:2000]


_T = TypeVar("_T")


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _agreed(located: _Located, read: Callable[[dict[str, Any]], Optional[_T]],
            label: Callable[[_T, dict[str, Any]], str]) -> tuple[Optional[_T], Optional[str]]:
    """The first answer the reply states, and an error when another statement of it differs."""
    first: Optional[_T] = None
    labels: dict[str, None] = {}
    seen: set[tuple[str, type, Any]] = set()
    for fields in [located.fields or {}, *located.others]:
        if len(fields) == 1:  # a `key: value` line: many alike cost one reading
            (key, value), = fields.items()
            if isinstance(value, (str, int, float, type(None))):
                if (key, type(value), value) in seen:
                    continue
                seen.add((key, type(value), value))
        answer = read(fields)
        if answer is None:
            continue
        if first is None:
            first = answer
        labels[label(answer, fields)] = None
        if len(labels) > 1:
            return first, f"the reply states different answers ({', '.join(labels)}); give one"
    return first, None


def _view_answer(fields: dict[str, Any], n_views: int, allow_stop: bool,
                 directions: Sequence[str], action_keys: Sequence[str] = ACTION_KEYS) -> Optional[_Answer]:
    key, value = _first(fields, action_keys)
    if key is None and allow_stop:
        stop_key, stop_value = _first(fields, STOP_KEYS)
        if stop_key is not None:
            flag, _ = _read_stop_flag(stop_key, stop_value)
            if flag:
                return _Answer(stop=True, problem=f"no action; {stop_key} {stop_value!r} read as STOP")
    return None if key is None else _read_action(value, n_views, allow_stop, directions)


def _view_label(answer: _Answer, fields: dict[str, Any], action_keys: Sequence[str] = ACTION_KEYS) -> str:
    if answer.error is not None:
        return _short(_first(fields, action_keys)[1])
    if answer.stop:
        return STOP_WORD
    return LETTERS[answer.index] if answer.index < 26 else f"#{answer.index + 1}"  # type: ignore[operator,index]


def _parse_views(text: str, problems: list[str], n_views: int, allow_stop: bool,
                 directions: Sequence[str], answers: bool = False) -> ParsedDecision:
    keys = MOVE_KEYS if answers else ACTION_KEYS
    located = _locate(text, keys + (STOP_KEYS if allow_stop else ()), problems)
    fields = located.fields
    answer, disagreement = _agreed(located, lambda f: _view_answer(f, n_views, allow_stop, directions, keys),
                                   lambda a, f: _view_label(a, f, keys))
    if disagreement is not None:
        answer = _Answer(error=disagreement)
    if answer is None:
        prose, ambiguity = _prose_action(text, allow_stop)
        if prose is not None:
            answer = _read_action(prose, n_views, allow_stop, directions)
            if answer.error is None:
                problems.append(f"no JSON action; answer {prose!r} read from the text")
        else:
            answer = _Answer(error=ambiguity or ("no JSON object and no recognisable answer" if fields is None
                                                 else "action missing"))
            if answers and ambiguity is None:
                answer = _stop_for_answer(text, problems) or answer
    said: Optional[str] = None
    if answers and answer.error is None and answer.stop:
        said, error = _answer_of(text, problems)
        if error is not None:
            answer = _Answer(error=error)
    if fields is None:
        thoughts, observations = _prose_thoughts(text), []
    else:
        thoughts = _read_thoughts(fields, problems)
        observations = _read_observations(fields, n_views, problems)
    if answer.error is not None:
        return _failed(answer.error, problems, thoughts, observations)
    if answer.problem:
        problems.append(answer.problem)
    confidence = _read_confidence(fields, problems)
    action = STOP_WORD if answer.stop else (LETTERS[answer.index] if answer.index < 26 else None)
    if action is not None:  # the contract the prompt states; a failure here is a parser bug
        DecisionReply(observations=observations, thoughts=thoughts, action=action, confidence=confidence)
    return ParsedDecision(None if answer.stop else answer.index, confidence, thoughts, observations, problems,
                          answer=said)


def parse_choice(reply: Any, n_views: int, directions: Sequence[str] = ()) -> ParsedDecision:
    """The choice prompt's reply: a view (never stop). `directions` are the views' relative
    labels in order, so an answer such as "FRONT_RIGHT" can be read."""
    return _parsed(reply, lambda text, problems: _parse_views(text, problems, n_views, False, directions))


def parse_single(reply: Any, n_views: int, directions: Sequence[str] = (), answers: bool = False) -> ParsedDecision:
    """The single prompt's reply: a view or STOP (action_index None); with `answers`, a STOP
    carries its answer (rule 9)."""
    return _parsed(reply, lambda text, problems: _parse_views(text, problems, n_views, True, directions, answers))


_StopAnswer = tuple[Optional[bool], Optional[str], str, Any]  # stop?, error, key, value


def _stop_answer(fields: dict[str, Any], action_keys: Sequence[str] = ACTION_KEYS) -> Optional[_StopAnswer]:
    key, value = _first(fields, STOP_KEYS)
    if key is None:
        key, value = _first(fields, action_keys)
    return None if key is None else (*_read_stop_flag(key, value), key, value)


def _stop_label(answer: _StopAnswer, fields: dict[str, Any]) -> str:
    stop, _, _, value = answer
    return _short(value) if stop is None else "STOP" if stop else "CONTINUE"


def _parse_stop(text: str, problems: list[str], answers: bool = False) -> ParsedDecision:
    keys = MOVE_KEYS if answers else ACTION_KEYS
    located = _locate(text, STOP_KEYS + keys, problems)
    fields = located.fields
    found, disagreement = _agreed(located, lambda f: _stop_answer(f, keys), _stop_label)
    if found is not None:
        stop, error, key, value = found
        paper_form = key in ACTION_KEYS and type(value) is int  # the paper's own -1 / 0
        if disagreement is not None:
            stop, error = None, disagreement
        elif stop is not None and not isinstance(value, bool) and not paper_form:
            problems.append(f"{key} {value!r} read as {'STOP' if stop else 'CONTINUE'}")
    else:
        stop, error = _prose_stop(text)
        if stop is not None:
            problems.append(f"no JSON decision; {'STOP' if stop else 'CONTINUE'} read from the text")
        elif error is None:
            error = "no JSON object and no recognisable STOP or CONTINUE" if fields is None else "stop missing"
            if answers and _stop_for_answer(text, problems) is not None:
                stop, error = True, None
    said: Optional[str] = None
    if answers and stop:
        said, error = _answer_of(text, problems)
        stop = None if error is not None else stop
    if fields is None:
        thoughts, observations = _prose_thoughts(text), []
    else:
        thoughts = _read_thoughts(fields, problems)
        seen = _read_observations(fields, 1, [])
        if not seen:
            problems.append("observation missing")
        observations = [ViewObservation(view="all", description=" ".join(o.description for o in seen))] if seen else []
    if stop is None:
        return _failed(error or "stop missing", problems, thoughts, observations)
    confidence = _read_confidence(fields, problems)
    StopDecision(observation=observations[0].description if observations else "", thoughts=thoughts, stop=stop,
                 confidence=confidence)
    return ParsedDecision(None if stop else 0, confidence, thoughts, observations, problems, answer=said)


def parse_stop(reply: Any, answers: bool = False) -> ParsedDecision:
    """The stop prompt's reply: action_index None to stop here, 0 to go on to the choice prompt.
    With `answers` (a family whose stop answers a question) a stop carries its answer (rule 9)."""
    return _parsed(reply, lambda text, problems: _parse_stop(text, problems, answers))


# --- answers --------------------------------------------------------------------------------

_ANSWER_WRAPPERS = ("text", "answer", "value", "content", "name")
# `Answer: X` or `**Final answer**: X` where a line or sentence starts, `the answer is X` anywhere;
# X ends at the line's end or a double quote (a JSON string's end), so thoughts that say it read too.
_PROSE_ANSWER = re.compile(r"(?i)(?:(?:^|(?<=[\n.!?;]))[ \t>*_#-]*(?:final[ \t]+)?answer[*_]*[ \t]*[:=]"
                           r"|\b(?:the|my)[ \t]+(?:final[ \t]+)?answer[ \t]+is(?![A-Za-z]))"
                           r"[ \t:]*[\"“]?(?P<answer>[^\n\"”{}]{0,1000})")


class _Said:
    """An answer read from a value: its text, or why it cannot be used."""

    def __init__(self, text: Optional[str] = None, error: Optional[str] = None, problem: Optional[str] = None) -> None:
        self.text, self.error, self.problem = text, error, problem


def _answer_text(text: str, how: Optional[str] = None) -> _Said:
    s = text.strip().strip("*_`").strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        s = s[1:-1].strip()
    if not s:
        return _Said(error="the answer is empty; give a short answer when you stop")
    if len(s) > MAX_ANSWER_CHARS:
        return _Said(error=f"the answer is {len(s)} characters long; give at most {MAX_ANSWER_CHARS}")
    return _Said(s, problem=how)


def _read_answer(value: Any, depth: int = 0) -> _Said:
    if isinstance(value, str):
        return _answer_text(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        number = int(value) if isinstance(value, int) or value == int(value) else value
        return _answer_text(str(number), f"answer {value!r} read as text")
    if depth < 3 and isinstance(value, list) and len(value) == 1:
        inner = _read_answer(value[0], depth + 1)
        return _Said(inner.text, inner.error, inner.problem or (inner.text and "answer given as a one-item list"))
    if depth < 3 and isinstance(value, dict):
        key, inner_value = _first(_normalised(value), _ANSWER_WRAPPERS)
        if key is not None:
            inner = _read_answer(inner_value, depth + 1)
            return _Said(inner.text, inner.error, inner.problem or (inner.text and f"answer found in its {key!r}"))
    if value is None:
        return _Said(error="the answer is empty; give a short answer when you stop")
    return _Said(error=f"the answer {_short(value)} is not a text")


def _answer_field(fields: dict[str, Any]) -> Optional[_Said]:
    key, value = _first(fields, ANSWER_KEYS)
    return None if key is None else _read_answer(value)


def _answer_label(said: _Said, fields: dict[str, Any]) -> str:
    return _short(said.text.casefold()) if said.text is not None else _short(_first(fields, ANSWER_KEYS)[1])


def _prose_answer(text: str) -> Optional[_Said]:
    """`Answer: X` lines outside any JSON; several that differ are an error."""
    found: dict[str, _Said] = {}
    for m in _PROSE_ANSWER.finditer(text):
        line = m.group("answer").strip()
        if line.endswith(".") and not line.endswith(".."):
            line = line[:-1]  # the sentence's full stop, not the answer's
        said = _answer_text(line, "answer read from the text")
        found.setdefault(said.text.casefold() if said.text is not None else f"error {len(found)}", said)
    if len(found) > 1:
        return _Said(error="the reply gives different answers; give one")
    return next(iter(found.values()), None)


def _find_answer(text: str) -> Optional[_Said]:
    """The answer the reply states: a JSON field (the decision's or another object's, all alike),
    else an `Answer:` line. None when it states none."""
    located = _locate(text, ANSWER_KEYS, [])
    said, disagreement = _agreed(located, _answer_field, _answer_label)
    if disagreement is not None:
        return _Said(error=disagreement)
    return said if said is not None else _prose_answer(text)


def _answer_of(text: str, problems: list[str]) -> tuple[Optional[str], Optional[str]]:
    """(answer, error) of a reply that stops."""
    said = _find_answer(text)
    if said is None:
        return None, 'the reply stops without an answer; put it in "answer"'
    if said.error is None and said.problem:
        problems.append(said.problem)
    return said.text, said.error


def _stop_for_answer(text: str, problems: list[str]) -> Optional[_Answer]:
    """A reply that states no stop or action but gives an answer: a stop, noted (an unusable
    answer then makes it an error that names the answer's fault)."""
    if _find_answer(text) is None:
        return None
    problems.append("no stop or action; the answer given read as STOP")
    return _Answer(stop=True)


# --- free-form objects (the seed agents' perception, reflection and planning replies) -------

@dataclass
class ObjectRead:
    """A reply read as one JSON object: `fields` (keys lower-cased, spaces as `_`) or None with
    `error` set. `problems` lists the repairs, as for decisions; `cut` as ParsedDecision.cut."""

    fields: Optional[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    error: Optional[str] = None
    cut: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def read_object(reply: Any, keys: Sequence[str]) -> ObjectRead:
    """The first object in the reply (or inside a wrapper in it) holding any of `keys`, read
    with the same lenient reader as the decisions (rules 1 and 2); never raises."""
    problems: list[str] = []
    wanted = frozenset(_norm_key(k) for k in keys)
    try:
        text, cut = _as_text(reply, problems)
        for obj, start, end in _objects(text):
            found = _nested(obj, lambda d: not wanted.isdisjoint(d))
            if found is not None:
                if not _strict_json_ok(text[start:end]):
                    problems.append("JSON repaired (quotes, commas, comments or constants)")
                return ObjectRead(found, problems, cut=cut)
        return ObjectRead(None, problems, f"no JSON object with any of {', '.join(sorted(wanted))}", cut)
    except Exception as exc:  # a reader bug costs one call, never the episode
        return ObjectRead(None, [], f"{INTERNAL_ERROR}: {type(exc).__name__}: {exc}")

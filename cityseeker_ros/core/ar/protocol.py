"""The messages between the browser pages (the AR phone page and the operator console) and the
server, and their checks: one module, so both pages' messages share one envelope, one set of
limits and one way of naming what was wrong.

The phone page sends binary WebSocket messages for camera frames (8 bytes: the capture time in
the page's clock, milliseconds, float64 little-endian; then one JPEG) and JSON text messages for
everything else (`fix`, `heading`, `need`, `cancel`, `shown`: parse_text). The console sends
JSON text only, the operator's commands (`hold`, `estop`, `reset_estop`, `take_control`,
`return_to_launch`, `seek`, `cancel`: parse_command). Every check here names what was wrong, so
the server can count a dropped message by its reason and say it once in its log. Nothing
malformed, oversized or out of range is ever passed on.
"""
from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any, Optional, Union

FRAME_HEADER = struct.Struct("<d")
MAX_FRAME_BYTES = 512 * 1024  # a 640x480 JPEG is 30-80 kB; ten times that is no phone frame
MAX_FRAME_SIDE = 1920  # pixels; the page sends 640x480
MAX_TEXT_BYTES = 4096  # a need is at most 200 characters; no JSON message needs more
MAX_ACCURACY_M = 100_000.0
JPEG_SOI, JPEG_EOI = b"\xff\xd8", b"\xff\xd9"
# Start-of-frame markers (baseline, extended, progressive, lossless...), which carry the size.
SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


class Malformed(ValueError):
    """A message that is dropped; `kind` (frame, fix, heading, need, cancel, shown, message) and
    `reason` (a short key: counted by it) say which and why."""

    def __init__(self, kind: str, reason: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {reason}" + (f" ({detail})" if detail else ""))
        self.kind, self.reason = kind, reason


@dataclass(frozen=True)
class Frame:
    """One JPEG from the page's camera; `captured_ms` in the page's clock (performance.now)."""

    jpeg: bytes
    captured_ms: float
    width: int
    height: int


@dataclass(frozen=True)
class Fix:
    """A geolocation fix: degrees, its accuracy radius (metres, 68 %), the compass heading if known."""

    lat: float
    lon: float
    accuracy_m: float
    heading_deg: Optional[float] = None


@dataclass(frozen=True)
class Heading:
    """The compass heading, degrees clockwise from north."""

    heading_deg: float


@dataclass(frozen=True)
class Need:
    """Start a Seek: the need in words and the step budget (0: the run's)."""

    text: str
    max_steps: int = 0


@dataclass(frozen=True)
class Cancel:
    """Cancel the Seek under way (the stack holds)."""


@dataclass(frozen=True)
class Shown:
    """The page showed a guidance: `latency_ms` from the frame's capture to it on the screen."""

    view_set_id: str
    latency_ms: float


PageMessage = Union[Fix, Heading, Need, Cancel, Shown]


def jpeg_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the first start-of-frame segment; Malformed when there is none. The
    segments are walked, never decoded: the server does not spend a decode on a bad frame."""
    if not data.startswith(JPEG_SOI):
        raise Malformed("frame", "not_jpeg", "no JPEG start-of-image marker")
    if not data.rstrip(b"\x00").endswith(JPEG_EOI):
        raise Malformed("frame", "truncated_jpeg", "no JPEG end-of-image marker")
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise Malformed("frame", "bad_jpeg", f"no segment marker at byte {i}")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if length < 2:
            raise Malformed("frame", "bad_jpeg", f"segment length {length} at byte {i}")
        if marker in SOF_MARKERS:
            if i + 9 > len(data):
                break
            height, width = int.from_bytes(data[i + 5:i + 7], "big"), int.from_bytes(data[i + 7:i + 9], "big")
            if not (0 < width <= MAX_FRAME_SIDE and 0 < height <= MAX_FRAME_SIDE):
                raise Malformed("frame", "bad_size", f"{width}x{height}; at most {MAX_FRAME_SIDE} a side")
            return width, height
        if marker == 0xDA:  # start of scan before any frame header
            break
        i += 2 + length
    raise Malformed("frame", "bad_jpeg", "no start-of-frame segment")


def parse_frame(data: bytes) -> Frame:
    """A binary message: the capture time, then one JPEG of at most MAX_FRAME_BYTES."""
    if len(data) > FRAME_HEADER.size + MAX_FRAME_BYTES:
        raise Malformed("frame", "oversized", f"{len(data)} bytes; at most {MAX_FRAME_BYTES}")
    if len(data) <= FRAME_HEADER.size + 4:
        raise Malformed("frame", "too_short", f"{len(data)} bytes")
    (captured_ms,) = FRAME_HEADER.unpack_from(data)
    if not math.isfinite(captured_ms) or captured_ms < 0:
        raise Malformed("frame", "bad_time", repr(captured_ms))
    jpeg = bytes(data[FRAME_HEADER.size:])
    width, height = jpeg_size(jpeg)
    return Frame(jpeg, float(captured_ms), width, height)


def encode_frame(jpeg: bytes, captured_ms: float) -> bytes:
    """What the page sends (tests and the benchmark stand in for it with this)."""
    return FRAME_HEADER.pack(float(captured_ms)) + jpeg


def _number(kind: str, body: dict[str, Any], key: str, low: float, high: float, required: bool = True
            ) -> Optional[float]:
    value = body.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise Malformed(kind, f"bad_{key}", f"{key} must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def _envelope(text: Union[str, bytes]) -> dict[str, Any]:
    """A JSON object of at most MAX_TEXT_BYTES: the envelope of every text message of both pages."""
    if not isinstance(text, (str, bytes)):
        raise Malformed("message", "not_text", type(text).__name__)
    if len(text) > MAX_TEXT_BYTES:
        raise Malformed("message", "oversized", f"{len(text)} bytes; at most {MAX_TEXT_BYTES}")
    try:
        body = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Malformed("message", "not_json") from None
    if not isinstance(body, dict):
        raise Malformed("message", "not_object", type(body).__name__)
    return body


def parse_text(text: Union[str, bytes]) -> PageMessage:
    """A JSON text message from the phone page, checked field by field."""
    body = _envelope(text)
    kind = body.get("type")
    if kind == "fix":
        heading = _number("fix", body, "heading_deg", 0.0, 360.0, required=False)
        return Fix(_number("fix", body, "lat", -90.0, 90.0), _number("fix", body, "lon", -180.0, 180.0),
                   _number("fix", body, "accuracy_m", 0.0, MAX_ACCURACY_M), heading)
    if kind == "heading":
        return Heading(_number("heading", body, "heading_deg", 0.0, 360.0))
    if kind == "need":
        need = body.get("text")
        if not isinstance(need, str):
            raise Malformed("need", "bad_text", f"text must be a string, got {type(need).__name__}")
        steps = body.get("max_steps", 0)
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise Malformed("need", "bad_max_steps", f"max_steps must be an integer, got {steps!r}")
        return Need(need, steps)
    if kind == "cancel":
        return Cancel()
    if kind == "shown":
        vid = body.get("view_set_id")
        if not isinstance(vid, str) or not vid or len(vid) > 200:
            raise Malformed("shown", "bad_view_set_id")
        return Shown(vid, _number("shown", body, "latency_ms", 0.0, 600_000.0))
    raise Malformed("message", "unknown_type", repr(kind)[:40])


# -- the operator console's commands ---------------------------------------------------------------

# The console's seek form names what kind of goal it is; the Seek action names the task family.
SEEK_KINDS = {"need": "needs", "landmark": "landmarks", "question": "questions"}
MAX_GOAL_CHARS = 1000  # the Seek server refuses a need over its own limit (200) by name; this only bounds the wire


@dataclass(frozen=True)
class Hold:
    """Hold the vehicle where it is: the Seek under way ends (cancelled), the vehicle holds."""


@dataclass(frozen=True)
class EStop:
    """Latch the emergency stop. The console asks the operator to confirm first, and a message
    without `confirm: true` is dropped, so a stray message never latches it."""


@dataclass(frozen=True)
class ResetEStop:
    """Release the e-stop latch (the vehicle bridge's reset_estop)."""


@dataclass(frozen=True)
class TakeControl:
    """Take control back after a pilot override (the vehicle bridge's take_control)."""


@dataclass(frozen=True)
class ReturnToLaunch:
    """Fly or walk back to where the run started (the vehicle bridge's return_to_launch)."""


@dataclass(frozen=True)
class SeekGoal:
    """Start a Seek: the goal in words, its task family (needs, landmarks, questions) and the step
    budget (0: the run's)."""

    text: str
    family: str = "needs"
    max_steps: int = 0


ConsoleCommand = Union[Hold, EStop, ResetEStop, TakeControl, ReturnToLaunch, SeekGoal, Cancel]
COMMAND_NAMES = {Hold: "hold", EStop: "estop", ResetEStop: "reset_estop", TakeControl: "take_control",
                 ReturnToLaunch: "return_to_launch", SeekGoal: "seek", Cancel: "cancel"}
_BARE_COMMANDS = {"hold": Hold, "reset_estop": ResetEStop, "take_control": TakeControl,
                  "return_to_launch": ReturnToLaunch, "cancel": Cancel}


def parse_command(text: Union[str, bytes]) -> ConsoleCommand:
    """A JSON text message from the console, checked field by field. Whether a goal's words and
    budget are acceptable is the Seek server's rule (core.loop.seek.check_request), applied by
    the console's session; here only their types and the kind."""
    body = _envelope(text)
    kind = body.get("type")
    if isinstance(kind, str) and kind in _BARE_COMMANDS:
        return _BARE_COMMANDS[kind]()
    if kind == "estop":
        if body.get("confirm") is not True:
            raise Malformed("estop", "unconfirmed", "an e-stop message carries confirm: true")
        return EStop()
    if kind == "seek":
        goal_kind = body.get("kind", "need")
        if not isinstance(goal_kind, str) or goal_kind not in SEEK_KINDS:
            raise Malformed("seek", "bad_kind", f"kind must be one of {', '.join(SEEK_KINDS)}, got {goal_kind!r}"[:120])
        words = body.get("text")
        if not isinstance(words, str) or len(words) > MAX_GOAL_CHARS:
            raise Malformed("seek", "bad_text", f"text must be a string of at most {MAX_GOAL_CHARS} characters")
        steps = body.get("max_steps", 0)
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise Malformed("seek", "bad_max_steps", f"max_steps must be an integer, got {steps!r}"[:120])
        return SeekGoal(words, SEEK_KINDS[goal_kind], steps)
    raise Malformed("message", "unknown_type", repr(kind)[:40])


def server_message(kind: str, **fields: Any) -> str:
    """A message to the page: {"type": kind, ...fields} as JSON (NaN becomes null)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return json.dumps({"type": kind, **clean(fields)}, ensure_ascii=False)

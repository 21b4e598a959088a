"""Progress of long in-process work, on stderr so stdout (tables, JSON) stays clean.

A run of a hundred episodes or a world build takes minutes; silence for that long reads as a
hang. On a terminal one line is rewritten in place a few times a second ("12/100 episodes,
7.1 s per episode, about 10 min 25 s left"), cut to the terminal's width so that it never
wraps. In a pipe, a log or CI a rewritten line is noise, so only one line a minute and the
final line are written. The clock is injected so that tests can drive time without sleeping.
"""
from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable
from typing import Optional, TextIO

# A terminal line is rewritten at most this often: a few times a second is readable and cheap.
TERMINAL_REFRESH_S = 0.25


def say(line: str, stream: Optional[TextIO] = None) -> None:
    """One phase line ("world build: 1,234 streets read"), always written, terminal or not."""
    out = stream if stream is not None else sys.stderr
    # On a terminal a progress line may be on screen without its newline: write over it.
    out.write(("\r\x1b[K" if is_terminal(out) else "") + line + "\n")
    out.flush()


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is an interactive terminal (a closed or odd stream counts as not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def terminal_width(stream: TextIO) -> Optional[int]:
    """Columns of the terminal `stream` writes to; None when it has no size (a fake or a pipe)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return None


def duration_words(seconds: float) -> str:
    """A duration as a person reads it: "45 s", "1 min 50 s", "2 h 05 min"."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def rate_words(rate: float, unit: str = "episodes") -> str:
    """Items per second while there is more than one a second ("617/s"); slower, the time one
    takes ("7.1 s per episode"), which reads better than "0.14/s" and never flips between units."""
    if rate >= 10:
        return f"{rate:,.0f}/s"
    if rate >= 1:
        return f"{rate:.1f}/s"
    each = 1.0 / rate
    one = unit[:-1] if unit.endswith("s") else unit
    return f"{each:.1f} s per {one}" if each < 60 else f"{duration_words(each)} per {one}"


class Progress:
    """Counts done of `total` (None when the total is not known) and reports them on `stream`."""

    def __init__(self, label: str, total: Optional[int], unit: str = "episodes",
                 stream: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
                 log_every_s: float = 60.0, already_done: int = 0) -> None:
        if total is not None and total < 0:
            raise ValueError(f"Progress total: must be >= 0 or None, got {total}")
        if already_done < 0 or (total is not None and already_done > total):
            raise ValueError(f"Progress already_done: must be in 0..total, got {already_done} of {total}")
        if log_every_s <= 0:
            raise ValueError(f"Progress log_every_s: must be > 0, got {log_every_s}")
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.log_every_s = log_every_s
        # A resumed run starts with work done earlier; the rate counts only this session's.
        self.already_done = already_done
        self.done = already_done
        self.started = clock()
        self.closed = False
        self._terminal = is_terminal(self.stream)
        self._last_written: Optional[float] = None  # None: nothing written yet
        self._line_open = False  # a terminal line is on screen without its newline
        if self._terminal:
            self._write_terminal(self.started)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: Optional[type], *exc_info: object) -> None:
        self.close(stopped=exc_type is not None)

    def advance(self, n: int = 1) -> None:
        """`n` more items are done; writes a line if one is due."""
        if self.closed:
            raise RuntimeError(f"Progress {self.label!r}: advance() after close()")
        self.done += n
        now = self.clock()
        if self._terminal:
            if self._last_written is None or now - self._last_written >= TERMINAL_REFRESH_S:
                self._write_terminal(now)
        elif now - (self._last_written if self._last_written is not None else self.started) >= self.log_every_s:
            self._write(self.status_line(now) + "\n", now)

    def close(self, stopped: bool = False) -> None:
        """Writes the final line (done count, elapsed, rate), or where it `stopped` when the work
        ended early (an error, Ctrl-C); a second close does nothing."""
        if self.closed:
            return
        self.closed = True
        now = self.clock()
        prefix = "\r\x1b[K" if self._line_open else ""
        self._write(prefix + self.final_line(now, stopped) + "\n", now)
        self._line_open = False

    def status_line(self, now: float) -> str:
        """'<label>: 12/100 episodes, 7.1 s per episode, about 10 min 25 s left' at time `now`."""
        parts = [f"{self.label}: {self._count()} {self.unit}"]
        rate = self._rate(now)
        if rate is not None:
            parts.append(rate_words(rate, self.unit))
            if self.total is not None and self.done < self.total:
                parts.append(f"about {duration_words((self.total - self.done) / rate)} left")
        return ", ".join(parts)

    def final_line(self, now: float, stopped: bool = False) -> str:
        """'<label>: done, 100/100 episodes in 11 min 50 s (7.1 s per episode)', or 'stopped at 40/100 ...'."""
        rate = self._rate(now)
        shown = f" ({rate_words(rate, self.unit)})" if rate is not None else ""
        earlier = f", {self.already_done:,} done before" if self.already_done else ""
        return (f"{self.label}: {'stopped at' if stopped else 'done,'} {self._count()} {self.unit} "
                f"in {duration_words(now - self.started)}{shown}{earlier}")

    def _count(self) -> str:
        return f"{self.done:,}/{self.total:,}" if self.total is not None else f"{self.done:,}"

    def _rate(self, now: float) -> Optional[float]:
        """Items a second done in this session; None before the first or with no time passed."""
        elapsed, new = now - self.started, self.done - self.already_done
        return new / elapsed if new > 0 and elapsed > 0 else None

    def _write_terminal(self, now: float) -> None:
        line = self.status_line(now)
        width = terminal_width(self.stream)
        if width is not None and len(line) >= width:  # a wrapped line could not be rewritten in place
            line = line[: max(1, width - 2)] + "…"
        self._write("\r\x1b[K" + line, now)
        self._line_open = True

    def _write(self, text: str, now: float) -> None:
        self.stream.write(text)
        self.stream.flush()
        self._last_written = now

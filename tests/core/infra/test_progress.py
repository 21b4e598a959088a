"""Progress lines under a fake clock and fake streams: rewritten in place on a terminal, one a
minute in a log, and always a final line; no sleeps."""
from __future__ import annotations

import io

import pytest

from cityseeker_ros.core.infra.progress import Progress, duration_words, rate_words, say


class FakeStream(io.StringIO):
    """A text stream that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def screen_lines(text: str) -> list[str]:
    """What a terminal shows per rewrite: each '\\r' + erase starts the line again."""
    return [part.rstrip("\n") for part in text.replace("\x1b[K", "").split("\r") if part.strip()]


def test_a_terminal_line_is_rewritten_in_place_with_rate_and_time_left():
    stream, clock = FakeStream(tty=True), FakeClock()
    progress = Progress("bench", 100, stream=stream, clock=clock)
    assert stream.getvalue() == "\r\x1b[Kbench: 0/100 episodes"  # at once: the work has started
    clock.now += 15.0
    progress.advance(12)
    assert screen_lines(stream.getvalue())[-1] == "bench: 12/100 episodes, 1.2 s per episode, about 1 min 50 s left"
    assert "\n" not in stream.getvalue()  # one line, rewritten


def test_a_terminal_line_is_rewritten_at_most_a_few_times_a_second():
    stream, clock = FakeStream(tty=True), FakeClock()
    progress = Progress("bench", 1000, stream=stream, clock=clock)
    for _ in range(100):  # 100 items within one second: 10 ms apart
        clock.now += 0.01
        progress.advance()
    shown = screen_lines(stream.getvalue())
    assert 2 <= len(shown) <= 5, shown  # the first line, then at most four a second
    assert shown[-1].startswith("bench: 7") and shown[-1].split()[1] in {f"{n}/1,000" for n in range(75, 80)}
    progress.close()
    assert screen_lines(stream.getvalue())[-1] == "bench: done, 100/1,000 episodes in 1 s (100/s)"


def test_a_log_gets_one_line_a_minute_and_the_final_line():
    stream, clock = FakeStream(tty=False), FakeClock()
    with Progress("landmarks", 100, stream=stream, clock=clock) as progress:
        for _ in range(100):
            clock.now += 7.1  # 100 episodes in 11 min 50 s
            progress.advance()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert len(lines) == 12  # 11 minutes of lines, then the final one
    assert lines[0] == "landmarks: 9/100 episodes, 7.1 s per episode, about 10 min 46 s left"
    assert lines[-1] == "landmarks: done, 100/100 episodes in 11 min 50 s (7.1 s per episode)"


def test_a_log_is_quiet_for_work_shorter_than_a_minute():
    stream, clock = FakeStream(tty=False), FakeClock()
    with Progress("bench", 3, stream=stream, clock=clock) as progress:
        for _ in range(3):
            clock.now += 2.0
            progress.advance()
    assert stream.getvalue() == "bench: done, 3/3 episodes in 6 s (2.0 s per episode)\n"


def test_log_every_s_sets_the_interval():
    stream, clock = FakeStream(tty=False), FakeClock()
    progress = Progress("bench", 10, stream=stream, clock=clock, log_every_s=5.0)
    for _ in range(10):
        clock.now += 2.0
        progress.advance()
    assert len(stream.getvalue().splitlines()) == 3  # at 6 s, 12 s and 18 s


def test_the_final_line_replaces_the_terminal_line_and_ends_it():
    stream, clock = FakeStream(tty=True), FakeClock()
    with Progress("bench", 2, stream=stream, clock=clock) as progress:
        clock.now += 1.0
        progress.advance(2)
    assert stream.getvalue().endswith("\r\x1b[Kbench: done, 2/2 episodes in 1 s (2.0/s)\n")


def test_work_that_ends_early_says_where_it_stopped():
    stream, clock = FakeStream(tty=False), FakeClock()
    with pytest.raises(KeyboardInterrupt):
        with Progress("bench", 10, stream=stream, clock=clock) as progress:
            clock.now += 30.0
            progress.advance(4)
            raise KeyboardInterrupt
    assert stream.getvalue() == "bench: stopped at 4/10 episodes in 30 s (7.5 s per episode)\n"


def test_a_resumed_run_counts_what_was_done_before_but_rates_only_this_session():
    stream, clock = FakeStream(tty=True), FakeClock()
    progress = Progress("bench", 100, stream=stream, clock=clock, already_done=60)
    clock.now += 10.0
    progress.advance(10)
    assert screen_lines(stream.getvalue())[-1] == "bench: 70/100 episodes, 1.0/s, about 30 s left"
    progress.close()
    assert screen_lines(stream.getvalue())[-1] == "bench: done, 70/100 episodes in 10 s (1.0/s), 60 done before"


def test_an_unknown_total_shows_the_count_and_rate_without_time_left():
    stream, clock = FakeStream(tty=True), FakeClock()
    progress = Progress("world build", None, unit="streets", stream=stream, clock=clock)
    clock.now += 2.0
    progress.advance(1234)
    assert screen_lines(stream.getvalue())[-1] == "world build: 1,234 streets, 617/s"


def test_close_twice_writes_one_final_line_and_advance_after_close_is_refused():
    stream, clock = FakeStream(tty=False), FakeClock()
    progress = Progress("bench", 1, stream=stream, clock=clock)
    progress.advance()
    progress.close()
    progress.close()
    assert len(stream.getvalue().splitlines()) == 1
    with pytest.raises(RuntimeError, match="advance.. after close"):
        progress.advance()


@pytest.mark.parametrize("kwargs, field", [({"total": -1}, "total"), ({"log_every_s": 0}, "log_every_s"),
                                           ({"total": 3, "already_done": 4}, "already_done")])
def test_bad_settings_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"Progress {field}"):
        Progress("bench", **{"total": 10, **kwargs}, stream=FakeStream(tty=False))


def test_say_always_writes_a_line_and_clears_a_terminal_line_first():
    log, tty = FakeStream(tty=False), FakeStream(tty=True)
    say("world build: 1,234 streets read", log)
    say("world build: 1,234 streets read", tty)
    assert log.getvalue() == "world build: 1,234 streets read\n"
    assert tty.getvalue() == "\r\x1b[Kworld build: 1,234 streets read\n"


def test_stderr_is_the_default_stream(capsys):
    say("phase one")
    with Progress("bench", 1, clock=FakeClock()) as progress:
        progress.advance()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "phase one\n" in captured.err and "bench: done, 1/1 episodes" in captured.err


@pytest.mark.parametrize("seconds, words", [(0, "0 s"), (44.6, "45 s"), (110, "1 min 50 s"), (3600, "1 h 00 min"),
                                            (7500, "2 h 05 min")])
def test_durations_read_as_a_person_says_them(seconds, words):
    assert duration_words(seconds) == words


@pytest.mark.parametrize("rate, unit, words", [(1234.0, "streets", "1,234/s"), (2.5, "episodes", "2.5/s"),
                                               (0.14, "episodes", "7.1 s per episode"),
                                               (0.1, "episodes", "10.0 s per episode"),
                                               (0.098, "episodes", "10.2 s per episode"),
                                               (0.005, "runs", "3 min 20 s per run"), (0.5, "pip", "2.0 s per pip")])
def test_rates_read_per_second_when_fast_and_per_item_when_slow(rate, unit, words):
    assert rate_words(rate, unit) == words


def test_a_terminal_line_is_cut_to_the_terminal_width_so_it_never_wraps(monkeypatch):
    from cityseeker_ros.core.infra import progress as module

    stream, clock = FakeStream(tty=True), FakeClock()
    assert module.terminal_width(stream) is None  # no terminal behind it: nothing is cut
    monkeypatch.setattr(module, "terminal_width", lambda _stream: 30)
    bar = Progress("[3/10] policy random, cell oracle:B2+oracle:B3", 100, stream=stream, clock=clock)
    clock.now += 1.0
    bar.advance()
    assert [len(line) for line in screen_lines(stream.getvalue())] == [29, 29]
    assert screen_lines(stream.getvalue())[-1] == "[3/10] policy random, cell o…"
    bar.close()  # the final line ends with a newline, so it may wrap: it is whole
    assert screen_lines(stream.getvalue())[-1].endswith("done, 1/100 episodes in 1 s (1.0/s)")

"""The setpoint streamer on its own: it sends while the owner's keepalive is fresh, stops for good when
it is not or when a send is refused, and has no way to start again."""
import threading
import time

import pytest

from cityseeker_ros.core.vehicles.link import LinkError, PilotOverride, StreamStopped
from cityseeker_ros.core.vehicles.mavlink.streamer import SetpointStreamer


class Recorder:
    def __init__(self, fail_after: int | None = None) -> None:
        self.sent: list[tuple[float, str]] = []
        self.fail_after = fail_after
        self.lock = threading.Lock()

    def __call__(self, setpoint: str) -> None:
        with self.lock:
            if self.fail_after is not None and len(self.sent) >= self.fail_after:
                raise PilotOverride("pilot took over")
            self.sent.append((time.monotonic(), setpoint))

    def after(self, t: float) -> int:
        with self.lock:
            return sum(1 for sent_at, _ in self.sent if sent_at > t)


def test_streams_the_latest_setpoint_while_fed_then_stops_for_good():
    sent = Recorder()
    streamer = SetpointStreamer(sent, "a", rate_hz=50.0, keepalive_s=0.2).start()
    fed_until = time.monotonic() + 0.4
    while time.monotonic() < fed_until:
        streamer.keepalive()
        time.sleep(0.02)
    streamer.set("b")
    last_feed = time.monotonic()
    while streamer.alive and time.monotonic() - last_feed < 2.0:
        time.sleep(0.01)
    stopped_after = time.monotonic() - last_feed
    assert not streamer.alive and 0.2 <= stopped_after < 0.35
    assert "keepalive" in streamer.stop_reason
    assert 15 <= len(sent.sent) and {s for _, s in sent.sent} == {"a", "b"} and sent.sent[-1][1] == "b"
    assert sent.after(last_feed + 0.2 + 0.02 + 0.02) == 0  # nothing after the limit, one period and slack
    with pytest.raises(StreamStopped, match="stream stopped .*keepalive.*take_control"):
        streamer.keepalive()  # a late owner is told so: it must hold, the link is fine
    with pytest.raises(LinkError, match="stream stopped"):
        streamer.set("c")
    count = len(sent.sent)
    streamer._stopped.wait(0.1)  # a stopped streamer's thread has ended: nothing can come back
    assert len(sent.sent) == count and not streamer._thread.is_alive()
    with pytest.raises(LinkError, match="runs once"):
        streamer.start()


def test_a_refused_send_stops_the_stream_without_retrying():
    sent = Recorder(fail_after=3)
    streamer = SetpointStreamer(sent, "a", rate_hz=100.0, keepalive_s=5.0).start()
    deadline = time.monotonic() + 2.0
    while streamer.alive and time.monotonic() < deadline:
        streamer.keepalive()
        time.sleep(0.01)
    assert not streamer.alive and streamer.stop_reason == "pilot took over" and len(sent.sent) == 3


def test_stop_is_immediate_and_keeps_the_first_reason():
    sent = Recorder()
    streamer = SetpointStreamer(sent, "a", rate_hz=5.0, keepalive_s=5.0).start()
    started = time.monotonic()
    streamer.stop("hold")
    streamer.stop("closed")
    assert time.monotonic() - started < 0.1 and streamer.stop_reason == "hold" and len(sent.sent) == 1
    with pytest.raises(LinkError) as refused:
        streamer.keepalive()
    assert not isinstance(refused.value, StreamStopped)  # a stop by its owner is not a late owner


def test_rate_and_keepalive_must_be_positive():
    with pytest.raises(LinkError, match="positive rate"):
        SetpointStreamer(Recorder(), "a", rate_hz=0.0)

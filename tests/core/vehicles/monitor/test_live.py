"""The monitor run live (live.py): fed from several threads, judged in time order on its own thread,
calling back on each violation; and the tap for links without a readable wire (taps.py)."""
from __future__ import annotations

import threading
import time

import pytest

from cityseeker_ros.core.vehicles.monitor import (
    Decision,
    LiveMonitor,
    Marker,
    MonitoredLink,
    Reported,
    Sent,
    limits_from_dict,
)

HOME = (43.7384, 7.4246)
LIMITS = limits_from_dict({"geofence": {"circle": {"center": list(HOME), "radius_m": 100.0}},
                           "max_altitude_m": 30.0, "min_altitude_m": -5.0})
OUTSIDE = (HOME[0] + 0.01, HOME[1])  # about 1.1 km north


class Clock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_observations_fed_out_of_order_are_judged_in_time_order():
    clock = Clock()
    live = LiveMonitor(LIMITS, clock=clock, start=False)
    # a position setpoint after a stop with no decision since breaks no_motion_after_hold; fed in the wrong
    # order (the stop from a slower thread), the monitor must still see the stop first
    live.feed(Sent(10.2, "position", lat=HOME[0], lon=HOME[1], alt_m=5.0))
    live.feed(Decision(10.0, "goal", goal=(HOME[0], HOME[1], 5.0)))
    live.feed(Sent(10.1, "hold"))
    found = live.flush()
    assert [v.rule for v in found] == ["no_motion_after_hold"]
    assert live.late == 0


def test_an_observation_later_than_what_was_judged_is_judged_at_that_time_not_refused():
    live = LiveMonitor(LIMITS, clock=Clock(), start=False)
    live.feed(Reported(5.0, lat=HOME[0], lon=HOME[1], alt_m=5.0, armed=True))
    live.flush()
    live.feed(Decision(4.0, "goal", goal=(HOME[0], HOME[1], 5.0)))  # a slow thread's, too late to reorder
    live.feed(Sent(5.1, "position", lat=OUTSIDE[0], lon=OUTSIDE[1], alt_m=5.0))
    found = live.flush()  # the monitor would raise ValueError on t=4.0 after t=5.0: judged at t=5.0 instead
    assert [v.rule for v in found] == ["inside_fence"]
    assert live.late == 1 and live.monitor.counts["decision goal"] == 1


def test_the_callback_runs_on_the_monitors_own_thread_once_per_violation():
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def on_violation(v):
        seen.append((v.rule, threading.current_thread().name))
        done.set()

    live = LiveMonitor(LIMITS, on_violation=on_violation, reorder_s=0.02)
    try:
        now = time.monotonic()
        live.feed(Sent(now, "position", lat=OUTSIDE[0], lon=OUTSIDE[1], alt_m=5.0))
        assert done.wait(2.0)
        assert seen == [("inside_fence", "flight-monitor")]
        assert live.counts() == {"inside_fence": 1}
    finally:
        live.close()


def test_feeding_from_many_threads_never_breaks_the_monitors_time_order():
    live = LiveMonitor(LIMITS, reorder_s=0.01)
    errors: list[BaseException] = []

    def feeder(k: int) -> None:
        try:
            for i in range(200):
                live.feed(Reported(time.monotonic(), lat=HOME[0], lon=HOME[1], alt_m=1.0 + k, armed=True))
                if i % 50 == 0:
                    time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=feeder, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    live.close()
    assert errors == [] and live.violations == []
    assert live.monitor.counts["reported"] == 800


def test_a_failing_callback_is_counted_and_the_monitor_goes_on():
    def boom(v):
        raise RuntimeError("listener broke")

    live = LiveMonitor(LIMITS, on_violation=boom, clock=Clock(), start=False)
    live.feed(Sent(1.0, "position", lat=OUTSIDE[0], lon=OUTSIDE[1], alt_m=5.0))
    live.feed(Sent(2.0, "takeoff", alt_m=45.0))
    assert len(live.flush()) == 2 and live.callback_errors == 2


def test_close_flags_a_session_end_with_no_hold_and_ignores_what_comes_after():
    clock = Clock(10.0)
    live = LiveMonitor(LIMITS, clock=clock, start=False)
    live.feed(Reported(1.0, lat=HOME[0], lon=HOME[1], alt_m=5.0, armed=True, mode="OFFBOARD"))
    live.feed(Decision(1.5, "goal", goal=(HOME[0], HOME[1], 5.0)))
    live.feed(Sent(2.0, "position", lat=HOME[0], lon=HOME[1], alt_m=5.0))
    live.feed(Marker(3.0, "session_end", "shutdown"))
    found = live.close()
    assert [v.rule for v in found] == ["ends_in_hold"]
    live.feed(Sent(11.0, "position", lat=OUTSIDE[0], lon=OUTSIDE[1], alt_m=5.0))
    assert live.flush() == [] and len(live.violations) == 1


def test_the_report_counts_the_taps_messages_and_gives_a_verdict():
    live = LiveMonitor(LIMITS, clock=Clock(), start=False)
    link = MonitoredLink(_Link(), live.feed, clock=Clock(1.0))
    live.add_source("link", link.counts)
    link.state()
    link.hold()
    live.flush()
    report = live.report(link="fake")
    assert report["verdict"] == "clean" and report["link"] == "fake"
    assert report["messages"] == {"stack hold": 1, "vehicle state": 1}
    assert {r["name"] for r in report["rules"]} >= {"inside_fence", "no_motion_after_hold"}
    assert report["violations_by_rule"] == {}


# -- the tap for links without a readable wire ---------------------------------------------------------

class _State:
    lat, lon, alt_m, velocity_enu, mode, armed = HOME[0], HOME[1], 4.0, (0.5, 0.0, 0.0), "fly", True


class _Caps:
    take_control = False
    go_to = True


class _Link:
    """A stand-in link: what the bridge reads from one, and calls that can fail."""

    name = "fake"
    velocity_blocks = True
    takeoff_alt_m = 7.0
    capabilities = _Caps()

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.fail = False

    def flown_altitude_m(self, alt_m: float) -> float:
        return 12.0  # flies every goal at one height

    def upload_fence(self, polygon, max_alt_m, breach_action="hold"):
        self.calls.append(("upload_fence", tuple(polygon), max_alt_m, breach_action))
        return "fence"

    def state(self):
        return _State()

    def go_to(self, lat, lon, alt_m, heading_deg=None, speed_m_s=None):
        if self.fail:
            raise RuntimeError("refused")
        self.calls.append(("go_to", lat, lon, alt_m, heading_deg, speed_m_s))

    def velocity(self, e, n, u=0.0, r=0.0):
        self.calls.append(("velocity", e, n, u, r))

    def hold(self):
        self.calls.append(("hold",))

    def take_control(self):
        self.calls.append(("take_control",))

    def takeoff(self, alt_m=None, timeout_s=30.0):
        self.calls.append(("takeoff", alt_m, timeout_s))

    def close(self):
        self.calls.append(("close",))


def test_the_wrapped_link_passes_everything_through_unchanged():
    inner = _Link()
    fed: list = []
    link = MonitoredLink(inner, fed.append)
    assert link.name == "fake" and link.velocity_blocks is True and link.takeoff_alt_m == 7.0
    assert link.capabilities is inner.capabilities and link.flown_altitude_m(3.0) == 12.0
    assert link.upload_fence([(1, 2), (3, 4), (5, 6)], 30.0, "rtl") == "fence"
    assert link.state().mode == "fly"
    link.go_to(1.0, 2.0, 3.0, 90.0, 2.5)
    link.velocity(1.0, 2.0, 0.5, 10.0)
    link.takeoff(None, 5.0)
    link.take_control()
    with link:
        pass
    link.takeoff_alt_m = 9.0  # written through, as a caller changing the link's height would
    assert inner.takeoff_alt_m == 9.0 and link.takeoff_alt_m == 9.0
    assert inner.calls == [("upload_fence", ((1, 2), (3, 4), (5, 6)), 30.0, "rtl"),
                           ("go_to", 1.0, 2.0, 3.0, 90.0, 2.5), ("velocity", 1.0, 2.0, 0.5, 10.0),
                           ("takeoff", None, 5.0), ("take_control",), ("close",)]


def test_the_wrapped_link_records_what_left_and_what_the_vehicle_said():
    inner, fed = _Link(), []
    link = MonitoredLink(inner, fed.append, clock=Clock(3.0))
    link.state()
    link.go_to(1.0, 2.0, 3.0)
    link.velocity(1.0, 2.0, 0.5, 10.0)
    link.hold()
    link.takeoff()
    link.take_control()  # no control mode on this link: nothing leaves
    inner.fail = True
    with pytest.raises(RuntimeError):
        link.go_to(5.0, 6.0, 3.0)  # refused: nothing can be said of what left, so nothing is recorded
    assert fed == [
        Reported(3.0, lat=HOME[0], lon=HOME[1], alt_m=4.0, velocity_enu=(0.5, 0.0, 0.0), mode="fly", armed=True),
        Sent(3.0, "position", lat=1.0, lon=2.0, alt_m=12.0, frame="global_relative_alt"),  # the height it flies
        Sent(3.0, "velocity", velocity_enu=(1.0, 2.0, 0.5), frame="enu"),
        Sent(3.0, "hold"),
        Sent(3.0, "takeoff", alt_m=7.0)]


def test_take_control_on_a_link_with_a_control_mode_is_a_mode_change_into_it():
    inner, fed = _Link(), []
    inner.capabilities = type("Caps", (), {"take_control": True})()
    MonitoredLink(inner, fed.append, clock=Clock(2.0)).take_control()
    assert fed == [Sent(2.0, "mode", control_mode=True)]

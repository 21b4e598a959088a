"""The red team's faults of issue 30 at the bridge level, each on a scripted link (the MAVLink and
AirSim versions run against their simulators in tests/core/vehicles/stateful/ and the link folders).
Every test here failed on the bridge before the authority machine (core/vehicles/authority.py)."""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Optional

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.bridge import PILOT_OVERRIDE, SAFETY_STALLED, VehicleBridge
from cityseeker_ros.core.vehicles.link import Capabilities, StreamStopped
from cityseeker_ros.core.vehicles.safety import HOLD, EStop, Goal, LatchFile, SafetyGate, Velocity
from cityseeker_ros.core.vehicles.safety.codes import SafetyCode
from tests.core.vehicles.test_bridge import HOME, MOTION, ScriptedLink, bridge_for, config, goal, wait_for


def flying(made, **kw):
    link = ScriptedLink(take_control=True)
    link.modal = True
    b = bridge_for(made, link, **kw)
    assert wait_for(lambda: link.names() == ["hold"])
    return link, b


def test_a_pilots_switch_while_holding_is_noticed_and_no_later_goal_takes_the_vehicle_back(made):
    """Override detection used to run only while commanding: a pilot who switched modes during a
    hold (here the decision watchdog's) lost the vehicle to the next goal."""
    link, b = flying(made)
    b.command(goal())
    assert wait_for(lambda: link.names()[-2:] == ["take_control", "go_to"])
    assert wait_for(lambda: link.names()[-1] == "hold", 2.0)  # decisions stopped: the watchdog held
    link.foreign = "POSCTL"  # the pilot's RC switch during the hold
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 1.0)
    calls = len(link.names())
    for metres in (40.0, 50.0, 60.0):
        b.command(goal(metres))
        b.tick()
    assert link.names()[calls:] == []  # no take_control, no go_to, not even a hold
    b.take_control()  # the operator gives it back: a hold, then only a newer decision moves it
    link.foreign = None
    assert wait_for(lambda: link.names()[calls:] == ["hold"])
    b.command(goal(70.0))
    assert wait_for(lambda: link.names()[calls:] == ["hold", "take_control", "go_to"])


def test_a_pilot_present_when_the_bridge_connects_keeps_the_vehicle(made):
    link = ScriptedLink(take_control=True)
    link.foreign = "ALTCTL"
    b = bridge_for(made, link)
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE)
    b.command(goal())
    b.tick()
    assert link.names() == []  # the connect's hold would have taken it from the pilot


def test_close_ends_in_a_hold(made):
    """close() used to stop the threads with the vehicle still in the control mode, for the
    autopilot's offboard-loss failsafe to handle."""
    link, b = flying(made, safety={"decision_timeout_s": 30.0})
    b.command(goal())
    assert wait_for(lambda: link.names()[-1:] == ["go_to"])
    b.close()
    assert link.names()[-1] == "hold"


def test_a_seeks_end_sends_the_end_action_even_when_the_vehicle_already_held(made):
    link, b = flying(made, safety={"decision_timeout_s": 30.0}, end_action="land")
    b.end_seek()
    assert wait_for(lambda: link.names() == ["hold", "land"])


def test_a_stalled_safety_thread_stops_an_active_velocity(made):
    """A stalled safety thread used to leave a velocity streaming with the status "ok"."""
    link = ScriptedLink()
    b = bridge_for(made, link, velocity_period_s=0.02, safety={"decision_timeout_s": 30.0})
    b.command(Velocity(1.0, 0.0))
    assert wait_for(lambda: link.names().count("velocity") >= 3)
    stuck = threading.Event()
    b.tick = lambda now=None: stuck.wait(30.0)  # the safety thread blocks inside its next tick
    assert wait_for(lambda: b.status().code == SAFETY_STALLED, 3.0), b.status()
    sent = link.names().count("velocity")
    wait_for(lambda: False, 0.3)
    assert link.names().count("velocity") == sent
    stuck.set()


def test_a_goal_below_the_floor_is_refused_though_the_link_would_fly_it_at_its_own_height(made):
    """The verdict was computed on the raw goal and the tick flew another (the link's height)."""
    link = ScriptedLink()
    link.flown_altitude_m = lambda alt_m: 10.0 if alt_m <= 0 else alt_m
    b = bridge_for(made, link)
    assert wait_for(lambda: link.names() == ["hold"])
    verdict = b.command(Goal(HOME[0] + 0.0001, HOME[1], alt_m=-500.0))
    assert not verdict.moving and verdict.code is SafetyCode.BELOW_MIN_ALTITUDE
    for _ in range(5):
        b.tick()
    assert "go_to" not in link.names() and b.status().code == SafetyCode.BELOW_MIN_ALTITUDE.value


class ClimbingLink(ScriptedLink):
    takeoff_alt_m = 45.0

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(arm=True, takeoff=True, go_to=True, hold=True)


def test_a_takeoff_height_above_the_ceiling_is_refused_before_anything_starts():
    with pytest.raises(ConfigError, match="takeoff_alt_m 45 m is above .* ceiling max_altitude_m 30 m"):
        VehicleBridge(ClimbingLink(), SafetyGate.from_config(config()), start=False)


def test_a_goal_at_zero_speed_is_refused(made):
    link, b = flying(made)
    verdict = b.command(replace(goal(), speed_m_s=0.0))
    assert not verdict.moving and verdict.code is SafetyCode.INVALID_COMMAND
    b.tick()
    assert "go_to" not in link.names()


def test_commands_every_tenth_of_a_second_around_an_estop_never_make_a_false_override(made):
    """Commands every 0.1 s around an e-stop used to make the bridge report a false pilot override
    (the hold released control while a flag still said it commanded) and lock itself out."""
    link, b = flying(made, safety={"decision_timeout_s": 30.0})
    seen = set()
    for i in range(40):
        b.command(goal(20.0 + i))
        if i == 15:
            b.trip_estop("test")
        if i == 25:
            assert b.reset_estop().ok
        wait_for(lambda: False, 0.02)
        seen.add(b.status().code)
    assert PILOT_OVERRIDE not in seen, seen
    assert wait_for(lambda: link.names()[-1] == "go_to" and b.status().moving and link.in_control)


# -- counterexamples the randomized scenarios found (tests/core/vehicles/stateful/), kept as plain tests --

def test_a_decision_heard_while_the_stop_is_on_its_way_does_not_fly_after_it(made):
    """Found by the walker scenarios: a goal heard while the hold was still in the link used to count
    as newer than the hold (stops were numbered when asked, not when they reached the vehicle) and
    flew right after it."""
    link, b = flying(made, safety={"decision_timeout_s": 30.0})
    b.command(goal())
    assert wait_for(lambda: link.names()[-1:] == ["go_to"])
    link.block["hold"] = threading.Event()
    link.entered.pop("hold", None)
    b.command(HOLD)
    assert link.entered.setdefault("hold", threading.Event()).wait(3.0)  # the hold is in the link
    b.command(goal(50.0))  # heard while the hold is on its way
    calls = len(link.names())
    link.block.pop("hold").set()
    assert wait_for(lambda: b.holds >= 2)
    for _ in range(5):
        b.tick()
    assert link.names()[calls:] == []  # nothing after the hold returned
    b.command(goal(60.0))  # a decision made after the hold reached the vehicle flies
    assert wait_for(lambda: link.names()[calls:] == ["take_control", "go_to"])


def test_take_control_is_refused_while_the_link_is_down_and_nothing_is_sent_when_it_returns(made):
    """Found by the PX4 scenarios: a take-control pressed while the link was down was dropped
    silently; the operator could not see who had the vehicle then. It is refused, and says so."""
    link, b = flying(made)
    link.foreign = "POSCTL"
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 2.0)
    link.lost = True
    assert wait_for(lambda: b.status().code != PILOT_OVERRIDE, 3.0)
    calls = len(link.names())
    assert b.take_control() is False
    link.lost = False
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 3.0)  # the pilot still has it
    b.command(goal())
    b.tick()
    assert link.names()[calls:] == []


def test_a_bridge_closed_while_connecting_closes_the_link_the_connect_opens(made):
    """Found by the soak: a bridge closed while its connect was still in the link left that link
    open (and, on MAVLink, taking the next bridge's datagrams). The connect's late success is
    closed, and nothing is sent on it."""
    link = ScriptedLink(take_control=True)
    link.block["connect"] = release = threading.Event()
    b = bridge_for(made, link, wait=False)
    assert link.entered.setdefault("connect", threading.Event()).wait(5.0)
    b.close(join_s=0.2)  # the connect is still in the link: close() closes what is there now
    closes = len(link.names(only={"close"}))
    assert closes >= 1
    released_at = time.monotonic()
    release.set()  # the connect succeeds after close(): that link must be closed too
    assert wait_for(lambda: any(t >= released_at for n, t in link.calls if n == "close"))
    assert set(link.names(only=MOTION | {"close", "arm", "takeoff"})) == {"close"}


def test_an_estop_tripped_and_reset_while_the_safety_thread_is_stalled_still_stops_the_velocity(made):
    """Found by the AirSim soak: a trip and a reset 2 ms apart, both inside a 0.2 s stall of the
    safety thread. No tick saw the latch, so the authority never left `commanding` and the velocity
    from before the e-stop streamed on after the reset. Every trip is now an e-stop the authority
    handles, however soon the reset comes, and no motion leaves while one is unhandled."""
    link = ScriptedLink()
    b = bridge_for(made, link, velocity_period_s=0.02, safety={"decision_timeout_s": 30.0})
    b.command(Velocity(0.0, 0.0, 0.3))
    assert wait_for(lambda: link.names().count("velocity") >= 3)
    tick, stuck = b.tick, threading.Event()

    def stalled(now=None):
        b.tick = tick
        stuck.wait(0.3)
        return tick(now)

    b.tick = stalled
    time.sleep(0.05)  # the safety thread is inside the stalled tick
    tripped_at = time.monotonic()
    b.trip_estop("test", "tripped during the stall")
    assert b.reset_estop().ok
    assert wait_for(lambda: b.holds >= 2, 3.0)  # the e-stop's hold went out after all
    wait_for(lambda: False, 0.4)
    late = [t for n, t in link.calls if n == "velocity" and t > tripped_at + 0.005]
    assert late == [], f"{len(late)} velocity calls after the trip"
    b.command(Velocity(0.0, 0.0, 0.3))  # a decision after the reset moves it again
    assert wait_for(lambda: any(n == "velocity" and t > tripped_at for n, t in link.calls))


def test_a_link_loss_the_stalled_safety_thread_slept_through_still_needs_a_new_decision(made):
    """Found by the ArduPilot soak: the safety thread stalled across a whole outage, so no tick saw
    the link lost, and at the return the decision from before it moved the vehicle again. A loss the
    telemetry thread read now counts until the safety thread handled it: nothing moves meanwhile,
    and the return is a reconnect whose first act is a hold."""
    link = ScriptedLink()
    b = bridge_for(made, link, velocity_period_s=0.02, state_period_s=0.02, safety={"decision_timeout_s": 30.0})
    b.command(Velocity(0.0, 0.0, 0.3))
    assert wait_for(lambda: link.names().count("velocity") >= 3)
    tick, inside, release = b.tick, threading.Event(), threading.Event()

    def stalled(now=None):
        b.tick = tick
        inside.set()
        release.wait(5.0)
        return tick(now)

    b.tick = stalled
    assert inside.wait(3.0)

    def read_after(t0: float) -> Optional[float]:
        return next((t for n, t in list(link.calls) if n == "state" and t > t0), None)

    link.lost = True
    lost_at = time.monotonic()
    assert wait_for(lambda: read_after(lost_at) is not None)  # the telemetry thread read the loss
    link.lost = False
    back_at = time.monotonic()
    assert wait_for(lambda: read_after(back_at) is not None)  # ... and the return, all within the stall
    release.set()
    assert wait_for(lambda: any(n == "hold" and t > back_at for n, t in link.calls), 3.0)  # the reconnect's hold
    wait_for(lambda: False, 0.3)
    seen = read_after(lost_at)
    late = [round(t - seen, 3) for n, t in link.calls if n == "velocity" and t > seen + 0.1]
    assert late == [], f"velocity calls after the loss was read, at these seconds after it: {late}"
    b.command(Velocity(0.0, 0.0, 0.3))  # a decision after the return moves it again
    assert wait_for(lambda: any(n == "velocity" and t > back_at for n, t in link.calls))


def test_a_link_whose_stream_stopped_on_a_late_keepalive_is_held_not_reconnected(made):
    """The MAVLink link stops its setpoint stream when the bridge's keepalive is late; it used to be
    taken for a lost link (a reconnect, no hold, the vehicle left in the control mode with no
    setpoints). StreamStopped is the bridge's own lateness: it holds, and a newer decision flies."""
    link, b = flying(made, safety={"decision_timeout_s": 30.0})
    b.command(goal())
    assert wait_for(lambda: link.names()[-2:] == ["take_control", "go_to"])
    late = threading.Event()

    def keepalive():
        if not late.is_set():
            late.set()
            raise StreamStopped("setpoint stream stopped (the owner's keepalive is 0.58 s old)")

    link.keepalive = keepalive
    assert wait_for(lambda: link.names()[-1] == "hold")
    assert b.status().code != "link_error" and link.names(only={"connect"}) == ["connect"]
    b.command(goal(50.0))
    assert wait_for(lambda: link.names()[-2:] == ["take_control", "go_to"])


class SwitchedAtTheEnd(ScriptedLink):
    """The pilot's switch reaches the link right after the closing bridge's end hold went out: the
    hold put the vehicle in the hold mode and the link, judging the switch, reports it foreign."""

    def hold(self) -> None:
        super().hold()
        if self.closing:
            self.foreign = "POSCTL"

    closing = False


def test_a_pilots_switch_crossing_the_end_hold_survives_a_restart(made, tmp_path):
    """Found by the PX4 soak: the pilot switched 1 ms before a bridge restart, the closing bridge's
    end hold overrode the switch, and the new bridge, finding the vehicle in the hold mode, flew the
    next goal. The takeover is now kept beside the e-stop latch, as the latch is, until an operator
    takes control back."""
    latch = tmp_path / "estop.json"
    link = SwitchedAtTheEnd(take_control=True)
    link.modal = True
    old = bridge_for(made, link, estop=EStop(LatchFile(latch)))
    link.closing = True
    old.close()
    assert (tmp_path / "estop.pilot.json").exists()
    link.closing, link.foreign = False, None  # the vehicle holds; a new link sees nothing foreign
    calls = len(link.names())
    new = bridge_for(made, link, estop=EStop(LatchFile(latch)), wait=False)
    assert wait_for(lambda: new.status().code == PILOT_OVERRIDE, 3.0)
    for metres in (40.0, 50.0):
        new.command(goal(metres))
        new.tick()
    assert link.names()[calls:] == []  # not even the connect's hold
    assert new.take_control()
    assert not (tmp_path / "estop.pilot.json").exists()
    new.command(goal(60.0))
    assert wait_for(lambda: link.names()[calls:] == ["hold", "take_control", "go_to"])


def test_an_unreadable_pilot_file_keeps_the_vehicle_with_the_pilot(made, tmp_path):
    (tmp_path / "estop.pilot.json").write_bytes(b"\x00\xff")
    link = ScriptedLink(take_control=True)
    b = bridge_for(made, link, estop=EStop(LatchFile(tmp_path / "estop.json")), wait=False)
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 3.0)
    assert "pilot takeover state file" in b.status().reason and "unreadable" in b.status().reason
    b.command(goal())
    b.tick()
    assert link.names() == []


def test_a_take_control_before_the_bridge_saw_the_pilot_does_not_end_the_takeover(made):
    """Found by the ArduPilot soak: the operator pressed take-control 2 ms after a pilot's switch
    the bridge had not yet seen; it answered yes (the stack was commanding), the monitor took the
    press for the end of the takeover and wanted an end hold the bridge, now in `pilot`, rightly
    never sent. Only a takeover the bridge reported can be ended."""
    link, b = flying(made)
    b.command(goal())
    assert wait_for(lambda: link.names()[-2:] == ["take_control", "go_to"])
    assert b.take_control() is False and b.control_note.startswith("not taken: no pilot takeover to end")
    link.foreign = "POSCTL"  # the pilot's switch, seen after the press
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 2.0)
    calls = len(link.names())
    b.command(goal(50.0))
    b.tick()
    assert link.names()[calls:] == []
    link.foreign = None
    assert b.take_control() is True and b.control_note.startswith("the stack has control")


class SaysItself(ScriptedLink):
    """A link that reports foreign modes itself, as MAVLink does."""

    @property
    def capabilities(self) -> Capabilities:
        return replace(super().capabilities, reports_foreign_mode=True)


def test_a_late_control_mode_is_no_pilot_on_a_link_that_reports_foreign_modes_itself(made):
    """Found by the PX4 soak at load 30: the bridge went to `pilot` with no pilot (the control mode's
    heartbeat late, or the stream stopped on a starved keepalive, reads in_control false) and sent no
    end hold. A link that reports foreign modes itself is taken at its word."""
    link = SaysItself(take_control=True)
    b = bridge_for(made, link)
    b.command(goal())
    assert wait_for(lambda: link.names()[-2:] == ["take_control", "go_to"])
    link.in_control = False  # not (yet) shown in the control mode; nothing foreign reported
    assert not wait_for(lambda: b.status().code == PILOT_OVERRIDE, 0.6)
    b.command(goal(50.0))
    assert wait_for(lambda: link.names().count("go_to") == 2, 2.0)  # still the stack's to fly
    link.foreign = "POSCTL"  # the link's own word
    assert wait_for(lambda: b.status().code == PILOT_OVERRIDE, 2.0)
